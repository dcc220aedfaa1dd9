// rank_profile_model.h — the profile per rank: the `profile` query asked once per rank (or per contiguous
// group of ranks when there are more than `maxGroups`), so that every region shows its minimum, mean and
// maximum time per rank, the rank with the most, and per-rank bars; plus the summary over all ranks for
// the summary chart. `approximate` when any answer pro-rated a reduced range cut by the window.
// With `compensated` every query is `profile --compensated` (the measurement's intrusion taken out).
#pragma once

#include "records.h"

#include <QAbstractTableModel>

class RankProfileModel : public QAbstractTableModel
{
    Q_OBJECT
  public:
    enum Column { Region, Role, Min, Mean, Max, MaxRank, Total, Imbalance, ColumnCount };
    enum Metric { Exclusive, Inclusive, Visits };
    struct RankGroup {
        int first = 0, last = 0; // ranks, inclusive
        bool answered = false, approximate = false;
        QHash<QString, quint64> exclusive, inclusive, visits; // by region, the group's sums
    };
    struct Entry {
        QString name, role;
        double min = 0.0, mean = 0.0, max = 0.0; // per rank, of the chosen metric
        int maxGroup = -1;
        double total = 0.0;
    };

    explicit RankProfileModel(QObject *parent = nullptr);

    // Starts a new profile of `ranks` ranks for a window ("" : everything held): the command of each
    // group, in group order; answers go to applyGroupReply(index, …).
    QStringList start(int ranks, const QString &windowOptions, bool compensated = false, int maxGroups = 64);
    bool applyGroupReply(int index, const Records &records);
    void clear();

    void setMetric(Metric metric);
    Metric metric() const
    {
        return m_metric;
    }
    const QVector<RankGroup> &groups() const
    {
        return m_groups;
    }
    int groupsAnswered() const;
    bool complete() const
    {
        return !m_groups.isEmpty() && groupsAnswered() == m_groups.size();
    }
    bool grouped() const; // some group holds more than one rank: its bar is the group's mean per rank
    bool approximate() const;
    bool compensated() const
    {
        return m_compensated;
    }
    const QVector<Entry> &entries() const
    {
        return m_entries;
    }
    int rowOf(const QString &region) const;
    // The chosen metric per rank of one region, one value per group (the group's mean per rank).
    QVector<double> bars(const QString &region) const;
    QString summary() const;

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

  signals:
    void progressed(int answered, int total);

  private:
    double perRank(const RankGroup &group, const QString &region) const;
    void rebuild();
    void sortEntries();
    QVector<RankGroup> m_groups;
    QHash<QString, QString> m_roles;
    QVector<Entry> m_entries;
    Metric m_metric = Exclusive;
    bool m_compensated = false;
    int m_sortColumn = Max;
    Qt::SortOrder m_sortOrder = Qt::DescendingOrder;
};
