// main_window.h — otfx-gui's window: connection banner, the overview strip and the timeline (with its
// rank and message filters, vertical scroll bar and history), profile (with its function search) / places /
// server log tabs, the controls dock (scrollable; its controls show the job's state and are disabled while
// not connected) and the status bar, all showing one Viewer.
#pragma once

#include "viewer.h"

#include <QElapsedTimer>
#include <QMainWindow>
#include <QPointer>

class QAction;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QScrollBar;
class QSpinBox;
class QComboBox;
class QCheckBox;
class QTableView;
class QWidget;
class QPushButton;
class ConnectDialog;
class OverviewView;
class TimelineView;
class AnalysesPanel;

class MainWindow : public QMainWindow
{
    Q_OBJECT
  public:
    explicit MainWindow(Viewer *viewer, QWidget *parent = nullptr);

    TimelineView *timelineView() const
    {
        return m_timelineView;
    }
    AnalysesPanel *analysesPanel() const
    {
        return m_analyses;
    }
    OverviewView *overviewView() const
    {
        return m_overviewView;
    }
    bool saveScreenshot(const QString &path);
    // Opens the connect dialog (not modal): it closes by itself once the viewer is connected, whoever
    // connected it (the dialog, or the discovery of a session file meanwhile).
    void openConnectDialog();
    ConnectDialog *connectDialog() const;
    void openSnapshotDialog();
    // What the snapshot dialog offers as "the visible window" (empty while there is none).
    QString visibleWindowText() const;
    // Applies a rank filter typed by the user (or a structure group's ranks); false (and says why beside the
    // field) when it is refused.
    bool applyRankFilter(const QString &text);
    // Applies a message filter typed by the user ("tag=0-9,42 src=0-3 dst=4 min=64 max=4096"); false (and
    // says why beside the field, the filter in force staying) when it is refused.
    bool applyMessageFilter(const QString &text);
    // Types `text` into the profile's "Find function…" field and presses Enter: only the matching functions
    // are listed, the first of them highlighted in the timeline. Returns that function (empty: none).
    QString findFunction(const QString &text);
    // The window's own state keys, for scripts: filter_error, profile_shown, highlight.
    QMap<QString, QString> state() const;

  private:
    QWidget *buildControls();
    void updateConnection();
    void updateStatus();
    void updateWindowLabel();
    void updateRankScroll();
    void updateLegend();
    // Hides the profile's rows whose function does not match the "Find function…" field.
    void filterProfile();
    // What clicking a profile row does: its function highlighted in the timeline, the row selected.
    void highlightProfileRow(int row);
    // What Enter in "Find function…" does: the first matching function highlighted (returned; empty: none).
    QString highlightFirstMatch();
    void onAnswer(quint32 id, const QString &line, bool ok, const QString &answer);
    void applyClasses();
    void saveScreenshotInteractive();
    void confirmReset();
    void showJobState();

    Viewer *m_viewer;
    TimelineView *m_timelineView;
    AnalysesPanel *m_analyses;
    OverviewView *m_overviewView;
    QTableView *m_profileView, *m_placesView;
    QPlainTextEdit *m_log, *m_answer;
    QLabel *m_banner, *m_windowLabel, *m_modeLabel, *m_partialLabel, *m_legend, *m_rankLabel,
        *m_filterMessage;
    QLineEdit *m_rankFilter, *m_messageFilter, *m_findFunction;
    QLabel *m_findCount;
    QScrollBar *m_rankScroll;
    QComboBox *m_colourBy;
    QPushButton *m_reconnectButton, *m_backButton, *m_forwardButton;
    QLabel *m_message, *m_connection, *m_app, *m_recording, *m_rate, *m_reduced, *m_elapsed;
    QProgressBar *m_fill, *m_busy;
    QSpinBox *m_windowSeconds;
    QComboBox *m_reduction;
    QCheckBox *m_classes[4];
    QCheckBox *m_follow;
    QList<QWidget *> m_steering; // enabled only while connected
    QAction *m_snapshotAction = nullptr;
    QString m_shownStrategy; // the job's strategy last put into the reduction box
    int m_shownClasses = -2; // the job's classes last put into the checkboxes
    QPointer<ConnectDialog> m_connectDialog;
    QElapsedTimer m_connectedFor;
};
