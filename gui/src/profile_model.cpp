#include "profile_model.h"

#include "format.h"

#include <algorithm>

ProfileModel::ProfileModel(QObject *parent) : QAbstractTableModel(parent) {}

bool ProfileModel::applyReply(const Records &records)
{
    const Record *header = findRecord(records, "profile");
    if (!header)
        return false;
    const Record *partial = findRecord(records, "partial");
    if (partial && !m_entries.isEmpty()) { // what every place said stays until the final answer
        m_partialsKept++;
        return false;
    }
    m_partialText =
        partial
            ? tr("partial: %1 of %2 places answered").arg(partial->value("answered"), partial->value("total"))
        : header->u64("places_answered") < header->u64("places_total")
            ? tr("only %1 of %2 places answered")
                  .arg(header->value("places_answered"), header->value("places_total"))
            : QString();
    beginResetModel();
    m_header = *header;
    m_entries.clear();
    for (const Record &record : records) {
        if (record.type != "region")
            continue;
        Entry e;
        e.name = record.value("name");
        e.role = record.value("role");
        e.visits = record.u64("visits");
        e.inclusive = record.u64("inclusive_ns");
        e.exclusive = record.u64("exclusive_ns");
        e.share = record.f64("share");
        e.messagesSent = record.u64("messages_sent");
        e.bytesSent = record.u64("bytes_sent");
        m_entries.append(e);
    }
    sortEntries();
    endResetModel();
    return true;
}

void ProfileModel::clear()
{
    beginResetModel();
    m_header = Record();
    m_entries.clear();
    endResetModel();
}

int ProfileModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_entries.size());
}

int ProfileModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ProfileModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_entries.size())
        return QVariant();
    const Entry &e = m_entries[index.row()];
    if (role == Qt::TextAlignmentRole)
        return index.column() <= Role ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                      : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole)
        return QStringLiteral("%1 (%2): %3 visits, inclusive %4, exclusive %5, %6 messages sent (%7)")
            .arg(e.name, e.role)
            .arg(e.visits)
            .arg(formatDuration(double(e.inclusive)), formatDuration(double(e.exclusive)))
            .arg(e.messagesSent)
            .arg(formatBytes(double(e.bytesSent)));
    if (role != Qt::DisplayRole && role != Qt::UserRole)
        return QVariant();
    const bool raw = role == Qt::UserRole;
    switch (index.column()) {
    case Region:
        return e.name;
    case Role:
        return e.role;
    case Visits:
        return e.visits;
    case Inclusive:
        return raw ? QVariant(e.inclusive) : QVariant(formatDuration(double(e.inclusive)));
    case Exclusive:
        return raw ? QVariant(e.exclusive) : QVariant(formatDuration(double(e.exclusive)));
    case Share:
        return raw ? QVariant(e.share) : QVariant(QStringLiteral("%1 %").arg(e.share * 100.0, 0, 'f', 1));
    default:
        return QVariant();
    }
}

QVariant ProfileModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    static const char *const names[ColumnCount] = {"Region",    "Role",      "Visits",
                                                   "Inclusive", "Exclusive", "Share"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

bool ProfileModel::matches(int row, const QString &text) const
{
    if (row < 0 || row >= m_entries.size())
        return false;
    const QString wanted = text.trimmed();
    return wanted.isEmpty() || m_entries[row].name.contains(wanted, Qt::CaseInsensitive);
}

int ProfileModel::firstMatch(const QString &text) const
{
    if (text.trimmed().isEmpty())
        return -1;
    for (int row = 0; row < m_entries.size(); row++)
        if (matches(row, text))
            return row;
    return -1;
}

void ProfileModel::sort(int column, Qt::SortOrder order)
{
    if (column < 0 || column >= ColumnCount)
        return;
    emit layoutAboutToBeChanged();
    m_sortColumn = column;
    m_sortOrder = order;
    sortEntries();
    emit layoutChanged();
}

void ProfileModel::sortEntries()
{
    const int column = m_sortColumn;
    auto less = [column](const Entry &a, const Entry &b) {
        switch (column) {
        case Region:
            return a.name < b.name;
        case Role:
            return a.role != b.role ? a.role < b.role : a.name < b.name;
        case Visits:
            return a.visits != b.visits ? a.visits < b.visits : a.name < b.name;
        case Inclusive:
            return a.inclusive != b.inclusive ? a.inclusive < b.inclusive : a.name < b.name;
        case Exclusive:
            return a.exclusive != b.exclusive ? a.exclusive < b.exclusive : a.name < b.name;
        default:
            return a.share != b.share ? a.share < b.share : a.name < b.name;
        }
    };
    if (m_sortOrder == Qt::AscendingOrder)
        std::stable_sort(m_entries.begin(), m_entries.end(), less);
    else
        std::stable_sort(m_entries.begin(), m_entries.end(),
                         [&less](const Entry &a, const Entry &b) { return less(b, a); });
}
