#include "format.h"

#include <QFontMetrics>

#include <algorithm>
#include <cmath>

namespace
{
struct Unit {
    double ns;
    const char *name;
};
const Unit units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}, {1.0, "ns"}};

const Unit &unitFor(double magnitude)
{
    for (const Unit &unit : units)
        if (magnitude >= unit.ns)
            return unit;
    return units[3];
}

// Four significant digits, trailing zeros (and a trailing point) removed.
QString significant(double value)
{
    const double a = std::fabs(value);
    const int decimals = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : 3;
    QString text = QString::number(value, 'f', decimals);
    if (text.contains(QLatin1Char('.'))) {
        while (text.endsWith(QLatin1Char('0')))
            text.chop(1);
        if (text.endsWith(QLatin1Char('.')))
            text.chop(1);
    }
    return text == QLatin1String("-0") ? QStringLiteral("0") : text;
}
} // namespace

QString formatDuration(double ns)
{
    if (ns == 0.0)
        return QStringLiteral("0 s");
    const Unit &unit = unitFor(std::fabs(ns));
    return significant(ns / unit.ns) + QLatin1Char(' ') + QString::fromUtf8(unit.name);
}

QString formatTime(double ns, double resolutionNs, double magnitudeNs)
{
    const Unit &unit = unitFor(std::max({std::fabs(ns), std::fabs(magnitudeNs), 1.0}));
    const double resolution = std::max(1.0, resolutionNs) / unit.ns;
    const int decimals = std::clamp(int(std::ceil(-std::log10(resolution) - 1e-9)), 0, 9);
    return QString::number(ns / unit.ns, 'f', decimals) + QLatin1Char(' ') + QString::fromUtf8(unit.name);
}

QString formatBytes(double bytes)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024.0 && unit < 4) {
        bytes /= 1024.0;
        unit++;
    }
    return significant(bytes) + QLatin1Char(' ') + QLatin1String(names[unit]);
}

QString formatCount(double count)
{
    if (count >= 1e9)
        return significant(count / 1e9) + QStringLiteral(" G");
    if (count >= 1e6)
        return significant(count / 1e6) + QStringLiteral(" M");
    if (count >= 1e4)
        return significant(count / 1e3) + QStringLiteral(" k");
    return QString::number(count, 'f', 0);
}

QString elideToWidth(const QString &text, const QFont &font, int pixels)
{
    const QFontMetrics metrics(font);
    if (metrics.horizontalAdvance(text) <= pixels)
        return text;
    const QString elided = metrics.elidedText(text, Qt::ElideRight, pixels);
    return elided.size() >= 2 ? elided : QString();
}
