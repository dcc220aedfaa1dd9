// script_runner.h — otfx-gui --script FILE: drives the viewer step by step and checks its state, for
// end-to-end tests and demos. One step per line ('#' starts a comment); docs/gui.md lists the steps.
// A failed step prints why and the viewer's state, and otfx-gui exits with 1.
#pragma once

#include <QElapsedTimer>
#include <QMap>
#include <QObject>
#include <QStringList>
#include <QTimer>
#include <functional>

class Viewer;
class MainWindow;

class ScriptRunner : public QObject
{
    Q_OBJECT
  public:
    ScriptRunner(Viewer *viewer, MainWindow *window, QObject *parent = nullptr);
    bool load(const QString &path, QString *error);
    void start();

  signals:
    void finished(int exitCode);

  private:
    void next();
    void poll();
    void fail(const QString &why);
    void pass(const QString &note = QString());
    bool compare(const QString &key, const QString &op, const QString &expected, QString *actual) const;
    void sendAndWait(const QString &line, bool expectOk);
    void dumpState() const;
    // The viewer's state and the analyses' (docs/gui.md lists the keys).
    QMap<QString, QString> state() const;

    Viewer *m_viewer;
    MainWindow *m_window;
    QStringList m_lines;
    int m_index = -1; // the step running
    QStringList m_step;
    QTimer m_poll;
    QElapsedTimer m_stepTime;
    double m_timeout = 30.0, m_stepTimeout = 30.0;
    quint32 m_waitingFor = 0;
    bool m_expectOk = true, m_done = false;
    std::function<bool(QString *)> m_condition;
};
