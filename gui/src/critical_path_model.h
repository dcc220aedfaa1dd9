// critical_path_model.h — the `critical-path` answer (docs/protocol.md section 6): the path's length, the
// functions most on it (time on the path, its share, their CPU time, the path without a zeroed function)
// as a table, and its segments (rank, thread, function, start, end) for the timeline's highlight.
#pragma once

#include "records.h"

#include <QAbstractTableModel>

class CriticalPathModel : public QAbstractTableModel
{
    Q_OBJECT
  public:
    enum Column { Function, OnPath, PathShare, Cpu, CpuShare, Zeroed, ColumnCount };
    struct FunctionTime {
        QString name;
        quint64 pathNs = 0, cpuNs = 0, zeroedNs = 0;
        double pathShare = 0.0, cpuShare = 0.0;
        bool zeroed = false; // the --zero function's line: zeroedNs is the path without it
    };
    struct Segment {
        int rank = 0, thread = 0;
        QString function;
        quint64 start = 0, end = 0;
    };

    explicit CriticalPathModel(QObject *parent = nullptr);

    // "critical-path [--from --to] [--zero FUNC] --limit N": the query for a window ("" : everything
    // held) with FUNC's time set to zero when given.
    static QString command(const QString &windowOptions, const QString &zero, int segmentLimit = 10000);

    bool applyReply(const Records &records);
    void clear();

    bool hasAnswer() const
    {
        return m_hasAnswer;
    }
    quint64 lengthNs() const
    {
        return m_header.u64("length_ns");
    }
    quint64 cpuNs() const
    {
        return m_header.u64("cpu_ns");
    }
    // The --zero function ("" when none) and the path's length without its time.
    QString zero() const
    {
        const QString z = m_header.value("zero");
        return z == QLatin1String("-") ? QString() : z;
    }
    quint64 zeroedNs() const
    {
        return m_header.u64("zeroed_ns");
    }
    bool truncated() const
    {
        return m_header.u64("truncated") != 0;
    }
    bool partial() const
    {
        return m_header.u64("partial") != 0;
    }
    const Record &header() const
    {
        return m_header;
    }
    const Record &unseen() const
    {
        return m_unseen;
    }
    const QVector<FunctionTime> &functions() const
    {
        return m_functions;
    }
    const QVector<Segment> &segments() const
    {
        return m_segments;
    }
    // One line for people: length, share of the CPU time, what was not seen.
    QString summary() const;

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  private:
    bool m_hasAnswer = false;
    Record m_header, m_unseen;
    QVector<FunctionTime> m_functions;
    QVector<Segment> m_segments;
};
