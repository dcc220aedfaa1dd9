#include "analysis_charts.h"

#include "format.h"
#include "theme.h"
#include "timeline_model.h"
#include "timeline_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>

// ---- BarChart ---------------------------------------------------------------------------------------

BarChart::BarChart(QWidget *parent) : QWidget(parent)
{
    setMinimumHeight(80);
}

void BarChart::setBars(const QString &title, const QVector<Bar> &bars, int marked)
{
    m_title = title;
    m_bars = bars;
    m_marked = marked;
    update();
}

int BarChart::visibleBars() const
{
    // as many as fit with their labels readable; the title says how many more there are
    const int room = height() - (fontMetrics().height() + 4) - 2;
    return std::min(int(m_bars.size()), std::max(1, room / (fontMetrics().height() + 2)));
}

QRectF BarChart::barRect(int index) const
{
    const int titleHeight = fontMetrics().height() + 4;
    const double rowHeight =
        m_bars.isEmpty() ? 0.0 : std::min(22.0, double(height() - titleHeight - 2) / visibleBars());
    const int labelWidth = std::min(width() / 3, 160);
    const int valueWidth = fontMetrics().horizontalAdvance(QStringLiteral("000.00 ms ")) + 4;
    double maximum = 0.0;
    for (const Bar &bar : m_bars)
        maximum = std::max(maximum, bar.length);
    const double full = std::max(1, width() - labelWidth - valueWidth - 8);
    const double length = maximum > 0.0 ? m_bars[index].length / maximum * full : 0.0;
    return QRectF(labelWidth + 4, titleHeight + index * rowHeight + 1, std::max(length, 0.0),
                  std::max(1.0, rowHeight - 2));
}

int BarChart::barAt(const QPoint &pos) const
{
    for (int i = 0; i < visibleBars(); i++) {
        const QRectF r = barRect(i);
        if (pos.y() >= r.top() && pos.y() < r.bottom() + 2)
            return i;
    }
    return -1;
}

void BarChart::mousePressEvent(QMouseEvent *event)
{
    const int index = barAt(event->pos());
    if (index >= 0)
        emit barClicked(index);
}

void BarChart::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    const QPalette &p = palette();
    painter.fillRect(rect(), theme::plotBackground(p));
    painter.setPen(theme::text(p));
    const int shown = visibleBars();
    painter.drawText(QRect(4, 2, width() - 8, fontMetrics().height()), Qt::AlignLeft | Qt::AlignVCenter,
                     shown < m_bars.size()
                         ? tr("%1 (the first %2 of %3)").arg(m_title).arg(shown).arg(m_bars.size())
                         : m_title);
    if (m_bars.isEmpty())
        return;
    const int labelWidth = std::min(width() / 3, 160);
    const bool labels = barRect(0).height() >= fontMetrics().height() * 0.7;
    for (int i = 0; i < shown; i++) {
        const QRectF r = barRect(i);
        const QColor fill = i == m_marked ? theme::highlight(p) : theme::heat(p, 0.55);
        painter.fillRect(r, fill);
        if (!labels)
            continue;
        painter.setPen(theme::text(p));
        painter.drawText(QRectF(2, r.top(), labelWidth - 2, r.height()), Qt::AlignRight | Qt::AlignVCenter,
                         fontMetrics().elidedText(m_bars[i].label, Qt::ElideMiddle, labelWidth - 4));
        painter.drawText(QRectF(r.right() + 4, r.top(), width() - r.right() - 6, r.height()),
                         Qt::AlignLeft | Qt::AlignVCenter, m_bars[i].value);
    }
}

// ---- MatrixView -------------------------------------------------------------------------------------

MatrixView::MatrixView(MessageMatrixModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    connect(model, &MessageMatrixModel::changed, this, qOverload<>(&QWidget::update));
    setMouseTracking(true);
}

void MatrixView::setShowBytes(bool bytes)
{
    m_bytes = bytes;
    update();
}

QRect MatrixView::plotRect() const
{
    const int gutter = fontMetrics().horizontalAdvance(QStringLiteral("0000–0000")) + 8;
    const int top = fontMetrics().height() * 2 + 6;
    const int side = std::max(1, std::min(width() - gutter - 4, height() - top - 4));
    return QRect(gutter, top, side, side);
}

QPoint MatrixView::cellAt(const QPoint &pos) const
{
    const QRect plot = plotRect();
    const int n = m_model->groups();
    if (!n || !plot.contains(pos))
        return QPoint(-1, -1);
    const int src = std::min(n - 1, int(double(pos.y() - plot.top()) / plot.height() * n));
    const int dst = std::min(n - 1, int(double(pos.x() - plot.left()) / plot.width() * n));
    return QPoint(src, dst);
}

QColor MatrixView::cellColour(int src, int dst) const
{
    const quint64 maximum = m_model->maximum(m_bytes);
    const MessageMatrixModel::Cell c = m_model->cell(src, dst);
    const quint64 v = m_bytes ? c.bytes : c.count;
    if (!v || !maximum)
        return theme::plotBackground(palette());
    // logarithmic, so that a few heavy pairs do not hide the rest; any traffic is visible
    const double fraction = 0.15 + 0.85 * std::log1p(double(v)) / std::log1p(double(maximum));
    return theme::heat(palette(), fraction);
}

void MatrixView::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    const QPalette &p = palette();
    painter.fillRect(rect(), p.color(QPalette::Window));
    painter.setPen(theme::text(p));
    painter.drawText(QRect(4, 2, width() - 8, fontMetrics().height()), Qt::AlignLeft,
                     m_model->hasAnswer() ? m_model->summary()
                                          : tr("Ask for the matrix of the visible window"));
    const int n = m_model->groups();
    const QRect plot = plotRect();
    painter.fillRect(plot, theme::plotBackground(p));
    if (!n)
        return;
    painter.drawText(QRect(plot.left(), fontMetrics().height() + 4, plot.width(), fontMetrics().height()),
                     Qt::AlignCenter, tr("receiver →"));
    const double cell = double(plot.width()) / n;
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++) {
            const QColor c = cellColour(s, d);
            if (c != theme::plotBackground(p))
                painter.fillRect(QRectF(plot.left() + d * cell, plot.top() + s * cell, std::max(1.0, cell),
                                        std::max(1.0, cell)),
                                 c);
        }
    painter.setPen(theme::grid(p));
    painter.drawRect(plot.adjusted(0, 0, -1, -1));
    painter.setPen(theme::text(p));
    const int every = std::max(1, int(std::ceil(fontMetrics().height() / cell)));
    for (int s = 0; s < n; s += every)
        painter.drawText(QRectF(0, plot.top() + s * cell, plot.left() - 4, std::max(cell, 1.0)),
                         Qt::AlignRight | Qt::AlignVCenter, m_model->label(s));
}

bool MatrixView::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QPoint at = cellAt(help->pos());
        if (at.x() < 0) {
            QToolTip::hideText();
        } else {
            const MessageMatrixModel::Cell c = m_model->cell(at.x(), at.y());
            QToolTip::showText(help->globalPos(),
                               tr("from %1 to %2: %3 messages, %4")
                                   .arg(m_model->label(at.x()), m_model->label(at.y()))
                                   .arg(c.count)
                                   .arg(formatBytes(double(c.bytes))),
                               this);
        }
        return true;
    }
    return QWidget::event(event);
}

// ---- MetricHeatMap ----------------------------------------------------------------------------------

MetricHeatMap::MetricHeatMap(MetricsModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    connect(model, &MetricsModel::timelineChanged, this, qOverload<>(&QWidget::update));
    setMouseTracking(true);
    setMinimumHeight(80);
}

QRect MetricHeatMap::plotRect() const
{
    const int gutter = fontMetrics().horizontalAdvance(QStringLiteral("0000–0000")) + 8;
    const int top = fontMetrics().height() + 6;
    return QRect(gutter, top, std::max(1, width() - gutter - 4), std::max(1, height() - top - 4));
}

QPoint MetricHeatMap::cellAt(const QPoint &pos) const
{
    const QRect plot = plotRect();
    const int rows = int(m_model->rows().size()), columns = m_model->bins();
    if (!rows || columns <= 0 || !plot.contains(pos))
        return QPoint(-1, -1);
    const int row = std::min(rows - 1, int(double(pos.y() - plot.top()) / plot.height() * rows));
    const int column = std::min(columns - 1, int(double(pos.x() - plot.left()) / plot.width() * columns));
    return QPoint(row, column);
}

QColor MetricHeatMap::cellColour(int row, int column) const
{
    const double maximum = m_model->maximumMean();
    const QVector<double> &mean = m_model->rows()[row].mean;
    if (column >= mean.size() || std::isnan(mean[column]) || maximum <= 0.0)
        return theme::plotBackground(palette());
    // linear: a rate's share of the largest reads directly; any growth at all stays visible
    return theme::heat(palette(), 0.1 + 0.9 * std::max(0.0, mean[column]) / maximum);
}

void MetricHeatMap::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    const QPalette &p = palette();
    painter.fillRect(rect(), p.color(QPalette::Window));
    painter.setPen(theme::text(p));
    painter.drawText(QRect(4, 2, width() - 8, fontMetrics().height()), Qt::AlignLeft,
                     m_model->timelineSummary());
    const QRect plot = plotRect();
    painter.fillRect(plot, theme::plotBackground(p));
    const int rows = int(m_model->rows().size()), columns = m_model->bins();
    if (rows && columns > 0) {
        const double h = double(plot.height()) / rows, w = double(plot.width()) / columns;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < columns; c++) {
                const QColor colour = cellColour(r, c);
                if (colour != theme::plotBackground(p))
                    painter.fillRect(
                        QRectF(plot.left() + c * w, plot.top() + r * h, std::max(1.0, w), std::max(1.0, h)),
                        colour);
            }
        painter.setPen(theme::text(p));
        const int every = std::max(1, int(std::ceil(fontMetrics().height() / h)));
        for (int r = 0; r < rows; r += every)
            painter.drawText(QRectF(0, plot.top() + r * h, plot.left() - 4, std::max(h, 1.0)),
                             Qt::AlignRight | Qt::AlignVCenter, m_model->rowLabel(r));
    }
    painter.setPen(theme::grid(p));
    painter.drawRect(plot.adjusted(0, 0, -1, -1));
}

bool MetricHeatMap::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QPoint at = cellAt(help->pos());
        const MetricsModel::Row *row = at.x() >= 0 ? &m_model->rows()[at.x()] : nullptr;
        if (!row || at.y() >= row->mean.size() || std::isnan(row->mean[at.y()])) {
            QToolTip::hideText();
        } else {
            const int c = at.y();
            const double width = double(m_model->timelineTo() - m_model->timelineFrom()) / m_model->bins();
            const double start = double(m_model->timelineFrom()) + c * width;
            const QString unit = m_model->timelineUnit() + QStringLiteral("/s");
            QToolTip::showText(help->globalPos(),
                               tr("ranks %1, %2 – %3\nmin %4 %7\nmean %5 %7\nmax %6 %7")
                                   .arg(m_model->rowLabel(at.x()), formatDuration(start),
                                        formatDuration(start + width), formatCount(row->min[c]),
                                        formatCount(row->mean[c]), formatCount(row->max[c]), unit),
                               this);
        }
        return true;
    }
    return QWidget::event(event);
}

// ---- StructureGraphView -----------------------------------------------------------------------------

StructureGraphView::StructureGraphView(StructureModel *model, QWidget *parent)
    : QWidget(parent), m_model(model)
{
    connect(model, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
}

void StructureGraphView::setGroup(int group)
{
    m_group = group;
    update();
}

void StructureGraphView::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing);
    const QPalette &p = palette();
    painter.fillRect(rect(), theme::plotBackground(p));
    const StructureModel::GroupInfo *group = nullptr;
    for (const auto &g : m_model->groups())
        if (g.group == m_group)
            group = &g;
    painter.setPen(theme::text(p));
    if (!group || group->nodes.isEmpty()) {
        painter.drawText(rect(), Qt::AlignCenter,
                         m_model->hasAnswer() ? tr("no graph for this group")
                                              : tr("Ask for the program's structure"));
        return;
    }
    // order: a walk along the most frequent successors from the most visited node, then the rest
    QVector<int> order;
    QHash<int, int> position;
    int start = group->nodes[0].id;
    quint64 most = 0;
    for (const auto &n : group->nodes)
        if (n.visits > most) {
            most = n.visits;
            start = n.id;
        }
    for (int at = start; at >= 0 && !position.contains(at);) {
        position.insert(at, int(order.size()));
        order.append(at);
        int next = -1;
        quint64 count = 0;
        for (const auto &e : group->edges)
            if (e.from == at && e.count > count && !position.contains(e.to)) {
                count = e.count;
                next = e.to;
            }
        at = next;
    }
    for (const auto &n : group->nodes)
        if (!position.contains(n.id)) {
            position.insert(n.id, int(order.size()));
            order.append(n.id);
        }
    const int count = int(order.size());
    const int columns =
        std::max(1, int(std::ceil(std::sqrt(double(count) * width() / std::max(1, height())))));
    const int rows = (count + columns - 1) / columns;
    const double cellW = double(width()) / columns,
                 cellH = double(height() - 24 - fontMetrics().height()) / std::max(1, rows);
    const double boxW = std::min(150.0, cellW * 0.8), boxH = std::min(54.0, cellH * 0.7);
    auto centre = [&](int id) {
        const int i = position.value(id);
        const int row = i / columns, column = row % 2 ? columns - 1 - i % columns : i % columns; // snake
        return QPointF(cellW * (column + 0.5), 20 + cellH * (row + 0.5));
    };
    quint64 maxCount = 1;
    for (const auto &e : group->edges)
        maxCount = std::max(maxCount, e.count);
    painter.drawText(QRect(4, 2, width() - 8, 16), Qt::AlignLeft,
                     tr("group %1: ranks %2, %3 nodes, %4 edges (representative rank %5)")
                         .arg(group->group)
                         .arg(group->ranks)
                         .arg(group->nodes.size())
                         .arg(group->edges.size())
                         .arg(group->representative));
    const QColor edgeColour = theme::grid(p);
    for (const auto &e : group->edges) {
        if (!position.contains(e.from) || !position.contains(e.to))
            continue;
        const QPointF a = centre(e.from), b = centre(e.to);
        painter.setPen(QPen(edgeColour, 1.0 + 3.0 * double(e.count) / double(maxCount)));
        if (e.from == e.to) {
            painter.setBrush(Qt::NoBrush);
            painter.drawEllipse(QPointF(a.x() + boxW / 2, a.y() - boxH / 2), 8, 8);
            continue;
        }
        painter.drawLine(a, b);
        const QLineF line(b, a);
        const double angle = std::atan2(-line.dy(), line.dx());
        const QPointF tip = b + (a - b) * std::min(0.45, boxH / std::max(1.0, line.length()));
        QPainterPath arrow(tip);
        arrow.lineTo(tip + QPointF(std::sin(angle + M_PI / 3) * 8, std::cos(angle + M_PI / 3) * 8));
        arrow.lineTo(tip +
                     QPointF(std::sin(angle + M_PI - M_PI / 3) * 8, std::cos(angle + M_PI - M_PI / 3) * 8));
        arrow.closeSubpath();
        painter.fillPath(arrow, edgeColour);
    }
    QHash<int, QStringList> partners; // node → "send +1", "recv −1 (g2)"
    for (const auto &peer : group->peers)
        partners[peer.node] << QStringLiteral("%1 %2%3")
                                   .arg(peer.send ? tr("send") : tr("recv"))
                                   .arg(peer.offset > 0 ? QStringLiteral("+") : QString())
                                   .arg(peer.offset);
    for (const auto &n : group->nodes) {
        const QPointF c = centre(n.id);
        const QRectF box(c.x() - boxW / 2, c.y() - boxH / 2, boxW, boxH);
        const double share = most ? double(n.visits) / double(most) : 0.0;
        painter.setPen(theme::text(p));
        painter.setBrush(n.kind == QLatin1String("mpi")
                             ? theme::heat(p, 0.25 + 0.5 * share)
                             : theme::blend(theme::plotBackground(p), theme::grid(p), 0.5));
        painter.drawRoundedRect(box, 4, 4);
        painter.drawText(box.adjusted(3, 1, -3, -1), Qt::AlignCenter,
                         fontMetrics().elidedText(n.name, Qt::ElideRight, int(boxW) - 6) + QLatin1Char('\n') +
                             tr("%1× %2").arg(n.visits).arg(formatDuration(double(n.meanNs))) +
                             (partners.contains(n.id)
                                  ? QLatin1Char('\n') + partners[n.id].join(QLatin1Char(' '))
                                  : QString()));
    }
    // the most frequent causal path between two visits of the anchor, by node names
    if (!group->paths.isEmpty()) {
        QHash<int, QString> names;
        for (const auto &n : group->nodes)
            names.insert(n.id, n.name);
        QStringList steps;
        for (int id : group->paths[0].nodes)
            steps << names.value(id, QString::number(id));
        painter.setPen(theme::text(p));
        painter.drawText(QRect(4, height() - fontMetrics().height() - 2, width() - 8, fontMetrics().height()),
                         Qt::AlignLeft,
                         fontMetrics().elidedText(tr("most frequent path (%1×): %2")
                                                      .arg(group->paths[0].count)
                                                      .arg(steps.join(QStringLiteral(" → "))),
                                                  Qt::ElideRight, width() - 8));
    }
}

// ---- TimelineOverlay --------------------------------------------------------------------------------

TimelineOverlay::TimelineOverlay(TimelineView *view, TimelineModel *timeline, CriticalPathModel *path,
                                 WaitStatesModel *waits)
    : QWidget(view), m_view(view), m_timeline(timeline), m_path(path), m_waits(waits)
{
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setAttribute(Qt::WA_NoSystemBackground);
    setGeometry(view->rect());
    view->installEventFilter(this);
    connect(path, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
    connect(waits, &WaitStatesModel::slicesChanged, this, qOverload<>(&QWidget::update));
    connect(timeline, &TimelineModel::viewportChanged, this, qOverload<>(&QWidget::update));
    raise();
}

void TimelineOverlay::setShowPath(bool show)
{
    m_showPath = show;
    update();
}

void TimelineOverlay::setShowWaits(bool show)
{
    m_showWaits = show;
    update();
}

bool TimelineOverlay::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_view && event->type() == QEvent::Resize)
        setGeometry(m_view->rect());
    return QWidget::eventFilter(watched, event);
}

void TimelineOverlay::paintEvent(QPaintEvent *)
{
    m_drawnSegments = m_drawnWaitCells = 0;
    const auto &rows = m_timeline->rows();
    if (!m_timeline->hasViewport() || rows.isEmpty() || m_timeline->to() <= m_timeline->from())
        return;
    QPainter painter(this);
    const QRect plot = m_view->plotRect();
    painter.setClipRect(plot);
    const double span = double(m_timeline->to() - m_timeline->from());
    const double rowHeight = double(plot.height()) / rows.size();
    auto xOf = [&](quint64 t) {
        return plot.left() + (double(t) - double(m_timeline->from())) / span * plot.width();
    };
    auto rowOf = [&](int rank) {
        for (int i = 0; i < rows.size(); i++)
            if (rank >= rows[i].firstRank && rank <= rows[i].lastRank)
                return i;
        return -1;
    };
    if (m_showWaits && !m_waits->slices().isEmpty()) {
        const double maximum = double(std::max<quint64>(1, m_waits->sliceMaximum()));
        QColor colour = theme::attention(palette());
        for (const auto &slice : m_waits->slices()) {
            const double x0 = xOf(slice.from), x1 = xOf(slice.to);
            if (x1 < plot.left() || x0 > plot.right())
                continue;
            for (auto it = slice.waitNs.constBegin(); it != slice.waitNs.constEnd(); ++it) {
                const int r = rowOf(it.key());
                if (r < 0 || !it.value())
                    continue;
                colour.setAlphaF(0.2 + 0.6 * double(it.value()) / maximum);
                painter.fillRect(QRectF(x0, plot.top() + r * rowHeight, std::max(1.0, x1 - x0), rowHeight),
                                 colour);
                m_drawnWaitCells++;
            }
        }
    }
    if (m_showPath) {
        // the highlight fills the path's pieces (a band through the row's middle); the text colour outlines
        // the pieces wide enough and draws the jumps between ranks (a message or collective on the path),
        // so the path stands out against every region colour in a light or a dark palette
        QColor fill = theme::highlight(palette());
        fill.setAlphaF(0.85);
        QColor jump = theme::text(palette());
        jump.setAlphaF(0.7);
        QPointF previous;
        int previousRow = -1;
        for (const auto &segment : m_path->segments()) {
            const int r = rowOf(segment.rank);
            if (r < 0)
                continue;
            const double x0 = xOf(segment.start), x1 = xOf(segment.end);
            const QRectF box(x0, plot.top() + r * rowHeight + rowHeight * 0.3, std::max(1.5, x1 - x0),
                             std::max(2.0, rowHeight * 0.4));
            if (previousRow >= 0 && previousRow != r) {
                painter.setPen(QPen(jump, 1.0));
                painter.drawLine(previous, QPointF(box.left(), box.center().y()));
            }
            previous = QPointF(box.right(), box.center().y());
            previousRow = r;
            if (x1 < plot.left() || x0 > plot.right())
                continue;
            painter.fillRect(box, fill);
            if (box.width() >= 6.0) {
                painter.setPen(QPen(theme::text(palette()), 1.5));
                painter.drawRect(box);
            }
            m_drawnSegments++;
        }
    }
}
