#include "theme.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>

#include <algorithm>

namespace theme
{

static QPalette palette(const QColor &window, const QColor &base, const QColor &text, const QColor &mid,
                        const QColor &highlight, const QColor &highlightedText)
{
    QPalette p;
    const QColor disabled =
        QColor::fromRgbF((window.redF() + text.redF()) / 2, (window.greenF() + text.greenF()) / 2,
                         (window.blueF() + text.blueF()) / 2);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, window);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(255, 90, 90));
    p.setColor(QPalette::Link, QColor(40, 120, 230));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, highlightedText);
    p.setColor(QPalette::Mid, mid);
    p.setColor(QPalette::Disabled, QPalette::Text, disabled);
    p.setColor(QPalette::Disabled, QPalette::WindowText, disabled);
    p.setColor(QPalette::Disabled, QPalette::ButtonText, disabled);
    return p;
}

QPalette darkPalette()
{
    return palette(QColor(45, 45, 48), QColor(30, 30, 32), QColor(220, 220, 220), QColor(80, 80, 84),
                   QColor(255, 160, 40), Qt::black);
}

QPalette lightPalette()
{
    return palette(QColor(239, 239, 239), Qt::white, Qt::black, QColor(160, 160, 160), QColor(220, 110, 0),
                   Qt::white);
}

bool apply(QApplication *app, const QString &name)
{
    if (name.isEmpty() || name == QLatin1String("system"))
        return true; // the platform theme already gave the style the desktop's palette
    if (name != QLatin1String("dark") && name != QLatin1String("light"))
        return false;
    app->setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    app->setPalette(name == QLatin1String("dark") ? darkPalette() : lightPalette());
    return true;
}

bool isDark(const QPalette &palette)
{
    return palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
}

QColor plotBackground(const QPalette &palette)
{
    return palette.color(QPalette::Base);
}

QColor text(const QPalette &palette)
{
    return palette.color(QPalette::Text);
}

QColor blend(const QColor &from, const QColor &to, double fraction)
{
    const double f = std::clamp(fraction, 0.0, 1.0);
    return QColor::fromRgbF(from.redF() + (to.redF() - from.redF()) * f,
                            from.greenF() + (to.greenF() - from.greenF()) * f,
                            from.blueF() + (to.blueF() - from.blueF()) * f);
}

QColor grid(const QPalette &palette)
{
    return blend(plotBackground(palette), text(palette), 0.25);
}

QColor highlight(const QPalette &palette)
{
    return palette.color(QPalette::Highlight);
}

QColor attention(const QPalette &palette)
{
    QColor h = highlight(palette).toHsv();
    int hue = h.hsvHue() < 0 ? 0 : (h.hsvHue() + 180) % 360;
    return QColor::fromHsv(hue, std::max(h.hsvSaturation(), 160), std::max(h.value(), 200));
}

QColor heat(const QPalette &palette, double fraction)
{
    return blend(plotBackground(palette), highlight(palette), fraction);
}

QColor pausedVeil(const QPalette &palette)
{
    QColor veil = text(palette);
    veil.setAlpha(64);
    return veil;
}

QColor notRecordingVeil(const QPalette &palette)
{
    QColor veil = QColor::fromHsl(0, 200, std::clamp(text(palette).lightness(), 90, 170));
    veil.setAlpha(64);
    return veil;
}

} // namespace theme
