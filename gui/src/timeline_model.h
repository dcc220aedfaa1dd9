// timeline_model.h — what the timeline shows: the visible window (from, to) and the answers of the
// `timeline` query (ranks × time bins at the widget's pixel width, rows = ranks or groups of them) and,
// zoomed in far enough, of the `events` query (single regions per rank, messages between ranks).
//
// The model decides what to ask: timelineCommand() asks for exactly the visible window at `bins`
// columns (the widget's width in pixels) and at most `rows` rows (its height / the smallest row);
// eventsCommand() is non-empty when the window is narrow enough for single events
// (nanoseconds per pixel ≤ eventsNsPerPixel()) and the rows are single ranks. It never asks for the raw
// events of the whole run. Answers are kept with their own window, so a view drawn while a newer answer
// is on its way is only shifted, never wrong.
#pragma once

#include "records.h"

#include <QHash>
#include <QObject>
#include <QVector>

class TimelineModel : public QObject
{
    Q_OBJECT
  public:
    enum Field { User, P2p, Collective, MpiOther, Phase, Reduced, FieldCount };
    static const char *fieldName(int field);

    struct Row {
        int index = 0, firstRank = 0, lastRank = 0, ranks = 1;
        QVector<quint64> fields[FieldCount]; // per column: ns (the group's mean when grouped)
        QVector<int> dominant;               // per column: legend id, -1 when nothing ran
    };
    struct Legend {
        QString name, role;
    };
    struct Interval { // events mode: one region instance on one rank
        int rank = 0, thread = 0, depth = 0;
        quint64 start = 0, end = 0;
        QString name;
        bool reduced = false; // a range removed by a reduction (name = the strategy)
    };
    struct Message {
        int src = 0, dst = 0;
        quint64 sent = 0, received = 0, bytes = 0;
        int tag = 0;
    };

    explicit TimelineModel(QObject *parent = nullptr);

    // ---- the view ----
    bool hasViewport() const
    {
        return m_hasViewport;
    }
    quint64 from() const
    {
        return m_from;
    }
    quint64 to() const
    {
        return m_to;
    }
    void setViewport(quint64 from, quint64 to); // turns follow-live off when asked by the user
    void setPixelSize(int width, int rows);
    int bins() const
    {
        return m_bins;
    }
    int rowsWanted() const
    {
        return m_rows;
    }
    // Zooms by `factor` (< 1 zooms in) around the time at fraction `anchor` of the window.
    void zoom(double factor, double anchor);
    // Pans by a fraction of the window (positive: later).
    void pan(double fraction);
    // Shows everything held: asks without a window, and each answer's range becomes the window, until
    // the user zooms or pans (the initial state).
    void showAll();
    bool showingAll() const
    {
        return m_all;
    }
    bool followLive() const
    {
        return m_follow;
    }
    void setFollowLive(bool follow);
    // The newest time the job holds (status last_time): in follow-live mode the window ends there.
    void setLiveTime(quint64 last);
    quint64 eventsNsPerPixel() const
    {
        return m_eventsNsPerPixel;
    }
    void setEventsNsPerPixel(quint64 ns)
    {
        m_eventsNsPerPixel = ns;
    }

    // ---- what to ask ----
    QString timelineCommand() const;
    QString eventsCommand() const; // empty when single events are not wanted
    QString windowOptions() const; // "--from Xns --to Yns", empty without a window
    bool wantsEvents() const;

    // ---- answers ----
    bool applyTimeline(const Records &records);
    bool applyEvents(const Records &records);
    void clear();

    const Record &header() const
    {
        return m_header;
    }
    QString mode() const
    {
        return m_header.value("mode");
    }
    quint64 dataFrom() const
    {
        return m_dataFrom;
    }
    quint64 dataTo() const
    {
        return m_dataTo;
    }
    int columns() const
    {
        return m_columns;
    }
    bool grouped() const
    {
        return m_grouped;
    }
    const QVector<Row> &rows() const
    {
        return m_rowData;
    }
    const QVector<Legend> &legend() const
    {
        return m_legend;
    }
    quint64 columnStart(int column) const;
    quint64 columnEnd(int column) const
    {
        return columnStart(column + 1);
    }
    // Time the regions ran in a cell (every field but reduced), as a fraction of the column (≤ 1).
    double busy(int row, int column) const;
    int dominant(int row, int column) const;
    QString roleOf(const QString &region) const;
    void setRoleHint(const QString &region, const QString &role);
    int busyCells() const; // cells where something ran: "the timeline is not empty"
    QString cellText(int row, int column) const;

    bool hasEvents() const
    {
        return m_hasEvents;
    }
    quint64 eventsFrom() const
    {
        return m_eventsFrom;
    }
    quint64 eventsTo() const
    {
        return m_eventsTo;
    }
    const QVector<Interval> &intervals() const
    {
        return m_intervals;
    }
    const QVector<Message> &messages() const
    {
        return m_messages;
    }
    bool eventsTruncated() const
    {
        return m_eventsTruncated;
    }
    QString intervalText(const Interval &interval) const;
    // Times in tooltips and on the axis are shown relative to this (the job's start).
    void setOrigin(quint64 origin)
    {
        m_origin = origin;
    }
    quint64 origin() const
    {
        return m_origin;
    }

  signals:
    // The window changed: the owner asks again (timelineCommand(), eventsCommand()).
    void viewportChanged();
    void followLiveChanged(bool follow);
    void dataChanged();

  private:
    void setWindow(quint64 from, quint64 to);
    bool m_hasViewport = false, m_follow = false;
    bool m_all = true; // showing everything held: ask without a window
    quint64 m_from = 0, m_to = 0, m_liveTime = 0, m_origin = 0;
    int m_bins = 800, m_rows = 64;
    quint64 m_eventsNsPerPixel = 20000;

    Record m_header;
    quint64 m_dataFrom = 0, m_dataTo = 0, m_width = 0;
    bool m_windowMode = true, m_grouped = false;
    int m_columns = 0;
    QVector<Row> m_rowData;
    QVector<Legend> m_legend;
    QHash<QString, QString> m_roles;

    bool m_hasEvents = false, m_eventsTruncated = false;
    quint64 m_eventsFrom = 0, m_eventsTo = 0;
    QVector<Interval> m_intervals;
    QVector<Message> m_messages;
};
