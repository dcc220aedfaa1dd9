#include "structure_model.h"

#include "format.h"

#include <otfx/protocol.h>

#include <iterator>

StructureModel::StructureModel(QObject *parent) : QAbstractTableModel(parent) {}

QVector<int> parseRankList(const QString &text)
{
    QVector<int> ranks;
    if (text.isEmpty() || text == QLatin1String("none"))
        return ranks;
    for (const QString &item : text.split(QLatin1Char(','))) {
        const QStringList ends = item.split(QLatin1Char('-'));
        bool okFirst = false, okLast = true;
        const int first = ends[0].toInt(&okFirst);
        const int last = ends.size() > 1 ? ends[1].toInt(&okLast) : first;
        if (!okFirst || !okLast || ends.size() > 2 || last < first)
            return QVector<int>();
        for (int r = first; r <= last; r++)
            ranks.append(r);
    }
    return ranks;
}

QString StructureModel::command(int topPaths, double tolerancePct)
{
    QString line = QStringLiteral("structure --top %1").arg(topPaths);
    if (tolerancePct >= 0.0)
        line += QStringLiteral(" --group-tolerance ") +
                (qIsInf(tolerancePct) ? QStringLiteral("inf") : QString::number(tolerancePct));
    return line;
}

StructureModel::GroupInfo *StructureModel::group(int id)
{
    for (GroupInfo &g : m_groups)
        if (g.group == id)
            return &g;
    return nullptr;
}

bool StructureModel::applyReply(const Records &records)
{
    const Record *header = findRecord(records, "structure");
    if (!header)
        return false;
    beginResetModel();
    m_hasAnswer = true;
    m_header = *header;
    m_groups.clear();
    for (const Record &record : records) {
        if (record.type == "group") {
            GroupInfo g;
            g.group = int(record.u64("group"));
            g.members = int(record.u64("members"));
            g.representative = int(record.u64("representative"));
            g.ranks = record.value("ranks");
            g.spreadPct = record.f64("spread_pct");
            m_groups.append(g);
            continue;
        }
        GroupInfo *g = group(int(record.u64("group")));
        if (!g)
            continue;
        if (record.type == "node") {
            Node n;
            n.id = int(record.u64("id"));
            n.kind = record.value("kind");
            n.name = record.value("name");
            n.context = record.value("context");
            n.visits = record.u64("visits");
            n.timeNs = record.u64("time_ns");
            n.meanNs = record.u64("time_mean_ns");
            g->nodes.append(n);
        } else if (record.type == "edge") {
            Edge e;
            e.from = int(record.u64("from"));
            e.to = int(record.u64("to"));
            e.count = record.u64("count");
            e.totalNs = record.u64("total_ns");
            e.meanNs = record.u64("mean_ns");
            g->edges.append(e);
        } else if (record.type == "peer") {
            Peer p;
            p.node = int(record.u64("node"));
            p.send = record.value("direction") == QLatin1String("send");
            p.offset = int(record.i64("offset"));
            p.peerGroup = int(record.i64("peer_group", -1));
            p.count = record.u64("count");
            p.bytes = record.u64("bytes");
            g->peers.append(p);
        } else if (record.type == "path") {
            Path p;
            p.anchor = int(record.u64("anchor"));
            p.count = record.u64("count");
            for (const QString &id : record.value("nodes").split(QLatin1Char(','), Qt::SkipEmptyParts))
                p.nodes.append(id.toInt());
            g->paths.append(p);
        }
    }
    endResetModel();
    return true;
}

void StructureModel::clear()
{
    beginResetModel();
    m_hasAnswer = false;
    m_header = Record();
    m_groups.clear();
    endResetModel();
}

int StructureModel::groupOfRank(int rank) const
{
    for (const GroupInfo &g : m_groups)
        if (parseRankList(g.ranks).contains(rank))
            return g.group;
    return -1;
}

QString StructureModel::rankFilterOf(int row, QString *why) const
{
    if (row < 0 || row >= m_groups.size()) {
        if (why)
            *why = tr("no structure group is chosen");
        return QString();
    }
    const GroupInfo &g = m_groups[row];
    otfx_rank_set set;
    if (otfx_rank_set_parse(g.ranks.toUtf8().constData(), &set) && set.count > 0)
        return g.ranks;
    if (why) {
        const int ranges = int(g.ranks.count(QLatin1Char(','))) + 1;
        *why = ranges > int(std::size(set.ranges))
                   ? tr("group %1's %2 ranks form %3 ranges; a rank filter holds at most %4")
                         .arg(g.group)
                         .arg(g.members)
                         .arg(ranges)
                         .arg(int(std::size(set.ranges)))
                   : tr("group %1's ranks '%2' are not a rank list").arg(g.group).arg(g.ranks);
    }
    return QString();
}

QString StructureModel::summary() const
{
    if (!m_hasAnswer)
        return tr("no structure computed yet");
    const QString tolerance = m_header.value("tolerance_pct");
    return tr("%1 ranks in %2 groups of the same structure (edge times within %3)")
        .arg(m_header.value("selected"), m_header.value("groups"),
             tolerance == QLatin1String("inf") ? tr("any difference") : tolerance + QLatin1Char('%'));
}

int StructureModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_groups.size());
}

int StructureModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant StructureModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_groups.size())
        return QVariant();
    const GroupInfo &g = m_groups[index.row()];
    if (role == Qt::TextAlignmentRole)
        return index.column() == Ranks ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                       : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole && role != Qt::UserRole)
        return QVariant();
    switch (index.column()) {
    case Group:
        return g.group;
    case Ranks:
        return g.ranks;
    case Members:
        return g.members;
    case Nodes:
        return int(g.nodes.size());
    case Edges:
        return int(g.edges.size());
    case Spread:
        return role == Qt::UserRole ? QVariant(g.spreadPct)
                                    : QVariant(QString::number(g.spreadPct, 'f', 1) + QLatin1Char('%'));
    default:
        return QVariant();
    }
}

QVariant StructureModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    static const char *names[] = {"group", "ranks", "members", "nodes", "edges", "time spread"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}
