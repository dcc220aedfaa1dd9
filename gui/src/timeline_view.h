// timeline_view.h — the timeline widget: ranks × time from a TimelineModel. Wheel zooms around the
// cursor, a dragged range with the right button (or Shift + left) zooms to it, dragging with the left
// button pans, a double click shows everything held. Hover shows region, rank and times.
#pragma once

#include "timeline_model.h"

#include <QWidget>

class TimelineView : public QWidget
{
    Q_OBJECT
  public:
    explicit TimelineView(TimelineModel *model, QWidget *parent = nullptr);

    static QColor roleColor(const QString &role);
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
    // The plot area (right of the rank labels, below the time axis).
    QRect plotRect() const;

  protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    bool event(QEvent *event) override;

  private:
    double xOf(quint64 time) const;
    quint64 timeAt(int x) const;
    int rowAt(int y) const;
    int rowOfRank(int rank) const;
    void drawAxis(class QPainter &painter, const QRect &plot);
    void drawBins(QPainter &painter, const QRect &plot);
    void drawEvents(QPainter &painter, const QRect &plot);

    TimelineModel *m_model;
    QString m_highlight;
    bool m_panning = false, m_selecting = false;
    QPoint m_pressPos, m_lastPos;
    quint64 m_pressFrom = 0, m_pressTo = 0;
};
