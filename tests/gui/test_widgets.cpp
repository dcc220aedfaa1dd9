// The widgets on the Xvfb screen, fed with recorded replies: the timeline asks for its pixel size,
// wheel / drag / right-drag / double-click change the window as documented, it draws the role colours
// and single events, hover text; the main window's status bar and the profile click that highlights a
// region in the timeline.
#include "connect_dialog.h"
#include "main_window.h"
#include "snapshot_dialog.h"
#include "timeline_view.h"
#include "viewer.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
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
        view.resize(900, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(model.applyTimeline(reply("timeline")));
        const Records events = reply("events");
        const Record &h = *findRecord(events, "events");
        model.setViewport(h.u64("from"), h.u64("to"));
        model.setEventsNsPerPixel(1000000);
        QVERIFY(model.wantsEvents());
        QVERIFY(model.applyEvents(events));
        const QImage image = view.grab().toImage();
        QVERIFY(pixelsOf(image, TimelineView::roleColor(QStringLiteral("collective"))) > 1000);
        // some pixel row of rank 0 hovers over a named region instance
        const QRect plot = view.plotRect();
        bool named = false;
        for (int x = plot.left(); x < plot.right() && !named; x += 10)
            named = view.tooltipAt(QPoint(x, plot.top() + 5)).contains(QLatin1String("MPI_"));
        QVERIFY(named);
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
