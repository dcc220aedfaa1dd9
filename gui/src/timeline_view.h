// timeline_view.h — the timeline widget: ranks × time from a TimelineModel. Wheel zooms around the
// cursor, Ctrl + wheel zooms the ranks (taller rows, fewer ranks), Shift + wheel scrolls the ranks, a
// dragged range with the right button (or Shift + left) zooms to it, dragging with the left button
// pans, a double click shows everything held. Keys: + / − zoom, ← → pan, ↑ ↓ PgUp PgDn scroll the
// ranks, Ctrl + + / − zoom the ranks, Home shows everything, Alt + ← / → (or Backspace) go back and
// forward in the history of windows. Hover shows region, rank and times, or over a message's line (an
// arrow from send to receive, on single events; those the model's message filter keeps) its ranks, tag,
// size and times. Over the data only the
// steering periods (application paused, recording off: a veil over every row) and the selection being
// dragged are drawn; modeText() says what is shown, for a label beside it.
#pragma once

#include "timeline_model.h"

#include <QLineF>
#include <QPolygonF>
#include <QWidget>

#include <optional>

class TimelineView : public QWidget
{
    Q_OBJECT
  public:
    explicit TimelineView(TimelineModel *model, QWidget *parent = nullptr);

    static QColor roleColor(const QString &role);
    // The veil of a steering period (TimelineModel::Period::Kind) over the rows, from the palette.
    static QColor periodColor(const QPalette &palette, int kind);
    // A colour per function, the same in every run and session (from the name alone).
    static QColor functionColor(const QString &name);
    // Colours by function (true) or by role (false, the default).
    void setColourByFunction(bool byFunction);
    bool colourByFunction() const
    {
        return m_byFunction;
    }
    QColor regionColor(const QString &name, const QString &role) const;
    // "single events", "800 bins × 12 rows (ranks grouped: mean of 4)", "live", ...
    QString modeText() const;
    // Cells and single events of this region are drawn highlighted, the others faded.
    void setHighlight(const QString &region);
    QString highlight() const
    {
        return m_highlight;
    }
    QSize sizeHint() const override
    {
        return QSize(900, 320);
    }
    // What hovering at `pos` shows (empty outside the plot).
    QString tooltipAt(const QPoint &pos) const;
    // Where a message's line is drawn, from send to receive (none while one of its ranks is not shown or
    // the model's message filter hides it: then it is neither drawn nor hovered).
    std::optional<QLineF> messageLine(const TimelineModel::Message &message) const;
    // The arrow head drawn at a message line's receive end: its tip at line.p2(), pointing along the line.
    static QPolygonF arrowHead(const QLineF &line);
    // The plot area (right of the rank labels, below the time axis).
    QRect plotRect() const;
    // What the ruler shows: one tick per 1, 2 or 5 × 10^k ns step, x in pixels and its label.
    struct Tick {
        double x;
        QString label;
    };
    QVector<Tick> ticks() const;
    // The rank labels drawn in the gutter, top to bottom.
    QStringList rankLabels() const;
    // Row slots that have something drawn in them (read back from the widget's pixels).
    int paintedSlots();

  protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    bool event(QEvent *event) override;

  private:
    double xOf(quint64 time) const;
    quint64 timeAt(int x) const;
    int slotAt(int y) const;
    QString tooltipOfData(const QPoint &pos, int slot, int row, quint64 time) const;
    const TimelineModel::Message *messageNear(const QPointF &pos) const;
    int slotOfRank(int rank) const;
    double slotHeight(const QRect &plot) const;
    QRectF intervalRect(const TimelineModel::Interval &interval, const QRect &plot) const;
    void drawAxis(class QPainter &painter, const QRect &plot);
    QVector<QPair<int, QString>> slotLabels() const; // (slot, text), as many as fit
    void drawBins(QPainter &painter, const QRect &plot);
    void drawEvents(QPainter &painter, const QRect &plot);

    TimelineModel *m_model;
    QString m_highlight;
    bool m_panning = false, m_selecting = false, m_byFunction = false;
    QPoint m_pressPos, m_lastPos;
    quint64 m_pressFrom = 0, m_pressTo = 0;
};
