// message_matrix_model.h — the `messages` answer (docs/protocol.md section 6): the communication matrix,
// sender × receiver, of message counts and bytes, with the ranks blocked into groups when there are more
// than `--groups`. The matrix view draws it as a heat map.
#pragma once

#include "records.h"

#include <QObject>
#include <QVector>

class MessageMatrixModel : public QObject
{
    Q_OBJECT
  public:
    struct Cell {
        quint64 count = 0, bytes = 0;
    };
    struct Range {
        int first = 0, last = -1; // ranks of a group (last < first: not seen in any cell)
    };

    explicit MessageMatrixModel(QObject *parent = nullptr);

    // "messages [--from --to] --groups G"
    static QString command(const QString &windowOptions, int groups = 64);

    bool applyReply(const Records &records);
    void clear();

    bool hasAnswer() const
    {
        return m_hasAnswer;
    }
    int groups() const
    {
        return m_groups;
    }
    bool grouped() const
    {
        return m_header.u64("grouped") != 0;
    }
    // The cell from group `src` to group `dst`.
    Cell cell(int src, int dst) const;
    quint64 maximum(bool bytes) const;
    quint64 totalCount() const
    {
        return m_header.u64("count");
    }
    quint64 totalBytes() const
    {
        return m_header.u64("bytes");
    }
    int cellsUsed() const;
    // The ranks of group g ("3" or "4–7"), as the answer's lines said.
    QString label(int group) const;
    const Record &header() const
    {
        return m_header;
    }
    QString summary() const;

  signals:
    void changed();

  private:
    bool m_hasAnswer = false;
    Record m_header;
    int m_groups = 0;
    QVector<Cell> m_cells; // row-major, m_groups × m_groups
    QVector<Range> m_ranges;
};
