// timeline_model.h — what the timeline shows: the visible window (from, to) and the answers of the
// `timeline` query (ranks × time bins at the widget's pixel width, rows = ranks or groups of them) and,
// zoomed in far enough, of the `events` query (single regions per rank, messages between ranks).
//
// The model decides what to ask: timelineCommand() asks for exactly the visible window at `bins`
// columns (the widget's width in pixels) and at most `rows` rows (its height / the smallest row), for
// the visible ranks: a rank filter ("0-3,17", at most 32 ranges as the protocol's rank sets) selects
// ranks, and a vertical window (first position, count) of the selected ranks is what is on screen, so
// any subset of a job of any size can be shown as single ranks. eventsCommand() is non-empty when the
// window is narrow enough for single events (nanoseconds per pixel ≤ eventsNsPerPixel()) and the rows
// are single ranks. It never asks for the raw events of the whole run. Answers are kept with their own
// window, so a view drawn while a newer answer is on its way is only shifted, never wrong.
//
// Partial answers (some places have not answered yet) never replace rows already shown: they are only
// taken while nothing is shown, and either way partialText() says so until the final answer. Rows are
// laid out in the answer's row slots (its `rows=` groups, by `index`), so a row missing from an answer
// leaves its slot empty instead of stretching the others.
//
// The user's windows (time and ranks) are remembered: back() and forward() walk that history.
//
// A message filter (tags, sizes, sender and receiver ranks) chooses which of the single events' messages
// are shown; it changes what is drawn, never what is asked.
#pragma once

#include "records.h"

#include <QHash>
#include <QObject>
#include <QPair>
#include <QVector>

#include <cstdint>
#include <vector>

class TimelineModel : public QObject
{
    Q_OBJECT
  public:
    enum Field { User, P2p, Collective, MpiOther, Phase, Reduced, FieldCount };
    static const char *fieldName(int field);

    struct Row {
        int index = 0, firstRank = 0, lastRank = 0, ranks = 1;
        QVector<quint64> fields[FieldCount]; // per column: ns (the group's mean when grouped)
        QVector<int> dominant;               // per column: legend id, -1 when nothing ran
    };
    struct Legend {
        QString name, role;
    };
    struct Interval { // events mode: one region instance on one rank
        int rank = 0, thread = 0, depth = 0;
        quint64 start = 0, end = 0;
        QString name;
        bool reduced = false; // a range removed by a reduction (name = the strategy)
    };
    struct Message {
        int src = 0, dst = 0;
        quint64 sent = 0, received = 0, bytes = 0;
        int tag = 0;
    };
    // Which messages the timeline draws and hovers: tags, sender and receiver ranks as lists of numbers
    // and ranges in the rank filter's syntax ("0-9,42", at most 32 ranges; empty: any) and a size in
    // bytes from minBytes to maxBytes. The empty filter keeps every message.
    struct MessageFilter {
        QVector<QPair<int, int>> tags, senders, receivers; // sorted, merged
        quint64 minBytes = 0, maxBytes = UINT64_MAX;
        bool matches(const Message &message) const;
        bool isEmpty() const;
        // Terms "tag=0-9,42 src=0-3 dst=4 min=64 max=4096" (bytes), in any order, each at most once;
        // empty or "all": every message. False with *error saying which term is wrong and why.
        static bool parse(const QString &text, MessageFilter *out, QString *error = nullptr);
        QString text() const; // canonical, as parse() reads it; empty for the empty filter
    };

    // One state of the view, as kept in the history.
    struct Window {
        bool all = true;
        quint64 from = 0, to = 0;
        int rankFirst = 0, rankCount = 0;
    };

    explicit TimelineModel(QObject *parent = nullptr);

    // ---- the view ----
    bool hasViewport() const
    {
        return m_hasViewport;
    }
    quint64 from() const
    {
        return m_from;
    }
    quint64 to() const
    {
        return m_to;
    }
    // Turns follow-live off. `remember`: the window before goes to the history (a drag remembers once,
    // at its start).
    void setViewport(quint64 from, quint64 to, bool remember = true);
    void setPixelSize(int width, int rows);
    int bins() const
    {
        return m_bins;
    }
    int rowsWanted() const
    {
        return m_rows;
    }
    // Zooms by `factor` (< 1 zooms in) around the time at fraction `anchor` of the window.
    void zoom(double factor, double anchor);
    // Pans by a fraction of the window (positive: later).
    void pan(double fraction);
    // Shows everything held: asks without a window, and each answer's range becomes the window, until
    // the user zooms or pans (the initial state).
    void showAll();
    // Shows everything held and every selected rank (Home).
    void showEverything();
    // ---- history of the user's windows ----
    void remember();
    bool canGoBack() const
    {
        return !m_back.isEmpty();
    }
    bool canGoForward() const
    {
        return !m_forward.isEmpty();
    }
    void back();
    void forward();
    int historyDepth() const
    {
        return int(m_back.size());
    }

    // ---- ranks ----
    // The job's application ranks (the WELCOME's ranks=); 0 while unknown (then every rank is asked).
    void setTotalRanks(int ranks);
    int totalRanks() const
    {
        return m_totalRanks;
    }
    // A filter like "0-3,17" (empty or "all": every rank); false with *error when it does not parse,
    // has more than 32 ranges or selects no rank of the job. Shows every selected rank.
    bool setRankFilter(const QString &text, QString *error = nullptr);
    QString rankFilter() const; // canonical ("0-3,17"), empty for every rank
    int selectedRanks() const;  // how many ranks the filter keeps (0 while the job's size is unknown)
    int rankAtPosition(int position) const;
    // The vertical window: positions [first, first + count) of the selected ranks.
    int rankFirst() const
    {
        return m_rankFirst;
    }
    int rankCount() const
    {
        return m_rankCount ? m_rankCount : selectedRanks();
    }
    void setRankWindow(int first, int count, bool remember = true);
    // Vertical zoom by `factor` (< 1: fewer ranks, taller rows) around fraction `anchor` of the rows.
    void zoomRanks(double factor, double anchor);
    void scrollRanks(int positions);
    void showAllRanks();
    // The visible ranks as a protocol rank set ("0-3,17"), empty when that is every rank of the job.
    QString visibleRankSet() const;
    bool showingAll() const
    {
        return m_all;
    }
    bool followLive() const
    {
        return m_follow;
    }
    void setFollowLive(bool follow);
    // The newest time the job holds (status last_time): in follow-live mode the window ends there.
    void setLiveTime(quint64 last);
    quint64 eventsNsPerPixel() const
    {
        return m_eventsNsPerPixel;
    }
    void setEventsNsPerPixel(quint64 ns)
    {
        m_eventsNsPerPixel = ns;
    }

    // ---- what to ask ----
    QString timelineCommand() const;
    QString eventsCommand() const; // empty when single events are not wanted
    QString windowOptions() const; // "--from Xns --to Yns", empty without a window
    bool wantsEvents() const;

    // ---- answers ----
    bool applyTimeline(const Records &records);
    bool applyEvents(const Records &records);
    void clear();

    const Record &header() const
    {
        return m_header;
    }
    QString mode() const
    {
        return m_header.value("mode");
    }
    quint64 dataFrom() const
    {
        return m_dataFrom;
    }
    quint64 dataTo() const
    {
        return m_dataTo;
    }
    int columns() const
    {
        return m_columns;
    }
    bool grouped() const
    {
        return m_grouped;
    }
    const QVector<Row> &rows() const
    {
        return m_rowData;
    }
    const QVector<Legend> &legend() const
    {
        return m_legend;
    }
    quint64 columnStart(int column) const;
    quint64 columnEnd(int column) const
    {
        return columnStart(column + 1);
    }
    // Time the regions ran in a cell (every field but reduced), as a fraction of the column (≤ 1).
    double busy(int row, int column) const;
    int dominant(int row, int column) const;
    QString roleOf(const QString &region) const;
    void setRoleHint(const QString &region, const QString &role);
    int busyCells() const; // cells where something ran: "the timeline is not empty"
    QString cellText(int row, int column) const;
    // Row slots of the answer (its groups); row `r` of rows() sits in slot rows()[r].index.
    int slotCount() const
    {
        return m_slots;
    }
    int rowInSlot(int slot) const; // index into rows(), -1 for an empty slot
    // Non-empty while the answer shown, or one on its way, covers only some places ("partial: 2 of 3
    // places answered").
    QString partialText() const
    {
        return m_partialText;
    }
    int partialsKept() const
    {
        return m_partialsKept;
    }

    bool hasEvents() const
    {
        return m_hasEvents;
    }
    quint64 eventsFrom() const
    {
        return m_eventsFrom;
    }
    quint64 eventsTo() const
    {
        return m_eventsTo;
    }
    const QVector<Interval> &intervals() const
    {
        return m_intervals;
    }
    const QVector<Message> &messages() const
    {
        return m_messages;
    }
    bool eventsTruncated() const
    {
        return m_eventsTruncated;
    }
    QString intervalText(const Interval &interval) const;
    // The message filter ("tag=0-9,42 src=0-3 dst=4 min=64 max=4096", MessageFilter::parse); false with
    // *error when it does not parse, and then the filter in force stays.
    bool setMessageFilter(const QString &text, QString *error = nullptr);
    const MessageFilter &messageFilter() const
    {
        return m_messageFilter;
    }
    bool messageShown(const Message &message) const
    {
        return m_messageFilter.matches(message);
    }
    int shownMessages() const; // of messages(): those the filter keeps
    // A matched message as hovering its line shows it: sender and receiver rank, tag, size, when it was
    // sent and received and how long it took.
    QString messageText(const Message &message) const;
    // ---- steering periods: what the viewer saw of the application pause and of recording ----
    struct Period {
        enum Kind { AppPaused, NotRecording } kind = AppPaused;
        quint64 from = 0, to = 0;
        bool open = false;  // still going at the last status
        bool exact = false; // its start came from the job (`pausedSince`), not from the status period
    };
    // Takes one full status answer: its clock (`now`, the job's clock), the newest event held (an upper
    // bound of where a pause began: nothing is recorded while paused), the states and, where the job
    // says, when they began (0: not said). A period begins there; else at the later of that event and
    // the last status that did not show it, and moves later with events that arrive late. It ends at
    // the first status that no longer shows it: to within the status period (1 s), never longer.
    void observeSteering(quint64 now, quint64 lastEvent, bool appPaused, bool notRecording,
                         quint64 pausedSince = 0, quint64 notRecordingSince = 0);
    const std::vector<Period> &periods() const
    {
        return m_periods;
    }
    QString periodText(const Period &period) const;

    // Times in tooltips and on the axis are shown relative to this (the job's start).
    void setOrigin(quint64 origin)
    {
        m_origin = origin;
    }
    quint64 origin() const
    {
        return m_origin;
    }

  signals:
    // The window changed: the owner asks again (timelineCommand(), eventsCommand()).
    void viewportChanged();
    // The rank filter was set or cleared (rankFilter() is its canonical text).
    void rankFilterChanged();
    // The message filter was set or cleared (messageFilter().text() is its canonical text).
    void messageFilterChanged();
    void followLiveChanged(bool follow);
    void dataChanged();

  private:
    void setWindow(quint64 from, quint64 to);
    Window window() const;
    void restore(const Window &window);
    void clampRankWindow();
    QVector<QPair<int, int>> selectedRanges() const; // the filter within the job's ranks
    QString hoverTime(quint64 time, quint64 later) const;
    bool m_hasViewport = false, m_follow = false;
    bool m_all = true; // showing everything held: ask without a window
    quint64 m_from = 0, m_to = 0, m_liveTime = 0, m_origin = 0;
    int m_bins = 800, m_rows = 64;
    quint64 m_eventsNsPerPixel = 20000;

    Record m_header;
    quint64 m_dataFrom = 0, m_dataTo = 0, m_width = 0;
    bool m_windowMode = true, m_grouped = false;
    int m_columns = 0;
    QVector<Row> m_rowData;
    QVector<int> m_slotRow;
    int m_slots = 0, m_partialsKept = 0;
    QString m_partialText;
    QVector<Legend> m_legend;
    QVector<Window> m_back, m_forward;
    std::vector<Period> m_periods; // (QVector<Period>::append trips GCC 12's -Wstringop-overflow)
    int m_openPeriod[2] = {-1, -1};
    quint64 m_lastObservation = 0;
    int m_totalRanks = 0, m_rankFirst = 0, m_rankCount = 0; // m_rankCount 0: every selected rank
    QVector<QPair<int, int>> m_filter;                      // empty: every rank
    QHash<QString, QString> m_roles;

    bool m_hasEvents = false, m_eventsTruncated = false;
    quint64 m_eventsFrom = 0, m_eventsTo = 0;
    QVector<Interval> m_intervals;
    QVector<Message> m_messages;
    MessageFilter m_messageFilter;
};
