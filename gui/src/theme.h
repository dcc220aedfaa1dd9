// theme.h — the viewer's colours come from the palette of the style, which follows the desktop (light or
// dark): backgrounds, text, grid lines, the highlight of the critical path, the heat of the matrix and of
// the wait states are derived from it, never fixed, so a dark desktop gets a dark viewer. `--theme dark`
// (or light) sets Fusion with a dark (light) palette where the desktop's theme is not available.
#pragma once

#include <QColor>
#include <QPalette>
#include <QString>

class QApplication;

namespace theme
{

// "system" (the style's palette: the desktop's), "dark" or "light"; false for another name.
bool apply(QApplication *app, const QString &name);
QPalette darkPalette();
QPalette lightPalette();
// Whether the palette's window is darker than its text.
bool isDark(const QPalette &palette);

QColor plotBackground(const QPalette &palette); // the Base colour
QColor text(const QPalette &palette);
QColor grid(const QPalette &palette);      // between Base and Text
QColor highlight(const QPalette &palette); // the critical path, selected bars
QColor attention(const QPalette &palette); // waiting: the highlight's complementary hue
// From the background (0) to `accent` (1), for heat maps and shading.
QColor blend(const QColor &from, const QColor &to, double fraction);
QColor heat(const QPalette &palette, double fraction);
// The veils of steering periods over the timeline's rows, translucent: the application paused in the
// palette's Text (a shade on a light plot, a lift on a dark one), recording off in a red as light or dark
// as that Text, so both stand out from the Base and from each other in either theme.
QColor pausedVeil(const QPalette &palette);
QColor notRecordingVeil(const QPalette &palette);

} // namespace theme
