// overview_view.h — the strip above the timeline that always shows the whole run (everything held, all
// ranks as one row) with the timeline's window marked on it. A click centres the window there, a drag
// selects a new window; both go to the timeline's history.
#pragma once

#include "timeline_model.h"

#include <QWidget>

class TimelineView;

class OverviewView : public QWidget
{
    Q_OBJECT
  public:
    // `overview`: a model showing everything held with one row; `timeline`: the window it marks and moves.
    OverviewView(TimelineModel *overview, TimelineModel *timeline, const TimelineView *colours,
                 QWidget *parent = nullptr);
    QSize sizeHint() const override
    {
        return QSize(900, 34);
    }
    // Where the timeline's window is drawn (empty while either model has no range).
    QRect windowRect() const;
    quint64 timeAt(int x) const;

  protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;

  private:
    QRect plotRect() const;
    double xOf(quint64 time) const;
    TimelineModel *m_overview, *m_timeline;
    const TimelineView *m_colours;
    bool m_dragging = false;
    int m_pressX = 0, m_lastX = 0;
};
