#include "overview_view.h"

#include "theme.h"
#include "timeline_view.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

static const int Gutter = 84; // as the timeline's, so times line up

OverviewView::OverviewView(TimelineModel *overview, TimelineModel *timeline, const TimelineView *colours,
                           QWidget *parent)
    : QWidget(parent), m_overview(overview), m_timeline(timeline), m_colours(colours)
{
    setMinimumHeight(26);
    setMaximumHeight(40);
    setToolTip(tr("The whole run: click to centre the timeline there, drag to show a range"));
    connect(overview, &TimelineModel::dataChanged, this, qOverload<>(&QWidget::update));
    connect(timeline, &TimelineModel::viewportChanged, this, qOverload<>(&QWidget::update));
    connect(timeline, &TimelineModel::dataChanged, this, qOverload<>(&QWidget::update));
}

QRect OverviewView::plotRect() const
{
    return QRect(Gutter, 2, std::max(1, width() - Gutter - 4), std::max(1, height() - 4));
}

void OverviewView::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    m_overview->setPixelSize(plotRect().width(), 1);
}

double OverviewView::xOf(quint64 time) const
{
    const QRect plot = plotRect();
    const double span = double(m_overview->dataTo() - m_overview->dataFrom());
    return plot.left() +
           (double(time) - double(m_overview->dataFrom())) / (span > 0 ? span : 1.0) * plot.width();
}

quint64 OverviewView::timeAt(int x) const
{
    const QRect plot = plotRect();
    const double fraction = std::clamp(double(x - plot.left()) / plot.width(), 0.0, 1.0);
    return m_overview->dataFrom() + quint64(fraction * double(m_overview->dataTo() - m_overview->dataFrom()));
}

QRect OverviewView::windowRect() const
{
    if (!m_timeline->hasViewport() || m_overview->columns() == 0 ||
        m_overview->dataTo() <= m_overview->dataFrom())
        return QRect();
    const QRect plot = plotRect();
    const double x0 = std::clamp(xOf(m_timeline->from()), double(plot.left()), double(plot.right()));
    const double x1 = std::clamp(xOf(m_timeline->to()), double(plot.left()), double(plot.right()));
    return QRect(int(x0), plot.top(), std::max(2, int(x1 - x0)), plot.height());
}

void OverviewView::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    const QRect plot = plotRect();
    painter.fillRect(plot, theme::plotBackground(palette()));
    painter.setPen(theme::grid(palette()));
    painter.drawRect(plot.adjusted(0, 0, -1, -1));
    painter.setPen(theme::text(palette()));
    painter.drawText(QRect(2, 0, Gutter - 6, height()), Qt::AlignRight | Qt::AlignVCenter, tr("whole run"));
    const auto &legend = m_overview->legend();
    if (!m_overview->rows().isEmpty()) {
        // One bar per column: its height the busy share of all ranks, its colour the dominant region.
        for (int c = 0; c < m_overview->columns(); c++) {
            const double x0 = xOf(m_overview->columnStart(c)), x1 = xOf(m_overview->columnEnd(c));
            const double busy = m_overview->busy(0, c);
            const int d = m_overview->dominant(0, c);
            if (busy <= 0.0 && d < 0)
                continue;
            const QColor colour = d >= 0 && d < legend.size()
                                      ? m_colours->regionColor(legend[d].name, legend[d].role)
                                      : QColor(150, 150, 150);
            const double h = std::max(2.0, busy * plot.height());
            painter.fillRect(QRectF(x0, plot.bottom() + 1 - h, std::max(1.0, x1 - x0), h), colour);
        }
    }
    const QRect window = m_dragging ? QRect(std::min(m_pressX, m_lastX), plot.top(),
                                            std::max(2, std::abs(m_lastX - m_pressX)), plot.height())
                                    : windowRect();
    if (!window.isNull()) {
        QColor marked = theme::highlight(palette());
        painter.setPen(QPen(marked, 1));
        marked.setAlpha(50);
        painter.fillRect(window, marked);
        painter.drawRect(window.adjusted(0, 0, -1, -1));
    }
}

void OverviewView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton || m_overview->columns() == 0)
        return;
    m_dragging = true;
    m_pressX = m_lastX = event->pos().x();
}

void OverviewView::mouseMoveEvent(QMouseEvent *event)
{
    if (!m_dragging)
        return;
    m_lastX = event->pos().x();
    update();
}

void OverviewView::mouseReleaseEvent(QMouseEvent *event)
{
    if (!m_dragging)
        return;
    m_dragging = false;
    const int x0 = std::min(m_pressX, event->pos().x()), x1 = std::max(m_pressX, event->pos().x());
    if (x1 - x0 >= 4) {
        m_timeline->setViewport(timeAt(x0), timeAt(x1));
    } else {
        // Centre the window (its width kept; everything held's width when showing all) at the click.
        const quint64 span = m_timeline->hasViewport() ? m_timeline->to() - m_timeline->from()
                                                       : (m_overview->dataTo() - m_overview->dataFrom()) / 10;
        const quint64 at = timeAt(event->pos().x());
        const quint64 from = at > span / 2 ? at - span / 2 : 0;
        m_timeline->setViewport(from, from + span);
    }
    update();
}
