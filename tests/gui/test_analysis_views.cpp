// The analyses' widgets on the Xvfb screen: their colours come from the palette (a custom palette's Base,
// Highlight and Text appear in the drawings, a dark one makes them dark), the matrix heat map, the bars,
// the metric timeline's heat map, the critical path and the wait states drawn over the timeline (recorded
// timeline reply, constructed analysis answers) where their ranks and times are, the steering periods' veils
// in the palette, and the Analyses tab of the main window (a structure group's ranks as the rank filter).
#include "analyses_panel.h"
#include "analysis_charts.h"
#include "main_window.h"
#include "overview_view.h"
#include "theme.h"
#include "timeline_view.h"
#include "viewer.h"

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QLineEdit>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QtTest/QtTest>

static Records reply(const char *name)
{
    QFile file(QStringLiteral(OTFX_GUI_REPLIES "/%1.txt").arg(QLatin1String(name)));
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read recorded reply %s", name);
    return parseRecords(file.readAll());
}

static int pixelsOf(const QImage &image, const QColor &colour, const QRect &area = QRect())
{
    const QRect r = area.isNull() ? image.rect() : area;
    int count = 0;
    for (int y = r.top(); y <= r.bottom(); y++)
        for (int x = r.left(); x <= r.right(); x++)
            count += QColor(image.pixel(x, y)) == colour;
    return count;
}

static QPalette unusual()
{
    QPalette p = theme::lightPalette();
    p.setColor(QPalette::Base, QColor(16, 32, 48));
    p.setColor(QPalette::Window, QColor(20, 40, 60));
    p.setColor(QPalette::Text, QColor(250, 250, 240));
    p.setColor(QPalette::WindowText, QColor(250, 250, 240));
    p.setColor(QPalette::Highlight, QColor(240, 192, 32));
    return p;
}

class TestAnalysisViews : public QObject
{
    Q_OBJECT
  private slots:
    void themeColoursComeFromThePalette()
    {
        QVERIFY(theme::isDark(theme::darkPalette()));
        QVERIFY(!theme::isDark(theme::lightPalette()));
        const QPalette p = unusual();
        QCOMPARE(theme::plotBackground(p), QColor(16, 32, 48));
        QCOMPARE(theme::highlight(p), QColor(240, 192, 32));
        QCOMPARE(theme::heat(p, 0.0), QColor(16, 32, 48));
        QCOMPARE(theme::heat(p, 1.0), QColor(240, 192, 32));
        QVERIFY(theme::attention(p).hsvHue() != theme::highlight(p).hsvHue());
        // the dark palette's grid is dark too: derived, not a fixed light grey
        QVERIFY(theme::grid(theme::darkPalette()).lightness() < 128);
    }

    void matrixHeatMapInThePalette()
    {
        MessageMatrixModel model;
        QVERIFY(model.applyReply(parseRecords("matrix groups=2 grouped=0 count=10 bytes=10\n"
                                              "messages src=0 dst=1 src_first=0 src_last=0 dst_first=1 "
                                              "dst_last=1 count=10 bytes=10\n")));
        MatrixView view(&model);
        view.setPalette(unusual());
        view.resize(300, 300);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const QImage image = view.grab().toImage();
        const QRect plot = view.plotRect();
        const QRect empty(plot.left() + 2, plot.top() + 2, plot.width() / 2 - 4, plot.height() / 2 - 4);
        const QRect full(plot.center().x() + 2, plot.top() + 2, plot.width() / 2 - 4, plot.height() / 2 - 4);
        // the pair without messages in the palette's Base, the busiest one in its Highlight
        QCOMPARE(pixelsOf(image, QColor(16, 32, 48), empty), empty.width() * empty.height());
        QCOMPARE(pixelsOf(image, QColor(240, 192, 32), full), full.width() * full.height());
        QCOMPARE(view.cellAt(full.center()), QPoint(0, 1));
        // nothing of the default light palette is left
        QCOMPARE(pixelsOf(image, Qt::white), 0);
    }

    void metricHeatMapInThePalette()
    {
        MetricsModel model;
        QVERIFY(model.applyTimeline(
            parseRecords(
                "metric-timeline metric=task-clock unit=ns mode=window from=0 to=200 bins=2 width_ns=100 "
                "ranks=all selected=2 rows=2 places_answered=1 places_total=1\n"
                "row index=0 first_rank=0 last_rank=0 min_per_s=-,5 mean_per_s=-,10 max_per_s=-,20 "
                "covered_ns=0,100\n"
                "row index=1 first_rank=1 last_rank=1 min_per_s=1,- mean_per_s=2,- max_per_s=3,- "
                "covered_ns=100,0\n"),
            true));
        MetricHeatMap view(&model);
        view.setPalette(unusual());
        view.resize(300, 200);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const QImage image = view.grab().toImage();
        const QRect plot = view.plotRect();
        const QRect empty(plot.left() + 2, plot.top() + 2, plot.width() / 2 - 4, plot.height() / 2 - 4);
        const QRect full(plot.center().x() + 2, plot.top() + 2, plot.width() / 2 - 4, plot.height() / 2 - 4);
        // rank 0's first cell has no data: the palette's Base; its second the largest mean: the Highlight
        QCOMPARE(pixelsOf(image, QColor(16, 32, 48), empty), empty.width() * empty.height());
        QCOMPARE(pixelsOf(image, QColor(240, 192, 32), full), full.width() * full.height());
        QCOMPARE(view.cellAt(full.center()), QPoint(0, 1));
        QCOMPARE(view.cellAt(QPoint(plot.left() + 2, plot.bottom() - 2)), QPoint(1, 0));
        // a smaller mean lies between the two
        const QColor low = view.cellColour(1, 0);
        QVERIFY(low != QColor(16, 32, 48) && low != QColor(240, 192, 32));
        QCOMPARE(pixelsOf(image, Qt::white), 0);
    }

    void barsInThePalette()
    {
        BarChart chart;
        chart.setPalette(theme::darkPalette());
        chart.resize(300, 120);
        chart.setBars(QStringLiteral("per rank"),
                      {{QStringLiteral("rank 0"), QStringLiteral("1 ms"), 1.0},
                       {QStringLiteral("rank 1"), QStringLiteral("2 ms"), 2.0}},
                      1);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        const QImage image = chart.grab().toImage();
        QVERIFY(pixelsOf(image, theme::highlight(theme::darkPalette())) > 100); // the marked bar
        QVERIFY(pixelsOf(image, theme::plotBackground(theme::darkPalette())) > 1000);
        QCOMPARE(pixelsOf(image, Qt::white), 0);
        QSignalSpy clicked(&chart, &BarChart::barClicked);
        // the second bar is the one below the title and the first
        int y = chart.height() - 1;
        while (y > 0 && chart.barAt(QPoint(200, y)) != 1)
            y--;
        QVERIFY(y > chart.fontMetrics().height());
        QTest::mouseClick(&chart, Qt::LeftButton, {}, QPoint(200, y));
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked[0][0].toInt(), 1);
    }

    void pathAndWaitsOverTheTimeline()
    {
        TimelineModel timeline;
        TimelineView view(&timeline);
        CriticalPathModel path;
        WaitStatesModel waits;
        TimelineOverlay overlay(&view, &timeline, &path, &waits);
        view.setPalette(unusual());
        overlay.setPalette(unusual());
        view.resize(900, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(timeline.applyTimeline(reply("timeline")));
        QCOMPARE(overlay.geometry(), view.rect());
        const quint64 from = timeline.from(), to = timeline.to(), span = to - from;
        const int firstRank = timeline.rows().first().firstRank;
        // a path through the first row's middle fifth, then the last row's
        const QByteArray answer = QStringLiteral("critical-path length_ns=%1 zero=-\n"
                                                 "cp-segment rank=%2 thread=0 function=f start=%3 end=%4\n"
                                                 "cp-segment rank=%5 thread=0 function=g start=%4 end=%6\n")
                                      .arg(span)
                                      .arg(firstRank)
                                      .arg(from + span * 2 / 5)
                                      .arg(from + span * 3 / 5)
                                      .arg(timeline.rows().last().lastRank)
                                      .arg(from + span * 4 / 5)
                                      .toUtf8();
        QVERIFY(path.applyReply(parseRecords(answer)));
        QTRY_COMPARE(overlay.drawnSegments(), 2);
        QImage image = view.grab().toImage();
        const QRect plot = view.plotRect();
        const double rowHeight = double(plot.height()) / timeline.rows().size();
        const QRect inside(plot.left() + plot.width() * 2 / 5 + 4, plot.top() + int(rowHeight * 0.5),
                           plot.width() / 5 - 8, 1);
        // the path's outline is the palette's Text colour, its pieces shaded towards its Highlight
        QVERIFY(pixelsOf(image, QColor(250, 250, 240)) > 100);
        const QColor shaded(image.pixel(inside.center()));
        QVERIFY2(shaded.red() > 120 && shaded.green() > 90,
                 qPrintable(QStringLiteral("the path's piece is %1").arg(shaded.name())));
        overlay.setShowPath(false);
        QTRY_COMPARE(overlay.drawnSegments(), 0);

        // wait states in 4 slices: the first rank waits in the second slice only
        const QStringList lines = waits.startSlices(from, to, 4);
        QCOMPARE(lines.size(), 4);
        QVERIFY(waits.applySlice(
            1, parseRecords(QStringLiteral("wait-states total_ns=5\nws-rank rank=%1 wait_ns=5\n")
                                .arg(firstRank)
                                .toUtf8())));
        overlay.setShowWaits(true);
        QTRY_COMPARE(overlay.drawnWaitCells(), 1);
    }

    // The timeline and the overview strip draw their background, text and lines from the palette too.
    void timelineAndOverviewInThePalette()
    {
        const QPalette dark = theme::darkPalette();
        TimelineModel timeline, overview;
        TimelineView view(&timeline);
        OverviewView strip(&overview, &timeline, &view);
        view.setPalette(dark);
        strip.setPalette(dark);
        view.resize(900, 400);
        strip.resize(900, 40);
        view.show();
        strip.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(QTest::qWaitForWindowExposed(&strip));
        // nothing asked yet: the plot is the palette's Base (the note in its middle aside)
        QImage image = view.grab().toImage();
        QRect plot = view.plotRect();
        const QRect corner(plot.left() + 2, plot.top() + 2, plot.width() / 4, plot.height() / 4);
        QCOMPARE(pixelsOf(image, theme::plotBackground(dark), corner), corner.width() * corner.height());
        image = strip.grab().toImage();
        plot = strip.rect().adjusted(100, 8, -20, -8); // inside the strip's plot, right of its label
        QCOMPARE(pixelsOf(image, theme::plotBackground(dark), plot), plot.width() * plot.height());
        QCOMPARE(pixelsOf(image, Qt::white), 0);

        QVERIFY(timeline.applyTimeline(reply("timeline")));
        QVERIFY(overview.applyTimeline(reply("timeline")));
        image = view.grab().toImage();
        // rank labels and the ruler in the palette's Text, its line in the grid colour, no light leftovers
        QVERIFY(pixelsOf(image, theme::text(dark)) > 20);
        QVERIFY(pixelsOf(image, QColor(theme::grid(dark).rgb())) >= view.plotRect().width());
        QCOMPARE(pixelsOf(image, Qt::white), 0);
        QCOMPARE(pixelsOf(image, QColor(248, 248, 248)), 0);
        QCOMPARE(view.paintedSlots(), timeline.slotCount()); // rows told from the dark background
        image = strip.grab().toImage();
        QCOMPARE(pixelsOf(image, Qt::white), 0);
        QCOMPARE(pixelsOf(image, QColor(240, 240, 240)), 0);
    }

    // The veils of steering periods take their colours from the palette: each stands out from the plot's
    // Base in the light and in the dark theme, and they differ from each other.
    void pauseVeilInThePalette()
    {
        QVERIFY(theme::pausedVeil(theme::lightPalette()) != theme::pausedVeil(theme::darkPalette()));
        QVERIFY(theme::notRecordingVeil(theme::lightPalette()) !=
                theme::notRecordingVeil(theme::darkPalette()));
        QCOMPARE(TimelineView::periodColor(unusual(), TimelineModel::Period::AppPaused),
                 theme::pausedVeil(unusual()));
        for (const QPalette &palette : {theme::lightPalette(), theme::darkPalette(), unusual()}) {
            TimelineModel timeline;
            TimelineView view(&timeline);
            view.setPalette(palette);
            view.resize(900, 300);
            view.show();
            QVERIFY(QTest::qWaitForWindowExposed(&view));
            // two ranks that ran nothing: the plot is Base but for the veils
            QVERIFY(timeline.applyTimeline(parseRecords(
                "timeline mode=window from=0 to=1000000 bins=100 width_ns=10000 selected=2 rows=2 "
                "grouped=0 places_answered=1 places_total=1\n"
                "row index=0 first_rank=0 last_rank=0 ranks=1\n"
                "row index=1 first_rank=1 last_rank=1 ranks=1\n")));
            timeline.setViewport(0, 1000000);
            timeline.observeSteering(100000, 100000, false, true); // recording off 100 … 300 µs
            timeline.observeSteering(300000, 100000, false, false);
            timeline.observeSteering(600000, 550000, true, false); // paused 550 … 800 µs
            timeline.observeSteering(800000, 550000, false, false);
            const QImage image = view.grab().toImage();
            const QRect plot = view.plotRect();
            const auto band = [&plot](double from, double to) {
                return QRect(int(plot.left() + from * plot.width()), plot.top() + 2,
                             int((to - from) * plot.width()), plot.height() - 4);
            };
            const QRect off = band(0.12, 0.28), paused = band(0.57, 0.78), clear = band(0.35, 0.5);
            const QColor base = theme::plotBackground(palette);
            QCOMPARE(pixelsOf(image, base, clear), clear.width() * clear.height());
            QCOMPARE(pixelsOf(image, base, paused), 0);
            QCOMPARE(pixelsOf(image, base, off), 0);
            const auto mean = [&image](const QRect &r) {
                double red = 0, green = 0, blue = 0;
                for (int y = r.top(); y <= r.bottom(); y++)
                    for (int x = r.left(); x <= r.right(); x++) {
                        const QColor c(image.pixel(x, y));
                        red += c.red();
                        green += c.green();
                        blue += c.blue();
                    }
                const double n = double(r.width()) * r.height();
                return QColor(int(red / n), int(green / n), int(blue / n));
            };
            const QColor pausedMean = mean(paused), offMean = mean(off);
            const QString seen = QStringLiteral("base %1, paused %2, not recording %3")
                                     .arg(base.name(), pausedMean.name(), offMean.name());
            // a veil shades a light plot and lifts a dark one, enough to see
            QVERIFY2(std::abs(pausedMean.lightness() - base.lightness()) >= 25, qPrintable(seen));
            QVERIFY2(std::abs(offMean.lightness() - base.lightness()) >= 25, qPrintable(seen));
            QVERIFY2((pausedMean.lightness() > base.lightness()) == theme::isDark(palette), qPrintable(seen));
            // recording off moves the plot towards red, the pause moves every channel alike
            const auto redShift = [&base](const QColor &c) {
                return (c.red() - base.red()) - (c.green() - base.green());
            };
            QVERIFY2(redShift(offMean) >= 25, qPrintable(seen));
            QVERIFY2(std::abs(redShift(pausedMean)) < 10, qPrintable(seen));
        }
    }

    void analysesTabOfTheMainWindow()
    {
        Viewer viewer;
        MainWindow window(&viewer);
        window.resize(1200, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        AnalysesPanel *panel = window.analysesPanel();
        QVERIFY(panel);
        QCOMPARE(panel->count(), 6);
        QVERIFY(!panel->ask(QStringLiteral("critical-path"))); // not connected: nothing asked
        QVERIFY(!panel->ask(QStringLiteral("no-such-analysis")));
        auto *tabs = qobject_cast<QTabWidget *>(panel->parentWidget()->parentWidget());
        QVERIFY(tabs);
        QCOMPARE(tabs->currentWidget(), panel); // asking brings the tab to the front
        QCOMPARE(panel->currentIndex(), 2);
        QVERIFY(!panel->ask(QStringLiteral("metric-timeline"), QStringLiteral("task-clock")));
        QCOMPARE(panel->currentIndex(), 5); // the metrics view
        QCOMPARE(panel->tabText(5), QStringLiteral("Metrics"));
        QCOMPARE(panel->state().value(QStringLiteral("metrics_available")), QStringLiteral("0"));
        // a structure group's ranks become the timeline's rank filter, shown in its field
        viewer.timeline()->setTotalRanks(100);
        QVERIFY(panel->analyses()->structure()->applyReply(parseRecords(
            "structure ranks=all selected=16 groups=2 tolerance_pct=2 places_answered=1 places_total=1\n"
            "group group=0 members=8 ranks=0-3,8-11 representative=0 nodes=0 edges=0 spread_pct=0 "
            "signature=a\n"
            "group group=1 members=8 ranks=4-7,12-15 representative=4 nodes=0 edges=0 spread_pct=0 "
            "signature=b\n")));
        QVERIFY(!panel->ask(QStringLiteral("structure"))); // (not connected) shows the structure view
        auto *groups = panel->findChild<QTableView *>(QStringLiteral("structure-groups"));
        auto *showRanks = panel->findChild<QAction *>(QStringLiteral("show-group-ranks"));
        auto *field = window.findChild<QLineEdit *>(QStringLiteral("rankFilter"));
        QVERIFY(groups && showRanks && field);
        QCOMPARE(groups->contextMenuPolicy(), Qt::ActionsContextMenu);
        QVERIFY(groups->actions().contains(showRanks));
        QVERIFY(!showRanks->isEnabled()); // no group chosen
        groups->selectRow(0);
        QVERIFY(showRanks->isEnabled());
        QVERIFY(showRanks->toolTip().contains(QStringLiteral("0-3,8-11")));
        QToolButton *button = nullptr;
        for (auto *b : panel->findChildren<QToolButton *>())
            if (b->defaultAction() == showRanks)
                button = b;
        QVERIFY(button && button->isVisible());
        QTest::mouseClick(button, Qt::LeftButton);
        QCOMPARE(field->text(), QStringLiteral("0-3,8-11"));
        QCOMPARE(viewer.timeline()->rankFilter(), QStringLiteral("0-3,8-11"));
        QCOMPARE(viewer.timeline()->selectedRanks(), 8);
        groups->selectRow(1);
        showRanks->trigger(); // as from the context menu
        QCOMPARE(field->text(), QStringLiteral("4-7,12-15"));
        QCOMPARE(viewer.timeline()->rankAtPosition(4), 12);
        // the field is the filter's: edited there, or cleared by All ranks
        field->setText(QStringLiteral("4-5"));
        QTest::keyClick(field, Qt::Key_Return);
        QCOMPARE(viewer.timeline()->rankFilter(), QStringLiteral("4-5"));
        QVERIFY(window.applyRankFilter(QString()));
        QVERIFY(field->text().isEmpty());
        QCOMPARE(viewer.timeline()->selectedRanks(), 100);
        panel->openArchive(QStringLiteral("/no/such/archive.otf2"));
        QVERIFY(
            panel->state().value(QStringLiteral("archive_error")).contains(QStringLiteral("no such file")));
    }
};

QTEST_MAIN(TestAnalysisViews)
#include "test_analysis_views.moc"
