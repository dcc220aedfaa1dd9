#include "message_matrix_model.h"

#include "format.h"

MessageMatrixModel::MessageMatrixModel(QObject *parent) : QObject(parent) {}

QString MessageMatrixModel::command(const QString &windowOptions, int groups)
{
    QString line = QStringLiteral("messages");
    if (!windowOptions.isEmpty())
        line += QLatin1Char(' ') + windowOptions;
    return line + QStringLiteral(" --groups %1").arg(groups);
}

bool MessageMatrixModel::applyReply(const Records &records)
{
    const Record *header = findRecord(records, "matrix");
    if (!header)
        return false;
    m_hasAnswer = true;
    m_header = *header;
    // a group without any cell is still a row: --groups is at most the selected ranks
    m_groups = int(std::min<quint64>(header->u64("groups"), 4096));
    m_cells.fill(Cell(), m_groups * m_groups);
    m_ranges.fill(Range(), m_groups);
    for (const Record &record : records) {
        if (record.type != "messages")
            continue;
        const int src = int(record.u64("src")), dst = int(record.u64("dst"));
        if (src < 0 || dst < 0 || src >= m_groups || dst >= m_groups)
            continue;
        Cell &c = m_cells[src * m_groups + dst];
        c.count += record.u64("count");
        c.bytes += record.u64("bytes");
        m_ranges[src] = {int(record.u64("src_first")), int(record.u64("src_last"))};
        m_ranges[dst] = {int(record.u64("dst_first")), int(record.u64("dst_last"))};
    }
    emit changed();
    return true;
}

void MessageMatrixModel::clear()
{
    m_hasAnswer = false;
    m_header = Record();
    m_groups = 0;
    m_cells.clear();
    m_ranges.clear();
    emit changed();
}

MessageMatrixModel::Cell MessageMatrixModel::cell(int src, int dst) const
{
    if (src < 0 || dst < 0 || src >= m_groups || dst >= m_groups)
        return Cell();
    return m_cells[src * m_groups + dst];
}

quint64 MessageMatrixModel::maximum(bool bytes) const
{
    quint64 maximum = 0;
    for (const Cell &c : m_cells)
        maximum = std::max(maximum, bytes ? c.bytes : c.count);
    return maximum;
}

int MessageMatrixModel::cellsUsed() const
{
    return int(std::count_if(m_cells.begin(), m_cells.end(), [](const Cell &c) { return c.count > 0; }));
}

QString MessageMatrixModel::label(int group) const
{
    if (group < 0 || group >= m_ranges.size())
        return QString();
    const Range &r = m_ranges[group];
    if (r.last < r.first)
        return grouped() ? tr("group %1").arg(group) : QString::number(group);
    return r.first == r.last ? QString::number(r.first) : QStringLiteral("%1–%2").arg(r.first).arg(r.last);
}

QString MessageMatrixModel::summary() const
{
    if (!m_hasAnswer)
        return tr("no message matrix asked yet");
    return tr("%1 messages, %2 between %3 %4 (%5 pairs communicate)")
        .arg(formatCount(double(totalCount())), formatBytes(double(totalBytes())))
        .arg(m_groups)
        .arg(grouped() ? tr("groups of ranks") : tr("ranks"))
        .arg(cellsUsed());
}
