// mini_server.h — a root server in miniature for the viewer's tests: it speaks the real frames
// (otfx_protocol), checks the HELLO's token, and hands every request to a callback.
#pragma once

#include <otfx/protocol.h>

#include <QTcpServer>
#include <QTcpSocket>
#include <QtTest/QtTest>

#include <functional>

static const char *const Token = "0123456789abcdef0123456789abcdef";

// A root server in miniature: checks the HELLO, then hands every request to `onRequest`.
class MiniServer : public QObject
{
  public:
    struct Request {
        quint32 id;
        QByteArray line;
    };
    std::function<void(MiniServer *, const Request &)> onRequest;
    QVector<Request> received;
    QTcpSocket *peer = nullptr;
    int maxInFlight = 16;
    int hellos = 0;
    QString job = QStringLiteral("mini");
    int ranks = 4;

    MiniServer()
    {
        QVERIFY(m_server.listen(QHostAddress::LocalHost, 0));
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            peer = m_server.nextPendingConnection();
            m_buffer.clear();
            connect(peer, &QTcpSocket::readyRead, this, &MiniServer::read);
        });
    }
    quint16 port() const
    {
        return m_server.serverPort();
    }
    void frame(quint16 kind, quint32 request, const QByteArray &payload)
    {
        char header[OTFX_FRAME_HEADER_BYTES];
        otfx_frame_write_header(header, otfx_frame_kind(kind), request, uint32_t(payload.size()));
        peer->write(header, sizeof header);
        peer->write(payload);
        peer->flush();
    }

  private:
    void read()
    {
        m_buffer += peer->readAll();
        for (;;) {
            otfx_frame_header h;
            if (otfx_frame_parse_header(m_buffer.constData(), size_t(m_buffer.size()),
                                        OTFX_PROTOCOL_MAX_REQUEST, &h) != OTFX_FRAME_OK ||
                m_buffer.size() < int(OTFX_FRAME_HEADER_BYTES + h.length))
                return;
            const QByteArray payload = m_buffer.mid(OTFX_FRAME_HEADER_BYTES, int(h.length));
            m_buffer.remove(0, int(OTFX_FRAME_HEADER_BYTES + h.length));
            if (h.kind == OTFX_FRAME_HELLO) {
                hellos++;
                if (!payload.contains(QByteArray("token=") + Token)) {
                    frame(OTFX_FRAME_ERROR, 0, "error code=auth message=wrong%20token\n");
                    peer->disconnectFromHost();
                    return;
                }
                frame(OTFX_FRAME_WELCOME, h.request,
                      QStringLiteral("session job=%1 ranks=%2 places=3 version=1 client=1 max_request=65536 "
                                     "max_in_flight=%3\n")
                          .arg(job)
                          .arg(ranks)
                          .arg(maxInFlight)
                          .toUtf8());
            } else if (h.kind == OTFX_FRAME_REQUEST) {
                const Request r{h.request, payload};
                received.append(r);
                if (onRequest)
                    onRequest(this, r);
            }
        }
    }
    QTcpServer m_server;
    QByteArray m_buffer;
};
