#include "critical_path_model.h"

#include "format.h"

CriticalPathModel::CriticalPathModel(QObject *parent) : QAbstractTableModel(parent) {}

QString CriticalPathModel::command(const QString &windowOptions, const QString &zero, int segmentLimit)
{
    QString line = QStringLiteral("critical-path");
    if (!windowOptions.isEmpty())
        line += QLatin1Char(' ') + windowOptions;
    if (!zero.isEmpty())
        line += QStringLiteral(" --zero ") + encodeWord(zero);
    return line + QStringLiteral(" --limit %1").arg(segmentLimit);
}

bool CriticalPathModel::applyReply(const Records &records)
{
    const Record *header = findRecord(records, "critical-path");
    if (!header)
        return false;
    beginResetModel();
    m_hasAnswer = true;
    m_header = *header;
    const Record *unseen = findRecord(records, "unseen");
    m_unseen = unseen ? *unseen : Record();
    m_functions.clear();
    m_segments.clear();
    for (const Record &record : records) {
        if (record.type == "cp-function") {
            FunctionTime f;
            f.name = record.value("name");
            f.pathNs = record.u64("cp_ns");
            f.pathShare = record.f64("cp_share");
            f.cpuNs = record.u64("cpu_ns");
            f.cpuShare = record.f64("cpu_share");
            f.zeroed = record.has("zeroed_ns");
            f.zeroedNs = record.u64("zeroed_ns");
            m_functions.append(f);
        } else if (record.type == "cp-segment") {
            Segment s;
            s.rank = int(record.u64("rank"));
            s.thread = int(record.u64("thread"));
            s.function = record.value("function");
            s.start = record.u64("start");
            s.end = record.u64("end");
            m_segments.append(s);
        }
    }
    endResetModel();
    return true;
}

void CriticalPathModel::clear()
{
    beginResetModel();
    m_hasAnswer = false;
    m_header = m_unseen = Record();
    m_functions.clear();
    m_segments.clear();
    endResetModel();
}

QString CriticalPathModel::summary() const
{
    if (!m_hasAnswer)
        return tr("no critical path computed yet");
    QString text = tr("critical path %1 of %2 CPU time over the selected ranks")
                       .arg(formatDuration(double(lengthNs())), formatDuration(double(cpuNs())));
    if (!zero().isEmpty())
        text += tr("; without %1: %2 (%3 shorter)")
                    .arg(zero(), formatDuration(double(zeroedNs())),
                         formatDuration(double(lengthNs() - std::min(lengthNs(), zeroedNs()))));
    if (truncated())
        text += tr("; %1 of %2 segments shown").arg(m_segments.size()).arg(m_header.u64("segments_total"));
    if (m_header.u64("walk_breaks"))
        text += tr("; %1 walks met an origin no place held").arg(m_header.u64("walk_breaks"));
    if (m_unseen.u64("receives_not_held") + m_unseen.u64("receives_rank_not_served") +
            m_unseen.u64("receives_stalled") >
        0)
        text += tr("; %1 receives without their send (not held)")
                    .arg(m_unseen.u64("receives_not_held") + m_unseen.u64("receives_rank_not_served") +
                         m_unseen.u64("receives_stalled"));
    if (partial())
        text += tr(" (partial: %1 of %2 places)")
                    .arg(m_header.value("places_answered"), m_header.value("places_total"));
    return text;
}

int CriticalPathModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_functions.size());
}

int CriticalPathModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CriticalPathModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_functions.size())
        return QVariant();
    const FunctionTime &f = m_functions[index.row()];
    if (role == Qt::TextAlignmentRole)
        return index.column() == Function ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                          : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole)
        return tr("%1: %2 on the critical path (%3 of it), %4 CPU time on all ranks (%5)")
            .arg(f.name, formatDuration(double(f.pathNs)), QString::number(f.pathShare * 100.0, 'f', 1) + '%',
                 formatDuration(double(f.cpuNs)), QString::number(f.cpuShare * 100.0, 'f', 1) + '%');
    const bool sortKey = role == Qt::UserRole;
    if (role != Qt::DisplayRole && !sortKey)
        return QVariant();
    switch (index.column()) {
    case Function:
        return f.name;
    case OnPath:
        return sortKey ? QVariant(f.pathNs) : QVariant(formatDuration(double(f.pathNs)));
    case PathShare:
        return sortKey ? QVariant(f.pathShare) : QVariant(QString::number(f.pathShare * 100.0, 'f', 1) + '%');
    case Cpu:
        return sortKey ? QVariant(f.cpuNs) : QVariant(formatDuration(double(f.cpuNs)));
    case CpuShare:
        return sortKey ? QVariant(f.cpuShare) : QVariant(QString::number(f.cpuShare * 100.0, 'f', 1) + '%');
    case Zeroed:
        if (!f.zeroed)
            return sortKey ? QVariant(quint64(0)) : QVariant(QString());
        return sortKey ? QVariant(f.zeroedNs) : QVariant(formatDuration(double(f.zeroedNs)));
    default:
        return QVariant();
    }
}

QVariant CriticalPathModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    static const char *names[] = {"function", "on the path", "path share",
                                  "CPU time", "CPU share",   "path if zero"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}
