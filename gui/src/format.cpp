#include "format.h"

#include <cmath>

QString formatDuration(double ns)
{
    const double a = std::fabs(ns);
    if (a >= 1e9)
        return QString::number(ns / 1e9, 'f', a >= 100e9 ? 0 : 3) + QStringLiteral(" s");
    if (a >= 1e6)
        return QString::number(ns / 1e6, 'f', 3) + QStringLiteral(" ms");
    if (a >= 1e3)
        return QString::number(ns / 1e3, 'f', 3) + QStringLiteral(" µs");
    if (a == 0.0)
        return QStringLiteral("0 s");
    return QString::number(ns, 'f', 0) + QStringLiteral(" ns");
}

QString formatBytes(double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024.0 && unit < 4) {
        bytes /= 1024.0;
        unit++;
    }
    return QString::number(bytes, 'f', unit ? 1 : 0) + QLatin1Char(' ') + QLatin1String(units[unit]);
}

QString formatCount(double count)
{
    if (count >= 1e9)
        return QString::number(count / 1e9, 'f', 2) + QStringLiteral(" G");
    if (count >= 1e6)
        return QString::number(count / 1e6, 'f', 2) + QStringLiteral(" M");
    if (count >= 1e4)
        return QString::number(count / 1e3, 'f', 1) + QStringLiteral(" k");
    return QString::number(count, 'f', 0);
}
