// structure_model.h — the `structure` answer (docs/protocol.md section 6): the ranks grouped by their task
// activity graphs (the table: one row per group) and each group's graph — its representative's nodes,
// edges, message peers and most frequent paths — for the structure view.
#pragma once

#include "records.h"

#include <QAbstractTableModel>

class StructureModel : public QAbstractTableModel
{
    Q_OBJECT
  public:
    enum Column { Group, Ranks, Members, Nodes, Edges, Spread, ColumnCount };
    struct Node {
        int id = 0;
        QString kind, name, context;
        quint64 visits = 0, timeNs = 0, meanNs = 0;
    };
    struct Edge {
        int from = 0, to = 0;
        quint64 count = 0, totalNs = 0, meanNs = 0;
    };
    struct Peer {
        int node = 0, offset = 0, peerGroup = -1;
        bool send = true;
        quint64 count = 0, bytes = 0;
    };
    struct Path {
        int anchor = 0;
        quint64 count = 0;
        QVector<int> nodes;
    };
    struct GroupInfo {
        int group = 0, members = 0, representative = 0;
        QString ranks; // "0,2-5"
        double spreadPct = 0.0;
        QVector<Node> nodes;
        QVector<Edge> edges;
        QVector<Peer> peers;
        QVector<Path> paths;
    };

    explicit StructureModel(QObject *parent = nullptr);

    // "structure [--top M] [--group-tolerance PCT|inf]" (tolerance < 0: the module's default)
    static QString command(int topPaths = 3, double tolerancePct = -1.0);

    bool applyReply(const Records &records);
    void clear();

    bool hasAnswer() const
    {
        return m_hasAnswer;
    }
    const Record &header() const
    {
        return m_header;
    }
    const QVector<GroupInfo> &groups() const
    {
        return m_groups;
    }
    // The group a rank belongs to (-1: none), from the groups' rank lists.
    int groupOfRank(int rank) const;
    // The ranks of the group in row `row` as the timeline's rank filter takes them ("0-3,8-11": the rank
    // set the answer wrote); empty with *why when there is no such row or its ranks form more ranges than
    // a rank filter (a protocol rank set) holds.
    QString rankFilterOf(int row, QString *why = nullptr) const;
    QString summary() const;

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  private:
    GroupInfo *group(int id);
    bool m_hasAnswer = false;
    Record m_header;
    QVector<GroupInfo> m_groups;
};

// Ranks of a rank set written "0,2-5" (docs/protocol.md section 5); empty for "none" or bad text.
QVector<int> parseRankList(const QString &text);
