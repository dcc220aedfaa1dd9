// wait_states_model.h — the `wait-states` answer (docs/protocol.md section 6): time the ranks waited in MPI
// for another rank, by kind, as a profile per MPI function and kind (the table), per rank and as "who made
// me wait" pairs; and, for the timeline, the same query over consecutive slices of the visible window, so
// that where the waiting happened shows per rank and time.
#pragma once

#include "records.h"

#include <QAbstractTableModel>

class WaitStatesModel : public QAbstractTableModel
{
    Q_OBJECT
  public:
    enum Column { Function, Kind, Wait, Count, Share, ColumnCount };
    enum WaitKind { LateSender, LateReceiver, WaitNxN, LateBroadcast, EarlyReduce, KindCount };
    struct FunctionWait {
        QString name, kind;
        quint64 waitNs = 0, count = 0;
        double share = 0.0;
    };
    struct RankWait {
        int rank = 0;
        quint64 waitNs = 0;
        quint64 byKind[KindCount] = {};
    };
    struct Pair {
        int waiting = 0, causing = 0;
        quint64 waitNs = 0;
        double share = 0.0;
    };
    // One slice of the window: [from, to) and each rank's wait in it.
    struct Slice {
        quint64 from = 0, to = 0;
        bool answered = false;
        QHash<int, quint64> waitNs;
    };

    explicit WaitStatesModel(QObject *parent = nullptr);

    static const char *kindKey(int kind); // "late_sender_ns", …
    static QString kindName(int kind);    // "late sender", …

    // "wait-states [--from --to] --top M --limit N"
    static QString command(const QString &windowOptions, int top = 50, int pairs = 50);

    bool applyReply(const Records &records);
    void clear();

    // The slices of [from, to): the queries to ask, one per slice (answers: applySlice).
    QStringList startSlices(quint64 from, quint64 to, int count);
    bool applySlice(int index, const Records &records);
    const QVector<Slice> &slices() const
    {
        return m_slices;
    }
    int slicesAnswered() const;
    // The largest wait of one rank in one slice (to scale the timeline's shading).
    quint64 sliceMaximum() const;

    bool hasAnswer() const
    {
        return m_hasAnswer;
    }
    quint64 totalNs() const
    {
        return m_header.u64("total_ns");
    }
    quint64 kindNs(int kind) const
    {
        return m_header.u64(kindKey(kind));
    }
    const Record &header() const
    {
        return m_header;
    }
    const QVector<FunctionWait> &functions() const
    {
        return m_functions;
    }
    const QVector<RankWait> &ranks() const
    {
        return m_ranks;
    }
    const QVector<Pair> &pairs() const
    {
        return m_pairs;
    }
    QString summary() const;

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  signals:
    void slicesChanged();

  private:
    bool m_hasAnswer = false;
    Record m_header;
    QVector<FunctionWait> m_functions;
    QVector<RankWait> m_ranks;
    QVector<Pair> m_pairs;
    QVector<Slice> m_slices;
};
