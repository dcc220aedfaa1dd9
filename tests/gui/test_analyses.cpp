// The analyses as views without widgets: each model against answers constructed here in the protocol's
// record lines (docs/protocol.md section 6) — critical path, wait states, structure (a group's ranks as the
// timeline's rank filter), the profile per rank,
// the message matrix and the metrics (table, selection, timeline) — and the commands they ask; then an
// archive written in the test from synthetic events with the store's OTF2 export, opened by the archive
// backend, served in-process and asked through the viewer's own protocol client, whose answers are known by
// construction.
#include "analyses.h"
#include "archive_backend.h"
#include "viewer.h"

#include <otfx/protocol.h>
#include <otfx/trace.h>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <cmath>

static Records lines(const char *text)
{
    int malformed = 0;
    const Records records = parseRecords(QByteArray(text), &malformed);
    if (malformed)
        qFatal("malformed constructed reply: %s", text);
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

static const quint64 MS = 1000000;

// Two ranks: rank 1 computes f (60 ms) then g (40 ms) and sends to rank 0, which computed h for 90 ms and
// waited for the message until 101 ms (a late sender of 10 ms); then rank 0 computes h until 130 ms,
// rank 1 g until 110 ms, and they meet in a barrier (rank 1 waits 20 ms there).
struct SyntheticRun {
    otfx_defs *defs = otfx_defs_create();
    otfx_trace *traces[2] = {};
    otfx_ref comm = 0, f = 0, g = 0, h = 0, send = 0, recv = 0, barrier = 0;

    void append(int rank, otfx_event e)
    {
        size_t appended = 0;
        QCOMPARE(otfx_trace_append(traces[rank], &e, 1, &appended), OTFX_OK);
    }
    void region(int rank, otfx_ref region, quint64 begin, quint64 end)
    {
        otfx_event e{};
        e.time = begin;
        e.type = OTFX_EV_ENTER;
        e.u.region.region = region;
        append(rank, e);
        e = otfx_event{};
        e.time = end;
        e.type = OTFX_EV_LEAVE;
        append(rank, e);
    }
    void message(int rank, otfx_event_type type, quint64 time, int peer)
    {
        otfx_event e{};
        e.time = time;
        e.type = type;
        e.u.msg.comm = comm;
        e.u.msg.peer = uint32_t(peer);
        e.u.msg.bytes = 800;
        e.u.msg.seq = 1;
        append(rank, e);
    }
    void build()
    {
        const uint32_t members[2] = {0, 1};
        QCOMPARE(otfx_defs_comm(defs, "MPI_COMM_WORLD", members, 2, &comm), OTFX_OK);
        QCOMPARE(otfx_defs_region(defs, "f", OTFX_ROLE_USER_FUNCTION, &f), OTFX_OK);
        QCOMPARE(otfx_defs_region(defs, "g", OTFX_ROLE_USER_FUNCTION, &g), OTFX_OK);
        QCOMPARE(otfx_defs_region(defs, "h", OTFX_ROLE_USER_FUNCTION, &h), OTFX_OK);
        QCOMPARE(otfx_defs_region(defs, "MPI_Send", OTFX_ROLE_MPI_P2P, &send), OTFX_OK);
        QCOMPARE(otfx_defs_region(defs, "MPI_Recv", OTFX_ROLE_MPI_P2P, &recv), OTFX_OK);
        QCOMPARE(otfx_defs_region(defs, "MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE, &barrier), OTFX_OK);
        for (int r = 0; r < 2; r++) {
            otfx_ref location;
            QCOMPARE(otfx_defs_location(defs, uint32_t(r), 0, &location), OTFX_OK);
            const otfx_trace_config config = otfx_trace_config_default(1 << 20);
            QCOMPARE(otfx_trace_create(&config, defs, location, &traces[r]), OTFX_OK);
        }
        region(1, f, 0, 60 * MS);
        region(1, g, 60 * MS, 100 * MS);
        otfx_event e{};
        e.time = 100 * MS;
        e.type = OTFX_EV_ENTER;
        e.u.region.region = send;
        append(1, e);
        message(1, OTFX_EV_SEND, 100 * MS, 0);
        e = otfx_event{};
        e.time = 101 * MS;
        e.type = OTFX_EV_LEAVE;
        append(1, e);
        region(0, h, 0, 90 * MS);
        e = otfx_event{};
        e.time = 90 * MS;
        e.type = OTFX_EV_ENTER;
        e.u.region.region = recv;
        append(0, e);
        message(0, OTFX_EV_RECV, 101 * MS, 1);
        e = otfx_event{};
        e.time = 101 * MS;
        e.type = OTFX_EV_LEAVE;
        append(0, e);
        region(0, h, 101 * MS, 130 * MS);
        region(1, g, 101 * MS, 110 * MS);
        const quint64 arrive[2] = {130 * MS, 110 * MS};
        for (int r = 0; r < 2; r++) {
            e = otfx_event{};
            e.time = arrive[r];
            e.type = OTFX_EV_ENTER;
            e.u.region.region = barrier;
            append(r, e);
            e = otfx_event{};
            e.time = arrive[r];
            e.type = OTFX_EV_COLL_BEGIN;
            e.u.coll.comm = comm;
            e.u.coll.seq = 1;
            e.u.coll.root = UINT32_MAX;
            append(r, e);
            e = otfx_event{};
            e.time = 131 * MS;
            e.type = OTFX_EV_COLL_END;
            e.u.coll.comm = comm;
            e.u.coll.seq = 1;
            e.u.coll.root = UINT32_MAX;
            append(r, e);
            e = otfx_event{};
            e.time = 131 * MS;
            e.type = OTFX_EV_LEAVE;
            append(r, e);
        }
    }
    ~SyntheticRun()
    {
        for (otfx_trace *t : traces)
            if (t)
                otfx_trace_destroy(t);
        otfx_defs_destroy(defs);
    }
};

class TestAnalyses : public QObject
{
    Q_OBJECT
  private slots:
    void criticalPath()
    {
        CriticalPathModel model;
        QVERIFY(!model.hasAnswer());
        const QString line =
            CriticalPathModel::command(QStringLiteral("--from 5ns --to 9ns"), QStringLiteral("my func"), 500);
        QCOMPARE(line, QStringLiteral("critical-path --from 5ns --to 9ns --zero my%20func --limit 500"));
        QVERIFY(parses(line));
        QVERIFY(parses(CriticalPathModel::command(QString(), QString())));
        QVERIFY(!model.applyReply(lines("profile from=0\n")));
        QVERIFY(model.applyReply(lines(
            "critical-path from=0 to=18446744073709551615 ranks=all length_ns=129000000 "
            "path_cpu_ns=129000000 "
            "cpu_ns=228000000 zero=f zeroed_ns=119000000 functions=2 segments=3 segments_total=5 truncated=1 "
            "walk_breaks=0 places_answered=2 places_total=2 partial=0\n"
            "cp-function name=f cp_ns=60000000 cp_share=0.465 cpu_ns=60000000 cpu_share=0.263 "
            "zeroed_ns=119000000\n"
            "cp-function name=g cp_ns=40000000 cp_share=0.31 cpu_ns=49000000 cpu_share=0.21\n"
            "cp-segment rank=1 thread=0 function=f start=0 end=60000000\n"
            "cp-segment rank=1 thread=0 function=g start=60000000 end=100000000\n"
            "cp-segment rank=0 thread=2 function=h start=101000000 end=130000000\n"
            "unseen streams=2 receives=1 receives_not_held=3 receives_stalled=0\n")));
        QCOMPARE(model.lengthNs(), 129 * MS);
        QCOMPARE(model.zero(), QStringLiteral("f"));
        QCOMPARE(model.zeroedNs(), 119 * MS);
        QVERIFY(model.truncated());
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.functions()[0].name, QStringLiteral("f"));
        QVERIFY(model.functions()[0].zeroed);
        QVERIFY(!model.functions()[1].zeroed);
        QCOMPARE(model.data(model.index(0, CriticalPathModel::OnPath), Qt::UserRole).toULongLong(), 60 * MS);
        QCOMPARE(model.data(model.index(1, CriticalPathModel::Zeroed)).toString(), QString());
        QCOMPARE(model.segments().size(), 3);
        QCOMPARE(model.segments()[2].rank, 0);
        QCOMPARE(model.segments()[2].thread, 2);
        QCOMPARE(model.segments()[2].start, 101 * MS);
        QVERIFY(model.summary().contains(QStringLiteral("3 of 5 segments")));
        QVERIFY(model.summary().contains(QStringLiteral("3 receives without their send")));
        QVERIFY(model.summary().contains(QStringLiteral("without f")));
        // no zero: the header says "-"
        QVERIFY(model.applyReply(lines("critical-path length_ns=5 zero=- truncated=0\n")));
        QCOMPARE(model.zero(), QString());
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(model.segments().isEmpty());
    }

    void waitStates()
    {
        WaitStatesModel model;
        QVERIFY(parses(WaitStatesModel::command(QStringLiteral("--from 1ns --to 2ns"))));
        QVERIFY(model.applyReply(lines(
            "wait-states from=0 to=18446744073709551615 ranks=all total_ns=30000000 late_sender_ns=10000000 "
            "late_receiver_ns=0 wait_nxn_ns=20000000 late_broadcast_ns=0 early_reduce_ns=0 functions=2 "
            "waiting_ranks=2 pairs=2 late_receiver_unknown=0 places_answered=1 places_total=1 partial=0\n"
            "ws-function name=MPI_Barrier kind=wait-nxn wait_ns=20000000 count=1 share=0.667\n"
            "ws-function name=MPI_Recv kind=late-sender wait_ns=10000000 count=1 share=0.333\n"
            "ws-rank rank=1 wait_ns=20000000 late_sender_ns=0 late_receiver_ns=0 wait_nxn_ns=20000000 "
            "late_broadcast_ns=0 early_reduce_ns=0\n"
            "ws-rank rank=0 wait_ns=10000000 late_sender_ns=10000000 late_receiver_ns=0 wait_nxn_ns=0 "
            "late_broadcast_ns=0 early_reduce_ns=0\n"
            "ws-pair waiting=1 causing=0 wait_ns=20000000 share=0.667\n"
            "ws-pair waiting=0 causing=1 wait_ns=10000000 share=0.333\n")));
        QCOMPARE(model.totalNs(), 30 * MS);
        QCOMPARE(model.kindNs(WaitStatesModel::LateSender), 10 * MS);
        QCOMPARE(model.kindNs(WaitStatesModel::WaitNxN), 20 * MS);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.data(model.index(0, WaitStatesModel::Function)).toString(),
                 QStringLiteral("MPI_Barrier"));
        QCOMPARE(model.data(model.index(1, WaitStatesModel::Kind)).toString(), QStringLiteral("late-sender"));
        QCOMPARE(model.ranks().size(), 2);
        QCOMPARE(model.ranks()[1].rank, 0);
        QCOMPARE(model.ranks()[1].byKind[WaitStatesModel::LateSender], 10 * MS);
        QCOMPARE(model.pairs()[0].waiting, 1);
        QCOMPARE(model.pairs()[0].causing, 0);
        QVERIFY(model.summary().contains(QStringLiteral("rank 1 waiting for rank 0")));

        // slices of [100, 400): three, each asked on its own, each rank's wait per slice
        QSignalSpy changed(&model, &WaitStatesModel::slicesChanged);
        const QStringList slices = model.startSlices(100, 400, 3);
        QCOMPARE(slices.size(), 3);
        for (const QString &line : slices)
            QVERIFY(parses(line));
        QCOMPARE(slices[1],
                 QStringLiteral("wait-states --from 200ns --to 300ns --top 4096 --limit 1 --no-flush"));
        QCOMPARE(model.slices()[2].to, quint64(400));
        QVERIFY(model.applySlice(
            1, lines("wait-states total_ns=7\nws-rank rank=3 wait_ns=7\nws-rank rank=0 wait_ns=2\n")));
        QVERIFY(!model.applySlice(5, lines("wait-states total_ns=7\n")));
        QVERIFY(!model.applySlice(0, lines("profile x=1\n")));
        QCOMPARE(model.slicesAnswered(), 1);
        QCOMPARE(model.slices()[1].waitNs.value(3), quint64(7));
        QCOMPARE(model.sliceMaximum(), quint64(7));
        QVERIFY(changed.count() >= 2);
        // a window narrower than the slices asked: one slice per ns at most
        QCOMPARE(model.startSlices(10, 12, 24).size(), 2);
        QCOMPARE(model.startSlices(10, 10, 24).size(), 0);
    }

    void structure()
    {
        StructureModel model;
        QCOMPARE(StructureModel::command(), QStringLiteral("structure --top 3"));
        QVERIFY(parses(StructureModel::command(5, 10)));
        QVERIFY(parses(StructureModel::command(3, qInf())));
        QCOMPARE(StructureModel::command(3, qInf()),
                 QStringLiteral("structure --top 3 --group-tolerance inf"));
        QCOMPARE(parseRankList(QStringLiteral("0,2-4,9")), (QVector<int>{0, 2, 3, 4, 9}));
        QVERIFY(parseRankList(QStringLiteral("none")).isEmpty());
        QVERIFY(parseRankList(QStringLiteral("3-1")).isEmpty());
        QVERIFY(model.applyReply(lines(
            "structure ranks=all selected=4 groups=2 tolerance_pct=2 places_answered=1 places_total=1\n"
            "group group=0 members=2 ranks=0,3 representative=0 nodes=2 edges=1 spread_pct=0.5 signature=ab\n"
            "node group=0 id=0 kind=mpi name=MPI_Send context=1/2 visits=10 time_ns=100 time_mean_ns=10\n"
            "node group=0 id=1 kind=loop name=main context=- visits=10 time_ns=50 time_mean_ns=5\n"
            "edge group=0 from=0 to=1 count=10 total_ns=1000 min_ns=90 max_ns=110 mean_ns=100 stddev_ns=5\n"
            "peer group=0 node=0 direction=send offset=+1 peer_group=1 count=10 bytes=80\n"
            "path group=0 anchor=1 count=9 nodes=1,0,1\n"
            "group group=1 members=2 ranks=1-2 representative=1 nodes=1 edges=0 spread_pct=0 signature=cd\n"
            "node group=1 id=0 kind=mpi name=MPI_Recv context=1/2 visits=10 time_ns=200 time_mean_ns=20\n")));
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.groups()[0].nodes.size(), 2);
        QCOMPARE(model.groups()[0].edges[0].meanNs, quint64(100));
        QCOMPARE(model.groups()[0].peers[0].offset, 1);
        QCOMPARE(model.groups()[0].peers[0].peerGroup, 1);
        QCOMPARE(model.groups()[0].paths[0].nodes, (QVector<int>{1, 0, 1}));
        QCOMPARE(model.groups()[1].nodes[0].name, QStringLiteral("MPI_Recv"));
        QCOMPARE(model.groupOfRank(3), 0);
        QCOMPARE(model.groupOfRank(2), 1);
        QCOMPARE(model.groupOfRank(7), -1);
        QCOMPARE(model.data(model.index(1, StructureModel::Ranks)).toString(), QStringLiteral("1-2"));
        QVERIFY(model.summary().contains(QStringLiteral("4 ranks in 2 groups")));
    }

    // A structure group's ranks become the timeline's rank filter: the text it takes, and then exactly the
    // group's ranks as its rows and in what it asks.
    void structureGroupAsRankFilter()
    {
        QStringList scattered; // 33 single ranks: more ranges than a rank filter holds
        for (int rank = 16; rank < 16 + 2 * 33; rank += 2)
            scattered << QString::number(rank);
        const QByteArray reply =
            QStringLiteral(
                "structure ranks=all selected=49 groups=3 tolerance_pct=2 places_answered=1 places_total=1\n"
                "group group=0 members=8 ranks=0-3,8-11 representative=0 nodes=0 edges=0 spread_pct=0 "
                "signature=ab\n"
                "group group=1 members=8 ranks=4,5,6,7,12-15 representative=4 nodes=0 edges=0 spread_pct=0 "
                "signature=cd\n"
                "group group=2 members=33 ranks=%1 representative=16 nodes=0 edges=0 spread_pct=0 "
                "signature=ef\n")
                .arg(scattered.join(QLatin1Char(',')))
                .toUtf8();
        StructureModel model;
        QVERIFY(model.applyReply(lines(reply.constData())));
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.rankFilterOf(0), QStringLiteral("0-3,8-11"));

        TimelineModel timeline;
        timeline.setTotalRanks(100);
        QSignalSpy filterChanged(&timeline, &TimelineModel::rankFilterChanged);
        QVERIFY(timeline.setRankFilter(model.rankFilterOf(0)));
        QCOMPARE(filterChanged.count(), 1);
        QCOMPARE(timeline.rankFilter(), QStringLiteral("0-3,8-11"));
        QCOMPARE(timeline.selectedRanks(), 8);
        QVector<int> rows;
        for (int position = 0; position < timeline.rankCount(); position++)
            rows << timeline.rankAtPosition(position);
        QCOMPARE(rows, (QVector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
        QCOMPARE(timeline.rankAtPosition(8), -1);
        QCOMPARE(timeline.visibleRankSet(), QStringLiteral("0-3,8-11"));
        QVERIFY(timeline.timelineCommand().contains(QStringLiteral(" --ranks 0-3,8-11 ")));
        QVERIFY(parses(timeline.timelineCommand()));

        // a group written rank by rank: the filter shows it in ranges
        QVERIFY(timeline.setRankFilter(model.rankFilterOf(1)));
        QCOMPARE(timeline.rankFilter(), QStringLiteral("4-7,12-15"));
        QCOMPARE(timeline.selectedRanks(), 8);

        // a group of more ranges than a filter holds, or no group: refused with the reason, filter kept
        QString why;
        QVERIFY(model.rankFilterOf(2, &why).isEmpty());
        QVERIFY2(why.contains(QStringLiteral("33 ranges")) && why.contains(QStringLiteral("at most 32")),
                 qPrintable(why));
        QVERIFY(model.rankFilterOf(3, &why).isEmpty());
        QVERIFY(model.rankFilterOf(-1, &why).isEmpty());
        QVERIFY(!why.isEmpty());
        QCOMPARE(timeline.rankFilter(), QStringLiteral("4-7,12-15"));
        QCOMPARE(filterChanged.count(), 2);
    }

    void rankProfile()
    {
        RankProfileModel model;
        // 5 ranks in at most 2 groups: 0-2 and 3-4, as the protocol groups
        QStringList commands = model.start(5, QStringLiteral("--from 1ns --to 9ns"), false, 2);
        QCOMPARE(commands, (QStringList{QStringLiteral("profile --from 1ns --to 9ns --ranks 0-2"),
                                        QStringLiteral("profile --from 1ns --to 9ns --ranks 3-4")}));
        commands = model.start(3, QString(), true);
        QCOMPARE(commands.size(), 3);
        QCOMPARE(commands[2], QStringLiteral("profile --ranks 2 --compensated"));
        for (const QString &line : commands)
            QVERIFY(parses(line));
        QVERIFY(model.compensated());
        QVERIFY(!model.grouped());
        QSignalSpy progressed(&model, &RankProfileModel::progressed);
        QVERIFY(model.applyGroupReply(
            0, lines("profile approximate=0\n"
                     "region name=work role=user visits=2 inclusive_ns=90 exclusive_ns=80\n"
                     "region name=MPI_Recv role=p2p visits=2 inclusive_ns=10 exclusive_ns=10\n")));
        QVERIFY(!model.complete());
        QVERIFY(model.applyGroupReply(
            2, lines("profile approximate=1\n"
                     "region name=work role=user visits=2 inclusive_ns=40 exclusive_ns=40\n"
                     "region name=MPI_Recv role=p2p visits=2 inclusive_ns=60 exclusive_ns=60\n")));
        QVERIFY(model.applyGroupReply(
            1, lines("profile approximate=0\n"
                     "region name=work role=user visits=2 inclusive_ns=60 exclusive_ns=60\n")));
        QVERIFY(!model.applyGroupReply(3, lines("profile approximate=0\n")));
        QVERIFY(!model.applyGroupReply(0, lines("timeline x=1\n")));
        QCOMPARE(progressed.count(), 3);
        QVERIFY(model.complete());
        QVERIFY(model.approximate()); // one answer pro-rated a reduced range
        QVERIFY(model.summary().contains(QStringLiteral("approximate")));
        QCOMPARE(model.rowCount(), 2);
        // sorted by the maximum per rank, descending: work (max 80) before MPI_Recv (max 60)
        const int work = model.rowOf(QStringLiteral("work")), recv = model.rowOf(QStringLiteral("MPI_Recv"));
        QCOMPARE(work, 0);
        const RankProfileModel::Entry &w = model.entries()[work];
        QCOMPARE(w.min, 40.0);
        QCOMPARE(w.max, 80.0);
        QCOMPARE(w.mean, 60.0);
        QCOMPARE(w.total, 180.0);
        QCOMPARE(model.data(model.index(work, RankProfileModel::MaxRank)).toString(), QStringLiteral("0"));
        const RankProfileModel::Entry &r = model.entries()[recv];
        QCOMPARE(r.min, 0.0); // rank 1 never entered it
        QCOMPARE(r.max, 60.0);
        QCOMPARE(r.mean, 70.0 / 3.0);
        QCOMPARE(model.bars(QStringLiteral("MPI_Recv")), (QVector<double>{10.0, 0.0, 60.0}));
        model.sort(RankProfileModel::Region, Qt::AscendingOrder);
        QCOMPARE(model.entries()[0].name, QStringLiteral("MPI_Recv"));
        model.setMetric(RankProfileModel::Visits);
        QCOMPARE(model.entries()[0].name, QStringLiteral("MPI_Recv")); // the order survives
        QCOMPARE(model.entries()[model.rowOf(QStringLiteral("work"))].max, 2.0);
        // grouped: a group's bar is its mean per rank
        model.setMetric(RankProfileModel::Exclusive);
        commands = model.start(4, QString(), false, 2);
        QVERIFY(model.grouped());
        QVERIFY(model.applyGroupReply(
            0, lines("profile approximate=0\nregion name=a role=user exclusive_ns=100\n")));
        QCOMPARE(model.bars(QStringLiteral("a")), (QVector<double>{50.0, 0.0}));
    }

    void matrix()
    {
        MessageMatrixModel model;
        QCOMPARE(MessageMatrixModel::command(QString(), 8), QStringLiteral("messages --groups 8"));
        QVERIFY(parses(MessageMatrixModel::command(QStringLiteral("--from 1ns --to 2ns"))));
        QSignalSpy changed(&model, &MessageMatrixModel::changed);
        QVERIFY(model.applyReply(lines(
            "matrix from=0 to=18446744073709551615 ranks=all selected=6 groups=3 grouped=1 cells=3 count=7 "
            "bytes=700 places_answered=1 places_total=1\n"
            "messages src=0 dst=1 src_first=0 src_last=1 dst_first=2 dst_last=3 count=4 bytes=400\n"
            "messages src=1 dst=0 src_first=2 src_last=3 dst_first=0 dst_last=1 count=2 bytes=200\n"
            "messages src=2 dst=2 src_first=4 src_last=5 dst_first=4 dst_last=5 count=1 bytes=100\n"
            "messages src=9 dst=0 count=1 bytes=1\n")));
        QCOMPARE(changed.count(), 1);
        QCOMPARE(model.groups(), 3);
        QVERIFY(model.grouped());
        QCOMPARE(model.cell(0, 1).count, quint64(4));
        QCOMPARE(model.cell(1, 0).bytes, quint64(200));
        QCOMPARE(model.cell(1, 1).count, quint64(0));
        QCOMPARE(model.cell(9, 0).count, quint64(0)); // outside the matrix: ignored
        QCOMPARE(model.maximum(false), quint64(4));
        QCOMPARE(model.maximum(true), quint64(400));
        QCOMPARE(model.cellsUsed(), 3);
        QCOMPARE(model.label(1), QStringLiteral("2–3"));
        QCOMPARE(model.totalCount(), quint64(7));
        QVERIFY(model.summary().contains(QStringLiteral("3 pairs")));
        model.clear();
        QVERIFY(!model.hasAnswer());
        QCOMPARE(model.groups(), 0);
    }

    // The archive backend: a run written here as OTF2, opened, served in-process, asked through the
    // viewer's protocol client like a live job.
    void metrics()
    {
        MetricsModel model;
        QCOMPARE(MetricsModel::availableCommand(), QStringLiteral("metrics available"));
        QCOMPARE(MetricsModel::listCommand(), QStringLiteral("metrics list"));
        QVERIFY(parses(MetricsModel::availableCommand()));
        QVERIFY(parses(MetricsModel::listCommand()));
        const QString set =
            MetricsModel::setCommand({QStringLiteral("task-clock"), QStringLiteral("page-faults")});
        QCOMPARE(set, QStringLiteral("metrics set task-clock,page-faults"));
        QVERIFY(parses(set));
        QCOMPARE(MetricsModel::setCommand({}), QStringLiteral("metrics set none"));
        QVERIFY(parses(MetricsModel::setCommand({})));
        // names the protocol would refuse are not sent
        QVERIFY(MetricsModel::setCommand({QStringLiteral("task clock")}).isEmpty());
        QStringList seventeen;
        for (int i = 0; i < 17; i++)
            seventeen << QStringLiteral("m%1").arg(i);
        QVERIFY(MetricsModel::setCommand(seventeen).isEmpty());
        const QString timeline =
            MetricsModel::timelineCommand(QStringLiteral("task-clock"), 5, 9, 640, QStringLiteral("0-3"));
        QCOMPARE(timeline,
                 QStringLiteral("metric-timeline task-clock --from 5ns --to 9ns --bins 640 --ranks 0-3"));
        QVERIFY(parses(timeline));
        // more columns than the protocol takes are capped, not refused
        QVERIFY(MetricsModel::timelineCommand(QStringLiteral("task-clock"), 0, 10, 20000)
                    .endsWith(QStringLiteral("--bins 10000")));

        // the table: two places, each its ranks' counts; a hardware counter refused on every rank
        QVERIFY(!model.applyAvailable(lines("metrics ranks=0-3 place=0 selected=none\n")));
        QVERIFY(model.applyAvailable(lines(
            "place place=0 ok=1\n"
            "metric name=task-clock place=0 unit=ns source=perf-software accumulated=1 counted_ranks=2 "
            "refused_ranks=0 help=CPU%20time\n"
            "metric name=cycles place=0 unit=cycles source=perf-hardware accumulated=1 counted_ranks=0 "
            "refused_ranks=2 reason=perf_event_open:%20No%20such%20file%20or%20directory help=cycles\n"
            "place place=1 ok=1\n"
            "metric name=task-clock place=1 unit=ns source=perf-software accumulated=1 counted_ranks=2 "
            "refused_ranks=0 help=CPU%20time\n"
            "metric name=cycles place=1 unit=cycles source=perf-hardware accumulated=1 counted_ranks=0 "
            "refused_ranks=2 reason=perf_event_open:%20No%20such%20file%20or%20directory help=cycles\n")));
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.metrics()[0].name, QStringLiteral("task-clock"));
        QCOMPARE(model.metrics()[0].countedRanks, 4);
        QCOMPARE(model.metrics()[1].refusedRanks, 4);
        QCOMPARE(model.metrics()[1].reason, QStringLiteral("perf_event_open: No such file or directory"));
        QCOMPARE(model.data(model.index(0, MetricsModel::Counted)).toString(), QStringLiteral("4 ranks"));
        QVERIFY(model.data(model.index(1, MetricsModel::Counted))
                    .toString()
                    .contains(QStringLiteral("refused: perf_event_open: No such file")));
        QCOMPARE(model.data(model.index(0, MetricsModel::Unit)).toString(), QStringLiteral("ns"));
        QCOMPARE(model.data(model.index(0, MetricsModel::Selected)).toString(), QStringLiteral("no"));

        // the selection: ranks that read task-clock, and ranks that cannot count cycles, with why
        QVERIFY(model.applySelection(
            lines("metrics ranks=0-1 place=0 selected=task-clock,cycles counted=task-clock refused=cycles\n"
                  "refused ranks=0-1 place=0 metric=cycles reason=no%20hardware%20PMU\n"
                  "metrics ranks=2-3 place=1 selected=task-clock counted=task-clock refused=none\n")));
        QCOMPARE(model.selection().size(), 2);
        QCOMPARE(model.selection()[1].refused, QStringList());
        QCOMPARE(model.selectedNames(),
                 (QStringList{QStringLiteral("task-clock"), QStringLiteral("cycles")}));
        QCOMPARE(model.refusals().size(), 1);
        QCOMPARE(model.refusals()[0].reason, QStringLiteral("no hardware PMU"));
        QCOMPARE(model.data(model.index(0, MetricsModel::Selected)).toString(), QStringLiteral("yes"));
        QVERIFY(model.summary().contains(QStringLiteral("2 metrics, 1 counted")));

        // a partial timeline (one of two places), then the final one; "-" is a cell without data
        QSignalSpy changed(&model, &MetricsModel::timelineChanged);
        QVERIFY(!model.applyTimeline(lines("timeline mode=window bins=3\n"), true));
        QVERIFY(model.applyTimeline(
            lines("partial partial=1 answered=1 total=2\n"
                  "metric-timeline metric=task-clock unit=ns mode=window from=0 to=300 bins=3 width_ns=100 "
                  "ranks=all selected=4 rows=4 places_answered=1 places_total=2\n"
                  "row index=0 first_rank=0 last_rank=0 min_per_s=1,-,3 mean_per_s=2,-,4 max_per_s=3,-,5 "
                  "covered_ns=100,0,100\n"),
            false));
        QVERIFY(model.timelinePartial());
        QCOMPARE(model.rows().size(), 1);
        QVERIFY(std::isnan(model.rows()[0].mean[1]));
        QVERIFY(model.timelineSummary().contains(QStringLiteral("partial: 1 of 2 places")));
        QVERIFY(model.applyTimeline(
            lines("metric-timeline metric=task-clock unit=ns mode=window from=0 to=300 bins=3 width_ns=100 "
                  "ranks=all selected=4 rows=4 places_answered=2 places_total=2\n"
                  "row index=0 first_rank=0 last_rank=0 min_per_s=1,-,3 mean_per_s=2,-,4 max_per_s=3,-,5 "
                  "covered_ns=100,0,100\n"
                  "row index=2 first_rank=2 last_rank=3 min_per_s=5,6,7 mean_per_s=8,9,10 max_per_s=11,12,13 "
                  "covered_ns=100,100,100\n"),
            true));
        QCOMPARE(changed.count(), 2);
        QVERIFY(!model.timelinePartial());
        QCOMPARE(model.timelineMetric(), QStringLiteral("task-clock"));
        QCOMPARE(model.bins(), 3);
        QCOMPARE(model.rows().size(), 2);
        QCOMPARE(model.rows()[1].min, (QVector<double>{5, 6, 7}));
        QCOMPARE(model.rows()[1].max[2], 13.0);
        QCOMPARE(model.rowLabel(1), QStringLiteral("2–3"));
        QCOMPARE(model.maximumMean(), 10.0);
        model.clear();
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(!model.hasTimeline());
        QVERIFY(model.selectedNames().isEmpty());
    }

    void archiveServedToTheViewer()
    {
        QTemporaryDir directory;
        QVERIFY(directory.isValid());
        {
            SyntheticRun run;
            run.build();
            if (QTest::currentTestFailed())
                return;
            otfx_export_options options = otfx_export_options_default();
            QCOMPARE(otfx_otf2_export(QFile::encodeName(directory.path()).constData(), "synthetic", run.defs,
                                      run.traces, 2, &options),
                     OTFX_OK);
        }
        ArchiveBackend backend;
        QSignalSpy failed(&backend, &ArchiveBackend::failed);
        QSignalSpy opened(&backend, &ArchiveBackend::opened);
        backend.open(directory.path() + QStringLiteral("/missing.otf2"));
        QCOMPARE(failed.count(), 1);
        QVERIFY(failed[0][0].toString().contains(QStringLiteral("missing.otf2")));
        backend.open(directory.path()); // the directory's one anchor file
        QVERIFY(backend.opening());
        QVERIFY(opened.wait(30000));
        QVERIFY(backend.serving());
        QVERIFY(backend.description().contains(QStringLiteral("2 ranks")));
        const SessionInfo session = opened[0][0].value<SessionInfo>();
        QVERIFY(session.valid());
        QCOMPARE(session.startedNs, quint64(0)); // times read from the archive's first event

        Viewer viewer;
        Analyses analyses(&viewer);
        viewer.connectToSession(session);
        QTRY_VERIFY_WITH_TIMEOUT(viewer.client()->state() == ProtocolClient::Connected, 30000);
        QCOMPARE(viewer.client()->welcome().value("job"), QStringLiteral("archive:synthetic"));
        QTRY_VERIFY_WITH_TIMEOUT(viewer.status()->lastTime() == 131 * MS, 30000);
        QCOMPARE(viewer.status()->appState(), QStringLiteral("finished"));

        // asked twice at once: the newer question supersedes the older one, whose answer is dropped
        QVERIFY(analyses.askCriticalPath(QStringLiteral("g")));
        QVERIFY(analyses.askCriticalPath(QStringLiteral("f")));
        QVERIFY(analyses.askWaitStates(4));
        QVERIFY(analyses.askRankProfile());
        QVERIFY(analyses.askMatrix());
        QVERIFY(analyses.askStructure());
        QTRY_COMPARE_WITH_TIMEOUT(analyses.pending(), 0, 60000);
        QCOMPARE(analyses.lastError(), QString());

        // known by construction: the path runs through rank 1's f and g, the message, rank 0's h
        const CriticalPathModel *cp = analyses.criticalPath();
        QCOMPARE(cp->lengthNs(), 129 * MS);
        QCOMPARE(cp->zeroedNs(), 119 * MS);
        QCOMPARE(cp->functions()[0].name, QStringLiteral("f"));
        QCOMPARE(cp->segments().size(), 3);
        QCOMPARE(cp->segments()[0].rank, 1);
        QCOMPARE(cp->segments()[2].rank, 0);
        QCOMPARE(cp->segments()[2].start, 101 * MS);

        const WaitStatesModel *ws = analyses.waitStates();
        QCOMPARE(ws->kindNs(WaitStatesModel::LateSender), 10 * MS);
        QCOMPARE(ws->kindNs(WaitStatesModel::WaitNxN), 20 * MS);
        QCOMPARE(ws->slices().size(), 4);
        QCOMPARE(ws->slicesAnswered(), 4);
        quint64 sliced = 0;
        for (const auto &slice : ws->slices())
            for (quint64 v : slice.waitNs)
                sliced += v;
        QVERIFY(sliced > 0);

        const RankProfileModel *profile = analyses.rankProfile();
        QVERIFY(profile->complete());
        QVERIFY(!profile->approximate());
        const RankProfileModel::Entry &h = profile->entries()[profile->rowOf(QStringLiteral("h"))];
        QCOMPARE(h.max, double(119 * MS));
        QCOMPARE(h.min, 0.0);
        QCOMPARE(profile->bars(QStringLiteral("g")), (QVector<double>{0.0, double(49 * MS)}));

        QCOMPARE(analyses.matrix()->groups(), 2);
        QCOMPARE(analyses.matrix()->cell(1, 0).count, quint64(1));
        QCOMPARE(analyses.matrix()->cell(1, 0).bytes, quint64(800));
        QCOMPARE(analyses.matrix()->cell(0, 1).count, quint64(0));
        QVERIFY(analyses.structure()->groups().size() >= 1);

        // the compensated profile of an archive without measured costs answers with the same times
        QVERIFY(analyses.ask(QStringLiteral("compensated")));
        QTRY_COMPARE_WITH_TIMEOUT(analyses.pending(), 0, 60000);
        QVERIFY(analyses.rankProfile()->compensated());
        QCOMPARE(analyses.rankProfile()->entries()[analyses.rankProfile()->rowOf(QStringLiteral("h"))].max,
                 double(119 * MS));

        // steering a finished run is refused with why, and the viewer says so
        const quint32 id = viewer.command(QStringLiteral("record pause"));
        QVERIFY(id);
        QTRY_COMPARE_WITH_TIMEOUT(viewer.state().value(QStringLiteral("commands_answered")),
                                  QStringLiteral("1"), 30000);
        QCOMPARE(viewer.state().value(QStringLiteral("last_ok")), QStringLiteral("0"));
        QVERIFY(viewer.lastAnswer().contains(QStringLiteral("archive")));
        // so is choosing what the ranks read: the metrics view says why, through the analyses' failure
        QSignalSpy analysisFailed(&analyses, &Analyses::failed);
        QVERIFY(analyses.setMetrics({QStringLiteral("task-clock")}));
        QTRY_COMPARE_WITH_TIMEOUT(analysisFailed.count(), 1, 30000);
        QCOMPARE(analysisFailed[0][0].toString(), QStringLiteral("metrics"));
        QVERIFY(analyses.lastError().contains(QStringLiteral("metrics")));

        // closing the archive ends the "job"
        backend.close();
        QTRY_VERIFY_WITH_TIMEOUT(
            viewer.jobEnded() || viewer.client()->state() == ProtocolClient::Disconnected, 30000);
    }
};

QTEST_GUILESS_MAIN(TestAnalyses)
#include "test_analyses.moc"
