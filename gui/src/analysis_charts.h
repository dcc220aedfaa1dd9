// analysis_charts.h — the drawings of the analyses, all in the palette's colours (theme.h): bars (the
// profile per rank and its summary, waiting per rank), the communication matrix as a heat map, a group's
// task activity graph, and the overlay that marks the critical path and the wait states on the timeline.
#pragma once

#include "critical_path_model.h"
#include "message_matrix_model.h"
#include "metrics_model.h"
#include "structure_model.h"
#include "wait_states_model.h"

#include <QWidget>

class TimelineModel;
class TimelineView;

// Horizontal bars with a label and a value each, the largest filling the width; one may be marked.
class BarChart : public QWidget
{
    Q_OBJECT
  public:
    struct Bar {
        QString label, value; // value: as written beside the bar
        double length = 0.0;
    };
    explicit BarChart(QWidget *parent = nullptr);
    void setBars(const QString &title, const QVector<Bar> &bars, int marked = -1);
    const QVector<Bar> &bars() const
    {
        return m_bars;
    }
    QSize sizeHint() const override
    {
        return QSize(360, 220);
    }
    // The bar under a point (-1: none).
    int barAt(const QPoint &pos) const;

  signals:
    void barClicked(int index);

  protected:
    void paintEvent(QPaintEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;

  private:
    QRectF barRect(int index) const;
    int visibleBars() const;
    QString m_title;
    QVector<Bar> m_bars;
    int m_marked = -1;
};

// Sender × receiver: each cell's colour from the background (nothing) to the highlight (the most).
class MatrixView : public QWidget
{
    Q_OBJECT
  public:
    explicit MatrixView(MessageMatrixModel *model, QWidget *parent = nullptr);
    void setShowBytes(bool bytes);
    QSize sizeHint() const override
    {
        return QSize(360, 300);
    }
    QRect plotRect() const;
    // The cell (src, dst) under a point, (-1, -1) outside.
    QPoint cellAt(const QPoint &pos) const;
    QColor cellColour(int src, int dst) const;

  protected:
    void paintEvent(QPaintEvent *event) override;
    bool event(QEvent *event) override;

  private:
    MessageMatrixModel *m_model;
    bool m_bytes = false;
};

// One metric's timeline: a row per rank (or group of ranks), a cell per column, coloured from the
// background (no growth) to the palette's heat (the largest mean); min / mean / max in the tooltip.
class MetricHeatMap : public QWidget
{
    Q_OBJECT
  public:
    explicit MetricHeatMap(MetricsModel *model, QWidget *parent = nullptr);
    QSize sizeHint() const override
    {
        return QSize(480, 200);
    }
    QRect plotRect() const;
    // The cell (row, column) under a point, (-1, -1) outside.
    QPoint cellAt(const QPoint &pos) const;
    QColor cellColour(int row, int column) const;

  protected:
    void paintEvent(QPaintEvent *event) override;
    bool event(QEvent *event) override;

  private:
    MetricsModel *m_model;
};

// One group's task activity graph: its nodes in the order of their first edge from the most visited
// node, in rows, edges drawn as arrows whose width grows with their count.
class StructureGraphView : public QWidget
{
    Q_OBJECT
  public:
    explicit StructureGraphView(StructureModel *model, QWidget *parent = nullptr);
    void setGroup(int group);
    int group() const
    {
        return m_group;
    }
    QSize sizeHint() const override
    {
        return QSize(420, 300);
    }

  protected:
    void paintEvent(QPaintEvent *event) override;

  private:
    StructureModel *m_model;
    int m_group = 0;
};

// A transparent layer over the timeline's plot: the critical path's segments outlined in the highlight
// colour in their ranks' rows, and each rank's waiting per slice of the window shaded in the attention
// colour. It reads the timeline's window and rows and never takes the mouse.
class TimelineOverlay : public QWidget
{
    Q_OBJECT
  public:
    TimelineOverlay(TimelineView *view, TimelineModel *timeline, CriticalPathModel *path,
                    WaitStatesModel *waits);
    void setShowPath(bool show);
    void setShowWaits(bool show);
    bool showsPath() const
    {
        return m_showPath;
    }
    bool showsWaits() const
    {
        return m_showWaits;
    }
    // The segments and shaded cells drawn at the last paint (for tests and scripts).
    int drawnSegments() const
    {
        return m_drawnSegments;
    }
    int drawnWaitCells() const
    {
        return m_drawnWaitCells;
    }

  protected:
    void paintEvent(QPaintEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

  private:
    TimelineView *m_view;
    TimelineModel *m_timeline;
    CriticalPathModel *m_path;
    WaitStatesModel *m_waits;
    bool m_showPath = true, m_showWaits = false;
    int m_drawnSegments = 0, m_drawnWaitCells = 0;
};
