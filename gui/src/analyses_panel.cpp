#include "analyses_panel.h"

#include "analysis_charts.h"
#include "format.h"
#include "timeline_view.h"
#include "viewer.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

namespace
{

QTableView *table(QAbstractItemModel *model, bool sortable)
{
    auto *view = new QTableView;
    if (sortable) {
        auto *proxy = new QSortFilterProxyModel(view);
        proxy->setSourceModel(model);
        proxy->setSortRole(Qt::UserRole);
        view->setModel(proxy);
        view->setSortingEnabled(true);
    } else {
        view->setModel(model);
    }
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->verticalHeader()->hide();
    view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    return view;
}

// The source row of a view's selected row (through its sorting proxy, if any).
int selectedRow(QTableView *view)
{
    const QModelIndexList rows =
        view->selectionModel() ? view->selectionModel()->selectedRows() : QModelIndexList();
    if (rows.isEmpty())
        return -1;
    QModelIndex index = rows[0];
    if (auto *proxy = qobject_cast<QSortFilterProxyModel *>(view->model()))
        index = proxy->mapToSource(index);
    return index.row();
}

QWidget *page(QHBoxLayout *bar, QLabel *summary, QWidget *body)
{
    auto *widget = new QWidget;
    auto *layout = new QVBoxLayout(widget);
    layout->setContentsMargins(4, 4, 4, 4);
    bar->addWidget(summary, 1);
    layout->addLayout(bar);
    layout->addWidget(body, 1);
    summary->setWordWrap(true);
    return widget;
}

QPushButton *askButton(const QString &what)
{
    auto *button = new QPushButton(QObject::tr("Ask"));
    button->setToolTip(QObject::tr("Compute %1 for the timeline's visible window").arg(what));
    return button;
}

} // namespace

AnalysesPanel::AnalysesPanel(Viewer *viewer, TimelineView *timeline, QWidget *parent)
    : QTabWidget(parent), m_viewer(viewer), m_analyses(viewer)
{
    setObjectName(QStringLiteral("analyses"));
    m_overlay =
        new TimelineOverlay(timeline, viewer->timeline(), m_analyses.criticalPath(), m_analyses.waitStates());
    addTab(buildRankProfile(), tr("Profile per rank"));
    addTab(buildMatrix(), tr("Messages"));
    addTab(buildCriticalPath(), tr("Critical path"));
    addTab(buildWaitStates(), tr("Wait states"));
    addTab(buildStructure(), tr("Structure"));
    addTab(buildMetrics(), tr("Metrics"));
    connect(&m_analyses, &Analyses::failed, this,
            [this](const QString &, const QString &why) { emit message(why); });
    connect(&m_archive, &ArchiveBackend::opened, this, [this](const SessionInfo &session) {
        m_archiveError.clear();
        emit message(tr("archive %1").arg(m_archive.description()));
        m_viewer->connectToSession(session);
    });
    connect(&m_archive, &ArchiveBackend::failed, this, [this](const QString &why) {
        m_archiveError = why;
        emit message(tr("cannot open the archive: %1").arg(why));
    });
}

void AnalysesPanel::addArchiveActions(QMenu *menu)
{
    menu->addAction(tr("Open &archive…"), this, &AnalysesPanel::openArchiveInteractive);
    menu->addAction(tr("Close archi&ve"), this, [this] { m_archive.close(); });
}

void AnalysesPanel::openArchive(const QString &path)
{
    m_archiveError.clear();
    emit message(tr("reading %1 …").arg(path));
    m_archive.open(path);
}

void AnalysesPanel::openArchiveInteractive()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Open an OTF2 archive"), QString(),
                                                      tr("OTF2 archives (*.otf2);;All files (*)"));
    if (!path.isEmpty())
        openArchive(path);
}

bool AnalysesPanel::ask(const QString &name, const QString &argument)
{
    static const QStringList tabs = {QStringLiteral("rank-profile"),  QStringLiteral("matrix"),
                                     QStringLiteral("critical-path"), QStringLiteral("wait-states"),
                                     QStringLiteral("structure"),     QStringLiteral("metrics")};
    const int tab = name == QLatin1String("compensated")       ? 0
                    : name == QLatin1String("metric-timeline") ? int(tabs.indexOf(QStringLiteral("metrics")))
                                                               : int(tabs.indexOf(name));
    if (tab < 0)
        return false;
    setCurrentIndex(tab);
    // the main window's tab holding this panel comes to the front too
    for (QWidget *w = parentWidget(); w; w = w->parentWidget())
        if (auto *tabs = qobject_cast<QTabWidget *>(w); tabs && tabs->indexOf(this) >= 0) {
            tabs->setCurrentWidget(this);
            break;
        }
    if (name == QLatin1String("compensated") || name == QLatin1String("rank-profile"))
        m_compensated->setChecked(name == QLatin1String("compensated"));
    if (name == QLatin1String("wait-states"))
        m_showWaits->setChecked(true);
    if (name == QLatin1String("metric-timeline")) {
        m_metricChoice->setCurrentText(argument);
        return m_analyses.askMetricTimeline(argument, m_heatMap->plotRect().width());
    }
    return m_analyses.ask(name, argument);
}

bool AnalysesPanel::showGroupRanks(int group, QString *why)
{
    const auto &groups = m_analyses.structure()->groups();
    int row = 0;
    while (row < groups.size() && groups[row].group != group)
        row++;
    if (row == groups.size()) {
        *why = tr("no structure group %1 (%2 groups shown)").arg(group).arg(groups.size());
        return false;
    }
    m_structureTable->selectRow(row);
    if (!m_showGroupRanks->isEnabled()) {
        *why = m_showGroupRanks->toolTip();
        return false;
    }
    m_showGroupRanks->trigger();
    return true;
}

QMap<QString, QString> AnalysesPanel::state() const
{
    QMap<QString, QString> s = m_analyses.state();
    s[QStringLiteral("archive_open")] = QString::number(m_archive.serving());
    s[QStringLiteral("archive_opening")] = QString::number(m_archive.opening());
    s[QStringLiteral("archive_error")] = m_archiveError;
    s[QStringLiteral("overlay_segments")] = QString::number(m_overlay->drawnSegments());
    s[QStringLiteral("overlay_wait_cells")] = QString::number(m_overlay->drawnWaitCells());
    return s;
}

// ---- profile per rank -------------------------------------------------------------------------------

QWidget *AnalysesPanel::buildRankProfile()
{
    RankProfileModel *model = m_analyses.rankProfile();
    auto *bar = new QHBoxLayout;
    QPushButton *ask = askButton(tr("the profile of every rank"));
    m_compensated = new QCheckBox(tr("compensated"));
    m_compensated->setToolTip(tr("profile --compensated: the measurement's intrusion taken out (a replay)"));
    m_metric = new QComboBox;
    m_metric->addItems({tr("exclusive time"), tr("inclusive time"), tr("visits")});
    bar->addWidget(ask);
    bar->addWidget(m_compensated);
    bar->addWidget(m_metric);
    m_rankSummary = new QLabel(model->summary());
    m_rankTable = table(model, false);
    m_rankTable->setSortingEnabled(true);
    m_rankTable->sortByColumn(RankProfileModel::Max, Qt::DescendingOrder);
    m_rankBars = new BarChart;
    m_rankBars->setObjectName(QStringLiteral("rank-bars"));
    m_summaryChart = new BarChart;
    m_summaryChart->setObjectName(QStringLiteral("summary-chart"));
    auto *charts = new QSplitter(Qt::Vertical);
    charts->addWidget(m_summaryChart);
    charts->addWidget(m_rankBars);
    auto *body = new QSplitter(Qt::Horizontal);
    body->addWidget(m_rankTable);
    body->addWidget(charts);
    body->setStretchFactor(0, 3);
    body->setStretchFactor(1, 2);
    connect(ask, &QPushButton::clicked, this,
            [this] { m_analyses.askRankProfile(m_compensated->isChecked()); });
    connect(m_metric, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [model](int index) { model->setMetric(RankProfileModel::Metric(index)); });
    connect(model, &QAbstractItemModel::modelReset, this, &AnalysesPanel::updateRankBars);
    connect(model, &QAbstractItemModel::layoutChanged, this, &AnalysesPanel::updateRankBars);
    connect(m_rankTable->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this, model] {
        const int row = selectedRow(m_rankTable);
        if (row >= 0)
            m_rankRegion = model->entries()[row].name;
        updateRankBars();
    });
    connect(m_summaryChart, &BarChart::barClicked, this, [this](int index) {
        m_rankRegion = m_summaryChart->bars()[index].label;
        updateRankBars();
    });
    return page(bar, m_rankSummary, body);
}

void AnalysesPanel::updateRankBars()
{
    RankProfileModel *model = m_analyses.rankProfile();
    m_rankSummary->setText(model->summary());
    const bool visits = model->metric() == RankProfileModel::Visits;
    auto write = [visits](double v) {
        return visits ? QString::number(v, 'f', v < 10 ? 1 : 0) : formatDuration(v);
    };
    // the summary chart: the regions with the most (all ranks together), the chosen one marked
    QVector<RankProfileModel::Entry> top = model->entries();
    std::sort(top.begin(), top.end(), [](const auto &a, const auto &b) { return a.total > b.total; });
    if (top.size() > 12)
        top.resize(12);
    QVector<BarChart::Bar> bars;
    int marked = -1;
    for (const auto &e : top) {
        if (e.name == m_rankRegion)
            marked = int(bars.size());
        bars.append({e.name, write(e.total), e.total});
    }
    if (m_rankRegion.isEmpty() && !top.isEmpty()) {
        m_rankRegion = top[0].name;
        marked = 0;
    }
    m_summaryChart->setBars(tr("summary: all ranks (%1)").arg(m_metric->currentText()), bars, marked);
    // per rank: the chosen region's value on every rank (or group of ranks)
    bars.clear();
    const QVector<double> values = model->bars(m_rankRegion);
    int largest = -1;
    for (int g = 0; g < values.size(); g++) {
        const auto &group = model->groups()[g];
        const QString label = group.first == group.last ? tr("rank %1").arg(group.first)
                                                        : tr("ranks %1–%2").arg(group.first).arg(group.last);
        if (largest < 0 || values[g] > values[largest])
            largest = g;
        bars.append({label, group.answered ? write(values[g]) : tr("…"), values[g]});
    }
    m_rankBars->setBars(m_rankRegion.isEmpty() ? tr("per rank") : tr("%1 per rank").arg(m_rankRegion), bars,
                        largest);
}

// ---- matrix -----------------------------------------------------------------------------------------

QWidget *AnalysesPanel::buildMatrix()
{
    auto *bar = new QHBoxLayout;
    QPushButton *ask = askButton(tr("the message matrix"));
    auto *bytes = new QComboBox;
    bytes->addItems({tr("messages"), tr("bytes")});
    bar->addWidget(ask);
    bar->addWidget(bytes);
    m_matrixView = new MatrixView(m_analyses.matrix());
    m_matrixView->setObjectName(QStringLiteral("matrix"));
    connect(ask, &QPushButton::clicked, this, [this] { m_analyses.askMatrix(); });
    connect(bytes, qOverload<int>(&QComboBox::currentIndexChanged), m_matrixView,
            [this](int index) { m_matrixView->setShowBytes(index == 1); });
    auto *label = new QLabel(tr("sender ↓, receiver →; hover a cell for its counts"));
    return page(bar, label, m_matrixView);
}

// ---- critical path ----------------------------------------------------------------------------------

QWidget *AnalysesPanel::buildCriticalPath()
{
    CriticalPathModel *model = m_analyses.criticalPath();
    auto *bar = new QHBoxLayout;
    QPushButton *ask = askButton(tr("the critical path"));
    m_zero = new QComboBox;
    m_zero->setEditable(true);
    m_zero->setMinimumContentsLength(16);
    m_zero->setToolTip(tr("--zero FUNC: how long the path would be if FUNC took no time"));
    m_zero->addItem(QString());
    auto *show = new QCheckBox(tr("on the timeline"));
    show->setChecked(m_overlay->showsPath());
    bar->addWidget(ask);
    bar->addWidget(new QLabel(tr("zero:")));
    bar->addWidget(m_zero);
    bar->addWidget(show);
    m_pathSummary = new QLabel(model->summary());
    m_pathTable = table(model, true);
    m_pathTable->sortByColumn(CriticalPathModel::OnPath, Qt::DescendingOrder);
    m_pathTable->setToolTip(tr("Double-click a function to see the path without its time"));
    connect(ask, &QPushButton::clicked, this,
            [this] { m_analyses.askCriticalPath(m_zero->currentText().trimmed()); });
    connect(show, &QCheckBox::toggled, m_overlay, &TimelineOverlay::setShowPath);
    connect(m_pathTable, &QTableView::doubleClicked, this, [this, model](const QModelIndex &) {
        const int row = selectedRow(m_pathTable);
        if (row < 0)
            return;
        m_zero->setCurrentText(model->functions()[row].name);
        m_analyses.askCriticalPath(model->functions()[row].name);
    });
    connect(model, &QAbstractItemModel::modelReset, this, [this, model] {
        m_pathSummary->setText(model->summary());
        const QString current = m_zero->currentText();
        m_zero->clear();
        m_zero->addItem(QString());
        for (const auto &f : model->functions())
            m_zero->addItem(f.name);
        m_zero->setCurrentText(current);
    });
    return page(bar, m_pathSummary, m_pathTable);
}

// ---- wait states ------------------------------------------------------------------------------------

QWidget *AnalysesPanel::buildWaitStates()
{
    WaitStatesModel *model = m_analyses.waitStates();
    auto *bar = new QHBoxLayout;
    QPushButton *ask = askButton(tr("the wait states (and where they are, in slices of the window)"));
    auto *show = m_showWaits = new QCheckBox(tr("on the timeline"));
    show->setChecked(m_overlay->showsWaits());
    bar->addWidget(ask);
    bar->addWidget(show);
    m_waitSummary = new QLabel(model->summary());
    m_waitTable = table(model, true);
    m_waitTable->sortByColumn(WaitStatesModel::Wait, Qt::DescendingOrder);
    m_waitRanks = new BarChart;
    m_waitRanks->setObjectName(QStringLiteral("wait-ranks"));
    m_waitPairs = new BarChart;
    m_waitPairs->setObjectName(QStringLiteral("wait-pairs"));
    auto *charts = new QSplitter(Qt::Vertical);
    charts->addWidget(m_waitRanks);
    charts->addWidget(m_waitPairs);
    auto *body = new QSplitter(Qt::Horizontal);
    body->addWidget(m_waitTable);
    body->addWidget(charts);
    body->setStretchFactor(0, 3);
    body->setStretchFactor(1, 2);
    connect(ask, &QPushButton::clicked, this, [this, show] {
        m_analyses.askWaitStates();
        show->setChecked(true);
    });
    connect(show, &QCheckBox::toggled, m_overlay, &TimelineOverlay::setShowWaits);
    connect(model, &QAbstractItemModel::modelReset, this, &AnalysesPanel::updateWaitCharts);
    return page(bar, m_waitSummary, body);
}

void AnalysesPanel::updateWaitCharts()
{
    const WaitStatesModel *model = m_analyses.waitStates();
    m_waitSummary->setText(model->summary());
    QVector<BarChart::Bar> bars;
    for (const auto &r : model->ranks()) {
        QStringList kinds;
        for (int k = 0; k < WaitStatesModel::KindCount; k++)
            if (r.byKind[k])
                kinds << WaitStatesModel::kindName(k);
        bars.append(
            {tr("rank %1").arg(r.rank),
             formatDuration(double(r.waitNs)) + QStringLiteral("  ") + kinds.join(QStringLiteral(", ")),
             double(r.waitNs)});
    }
    m_waitRanks->setBars(tr("waiting per rank"), bars, bars.isEmpty() ? -1 : 0);
    bars.clear();
    for (const auto &p : model->pairs())
        bars.append({tr("%1 waits for %2").arg(p.waiting).arg(p.causing), formatDuration(double(p.waitNs)),
                     double(p.waitNs)});
    m_waitPairs->setBars(tr("who made me wait"), bars, bars.isEmpty() ? -1 : 0);
}

// ---- structure --------------------------------------------------------------------------------------

QWidget *AnalysesPanel::buildStructure()
{
    StructureModel *model = m_analyses.structure();
    auto *bar = new QHBoxLayout;
    QPushButton *ask = askButton(tr("the program's structure (of everything held)"));
    m_tolerance = new QDoubleSpinBox;
    m_tolerance->setRange(0.0, 1000.0);
    m_tolerance->setValue(2.0);
    m_tolerance->setSuffix(tr(" %"));
    m_tolerance->setToolTip(tr("--group-tolerance: how far edge times may differ within a group"));
    bar->addWidget(ask);
    bar->addWidget(new QLabel(tr("tolerance:")));
    bar->addWidget(m_tolerance);
    m_structureSummary = new QLabel(model->summary());
    m_structureTable = table(model, false);
    m_structureTable->setObjectName(QStringLiteral("structure-groups"));
    m_structureTable->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_structureTable->horizontalHeader()->setSectionResizeMode(StructureModel::Ranks, QHeaderView::Stretch);
    // the chosen group's ranks as the timeline's rank filter: a button and the groups' context menu
    m_showGroupRanks = new QAction(tr("Show these ranks in the timeline"), this);
    m_showGroupRanks->setObjectName(QStringLiteral("show-group-ranks"));
    m_structureTable->addAction(m_showGroupRanks);
    m_structureTable->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto *showRanks = new QToolButton;
    showRanks->setDefaultAction(m_showGroupRanks);
    bar->addWidget(showRanks);
    const auto updateShowRanks = [this, model] {
        QString why;
        const int row = selectedRow(m_structureTable);
        const QString ranks = model->rankFilterOf(row, &why);
        m_showGroupRanks->setEnabled(!ranks.isEmpty());
        m_showGroupRanks->setToolTip(
            ranks.isEmpty() ? why
                            : tr("The timeline's rank filter becomes group %1's ranks (%2); edit or clear it "
                                 "beside Ranks:")
                                  .arg(model->groups()[row].group)
                                  .arg(ranks));
    };
    updateShowRanks();
    connect(m_showGroupRanks, &QAction::triggered, this, [this, model] {
        QString why;
        const QString ranks = model->rankFilterOf(selectedRow(m_structureTable), &why);
        if (ranks.isEmpty())
            emit message(why);
        else
            emit rankFilterWanted(ranks);
    });
    m_graph = new StructureGraphView(model);
    m_graph->setObjectName(QStringLiteral("structure-graph"));
    auto *body = new QSplitter(Qt::Horizontal);
    body->addWidget(m_structureTable);
    body->addWidget(m_graph);
    body->setStretchFactor(1, 2);
    connect(ask, &QPushButton::clicked, this, [this] { m_analyses.askStructure(m_tolerance->value()); });
    connect(model, &QAbstractItemModel::modelReset, this, [this, model, updateShowRanks] {
        m_structureSummary->setText(model->summary());
        m_graph->setGroup(model->groups().isEmpty() ? 0 : model->groups()[0].group);
        updateShowRanks();
    });
    connect(m_structureTable->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this, model, updateShowRanks] {
                const int row = selectedRow(m_structureTable);
                if (row >= 0)
                    m_graph->setGroup(model->groups()[row].group);
                updateShowRanks();
            });
    return page(bar, m_structureSummary, body);
}

// ---- metrics ----------------------------------------------------------------------------------------

QWidget *AnalysesPanel::buildMetrics()
{
    MetricsModel *model = m_analyses.metrics();
    auto *bar = new QHBoxLayout;
    auto *askTable = new QPushButton(tr("Ask"));
    askTable->setToolTip(tr("metrics available and metrics list: what the ranks can count, and read now"));
    m_metricChoice = new QComboBox;
    m_metricChoice->setEditable(true);
    m_metricChoice->setMinimumContentsLength(16);
    m_metricChoice->setToolTip(tr("The metric whose timeline to ask"));
    auto *askTimeline = new QPushButton(tr("Timeline"));
    askTimeline->setToolTip(
        tr("metric-timeline of the chosen metric over the visible window, a column per pixel"));
    m_setMetrics = new QPushButton(tr("Set selection"));
    m_setMetrics->setToolTip(
        tr("metrics set: the ranks read the metrics selected in the table from their next "
           "enter or leave on (steers the job; an archive refuses it)"));
    bar->addWidget(askTable);
    bar->addWidget(new QLabel(tr("metric:")));
    bar->addWidget(m_metricChoice);
    bar->addWidget(askTimeline);
    bar->addWidget(m_setMetrics);
    m_metricsSummary = new QLabel(model->summary());
    m_metricsTable = table(model, false);
    m_metricsTable->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_metricsTable->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_metricsTable->horizontalHeader()->setSectionResizeMode(MetricsModel::Counted, QHeaderView::Stretch);
    m_heatMap = new MetricHeatMap(model);
    m_heatMap->setObjectName(QStringLiteral("metric-heat-map"));
    auto *body = new QSplitter(Qt::Vertical);
    body->addWidget(m_metricsTable);
    body->addWidget(m_heatMap);
    body->setStretchFactor(1, 2);
    connect(askTable, &QPushButton::clicked, this, [this] { m_analyses.askMetrics(); });
    connect(askTimeline, &QPushButton::clicked, this, [this] {
        m_analyses.askMetricTimeline(m_metricChoice->currentText().trimmed(), m_heatMap->plotRect().width());
    });
    connect(m_setMetrics, &QPushButton::clicked, this, [this, model] {
        QStringList names;
        for (const QModelIndex &index : m_metricsTable->selectionModel()->selectedRows())
            names << model->metrics()[index.row()].name;
        // an empty selection would stop every metric on every rank: too much for a stray click
        if (names.isEmpty())
            emit message(tr("metrics set: select the metrics to read in the table first"));
        else if (!m_analyses.setMetrics(names))
            emit message(tr("metrics set: not connected, or more than 16 metrics"));
    });
    // a finished run's counters cannot change: the button says so before the archive would
    const auto updateSet = [this] { m_setMetrics->setEnabled(!m_archive.serving()); };
    connect(m_viewer->client(), &ProtocolClient::connected, this, updateSet);
    connect(m_viewer->client(), &ProtocolClient::connectionLost, this, updateSet);
    connect(model, &QAbstractItemModel::modelReset, this, [this, model] {
        m_metricsSummary->setText(model->summary());
        const QString current = m_metricChoice->currentText();
        m_metricChoice->clear();
        for (const auto &m : model->metrics())
            m_metricChoice->addItem(m.name);
        // the first metric some rank reads, when none was chosen yet
        const QStringList selected = model->selectedNames();
        m_metricChoice->setCurrentText(!current.isEmpty()   ? current
                                       : selected.isEmpty() ? QString()
                                                            : selected[0]);
    });
    return page(bar, m_metricsSummary, body);
}
