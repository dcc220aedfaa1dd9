// analyses.h — the analyses of the places as views, without widgets: the profile per rank (plain or
// compensated), the communication matrix, the critical path, the wait states (as a profile and over the
// slices of the visible window for the timeline), the program's structure and the ranks' metrics (what
// they can count, what they read, one metric's timeline). Each is asked on demand
// for the timeline's visible window through the viewer's protocol client, whose answers come from a live
// job's root or from an archive served in-process (archive_backend.h) alike; their models (tested apart)
// say what the answers mean. `state()` adds their keys to the script mode's state.
#pragma once

#include "critical_path_model.h"
#include "message_matrix_model.h"
#include "metrics_model.h"
#include "rank_profile_model.h"
#include "structure_model.h"
#include "wait_states_model.h"

#include <QMap>
#include <QObject>

class Viewer;

class Analyses : public QObject
{
    Q_OBJECT
  public:
    explicit Analyses(Viewer *viewer, QObject *parent = nullptr);

    CriticalPathModel *criticalPath()
    {
        return &m_criticalPath;
    }
    WaitStatesModel *waitStates()
    {
        return &m_waitStates;
    }
    StructureModel *structure()
    {
        return &m_structure;
    }
    RankProfileModel *rankProfile()
    {
        return &m_rankProfile;
    }
    MessageMatrixModel *matrix()
    {
        return &m_matrix;
    }
    MetricsModel *metrics()
    {
        return &m_metrics;
    }

    // Each asks for the visible window (everything held when the timeline shows all); false when not
    // connected. The answers replace the model's contents when they come.
    bool askCriticalPath(const QString &zero = QString());
    bool askWaitStates(int slices = 24);
    bool askStructure(double tolerancePct = -1.0);
    bool askRankProfile(bool compensated = false);
    bool askMatrix(int groups = 64);
    // `metrics available` and `metrics list` together: the table and the selection.
    bool askMetrics();
    // One metric's timeline of the visible window in `bins` columns (the visible ranks, if filtered).
    bool askMetricTimeline(const QString &metric, int bins);
    // `metrics set LIST` (steering: an archive refuses it, which comes as failed()); false when not
    // connected or for a list the protocol would not take.
    bool setMetrics(const QStringList &metrics);
    // Asks the given analysis by name: critical-path [ZERO], wait-states, structure, rank-profile,
    // compensated, matrix, metrics, metric-timeline NAME (the script mode's `analysis` step). False for an
    // unknown name.
    bool ask(const QString &name, const QString &argument = QString());

    // Requests of the analyses in flight.
    int pending() const
    {
        return int(m_pending.size());
    }
    QString lastError() const
    {
        return m_lastError;
    }
    QMap<QString, QString> state() const;

  signals:
    void pendingChanged(int pending);
    void failed(const QString &analysis, const QString &message);

  private:
    bool ready();
    void send(const QString &line, const QString &view);
    void onAnswer(quint32 id, const QString &view, const Records &records, bool final);
    void onFailed(quint32 id, const QString &view, const QString &code, const QString &message);
    // [from, to) of the visible window, or of everything held (the status' times) when showing all.
    bool windowBounds(quint64 *from, quint64 *to) const;

    Viewer *m_viewer;
    CriticalPathModel m_criticalPath;
    WaitStatesModel m_waitStates;
    StructureModel m_structure;
    RankProfileModel m_rankProfile;
    MessageMatrixModel m_matrix;
    MetricsModel m_metrics;
    QHash<quint32, QString> m_pending; // request → view
    QString m_lastError, m_job;
    int m_answers = 0;
};
