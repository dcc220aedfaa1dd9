#include "rank_profile_model.h"

#include "format.h"

#include <algorithm>
#include <cmath>
#include <limits>

RankProfileModel::RankProfileModel(QObject *parent) : QAbstractTableModel(parent) {}

QStringList RankProfileModel::start(int ranks, const QString &windowOptions, bool compensated, int maxGroups)
{
    beginResetModel();
    m_groups.clear();
    m_entries.clear();
    m_roles.clear();
    m_compensated = compensated;
    QStringList lines;
    const int groups = std::max(0, std::min(ranks, std::max(1, maxGroups)));
    for (int g = 0; g < groups; g++) {
        RankGroup group;
        // near-equal contiguous groups, as the protocol's own grouping (otfx_rank_selection)
        group.first = int((qint64(g) * ranks + groups - 1) / groups);
        group.last = int((qint64(g + 1) * ranks + groups - 1) / groups) - 1;
        m_groups.append(group);
        QString line = QStringLiteral("profile");
        if (!windowOptions.isEmpty())
            line += QLatin1Char(' ') + windowOptions;
        line += group.first == group.last ? QStringLiteral(" --ranks %1").arg(group.first)
                                          : QStringLiteral(" --ranks %1-%2").arg(group.first).arg(group.last);
        if (compensated)
            line += QStringLiteral(" --compensated");
        lines << line;
    }
    endResetModel();
    return lines;
}

bool RankProfileModel::applyGroupReply(int index, const Records &records)
{
    const Record *header = findRecord(records, "profile");
    if (index < 0 || index >= m_groups.size() || !header)
        return false;
    RankGroup &group = m_groups[index];
    group.answered = true;
    group.approximate = header->u64("approximate") != 0;
    group.exclusive.clear();
    group.inclusive.clear();
    group.visits.clear();
    for (const Record &record : records) {
        if (record.type != "region")
            continue;
        const QString name = record.value("name");
        group.exclusive[name] += record.u64("exclusive_ns");
        group.inclusive[name] += record.u64("inclusive_ns");
        group.visits[name] += record.u64("visits");
        m_roles.insert(name, record.value("role"));
    }
    rebuild();
    emit progressed(groupsAnswered(), int(m_groups.size()));
    return true;
}

void RankProfileModel::clear()
{
    beginResetModel();
    m_groups.clear();
    m_entries.clear();
    m_roles.clear();
    endResetModel();
}

void RankProfileModel::setMetric(Metric metric)
{
    if (metric == m_metric)
        return;
    m_metric = metric;
    rebuild();
}

int RankProfileModel::groupsAnswered() const
{
    return int(
        std::count_if(m_groups.begin(), m_groups.end(), [](const RankGroup &g) { return g.answered; }));
}

bool RankProfileModel::grouped() const
{
    return std::any_of(m_groups.begin(), m_groups.end(), [](const RankGroup &g) { return g.last > g.first; });
}

bool RankProfileModel::approximate() const
{
    return std::any_of(m_groups.begin(), m_groups.end(), [](const RankGroup &g) { return g.approximate; });
}

double RankProfileModel::perRank(const RankGroup &group, const QString &region) const
{
    const QHash<QString, quint64> &values = m_metric == Exclusive   ? group.exclusive
                                            : m_metric == Inclusive ? group.inclusive
                                                                    : group.visits;
    return double(values.value(region, 0)) / double(group.last - group.first + 1);
}

QVector<double> RankProfileModel::bars(const QString &region) const
{
    QVector<double> values;
    for (const RankGroup &group : m_groups)
        values.append(group.answered ? perRank(group, region) : 0.0);
    return values;
}

int RankProfileModel::rowOf(const QString &region) const
{
    for (int i = 0; i < m_entries.size(); i++)
        if (m_entries[i].name == region)
            return i;
    return -1;
}

void RankProfileModel::rebuild()
{
    beginResetModel();
    m_entries.clear();
    int ranks = 0;
    for (const RankGroup &group : m_groups)
        if (group.answered)
            ranks += group.last - group.first + 1;
    for (auto it = m_roles.constBegin(); it != m_roles.constEnd(); ++it) {
        Entry e;
        e.name = it.key();
        e.role = it.value();
        e.min = std::numeric_limits<double>::infinity();
        for (int g = 0; g < m_groups.size(); g++) {
            const RankGroup &group = m_groups[g];
            if (!group.answered)
                continue;
            const double v = perRank(group, e.name);
            e.total += v * double(group.last - group.first + 1);
            e.min = std::min(e.min, v);
            if (e.maxGroup < 0 || v > e.max) {
                e.max = v;
                e.maxGroup = g;
            }
        }
        if (!std::isfinite(e.min))
            e.min = 0.0;
        e.mean = ranks ? e.total / ranks : 0.0;
        m_entries.append(e);
    }
    sortEntries();
    endResetModel();
}

QString RankProfileModel::summary() const
{
    if (m_groups.isEmpty())
        return tr("no profile per rank asked yet");
    QString text = tr("%1 ranks").arg(m_groups.isEmpty() ? 0 : m_groups.last().last + 1);
    if (grouped())
        text += tr(" in %1 groups (per rank: the group's mean)").arg(m_groups.size());
    if (!complete())
        text += tr(", %1 of %2 answered").arg(groupsAnswered()).arg(m_groups.size());
    if (m_compensated)
        text += tr(", compensated (the measurement's intrusion taken out)");
    if (approximate())
        text += tr(" — approximate: the window cuts a reduced range, its statistics are pro-rated");
    return text;
}

int RankProfileModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_entries.size());
}

int RankProfileModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

static QVariant sortValue(const RankProfileModel::Entry &e, int column)
{
    switch (column) {
    case RankProfileModel::Region:
        return e.name;
    case RankProfileModel::Role:
        return e.role;
    case RankProfileModel::Min:
        return e.min;
    case RankProfileModel::Mean:
        return e.mean;
    case RankProfileModel::Max:
        return e.max;
    case RankProfileModel::MaxRank:
        return e.maxGroup;
    case RankProfileModel::Total:
        return e.total;
    case RankProfileModel::Imbalance:
        return e.mean > 0.0 ? e.max / e.mean : 0.0;
    default:
        return QVariant();
    }
}

QVariant RankProfileModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_entries.size())
        return QVariant();
    const Entry &e = m_entries[index.row()];
    if (role == Qt::TextAlignmentRole)
        return index.column() <= Role ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                      : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::UserRole)
        return sortValue(e, index.column());
    if (role != Qt::DisplayRole)
        return QVariant();
    const auto value = [this](double v) {
        return m_metric == Visits ? QString::number(v, 'f', v < 10 ? 1 : 0) : formatDuration(v);
    };
    switch (index.column()) {
    case Region:
        return e.name;
    case Role:
        return e.role;
    case Min:
        return value(e.min);
    case Mean:
        return value(e.mean);
    case Max:
        return value(e.max);
    case MaxRank: {
        if (e.maxGroup < 0)
            return QString();
        const RankGroup &g = m_groups[e.maxGroup];
        return g.first == g.last ? QString::number(g.first)
                                 : QStringLiteral("%1–%2").arg(g.first).arg(g.last);
    }
    case Total:
        return value(e.total);
    case Imbalance:
        return e.mean > 0.0 ? QString::number(e.max / e.mean, 'f', 2) : QString();
    default:
        return QVariant();
    }
}

QVariant RankProfileModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    static const char *names[] = {"region",     "role",        "min / rank", "mean / rank",
                                  "max / rank", "rank of max", "all ranks",  "max / mean"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

void RankProfileModel::sort(int column, Qt::SortOrder order)
{
    m_sortColumn = column;
    m_sortOrder = order;
    emit layoutAboutToBeChanged();
    sortEntries();
    emit layoutChanged();
}

void RankProfileModel::sortEntries()
{
    const int column = m_sortColumn;
    const Qt::SortOrder order = m_sortOrder;
    std::stable_sort(m_entries.begin(), m_entries.end(), [column, order](const Entry &a, const Entry &b) {
        const QVariant x = sortValue(a, column), y = sortValue(b, column);
        const bool less =
            x.type() == QVariant::String ? x.toString() < y.toString() : x.toDouble() < y.toDouble();
        const bool greater =
            x.type() == QVariant::String ? y.toString() < x.toString() : y.toDouble() < x.toDouble();
        return order == Qt::AscendingOrder ? less : greater;
    });
}
