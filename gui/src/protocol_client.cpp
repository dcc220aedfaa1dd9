#include "protocol_client.h"

#include <otfx/client.h>

#include <QTimer>

#include <cstring>

ProtocolClient::ProtocolClient(QObject *parent) : QObject(parent), m_socket(new QTcpSocket(this))
{
    qRegisterMetaType<Record>("Record");
    qRegisterMetaType<Records>("Records");
    connect(m_socket, &QTcpSocket::connected, this, &ProtocolClient::onConnected);
    connect(m_socket, &QTcpSocket::readyRead, this, &ProtocolClient::onReadyRead);
    connect(m_socket, &QTcpSocket::errorOccurred, this, &ProtocolClient::onSocketError);
    connect(m_socket, &QTcpSocket::disconnected, this, &ProtocolClient::onDisconnected);
}

void ProtocolClient::setState(State state)
{
    if (state == m_state)
        return;
    m_state = state;
    emit stateChanged(state);
}

void ProtocolClient::connectToServer(const QString &address, quint16 port, const QString &token)
{
    m_address = address;
    m_port = port;
    m_token = token;
    reconnectToServer();
}

void ProtocolClient::reconnectToServer()
{
    if (m_state != Disconnected) {
        m_losing = true; // a deliberate restart: no "connection lost" for the old socket
        m_socket->abort();
        m_losing = false;
        lose(QString());
    }
    m_buffer.clear();
    m_lastError.clear();
    m_lostReason.clear();
    setState(Connecting);
    m_socket->connectToHost(m_address, m_port);
}

void ProtocolClient::disconnectFromServer()
{
    if (m_state == Disconnected)
        return;
    m_losing = true;
    m_socket->abort();
    m_losing = false;
    lose(QStringLiteral("disconnected by the user"));
}

void ProtocolClient::onConnected()
{
    setState(Authenticating);
    otfx_text hello = {};
    otfx_client_hello_payload(m_token.toLatin1().constData(), "otfx-gui", &hello);
    writeFrame(OTFX_FRAME_HELLO, 0, hello.failed ? QByteArray() : QByteArray(hello.data, int(hello.length)));
    otfx_text_free(&hello);
}

void ProtocolClient::writeFrame(quint16 kind, quint32 request, const QByteArray &payload)
{
    char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, otfx_frame_kind(kind), request, uint32_t(payload.size()));
    m_socket->write(header, sizeof header);
    m_socket->write(payload);
}

void ProtocolClient::onReadyRead()
{
    m_buffer += m_socket->readAll();
    while (m_state != Disconnected) {
        otfx_frame_header header;
        const char *payload;
        size_t frameBytes;
        char error[256];
        const otfx_frame_scan scan =
            otfx_client_scan_frame(m_buffer.constData(), size_t(m_buffer.size()), &header, &payload,
                                   &frameBytes, error, sizeof error);
        if (scan == OTFX_FRAME_SCAN_NEED_MORE)
            return;
        if (scan == OTFX_FRAME_SCAN_BAD) {
            m_losing = true;
            m_socket->abort();
            m_losing = false;
            lose(QStringLiteral("the server sent a bad frame (%1)").arg(QString::fromUtf8(error)));
            return;
        }
        const QByteArray bytes(payload, int(header.length));
        m_buffer.remove(0, int(frameBytes));
        handleFrame(header.kind, header.request, bytes);
    }
}

bool ProtocolClient::current(quint32 id, const Pending &pending) const
{
    return pending.view.isEmpty() || m_latest.value(pending.view) == id;
}

void ProtocolClient::handleFrame(quint16 kind, quint32 request, const QByteArray &payload)
{
    const Records records = parseRecords(payload);
    if (m_state == Authenticating) {
        // The first frame answers the HELLO: a WELCOME, or why the job will not have us.
        const otfx_frame_header header{OTFX_PROTOCOL_VERSION, kind, request, quint32(payload.size())};
        char error[1024];
        if (otfx_client_check_welcome(&header, payload.constData(), size_t(payload.size()), nullptr, error,
                                      sizeof error) != OTFX_CLIENT_OK) {
            const Record *line = findRecord(records, "error");
            if (line)
                m_lastError = QStringLiteral("%1: %2").arg(line->value("code"), line->value("message"));
            m_losing = true;
            m_socket->abort();
            m_losing = false;
            lose(QString::fromUtf8(error));
            return;
        }
    }
    switch (kind) {
    case OTFX_FRAME_WELCOME: {
        if (m_state != Authenticating)
            return;
        const Record *session = findRecord(records, "session");
        m_welcome = session ? *session : Record();
        m_maxInFlight = int(qBound<quint64>(1, m_welcome.u64("max_in_flight", 16), 1024));
        setState(Connected);
        emit connected(m_welcome);
        pump();
        return;
    }
    case OTFX_FRAME_NOTICE:
        for (const Record &record : records)
            emit notice(record);
        return;
    case OTFX_FRAME_PARTIAL:
    case OTFX_FRAME_REPLY:
    case OTFX_FRAME_ERROR: {
        if (kind == OTFX_FRAME_ERROR && (request == 0 || !m_pending.contains(request))) {
            const Record *error = findRecord(records, "error");
            const QString code = error ? error->value("code") : QStringLiteral("?");
            const QString message = error ? error->value("message") : QString::fromUtf8(payload);
            m_lastError = QStringLiteral("%1: %2").arg(code, message);
            if (request == 0) {
                // About the connection (bad-frame, job-ended): it closes next.
                m_losing = true;
                m_socket->abort();
                m_losing = false;
                lose(QStringLiteral("the job closed the connection: %1").arg(m_lastError));
            }
            return;
        }
        auto it = m_pending.find(request);
        if (it == m_pending.end())
            return; // an answer to a request we no longer know (after a reconnect)
        const Pending pending = it.value();
        const bool isCurrent = current(request, pending);
        if (kind != OTFX_FRAME_PARTIAL) {
            m_pending.erase(it);
            emit inFlightChanged(inFlight());
        }
        if (!isCurrent) {
            m_staleDropped++;
        } else if (kind == OTFX_FRAME_PARTIAL) {
            emit partial(request, pending.view, records);
        } else if (kind == OTFX_FRAME_REPLY) {
            emit replied(request, pending.view, records);
        } else {
            const Record *error = findRecord(records, "error");
            emit failed(request, pending.view, error ? error->value("code") : QStringLiteral("?"),
                        error ? error->value("message") : QString::fromUtf8(payload));
        }
        if (kind != OTFX_FRAME_PARTIAL)
            pump();
        return;
    }
    default:
        return;
    }
}

quint32 ProtocolClient::send(const QString &line, const QString &view)
{
    quint32 id = m_nextId++;
    if (m_nextId == 0)
        m_nextId = 1;
    Pending pending{view, line};
    if (!view.isEmpty()) {
        m_latest.insert(view, id);
        for (int i = 0; i < m_queue.size(); i++) // a queued request of this view is superseded
            if (m_queue[i].second.view == view) {
                m_queue.removeAt(i);
                m_staleDropped++;
                break;
            }
    }
    otfx_command command;
    char error[256];
    const QByteArray utf8 = line.toUtf8();
    if (utf8.size() > int(OTFX_PROTOCOL_MAX_REQUEST) ||
        !otfx_command_parse(utf8.constData(), &command, error, sizeof error)) {
        const QString why = utf8.size() > int(OTFX_PROTOCOL_MAX_REQUEST)
                                ? QStringLiteral("command line too long")
                                : QString::fromUtf8(error);
        QTimer::singleShot(
            0, this, [this, id, view, why] { emit failed(id, view, QStringLiteral("bad-command"), why); });
        return id;
    }
    if (m_state != Connected) {
        QTimer::singleShot(0, this, [this, id, view] {
            emit failed(id, view, QStringLiteral("not-connected"), QStringLiteral("not connected to a job"));
        });
        return id;
    }
    m_queue.enqueue(qMakePair(id, pending));
    pump();
    return id;
}

void ProtocolClient::pump()
{
    while (m_state == Connected && !m_queue.isEmpty() && m_pending.size() < m_maxInFlight) {
        const auto next = m_queue.dequeue();
        m_pending.insert(next.first, next.second);
        writeFrame(OTFX_FRAME_REQUEST, next.first, next.second.line.toUtf8());
    }
    emit inFlightChanged(inFlight());
}

void ProtocolClient::onSocketError()
{
    if (m_losing)
        return;
    const QString reason = m_socket->error() == QAbstractSocket::ConnectionRefusedError
                               ? QStringLiteral("connection refused (the job is gone or not yet listening)")
                           : m_socket->error() == QAbstractSocket::RemoteHostClosedError
                               ? QStringLiteral("the job closed the connection")
                               : m_socket->errorString();
    m_losing = true;
    m_socket->abort();
    m_losing = false;
    lose(m_lastError.isEmpty() ? reason : reason + QStringLiteral(" (") + m_lastError + QLatin1Char(')'));
}

void ProtocolClient::onDisconnected()
{
    if (m_losing || m_state == Disconnected)
        return;
    lose(QStringLiteral("the job closed the connection") +
         (m_lastError.isEmpty() ? QString() : QStringLiteral(" (") + m_lastError + QLatin1Char(')')));
}

void ProtocolClient::lose(const QString &reason)
{
    if (m_state == Disconnected)
        return;
    const auto pending = m_pending;
    const auto queue = m_queue;
    m_pending.clear();
    m_queue.clear();
    m_buffer.clear();
    m_lostReason = reason;
    setState(Disconnected);
    const QString why = reason.isEmpty() ? QStringLiteral("reconnecting") : reason;
    for (auto it = pending.constBegin(); it != pending.constEnd(); ++it)
        if (current(it.key(), it.value()))
            emit failed(it.key(), it.value().view, QStringLiteral("disconnected"), why);
    for (const auto &entry : queue)
        emit failed(entry.first, entry.second.view, QStringLiteral("disconnected"), why);
    emit inFlightChanged(0);
    if (!reason.isEmpty())
        emit connectionLost(reason);
}
