// The viewer's models against reply payloads recorded from a real job (tests/gui/replies/, written by
// record_replies.py): what they ask for, what they make of the answers, sorting, zoom, pan, follow-live.
// Also record lines, session files and token files.
#include "profile_model.h"
#include "records.h"
#include "session.h"
#include "status_model.h"
#include "timeline_model.h"

#include <otfx/protocol.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <unistd.h>

static Records reply(const char *name)
{
    QFile file(QStringLiteral(OTFX_GUI_REPLIES "/%1.txt").arg(QLatin1String(name)));
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read recorded reply %s", name);
    int malformed = 0;
    const Records records = parseRecords(file.readAll(), &malformed);
    if (malformed)
        qFatal("recorded reply %s has %d malformed lines", name, malformed);
    return records;
}

static bool parses(const QString &line)
{
    otfx_command command;
    char error[256];
    const bool ok = otfx_command_parse(line.toUtf8().constData(), &command, error, sizeof error);
    if (!ok)
        qWarning("%s: %s", qPrintable(line), error);
    return ok;
}

class TestModels : public QObject
{
    Q_OBJECT
  private slots:
    void recordLines()
    {
        int malformed = 0;
        const Records r =
            parseRecords("a x=1 name=my%20run%3D\n\nBAD LINE\nb y=-3 z=0.5 x=first x=second\n", &malformed);
        QCOMPARE(r.size(), 2);
        QCOMPARE(malformed, 1);
        QCOMPARE(r[0].value("name"), QStringLiteral("my run="));
        QCOMPARE(r[1].i64("y"), qint64(-3));
        QCOMPARE(r[1].f64("z"), 0.5);
        QCOMPARE(r[1].value("x"), QStringLiteral("first")); // readers take the first of a repeated key
        QCOMPARE(r[1].u64("missing", 7), quint64(7));
        QCOMPARE(encodeWord(QStringLiteral("my run%")), QStringLiteral("my%20run%25"));
    }

    void sessionFiles()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString token = QStringLiteral("0123456789abcdef0123456789abcdef");
        auto write = [&](const QString &name, const QByteArray &text, int ageSeconds) {
            const QString path = dir.filePath(name);
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(text);
            f.close();
            QVERIFY(
                f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner)); // 0600, as jobs write
            QFile touched(path);
            QVERIFY(touched.open(QIODevice::ReadWrite));
            QVERIFY(touched.setFileTime(QDateTime::currentDateTime().addSecs(-ageSeconds),
                                        QFileDevice::FileModificationTime));
        };
        write(QStringLiteral("otfx-session-old.txt"),
              "session address=127.0.0.1 port=1111 token=" + token.toUtf8() + " job=old\n", 100);
        write(QStringLiteral("otfx-session-new.txt"),
              "session address=127.0.0.1 port=2222 token=" + token.toUtf8() + " job=new started_ns=5\n", 1);
        write(QStringLiteral("token.txt"), token.toUtf8() + "\n", 0);
        write(QStringLiteral("otfx-session-bad.txt"), "nonsense\n", 50);
        // newer files that are not private to the user are ignored: another user may have written them
        write(QStringLiteral("otfx-session-open.txt"),
              "session address=127.0.0.1 port=3333 token=" + token.toUtf8() + " job=open\n", 0);
        QVERIFY(QFile::setPermissions(dir.filePath(QStringLiteral("otfx-session-open.txt")),
                                      QFileDevice::ReadOwner | QFileDevice::WriteOwner |
                                          QFileDevice::ReadGroup | QFileDevice::ReadOther));
        QVERIFY(untrustedSessionFile(dir.filePath(QStringLiteral("otfx-session-open.txt")))
                    .contains("mode 0644"));
        if (::geteuid() == 0) { // only root can give a file away
            write(QStringLiteral("otfx-session-other.txt"),
                  "session address=127.0.0.1 port=4444 token=" + token.toUtf8() + " job=other\n", 0);
            const QByteArray other =
                QFile::encodeName(dir.filePath(QStringLiteral("otfx-session-other.txt")));
            QCOMPARE(::chown(other.constData(), 65534, 65534), 0);
            QVERIFY(untrustedSessionFile(QString::fromLocal8Bit(other)).contains("owned by uid 65534"));
        }
        const QString newest = newestSessionFile(dir.path());
        QCOMPARE(QFileInfo(newest).fileName(), QStringLiteral("otfx-session-new.txt"));
        SessionInfo refused;
        QString why;
        QVERIFY(!readSessionFile(dir.filePath(QStringLiteral("otfx-session-open.txt")), &refused, &why));
        QVERIFY(why.contains(QLatin1String("not using the session file")));
        SessionInfo info;
        QString error;
        QVERIFY(readSessionFile(newest, &info, &error));
        QCOMPARE(info.port, quint16(2222));
        QCOMPARE(info.job, QStringLiteral("new"));
        QCOMPARE(info.startedNs, quint64(5));
        QVERIFY(!readSessionFile(dir.filePath(QStringLiteral("otfx-session-bad.txt")), &info, &error));
        QVERIFY(error.contains(QLatin1String("not an otfx session file")));
        QString got;
        QVERIFY(readTokenFile(dir.filePath(QStringLiteral("token.txt")), &got, &error));
        QCOMPARE(got, token);
        QVERIFY(readTokenFile(newest, &got, &error));
        QCOMPARE(got, token);
        QString address;
        quint16 port = 0;
        QVERIFY(parseAddress(QStringLiteral("127.0.0.1:40123"), &address, &port));
        QCOMPARE(port, quint16(40123));
        QVERIFY(parseAddress(QStringLiteral("[::1]:5"), &address, &port));
        QCOMPARE(address, QStringLiteral("::1"));
        QVERIFY(!parseAddress(QStringLiteral("host"), &address, &port));
        QVERIFY(!parseAddress(QStringLiteral("host:0"), &address, &port));
    }

    void statusModel()
    {
        StatusModel model;
        QSignalSpy updated(&model, &StatusModel::updated);
        QVERIFY(!model.applyReply(reply("profile"))); // not a status answer
        QVERIFY(model.applyReply(reply("status")));
        QCOMPARE(updated.size(), 1);
        QVERIFY(model.valid());
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.recording(), QStringLiteral("on"));
        QCOMPARE(model.appState(), QStringLiteral("running"));
        QVERIFY(model.eventsPerSecond() > 0);
        QVERIFY(model.lastTime() > model.firstTime());
        QVERIFY(!model.partial());
        QCOMPARE(model.strategies(), QStringLiteral("ring"));
        QCOMPARE(model.data(model.index(1, StatusModel::Place)).toULongLong(), quint64(1));
        QCOMPARE(model.data(model.index(0, StatusModel::Recording)).toString(), QStringLiteral("on"));
        QVERIFY(model.bufferSummary().startsWith(QLatin1String("P0 ")));
        QVERIFY(!model.bufferSummary().contains(QLatin1String("reduced")));
        // a partial answer, and a place that reduced and dropped events
        QVERIFY(model.applyReply(parseRecords("summary places_answered=1 places_total=2 recording=mixed\n"
                                              "place index=1 fill=0.5 strategy=time events_reduced=5 "
                                              "dropped_events=0\n")));
        QVERIFY(model.partial());
        QCOMPARE(model.recording(), QStringLiteral("mixed"));
        QCOMPARE(model.bufferSummary(), QStringLiteral("P1 50% time (reduced 5, dropped 0)"));
    }

    void timelineAsksForTheVisibleWindowAtPixelSize()
    {
        TimelineModel model;
        QSignalSpy changed(&model, &TimelineModel::viewportChanged);
        model.setPixelSize(500, 20);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(model.timelineCommand(), QStringLiteral("timeline --bins 500 --rows 20"));
        QVERIFY(parses(model.timelineCommand()));
        QVERIFY(model.eventsCommand().isEmpty());
        model.setPixelSize(100000, 4096); // the module allows 10000 bins and rows × bins ≤ 262144
        QVERIFY(model.bins() * model.rowsWanted() <= 262144);
        QVERIFY(model.bins() <= 10000);
        model.setPixelSize(500, 20);

        QVERIFY(!model.applyTimeline(reply("status")));
        const Records records = reply("timeline");
        QVERIFY(model.applyTimeline(records));
        const Record &header = *findRecord(records, "timeline");
        QCOMPARE(model.mode(), QStringLiteral("held"));
        QCOMPARE(model.columns(), int(header.u64("bins")));
        QCOMPARE(model.rows().size(), 4);
        QCOMPARE(model.rows()[2].firstRank, 2);
        QVERIFY(!model.grouped());
        QVERIFY(model.busyCells() > 0);
        // The first answer covers everything held and becomes the window; until the user zooms or pans,
        // refreshes ask for everything held again (the job goes on).
        QVERIFY(model.hasViewport());
        QVERIFY(model.showingAll());
        QCOMPARE(model.from(), header.u64("from"));
        QCOMPARE(model.to(), header.u64("to"));
        QCOMPARE(model.timelineCommand(), QStringLiteral("timeline --bins 500 --rows 20"));
        QVERIFY(model.windowOptions().isEmpty());
        QSignalSpy asked(&model, &TimelineModel::viewportChanged);
        model.zoom(0.5, 0.5); // now exactly the visible window
        QCOMPARE(asked.size(), 1);
        QVERIFY(!model.showingAll());
        const quint64 quarter = (header.u64("to") - header.u64("from")) / 4;
        QVERIFY(model.from() - header.u64("from") - quarter <= 1);
        QCOMPARE(model.timelineCommand(),
                 QStringLiteral("timeline --from %1ns --to %2ns --bins 500 --rows 20")
                     .arg(model.from())
                     .arg(model.to()));
        QVERIFY(parses(model.timelineCommand()));
        QVERIFY(model.applyTimeline(records)); // an answer for another window does not move the view
        QVERIFY(model.from() - header.u64("from") - quarter <= 1);
        // held mode: columns of width_ns from `from`
        const quint64 width = header.u64("width_ns");
        QCOMPARE(model.columnStart(3), header.u64("from") + 3 * width);
        // every cell: busy fraction within [0, 1], dominant a legend id or -1, sums as in the reply
        QStringList legendNames;
        for (const auto &l : model.legend())
            legendNames << l.name;
        QVERIFY(legendNames.contains(QStringLiteral("MPI_Allreduce")));
        for (int r = 0; r < model.rows().size(); r++) {
            quint64 total = 0, expected = 0;
            for (int c = 0; c < model.columns(); c++) {
                const double busy = model.busy(r, c);
                QVERIFY(busy >= 0.0 && busy <= 1.0);
                QVERIFY(model.dominant(r, c) >= -1 && model.dominant(r, c) < model.legend().size());
                total += model.rows()[r].fields[TimelineModel::Collective][c];
            }
            for (const Record &rec : records)
                if (rec.type == "row" && int(rec.u64("index")) == model.rows()[r].index)
                    for (const QString &v : rec.value("collective").split(QLatin1Char(',')))
                        expected += v.toULongLong();
            QCOMPARE(total, expected);
        }
        QVERIFY(!model.cellText(0, model.columns() / 2).isEmpty());
    }

    void timelineWindowMode()
    {
        TimelineModel model;
        model.setPixelSize(100, 2);
        const Records records = reply("timeline_window");
        QVERIFY(model.applyTimeline(records));
        const Record &h = *findRecord(records, "timeline");
        QCOMPARE(model.mode(), QStringLiteral("window"));
        const quint64 from = h.u64("from"), to = h.u64("to");
        const int bins = int(h.u64("bins"));
        QCOMPARE(model.columnStart(0), from);
        QCOMPARE(model.columnStart(7), from + quint64((unsigned __int128)7 * (to - from) / quint64(bins)));
        QCOMPARE(model.columnEnd(bins - 1), to);
        QVERIFY(model.busyCells() > 0);
    }

    void zoomPanFollow()
    {
        TimelineModel model;
        model.setPixelSize(1000, 10);
        model.setViewport(1'000'000'000, 2'000'000'000);
        QSignalSpy changed(&model, &TimelineModel::viewportChanged);
        model.zoom(0.5, 0.5);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(model.from(), quint64(1'250'000'000));
        QCOMPARE(model.to(), quint64(1'750'000'000));
        model.zoom(0.5, 0.0); // anchored at the left edge
        QCOMPARE(model.from(), quint64(1'250'000'000));
        QCOMPARE(model.to(), quint64(1'500'000'000));
        model.pan(0.5);
        QCOMPARE(model.from(), quint64(1'375'000'000));
        QCOMPARE(model.to(), quint64(1'625'000'000));
        model.zoom(1e-12, 0.5); // never narrower than one ns per pixel / 1 µs
        QVERIFY(model.to() - model.from() >= 1000);

        model.setViewport(0, 10'000'000'000);
        QSignalSpy follow(&model, &TimelineModel::followLiveChanged);
        model.setFollowLive(true);
        model.setLiveTime(50'000'000'000);
        QCOMPARE(model.to(), quint64(50'000'000'000));
        QCOMPARE(model.from(), quint64(40'000'000'000));
        model.setLiveTime(51'000'000'000);
        QCOMPARE(model.to(), quint64(51'000'000'000));
        model.pan(-0.1); // the user moves the view: follow-live ends
        QVERIFY(!model.followLive());
        QCOMPARE(follow.size(), 2);
        model.setLiveTime(60'000'000'000);
        QVERIFY(model.to() < 60'000'000'000ull);
        model.showAll();
        QVERIFY(!model.hasViewport());
        QCOMPARE(model.timelineCommand(), QStringLiteral("timeline --bins 1000 --rows 10"));
    }

    void singleEventsWhenZoomedIn()
    {
        TimelineModel model;
        model.setPixelSize(500, 20);
        QVERIFY(model.applyTimeline(reply("timeline")));
        QVERIFY(!model.wantsEvents()); // seconds on 500 pixels
        const Records events = reply("events");
        const Record &h = *findRecord(events, "events");
        model.setViewport(h.u64("from"), h.u64("to")); // 30 ms on 500 pixels: 60 µs per pixel
        QVERIFY(!model.wantsEvents());
        model.setEventsNsPerPixel(100000);
        QVERIFY(model.wantsEvents());
        const QString command = model.eventsCommand();
        QCOMPARE(command, QStringLiteral("events --from %1ns --to %2ns --ranks 0-3 --limit 20000")
                              .arg(h.u64("from"))
                              .arg(h.u64("to")));
        QVERIFY(parses(command));
        QVERIFY(model.applyEvents(events));
        QVERIFY(model.hasEvents());
        QVERIFY(model.intervals().size() >= 25);
        int enters = 0;
        for (const Record &r : events)
            enters += r.type == "event" && r.value("type") == QLatin1String("enter");
        int regions = 0;
        for (const auto &i : model.intervals()) {
            QVERIFY(i.start <= i.end);
            QVERIFY(i.rank >= 0 && i.rank <= 3);
            regions += !i.reduced;
        }
        QCOMPARE(regions, enters); // every enter becomes one interval (open ones end at the window's end)
        for (int i = 1; i < model.intervals().size(); i++) // outer ones first: drawn below the nested ones
            QVERIFY(model.intervals()[i - 1].depth <= model.intervals()[i].depth);
        QVERIFY(!model.messages().isEmpty());
        for (const auto &m : model.messages()) {
            QVERIFY(m.src != m.dst);
            QVERIFY(m.sent > 0 && m.received > 0);
        }
        QCOMPARE(model.roleOf(QStringLiteral("MPI_Allreduce")), QStringLiteral("collective"));
        QVERIFY(model.intervalText(model.intervals().first()).contains(QLatin1String("rank")));
        model.setEventsNsPerPixel(1); // zoomed out again: single events are not shown any more
        QVERIFY(!model.wantsEvents());
        QVERIFY(model.eventsCommand().isEmpty());
    }

    void profileSorting()
    {
        ProfileModel model;
        QVERIFY(!model.applyReply(reply("status")));
        const Records records = reply("profile");
        QVERIFY(model.applyReply(records));
        QCOMPARE(quint64(model.rowCount()), findRecord(records, "profile")->u64("regions"));
        // default: exclusive time, largest first
        for (int i = 1; i < model.rowCount(); i++)
            QVERIFY(model.entries()[i - 1].exclusive >= model.entries()[i].exclusive);
        QCOMPARE(model.regionAt(0), QStringLiteral("MPI_Allreduce"));
        double share = 0;
        for (const auto &e : model.entries())
            share += e.share;
        QVERIFY(std::abs(share - 1.0) < 1e-6);
        model.sort(ProfileModel::Visits, Qt::AscendingOrder);
        for (int i = 1; i < model.rowCount(); i++)
            QVERIFY(model.entries()[i - 1].visits <= model.entries()[i].visits);
        model.sort(ProfileModel::Region, Qt::AscendingOrder);
        for (int i = 1; i < model.rowCount(); i++)
            QVERIFY(model.entries()[i - 1].name < model.entries()[i].name);
        model.sort(ProfileModel::Inclusive, Qt::DescendingOrder);
        QVERIFY(model.applyReply(records)); // a new answer keeps the user's order
        for (int i = 1; i < model.rowCount(); i++)
            QVERIFY(model.entries()[i - 1].inclusive >= model.entries()[i].inclusive);
        QCOMPARE(model.data(model.index(0, ProfileModel::Share), Qt::UserRole).toDouble(),
                 model.entries()[0].share);
        QVERIFY(model.data(model.index(0, ProfileModel::Inclusive)).toString().endsWith(QLatin1String(" s")));
        model.sort(ProfileModel::Share, Qt::DescendingOrder);
        QCOMPARE(model.regionAt(0), QStringLiteral("MPI_Allreduce"));
    }
};

QTEST_GUILESS_MAIN(TestModels)
#include "test_models.moc"
