// analyses_panel.h — the "Analyses" tab of the main window: the profile per rank (min / mean / max,
// per-rank bars, the summary chart, compensated on demand), the message matrix, the critical path (its
// functions, zeroing one, the path on the timeline), the wait states (their profile, per rank, "who made
// me wait", where on the timeline), the program's structure (groups of ranks, a group's graph) and the
// metrics (what the ranks can count and read, one metric's timeline as a heat map, setting the selection).
// A structure group's ranks can become the timeline's rank filter. Each is asked for the timeline's visible
// window with its button. Also the archive entries of the Job menu: an OTF2 archive opened after the run is
// served in-process and shown like a job.
#pragma once

#include "analyses.h"
#include "archive_backend.h"

#include <QTabWidget>

class BarChart;
class MatrixView;
class MetricHeatMap;
class QAction;
class QPushButton;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QMenu;
class QTableView;
class StructureGraphView;
class TimelineOverlay;
class TimelineView;
class Viewer;

class AnalysesPanel : public QTabWidget
{
    Q_OBJECT
  public:
    AnalysesPanel(Viewer *viewer, TimelineView *timeline, QWidget *parent = nullptr);

    Analyses *analyses()
    {
        return &m_analyses;
    }
    ArchiveBackend *archive()
    {
        return &m_archive;
    }
    TimelineOverlay *overlay() const
    {
        return m_overlay;
    }
    // Adds "Open archive…" and "Close archive" to a menu.
    void addArchiveActions(QMenu *menu);
    // Opens an OTF2 archive (anchor file or its directory) and connects the viewer to it once served.
    void openArchive(const QString &path);
    void openArchiveInteractive();
    // Shows the tab of an analysis (critical-path, wait-states, structure, rank-profile, compensated,
    // matrix, metrics, metric-timeline NAME) and asks for it, as its button does; false for an unknown name
    // or when not connected.
    bool ask(const QString &name, const QString &argument = QString());
    // "Show these ranks in the timeline" on structure group `group` (its number in the answer), as the
    // user does it: the group's row chosen, the action triggered. False with *why when there is no such
    // group or its ranks do not fit a rank filter.
    bool showGroupRanks(int group, QString *why);
    // The analyses' state keys and the archive's (archive_open, archive_error, overlay_*), for scripts.
    QMap<QString, QString> state() const;

  signals:
    void message(const QString &text);
    // "Show these ranks in the timeline" on a structure group: its ranks as a rank filter ("0-3,8-11"),
    // for the timeline's Ranks: field (which shows it, to edit or clear).
    void rankFilterWanted(const QString &ranks);

  private:
    QWidget *buildRankProfile();
    QWidget *buildMatrix();
    QWidget *buildCriticalPath();
    QWidget *buildWaitStates();
    QWidget *buildStructure();
    QWidget *buildMetrics();
    void updateRankBars();
    void updateWaitCharts();

    Viewer *m_viewer;
    Analyses m_analyses;
    ArchiveBackend m_archive;
    TimelineOverlay *m_overlay;
    QString m_archiveError;
    // profile per rank
    QLabel *m_rankSummary;
    QCheckBox *m_compensated;
    QComboBox *m_metric;
    QTableView *m_rankTable;
    BarChart *m_rankBars, *m_summaryChart;
    QString m_rankRegion;
    // matrix
    MatrixView *m_matrixView;
    // critical path
    QLabel *m_pathSummary;
    QComboBox *m_zero;
    QTableView *m_pathTable;
    // wait states
    QLabel *m_waitSummary;
    QTableView *m_waitTable;
    BarChart *m_waitRanks, *m_waitPairs;
    QCheckBox *m_showWaits;
    // structure
    QLabel *m_structureSummary;
    QDoubleSpinBox *m_tolerance;
    QTableView *m_structureTable;
    QAction *m_showGroupRanks;
    StructureGraphView *m_graph;
    // metrics
    QLabel *m_metricsSummary;
    QTableView *m_metricsTable;
    QComboBox *m_metricChoice;
    QPushButton *m_setMetrics;
    MetricHeatMap *m_heatMap;
};
