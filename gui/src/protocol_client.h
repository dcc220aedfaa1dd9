// protocol_client.h — an asynchronous client of the root server (docs/protocol.md): the HELLO, its
// answer and frame scanning through the client library (otfx/client.h, the parts without IO), request
// ids, PARTIAL/REPLY/ERROR/NOTICE, and "views".
//
// A request may belong to a view (e.g. "timeline"): a newer request of the same view supersedes the
// older ones, whose answers are then dropped (counted in staleDropped()), and a request of a view
// still waiting for a free slot (the server allows max_in_flight requests) is replaced rather than
// queued twice. Nothing here blocks: the Qt event loop drives the socket.
#pragma once

#include "records.h"

#include <QByteArray>
#include <QHash>
#include <QObject>
#include <QQueue>
#include <QTcpSocket>

class ProtocolClient : public QObject
{
    Q_OBJECT
  public:
    enum State { Disconnected, Connecting, Authenticating, Connected };
    Q_ENUM(State)

    explicit ProtocolClient(QObject *parent = nullptr);

    void connectToServer(const QString &address, quint16 port, const QString &token);
    // Connects again with the last address and token (after a lost connection).
    void reconnectToServer();
    void disconnectFromServer();

    State state() const
    {
        return m_state;
    }
    QString address() const
    {
        return m_address;
    }
    quint16 port() const
    {
        return m_port;
    }
    const Record &welcome() const
    {
        return m_welcome;
    }
    QString lastError() const
    {
        return m_lastError;
    }
    // Why the last connection ended (set before stateChanged(Disconnected) is emitted, so a slot of
    // that signal reads this loss's reason, never the previous one's); empty while connected.
    QString lostReason() const
    {
        return m_lostReason;
    }
    int inFlight() const
    {
        return int(m_pending.size());
    }
    int queued() const
    {
        return int(m_queue.size());
    }
    quint64 staleDropped() const
    {
        return m_staleDropped;
    }

    // Sends one command line (checked with otfx_command_parse first: a bad line is answered at once
    // with failed(id, view, "bad-command", why) without contacting the server). Returns the request id.
    quint32 send(const QString &line, const QString &view = QString());
    // The newest request of a view, 0 if none.
    quint32 latest(const QString &view) const
    {
        return m_latest.value(view, 0);
    }

  signals:
    void stateChanged(ProtocolClient::State state);
    void connected(const Record &welcome);
    // The connection ended: `reason` says why for people (refused, closed by the job, auth, ...).
    void connectionLost(const QString &reason);
    void partial(quint32 id, const QString &view, const Records &records);
    void replied(quint32 id, const QString &view, const Records &records);
    void failed(quint32 id, const QString &view, const QString &code, const QString &message);
    void notice(const Record &record);
    void inFlightChanged(int inFlight);

  private:
    struct Pending {
        QString view, line;
    };
    void setState(State state);
    void onConnected();
    void onReadyRead();
    void onSocketError();
    void onDisconnected();
    void handleFrame(quint16 kind, quint32 request, const QByteArray &payload);
    void lose(const QString &reason);
    void writeFrame(quint16 kind, quint32 request, const QByteArray &payload);
    void pump();
    bool current(quint32 id, const Pending &pending) const;

    QTcpSocket *m_socket;
    State m_state = Disconnected;
    QString m_address, m_token, m_lastError, m_lostReason;
    quint16 m_port = 0;
    QByteArray m_buffer;
    Record m_welcome;
    quint32 m_nextId = 1;
    int m_maxInFlight = 16;
    QHash<quint32, Pending> m_pending;
    QQueue<QPair<quint32, Pending>> m_queue;
    QHash<QString, quint32> m_latest;
    quint64 m_staleDropped = 0;
    bool m_losing = false;
};
