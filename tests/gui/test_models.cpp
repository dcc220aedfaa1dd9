// The viewer's models against reply payloads recorded from a real job (tests/gui/replies/, written by
// record_replies.py): what they ask for, what they make of the answers, sorting, zoom, pan, follow-live.
// Also record lines, session files and token files.
#include "format.h"
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
        // a message's hover text: who sent it to whom, tag, size, both times and how long it took
        const TimelineModel::Message &message = model.messages().first();
        const QString text = model.messageText(message);
        QVERIFY2(text.startsWith(QStringLiteral("message rank %1 → rank %2, tag %3, %4\nsent ")
                                     .arg(message.src)
                                     .arg(message.dst)
                                     .arg(message.tag)
                                     .arg(formatBytes(double(message.bytes)))),
                 qPrintable(text));
        QVERIFY2(text.endsWith(
                     QStringLiteral("(%1)").arg(formatDuration(double(message.received - message.sent)))),
                 qPrintable(text));
        TimelineModel::Message skewed = message; // clocks apart: received "before" it was sent
        skewed.received = message.sent - 1000;
        QVERIFY2(model.messageText(skewed).endsWith(QStringLiteral("(%1)").arg(formatDuration(-1000.0))),
                 qPrintable(model.messageText(skewed)));
        model.setEventsNsPerPixel(1); // zoomed out again: single events are not shown any more
        QVERIFY(!model.wantsEvents());
        QVERIFY(model.eventsCommand().isEmpty());
    }

    // A receive whose send came before the window is not paired with a later send of the same channel:
    // both ends carry their ordinal on the channel (seq), and only equal ordinals make a message. Ends
    // without one (an archive that does not say) are paired in order, as before.
    void messagesPairedByTheirOrdinals()
    {
        TimelineModel model;
        QVERIFY(model.applyEvents(
            parseRecords("events from=1000 to=5000 ranks=all limit=100 locations=2 events=5 truncated=0\n"
                         "event rank=1 thread=0 time=1100 type=recv peer=0 tag=7 bytes=8 seq=4\n"
                         "event rank=0 thread=0 time=1200 type=send peer=1 tag=7 bytes=8 seq=5\n"
                         "event rank=1 thread=0 time=1300 type=recv peer=0 tag=7 bytes=8 seq=5\n"
                         "event rank=0 thread=0 time=1400 type=send peer=1 tag=7 bytes=16 seq=6\n")));
        QCOMPARE(model.messages().size(), 1);
        const TimelineModel::Message &message = model.messages().first();
        QCOMPARE(message.sent, quint64(1200));
        QCOMPARE(message.received, quint64(1300));
        QCOMPARE(message.bytes, quint64(8));

        QVERIFY(model.applyEvents(
            parseRecords("events from=1000 to=5000 ranks=all limit=100 locations=2 events=4 truncated=0\n"
                         "event rank=0 thread=0 time=1200 type=send peer=1 tag=7 bytes=8\n"
                         "event rank=0 thread=0 time=1250 type=send peer=1 tag=7 bytes=8\n"
                         "event rank=1 thread=0 time=1300 type=recv peer=0 tag=7 bytes=8\n"
                         "event rank=1 thread=0 time=1350 type=recv peer=0 tag=7 bytes=8\n")));
        QCOMPARE(model.messages().size(), 2);
        QCOMPARE(model.messages()[0].sent, quint64(1200));
        QCOMPARE(model.messages()[0].received, quint64(1300));
        QCOMPARE(model.messages()[1].sent, quint64(1250));
        QCOMPARE(model.messages()[1].received, quint64(1350));
    }

    // A PARTIAL frame (some places have not answered within 200 ms) never replaces rows all places gave:
    // the rows, the profile's visits and the status stay, and the answer is marked partial.
    void partialAnswersNeverReplaceKnownRows()
    {
        const Records full = reply("timeline");
        Records partial;
        partial.append(parseRecords("partial partial=1 answered=1 total=2\n").first());
        int rowsKept = 0;
        for (const Record &r : full)
            if (r.type != "row" || (r.u64("first_rank") <= 1 && rowsKept++ < 2))
                partial.append(r);
        TimelineModel timeline;
        QVERIFY(timeline.applyTimeline(full));
        QCOMPARE(timeline.rows().size(), 4);
        QVERIFY(timeline.partialText().isEmpty());
        QVERIFY(!timeline.applyTimeline(partial));
        QCOMPARE(timeline.rows().size(), 4); // not 2 rows of double height
        QCOMPARE(timeline.partialsKept(), 1);
        QVERIFY(timeline.partialText().contains(QLatin1String("1 of 2")));
        QVERIFY(timeline.applyTimeline(full)); // the final answer ends the mark
        QVERIFY(timeline.partialText().isEmpty());
        // nothing shown yet: a partial answer is better than nothing, marked, in its own row slots
        TimelineModel fresh;
        QVERIFY(fresh.applyTimeline(partial));
        QCOMPARE(fresh.rows().size(), 2);
        QCOMPARE(fresh.slotCount(), 4);
        QCOMPARE(fresh.rowInSlot(3), -1);
        QVERIFY(!fresh.partialText().isEmpty());

        ProfileModel profile;
        const Records profileFull = reply("profile");
        QVERIFY(profile.applyReply(profileFull));
        const quint64 visits = profile.entries().first().visits;
        Records profilePartial = parseRecords("partial partial=1 answered=1 total=2\n");
        for (Record r : profileFull) {
            if (r.type == "region")
                r.fields["visits"] = QString::number(r.u64("visits") / 2);
            profilePartial.append(r);
        }
        QVERIFY(!profile.applyReply(profilePartial));
        QCOMPARE(profile.entries().first().visits, visits); // not 4 → 2 → 4
        QCOMPARE(profile.partialsKept(), 1);

        StatusModel status;
        QVERIFY(status.applyReply(reply("status")));
        Records statusPartial = parseRecords("partial partial=1 answered=1 total=2\n");
        for (const Record &r : reply("status"))
            if (r.type != "place" || r.u64("index") == 0)
                statusPartial.append(r);
        QVERIFY(!status.applyReply(statusPartial));
        QCOMPARE(status.rowCount(), 2);
        QCOMPARE(status.partialsKept(), 1);
    }

    // Ruler and hover times keep the decimals their resolution needs; durations have one style.
    void timesKeepTheirResolution()
    {
        // a 3 ms window after 36 s, ticks every 0.5 ms: all distinct
        QStringList ticks;
        for (int k = 0; k < 7; k++)
            ticks << formatTime(36.4855e9 + k * 0.5e6, 0.5e6, 36.489e9);
        QCOMPARE(ticks.first(), QStringLiteral("36.4855 s"));
        QCOMPARE(QSet<QString>(ticks.begin(), ticks.end()).size(), ticks.size());
        // a 35 µs window: ticks every 5 µs
        QCOMPARE(formatTime(36.486505e9, 5e3, 36.4865e9), QStringLiteral("36.486505 s"));
        QVERIFY(formatTime(36.486505e9, 5e3) != formatTime(36.486510e9, 5e3));
        // a 2 s window after 465 s: ticks every 0.2 s
        QCOMPARE(formatTime(465.2e9, 0.2e9, 467e9), QStringLiteral("465.2 s"));
        QCOMPARE(formatTime(465.4e9, 0.2e9, 467e9), QStringLiteral("465.4 s"));
        // one unit per ruler: 0.5 s shown in seconds beside 1.0 s
        QCOMPARE(formatTime(0.5e9, 0.5e9, 2e9), QStringLiteral("0.5 s"));
        QCOMPARE(formatDuration(50e9), QStringLiteral("50 s"));
        QCOMPARE(formatDuration(100e9), QStringLiteral("100 s"));
        QCOMPARE(formatDuration(1.25e6), QStringLiteral("1.25 ms"));
        QCOMPARE(formatDuration(465.25e9), QStringLiteral("465.3 s"));
        QCOMPARE(formatCount(143.7e6), QStringLiteral("143.7 M"));
        QCOMPARE(formatBytes(32.0 * 1024 * 1024), QStringLiteral("32 MiB"));
        // a cell's hover text of a 2 s window after 465 s
        TimelineModel model;
        model.setPixelSize(100, 4);
        QVERIFY(model.applyTimeline(parseRecords(
            "timeline mode=window from=465000000000 to=467000000000 bins=100 width_ns=20000000 selected=1 "
            "rows=1 "
            "grouped=0 places_answered=1 places_total=1\nrow index=0 first_rank=0 last_rank=0 ranks=1\n")));
        const QString text = model.cellText(0, 10);
        QVERIFY2(text.contains(QStringLiteral("465.20 s … 465.22 s")), qPrintable(text));
    }

    // Any subset of a job of any size as single ranks: a filter and a vertical window of it.
    void rankSelection()
    {
        TimelineModel model;
        model.setPixelSize(800, 30);
        QVERIFY(model.visibleRankSet().isEmpty()); // the job's size is not known: every rank
        model.setTotalRanks(100000);
        QCOMPARE(model.selectedRanks(), 100000);
        QVERIFY(model.visibleRankSet().isEmpty()); // every rank: no --ranks
        QVERIFY(!model.timelineCommand().contains(QLatin1String("--ranks")));
        QString error;
        QVERIFY(model.setRankFilter(QStringLiteral("17, 0-3"), &error));
        QCOMPARE(model.rankFilter(), QStringLiteral("0-3,17"));
        QCOMPARE(model.selectedRanks(), 5);
        QCOMPARE(model.rankAtPosition(4), 17);
        QVERIFY(model.timelineCommand().contains(QLatin1String("--ranks 0-3,17")));
        QVERIFY(parses(model.timelineCommand()));
        QVERIFY(!model.setRankFilter(QStringLiteral("0-3,x"), &error));
        QVERIFY(error.contains(QLatin1String("0-3,17")));
        QStringList many;
        for (int i = 0; i < 33; i++)
            many << QString::number(i * 10);
        QVERIFY(!model.setRankFilter(many.join(QLatin1Char(',')), &error)); // a rank set has 32 items
        QVERIFY(!model.setRankFilter(QStringLiteral("200000-200010"), &error));
        QCOMPARE(model.rankFilter(), QStringLiteral("0-3,17")); // a refused filter changes nothing
        // a vertical window of the filtered ranks
        model.setRankWindow(2, 2);
        QCOMPARE(model.visibleRankSet(), QStringLiteral("2-3"));
        model.scrollRanks(1);
        QCOMPARE(model.visibleRankSet(), QStringLiteral("3,17"));
        model.scrollRanks(10); // clamped at the end
        QCOMPARE(model.visibleRankSet(), QStringLiteral("3,17"));
        // every rank again, then a window in the middle of 100000 ranks, zoomed around its middle
        QVERIFY(model.setRankFilter(QStringLiteral("all")));
        model.setRankWindow(500, 20);
        QCOMPARE(model.visibleRankSet(), QStringLiteral("500-519"));
        model.zoomRanks(0.5, 0.5);
        QCOMPARE(model.visibleRankSet(), QStringLiteral("505-514"));
        model.scrollRanks(-100000);
        QCOMPARE(model.visibleRankSet(), QStringLiteral("0-9"));
        model.showAllRanks();
        QVERIFY(model.visibleRankSet().isEmpty());
    }

    // The message filter keeps the messages whose tag, sender, receiver and size it allows; the empty
    // filter keeps every one.
    void messageFilterMatches()
    {
        using Filter = TimelineModel::MessageFilter;
        const auto message = [](int src, int dst, int tag, quint64 bytes) {
            TimelineModel::Message m;
            m.src = src;
            m.dst = dst;
            m.tag = tag;
            m.bytes = bytes;
            m.sent = 10;
            m.received = 20;
            return m;
        };
        Filter filter;
        QVERIFY(filter.isEmpty());
        QVERIFY(filter.text().isEmpty());
        QVERIFY(filter.matches(message(0, 1, 0, 0)));
        QVERIFY(filter.matches(message(70000, 3, 2147483647, UINT64_MAX)));
        for (const char *everything : {"", "  ", "all"}) {
            QVERIFY(Filter::parse(QLatin1String(everything), &filter));
            QVERIFY(filter.isEmpty());
        }
        // tags: a list of tags and ranges
        QVERIFY(Filter::parse(QStringLiteral("tag=42,0-9"), &filter));
        QCOMPARE(filter.text(), QStringLiteral("tag=0-9,42"));
        QVERIFY(!filter.isEmpty());
        QVERIFY(filter.matches(message(0, 1, 0, 8)));
        QVERIFY(filter.matches(message(0, 1, 9, 8)));
        QVERIFY(filter.matches(message(0, 1, 42, 8)));
        QVERIFY(!filter.matches(message(0, 1, 10, 8)));
        QVERIFY(!filter.matches(message(0, 1, 41, 8)));
        // sizes: from min to max bytes, both included
        QVERIFY(Filter::parse(QStringLiteral("min=64 max=4096"), &filter));
        QVERIFY(!filter.matches(message(0, 1, 0, 63)));
        QVERIFY(filter.matches(message(0, 1, 0, 64)));
        QVERIFY(filter.matches(message(0, 1, 0, 4096)));
        QVERIFY(!filter.matches(message(0, 1, 0, 4097)));
        QVERIFY(Filter::parse(QStringLiteral("max=0"), &filter)); // the empty messages only
        QVERIFY(filter.matches(message(0, 1, 0, 0)));
        QVERIFY(!filter.matches(message(0, 1, 0, 1)));
        // sender and receiver ranks: a pair of rank sets
        QVERIFY(Filter::parse(QStringLiteral("src=0-3 dst=4,6"), &filter));
        QVERIFY(filter.matches(message(3, 4, 5, 8)));
        QVERIFY(filter.matches(message(0, 6, 5, 8)));
        QVERIFY(!filter.matches(message(4, 3, 5, 8))); // the other direction
        QVERIFY(!filter.matches(message(3, 5, 5, 8)));
        QVERIFY(!filter.matches(message(7, 4, 5, 8)));
        // every term at once, in any order, spaces around
        QVERIFY(Filter::parse(QStringLiteral("  max=100 dst=1   tag=7 src=0 min=10 "), &filter));
        QCOMPARE(filter.text(), QStringLiteral("tag=7 src=0 dst=1 min=10 max=100"));
        QVERIFY(filter.matches(message(0, 1, 7, 50)));
        QVERIFY(!filter.matches(message(0, 1, 8, 50)));
        QVERIFY(!filter.matches(message(0, 2, 7, 50)));
        QVERIFY(!filter.matches(message(1, 1, 7, 50)));
        QVERIFY(!filter.matches(message(0, 1, 7, 101)));
        Filter again;
        QVERIFY(Filter::parse(filter.text(), &again)); // the canonical text reads back as the same filter
        QCOMPARE(again.text(), filter.text());
    }

    // A filter that does not parse is refused with the reason, and the filter in force stays.
    void messageFilterRefusesBadInput()
    {
        using Filter = TimelineModel::MessageFilter;
        const struct {
            const char *text, *reason;
        } bad[] = {
            {"tag=5-", "tag='5-' is not a list"},
            {"tag=abc", "tag='abc' is not a list"},
            {"src=3-1", "src='3-1' is not a list"},
            {"dst=", "dst='' is not a list"},
            {"abc", "'abc' is not a term"},
            {"=4", "'=4' is not a term"},
            {"size=4", "'size=' is none of"},
            {"min=-1", "min='-1' is not a size in bytes"},
            {"max=4k", "max='4k' is not a size in bytes"},
            {"min=+4", "min='+4' is not a size in bytes"},
            {"min=100 max=10", "min=100 is more than max=10"},
            {"tag=1 tag=2", "'tag=' is given twice"},
        };
        for (const auto &b : bad) {
            Filter filter;
            QString error;
            QVERIFY2(!Filter::parse(QLatin1String(b.text), &filter, &error), b.text);
            QVERIFY2(error.contains(QLatin1String(b.reason)), qPrintable(error));
        }
        QStringList many; // a tag list holds at most 32 ranges, as a rank set
        for (int i = 0; i < 33; i++)
            many << QString::number(i * 10);
        Filter filter;
        QVERIFY(!Filter::parse(QStringLiteral("tag=") + many.join(QLatin1Char(',')), &filter));

        TimelineModel model;
        QSignalSpy changed(&model, &TimelineModel::messageFilterChanged);
        QString error;
        QVERIFY(model.setMessageFilter(QStringLiteral("tag=0-9,42"), &error));
        QCOMPARE(changed.count(), 1);
        QVERIFY(!model.setMessageFilter(QStringLiteral("tag=5-"), &error));
        QVERIFY(error.contains(QLatin1String("'5-'")));
        QCOMPARE(model.messageFilter().text(), QStringLiteral("tag=0-9,42")); // unchanged
        QCOMPARE(changed.count(), 1);
        QVERIFY(model.setMessageFilter(QString()));
        QVERIFY(model.messageFilter().isEmpty());
    }

    // The messages of a recorded events answer: the filter says how many of them are shown.
    void messageFilterCountsShownMessages()
    {
        TimelineModel model;
        QVERIFY(model.applyEvents(reply("events")));
        const int total = int(model.messages().size());
        QVERIFY(total > 0);
        QCOMPARE(model.shownMessages(), total);
        const TimelineModel::Message first = model.messages().first();
        QVERIFY(model.setMessageFilter(
            QStringLiteral("src=%1 dst=%2 tag=%3").arg(first.src).arg(first.dst).arg(first.tag)));
        int expected = 0;
        for (const auto &m : model.messages())
            expected += m.src == first.src && m.dst == first.dst && m.tag == first.tag;
        QVERIFY(expected >= 1);
        QCOMPARE(model.shownMessages(), expected);
        QVERIFY(model.messageShown(first));
        QVERIFY(model.setMessageFilter(QStringLiteral("min=%1").arg(first.bytes + 1)));
        QVERIFY(!model.messageShown(first));
        QVERIFY(model.shownMessages() < total);
        QVERIFY(model.setMessageFilter(QStringLiteral("all")));
        QCOMPARE(model.shownMessages(), total);
    }

    // Grouped rows show no single events; picking fewer ranks than rows fit shows them for any subset.
    void singleEventsForASelectedSubset()
    {
        TimelineModel model;
        model.setPixelSize(500, 12);
        model.setTotalRanks(44);
        model.setEventsNsPerPixel(1000000000);
        QVERIFY(model.applyTimeline(parseRecords(
            "timeline mode=window from=0 to=500000 bins=500 width_ns=1000 selected=44 rows=12 grouped=1 "
            "places_answered=1 places_total=1\nrow index=0 first_rank=0 last_rank=3 ranks=4\n")));
        model.setViewport(0, 500000);
        QVERIFY(!model.wantsEvents()); // 44 ranks on 12 rows: groups
        QVERIFY(model.setRankFilter(QStringLiteral("0-3,17,40-43")));
        QVERIFY(model.applyTimeline(parseRecords(
            "timeline mode=window from=0 to=500000 bins=500 width_ns=1000 selected=9 rows=9 grouped=0 "
            "places_answered=1 places_total=1\nrow index=4 first_rank=17 last_rank=17 ranks=1\n")));
        QVERIFY(model.wantsEvents());
        QCOMPARE(model.eventsCommand(),
                 QStringLiteral("events --from 0ns --to 500000ns --ranks 0-3,17,40-43 --limit 20000"));
        QVERIFY(parses(model.eventsCommand()));
        QCOMPARE(model.slotCount(), 9);
        QCOMPARE(model.rowInSlot(4), 0);
    }

    // Back and forward walk the user's windows (time and ranks); a new window drops the forward ones.
    void zoomHistory()
    {
        TimelineModel model;
        model.setPixelSize(1000, 20);
        model.setTotalRanks(64);
        QVERIFY(model.applyTimeline(reply("timeline")));
        QVERIFY(!model.canGoBack());
        model.zoom(0.5, 0.5);
        const quint64 zoomedFrom = model.from();
        model.setRankWindow(8, 8);
        model.pan(0.25);
        QCOMPARE(model.historyDepth(), 3);
        model.back();
        QCOMPARE(model.from(), zoomedFrom);
        QCOMPARE(model.visibleRankSet(), QStringLiteral("8-15"));
        model.back();
        QVERIFY(model.visibleRankSet().isEmpty());
        model.back(); // the first window: everything held
        QVERIFY(model.showingAll());
        QVERIFY(model.timelineCommand().startsWith(QLatin1String("timeline --bins")));
        QVERIFY(!model.canGoBack());
        model.forward();
        QCOMPARE(model.from(), zoomedFrom);
        QVERIFY(model.canGoForward());
        model.zoom(2.0, 0.5); // a new window: the forward ones are gone
        QVERIFY(!model.canGoForward());
        model.showEverything();
        QVERIFY(model.showingAll());
        model.back();
        QVERIFY(!model.showingAll());
    }

    // What the viewer saw of pauses and recording becomes periods on the job's time axis: from the
    // later of the newest event held and the last status without it, to the first status without it.
    void steeringPeriods()
    {
        TimelineModel model;
        QSignalSpy changed(&model, &TimelineModel::dataChanged);
        model.observeSteering(0, 0, true, false); // a job that does not give its clock: nothing
        QVERIFY(model.periods().empty());
        model.observeSteering(1000, 900, true, false); // --start-paused: paused at the first status
        QCOMPARE(model.periods().size(), size_t(1));
        QCOMPARE(model.periods()[0].from, quint64(900));
        QVERIFY(model.periods()[0].open);
        model.observeSteering(2000, 950, true, false); // a late batch: recorded before the pause
        QCOMPARE(model.periods()[0].to, quint64(2000));
        QCOMPARE(model.periods()[0].from, quint64(950));
        model.observeSteering(3000, 2950, false, false); // resumed
        QVERIFY(!model.periods()[0].open);
        QCOMPARE(model.periods()[0].to, quint64(3000));
        model.observeSteering(4000, 3900, false, true); // recording off: began after the last status
        QCOMPARE(model.periods().size(), size_t(2));
        QCOMPARE(model.periods()[1].kind, TimelineModel::Period::NotRecording);
        QCOMPARE(model.periods()[1].from, quint64(3900));
        model.observeSteering(5000, 3900, false, false);
        QVERIFY(!model.periods()[1].open);
        QVERIFY(model.periodText(model.periods()[0]).startsWith(QLatin1String("application paused")));
        QVERIFY(changed.size() >= 5);
    }

    // A job that says when its ranks paused (status's paused_since, not_recording_since): the period
    // starts there exactly, however long before the status that first showed it, and late events held
    // no longer move it.
    void steeringPeriodsFromTheJob()
    {
        TimelineModel model;
        model.observeSteering(1000, 990, false, false);
        model.observeSteering(2000, 1500, true, false, 1200); // paused at 1200, seen at 2000
        QCOMPARE(model.periods().size(), size_t(1));
        QCOMPARE(model.periods()[0].from, quint64(1200));
        QVERIFY(model.periods()[0].exact);
        model.observeSteering(3000, 1600, true, false, 1200); // a late batch with an event at 1600
        QCOMPARE(model.periods()[0].from, quint64(1200));
        model.observeSteering(4000, 1600, false, false);
        QVERIFY(!model.periods()[0].open);
        QCOMPARE(model.periods()[0].to, quint64(4000));
        QVERIFY(model.periodText(model.periods()[0]).contains(QLatin1String("as the ranks said it")));
        // recording off, said by the job; a paused_since later than the answer's clock is not believed
        model.observeSteering(5000, 4500, false, true, 0, 4200);
        QCOMPARE(model.periods()[1].from, quint64(4200));
        model.observeSteering(6000, 4500, true, false, 9000);
        QCOMPARE(model.periods()[2].kind, TimelineModel::Period::AppPaused);
        QVERIFY(!model.periods()[2].exact);
        QCOMPARE(model.periods()[2].from, quint64(5000));
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

    // "Find function…": a name containing the text, whatever the case; the first match follows the order.
    void profileFindsFunctions()
    {
        ProfileModel model;
        QVERIFY(model.applyReply(reply("profile")));
        QVERIFY(model.matches(0, QString())); // an empty field shows every row
        QCOMPARE(model.firstMatch(QString()), -1);
        QCOMPARE(model.firstMatch(QStringLiteral("  ")), -1);
        QVERIFY(!model.matches(-1, QString()));
        QVERIFY(!model.matches(model.rowCount(), QString()));
        int comm = 0;
        for (int row = 0; row < model.rowCount(); row++)
            comm += model.matches(row, QStringLiteral(" COMM_ ")); // MPI_Comm_rank, MPI_Comm_size
        QCOMPARE(comm, 2);
        QCOMPARE(model.firstMatch(QStringLiteral("nothing like it")), -1);
        // MPI_Init (3.6 s exclusive), MPI_Isend (66 ms), MPI_Irecv (12 ms): the first in each order
        QCOMPARE(model.regionAt(model.firstMatch(QStringLiteral("mpi_i"))), QStringLiteral("MPI_Init"));
        model.sort(ProfileModel::Region, Qt::DescendingOrder);
        QCOMPARE(model.regionAt(model.firstMatch(QStringLiteral("mpi_i"))), QStringLiteral("MPI_Isend"));
        model.sort(ProfileModel::Exclusive, Qt::AscendingOrder);
        QCOMPARE(model.regionAt(model.firstMatch(QStringLiteral("mpi_i"))), QStringLiteral("MPI_Irecv"));
        QVERIFY(model.matches(model.firstMatch(QStringLiteral("WAITALL")), QStringLiteral("waitall")));
        QCOMPARE(model.regionAt(model.firstMatch(QStringLiteral("WAITALL"))), QStringLiteral("MPI_Waitall"));
    }
};

QTEST_GUILESS_MAIN(TestModels)
#include "test_models.moc"
