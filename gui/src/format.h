// format.h — how the viewer writes times, durations, sizes and rates.
#pragma once

#include <QString>
#include <QtGlobal>

QString formatDuration(double ns); // "1.25 ms"
QString formatBytes(double bytes); // "32.0 MiB"
QString formatCount(double count); // "123.5 k"
