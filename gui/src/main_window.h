// main_window.h — otfx-gui's window: connection banner, timeline, profile / places / server log tabs,
// the controls dock and the status bar, all showing one Viewer.
#pragma once

#include "viewer.h"

#include <QElapsedTimer>
#include <QMainWindow>

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QSpinBox;
class QComboBox;
class QCheckBox;
class QTableView;
class QWidget;
class QPushButton;
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
    bool saveScreenshot(const QString &path);
    void openConnectDialog();
    void openSnapshotDialog();

  private:
    QWidget *buildControls();
    void updateConnection();
    void updateStatus();
    void updateWindowLabel();
    void onAnswer(quint32 id, const QString &line, bool ok, const QString &answer);
    void applyClasses();
    void saveScreenshotInteractive();

    Viewer *m_viewer;
    TimelineView *m_timelineView;
    AnalysesPanel *m_analyses;
    QTableView *m_profileView, *m_placesView;
    QPlainTextEdit *m_log, *m_answer;
    QLabel *m_banner, *m_windowLabel;
    QPushButton *m_reconnectButton;
    QLabel *m_message, *m_connection, *m_app, *m_recording, *m_rate, *m_buffers, *m_reduced, *m_elapsed;
    QProgressBar *m_fill, *m_busy;
    QSpinBox *m_windowSeconds;
    QComboBox *m_reduction;
    QCheckBox *m_classes[4];
    QCheckBox *m_follow;
    QElapsedTimer m_connectedFor;
};
