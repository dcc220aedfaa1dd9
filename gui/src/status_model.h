// status_model.h — the `status` query's answer: the summary (application running/paused, recording,
// events/s, buffer fill, reduced and dropped events) and one table row per event place. A partial
// answer (a sum over the places that answered so far) never replaces a full one.
#pragma once

#include "records.h"

#include <QAbstractTableModel>

class StatusModel : public QAbstractTableModel
{
    Q_OBJECT
  public:
    enum Column {
        Place,
        Ranks,
        EventsPerS,
        Fill,
        Strategy,
        Reductions,
        Reduced,
        Dropped,
        Recording,
        App,
        ColumnCount
    };

    explicit StatusModel(QObject *parent = nullptr);

    // Takes a status reply (or a partial one while nothing is known); false when it holds no summary
    // line or is a partial answer kept out.
    bool applyReply(const Records &records);
    void clear();

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    bool valid() const
    {
        return m_valid;
    }
    const Record &summary() const
    {
        return m_summary;
    }
    const Records &places() const
    {
        return m_places;
    }
    QString recording() const
    {
        return m_summary.value("recording");
    }
    QString appState() const
    {
        return m_summary.value("app_state");
    }
    double eventsPerSecond() const
    {
        return double(m_summary.u64("events_per_s"));
    }
    double fill() const
    {
        return m_summary.f64("fill");
    }
    quint64 reducedEvents() const
    {
        return m_summary.u64("events_reduced");
    }
    quint64 droppedEvents() const
    {
        return m_summary.u64("dropped_events");
    }
    quint64 firstTime() const
    {
        return m_summary.u64("first_time");
    }
    quint64 lastTime() const
    {
        return m_summary.u64("last_time");
    }
    // The answering place's clock when the answer was made (0 from a job that does not say).
    quint64 now() const
    {
        return m_summary.u64("now");
    }
    // While the application is paused / a rank does not record: when the last rank did, on now()'s clock
    // (its place learned it from the rank's answer); 0 when the job does not say.
    quint64 pausedSince() const
    {
        return m_summary.u64("paused_since");
    }
    quint64 notRecordingSince() const
    {
        return m_summary.u64("not_recording_since");
    }
    bool partial() const
    {
        return m_summary.u64("places_answered") < m_summary.u64("places_total");
    }
    int partialsKept() const
    {
        return m_partialsKept;
    }
    // The reduction strategy every place uses, empty when they differ or none is known.
    QString commonStrategy() const;
    // Strategies of the places, joined ("ring" or "ring, time").
    QString strategies() const;
    // One line for the status bar's buffer item: per place "fill% strategy".
    QString bufferSummary() const;

  signals:
    void updated();

  private:
    Record m_summary;
    Records m_places;
    bool m_valid = false;
    int m_partialsKept = 0;
};
