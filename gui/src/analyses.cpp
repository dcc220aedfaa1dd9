#include "analyses.h"

#include "viewer.h"

namespace
{
const QString CriticalPathView = QStringLiteral("analysis:critical-path");
const QString WaitStatesView = QStringLiteral("analysis:wait-states");
const QString WaitSliceView = QStringLiteral("analysis:wait-slice:");
const QString StructureView = QStringLiteral("analysis:structure");
const QString RankProfileView = QStringLiteral("analysis:rank-profile:");
const QString MatrixView = QStringLiteral("analysis:matrix");
const QString MetricsAvailableView = QStringLiteral("analysis:metrics:available");
const QString MetricsListView = QStringLiteral("analysis:metrics:list");
const QString MetricsSetView = QStringLiteral("analysis:metrics:set");
const QString MetricTimelineView = QStringLiteral("analysis:metric-timeline");
} // namespace

Analyses::Analyses(Viewer *viewer, QObject *parent) : QObject(parent), m_viewer(viewer)
{
    ProtocolClient *client = viewer->client();
    connect(client, &ProtocolClient::partial, this,
            [this](quint32 id, const QString &view, const Records &records) {
                onAnswer(id, view, records, false);
            });
    connect(client, &ProtocolClient::replied, this,
            [this](quint32 id, const QString &view, const Records &records) {
                onAnswer(id, view, records, true);
            });
    connect(client, &ProtocolClient::failed, this, &Analyses::onFailed);
    connect(client, &ProtocolClient::connected, this, [this](const Record &welcome) {
        // another job or archive: nothing of the old one's analyses stays on screen
        if (welcome.value("job") == m_job)
            return;
        m_job = welcome.value("job");
        m_criticalPath.clear();
        m_waitStates.clear();
        m_structure.clear();
        m_rankProfile.clear();
        m_matrix.clear();
        m_metrics.clear();
    });
    connect(client, &ProtocolClient::connectionLost, this, [this] {
        m_pending.clear();
        emit pendingChanged(0);
    });
}

bool Analyses::ready()
{
    if (m_viewer->client()->state() != ProtocolClient::Connected)
        return false;
    m_lastError.clear(); // a new question: an older one's failure is not its answer
    return true;
}

void Analyses::send(const QString &line, const QString &view)
{
    // a newer request of a view supersedes the older one, whose answer the client then drops
    for (auto it = m_pending.begin(); it != m_pending.end();)
        it = it.value() == view ? m_pending.erase(it) : std::next(it);
    const quint32 id = m_viewer->client()->send(line, view);
    m_pending.insert(id, view);
    emit pendingChanged(pending());
}

bool Analyses::windowBounds(quint64 *from, quint64 *to) const
{
    const TimelineModel *timeline = const_cast<Viewer *>(m_viewer)->timeline();
    const StatusModel *status = const_cast<Viewer *>(m_viewer)->status();
    if (!timeline->windowOptions().isEmpty()) {
        *from = timeline->from();
        *to = timeline->to();
    } else {
        *from = status->firstTime();
        *to = status->lastTime() + 1;
    }
    return *to > *from;
}

bool Analyses::askCriticalPath(const QString &zero)
{
    if (!ready())
        return false;
    send(CriticalPathModel::command(m_viewer->timeline()->windowOptions(), zero), CriticalPathView);
    return true;
}

bool Analyses::askWaitStates(int slices)
{
    if (!ready())
        return false;
    send(WaitStatesModel::command(m_viewer->timeline()->windowOptions()), WaitStatesView);
    quint64 from = 0, to = 0;
    if (slices > 0 && windowBounds(&from, &to)) {
        const QStringList lines = m_waitStates.startSlices(from, to, slices);
        for (int i = 0; i < lines.size(); i++)
            send(lines[i], WaitSliceView + QString::number(i));
    }
    return true;
}

bool Analyses::askStructure(double tolerancePct)
{
    if (!ready())
        return false;
    send(StructureModel::command(3, tolerancePct), StructureView);
    return true;
}

bool Analyses::askRankProfile(bool compensated)
{
    if (!ready())
        return false;
    const int ranks = int(m_viewer->client()->welcome().u64("ranks"));
    // a compensated profile is a replay across every event place per question: fewer, larger groups
    const QStringList lines =
        m_rankProfile.start(ranks, m_viewer->timeline()->windowOptions(), compensated, compensated ? 8 : 64);
    for (int i = 0; i < lines.size(); i++)
        send(lines[i], RankProfileView + QString::number(i));
    return true;
}

bool Analyses::askMatrix(int groups)
{
    if (!ready())
        return false;
    send(MessageMatrixModel::command(m_viewer->timeline()->windowOptions(), groups), MatrixView);
    return true;
}

bool Analyses::askMetrics()
{
    if (!ready())
        return false;
    send(MetricsModel::availableCommand(), MetricsAvailableView);
    send(MetricsModel::listCommand(), MetricsListView);
    return true;
}

bool Analyses::askMetricTimeline(const QString &metric, int bins)
{
    quint64 from = 0, to = 0;
    if (metric.isEmpty() || !ready() || !windowBounds(&from, &to))
        return false;
    send(MetricsModel::timelineCommand(metric, from, to, bins, m_viewer->timeline()->visibleRankSet()),
         MetricTimelineView);
    return true;
}

bool Analyses::setMetrics(const QStringList &metrics)
{
    const QString line = MetricsModel::setCommand(metrics);
    if (line.isEmpty() || !ready())
        return false;
    send(line, MetricsSetView);
    return true;
}

bool Analyses::ask(const QString &name, const QString &argument)
{
    if (name == QLatin1String("critical-path"))
        return askCriticalPath(argument);
    if (name == QLatin1String("wait-states"))
        return askWaitStates();
    if (name == QLatin1String("structure"))
        return askStructure();
    if (name == QLatin1String("rank-profile"))
        return askRankProfile(false);
    if (name == QLatin1String("compensated"))
        return askRankProfile(true);
    if (name == QLatin1String("matrix"))
        return askMatrix();
    if (name == QLatin1String("metrics"))
        return askMetrics();
    if (name == QLatin1String("metric-timeline"))
        return askMetricTimeline(argument, 200);
    return false;
}

void Analyses::onAnswer(quint32 id, const QString &view, const Records &records, bool final)
{
    if (!view.startsWith(QLatin1String("analysis:")))
        return;
    if (final) {
        m_pending.remove(id);
        m_answers++;
        emit pendingChanged(pending());
    }
    if (view == CriticalPathView)
        m_criticalPath.applyReply(records);
    else if (view == WaitStatesView)
        m_waitStates.applyReply(records);
    else if (view.startsWith(WaitSliceView))
        m_waitStates.applySlice(view.mid(WaitSliceView.size()).toInt(), records);
    else if (view == StructureView)
        m_structure.applyReply(records);
    else if (view.startsWith(RankProfileView))
        m_rankProfile.applyGroupReply(view.mid(RankProfileView.size()).toInt(), records);
    else if (view == MatrixView)
        m_matrix.applyReply(records);
    else if (view == MetricsAvailableView)
        m_metrics.applyAvailable(records);
    else if (view == MetricsListView || view == MetricsSetView)
        m_metrics.applySelection(records);
    else if (view == MetricTimelineView)
        m_metrics.applyTimeline(records, final);
}

void Analyses::onFailed(quint32 id, const QString &view, const QString &code, const QString &message)
{
    if (!view.startsWith(QLatin1String("analysis:")))
        return;
    m_pending.remove(id);
    emit pendingChanged(pending());
    if (code == QLatin1String("disconnected"))
        return;
    const QString analysis = view.mid(int(strlen("analysis:"))).section(QLatin1Char(':'), 0, 0);
    m_lastError = QStringLiteral("%1: %2 (%3)").arg(analysis, message, code);
    emit failed(analysis, m_lastError);
}

QMap<QString, QString> Analyses::state() const
{
    QMap<QString, QString> s;
    const auto num = [](double v) { return QString::number(v, 'g', 15); };
    s[QStringLiteral("analyses_pending")] = num(pending());
    s[QStringLiteral("analyses_answers")] = num(m_answers);
    s[QStringLiteral("analyses_error")] = m_lastError;
    s[QStringLiteral("cp_length_ns")] = num(double(m_criticalPath.lengthNs()));
    s[QStringLiteral("cp_functions")] = num(m_criticalPath.functions().size());
    s[QStringLiteral("cp_segments")] = num(m_criticalPath.segments().size());
    s[QStringLiteral("cp_top")] =
        m_criticalPath.functions().isEmpty() ? QString() : m_criticalPath.functions()[0].name;
    s[QStringLiteral("cp_zero")] = m_criticalPath.zero();
    s[QStringLiteral("cp_zeroed_ns")] = num(double(m_criticalPath.zeroedNs()));
    s[QStringLiteral("ws_total_ns")] = num(double(m_waitStates.totalNs()));
    s[QStringLiteral("ws_functions")] = num(m_waitStates.functions().size());
    s[QStringLiteral("ws_ranks")] = num(m_waitStates.ranks().size());
    s[QStringLiteral("ws_slices")] = num(m_waitStates.slices().size());
    s[QStringLiteral("ws_slices_answered")] = num(m_waitStates.slicesAnswered());
    s[QStringLiteral("structure_groups")] = num(m_structure.groups().size());
    s[QStringLiteral("structure_nodes")] =
        num(m_structure.groups().isEmpty() ? 0 : m_structure.groups()[0].nodes.size());
    s[QStringLiteral("rank_profile_groups")] = num(m_rankProfile.groups().size());
    s[QStringLiteral("rank_profile_answered")] = num(m_rankProfile.groupsAnswered());
    s[QStringLiteral("rank_profile_rows")] = num(m_rankProfile.rowCount());
    s[QStringLiteral("rank_profile_approximate")] = num(m_rankProfile.approximate());
    s[QStringLiteral("rank_profile_compensated")] = num(m_rankProfile.compensated());
    s[QStringLiteral("matrix_groups")] = num(m_matrix.groups());
    s[QStringLiteral("matrix_messages")] = num(double(m_matrix.totalCount()));
    s[QStringLiteral("metrics_available")] = num(m_metrics.metrics().size());
    s[QStringLiteral("metrics_selected")] = m_metrics.selectedNames().join(QLatin1Char(','));
    s[QStringLiteral("metric_timeline_metric")] = m_metrics.timelineMetric();
    s[QStringLiteral("metric_timeline_rows")] = num(m_metrics.rows().size());
    return s;
}
