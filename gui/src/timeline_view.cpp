#include "timeline_view.h"

#include "format.h"
#include "theme.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

static const int Gutter = 84, AxisHeight = 22, MinRowHeight = 12;
// A message's arrow head, and how near its line the pointer must be to show the message.
static const double ArrowLength = 7.0, MessageHoverPixels = 3.0;

// Reduced stretches are hatched in a colour well apart from the plot's background, light or dark.
static QColor reducedHatch(const QPalette &palette)
{
    return theme::blend(theme::plotBackground(palette), theme::text(palette), 0.65);
}

TimelineView::TimelineView(TimelineModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setMinimumSize(300, 120);
    // The gutter and the ruler take the palette's window colour, the plot its base (theme.h): a dark
    // desktop or --theme dark gives a dark timeline.
    setAutoFillBackground(true);
    connect(model, &TimelineModel::dataChanged, this, qOverload<>(&QWidget::update));
    connect(model, &TimelineModel::viewportChanged, this, qOverload<>(&QWidget::update));
}

QColor TimelineView::roleColor(const QString &role)
{
    if (role == QLatin1String("user"))
        return QColor(76, 175, 80);
    if (role == QLatin1String("p2p"))
        return QColor(33, 150, 243);
    if (role == QLatin1String("collective"))
        return QColor(229, 57, 53);
    if (role == QLatin1String("mpi_other"))
        return QColor(142, 36, 170);
    if (role == QLatin1String("phase"))
        return QColor(255, 179, 0);
    return QColor(120, 120, 120);
}

QColor TimelineView::functionColor(const QString &name)
{
    // FNV-1a of the UTF-8 name: the same colour for a function in every run, session and viewer.
    quint32 hash = 2166136261u;
    for (const char c : name.toUtf8()) {
        hash ^= quint8(c);
        hash *= 16777619u;
    }
    // A final mix (MurmurHash3's), as names differing in a few letters differ in few bits of FNV's low
    // ones; then 30 hues 12° apart in three shades: 90 colours, chosen by the name alone.
    hash ^= hash >> 16;
    hash *= 0x85ebca6bu;
    hash ^= hash >> 13;
    hash *= 0xc2b2ae35u;
    hash ^= hash >> 16;
    static const int saturations[3] = {200, 230, 110}, values[3] = {230, 160, 245};
    const int hue = int(hash % 30u) * 12;
    const int shade = int((hash / 30u) % 3u);
    const int saturation = saturations[shade];
    const int value = values[shade];
    return QColor::fromHsv(hue, saturation, value);
}

QColor TimelineView::periodColor(const QPalette &palette, int kind)
{
    return kind == TimelineModel::Period::AppPaused ? theme::pausedVeil(palette)
                                                    : theme::notRecordingVeil(palette);
}

void TimelineView::setColourByFunction(bool byFunction)
{
    m_byFunction = byFunction;
    update();
}

QColor TimelineView::regionColor(const QString &name, const QString &role) const
{
    return m_byFunction ? functionColor(name) : roleColor(role);
}

void TimelineView::setHighlight(const QString &region)
{
    m_highlight = region;
    update();
}

QRect TimelineView::plotRect() const
{
    return QRect(Gutter, AxisHeight, std::max(1, width() - Gutter - 4),
                 std::max(1, height() - AxisHeight - 2));
}

void TimelineView::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    const QRect plot = plotRect();
    m_model->setPixelSize(plot.width(), std::max(1, plot.height() / MinRowHeight));
}

double TimelineView::xOf(quint64 time) const
{
    const QRect plot = plotRect();
    const double span = double(m_model->to() - m_model->from());
    return plot.left() + (double(time) - double(m_model->from())) / (span > 0 ? span : 1.0) * plot.width();
}

quint64 TimelineView::timeAt(int x) const
{
    const QRect plot = plotRect();
    const double fraction = std::clamp(double(x - plot.left()) / plot.width(), 0.0, 1.0);
    return m_model->from() + quint64(fraction * double(m_model->to() - m_model->from()));
}

double TimelineView::slotHeight(const QRect &plot) const
{
    return double(plot.height()) / std::max(1, m_model->slotCount());
}

int TimelineView::slotAt(int y) const
{
    const QRect plot = plotRect();
    const int slotTotal = m_model->slotCount();
    if (!slotTotal || y < plot.top() || y >= plot.bottom())
        return -1;
    return std::min(slotTotal - 1, int(double(y - plot.top()) / plot.height() * slotTotal));
}

int TimelineView::slotOfRank(int rank) const
{
    const auto &rows = m_model->rows();
    for (const auto &row : rows)
        if (rank >= row.firstRank && rank <= row.lastRank)
            return row.index;
    return -1;
}

QString TimelineView::modeText() const
{
    if (!m_model->hasViewport() || m_model->rows().isEmpty())
        return QString();
    QString text;
    if (m_model->hasEvents() && m_model->wantsEvents()) {
        text = tr("single events%1").arg(m_model->eventsTruncated() ? tr(" (truncated)") : QString());
        if (!m_model->messageFilter().isEmpty())
            text += tr(" · %1 of %2 messages shown (%3)")
                        .arg(m_model->shownMessages())
                        .arg(m_model->messages().size())
                        .arg(m_model->messageFilter().text());
    } else if (m_model->grouped())
        text = tr("%1 bins × %2 rows, ranks grouped: mean of %3 (Ctrl + wheel or a rank filter shows "
                  "single ranks)")
                   .arg(m_model->columns())
                   .arg(m_model->slotCount())
                   .arg(m_model->rows().first().ranks);
    else
        text = tr("%1 bins × %2 ranks").arg(m_model->columns()).arg(m_model->slotCount());
    if (m_model->followLive())
        text += tr(" · live");
    return text;
}

void TimelineView::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    const QRect plot = plotRect();
    painter.fillRect(plot, theme::plotBackground(palette()));
    if (!m_model->hasViewport() || m_model->rows().isEmpty()) {
        painter.setPen(theme::text(palette()));
        painter.drawText(plot, Qt::AlignCenter,
                         m_model->mode() == QLatin1String("empty") ? tr("no events held yet")
                                                                   : tr("waiting for the timeline …"));
        return;
    }
    const bool events = m_model->hasEvents() && m_model->wantsEvents();
    painter.save();
    painter.setClipRect(plot);
    if (events)
        drawEvents(painter, plot);
    else
        drawBins(painter, plot);
    // Steering periods as a veil over every row: what the ranks did there was waiting, not their work.
    for (const auto &period : m_model->periods()) {
        const double x0 = std::max(double(plot.left()), xOf(period.from));
        const double x1 = std::min(double(plot.right()), xOf(period.to));
        if (x1 <= x0)
            continue;
        const QRectF band(x0, plot.top(), std::max(1.0, x1 - x0), plot.height());
        QColor veil = periodColor(palette(), period.kind);
        painter.fillRect(band, veil);
        veil.setAlpha(std::min(255, veil.alpha() * 3)); // dotted too: a veil over what lies below
        painter.fillRect(band, QBrush(veil, Qt::Dense7Pattern));
    }
    painter.restore();
    // rank labels, one per slot (as many as fit)
    const double rowHeight = slotHeight(plot);
    painter.setPen(theme::text(palette()));
    QFont small = font();
    small.setPointSizeF(std::max(6.0, std::min(9.0, rowHeight * 0.6)));
    painter.setFont(small);
    for (const auto &label : slotLabels()) {
        const QRectF box(2, plot.top() + label.first * rowHeight, Gutter - 6, std::max(rowHeight, 12.0));
        painter.drawText(box, Qt::AlignRight | Qt::AlignVCenter,
                         elideToWidth(label.second, small, Gutter - 6));
    }
    painter.setFont(font());
    drawAxis(painter, plot);
    if (m_selecting) {
        const int x0 = std::min(m_pressPos.x(), m_lastPos.x()), x1 = std::max(m_pressPos.x(), m_lastPos.x());
        QColor band = theme::highlight(palette());
        painter.setPen(band);
        band.setAlpha(60);
        painter.fillRect(QRect(x0, plot.top(), x1 - x0, plot.height()), band);
        painter.drawRect(QRect(x0, plot.top(), x1 - x0, plot.height()));
    }
}

QVector<QPair<int, QString>> TimelineView::slotLabels() const
{
    QVector<QPair<int, QString>> out;
    const double rowHeight = slotHeight(plotRect());
    const int every = std::max(1, int(std::ceil(12.0 / rowHeight)));
    const auto &rows = m_model->rows();
    for (int slot = 0; slot < m_model->slotCount(); slot += every) {
        const int r = m_model->rowInSlot(slot);
        QString text;
        if (r >= 0)
            text = rows[r].firstRank == rows[r].lastRank
                       ? tr("rank %1").arg(rows[r].firstRank)
                       : tr("%1–%2").arg(rows[r].firstRank).arg(rows[r].lastRank);
        else if (!m_model->grouped() && m_model->rankAtPosition(m_model->rankFirst() + slot) >= 0)
            text = tr("rank %1").arg(m_model->rankAtPosition(m_model->rankFirst() + slot));
        if (!text.isEmpty())
            out.append(qMakePair(slot, text));
    }
    return out;
}

QStringList TimelineView::rankLabels() const
{
    QStringList out;
    if (!m_model->hasViewport() || m_model->rows().isEmpty())
        return out;
    for (const auto &label : slotLabels())
        out << label.second;
    return out;
}

int TimelineView::paintedSlots()
{
    const QImage image = grab().toImage();
    const QRect plot = plotRect();
    const QRgb background = theme::plotBackground(palette()).rgb();
    const double rowHeight = slotHeight(plot);
    int painted = 0;
    for (int slot = 0; slot < m_model->slotCount(); slot++) {
        const int top = plot.top() + int(slot * rowHeight), bottom = plot.top() + int((slot + 1) * rowHeight);
        bool any = false;
        for (int y = top; y < bottom && y < image.height() && !any; y++)
            for (int x = plot.left(); x <= plot.right() && x < image.width() && !any; x++)
                any = image.pixel(x, y) != background;
        painted += any;
    }
    return painted;
}

void TimelineView::drawBins(QPainter &painter, const QRect &plot)
{
    const auto &rows = m_model->rows();
    const auto &legend = m_model->legend();
    const double rowHeight = slotHeight(plot);
    const int columns = m_model->columns();
    const QBrush hatch(reducedHatch(palette()), Qt::BDiagPattern);
    for (int r = 0; r < rows.size(); r++) {
        const double y = plot.top() + rows[r].index * rowHeight;
        const double h = std::max(1.0, rowHeight - (rowHeight > 4 ? 1.0 : 0.0));
        for (int c = 0; c < columns; c++) {
            const double x0 = xOf(m_model->columnStart(c)), x1 = xOf(m_model->columnEnd(c));
            if (x1 < plot.left() || x0 > plot.right())
                continue;
            const QRectF cell(x0, y, std::max(1.0, x1 - x0), h);
            const double busy = m_model->busy(r, c);
            const int d = m_model->dominant(r, c);
            if (busy > 0.0 || d >= 0) {
                QColor colour = d >= 0 && d < legend.size() ? regionColor(legend[d].name, legend[d].role)
                                                            : QColor(150, 150, 150);
                const bool match = d >= 0 && d < legend.size() && legend[d].name == m_highlight;
                if (!m_highlight.isEmpty() && !match)
                    colour = theme::blend(theme::plotBackground(palette()), colour, 0.25);
                else
                    colour.setAlphaF(0.35 + 0.65 * busy);
                painter.fillRect(cell, colour);
                if (match)
                    painter.fillRect(
                        QRectF(x0, y, std::max(1.0, x1 - x0), std::min(3.0, std::max(1.0, h / 8))),
                        theme::text(palette()));
            }
            const quint64 width = m_model->columnEnd(c) - m_model->columnStart(c);
            if (width && rows[r].fields[TimelineModel::Reduced][c] * 2 >= width)
                painter.fillRect(cell, hatch);
        }
    }
}

QRectF TimelineView::intervalRect(const TimelineModel::Interval &interval, const QRect &plot) const
{
    const int slot = slotOfRank(interval.rank);
    if (slot < 0)
        return QRectF();
    const double rowHeight = slotHeight(plot);
    const double x0 = std::max(double(plot.left()), xOf(interval.start));
    const double x1 = std::min(double(plot.right()), xOf(interval.end));
    if (x1 < plot.left() || x0 > plot.right())
        return QRectF();
    const double inset = std::min(rowHeight * 0.4, interval.depth * rowHeight * 0.12);
    return QRectF(x0, plot.top() + slot * rowHeight + inset, std::max(1.0, x1 - x0),
                  std::max(1.0, rowHeight - 1 - 2 * inset));
}

void TimelineView::drawEvents(QPainter &painter, const QRect &plot)
{
    const QBrush hatch(reducedHatch(palette()), Qt::BDiagPattern);
    for (const auto &interval : m_model->intervals()) {
        const QRectF rect = intervalRect(interval, plot);
        if (rect.isNull())
            continue;
        if (interval.reduced) {
            painter.fillRect(rect, hatch);
            continue;
        }
        QColor colour = regionColor(interval.name, m_model->roleOf(interval.name));
        if (!m_highlight.isEmpty() && interval.name != m_highlight)
            colour = theme::blend(theme::plotBackground(palette()), colour, 0.25);
        painter.fillRect(rect, colour);
        if (rect.width() > 3) {
            painter.setPen(colour.darker(150));
            painter.drawRect(rect);
        }
        if (rect.width() > 24 && rect.height() > 9) {
            const QString name = elideToWidth(interval.name, painter.font(), int(rect.width()) - 4);
            if (!name.isEmpty()) {
                painter.setPen(colour.lightnessF() > 0.6 ? Qt::black : Qt::white);
                painter.drawText(rect.adjusted(2, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter, name);
            }
        }
    }
    const QColor ink = theme::text(palette());
    painter.setPen(QPen(ink, 1));
    painter.setBrush(ink);
    for (const auto &message : m_model->messages()) {
        const std::optional<QLineF> line = messageLine(message);
        if (!line)
            continue;
        painter.drawLine(*line);
        if (line->length() >= ArrowLength)
            painter.drawPolygon(arrowHead(*line));
        else // too short for a head to show which way: a dot at the receive end
            painter.drawEllipse(line->p2(), 1.5, 1.5);
    }
    painter.setBrush(Qt::NoBrush);
}

std::optional<QLineF> TimelineView::messageLine(const TimelineModel::Message &message) const
{
    const int a = slotOfRank(message.src), b = slotOfRank(message.dst);
    if (a < 0 || b < 0 || !message.sent || !message.received || !m_model->messageShown(message))
        return std::nullopt;
    const QRect plot = plotRect();
    const double rowHeight = slotHeight(plot);
    return QLineF(QPointF(xOf(message.sent), plot.top() + (a + 0.5) * rowHeight),
                  QPointF(xOf(message.received), plot.top() + (b + 0.5) * rowHeight));
}

QPolygonF TimelineView::arrowHead(const QLineF &line)
{
    if (line.length() <= 0)
        return QPolygonF();
    const QPointF along = (line.p2() - line.p1()) / line.length(), across(-along.y(), along.x());
    const QPointF base = line.p2() - along * ArrowLength;
    return QPolygonF({line.p2(), base + across * (ArrowLength / 2.5), base - across * (ArrowLength / 2.5)});
}

// The message whose line passes nearest `pos`, within a few pixels (null when none does).
const TimelineModel::Message *TimelineView::messageNear(const QPointF &pos) const
{
    const TimelineModel::Message *best = nullptr;
    double bestDistance = MessageHoverPixels;
    for (const auto &message : m_model->messages()) {
        const std::optional<QLineF> line = messageLine(message);
        if (!line)
            continue;
        const QPointF d = line->p2() - line->p1();
        const double squared = QPointF::dotProduct(d, d);
        const double t =
            squared > 0 ? std::clamp(QPointF::dotProduct(pos - line->p1(), d) / squared, 0.0, 1.0) : 0.0;
        const QPointF offset = pos - (line->p1() + d * t);
        const double distance = std::hypot(offset.x(), offset.y());
        if (distance <= bestDistance) {
            bestDistance = distance;
            best = &message;
        }
    }
    return best;
}

QVector<TimelineView::Tick> TimelineView::ticks() const
{
    QVector<Tick> out;
    const QRect plot = plotRect();
    const double span = double(m_model->to() - m_model->from());
    if (span <= 0 || !m_model->hasViewport())
        return out;
    const double origin = double(m_model->origin());
    // A tick step of 1, 2 or 5 × 10^k ns giving about one tick per 120 pixels; labels keep the decimals
    // the step needs, in the unit of the window's end, so neighbouring ticks always differ.
    const double raw = span / std::max(1.0, plot.width() / 120.0);
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    double step = power;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * power >= raw) {
            step = m * power;
            break;
        }
    step = std::max(1.0, step);
    const double end = double(m_model->to()) - origin;
    const double first = std::ceil((double(m_model->from()) - origin) / step) * step;
    for (int k = 0; k < 1000; k++) {
        const double t = first + k * step; // no accumulated rounding
        if (t > end)
            break;
        out.append(Tick{xOf(quint64(std::llround(std::max(0.0, t + origin)))), formatTime(t, step, end)});
    }
    return out;
}

void TimelineView::drawAxis(QPainter &painter, const QRect &plot)
{
    painter.setPen(theme::grid(palette()));
    painter.drawLine(plot.left(), plot.top() - 1, plot.right(), plot.top() - 1);
    for (const Tick &tick : ticks())
        painter.drawLine(QPointF(tick.x, plot.top() - 5), QPointF(tick.x, plot.top() - 1));
    painter.setPen(theme::text(palette()));
    for (const Tick &tick : ticks()) {
        painter.drawText(QRectF(tick.x - 60, 0, 120, AxisHeight - 5), Qt::AlignCenter, tick.label);
    }
}

void TimelineView::wheelEvent(QWheelEvent *event)
{
    const QRect plot = plotRect();
    const double steps = event->angleDelta().y() / 120.0;
    if (steps != 0.0) {
        if (event->modifiers() & Qt::ControlModifier)
            m_model->zoomRanks(std::pow(0.8, steps),
                               double(event->position().y() - plot.top()) / plot.height());
        else if (event->modifiers() & Qt::ShiftModifier)
            m_model->scrollRanks(-int(std::lround(steps * std::max(1.0, m_model->rankCount() / 10.0))));
        else
            m_model->zoom(std::pow(0.8, steps), double(event->position().x() - plot.left()) / plot.width());
    }
    event->accept();
}

void TimelineView::keyPressEvent(QKeyEvent *event)
{
    const bool ctrl = event->modifiers() & Qt::ControlModifier;
    const bool alt = event->modifiers() & Qt::AltModifier;
    const int page = std::max(1, m_model->rankCount());
    switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        ctrl ? m_model->zoomRanks(0.5, 0.5) : m_model->zoom(0.5, 0.5);
        break;
    case Qt::Key_Minus:
        ctrl ? m_model->zoomRanks(2.0, 0.5) : m_model->zoom(2.0, 0.5);
        break;
    case Qt::Key_Left:
        alt ? m_model->back() : m_model->pan(-0.2);
        break;
    case Qt::Key_Right:
        alt ? m_model->forward() : m_model->pan(0.2);
        break;
    case Qt::Key_Backspace:
        m_model->back();
        break;
    case Qt::Key_Up:
        m_model->scrollRanks(-1);
        break;
    case Qt::Key_Down:
        m_model->scrollRanks(1);
        break;
    case Qt::Key_PageUp:
        m_model->scrollRanks(-page);
        break;
    case Qt::Key_PageDown:
        m_model->scrollRanks(page);
        break;
    case Qt::Key_Home:
        m_model->showEverything();
        break;
    default:
        QWidget::keyPressEvent(event);
        return;
    }
    event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent *event)
{
    setFocus(Qt::MouseFocusReason);
    m_pressPos = m_lastPos = event->pos();
    m_pressFrom = m_model->from();
    m_pressTo = m_model->to();
    if (event->button() == Qt::RightButton ||
        (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier))) {
        m_selecting = true;
    } else if (event->button() == Qt::LeftButton) {
        m_panning = true;
        m_model->remember(); // one history entry per drag, not one per mouse move
    }
}

void TimelineView::mouseMoveEvent(QMouseEvent *event)
{
    m_lastPos = event->pos();
    if (m_panning && m_model->hasViewport()) {
        const double span = double(m_pressTo - m_pressFrom);
        const double dt = double(m_pressPos.x() - event->pos().x()) / plotRect().width() * span;
        const double from = std::max(0.0, double(m_pressFrom) + dt);
        m_model->setViewport(quint64(from), quint64(from + span), false);
    } else if (m_selecting) {
        update();
    }
}

void TimelineView::mouseReleaseEvent(QMouseEvent *event)
{
    if (m_selecting) {
        m_selecting = false;
        const int x0 = std::min(m_pressPos.x(), event->pos().x()),
                  x1 = std::max(m_pressPos.x(), event->pos().x());
        if (x1 - x0 >= 4)
            m_model->setViewport(timeAt(x0), timeAt(x1));
        update();
    }
    m_panning = false;
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent *)
{
    m_model->showAll();
}

QString TimelineView::tooltipAt(const QPoint &pos) const
{
    const int slot = slotAt(pos.y());
    if (slot < 0 || pos.x() < plotRect().left())
        return QString();
    const int row = m_model->rowInSlot(slot);
    const quint64 time = timeAt(pos.x());
    QString steering;
    for (const auto &period : m_model->periods())
        if (period.from <= time && time <= period.to)
            steering += QLatin1Char('\n') + m_model->periodText(period);
    return tooltipOfData(pos, slot, row, time) + steering;
}

QString TimelineView::tooltipOfData(const QPoint &pos, int slot, int row, quint64 time) const
{
    if (m_model->hasEvents() && m_model->wantsEvents()) {
        // Message lines are drawn over the regions, so they are what the pointer is over first.
        if (const TimelineModel::Message *message = messageNear(pos))
            return m_model->messageText(*message);
        // The instance drawn under the pointer: the deepest whose (inset) strip holds the point, so a
        // parent's strip above or below its child shows the parent.
        const QRect plot = plotRect();
        const TimelineModel::Interval *best = nullptr;
        for (const auto &interval : m_model->intervals()) {
            const QRectF rect = intervalRect(interval, plot);
            if (!rect.isNull() && rect.adjusted(0, 0, 0.5, 0.5).contains(pos) &&
                (!best || interval.depth > best->depth))
                best = &interval;
        }
        if (best)
            return m_model->intervalText(*best);
        const int rank =
            row >= 0 ? m_model->rows()[row].firstRank : m_model->rankAtPosition(m_model->rankFirst() + slot);
        return tr("rank %1: no region").arg(rank);
    }
    if (row < 0)
        return tr("no events held for these ranks here");
    for (int c = 0; c < m_model->columns(); c++)
        if (m_model->columnStart(c) <= time && time < m_model->columnEnd(c))
            return m_model->cellText(row, c);
    return QString();
}

bool TimelineView::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QString text = tooltipAt(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(event);
}
