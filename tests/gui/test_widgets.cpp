// The widgets on the Xvfb screen, fed with recorded replies: the timeline asks for its pixel size,
// wheel / drag / right-drag / double-click change the window as documented, it draws the role colours
// and single events, hover text; the main window's status bar, the profile click that highlights a
// region in the timeline and the profile's function search.
#include "analyses_panel.h"
#include "connect_dialog.h"
#include "format.h"
#include "main_window.h"
#include "mini_server.h"
#include "overview_view.h"
#include "script_runner.h"
#include "snapshot_dialog.h"
#include "timeline_view.h"
#include "viewer.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest/QtTest>

static Records reply(const char *name)
{
    QFile file(QStringLiteral(OTFX_GUI_REPLIES "/%1.txt").arg(QLatin1String(name)));
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read recorded reply %s", name);
    return parseRecords(file.readAll());
}

static int pixelsOf(const QImage &image, const QColor &colour)
{
    int count = 0;
    for (int y = 0; y < image.height(); y++)
        for (int x = 0; x < image.width(); x++)
            count += QColor(image.pixel(x, y)) == colour;
    return count;
}

// The view shows the recorded `events` answer as single events, in the window it was asked for.
static bool showRecordedEvents(TimelineModel &model, TimelineView &view)
{
    view.resize(900, 400);
    view.show();
    if (!QTest::qWaitForWindowExposed(&view) || !model.applyTimeline(reply("timeline")))
        return false;
    const Records events = reply("events");
    const Record &h = *findRecord(events, "events");
    model.setViewport(h.u64("from"), h.u64("to"));
    model.setEventsNsPerPixel(1000000);
    return model.wantsEvents() && model.applyEvents(events);
}

static const char *const HeldHeader =
    "timeline mode=window from=%1 to=%2 bins=%3 width_ns=1 selected=%4 rows=%4 grouped=0 places_answered=1 "
    "places_total=1\n";

// A session file as jobs write it (mode 0600) for a job at 127.0.0.1:port.
static QString writeSession(const QTemporaryDir &dir, const QString &job, quint16 port)
{
    const QString path = dir.filePath(QStringLiteral("otfx-session-%1.txt").arg(job));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return QString();
    file.write(QStringLiteral("session address=127.0.0.1 port=%1 token=%2 job=%3\n")
                   .arg(port)
                   .arg(QLatin1String(Token), job)
                   .toUtf8());
    file.close();
    file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    return path;
}

class TestWidgets : public QObject
{
    Q_OBJECT
  private slots:
    void timelineViewInteraction()
    {
        TimelineModel model;
        TimelineView view(&model);
        view.resize(900, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const QRect plot = view.plotRect();
        QCOMPARE(model.bins(), plot.width()); // one bin per pixel
        QCOMPARE(model.rowsWanted(), plot.height() / 12);

        QVERIFY(model.applyTimeline(reply("timeline")));
        QVERIFY(model.hasViewport());
        const QImage image = view.grab().toImage();
        QVERIFY(pixelsOf(image, TimelineView::roleColor(QStringLiteral("collective"))) > 1000);
        QVERIFY(pixelsOf(image, TimelineView::roleColor(QStringLiteral("p2p"))) > 0);
        const QString tip = view.tooltipAt(plot.center());
        QVERIFY2(tip.contains(QLatin1String("rank")) && tip.contains(QLatin1String("region")),
                 qPrintable(tip));
        QVERIFY(view.tooltipAt(QPoint(2, 2)).isEmpty());

        // wheel: zoom in by 0.8 per notch around the cursor
        quint64 span = model.to() - model.from();
        const QPointF at(plot.left() + plot.width() / 2.0, plot.center().y());
        QWheelEvent wheel(at, view.mapToGlobal(at.toPoint()), QPoint(), QPoint(0, 120), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
        QCoreApplication::sendEvent(&view, &wheel);
        QVERIFY(std::abs(double(model.to() - model.from()) - 0.8 * double(span)) < 0.001 * double(span));

        // drag with the left button: pan (content follows the mouse: dragging left shows later times)
        span = model.to() - model.from();
        const quint64 from = model.from();
        QTest::mousePress(&view, Qt::LeftButton, Qt::NoModifier,
                          QPoint(plot.left() + 400, plot.center().y()));
        QTest::mouseMove(&view, QPoint(plot.left() + 300, plot.center().y()));
        QTest::mouseRelease(&view, Qt::LeftButton, Qt::NoModifier,
                            QPoint(plot.left() + 300, plot.center().y()));
        const double expected = double(from) + 100.0 / plot.width() * double(span);
        QVERIFY(std::abs(double(model.from()) - expected) < 0.01 * double(span));
        QCOMPARE(model.to() - model.from(), span);

        // right-drag: zoom to the dragged range
        const quint64 t0 = model.from() + quint64(double(span) * 100.0 / plot.width());
        const quint64 t1 = model.from() + quint64(double(span) * 300.0 / plot.width());
        QTest::mousePress(&view, Qt::RightButton, Qt::NoModifier,
                          QPoint(plot.left() + 100, plot.center().y()));
        QTest::mouseMove(&view, QPoint(plot.left() + 300, plot.center().y()));
        QTest::mouseRelease(&view, Qt::RightButton, Qt::NoModifier,
                            QPoint(plot.left() + 300, plot.center().y()));
        QVERIFY(std::abs(double(model.from()) - double(t0)) < 0.01 * double(span));
        QVERIFY(std::abs(double(model.to()) - double(t1)) < 0.01 * double(span));

        // double click: everything held
        QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, plot.center());
        QVERIFY(!model.hasViewport());
    }

    void singleEventsAreDrawn()
    {
        TimelineModel model;
        TimelineView view(&model);
        QVERIFY(showRecordedEvents(model, view));
        const QImage image = view.grab().toImage();
        QVERIFY(pixelsOf(image, TimelineView::roleColor(QStringLiteral("collective"))) > 1000);
        // some pixel row of rank 0 hovers over a named region instance
        const QRect plot = view.plotRect();
        bool named = false;
        for (int x = plot.left(); x < plot.right() && !named; x += 10)
            named = view.tooltipAt(QPoint(x, plot.top() + 5)).contains(QLatin1String("MPI_"));
        QVERIFY(named);

        // every message's line runs from its sender's row to its receiver's, and hovering on it names it
        QVERIFY(!model.messages().isEmpty());
        int hovered = 0;
        for (const auto &message : model.messages()) {
            const std::optional<QLineF> line = view.messageLine(message);
            QVERIFY(line);
            QVERIFY(line->p1().y() != line->p2().y()); // src != dst: different rows
            QCOMPARE(line->p1().y() < line->p2().y(), message.src < message.dst);
            const QString text = view.tooltipAt(line->center().toPoint());
            QVERIFY2(text.startsWith(QLatin1String("message rank ")), qPrintable(text));
            hovered += text == model.messageText(message); // unless another line crosses it there
        }
        QVERIFY(hovered > 0);
        TimelineModel::Message offScreen = model.messages().first(); // to a rank not shown: not drawn
        offScreen.dst = 99;
        QVERIFY(!view.messageLine(offScreen));
    }

    // Messages the model's filter hides have no line: neither drawn nor hovered; the others keep theirs,
    // and the mode text says how many of how many are shown.
    void filteredMessagesAreNeitherDrawnNorHovered()
    {
        TimelineModel model;
        TimelineView view(&model);
        QVERIFY(showRecordedEvents(model, view));
        QVERIFY(!view.modeText().contains(QLatin1String("messages shown"))); // no filter: nothing said
        // a message hovered on its line, unfiltered
        const TimelineModel::Message *hidden = nullptr;
        QPoint where;
        for (const auto &message : model.messages()) {
            const QPoint centre = view.messageLine(message)->center().toPoint();
            if (view.tooltipAt(centre) == model.messageText(message)) {
                hidden = &message;
                where = centre;
                break;
            }
        }
        QVERIFY(hidden);
        // hide its sender's messages
        const QString senders =
            hidden->src > 0 ? QStringLiteral("0-%1").arg(hidden->src - 1) : QStringLiteral("1-100000");
        QSignalSpy repainted(&model, &TimelineModel::dataChanged);
        QVERIFY(model.setMessageFilter(QStringLiteral("src=") + senders));
        QCOMPARE(repainted.count(), 1);
        QVERIFY(!model.messageShown(*hidden));
        QVERIFY(!view.messageLine(*hidden));
        QVERIFY(view.tooltipAt(where) != model.messageText(*hidden));
        int lines = 0;
        for (const auto &message : model.messages()) {
            QCOMPARE(bool(view.messageLine(message)), model.messageShown(message));
            lines += model.messageShown(message);
            if (message.src == hidden->src)
                QVERIFY(!view.messageLine(message));
        }
        QCOMPARE(lines, model.shownMessages());
        QVERIFY2(view.modeText().contains(QStringLiteral("%1 of %2 messages shown (%3)")
                                              .arg(model.shownMessages())
                                              .arg(model.messages().size())
                                              .arg(model.messageFilter().text())),
                 qPrintable(view.modeText()));
        // no message passes: no line at all, nothing hovered as a message
        QVERIFY(model.setMessageFilter(QStringLiteral("tag=65000")));
        QCOMPARE(model.shownMessages(), 0);
        for (const auto &message : model.messages())
            QVERIFY(!view.messageLine(message));
        QVERIFY(!view.tooltipAt(where).startsWith(QLatin1String("message rank ")));
        // cleared: every line back
        QVERIFY(model.setMessageFilter(QString()));
        QCOMPARE(view.tooltipAt(where), model.messageText(*hidden));
    }

    // The arrow head sits on the receive end and points along the line, whatever its direction.
    void messageArrowHeadPointsToTheReceiver()
    {
        const QPolygonF right = TimelineView::arrowHead(QLineF(10, 50, 110, 50));
        QCOMPARE(right.size(), 3);
        QCOMPARE(right[0], QPointF(110, 50));
        for (int i = 1; i < 3; i++) {
            QVERIFY(right[i].x() < 110 && right[i].x() > 100);
            QVERIFY(std::abs(right[i].y() - 50) > 1 && std::abs(right[i].y() - 50) < 5);
        }
        const QLineF down(40, 10, 40, 90); // sent on an upper row, received on a lower one
        const QPolygonF head = TimelineView::arrowHead(down);
        QCOMPARE(head[0], down.p2());
        const QPointF base = (head[1] + head[2]) / 2;
        QVERIFY(base.y() < down.p2().y() && std::abs(base.x() - 40) < 1e-9);
        QVERIFY(TimelineView::arrowHead(QLineF(5, 5, 5, 5)).isEmpty());
    }

    void mainWindowShowsStatusAndHighlightsFromProfile()
    {
        Viewer viewer;
        MainWindow window(&viewer);
        window.resize(1400, 860);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *banner = window.findChild<QLabel *>(QStringLiteral("banner"));
        QVERIFY(banner && banner->isVisible()); // not connected yet: said plainly
        QVERIFY(viewer.status()->applyReply(reply("status")));
        QVERIFY(viewer.timeline()->applyTimeline(reply("timeline")));
        QVERIFY(viewer.profile()->applyReply(reply("profile")));
        auto *recording = window.findChild<QLabel *>(QStringLiteral("recording"));
        auto *application = window.findChild<QLabel *>(QStringLiteral("application"));
        QVERIFY(recording && application);
        QVERIFY(recording->text().contains(QLatin1String("on")));
        QVERIFY(application->text().contains(QLatin1String("running")));

        auto *profile = window.findChild<QTableView *>(QStringLiteral("profile"));
        QVERIFY(profile);
        const QModelIndex second = viewer.profile()->index(1, ProfileModel::Region);
        QTest::mouseClick(profile->viewport(), Qt::LeftButton, Qt::NoModifier,
                          profile->visualRect(second).center());
        QCOMPARE(window.timelineView()->highlight(), viewer.profile()->regionAt(1));
        // sorting by a header click keeps working on the model
        profile->sortByColumn(ProfileModel::Visits, Qt::DescendingOrder);
        QVERIFY(viewer.profile()->entries()[0].visits >= viewer.profile()->entries()[1].visits);
    }

    // "Find function…" hides the profile's other rows (kept so across sorting and new answers), and Enter
    // highlights the first match as a click on its row does.
    void profileFindsAFunction()
    {
        Viewer viewer;
        MainWindow window(&viewer);
        window.resize(1400, 860);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(viewer.profile()->applyReply(reply("profile")));
        auto *profile = window.findChild<QTableView *>(QStringLiteral("profile"));
        auto *find = window.findChild<QLineEdit *>(QStringLiteral("findFunction"));
        auto *count = window.findChild<QLabel *>(QStringLiteral("findCount"));
        QVERIFY(profile && find && count);
        QVERIFY(find->isClearButtonEnabled());
        ProfileModel *model = viewer.profile();
        auto shownRegions = [&] {
            QStringList shown;
            for (int row = 0; row < model->rowCount(); row++)
                if (!profile->isRowHidden(row))
                    shown << model->regionAt(row);
            return shown;
        };
        QCOMPARE(shownRegions().size(), model->rowCount());

        find->setFocus();
        QTest::keyClicks(find, QStringLiteral("mpi_i"));
        QCOMPARE(shownRegions(), (QStringList{"MPI_Init", "MPI_Isend", "MPI_Irecv"}));
        QCOMPARE(count->text(), QStringLiteral("3 of 9 functions"));
        profile->sortByColumn(ProfileModel::Exclusive, Qt::AscendingOrder);
        QCOMPARE(shownRegions(), (QStringList{"MPI_Irecv", "MPI_Isend", "MPI_Init"}));
        QVERIFY(model->applyReply(reply("profile"))); // a new answer: the rows are new, the search stays
        QCOMPARE(shownRegions(), (QStringList{"MPI_Irecv", "MPI_Isend", "MPI_Init"}));

        QTest::keyClick(find, Qt::Key_Return);
        QCOMPARE(window.timelineView()->highlight(), QStringLiteral("MPI_Irecv"));
        const QModelIndexList selected = profile->selectionModel()->selectedRows();
        QCOMPARE(selected.size(), 1);
        QCOMPARE(model->regionAt(selected[0].row()), QStringLiteral("MPI_Irecv"));

        find->clear();
        QTest::keyClicks(find, QStringLiteral("no such function"));
        QVERIFY(shownRegions().isEmpty());
        QCOMPARE(count->text(), QStringLiteral("no function matches"));
        QTest::keyClick(find, Qt::Key_Return); // nothing to highlight: the last highlight stays
        QCOMPARE(window.timelineView()->highlight(), QStringLiteral("MPI_Irecv"));
        find->clear(); // what the clear button does
        QCOMPARE(shownRegions().size(), model->rowCount());
        QVERIFY(count->text().isEmpty());
    }

    // The "Messages:" field edits the timeline's message filter: Enter applies it (shown canonical), bad
    // input is refused with the reason beside it and the filter in force stays, clearing shows all.
    void messageFilterField()
    {
        Viewer viewer;
        MainWindow window(&viewer);
        window.resize(1400, 860);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *field = window.findChild<QLineEdit *>(QStringLiteral("messageFilter"));
        auto *error = window.findChild<QLabel *>(QStringLiteral("filterError"));
        QVERIFY(field && error && field->isVisible());
        TimelineModel *timeline = viewer.timeline();
        field->setFocus();
        QTest::keyClicks(field, QStringLiteral("src=0-3  tag=42,0-9"));
        QTest::keyClick(field, Qt::Key_Return);
        QCOMPARE(timeline->messageFilter().text(), QStringLiteral("tag=0-9,42 src=0-3"));
        QCOMPARE(field->text(), QStringLiteral("tag=0-9,42 src=0-3"));
        QVERIFY(error->text().isEmpty());
        for (const auto &[bad, reason] :
             {std::pair{"tag=5-", "'5-' is not a list"}, {"abc", "'abc' is not a term"}}) {
            field->clear(); // (the clear button: every message again)
            QVERIFY(timeline->messageFilter().isEmpty());
            QVERIFY(window.applyMessageFilter(QStringLiteral("tag=0-9,42")));
            field->selectAll(); // typed over: the field never empty on the way
            QTest::keyClicks(field, QLatin1String(bad));
            QTest::keyClick(field, Qt::Key_Return);
            QVERIFY2(error->text().contains(QLatin1String(reason)), qPrintable(error->text()));
            QCOMPARE(timeline->messageFilter().text(), QStringLiteral("tag=0-9,42")); // kept
        }
        QVERIFY(window.applyMessageFilter(QStringLiteral("min=1")));
        QVERIFY(error->text().isEmpty()); // a filter taken clears the last refusal
        QCOMPARE(field->text(), QStringLiteral("min=1"));
    }

    // Script mode's steps for the message filter, a structure group's ranks and the profile's search, run
    // by ScriptRunner on a window holding recorded answers; a refused filter fails its step.
    void scriptStepsForFiltersGroupsAndSearch()
    {
        Viewer viewer;
        MainWindow window(&viewer);
        window.resize(1400, 860);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        TimelineModel *timeline = viewer.timeline();
        timeline->setTotalRanks(16);
        QVERIFY(timeline->applyEvents(reply("events")));
        QVERIFY(viewer.profile()->applyReply(reply("profile")));
        QVERIFY(window.analysesPanel()->analyses()->structure()->applyReply(parseRecords(
            "structure ranks=all selected=16 groups=2 tolerance_pct=2 places_answered=1 places_total=1\n"
            "group group=0 members=8 ranks=0-3,8-11 representative=0 nodes=0 edges=0 spread_pct=0 "
            "signature=a\n"
            "group group=1 members=8 ranks=4-7,12-15 representative=4 nodes=0 edges=0 spread_pct=0 "
            "signature=b\n")));
        const TimelineModel::Message first = timeline->messages().first();
        int sameTag = 0;
        for (const auto &m : timeline->messages())
            sameTag += m.tag == first.tag;
        const int total = int(timeline->messages().size());

        const auto run = [&](const QString &steps) {
            QTemporaryDir dir;
            QFile file(dir.filePath(QStringLiteral("steps.script")));
            if (!file.open(QIODevice::WriteOnly))
                return -1;
            file.write(steps.toUtf8());
            file.close();
            ScriptRunner runner(&viewer, &window);
            QString error;
            if (!runner.load(file.fileName(), &error))
                return -1;
            QSignalSpy finished(&runner, &ScriptRunner::finished);
            runner.start();
            if (!finished.wait(20000))
                return -1;
            return finished.first().first().toInt();
        };
        QCOMPARE(run(QStringLiteral("messages tag=%1\n"
                                    "assert messages_filter == tag=%1\n"
                                    "assert messages_shown == %2\n"
                                    "messages all\n"
                                    "assert messages_shown == %3\n"
                                    "group-ranks 1\n"
                                    "assert rank_filter == 4-7,12-15\n"
                                    "assert rank_count == 8\n"
                                    "find-function mpi_i\n"
                                    "assert profile_shown == 3\n"
                                    "assert highlight == MPI_Init\n"
                                    "find-function\n"
                                    "assert profile_shown == 9\n")
                         .arg(first.tag)
                         .arg(sameTag)
                         .arg(total)),
                 0);
        QCOMPARE(timeline->rankFilter(), QStringLiteral("4-7,12-15"));
        QCOMPARE(window.timelineView()->highlight(), QStringLiteral("MPI_Init"));
        // each refused: the step fails the script, the state before stays
        QVERIFY(window.applyMessageFilter(QStringLiteral("min=1")));
        QCOMPARE(run(QStringLiteral("messages tag=5-\n")), 1);
        QCOMPARE(timeline->messageFilter().text(), QStringLiteral("min=1"));
        QCOMPARE(run(QStringLiteral("group-ranks 7\n")), 1);
        QCOMPARE(run(QStringLiteral("find-function no such function\n")), 1);
        QCOMPARE(timeline->rankFilter(), QStringLiteral("4-7,12-15"));
    }

    // "--session FILE" (as documented) reaches otfx-gui: Qt's own "-session" option must not take it.
    void sessionOptionIsNotTakenByQt()
    {
        QProcess gui;
        gui.start(QStringLiteral(OTFX_GUI_BINARY),
                  {QStringLiteral("--session"), QStringLiteral("/nonexistent")});
        QVERIFY(gui.waitForFinished(30000));
        QCOMPARE(gui.exitCode(), 2);
        QVERIFY2(gui.readAllStandardError().contains("/nonexistent"), "no error naming the file");

        QTemporaryDir dir;
        quint16 port;
        {
            MiniServer gone;
            port = gone.port();
        }
        const QString session = writeSession(dir, QStringLiteral("opt"), port);
        QFile script(dir.filePath(QStringLiteral("s.script")));
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write(
            QStringLiteral("assert session == %1\nwait-disconnected 20\nassert lost contains refused\n")
                .arg(session)
                .toUtf8());
        script.close();
        QProcess run;
        run.start(QStringLiteral(OTFX_GUI_BINARY),
                  {QStringLiteral("--session"), session, QStringLiteral("--script"), script.fileName()});
        QVERIFY(run.waitForFinished(60000));
        QVERIFY2(run.exitCode() == 0, run.readAllStandardOutput().constData());
    }

    // Rows sit in their slots (a missing row leaves its slot empty), the ruler's labels differ at any
    // zoom, names are cut with an ellipsis, and hovering a parent's strip shows the parent.
    void rowsRulerNamesAndHover()
    {
        TimelineModel model;
        TimelineView view(&model);
        view.resize(900, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (const auto &window :
             {std::make_pair(36.4855e9, 3e6), std::make_pair(36.4865e9, 35e3), std::make_pair(465e9, 2e9)}) {
            model.setViewport(quint64(window.first), quint64(window.first + window.second));
            QStringList labels;
            for (const auto &tick : view.ticks())
                labels << tick.label;
            QVERIFY2(labels.size() >= 3, qPrintable(labels.join(QLatin1Char('|'))));
            QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
        }
        const QByteArray events =
            "events from=0 to=1000000 ranks=0,2 limit=10 locations=2 events=4 truncated=0 "
            "places_answered=1 places_total=1\n"
            "event rank=0 thread=0 time=0 type=enter region=main_loop_of_a_long_name\n"
            "event rank=0 thread=0 time=100000 type=enter region=MPI_Send\n"
            "event rank=0 thread=0 time=900000 type=leave region=MPI_Send\n"
            "event rank=0 thread=0 time=1000000 type=leave region=main_loop_of_a_long_name\n";
        QVERIFY(model.applyTimeline(parseRecords(QByteArray(HeldHeader)
                                                     .replace("%1", "0")
                                                     .replace("%2", "1000000")
                                                     .replace("%3", "100")
                                                     .replace("%4", "3") +
                                                 "row index=0 first_rank=0 last_rank=0 ranks=1\n"
                                                 "row index=2 first_rank=2 last_rank=2 ranks=1\n")));
        QCOMPARE(model.slotCount(), 3); // rank 1 sent nothing: its slot stays, the others keep their height
        model.setViewport(0, 1000000);
        model.setEventsNsPerPixel(1000000000);
        QVERIFY(model.applyEvents(parseRecords(events)));
        const QRect plot = view.plotRect();
        const double slot = plot.height() / 3.0;
        QVERIFY(
            view.tooltipAt(QPoint(plot.center().x(), plot.top() + 3)).startsWith(QLatin1String("main_loop")));
        QVERIFY(view.tooltipAt(QPoint(plot.center().x(), int(plot.top() + slot / 2)))
                    .startsWith(QLatin1String("MPI_Send")));
        QVERIFY(view.tooltipAt(QPoint(plot.center().x(), int(plot.top() + slot * 2.5)))
                    .contains(QLatin1String("rank 2")));
        QCOMPARE(view.rankLabels(), QStringList({QStringLiteral("rank 0"), QStringLiteral("rank 2")}));
        // an application pause is drawn over every row and named on hover
        model.observeSteering(600000, 550000, true, false);
        model.observeSteering(800000, 550000, false, false);
        const int x = int(view.plotRect().left() + 0.7 * view.plotRect().width());
        QVERIFY2(view.tooltipAt(QPoint(x, plot.top() + 3)).contains(QLatin1String("application paused")),
                 qPrintable(view.tooltipAt(QPoint(x, plot.top() + 3))));
        QVERIFY(!view.tooltipAt(QPoint(plot.left() + 5, plot.top() + 3)).contains(QLatin1String("paused")));
        const QString cut = elideToWidth(QStringLiteral("main_loop_of_a_long_name"), view.font(), 60);
        QVERIFY2(cut.endsWith(QStringLiteral("…")), qPrintable(cut));
        QVERIFY(elideToWidth(QStringLiteral("main"), view.font(), 2).isEmpty());
        // colours per function: stable, and different for different functions
        QCOMPARE(TimelineView::functionColor(QStringLiteral("MPI_Send")),
                 TimelineView::functionColor(QStringLiteral("MPI_Send")));
        QVERIFY(TimelineView::functionColor(QStringLiteral("MPI_Send")) !=
                TimelineView::functionColor(QStringLiteral("MPI_Recv")));
        view.setColourByFunction(true);
        QCOMPARE(view.regionColor(QStringLiteral("MPI_Send"), QStringLiteral("p2p")),
                 TimelineView::functionColor(QStringLiteral("MPI_Send")));
    }

    // Keys and Ctrl / Shift + wheel: zoom, pan, rank zoom and scroll, Home, back and forward; a drag is
    // one history entry.
    void keyboardAndRankNavigation()
    {
        TimelineModel model;
        TimelineView view(&model);
        view.resize(900, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        model.setTotalRanks(1000);
        QVERIFY(model.applyTimeline(reply("timeline")));
        const quint64 span = model.to() - model.from();
        QTest::keyClick(&view, Qt::Key_Plus);
        QVERIFY(std::abs(double(model.to() - model.from()) - span / 2.0) < 2.0);
        const quint64 from = model.from();
        QTest::keyClick(&view, Qt::Key_Right);
        QVERIFY(model.from() > from);
        QTest::keyClick(&view, Qt::Key_Left, Qt::AltModifier); // back
        QCOMPARE(model.from(), from);
        QTest::keyClick(&view, Qt::Key_Right, Qt::AltModifier); // forward
        QVERIFY(model.from() > from);
        QTest::keyClick(&view, Qt::Key_Plus, Qt::ControlModifier); // fewer ranks, taller rows
        QCOMPARE(model.rankCount(), 500);
        QTest::keyClick(&view, Qt::Key_PageDown);
        QCOMPARE(model.rankFirst(), 500);
        QTest::keyClick(&view, Qt::Key_Up);
        QCOMPARE(model.rankFirst(), 499);
        const QPointF at(view.plotRect().center());
        QWheelEvent ctrlWheel(at, view.mapToGlobal(at.toPoint()), QPoint(), QPoint(0, 120), Qt::NoButton,
                              Qt::ControlModifier, Qt::NoScrollPhase, false);
        QCoreApplication::sendEvent(&view, &ctrlWheel);
        QCOMPARE(model.rankCount(), 400);
        QWheelEvent shiftWheel(at, view.mapToGlobal(at.toPoint()), QPoint(), QPoint(0, -120), Qt::NoButton,
                               Qt::ShiftModifier, Qt::NoScrollPhase, false);
        const int first = model.rankFirst();
        QCoreApplication::sendEvent(&view, &shiftWheel);
        QVERIFY(model.rankFirst() > first);
        const int depth = model.historyDepth();
        const QRect plot = view.plotRect();
        QTest::mousePress(&view, Qt::LeftButton, Qt::NoModifier,
                          QPoint(plot.left() + 400, plot.center().y()));
        for (int x = 390; x >= 300; x -= 10)
            QTest::mouseMove(&view, QPoint(plot.left() + x, plot.center().y()));
        QTest::mouseRelease(&view, Qt::LeftButton, Qt::NoModifier,
                            QPoint(plot.left() + 300, plot.center().y()));
        QCOMPARE(model.historyDepth(), depth + 1);
        QTest::keyClick(&view, Qt::Key_Home);
        QVERIFY(model.showingAll());
        QCOMPARE(model.rankCount(), 1000);
    }

    // The overview strip marks the timeline's window; a click centres it, a drag selects a range.
    void overviewMovesTheWindow()
    {
        TimelineModel overview, timeline;
        TimelineView colours(&timeline);
        OverviewView view(&overview, &timeline, &colours);
        view.resize(900, 34);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(overview.applyTimeline(reply("timeline")));
        QVERIFY(timeline.applyTimeline(reply("timeline")));
        timeline.zoom(0.1, 0.0);
        const QRect marked = view.windowRect();
        QVERIFY(!marked.isNull() && marked.width() < view.width() / 5);
        const quint64 span = timeline.to() - timeline.from();
        QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier, QPoint(view.width() - 200, 17));
        QVERIFY(view.windowRect().left() > marked.left() + 100);
        QCOMPARE(timeline.to() - timeline.from(), span);
        QTest::mousePress(&view, Qt::LeftButton, Qt::NoModifier, QPoint(200, 17));
        QTest::mouseMove(&view, QPoint(400, 17));
        QTest::mouseRelease(&view, Qt::LeftButton, Qt::NoModifier, QPoint(400, 17));
        QVERIFY(std::abs(double(timeline.from()) - double(view.timeAt(200))) <
                1e-3 * double(overview.dataTo() - overview.dataFrom()));
        timeline.back();
        QCOMPARE(timeline.to() - timeline.from(), span);
    }

    // The banner says why this connection ended (a refused token), not "not connected" or an older
    // reason; the controls are disabled while not connected; another job clears the old answers.
    void bannerControlsAndAnotherJob()
    {
        MiniServer server;
        Viewer viewer;
        MainWindow window(&viewer);
        window.resize(1400, 860);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *banner = window.findChild<QLabel *>(QStringLiteral("banner"));
        auto *snapshotButton = window.findChild<QPushButton *>(QStringLiteral("saveSnapshot"));
        QVERIFY(banner && snapshotButton);
        QVERIFY(!snapshotButton->isEnabled());
        SessionInfo session;
        session.address = QStringLiteral("127.0.0.1");
        session.port = server.port();
        session.token = QStringLiteral("ffffffffffffffffffffffffffffffff");
        viewer.connectToSession(session);
        QTRY_VERIFY_WITH_TIMEOUT(banner->text().contains(QLatin1String("refused the token")), 5000);
        QVERIFY(!snapshotButton->isEnabled());
        session.token = QLatin1String(Token);
        viewer.connectToSession(session);
        QTRY_COMPARE_WITH_TIMEOUT(viewer.client()->state(), ProtocolClient::Connected, 5000);
        QVERIFY(snapshotButton->isEnabled());
        QVERIFY(!banner->isVisible());
        QCOMPARE(viewer.timeline()->totalRanks(), 4);
        auto *answer = window.findChild<QPlainTextEdit *>(QStringLiteral("answer"));
        emit viewer.commandAnswered(1, QStringLiteral("record pause"), true, QStringLiteral("summary ok=2"));
        QVERIFY(answer->toPlainText().contains(QLatin1String("record pause")));
        server.peer->disconnectFromHost(); // the job goes away
        QTRY_VERIFY_WITH_TIMEOUT(banner->isVisible() && banner->text().contains(QLatin1String("closed")),
                                 5000);
        QVERIFY(!snapshotButton->isEnabled());
        server.job = QStringLiteral("second");
        viewer.reconnect();
        QTRY_COMPARE_WITH_TIMEOUT(viewer.client()->state(), ProtocolClient::Connected, 5000);
        QVERIFY(answer->toPlainText().isEmpty()); // the first job's answer is not this one's
        // a notice is logged once as a notice, not as "notice: notice event=…"
        Record notice = parseRecords("notice event=window-ended from=1 to=2\n").first();
        emit viewer.client()->notice(notice);
        QVERIFY(viewer.log().last().contains(QLatin1String("notice event=window-ended")));
        QVERIFY(!viewer.log().last().contains(QLatin1String("notice: notice")));
    }

    // The reduction box and the class checkboxes show what the job uses; Reset asks with No as default.
    void controlsShowTheJobsState()
    {
        MiniServer server;
        Viewer viewer;
        MainWindow window(&viewer);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        SessionInfo session;
        session.address = QStringLiteral("127.0.0.1");
        session.port = server.port();
        session.token = QLatin1String(Token);
        viewer.connectToSession(session);
        QTRY_COMPARE_WITH_TIMEOUT(viewer.client()->state(), ProtocolClient::Connected, 5000);
        auto *reduction = window.findChild<QComboBox *>(QStringLiteral("reduction"));
        auto *user = window.findChild<QCheckBox *>(QStringLiteral("class-user"));
        auto *p2p = window.findChild<QCheckBox *>(QStringLiteral("class-p2p"));
        QVERIFY(reduction && user && p2p);
        QCOMPARE(reduction->currentIndex(), -1); // not "ring" before the job said so
        QVERIFY(viewer.status()->applyReply(parseRecords(
            "place index=0 strategy=time\nplace index=1 strategy=time\n"
            "summary places=2 places_answered=2 places_total=2 classes=3 classes_any=7 recording=on "
            "app_state=running\n")));
        QCOMPARE(reduction->currentText(), QStringLiteral("time"));
        QCOMPARE(p2p->checkState(), Qt::Checked);
        QCOMPARE(user->checkState(), Qt::Unchecked);
        QCOMPARE(window.findChild<QCheckBox *>(QStringLiteral("class-mpi-other"))->checkState(),
                 Qt::PartiallyChecked);
        bool defaultIsNo = false;
        QTimer::singleShot(300, this, [&] {
            auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
            if (!box)
                return;
            defaultIsNo = box->defaultButton() == box->button(QMessageBox::No);
            box->button(QMessageBox::No)->click();
        });
        const int before = int(server.received.size());
        for (QPushButton *b : window.findChildren<QPushButton *>())
            if (b->text().startsWith(QLatin1String("Reset buffers")))
                b->click();
        QVERIFY(defaultIsNo);
        QTest::qWait(100);
        for (int i = before; i < server.received.size(); i++)
            QVERIFY(server.received[i].line != "reset"); // No: nothing dropped
    }

    // The snapshot dialog's "visible window" sends that window, also while it is "everything held".
    void snapshotSendsTheVisibleWindow()
    {
        Viewer viewer;
        MainWindow window(&viewer);
        QVERIFY(viewer.timeline()->applyTimeline(reply("timeline")));
        QVERIFY(viewer.timeline()->showingAll());
        QVERIFY(!window.visibleWindowText().isEmpty());
        viewer.snapshot(QStringLiteral("s"), true, false);
        const QString line = viewer.state().value(QStringLiteral("last_command"));
        QVERIFY2(line.contains(QStringLiteral("--from %1ns --to %2ns")
                                   .arg(viewer.timeline()->from())
                                   .arg(viewer.timeline()->to())),
                 qPrintable(line));
    }

    // At 1000 px the status bar's items stay inside it, side by side; the controls scroll so Apply and
    // Save snapshot stay reachable in a low window; no text is drawn over the timeline's data.
    void layoutAtSmallSizes()
    {
        Viewer viewer;
        MainWindow window(&viewer);
        window.resize(1000, 520);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(viewer.status()->applyReply(reply("status")));
        QVERIFY(viewer.timeline()->applyTimeline(reply("timeline")));
        QTest::qWait(50);
        QList<QWidget *> items;
        for (QWidget *w : window.statusBar()->findChildren<QWidget *>(QString(), Qt::FindDirectChildrenOnly))
            if (w->isVisible() && w->width() > 0)
                items << w;
        std::sort(items.begin(), items.end(), [](QWidget *a, QWidget *b) { return a->x() < b->x(); });
        QVERIFY(items.size() >= 5);
        for (int i = 0; i < items.size(); i++) {
            QVERIFY2(items[i]->geometry().right() <= window.statusBar()->width(),
                     qPrintable(items[i]->objectName()));
            if (i > 0)
                QVERIFY2(items[i - 1]->geometry().right() < items[i]->x(),
                         qPrintable(items[i - 1]->objectName() + QLatin1String(" overlaps ") +
                                    items[i]->objectName()));
        }
        auto *scroll = window.findChild<QScrollArea *>(QStringLiteral("controlsScroll"));
        QVERIFY(scroll);
        auto *snapshot = window.findChild<QPushButton *>(QStringLiteral("saveSnapshot"));
        QVERIFY(scroll->widget()->isAncestorOf(snapshot));
        scroll->ensureWidgetVisible(snapshot);
        const QPoint inViewport = snapshot->mapTo(scroll->viewport(), QPoint(0, 0));
        QVERIFY(scroll->viewport()->rect().contains(inViewport));
        // what is shown is said beside the timeline, not over it
        QVERIFY(window.findChild<QLabel *>(QStringLiteral("mode"))->text().contains(QLatin1String("bins")));
    }

    // The connect dialog searches --session-dir, says when nothing is there, and closes by itself when
    // the viewer connected meanwhile (not modal: the discovery goes on).
    void connectDialogFollowsTheSessionDirectory()
    {
        QTemporaryDir dir;
        MiniServer server;
        Viewer viewer;
        viewer.setSessionDirectory(dir.path());
        MainWindow window(&viewer);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(!viewer.discover());
        window.openConnectDialog();
        ConnectDialog *dialog = window.connectDialog();
        QVERIFY(dialog && dialog->isVisible() && !dialog->isModal());
        QVERIFY(dialog->message().contains(dir.path()));
        QVERIFY(!dialog->findNewest());
        QVERIFY(dialog->message().contains(QLatin1String("looked at")));
        writeSession(dir, QStringLiteral("late"), server.port()); // the job starts
        QTRY_COMPARE_WITH_TIMEOUT(viewer.client()->state(), ProtocolClient::Connected, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(!window.connectDialog(), 5000);
    }

    void connectDialogFindsTheNewestSession()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QFile file(dir.filePath(QStringLiteral("otfx-session-j.txt")));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("session address=127.0.0.1 port=4242 token=0123456789abcdef0123456789abcdef job=j\n");
        file.close();
        QVERIFY(file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner)); // as jobs write it
        ConnectDialog dialog(SessionInfo(), dir.path()); // the viewer's --session-dir, not the environment
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        const auto edits = dialog.findChildren<QLineEdit *>();
        QVERIFY(!edits.isEmpty());
        QCOMPARE(edits[0]->text(), file.fileName()); // "Newest" ran on opening
        dialog.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QCOMPARE(dialog.session().port, quint16(4242));
    }

    void snapshotDialogOffersANameUnderTheSnapshotDirectory()
    {
        SnapshotDialog withoutWindow(QStringLiteral("/tmp"), QString());
        const auto radios = withoutWindow.findChildren<QRadioButton *>();
        QCOMPARE(radios.size(), 2);
        QVERIFY(!radios[1]->isEnabled()); // no visible window yet: only everything held
        QVERIFY(withoutWindow.name().startsWith(QLatin1String("otfx-snapshot-")));
        SnapshotDialog dialog(QStringLiteral("/tmp"), QStringLiteral("1 s … 2 s"));
        dialog.findChildren<QRadioButton *>()[1]->setChecked(true);
        QVERIFY(dialog.visibleWindow());
        QVERIFY(!dialog.overwrite());
    }
};

QTEST_MAIN(TestWidgets)
#include "test_widgets.moc"
