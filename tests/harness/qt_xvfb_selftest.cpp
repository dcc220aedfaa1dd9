// Proves the viewer test harness works: a Qt widget is shown on the Xvfb screen that run-gui starts,
// rendered, grabbed and saved as a PNG, with its pixels checked.
#include <QColor>
#include <QImage>
#include <QScreen>
#include <QWidget>
#include <QtTest/QtTest>

class QtXvfbSelfTest : public QObject
{
    Q_OBJECT
  private slots:
    void screenIsTheXvfbScreen()
    {
        QVERIFY(QGuiApplication::platformName() == QLatin1String("xcb"));
        const QRect geometry = QGuiApplication::primaryScreen()->geometry();
        QCOMPARE(geometry.size(), QSize(1600, 1000));
    }

    void widgetRendersAndIsGrabbed()
    {
        QWidget widget;
        widget.resize(320, 200);
        QPalette palette = widget.palette();
        palette.setColor(QPalette::Window, QColor(20, 120, 200));
        widget.setPalette(palette);
        widget.setAutoFillBackground(true);
        widget.show();
        QVERIFY(QTest::qWaitForWindowExposed(&widget));

        const QImage image = widget.grab().toImage();
        QCOMPARE(image.size(), QSize(320, 200));
        QCOMPARE(QColor(image.pixel(160, 100)), QColor(20, 120, 200));

        const QByteArray path = qgetenv("OTFX_SCREENSHOT");
        if (!path.isEmpty())
            QVERIFY(image.save(QString::fromLocal8Bit(path), "PNG"));
    }
};

QTEST_MAIN(QtXvfbSelfTest)
#include "qt_xvfb_selftest.moc"
