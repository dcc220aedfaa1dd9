// metrics_model.h — the metrics of the ranks (docs/protocol.md, "Metrics", and `metric-timeline`) as a
// view without widgets: the metric table of `metrics available` (what the ranks can count, and why the
// others cannot), the selection of `metrics list` / `metrics set` (what each run of ranks reads now) and
// one metric's timeline (min / mean / max rate per cell and row). The table model lists the metrics.
#pragma once

#include "records.h"

#include <QAbstractTableModel>
#include <QStringList>

class MetricsModel : public QAbstractTableModel
{
    Q_OBJECT
  public:
    enum Column { Name, Unit, Counted, Selected, ColumnCount };
    struct Metric {
        QString name, unit, source, help, reason;
        bool accumulated = false;
        int countedRanks = 0, refusedRanks = 0;
    };
    // One line of a `metrics` answer: a run of ranks that answered alike.
    struct Selection {
        QString ranks;
        int place = 0;
        QStringList selected, counted, refused;
    };
    struct Refusal {
        QString ranks, metric, reason;
        int place = 0;
    };
    struct Row {
        int index = 0, firstRank = 0, lastRank = 0;
        QVector<double> min, mean, max; // per cell; NaN: no data there
    };

    explicit MetricsModel(QObject *parent = nullptr);

    static QString availableCommand();
    static QString listCommand();
    // "metrics set LIST" ("none" for no metrics); empty for a name outside [A-Za-z0-9:._-] or more than
    // the 16 the ranks read at once, which the server would refuse anyway.
    static QString setCommand(const QStringList &metrics);
    // "metric-timeline NAME --from T0ns --to T1ns --bins C [--ranks SET]"
    static QString timelineCommand(const QString &metric, quint64 from, quint64 to, int bins,
                                   const QString &ranks = QString());

    // `metrics available`: replaces the table (the places' lines of a metric merged); false if none.
    bool applyAvailable(const Records &records);
    // `metrics list` / `metrics set`: replaces the selection and the refusals.
    bool applySelection(const Records &records);
    // `metric-timeline`, partial or final.
    bool applyTimeline(const Records &records, bool final);
    void clear();

    const QVector<Metric> &metrics() const
    {
        return m_metrics;
    }
    const QVector<Selection> &selection() const
    {
        return m_selection;
    }
    const QVector<Refusal> &refusals() const
    {
        return m_refusals;
    }
    // The metrics some rank reads now (the union over the selection's lines).
    QStringList selectedNames() const;
    bool isSelected(const QString &metric) const;
    int metricIndex(const QString &name) const;

    // the timeline
    bool hasTimeline() const
    {
        return m_hasTimeline;
    }
    bool timelinePartial() const
    {
        return m_partial;
    }
    QString timelineMetric() const
    {
        return m_timelineHeader.value("metric");
    }
    QString timelineUnit() const
    {
        return m_timelineHeader.value("unit");
    }
    quint64 timelineFrom() const
    {
        return m_timelineHeader.u64("from");
    }
    quint64 timelineTo() const
    {
        return m_timelineHeader.u64("to");
    }
    int bins() const
    {
        return int(m_timelineHeader.u64("bins"));
    }
    const QVector<Row> &rows() const
    {
        return m_rows;
    }
    // The largest mean over every cell (0 without data), for the heat map's scale.
    double maximumMean() const;
    QString rowLabel(int row) const;
    QString summary() const;
    QString timelineSummary() const;

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  signals:
    void timelineChanged();

  private:
    QVector<Metric> m_metrics;
    QVector<Selection> m_selection;
    QVector<Refusal> m_refusals;
    bool m_hasSelection = false;
    bool m_hasTimeline = false, m_partial = false;
    int m_answered = 0, m_total = 0;
    Record m_timelineHeader;
    QVector<Row> m_rows;
};
