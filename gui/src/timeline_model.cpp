#include "timeline_model.h"

#include "format.h"

#include <QMap>
#include <QQueue>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <tuple>

static const char *const fieldNames[TimelineModel::FieldCount] = {"user",      "p2p",   "collective",
                                                                  "mpi_other", "phase", "reduced"};

const char *TimelineModel::fieldName(int field)
{
    return field >= 0 && field < FieldCount ? fieldNames[field] : "";
}

TimelineModel::TimelineModel(QObject *parent) : QObject(parent) {}

void TimelineModel::setWindow(quint64 from, quint64 to)
{
    const quint64 minimum = std::max<quint64>(1000, quint64(m_bins));
    if (to < from + minimum)
        to = from + minimum;
    if (m_hasViewport && !m_all && from == m_from && to == m_to)
        return;
    m_all = false;
    m_from = from;
    m_to = to;
    m_hasViewport = true;
    emit viewportChanged();
}

void TimelineModel::setViewport(quint64 from, quint64 to)
{
    setFollowLive(false);
    setWindow(from, std::max(from, to));
}

void TimelineModel::setPixelSize(int width, int rows)
{
    width = std::clamp(width, 1, 10000);
    rows = std::clamp(rows, 1, 4096);
    if (width * rows > 262144) // the timeline module's limit of rows × bins
        width = std::max(1, 262144 / rows);
    if (width == m_bins && rows == m_rows)
        return;
    m_bins = width;
    m_rows = rows;
    emit viewportChanged();
}

void TimelineModel::zoom(double factor, double anchor)
{
    if (!m_hasViewport)
        return;
    anchor = std::clamp(anchor, 0.0, 1.0);
    const double span = double(m_to - m_from);
    const double minimum = std::max(1000.0, double(m_bins));
    const double newSpan = std::max(minimum, span * factor);
    const double at = double(m_from) + anchor * span;
    const double from = std::max(0.0, at - anchor * newSpan);
    setViewport(quint64(from), quint64(from + newSpan));
}

void TimelineModel::pan(double fraction)
{
    if (!m_hasViewport)
        return;
    const double span = double(m_to - m_from);
    const double from = std::max(0.0, double(m_from) + fraction * span);
    setViewport(quint64(from), quint64(from + span));
}

void TimelineModel::showAll()
{
    setFollowLive(false);
    m_hasViewport = false;
    m_all = true;
    emit viewportChanged();
}

void TimelineModel::setFollowLive(bool follow)
{
    if (follow == m_follow)
        return;
    m_follow = follow;
    emit followLiveChanged(follow);
    if (follow && m_liveTime)
        setLiveTime(m_liveTime);
}

void TimelineModel::setLiveTime(quint64 last)
{
    m_liveTime = last;
    if (!m_follow || !last)
        return;
    const quint64 span = m_hasViewport ? m_to - m_from : 10'000'000'000ull;
    setWindow(last > span ? last - span : 0, last > span ? last : span);
}

QString TimelineModel::windowOptions() const
{
    if (!m_hasViewport || m_all)
        return QString();
    return QStringLiteral("--from %1ns --to %2ns").arg(m_from).arg(m_to);
}

QString TimelineModel::timelineCommand() const
{
    QString line = QStringLiteral("timeline");
    if (!windowOptions().isEmpty())
        line += QLatin1Char(' ') + windowOptions();
    return line + QStringLiteral(" --bins %1 --rows %2").arg(m_bins).arg(m_rows);
}

bool TimelineModel::wantsEvents() const
{
    if (!m_hasViewport || m_all || m_rowData.isEmpty() || m_grouped)
        return false;
    return (m_to - m_from) / quint64(std::max(1, m_bins)) <= m_eventsNsPerPixel;
}

QString TimelineModel::eventsCommand() const
{
    if (!wantsEvents())
        return QString();
    // The visible ranks as ranges ("0-7,12"): a protocol rank set holds at most 32 items.
    QStringList ranks;
    int first = -1, last = -1;
    auto flush = [&] {
        if (first >= 0)
            ranks << (first == last ? QString::number(first) : QStringLiteral("%1-%2").arg(first).arg(last));
    };
    for (const Row &row : m_rowData) {
        if (first >= 0 && row.firstRank == last + 1) {
            last = row.lastRank;
            continue;
        }
        flush();
        first = row.firstRank;
        last = row.lastRank;
    }
    flush();
    while (ranks.size() > 32)
        ranks.removeLast();
    return QStringLiteral("events %1 --ranks %2 --limit 20000")
        .arg(windowOptions(), ranks.join(QLatin1Char(',')));
}

static QVector<quint64> numbers(const QString &list, int count)
{
    QVector<quint64> out(count, 0);
    const QStringList parts = list.split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (int i = 0; i < count && i < parts.size(); i++)
        out[i] = parts[i].toULongLong();
    return out;
}

bool TimelineModel::applyTimeline(const Records &records)
{
    const Record *header = findRecord(records, "timeline");
    if (!header)
        return false;
    m_header = *header;
    m_dataFrom = header->u64("from");
    m_dataTo = header->u64("to");
    m_columns = int(header->u64("bins"));
    m_width = header->u64("width_ns");
    m_windowMode = header->value("mode") != QLatin1String("held");
    m_grouped = header->u64("grouped") != 0;
    if (header->value("mode") == QLatin1String("empty"))
        m_columns = 0;
    m_legend.clear();
    m_rowData.clear();
    QMap<int, Legend> legend;
    for (const Record &record : records) {
        if (record.type == "legend") {
            const Legend entry{record.value("name"), record.value("role")};
            legend.insert(int(record.u64("id")), entry);
            m_roles.insert(entry.name, entry.role);
        } else if (record.type == "row") {
            Row row;
            row.index = int(record.u64("index"));
            row.firstRank = int(record.u64("first_rank"));
            row.lastRank = int(record.u64("last_rank", quint64(row.firstRank)));
            row.ranks = int(record.u64("ranks", 1));
            for (int f = 0; f < FieldCount; f++) {
                const QByteArray key =
                    m_grouped ? QByteArray(fieldNames[f]) + "_mean" : QByteArray(fieldNames[f]);
                row.fields[f] = numbers(record.value(key.constData()), m_columns);
            }
            row.dominant.fill(-1, m_columns);
            const QStringList dominant = record.value("dominant").split(QLatin1Char(','));
            for (int c = 0; c < m_columns && c < dominant.size(); c++) {
                bool ok = false;
                const int id = dominant[c].toInt(&ok);
                row.dominant[c] = ok ? id : -1;
            }
            m_rowData.append(row);
        }
    }
    if (!legend.isEmpty()) {
        m_legend.resize(legend.lastKey() + 1);
        for (auto it = legend.constBegin(); it != legend.constEnd(); ++it)
            if (it.key() >= 0)
                m_legend[it.key()] = it.value();
    }
    std::sort(m_rowData.begin(), m_rowData.end(),
              [](const Row &a, const Row &b) { return a.index < b.index; });
    if (m_all && m_columns > 0 && m_dataTo > m_dataFrom) {
        // Showing everything held: the answer's range is the window (and grows with the job, as every
        // refresh asks for everything again until the user zooms or pans).
        m_from = m_dataFrom;
        m_to = m_dataTo;
        m_hasViewport = true;
    }
    if (m_hasEvents && (m_grouped || !wantsEvents()))
        m_hasEvents = false;
    emit dataChanged();
    return true;
}

quint64 TimelineModel::columnStart(int column) const
{
    if (m_windowMode)
        return m_columns ? m_dataFrom + quint64((unsigned __int128)column * (m_dataTo - m_dataFrom) /
                                                quint64(m_columns))
                         : m_dataFrom;
    return m_dataFrom + quint64(column) * m_width;
}

double TimelineModel::busy(int row, int column) const
{
    const Row &r = m_rowData[row];
    if (column < 0 || column >= m_columns)
        return 0.0;
    quint64 sum = 0;
    for (int f = 0; f < Reduced; f++)
        sum += r.fields[f][column];
    const quint64 width = columnEnd(column) - columnStart(column);
    return width ? std::min(1.0, double(sum) / double(width)) : 0.0;
}

int TimelineModel::dominant(int row, int column) const
{
    return column >= 0 && column < m_columns ? m_rowData[row].dominant[column] : -1;
}

QString TimelineModel::roleOf(const QString &region) const
{
    const auto it = m_roles.constFind(region);
    if (it != m_roles.constEnd())
        return it.value();
    return region.startsWith(QLatin1String("MPI_")) ? QStringLiteral("mpi_other") : QStringLiteral("user");
}

void TimelineModel::setRoleHint(const QString &region, const QString &role)
{
    if (!role.isEmpty())
        m_roles.insert(region, role);
}

int TimelineModel::busyCells() const
{
    int count = 0;
    for (int r = 0; r < m_rowData.size(); r++)
        for (int c = 0; c < m_columns; c++)
            count += busy(r, c) > 0.0 || m_rowData[r].dominant[c] >= 0;
    return count;
}

QString TimelineModel::cellText(int row, int column) const
{
    if (row < 0 || row >= m_rowData.size() || column < 0 || column >= m_columns)
        return QString();
    const Row &r = m_rowData[row];
    QString text = r.firstRank == r.lastRank ? QStringLiteral("rank %1").arg(r.firstRank)
                                             : QStringLiteral("ranks %1–%2 (%3 held, mean per rank)")
                                                   .arg(r.firstRank)
                                                   .arg(r.lastRank)
                                                   .arg(r.ranks);
    text += QStringLiteral("\n%1 … %2 (%3)")
                .arg(formatDuration(double(columnStart(column)) - double(m_origin)),
                     formatDuration(double(columnEnd(column)) - double(m_origin)),
                     formatDuration(double(columnEnd(column) - columnStart(column))));
    const int d = r.dominant[column];
    if (d >= 0 && d < m_legend.size())
        text += QStringLiteral("\nregion %1 (%2)").arg(m_legend[d].name, m_legend[d].role);
    for (int f = 0; f < FieldCount; f++)
        if (r.fields[f][column])
            text += QStringLiteral("\n%1: %2")
                        .arg(QLatin1String(fieldNames[f]), formatDuration(double(r.fields[f][column])));
    return text;
}

bool TimelineModel::applyEvents(const Records &records)
{
    const Record *header = findRecord(records, "events");
    if (!header)
        return false;
    m_eventsFrom = header->u64("from");
    m_eventsTo = header->u64("to");
    m_eventsTruncated = header->u64("truncated") != 0;
    m_intervals.clear();
    m_messages.clear();
    QHash<QPair<int, int>, QVector<Interval>> stacks; // open regions per (rank, thread)
    using Key = std::tuple<int, int, int>;            // (src, dst, tag)
    QMap<Key, QQueue<Message>> sends, receives;
    for (const Record &record : records) {
        if (record.type != "event")
            continue;
        const QString type = record.value("type");
        const int rank = int(record.u64("rank"));
        const int thread = int(record.u64("thread"));
        const quint64 time = record.u64("time");
        auto &stack = stacks[qMakePair(rank, thread)];
        if (type == QLatin1String("enter")) {
            Interval interval;
            interval.rank = rank;
            interval.thread = thread;
            interval.depth = int(stack.size());
            interval.start = time;
            interval.name = record.value("region");
            stack.append(interval);
        } else if (type == QLatin1String("leave")) {
            if (!stack.isEmpty()) {
                Interval interval = stack.takeLast();
                interval.end = time;
                m_intervals.append(interval);
            }
        } else if (type == QLatin1String("reduction")) {
            Interval interval;
            interval.rank = rank;
            interval.thread = thread;
            interval.start = time;
            interval.end = record.u64("end", time);
            interval.name = record.value("region");
            interval.reduced = true;
            m_intervals.append(interval);
        } else if (type == QLatin1String("send") || type == QLatin1String("isend") ||
                   type == QLatin1String("recv") || type == QLatin1String("irecv")) {
            const bool isSend = type.contains(QLatin1String("send"));
            Message message;
            message.src = isSend ? rank : int(record.u64("peer"));
            message.dst = isSend ? int(record.u64("peer")) : rank;
            message.tag = int(record.u64("tag"));
            message.bytes = record.u64("bytes");
            const Key key{message.src, message.dst, message.tag};
            auto &mine = isSend ? sends[key] : receives[key];
            auto &other = isSend ? receives[key] : sends[key];
            if (!other.isEmpty()) { // messages of one (src, dst, tag) arrive in order
                Message match = other.dequeue();
                (isSend ? match.sent : match.received) = time;
                m_messages.append(match);
            } else {
                (isSend ? message.sent : message.received) = time;
                mine.enqueue(message);
            }
        }
    }
    for (auto it = stacks.begin(); it != stacks.end(); ++it) // regions still open at the window's end
        for (Interval interval : it.value()) {
            interval.end = std::max(interval.start, m_eventsTo);
            m_intervals.append(interval);
        }
    // Outer regions first, so a view drawing in this order shows the nested calls on top of them.
    std::stable_sort(m_intervals.begin(), m_intervals.end(), [](const Interval &a, const Interval &b) {
        return a.depth != b.depth ? a.depth < b.depth : a.start < b.start;
    });
    m_hasEvents = true;
    emit dataChanged();
    return true;
}

QString TimelineModel::intervalText(const Interval &interval) const
{
    if (interval.reduced)
        return QStringLiteral("rank %1: reduced range (%2)\n%3 … %4")
            .arg(interval.rank)
            .arg(interval.name, formatDuration(double(interval.start) - double(m_origin)),
                 formatDuration(double(interval.end) - double(m_origin)));
    return QStringLiteral("%1 (%2)\nrank %3 thread %4, depth %5\n%6 … %7 (%8)")
        .arg(interval.name, roleOf(interval.name))
        .arg(interval.rank)
        .arg(interval.thread)
        .arg(interval.depth)
        .arg(formatDuration(double(interval.start) - double(m_origin)),
             formatDuration(double(interval.end) - double(m_origin)),
             formatDuration(double(interval.end - interval.start)));
}

void TimelineModel::clear()
{
    m_header = Record();
    m_columns = 0;
    m_rowData.clear();
    m_legend.clear();
    m_hasEvents = false;
    m_intervals.clear();
    m_messages.clear();
    emit dataChanged();
}
