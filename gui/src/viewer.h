// viewer.h — the viewer without its widgets: the protocol client, the models, and what is asked when
// (status every second, the timeline and profile of the visible window whenever it changes or every
// two seconds, single events when zoomed in), steering commands and their answers, notices.
// The main window shows it; the script mode (--script) drives and checks it; unit tests use it alone.
#pragma once

#include "profile_model.h"
#include "protocol_client.h"
#include "session.h"
#include "status_model.h"
#include "timeline_model.h"

#include <QElapsedTimer>
#include <QMap>
#include <QObject>
#include <QTimer>

class Viewer : public QObject
{
    Q_OBJECT
  public:
    explicit Viewer(QObject *parent = nullptr);

    ProtocolClient *client()
    {
        return &m_client;
    }
    StatusModel *status()
    {
        return &m_status;
    }
    TimelineModel *timeline()
    {
        return &m_timeline;
    }
    // The whole run (everything held, all ranks in one row) for the overview strip.
    TimelineModel *overview()
    {
        return &m_overview;
    }
    ProfileModel *profile()
    {
        return &m_profile;
    }

    // Connects to the job of a session (or --connect address + token).
    void connectToSession(const SessionInfo &session);
    // Re-reads the session file (a job restarted writes a new one) and connects again.
    void reconnect();
    // Where session files are looked for (--session-dir, else $OTFX_SESSION_DIR, else ./).
    void setSessionDirectory(const QString &directory)
    {
        m_sessionDirectory = directory;
    }
    QString sessionDirectory() const
    {
        return m_sessionDirectory;
    }
    // Connects to the newest session file of sessionDirectory() now if there is one (true), else looks
    // again every half second until one appears or a connection is made another way.
    bool discover();
    // Stops looking for a session file (something else, such as an opened archive, is shown now).
    void stopDiscovery()
    {
        m_discovery.stop();
    }
    const SessionInfo &session() const
    {
        return m_session;
    }
    bool jobEnded() const
    {
        return m_jobEnded;
    }

    // Sends a steering command (or any command line); the answer comes as commandAnswered().
    quint32 command(const QString &line);
    // snapshot NAME [--from --to of the visible window] [--overwrite]
    quint32 snapshot(const QString &name, bool visibleWindow, bool overwrite);
    // Asks for the status / the visible window now.
    void refreshStatus();
    void refreshView();

    // The viewer's state as key → value, for scripts and tests (see docs/gui.md).
    QMap<QString, QString> state() const;
    const QStringList &log() const
    {
        return m_log;
    }
    QString lastAnswer() const
    {
        return m_lastAnswer;
    }

    int commandsInFlight() const
    {
        return int(m_commands.size());
    }

  signals:
    void commandSent(quint32 id, const QString &line);
    void commandAnswered(quint32 id, const QString &line, bool ok, const QString &answer);
    void logged(const QString &line);
    void noticeReceived(const Record &notice);
    void elapsedChanged();
    // Connected to another job than before: what the old one said is gone.
    void jobChanged();

  private:
    void onConnected();
    void onLost(const QString &reason);
    void onPartial(quint32 id, const QString &view, const Records &records);
    void onReplied(quint32 id, const QString &view, const Records &records);
    void onFailed(quint32 id, const QString &view, const QString &code, const QString &message);
    void onNotice(const Record &notice);
    void addLog(const QString &line);
    void requestView(bool periodic);
    void requestOverview();
    bool tryDiscover();

    ProtocolClient m_client;
    StatusModel m_status;
    TimelineModel m_timeline, m_overview;
    ProfileModel m_profile;
    SessionInfo m_session;
    QTimer m_statusTimer, m_viewTimer, m_viewDebounce, m_discovery;
    QString m_sessionDirectory;
    QHash<quint32, QString> m_commands; // steering commands in flight: id → line
    QStringList m_log;
    QString m_lastAnswer, m_lastCommand, m_lastError;
    bool m_lastOk = false, m_jobEnded = false;
    int m_commandsAnswered = 0, m_windowsEnded = 0, m_timelineReplies = 0, m_profileReplies = 0;
    int m_eventsReplies = 0, m_statusReplies = 0, m_partials = 0, m_connections = 0;
    quint32 m_statusInFlight = 0, m_timelineInFlight = 0, m_profileInFlight = 0, m_eventsInFlight = 0;
    quint32 m_overviewInFlight = 0;
    int m_overviewReplies = 0;
    QString m_lost, m_job;
};
