#include "timeline_view.h"

#include "format.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

static const int Gutter = 84, AxisHeight = 22, MinRowHeight = 12;

TimelineView::TimelineView(TimelineModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    setMouseTracking(true);
    setMinimumSize(300, 120);
    setAutoFillBackground(true);
    QPalette p = palette();
    p.setColor(QPalette::Window, Qt::white);
    setPalette(p);
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

int TimelineView::rowAt(int y) const
{
    const QRect plot = plotRect();
    const int rows = int(m_model->rows().size());
    if (!rows || y < plot.top() || y >= plot.bottom())
        return -1;
    return std::min(rows - 1, int(double(y - plot.top()) / plot.height() * rows));
}

int TimelineView::rowOfRank(int rank) const
{
    const auto &rows = m_model->rows();
    for (int i = 0; i < rows.size(); i++)
        if (rank >= rows[i].firstRank && rank <= rows[i].lastRank)
            return i;
    return -1;
}

void TimelineView::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    const QRect plot = plotRect();
    painter.fillRect(plot, QColor(248, 248, 248));
    if (!m_model->hasViewport() || m_model->rows().isEmpty()) {
        painter.setPen(Qt::darkGray);
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
    painter.restore();
    // rank labels
    const auto &rows = m_model->rows();
    const double rowHeight = double(plot.height()) / rows.size();
    painter.setPen(Qt::black);
    QFont small = font();
    small.setPointSizeF(std::max(6.0, std::min(9.0, rowHeight * 0.6)));
    painter.setFont(small);
    const int every = std::max(1, int(std::ceil(12.0 / rowHeight)));
    for (int i = 0; i < rows.size(); i += every) {
        const QRectF label(2, plot.top() + i * rowHeight, Gutter - 6, std::max(rowHeight, 12.0));
        const QString text = rows[i].firstRank == rows[i].lastRank
                                 ? tr("rank %1").arg(rows[i].firstRank)
                                 : tr("%1–%2").arg(rows[i].firstRank).arg(rows[i].lastRank);
        painter.drawText(label, Qt::AlignRight | Qt::AlignVCenter, text);
    }
    drawAxis(painter, plot);
    if (m_selecting) {
        const int x0 = std::min(m_pressPos.x(), m_lastPos.x()), x1 = std::max(m_pressPos.x(), m_lastPos.x());
        painter.fillRect(QRect(x0, plot.top(), x1 - x0, plot.height()), QColor(0, 120, 215, 60));
        painter.setPen(QColor(0, 120, 215));
        painter.drawRect(QRect(x0, plot.top(), x1 - x0, plot.height()));
    }
    painter.setPen(Qt::darkGray);
    const QString mode =
        events ? tr("single events%1").arg(m_model->eventsTruncated() ? tr(" (truncated)") : QString())
               : tr("%1 bins × %2 rows%3")
                     .arg(m_model->columns())
                     .arg(rows.size())
                     .arg(m_model->grouped() ? tr(" (ranks grouped: mean)") : QString());
    painter.drawText(QRect(2, 2, Gutter - 4, AxisHeight - 4), Qt::AlignLeft | Qt::AlignVCenter,
                     m_model->followLive() ? tr("live") : QString());
    painter.drawText(plot.adjusted(4, 2, -4, 0), Qt::AlignRight | Qt::AlignTop, mode);
}

void TimelineView::drawBins(QPainter &painter, const QRect &plot)
{
    const auto &rows = m_model->rows();
    const auto &legend = m_model->legend();
    const double rowHeight = double(plot.height()) / rows.size();
    const int columns = m_model->columns();
    const QBrush hatch(QColor(90, 90, 90), Qt::BDiagPattern);
    for (int r = 0; r < rows.size(); r++) {
        const double y = plot.top() + r * rowHeight;
        const double h = std::max(1.0, rowHeight - (rowHeight > 4 ? 1.0 : 0.0));
        for (int c = 0; c < columns; c++) {
            const double x0 = xOf(m_model->columnStart(c)), x1 = xOf(m_model->columnEnd(c));
            if (x1 < plot.left() || x0 > plot.right())
                continue;
            const QRectF cell(x0, y, std::max(1.0, x1 - x0), h);
            const double busy = m_model->busy(r, c);
            const int d = m_model->dominant(r, c);
            if (busy > 0.0 || d >= 0) {
                QColor colour =
                    d >= 0 && d < legend.size() ? roleColor(legend[d].role) : QColor(150, 150, 150);
                const bool match = d >= 0 && d < legend.size() && legend[d].name == m_highlight;
                if (!m_highlight.isEmpty() && !match)
                    colour = QColor::fromHsv(colour.hsvHue(), colour.hsvSaturation() / 5, 235);
                else
                    colour.setAlphaF(0.35 + 0.65 * busy);
                painter.fillRect(cell, colour);
                if (match)
                    painter.fillRect(
                        QRectF(x0, y, std::max(1.0, x1 - x0), std::min(3.0, std::max(1.0, h / 8))),
                        Qt::black);
            }
            const quint64 width = m_model->columnEnd(c) - m_model->columnStart(c);
            if (width && rows[r].fields[TimelineModel::Reduced][c] * 2 >= width)
                painter.fillRect(cell, hatch);
        }
    }
}

void TimelineView::drawEvents(QPainter &painter, const QRect &plot)
{
    const auto &rows = m_model->rows();
    const double rowHeight = double(plot.height()) / rows.size();
    const QBrush hatch(QColor(90, 90, 90), Qt::BDiagPattern);
    for (const auto &interval : m_model->intervals()) {
        const int r = rowOfRank(interval.rank);
        if (r < 0)
            continue;
        const double x0 = std::max(double(plot.left()), xOf(interval.start));
        const double x1 = std::min(double(plot.right()), xOf(interval.end));
        if (x1 < plot.left() || x0 > plot.right())
            continue;
        const double inset = std::min(rowHeight * 0.4, interval.depth * rowHeight * 0.12);
        const QRectF rect(x0, plot.top() + r * rowHeight + inset, std::max(1.0, x1 - x0),
                          std::max(1.0, rowHeight - 1 - 2 * inset));
        if (interval.reduced) {
            painter.fillRect(rect, hatch);
            continue;
        }
        QColor colour = roleColor(m_model->roleOf(interval.name));
        if (!m_highlight.isEmpty() && interval.name != m_highlight)
            colour = QColor::fromHsv(colour.hsvHue(), colour.hsvSaturation() / 5, 235);
        painter.fillRect(rect, colour);
        if (rect.width() > 3) {
            painter.setPen(colour.darker(150));
            painter.drawRect(rect);
        }
        if (rect.width() > 40 && rect.height() > 9) {
            painter.setPen(Qt::white);
            painter.drawText(rect.adjusted(2, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter, interval.name);
        }
    }
    painter.setPen(QPen(Qt::black, 1));
    for (const auto &message : m_model->messages()) {
        const int a = rowOfRank(message.src), b = rowOfRank(message.dst);
        if (a < 0 || b < 0 || !message.sent || !message.received)
            continue;
        const QPointF from(xOf(message.sent), plot.top() + (a + 0.5) * rowHeight);
        const QPointF to(xOf(message.received), plot.top() + (b + 0.5) * rowHeight);
        painter.drawLine(from, to);
        painter.drawEllipse(to, 1.5, 1.5);
    }
}

void TimelineView::drawAxis(QPainter &painter, const QRect &plot)
{
    painter.setPen(Qt::black);
    painter.drawLine(plot.left(), plot.top() - 1, plot.right(), plot.top() - 1);
    const double span = double(m_model->to() - m_model->from());
    if (span <= 0)
        return;
    const double origin = double(m_model->origin());
    // A tick step of 1, 2 or 5 × 10^k ns giving about one tick per 120 pixels.
    const double raw = span / std::max(1.0, plot.width() / 120.0);
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    double step = power;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * power >= raw) {
            step = m * power;
            break;
        }
    const double first = std::ceil((double(m_model->from()) - origin) / step) * step;
    for (double t = first; t <= double(m_model->to()) - origin; t += step) {
        const double x = xOf(quint64(t + origin));
        painter.drawLine(QPointF(x, plot.top() - 5), QPointF(x, plot.top() - 1));
        painter.drawText(QRectF(x - 60, 0, 120, AxisHeight - 5), Qt::AlignCenter, formatDuration(t));
    }
}

void TimelineView::wheelEvent(QWheelEvent *event)
{
    const QRect plot = plotRect();
    const double anchor = double(event->position().x() - plot.left()) / plot.width();
    const double steps = event->angleDelta().y() / 120.0;
    if (steps != 0.0)
        m_model->zoom(std::pow(0.8, steps), anchor);
    event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent *event)
{
    m_pressPos = m_lastPos = event->pos();
    m_pressFrom = m_model->from();
    m_pressTo = m_model->to();
    if (event->button() == Qt::RightButton ||
        (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier)))
        m_selecting = true;
    else if (event->button() == Qt::LeftButton)
        m_panning = true;
}

void TimelineView::mouseMoveEvent(QMouseEvent *event)
{
    m_lastPos = event->pos();
    if (m_panning && m_model->hasViewport()) {
        const double span = double(m_pressTo - m_pressFrom);
        const double dt = double(m_pressPos.x() - event->pos().x()) / plotRect().width() * span;
        const double from = std::max(0.0, double(m_pressFrom) + dt);
        m_model->setViewport(quint64(from), quint64(from + span));
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
    const int row = rowAt(pos.y());
    if (row < 0 || pos.x() < plotRect().left())
        return QString();
    const quint64 time = timeAt(pos.x());
    if (m_model->hasEvents() && m_model->wantsEvents()) {
        const auto &rows = m_model->rows();
        const TimelineModel::Interval *best = nullptr;
        for (const auto &interval : m_model->intervals())
            if (interval.rank >= rows[row].firstRank && interval.rank <= rows[row].lastRank &&
                interval.start <= time && time < interval.end && (!best || interval.depth > best->depth))
                best = &interval;
        return best ? m_model->intervalText(*best) : tr("rank %1: no region").arg(rows[row].firstRank);
    }
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
