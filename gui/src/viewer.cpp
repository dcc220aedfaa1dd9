#include "viewer.h"

#include <QDateTime>
#include <QFileInfo>

Viewer::Viewer(QObject *parent) : QObject(parent)
{
    connect(&m_client, &ProtocolClient::connected, this, &Viewer::onConnected);
    connect(&m_client, &ProtocolClient::connectionLost, this, &Viewer::onLost);
    connect(&m_client, &ProtocolClient::partial, this, &Viewer::onPartial);
    connect(&m_client, &ProtocolClient::replied, this, &Viewer::onReplied);
    connect(&m_client, &ProtocolClient::failed, this, &Viewer::onFailed);
    connect(&m_client, &ProtocolClient::notice, this, &Viewer::onNotice);
    m_statusTimer.setInterval(1000);
    connect(&m_statusTimer, &QTimer::timeout, this, &Viewer::refreshStatus);
    m_viewTimer.setInterval(2000);
    connect(&m_viewTimer, &QTimer::timeout, this, [this] { requestView(true); });
    m_viewDebounce.setSingleShot(true);
    m_viewDebounce.setInterval(40); // a wheel burst asks once
    connect(&m_viewDebounce, &QTimer::timeout, this, [this] { requestView(false); });
    connect(&m_timeline, &TimelineModel::viewportChanged, &m_viewDebounce, qOverload<>(&QTimer::start));
    connect(&m_overview, &TimelineModel::viewportChanged, this, &Viewer::requestOverview);
    m_overview.setPixelSize(800, 1);
    m_sessionDirectory = defaultSessionDirectory();
    m_discovery.setInterval(500);
    connect(&m_discovery, &QTimer::timeout, this, &Viewer::tryDiscover);
    connect(&m_status, &StatusModel::updated, this, [this] {
        // Times are shown from the job's start: the server's start or, earlier, the first event held
        // (MPI_Init begins before the root serves).
        const quint64 first = m_status.firstTime();
        if (first && (!m_timeline.origin() || first < m_timeline.origin()))
            m_timeline.setOrigin(first);
        if (m_status.lastTime())
            m_timeline.setLiveTime(m_status.lastTime());
    });
}

void Viewer::addLog(const QString &line)
{
    const QString stamped = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line;
    m_log.append(stamped);
    if (m_log.size() > 2000)
        m_log.removeFirst();
    emit logged(stamped);
}

bool Viewer::discover()
{
    if (tryDiscover())
        return true;
    m_discovery.start();
    return false;
}

bool Viewer::tryDiscover()
{
    if (m_client.state() != ProtocolClient::Disconnected) { // connected another way meanwhile
        m_discovery.stop();
        return true;
    }
    const QString path = newestSessionFile(m_sessionDirectory);
    SessionInfo found;
    QString why;
    if (path.isEmpty() || !readSessionFile(path, &found, &why))
        return false;
    m_discovery.stop();
    connectToSession(found);
    return true;
}

void Viewer::connectToSession(const SessionInfo &session)
{
    m_discovery.stop();
    m_session = session;
    m_jobEnded = false;
    addLog(QStringLiteral("connecting to %1:%2%3")
               .arg(session.address)
               .arg(session.port)
               .arg(session.path.isEmpty() ? QString()
                                           : QStringLiteral(" (") + session.path + QLatin1Char(')')));
    m_client.connectToServer(session.address, session.port, session.token);
}

void Viewer::reconnect()
{
    if (!m_session.path.isEmpty()) {
        // The job may have been restarted: take the newest session file of the same directory.
        SessionInfo fresh;
        QString error;
        const QString newest = newestSessionFile(QFileInfo(m_session.path).absolutePath());
        if (!newest.isEmpty() && readSessionFile(newest, &fresh, &error))
            m_session = fresh;
    }
    connectToSession(m_session);
}

void Viewer::onConnected()
{
    m_connections++;
    m_lost.clear();
    m_lastError.clear();
    const Record &welcome = m_client.welcome();
    addLog(QStringLiteral("connected: job %1, %2 ranks, %3 places")
               .arg(welcome.value("job"), welcome.value("ranks"), welcome.value("places")));
    m_statusInFlight = m_timelineInFlight = m_profileInFlight = m_eventsInFlight = m_overviewInFlight = 0;
    if (welcome.value("job") != m_job) { // another job: nothing of the old one stays on screen
        m_job = welcome.value("job");
        m_status.clear();
        m_profile.clear();
        m_timeline.clear();
        m_timeline.showAll();
        m_timeline.setOrigin(m_session.startedNs);
        m_overview.clear();
        m_lastAnswer.clear();
        m_lastCommand.clear();
        m_lastOk = false;
        m_commands.clear();
        emit jobChanged();
    }
    m_timeline.setTotalRanks(int(welcome.u64("ranks")));
    m_statusTimer.start();
    m_viewTimer.start();
    refreshStatus();
    requestView(false);
    requestOverview();
}

void Viewer::onLost(const QString &reason)
{
    m_lost = reason;
    m_statusTimer.stop();
    m_viewTimer.stop();
    addLog(QStringLiteral("connection lost: ") + reason);
}

void Viewer::refreshStatus()
{
    if (m_client.state() != ProtocolClient::Connected || m_statusInFlight)
        return;
    m_statusInFlight = m_client.send(QStringLiteral("status"), QStringLiteral("status"));
}

void Viewer::refreshView()
{
    requestView(false);
}

void Viewer::requestView(bool periodic)
{
    if (m_client.state() != ProtocolClient::Connected)
        return;
    // A periodic refresh waits for the last answer; a changed window supersedes what is in flight.
    if (!periodic || !m_timelineInFlight)
        m_timelineInFlight = m_client.send(m_timeline.timelineCommand(), QStringLiteral("timeline"));
    if (!periodic || !m_profileInFlight) {
        QString line = QStringLiteral("profile ") + m_timeline.windowOptions();
        if (!m_timeline.visibleRankSet().isEmpty())
            line += QStringLiteral(" --ranks ") + m_timeline.visibleRankSet();
        m_profileInFlight = m_client.send(line.simplified(), QStringLiteral("profile"));
    }
    const QString events = m_timeline.eventsCommand();
    if (!events.isEmpty() && (!periodic || !m_eventsInFlight))
        m_eventsInFlight = m_client.send(events, QStringLiteral("events"));
    if (periodic)
        requestOverview();
}

void Viewer::requestOverview()
{
    if (m_client.state() != ProtocolClient::Connected || m_overviewInFlight)
        return;
    m_overviewInFlight = m_client.send(m_overview.timelineCommand(), QStringLiteral("overview"));
}

quint32 Viewer::command(const QString &line)
{
    m_lastCommand = line;
    addLog(QStringLiteral("> ") + line);
    const quint32 id = m_client.send(line);
    m_commands.insert(id, line);
    emit commandSent(id, line);
    return id;
}

quint32 Viewer::snapshot(const QString &name, bool visibleWindow, bool overwrite)
{
    QString line = QStringLiteral("snapshot ") + encodeWord(name);
    // The window on screen, also while it is "everything held" (then it is the last answer's range).
    if (visibleWindow && m_timeline.hasViewport())
        line += QStringLiteral(" --from %1ns --to %2ns").arg(m_timeline.from()).arg(m_timeline.to());
    if (visibleWindow && !m_timeline.visibleRankSet().isEmpty())
        line += QStringLiteral(" --ranks ") + m_timeline.visibleRankSet();
    if (overwrite)
        line += QStringLiteral(" --overwrite");
    return command(line);
}

void Viewer::onPartial(quint32 id, const QString &view, const Records &records)
{
    Q_UNUSED(id);
    m_partials++;
    // A partial answer covers only the places that answered: the models take it only while they show
    // nothing yet, and mark it (never replacing what all places said before).
    if (view == QLatin1String("status"))
        m_status.applyReply(records);
    else if (view == QLatin1String("timeline"))
        m_timeline.applyTimeline(records);
    else if (view == QLatin1String("profile"))
        m_profile.applyReply(records);
    else if (view == QLatin1String("overview"))
        m_overview.applyTimeline(records);
}

void Viewer::onReplied(quint32 id, const QString &view, const Records &records)
{
    if (view == QLatin1String("status")) {
        if (id == m_statusInFlight)
            m_statusInFlight = 0;
        if (m_status.applyReply(records)) {
            m_statusReplies++;
            m_timeline.observeSteering(m_status.now(), m_status.lastTime(),
                                       m_status.appState() == QLatin1String("paused"),
                                       m_status.recording() == QLatin1String("off"), m_status.pausedSince(),
                                       m_status.notRecordingSince());
        }
        return;
    }
    if (view == QLatin1String("timeline")) {
        if (id == m_timelineInFlight)
            m_timelineInFlight = 0;
        if (m_timeline.applyTimeline(records))
            m_timelineReplies++;
        if (m_timeline.wantsEvents() && !m_timeline.hasEvents() && !m_eventsInFlight)
            m_eventsInFlight = m_client.send(m_timeline.eventsCommand(), QStringLiteral("events"));
        return;
    }
    if (view == QLatin1String("overview")) {
        if (id == m_overviewInFlight)
            m_overviewInFlight = 0;
        if (m_overview.applyTimeline(records))
            m_overviewReplies++;
        return;
    }
    if (view == QLatin1String("profile")) {
        if (id == m_profileInFlight)
            m_profileInFlight = 0;
        if (m_profile.applyReply(records)) {
            m_profileReplies++;
            for (const auto &entry : m_profile.entries())
                m_timeline.setRoleHint(entry.name, entry.role);
        }
        return;
    }
    if (view == QLatin1String("events")) {
        if (id == m_eventsInFlight)
            m_eventsInFlight = 0;
        if (m_timeline.wantsEvents() && m_timeline.applyEvents(records))
            m_eventsReplies++;
        return;
    }
    if (!view.isEmpty())
        return; // another part's view (the analyses, analyses.h) takes its answers itself
    const QString line = m_commands.take(id);
    QStringList text;
    bool ok = true;
    for (const Record &record : records) {
        text << record.text();
        if ((record.type == "summary" && record.u64("failed") > 0) || record.type == "failed" ||
            (record.type == "place" && record.has("ok") && record.u64("ok") == 0))
            ok = false;
    }
    m_lastAnswer = text.join(QLatin1Char('\n'));
    m_lastOk = ok;
    m_commandsAnswered++;
    if (!ok)
        m_lastError = m_lastAnswer;
    addLog(QStringLiteral("< %1: %2").arg(line, ok ? QStringLiteral("ok") : QStringLiteral("FAILED")));
    for (const QString &t : text)
        addLog(QStringLiteral("  ") + t);
    emit commandAnswered(id, line, ok, m_lastAnswer);
    m_statusInFlight = 0; // the steering state changed: show it now
    refreshStatus();
}

void Viewer::onFailed(quint32 id, const QString &view, const QString &code, const QString &message)
{
    const QString text = QStringLiteral("error code=%1 message=%2").arg(code, message);
    if (view == QLatin1String("status")) {
        m_statusInFlight = 0;
    } else if (view == QLatin1String("timeline")) {
        m_timelineInFlight = 0;
    } else if (view == QLatin1String("profile")) {
        m_profileInFlight = 0;
    } else if (view == QLatin1String("events")) {
        m_eventsInFlight = 0;
    } else if (view == QLatin1String("overview")) {
        m_overviewInFlight = 0;
    }
    if (!view.isEmpty()) {
        if (code != QLatin1String("disconnected")) {
            m_lastError = view + QStringLiteral(": ") + text;
            addLog(m_lastError);
        }
        return;
    }
    const QString line = m_commands.take(id);
    m_lastAnswer = text;
    m_lastOk = false;
    m_lastError = text;
    m_commandsAnswered++;
    addLog(QStringLiteral("< %1: %2").arg(line, text));
    emit commandAnswered(id, line, false, text);
}

void Viewer::onNotice(const Record &notice)
{
    addLog(notice.text()); // "notice event=… …"
    const QString event = notice.value("event");
    if (event == QLatin1String("window-ended"))
        m_windowsEnded++;
    if (event == QLatin1String("job-ended"))
        m_jobEnded = true;
    emit noticeReceived(notice);
    refreshStatus();
}

QMap<QString, QString> Viewer::state() const
{
    QMap<QString, QString> s;
    const auto num = [](qint64 v) { return QString::number(v); };
    s[QStringLiteral("connected")] = num(m_client.state() == ProtocolClient::Connected);
    s[QStringLiteral("connections")] = num(m_connections);
    s[QStringLiteral("lost")] = m_lost;
    s[QStringLiteral("job")] = m_client.welcome().value("job");
    s[QStringLiteral("job_ended")] = num(m_jobEnded);
    s[QStringLiteral("status_replies")] = num(m_statusReplies);
    s[QStringLiteral("recording")] = m_status.recording();
    s[QStringLiteral("app_state")] = m_status.appState();
    s[QStringLiteral("places")] = num(m_status.places().size());
    s[QStringLiteral("events_per_s")] = num(qint64(m_status.eventsPerSecond()));
    s[QStringLiteral("events_held")] = num(qint64(m_status.summary().u64("events_held")));
    s[QStringLiteral("strategy")] = m_status.strategies();
    s[QStringLiteral("timeline_replies")] = num(m_timelineReplies);
    s[QStringLiteral("timeline_mode")] = m_timeline.mode();
    s[QStringLiteral("timeline_rows")] = num(m_timeline.rows().size());
    s[QStringLiteral("timeline_columns")] = num(m_timeline.columns());
    s[QStringLiteral("timeline_busy_cells")] = num(m_timeline.busyCells());
    s[QStringLiteral("timeline_from")] = num(qint64(m_timeline.from()));
    s[QStringLiteral("timeline_to")] = num(qint64(m_timeline.to()));
    s[QStringLiteral("timeline_span_ns")] = num(qint64(m_timeline.to() - m_timeline.from()));
    s[QStringLiteral("follow_live")] = num(m_timeline.followLive());
    s[QStringLiteral("events_shown")] = num(m_timeline.hasEvents());
    s[QStringLiteral("event_intervals")] = num(m_timeline.intervals().size());
    s[QStringLiteral("event_messages")] = num(m_timeline.messages().size());
    s[QStringLiteral("messages_shown")] = num(m_timeline.shownMessages());
    s[QStringLiteral("messages_filter")] = m_timeline.messageFilter().text();
    s[QStringLiteral("events_replies")] = num(m_eventsReplies);
    s[QStringLiteral("profile_replies")] = num(m_profileReplies);
    s[QStringLiteral("profile_rows")] = num(m_profile.rowCount());
    s[QStringLiteral("profile_top")] = m_profile.regionAt(0);
    s[QStringLiteral("commands_answered")] = num(m_commandsAnswered);
    s[QStringLiteral("last_command")] = m_lastCommand;
    s[QStringLiteral("last_ok")] = num(m_lastOk);
    s[QStringLiteral("last_answer")] = m_lastAnswer;
    s[QStringLiteral("last_error")] = m_lastError;
    s[QStringLiteral("windows_ended")] = num(m_windowsEnded);
    s[QStringLiteral("stale_dropped")] = num(qint64(m_client.staleDropped()));
    s[QStringLiteral("partials")] = num(m_partials);
    s[QStringLiteral("in_flight")] = num(m_client.inFlight());
    s[QStringLiteral("session")] = m_session.path;
    s[QStringLiteral("session_dir")] = m_sessionDirectory;
    s[QStringLiteral("total_ranks")] = num(m_timeline.totalRanks());
    s[QStringLiteral("rank_filter")] = m_timeline.rankFilter();
    s[QStringLiteral("rank_first")] = num(m_timeline.rankFirst());
    s[QStringLiteral("rank_count")] = num(m_timeline.rankCount());
    s[QStringLiteral("visible_ranks")] = m_timeline.visibleRankSet();
    s[QStringLiteral("timeline_slots")] = num(m_timeline.slotCount());
    s[QStringLiteral("timeline_grouped")] = num(m_timeline.grouped());
    s[QStringLiteral("timeline_partial")] = m_timeline.partialText();
    s[QStringLiteral("partials_kept")] =
        num(m_timeline.partialsKept() + m_profile.partialsKept() + m_status.partialsKept());
    s[QStringLiteral("history_back")] = num(m_timeline.historyDepth());
    s[QStringLiteral("overview_replies")] = num(m_overviewReplies);
    s[QStringLiteral("overview_columns")] = num(m_overview.columns());
    int paused = 0, notRecording = 0;
    for (const auto &period : m_timeline.periods())
        (period.kind == TimelineModel::Period::AppPaused ? paused : notRecording)++;
    s[QStringLiteral("paused_periods")] = num(paused);
    s[QStringLiteral("not_recording_periods")] = num(notRecording);
    return s;
}
