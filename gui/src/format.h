// format.h — how the viewer writes times, durations, sizes and rates: one style everywhere (a unit,
// at most four significant digits, no trailing zeros), except for times on the ruler and in hover
// texts, which keep as many decimals as the resolution they stand for needs.
#pragma once

#include <QString>
#include <QtGlobal>

QString formatDuration(double ns); // "1.25 ms", "50 s", "100 s", "465.2 s"
// A point in time (ns since the job's start) shown to `resolutionNs`: the unit follows the larger of
// |ns| and `magnitudeNs` (so every tick of one ruler has the same unit), the decimals follow the
// resolution, zeros kept so neighbouring labels line up ("36.4865 s", "36.4870 s").
QString formatTime(double ns, double resolutionNs, double magnitudeNs = 0.0);
QString formatBytes(double bytes); // "32 MiB", "1.5 KiB"
QString formatCount(double count); // "123.5 k", "143.7 M"
// `text` cut to `pixels` of `font` with an ellipsis, or empty when not even "x…" fits.
class QFont;
QString elideToWidth(const QString &text, const QFont &font, int pixels);
