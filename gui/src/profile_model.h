// profile_model.h — the `profile` query's answer for the visible window: one row per region, sortable
// by every column (visits, inclusive, exclusive time, share, ...), kept sorted across updates. A partial
// answer (not every place answered yet) is taken only while no rows are shown; partialText() marks it.
// The search for a function (matches, firstMatch) is here too, so the view only hides what it says.
#pragma once

#include "records.h"

#include <QAbstractTableModel>

class ProfileModel : public QAbstractTableModel
{
    Q_OBJECT
  public:
    enum Column { Region, Role, Visits, Inclusive, Exclusive, Share, ColumnCount };
    struct Entry {
        QString name, role;
        quint64 visits = 0, inclusive = 0, exclusive = 0;
        double share = 0.0;
        quint64 messagesSent = 0, bytesSent = 0;
    };

    explicit ProfileModel(QObject *parent = nullptr);

    bool applyReply(const Records &records);
    void clear();

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

    const QVector<Entry> &entries() const
    {
        return m_entries;
    }
    const Record &header() const
    {
        return m_header;
    }
    QString regionAt(int row) const
    {
        return row >= 0 && row < m_entries.size() ? m_entries[row].name : QString();
    }
    // Whether row's region name contains `text` (spaces around it ignored), whatever the case; every row
    // matches an empty text.
    bool matches(int row, const QString &text) const;
    // The first row, in the current order, that matches `text` (-1 when none does or `text` is empty).
    int firstMatch(const QString &text) const;
    int sortColumn() const
    {
        return m_sortColumn;
    }
    Qt::SortOrder sortOrder() const
    {
        return m_sortOrder;
    }
    QString partialText() const
    {
        return m_partialText;
    }
    int partialsKept() const
    {
        return m_partialsKept;
    }

  private:
    void sortEntries();
    Record m_header;
    QVector<Entry> m_entries;
    QString m_partialText;
    int m_partialsKept = 0;
    int m_sortColumn = Exclusive;
    Qt::SortOrder m_sortOrder = Qt::DescendingOrder;
};
