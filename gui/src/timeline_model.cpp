#include "timeline_model.h"

#include "format.h"

#include <otfx/protocol.h>

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

void TimelineModel::setViewport(quint64 from, quint64 to, bool remember)
{
    if (remember)
        this->remember();
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
    if (m_hasViewport && !m_all)
        remember();
    setFollowLive(false);
    m_hasViewport = false;
    m_all = true;
    emit viewportChanged();
}

void TimelineModel::showEverything()
{
    remember();
    m_rankFirst = 0;
    m_rankCount = 0;
    setFollowLive(false);
    m_hasViewport = false;
    m_all = true;
    emit viewportChanged();
}

TimelineModel::Window TimelineModel::window() const
{
    Window w;
    w.all = m_all || !m_hasViewport;
    w.from = m_from;
    w.to = m_to;
    w.rankFirst = m_rankFirst;
    w.rankCount = m_rankCount;
    return w;
}

static bool sameWindow(const TimelineModel::Window &a, const TimelineModel::Window &b)
{
    return a.all == b.all && (a.all || (a.from == b.from && a.to == b.to)) && a.rankFirst == b.rankFirst &&
           a.rankCount == b.rankCount;
}

void TimelineModel::remember()
{
    const Window now = window();
    if (!m_back.isEmpty() && sameWindow(m_back.last(), now))
        return;
    m_back.append(now);
    if (m_back.size() > 100)
        m_back.removeFirst();
    m_forward.clear();
}

void TimelineModel::restore(const Window &w)
{
    setFollowLive(false);
    m_rankFirst = w.rankFirst;
    m_rankCount = w.rankCount;
    clampRankWindow();
    if (w.all) {
        m_hasViewport = false;
        m_all = true;
    } else {
        m_all = false;
        m_hasViewport = true;
        m_from = w.from;
        m_to = w.to;
    }
    emit viewportChanged();
}

void TimelineModel::back()
{
    if (m_back.isEmpty())
        return;
    m_forward.append(window());
    restore(m_back.takeLast());
}

void TimelineModel::forward()
{
    if (m_forward.isEmpty())
        return;
    m_back.append(window());
    restore(m_forward.takeLast());
}

// ---- ranks ----

void TimelineModel::setTotalRanks(int ranks)
{
    if (ranks == m_totalRanks)
        return;
    m_totalRanks = std::max(0, ranks);
    clampRankWindow();
    emit viewportChanged();
}

QVector<QPair<int, int>> TimelineModel::selectedRanges() const
{
    QVector<QPair<int, int>> out;
    if (m_totalRanks <= 0)
        return out;
    if (m_filter.isEmpty()) {
        out.append(qMakePair(0, m_totalRanks - 1));
        return out;
    }
    for (const auto &range : m_filter)
        if (range.first < m_totalRanks)
            out.append(qMakePair(range.first, std::min(range.second, m_totalRanks - 1)));
    return out;
}

int TimelineModel::selectedRanks() const
{
    int count = 0;
    for (const auto &range : selectedRanges())
        count += range.second - range.first + 1;
    return count;
}

int TimelineModel::rankAtPosition(int position) const
{
    for (const auto &range : selectedRanges()) {
        const int size = range.second - range.first + 1;
        if (position < size)
            return range.first + position;
        position -= size;
    }
    return -1;
}

static QString formatRanges(const QVector<QPair<int, int>> &ranges)
{
    QStringList items;
    for (const auto &range : ranges)
        items << (range.first == range.second ? QString::number(range.first)
                                              : QStringLiteral("%1-%2").arg(range.first).arg(range.second));
    return items.join(QLatin1Char(','));
}

// A list of numbers and ranges like "0-3,17" (spaces ignored), sorted and merged: the rank filter's
// syntax, read by the protocol's parser; the message filter's tags and ranks take it too.
static bool parseRanges(const QString &text, QVector<QPair<int, int>> *out)
{
    const QString trimmed = QString(text).remove(QLatin1Char(' '));
    otfx_rank_set set;
    if (trimmed == QLatin1String("all") || !otfx_rank_set_parse(trimmed.toUtf8().constData(), &set) ||
        set.count == 0)
        return false;
    QVector<QPair<int, int>> ranges;
    for (uint32_t i = 0; i < set.count; i++)
        ranges.append(qMakePair(int(std::min<uint32_t>(set.ranges[i].first, INT32_MAX)),
                                int(std::min<uint32_t>(set.ranges[i].last, INT32_MAX))));
    std::sort(ranges.begin(), ranges.end());
    out->clear();
    for (const auto &range : ranges)
        if (!out->isEmpty() && range.first <= out->last().second + 1)
            out->last().second = std::max(out->last().second, range.second);
        else
            out->append(range);
    return true;
}

static bool inRanges(const QVector<QPair<int, int>> &ranges, int value)
{
    if (ranges.isEmpty())
        return true;
    for (const auto &range : ranges)
        if (value >= range.first && value <= range.second)
            return true;
    return false;
}

bool TimelineModel::setRankFilter(const QString &text, QString *error)
{
    const QString trimmed = QString(text).remove(QLatin1Char(' '));
    QVector<QPair<int, int>> ranges;
    if (!trimmed.isEmpty() && trimmed != QLatin1String("all")) {
        if (!parseRanges(trimmed, &ranges)) {
            if (error)
                *error = tr("'%1' is not a rank list like 0-3,17 (at most 32 ranges)").arg(text);
            return false;
        }
        if (m_totalRanks > 0 && ranges.first().first >= m_totalRanks) {
            if (error)
                *error = tr("the job has ranks 0-%1 only").arg(m_totalRanks - 1);
            return false;
        }
    }
    m_filter = ranges;
    m_rankFirst = 0;
    m_rankCount = 0;
    emit rankFilterChanged();
    emit viewportChanged();
    return true;
}

QString TimelineModel::rankFilter() const
{
    return formatRanges(m_filter);
}

void TimelineModel::clampRankWindow()
{
    const int selected = selectedRanks();
    if (selected <= 0) {
        m_rankFirst = 0;
        m_rankCount = 0;
        return;
    }
    int count = m_rankCount ? std::clamp(m_rankCount, 1, selected) : selected;
    m_rankFirst = std::clamp(m_rankFirst, 0, selected - count);
    m_rankCount = count == selected ? 0 : count;
}

void TimelineModel::setRankWindow(int first, int count, bool remember)
{
    const int selected = selectedRanks();
    if (selected <= 0)
        return;
    count = std::clamp(count, 1, selected);
    first = std::clamp(first, 0, selected - count);
    const int storedCount = count == selected ? 0 : count;
    if (first == m_rankFirst && storedCount == m_rankCount)
        return;
    if (remember)
        this->remember();
    m_rankFirst = first;
    m_rankCount = storedCount;
    emit viewportChanged();
}

void TimelineModel::zoomRanks(double factor, double anchor)
{
    const int count = rankCount();
    if (count <= 0)
        return;
    anchor = std::clamp(anchor, 0.0, 1.0);
    int newCount = std::max(1, int(std::lround(count * factor)));
    if (factor < 1.0 && newCount >= count)
        newCount = std::max(1, count - 1);
    if (factor > 1.0 && newCount <= count)
        newCount = count + 1;
    const double at = m_rankFirst + anchor * count;
    setRankWindow(int(std::lround(at - anchor * newCount)), newCount);
}

void TimelineModel::scrollRanks(int positions)
{
    setRankWindow(m_rankFirst + positions, rankCount());
}

void TimelineModel::showAllRanks()
{
    setRankWindow(0, selectedRanks());
}

QString TimelineModel::visibleRankSet() const
{
    const auto ranges = selectedRanges();
    if (ranges.isEmpty() || (m_filter.isEmpty() && m_rankCount == 0))
        return QString();
    const int first = m_rankFirst, last = m_rankFirst + rankCount() - 1; // positions
    QVector<QPair<int, int>> visible;
    int position = 0;
    for (const auto &range : ranges) {
        const int size = range.second - range.first + 1;
        const int a = std::max(first, position), b = std::min(last, position + size - 1);
        if (a <= b)
            visible.append(qMakePair(range.first + (a - position), range.first + (b - position)));
        position += size;
    }
    return formatRanges(visible);
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
    if (!visibleRankSet().isEmpty())
        line += QStringLiteral(" --ranks ") + visibleRankSet();
    return line + QStringLiteral(" --bins %1 --rows %2").arg(m_bins).arg(m_rows);
}

bool TimelineModel::wantsEvents() const
{
    if (!m_hasViewport || m_all || m_rowData.isEmpty() || m_grouped)
        return false;
    if (m_totalRanks > 0 && rankCount() > m_rows) // the next answer groups the ranks
        return false;
    return (m_to - m_from) / quint64(std::max(1, m_bins)) <= m_eventsNsPerPixel;
}

QString TimelineModel::eventsCommand() const
{
    if (!wantsEvents())
        return QString();
    if (!visibleRankSet().isEmpty())
        return QStringLiteral("events %1 --ranks %2 --limit 20000").arg(windowOptions(), visibleRankSet());
    // The ranks of the rows as ranges ("0-7,12"): a protocol rank set holds at most 32 items.
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
    if (const Record *partial = findRecord(records, "partial")) {
        m_partialText =
            tr("partial: %1 of %2 places answered").arg(partial->value("answered"), partial->value("total"));
        if (!m_rowData.isEmpty()) { // rows of every place stay until the final answer comes
            m_partialsKept++;
            emit dataChanged();
            return false;
        }
    } else if (header->u64("places_answered") < header->u64("places_total")) {
        m_partialText = tr("only %1 of %2 places answered")
                            .arg(header->value("places_answered"), header->value("places_total"));
    } else {
        m_partialText.clear();
    }
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
    m_slots = int(std::min<quint64>(header->u64("rows", quint64(m_rowData.size())), 4096));
    if (!m_rowData.isEmpty())
        m_slots = std::max(m_slots, m_rowData.last().index + 1);
    m_slotRow.fill(-1, m_slots);
    for (int r = 0; r < m_rowData.size(); r++)
        if (m_rowData[r].index >= 0)
            m_slotRow[m_rowData[r].index] = r;
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
    const double cellWidth = double(columnEnd(column) - columnStart(column));
    const double end = double(columnEnd(column)) - double(m_origin);
    text += QStringLiteral("\n%1 … %2 (%3)")
                .arg(formatTime(double(columnStart(column)) - double(m_origin), cellWidth, end),
                     formatTime(double(columnEnd(column)) - double(m_origin), cellWidth, end),
                     formatDuration(cellWidth));
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
    // (src, dst, tag, seq): the place numbers each end's messages per channel from the start of the run,
    // so a send and its receive share `seq` whatever the window cut off before them; without it (an
    // archive that does not say), the ends of one (src, dst, tag) are paired in order.
    using Key = std::tuple<int, int, int, qint64>;
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
            const Key key{message.src, message.dst, message.tag,
                          record.has("seq") ? qint64(record.u64("seq")) : qint64(-1)};
            auto &mine = isSend ? sends[key] : receives[key];
            auto &other = isSend ? receives[key] : sends[key];
            if (!other.isEmpty()) { // messages of one channel arrive in order
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

bool TimelineModel::MessageFilter::matches(const Message &message) const
{
    return inRanges(tags, message.tag) && inRanges(senders, message.src) &&
           inRanges(receivers, message.dst) && message.bytes >= minBytes && message.bytes <= maxBytes;
}

bool TimelineModel::MessageFilter::isEmpty() const
{
    return tags.isEmpty() && senders.isEmpty() && receivers.isEmpty() && minBytes == 0 &&
           maxBytes == UINT64_MAX;
}

bool TimelineModel::MessageFilter::parse(const QString &text, MessageFilter *out, QString *error)
{
    const auto refuse = [error](const QString &why) {
        if (error)
            *error = why;
        return false;
    };
    MessageFilter filter;
    QStringList terms = text.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (terms == QStringList{QStringLiteral("all")})
        terms.clear();
    QStringList seen;
    for (const QString &term : terms) {
        const int equals = term.indexOf(QLatin1Char('='));
        const QString key = term.left(equals), value = term.mid(equals + 1);
        if (equals <= 0)
            return refuse(
                tr("'%1' is not a term like tag=0-9,42, src=0-3, dst=4, min=64 or max=4096").arg(term));
        if (seen.contains(key))
            return refuse(tr("'%1=' is given twice").arg(key));
        seen << key;
        QVector<QPair<int, int>> *ranges = key == QLatin1String("tag")   ? &filter.tags
                                           : key == QLatin1String("src") ? &filter.senders
                                           : key == QLatin1String("dst") ? &filter.receivers
                                                                         : nullptr;
        if (ranges) {
            if (!parseRanges(value, ranges))
                return refuse(tr("%1='%2' is not a list like 0-9,42 (at most 32 ranges)").arg(key, value));
        } else if (key == QLatin1String("min") || key == QLatin1String("max")) {
            bool ok = false;
            const quint64 bytes = value.toULongLong(&ok);
            if (!ok || value.startsWith(QLatin1Char('+')))
                return refuse(tr("%1='%2' is not a size in bytes").arg(key, value));
            (key == QLatin1String("min") ? filter.minBytes : filter.maxBytes) = bytes;
        } else {
            return refuse(tr("'%1=' is none of tag=, src=, dst=, min=, max=").arg(key));
        }
    }
    if (filter.minBytes > filter.maxBytes)
        return refuse(tr("min=%1 is more than max=%2").arg(filter.minBytes).arg(filter.maxBytes));
    *out = filter;
    return true;
}

QString TimelineModel::MessageFilter::text() const
{
    QStringList terms;
    if (!tags.isEmpty())
        terms << QStringLiteral("tag=") + formatRanges(tags);
    if (!senders.isEmpty())
        terms << QStringLiteral("src=") + formatRanges(senders);
    if (!receivers.isEmpty())
        terms << QStringLiteral("dst=") + formatRanges(receivers);
    if (minBytes)
        terms << QStringLiteral("min=%1").arg(minBytes);
    if (maxBytes != UINT64_MAX)
        terms << QStringLiteral("max=%1").arg(maxBytes);
    return terms.join(QLatin1Char(' '));
}

bool TimelineModel::setMessageFilter(const QString &text, QString *error)
{
    MessageFilter filter;
    if (!MessageFilter::parse(text, &filter, error))
        return false;
    m_messageFilter = filter;
    emit messageFilterChanged();
    emit dataChanged();
    return true;
}

int TimelineModel::shownMessages() const
{
    return int(std::count_if(m_messages.begin(), m_messages.end(),
                             [this](const Message &message) { return messageShown(message); }));
}

QString TimelineModel::hoverTime(quint64 time, quint64 later) const
{
    // to the width of a pixel of the window it is hovered in, in the unit of the later of two times
    const double resolution = std::max(1.0, double(m_to - m_from) / std::max(1, m_bins));
    return formatTime(double(time) - double(m_origin), resolution, double(later) - double(m_origin));
}

QString TimelineModel::intervalText(const Interval &interval) const
{
    const auto at = [&](quint64 t) { return hoverTime(t, interval.end); };
    if (interval.reduced)
        return QStringLiteral("rank %1: reduced range (%2)\n%3 … %4")
            .arg(interval.rank)
            .arg(interval.name, at(interval.start), at(interval.end));
    return QStringLiteral("%1 (%2)\nrank %3 thread %4, depth %5\n%6 … %7 (%8)")
        .arg(interval.name, roleOf(interval.name))
        .arg(interval.rank)
        .arg(interval.thread)
        .arg(interval.depth)
        .arg(at(interval.start), at(interval.end), formatDuration(double(interval.end - interval.start)));
}

QString TimelineModel::messageText(const Message &message) const
{
    const quint64 later = std::max(message.sent, message.received);
    const auto at = [&](quint64 t) { return hoverTime(t, later); };
    const double took = message.received >= message.sent ? double(message.received - message.sent)
                                                         : -double(message.sent - message.received);
    return QStringLiteral("message rank %1 → rank %2, tag %3, %4\nsent %5, received %6 (%7)")
        .arg(message.src)
        .arg(message.dst)
        .arg(message.tag)
        .arg(formatBytes(double(message.bytes)), at(message.sent), at(message.received),
             formatDuration(took));
}

void TimelineModel::observeSteering(quint64 now, quint64 lastEvent, bool appPaused, bool notRecording,
                                    quint64 pausedSince, quint64 notRecordingSince)
{
    if (!now)
        return; // a job whose status does not give its clock
    const bool active[2] = {appPaused, notRecording};
    const quint64 since[2] = {pausedSince, notRecordingSince};
    bool changed = false;
    for (int kind = 0; kind < 2; kind++) {
        int &open = m_openPeriod[kind];
        if (active[kind] && open < 0) {
            Period period;
            period.kind = Period::Kind(kind);
            period.exact = since[kind] && since[kind] <= now;
            period.from = lastEvent && lastEvent <= now ? lastEvent : now;
            if (m_lastObservation && m_lastObservation <= now)
                period.from = std::max(period.from, m_lastObservation);
            if (period.exact)
                period.from = since[kind];
            period.to = now;
            period.open = true;
            m_periods.push_back(period);
            open = int(m_periods.size()) - 1;
            changed = true;
        } else if (open >= 0) {
            m_periods[open].to = std::max(m_periods[open].to, now);
            // Events recorded before the pause may arrive late (ranks send full batches): the newest
            // one held moves the period's start later, never earlier.
            if (active[kind] && since[kind] && since[kind] <= now) {
                m_periods[open].from = since[kind];
                m_periods[open].exact = true;
            } else if (active[kind] && !m_periods[open].exact && lastEvent > m_periods[open].from &&
                       lastEvent <= now) {
                m_periods[open].from = lastEvent;
            }
            if (!active[kind]) {
                m_periods[open].open = false;
                open = -1;
            }
            changed = true;
        }
    }
    m_lastObservation = now;
    if (changed)
        emit dataChanged();
}

QString TimelineModel::periodText(const Period &period) const
{
    const double end = double(period.to) - double(m_origin);
    return tr("%1 from %2 to %3%4 (%5)")
        .arg(period.kind == Period::AppPaused ? tr("application paused") : tr("not recording"),
             formatTime(double(period.from) - double(m_origin), 1e6, end), formatTime(end, 1e6, end),
             period.open ? tr(" and on") : QString(),
             period.exact ? tr("its start as the ranks said it, its end to about a second")
                          : tr("as the status showed it, to about a second"));
}

int TimelineModel::rowInSlot(int slot) const
{
    return slot >= 0 && slot < m_slotRow.size() ? m_slotRow[slot] : -1;
}

void TimelineModel::clear()
{
    m_header = Record();
    m_columns = 0;
    m_rowData.clear();
    m_slotRow.clear();
    m_slots = 0;
    m_partialText.clear();
    m_back.clear();
    m_forward.clear();
    m_filter.clear();
    m_rankFirst = m_rankCount = 0;
    m_periods.clear();
    m_openPeriod[0] = m_openPeriod[1] = -1;
    m_lastObservation = 0;
    m_legend.clear();
    m_hasEvents = false;
    m_intervals.clear();
    m_messages.clear();
    emit rankFilterChanged();
    emit dataChanged();
}
