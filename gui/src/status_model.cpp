#include "status_model.h"

#include "format.h"

#include <QStringList>

StatusModel::StatusModel(QObject *parent) : QAbstractTableModel(parent) {}

bool StatusModel::applyReply(const Records &records)
{
    const Record *summary = findRecord(records, "summary");
    if (!summary)
        return false;
    if (findRecord(records, "partial") && m_valid) { // a sum over some places: keep the last full one
        m_partialsKept++;
        return false;
    }
    beginResetModel();
    m_summary = *summary;
    m_places.clear();
    for (const Record &record : records)
        if (record.type == "place")
            m_places.append(record);
    m_valid = true;
    endResetModel();
    emit updated();
    return true;
}

void StatusModel::clear()
{
    beginResetModel();
    m_summary = Record();
    m_places.clear();
    m_valid = false;
    endResetModel();
    emit updated();
}

int StatusModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_places.size());
}

int StatusModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant StatusModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_places.size())
        return QVariant();
    const Record &p = m_places[index.row()];
    if (role == Qt::TextAlignmentRole)
        return index.column() == Strategy || index.column() >= Recording
                   ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::UserRole) { // sort keys
        switch (index.column()) {
        case Fill:
            return p.f64("fill");
        case EventsPerS:
            return p.u64("events_per_s");
        default:
            break;
        }
    }
    if (role != Qt::DisplayRole)
        return QVariant();
    switch (index.column()) {
    case Place:
        return p.u64("index");
    case Ranks:
        return p.has("first_rank") ? QStringLiteral("%1 (%2–%3)")
                                         .arg(p.value("ranks"), p.value("first_rank"), p.value("last_rank"))
                                   : p.value("ranks");
    case EventsPerS:
        return formatCount(double(p.u64("events_per_s")));
    case Fill:
        return QStringLiteral("%1 % of %2")
            .arg(p.f64("fill") * 100.0, 0, 'f', 1)
            .arg(formatBytes(double(p.u64("buffer_budget"))));
    case Strategy:
        return p.value("strategy");
    case Reductions:
        return p.u64("reductions");
    case Reduced:
        return p.u64("events_reduced");
    case Dropped:
        return p.u64("dropped_events");
    case Recording:
        return p.value("recording");
    case App:
        return p.value("app_state");
    default:
        return QVariant();
    }
}

QVariant StatusModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    static const char *const names[ColumnCount] = {"Place",     "Ranks",      "Events/s", "Buffer fill",
                                                   "Reduction", "Reductions", "Reduced",  "Dropped",
                                                   "Recording", "Application"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

QString StatusModel::strategies() const
{
    QStringList list;
    for (const Record &p : m_places)
        if (!list.contains(p.value("strategy")))
            list << p.value("strategy");
    return list.join(QStringLiteral(", "));
}

QString StatusModel::bufferSummary() const
{
    QStringList parts;
    for (const Record &p : m_places) {
        QString part = QStringLiteral("P%1 %2% %3")
                           .arg(p.value("index"))
                           .arg(p.f64("fill") * 100.0, 0, 'f', 0)
                           .arg(p.value("strategy"));
        if (p.u64("events_reduced") || p.u64("dropped_events"))
            part += QStringLiteral(" (reduced %1, dropped %2)")
                        .arg(formatCount(double(p.u64("events_reduced"))),
                             formatCount(double(p.u64("dropped_events"))));
        parts << part;
    }
    return parts.join(QStringLiteral(" · "));
}

QString StatusModel::commonStrategy() const
{
    const QString all = strategies();
    return all.contains(QLatin1Char(',')) || all == QLatin1String("mixed") || all == QLatin1String("none")
               ? QString()
               : all;
}
