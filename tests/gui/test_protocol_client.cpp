// ProtocolClient against an in-process server speaking the real frames (otfx_protocol): handshake,
// refused token, PARTIAL/REPLY/ERROR/NOTICE, stale answers of a superseded view dropped, local checks
// of command lines, the in-flight limit, a lost connection and reconnecting, a bad frame.
#include "mini_server.h"
#include "protocol_client.h"

#include <QSignalSpy>
#include <QtTest/QtTest>

class TestProtocolClient : public QObject
{
    Q_OBJECT
  private:
    void connectClient(ProtocolClient &client, MiniServer &server, const char *token = Token)
    {
        client.connectToServer(QStringLiteral("127.0.0.1"), server.port(), QLatin1String(token));
    }

  private slots:
    void handshake()
    {
        MiniServer server;
        ProtocolClient client;
        QSignalSpy connected(&client, &ProtocolClient::connected);
        connectClient(client, server);
        QVERIFY(connected.wait(5000));
        QCOMPARE(client.state(), ProtocolClient::Connected);
        QCOMPARE(client.welcome().value("job"), QStringLiteral("mini"));
        QCOMPARE(client.welcome().u64("places"), quint64(3));
    }

    void refusedToken()
    {
        MiniServer server;
        ProtocolClient client;
        QSignalSpy lost(&client, &ProtocolClient::connectionLost);
        connectClient(client, server, "ffffffffffffffffffffffffffffffff");
        QVERIFY(lost.wait(5000));
        QVERIFY2(lost.first().first().toString().contains(QLatin1String("refused the token")),
                 qPrintable(lost.first().first().toString()));
        QCOMPARE(client.state(), ProtocolClient::Disconnected);
    }

    void partialThenReplyThenNotice()
    {
        MiniServer server;
        server.onRequest = [](MiniServer *s, const MiniServer::Request &r) {
            s->frame(OTFX_FRAME_PARTIAL, r.id, "partial partial=1 answered=1 total=2\nsummary places=1\n");
            s->frame(OTFX_FRAME_REPLY, r.id, "summary places=2 recording=on note=a%20b\n");
            s->frame(OTFX_FRAME_NOTICE, 0, "notice event=window-ended from=1 to=2\n");
        };
        ProtocolClient client;
        QSignalSpy connected(&client, &ProtocolClient::connected);
        connectClient(client, server);
        QVERIFY(connected.wait(5000));
        QSignalSpy partial(&client, &ProtocolClient::partial);
        QSignalSpy replied(&client, &ProtocolClient::replied);
        QSignalSpy notice(&client, &ProtocolClient::notice);
        const quint32 id = client.send(QStringLiteral("status"), QStringLiteral("status"));
        QVERIFY(notice.wait(5000));
        QCOMPARE(partial.size(), 1);
        QCOMPARE(replied.size(), 1);
        QCOMPARE(replied.first().at(0).toUInt(), id);
        const Records records = replied.first().at(2).value<Records>();
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].value("note"), QStringLiteral("a b"));
        QCOMPARE(notice.first().first().value<Record>().value("event"), QStringLiteral("window-ended"));
        QCOMPARE(server.received.size(), 1);
        QCOMPARE(server.received[0].line, QByteArray("status"));
        QCOMPARE(client.inFlight(), 0);
    }

    void staleAnswersOfASupersededViewAreDropped()
    {
        MiniServer server;
        // Hold the first timeline request; answer both, the newer first, when the second arrives.
        server.onRequest = [](MiniServer *s, const MiniServer::Request &r) {
            if (s->received.size() < 2)
                return;
            const auto &older = s->received[0];
            s->frame(OTFX_FRAME_REPLY, r.id, "timeline mode=window from=200 to=300\n");
            s->frame(OTFX_FRAME_PARTIAL, older.id, "timeline mode=window from=100 to=200 partial=1\n");
            s->frame(OTFX_FRAME_REPLY, older.id, "timeline mode=window from=100 to=200\n");
        };
        ProtocolClient client;
        QSignalSpy connected(&client, &ProtocolClient::connected);
        connectClient(client, server);
        QVERIFY(connected.wait(5000));
        QSignalSpy replied(&client, &ProtocolClient::replied);
        QSignalSpy partial(&client, &ProtocolClient::partial);
        const quint32 first =
            client.send(QStringLiteral("timeline --from 100ns --to 200ns"), QStringLiteral("timeline"));
        const quint32 second =
            client.send(QStringLiteral("timeline --from 200ns --to 300ns"), QStringLiteral("timeline"));
        QVERIFY(first != second);
        QCOMPARE(client.latest(QStringLiteral("timeline")), second);
        QTRY_COMPARE_WITH_TIMEOUT(client.inFlight(), 0, 5000);
        QCOMPARE(replied.size(), 1);
        QCOMPARE(replied.first().at(0).toUInt(), second);
        QCOMPARE(replied.first().at(2).value<Records>()[0].u64("from"), quint64(200));
        QCOMPARE(partial.size(), 0);
        QCOMPARE(client.staleDropped(), quint64(2)); // the older one's PARTIAL and REPLY
    }

    void errorsAndLocalChecks()
    {
        MiniServer server;
        server.onRequest = [](MiniServer *s, const MiniServer::Request &r) {
            s->frame(OTFX_FRAME_ERROR, r.id, "error code=failed message=canned%20failure\n");
        };
        ProtocolClient client;
        QSignalSpy connected(&client, &ProtocolClient::connected);
        connectClient(client, server);
        QVERIFY(connected.wait(5000));
        QSignalSpy failed(&client, &ProtocolClient::failed);
        client.send(QStringLiteral("record pause"));
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.first().at(2).toString(), QStringLiteral("failed"));
        QCOMPARE(failed.first().at(3).toString(), QStringLiteral("canned failure"));
        // A line otfx_command_parse refuses never reaches the server.
        client.send(QStringLiteral("record sideways"));
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.at(1).at(2).toString(), QStringLiteral("bad-command"));
        QCOMPARE(server.received.size(), 1);
        QCOMPARE(client.state(), ProtocolClient::Connected);
    }

    void inFlightLimitQueuesRequests()
    {
        MiniServer server;
        server.maxInFlight = 2;
        ProtocolClient client;
        QSignalSpy connected(&client, &ProtocolClient::connected);
        connectClient(client, server);
        QVERIFY(connected.wait(5000));
        QList<quint32> ids;
        for (int i = 0; i < 4; i++)
            ids << client.send(QStringLiteral("status"));
        QTRY_COMPARE_WITH_TIMEOUT(server.received.size(), 2, 5000);
        QTest::qWait(100);
        QCOMPARE(server.received.size(), 2); // the others wait for a free slot
        QCOMPARE(client.queued(), 2);
        QSignalSpy replied(&client, &ProtocolClient::replied);
        server.frame(OTFX_FRAME_REPLY, server.received[0].id, "summary places=1\n");
        QTRY_COMPARE_WITH_TIMEOUT(server.received.size(), 3, 5000);
        QCOMPARE(replied.size(), 1);
    }

    void lostConnectionAndReconnect()
    {
        MiniServer server;
        ProtocolClient client;
        QSignalSpy connected(&client, &ProtocolClient::connected);
        QSignalSpy lost(&client, &ProtocolClient::connectionLost);
        QSignalSpy failed(&client, &ProtocolClient::failed);
        connectClient(client, server);
        QVERIFY(connected.wait(5000));
        client.send(QStringLiteral("status"), QStringLiteral("status"));
        QTRY_COMPARE_WITH_TIMEOUT(server.received.size(), 1, 5000);
        server.peer->disconnectFromHost(); // the job went away
        QVERIFY(lost.wait(5000));
        QCOMPARE(client.state(), ProtocolClient::Disconnected);
        QCOMPARE(failed.size(), 1); // the request in flight is answered as lost
        QCOMPARE(failed.first().at(2).toString(), QStringLiteral("disconnected"));
        client.reconnectToServer();
        QVERIFY(connected.wait(5000));
        QCOMPARE(server.hellos, 2);
        QCOMPARE(client.state(), ProtocolClient::Connected);
    }

    void badFrameClosesTheConnection()
    {
        MiniServer server;
        server.onRequest = [](MiniServer *s, const MiniServer::Request &) {
            s->peer->write(QByteArray(16, 'x')); // wrong magic
        };
        ProtocolClient client;
        QSignalSpy connected(&client, &ProtocolClient::connected);
        QSignalSpy lost(&client, &ProtocolClient::connectionLost);
        connectClient(client, server);
        QVERIFY(connected.wait(5000));
        client.send(QStringLiteral("status"));
        QVERIFY(lost.wait(5000));
        QVERIFY(lost.first().first().toString().contains(QLatin1String("bad frame")));
    }

    void refusedConnection()
    {
        quint16 port;
        {
            MiniServer server;
            port = server.port();
        }
        ProtocolClient client;
        QSignalSpy lost(&client, &ProtocolClient::connectionLost);
        client.connectToServer(QStringLiteral("127.0.0.1"), port, QLatin1String(Token));
        QVERIFY(lost.wait(5000));
        QVERIFY2(lost.first().first().toString().contains(QLatin1String("refused")),
                 qPrintable(lost.first().first().toString()));
    }
};

QTEST_GUILESS_MAIN(TestProtocolClient)
#include "test_protocol_client.moc"
