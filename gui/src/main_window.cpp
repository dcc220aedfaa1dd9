#include "main_window.h"

#include "analyses_panel.h"
#include "connect_dialog.h"
#include "format.h"
#include "overview_view.h"
#include "snapshot_dialog.h"
#include "timeline_view.h"

#include <otfx/protocol.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

static const char *const classNames[4] = {"p2p", "collective", "mpi-other", "user"};
static const unsigned classBits[4] = {OTFX_STEER_P2P, OTFX_STEER_COLLECTIVE, OTFX_STEER_OTHER_MPI,
                                      OTFX_STEER_USER};

// A status bar label that never asks for more than `width` pixels: the text is cut with an ellipsis,
// the whole of it is the tooltip.
class ElidedLabel : public QLabel
{
  public:
    explicit ElidedLabel(int width) : m_width(width)
    {
        setTextFormat(Qt::PlainText);
    }
    void setFullText(const QString &text)
    {
        m_full = text;
        setToolTip(text);
        setText(elideToWidth(text, font(), m_width));
        setMaximumWidth(m_width + 8);
    }
    QString fullText() const
    {
        return m_full;
    }

  private:
    int m_width;
    QString m_full;
};

MainWindow::MainWindow(Viewer *viewer, QWidget *parent) : QMainWindow(parent), m_viewer(viewer)
{
    setWindowTitle(tr("otfx-gui"));
    resize(1400, 860);
    TimelineModel *timeline = viewer->timeline();

    // ---- centre: banner, overview, timeline, tabs ----
    auto *centre = new QWidget;
    auto *layout = new QVBoxLayout(centre);
    layout->setContentsMargins(4, 4, 4, 4);
    auto *bannerRow = new QHBoxLayout;
    m_banner = new QLabel;
    m_banner->setObjectName(QStringLiteral("banner"));
    m_banner->setStyleSheet(
        QStringLiteral("background: #b00020; color: white; padding: 6px; font-weight: bold"));
    m_banner->setWordWrap(true);
    m_reconnectButton = new QPushButton(tr("Reconnect"));
    bannerRow->addWidget(m_banner, 1);
    bannerRow->addWidget(m_reconnectButton);
    layout->addLayout(bannerRow);

    auto *timelineBar = new QHBoxLayout;
    m_follow = new QCheckBox(tr("Follow live"));
    m_follow->setToolTip(tr("Keep the window's width and end it at the newest event held"));
    m_backButton = new QPushButton(tr("◀ Back"));
    m_backButton->setToolTip(tr("The previous window (Alt + ← or Backspace in the timeline)"));
    m_forwardButton = new QPushButton(tr("Forward ▶"));
    m_forwardButton->setToolTip(tr("The next window again (Alt + →)"));
    auto *showAll = new QPushButton(tr("Show all"));
    showAll->setToolTip(tr("Everything held, every selected rank (Home)"));
    auto *zoomIn = new QPushButton(tr("Zoom in"));
    zoomIn->setToolTip(tr("+ in the timeline; Ctrl + + zooms the ranks"));
    auto *zoomOut = new QPushButton(tr("Zoom out"));
    zoomOut->setToolTip(tr("− in the timeline; Ctrl + − zooms the ranks out"));
    auto *clearHighlight = new QPushButton(tr("Clear highlight"));
    m_colourBy = new QComboBox;
    m_colourBy->addItem(tr("Colour: role"));
    m_colourBy->addItem(tr("Colour: function"));
    m_colourBy->setObjectName(QStringLiteral("colourBy"));
    m_windowLabel = new QLabel;
    m_windowLabel->setObjectName(QStringLiteral("window"));
    timelineBar->addWidget(new QLabel(tr("<b>Timeline</b>")));
    timelineBar->addWidget(m_windowLabel, 1);
    timelineBar->addWidget(m_follow);
    timelineBar->addWidget(m_backButton);
    timelineBar->addWidget(m_forwardButton);
    timelineBar->addWidget(zoomIn);
    timelineBar->addWidget(zoomOut);
    timelineBar->addWidget(showAll);
    timelineBar->addWidget(clearHighlight);
    timelineBar->addWidget(m_colourBy);

    auto *rankBar = new QHBoxLayout;
    m_rankFilter = new QLineEdit;
    m_rankFilter->setObjectName(QStringLiteral("rankFilter"));
    m_rankFilter->setPlaceholderText(tr("all ranks, or e.g. 0-3,17"));
    m_rankFilter->setToolTip(tr("The ranks to show: a list of ranks and ranges (at most 32), Enter applies"));
    m_rankFilter->setMaximumWidth(220);
    auto *allRanks = new QPushButton(tr("All ranks"));
    m_messageFilter = new QLineEdit;
    m_messageFilter->setObjectName(QStringLiteral("messageFilter"));
    m_messageFilter->setPlaceholderText(tr("all, or e.g. tag=0-9,42 src=0-3 min=64"));
    m_messageFilter->setToolTip(
        tr("The message lines to draw (on single events): tag=, src= (sender ranks) and dst= (receiver "
           "ranks) take lists like 0-9,42; min= and max= a size in bytes. Enter applies; empty shows all"));
    m_messageFilter->setClearButtonEnabled(true);
    m_messageFilter->setMinimumWidth(m_messageFilter->fontMetrics().horizontalAdvance(QLatin1Char('m')) * 14);
    m_messageFilter->setMaximumWidth(260);
    m_filterMessage = new QLabel;
    m_filterMessage->setObjectName(QStringLiteral("filterError"));
    m_filterMessage->setStyleSheet(QStringLiteral("color: #b00020"));
    m_rankLabel = new QLabel;
    m_rankLabel->setObjectName(QStringLiteral("ranks"));
    m_modeLabel = new QLabel;
    m_modeLabel->setObjectName(QStringLiteral("mode"));
    m_modeLabel->setStyleSheet(QStringLiteral("color: #555"));
    m_partialLabel = new QLabel;
    m_partialLabel->setObjectName(QStringLiteral("partial"));
    m_partialLabel->setStyleSheet(QStringLiteral("color: #9a4d00; font-weight: bold"));
    rankBar->addWidget(new QLabel(tr("Ranks:")));
    rankBar->addWidget(m_rankFilter);
    rankBar->addWidget(allRanks);
    rankBar->addWidget(new QLabel(tr("Messages:")));
    rankBar->addWidget(m_messageFilter);
    rankBar->addWidget(m_filterMessage);
    rankBar->addWidget(m_rankLabel);
    rankBar->addStretch(1);
    rankBar->addWidget(m_partialLabel);
    rankBar->addWidget(m_modeLabel);

    auto *timelineBox = new QWidget;
    auto *timelineLayout = new QVBoxLayout(timelineBox);
    timelineLayout->setContentsMargins(0, 0, 0, 0);
    timelineLayout->setSpacing(2);
    timelineLayout->addLayout(timelineBar);
    timelineLayout->addLayout(rankBar);
    m_timelineView = new TimelineView(timeline);
    m_overviewView = new OverviewView(viewer->overview(), timeline, m_timelineView);
    timelineLayout->addWidget(m_overviewView);
    auto *plotRow = new QHBoxLayout;
    plotRow->setSpacing(0);
    plotRow->addWidget(m_timelineView, 1);
    m_rankScroll = new QScrollBar(Qt::Vertical);
    m_rankScroll->setObjectName(QStringLiteral("rankScroll"));
    m_rankScroll->setToolTip(tr("Scroll the ranks (Shift + wheel, ↑ ↓ PgUp PgDn in the timeline)"));
    plotRow->addWidget(m_rankScroll);
    timelineLayout->addLayout(plotRow, 1);
    m_legend = new QLabel;
    m_legend->setObjectName(QStringLiteral("legend"));
    m_legend->setWordWrap(true);
    timelineLayout->addWidget(m_legend);

    auto *tabs = new QTabWidget;
    m_profileView = new QTableView;
    m_profileView->setObjectName(QStringLiteral("profile"));
    m_profileView->setModel(viewer->profile());
    m_profileView->setSortingEnabled(true);
    m_profileView->sortByColumn(ProfileModel::Exclusive, Qt::DescendingOrder);
    m_profileView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_profileView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_profileView->horizontalHeader()->setSectionResizeMode(ProfileModel::Region, QHeaderView::Stretch);
    m_profileView->verticalHeader()->hide();
    m_findFunction = new QLineEdit;
    m_findFunction->setObjectName(QStringLiteral("findFunction"));
    m_findFunction->setPlaceholderText(tr("Find function…"));
    m_findFunction->setToolTip(tr("Shows only the functions whose name contains the text (any case); Enter "
                                  "highlights the first of them in the timeline"));
    m_findFunction->setClearButtonEnabled(true);
    m_findFunction->setMaximumWidth(260);
    m_findCount = new QLabel;
    m_findCount->setObjectName(QStringLiteral("findCount"));
    auto *profileBar = new QHBoxLayout;
    profileBar->setContentsMargins(0, 0, 0, 0);
    profileBar->addWidget(m_findFunction);
    profileBar->addWidget(m_findCount);
    profileBar->addStretch(1);
    auto *profileTab = new QWidget;
    auto *profileLayout = new QVBoxLayout(profileTab);
    profileLayout->setContentsMargins(0, 2, 0, 0);
    profileLayout->setSpacing(2);
    profileLayout->addLayout(profileBar);
    profileLayout->addWidget(m_profileView, 1);
    tabs->addTab(profileTab, tr("Profile (visible window and ranks)"));
    m_placesView = new QTableView;
    m_placesView->setObjectName(QStringLiteral("places"));
    m_placesView->setModel(viewer->status());
    m_placesView->verticalHeader()->hide();
    m_placesView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    tabs->addTab(m_placesView, tr("Places"));
    m_log = new QPlainTextEdit;
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(2000);
    tabs->addTab(m_log, tr("Server log"));
    m_analyses = new AnalysesPanel(viewer, m_timelineView);
    tabs->addTab(m_analyses, tr("Analyses"));

    auto *splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(timelineBox);
    splitter->addWidget(tabs);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    layout->addWidget(splitter, 1);
    setCentralWidget(centre);

    // ---- controls dock (scrolls when the window is too low for it) ----
    auto *dock = new QDockWidget(tr("Controls"));
    dock->setObjectName(QStringLiteral("controls"));
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    auto *scroll = new QScrollArea;
    scroll->setObjectName(QStringLiteral("controlsScroll"));
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(buildControls());
    scroll->setMinimumWidth(scroll->widget()->minimumSizeHint().width() +
                            scroll->verticalScrollBar()->sizeHint().width());
    dock->setWidget(scroll);
    addDockWidget(Qt::RightDockWidgetArea, dock);

    // ---- status bar: short items, each cut with an ellipsis rather than pushed out ----
    auto elided = [](int width, const char *name) {
        auto *label = new ElidedLabel(width);
        label->setObjectName(QLatin1String(name));
        return label;
    };
    m_connection = elided(200, "connection");
    m_app = elided(150, "application");
    m_recording = elided(110, "recording");
    m_rate = elided(190, "rate");
    m_fill = new QProgressBar;
    m_fill->setObjectName(QStringLiteral("fill"));
    m_fill->setRange(0, 1000);
    m_fill->setMaximumWidth(110);
    m_fill->setFormat(tr("buffers %p%"));
    m_reduced = elided(200, "reduced");
    m_elapsed = elided(110, "elapsed");
    m_busy = new QProgressBar;
    m_busy->setRange(0, 0);
    m_busy->setMaximumWidth(60);
    m_busy->setToolTip(tr("A steering command is being carried out"));
    m_busy->hide();
    for (QWidget *w : std::initializer_list<QWidget *>{m_connection, m_app, m_recording, m_rate, m_fill,
                                                       m_reduced, m_elapsed})
        statusBar()->addWidget(w);
    m_message = elided(220, "message");
    statusBar()->addPermanentWidget(m_message);
    statusBar()->addPermanentWidget(m_busy);

    // ---- menus ----
    QMenu *job = menuBar()->addMenu(tr("&Job"));
    job->addAction(tr("&Connect…"), this, &MainWindow::openConnectDialog);
    job->addAction(tr("&Reconnect"), m_viewer, &Viewer::reconnect);
    job->addAction(tr("&Disconnect"), m_viewer->client(), &ProtocolClient::disconnectFromServer);
    job->addSeparator();
    m_analyses->addArchiveActions(job);
    job->addSeparator();
    m_snapshotAction = job->addAction(tr("Save &snapshot…"), this, &MainWindow::openSnapshotDialog);
    job->addAction(tr("Save screens&hot…"), this, &MainWindow::saveScreenshotInteractive);
    job->addSeparator();
    job->addAction(tr("&Quit"), this, &QWidget::close);
    QMenu *view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("Show &all (Home)"), timeline, &TimelineModel::showEverything);
    view->addAction(tr("&Back (Alt + ←)"), timeline, &TimelineModel::back);
    view->addAction(tr("&Forward (Alt + →)"), timeline, &TimelineModel::forward);
    view->addAction(tr("All &ranks"), timeline, &TimelineModel::showAllRanks);
    view->addAction(tr("&Follow live"), this, [this] { m_follow->setChecked(!m_follow->isChecked()); });

    // ---- wiring ----
    connect(m_analyses, &AnalysesPanel::message, this, [this](const QString &text) {
        static_cast<ElidedLabel *>(m_message)->setFullText(text);
        m_message->setStyleSheet(QString());
    });
    connect(m_reconnectButton, &QPushButton::clicked, m_viewer, &Viewer::reconnect);
    connect(m_follow, &QCheckBox::toggled, timeline, &TimelineModel::setFollowLive);
    connect(timeline, &TimelineModel::followLiveChanged, m_follow, &QCheckBox::setChecked);
    connect(showAll, &QPushButton::clicked, timeline, &TimelineModel::showEverything);
    connect(m_backButton, &QPushButton::clicked, timeline, &TimelineModel::back);
    connect(m_forwardButton, &QPushButton::clicked, timeline, &TimelineModel::forward);
    connect(zoomIn, &QPushButton::clicked, this, [timeline] { timeline->zoom(0.5, 0.5); });
    connect(zoomOut, &QPushButton::clicked, this, [timeline] { timeline->zoom(2.0, 0.5); });
    connect(clearHighlight, &QPushButton::clicked, this, [this] {
        m_timelineView->setHighlight(QString());
        m_profileView->clearSelection();
    });
    connect(m_colourBy, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int index) {
        m_timelineView->setColourByFunction(index == 1);
        m_overviewView->update();
        updateLegend();
    });
    connect(m_rankFilter, &QLineEdit::returnPressed, this, [this] { applyRankFilter(m_rankFilter->text()); });
    connect(m_analyses, &AnalysesPanel::rankFilterWanted, this, &MainWindow::applyRankFilter);
    // the field shows the filter in force, however it was set (typed, a structure group, another job)
    connect(timeline, &TimelineModel::rankFilterChanged, this, [this] {
        m_rankFilter->setText(m_viewer->timeline()->rankFilter());
        m_filterMessage->clear();
    });
    connect(allRanks, &QPushButton::clicked, this, [this] { applyRankFilter(QString()); });
    connect(m_messageFilter, &QLineEdit::returnPressed, this,
            [this] { applyMessageFilter(m_messageFilter->text()); });
    // the clear button shows every message again, as an empty field and Enter would
    connect(m_messageFilter, &QLineEdit::textChanged, this, [this](const QString &text) {
        if (text.isEmpty() && !m_viewer->timeline()->messageFilter().isEmpty())
            applyMessageFilter(QString());
    });
    connect(timeline, &TimelineModel::messageFilterChanged, this, [this] {
        m_messageFilter->setText(m_viewer->timeline()->messageFilter().text());
        m_filterMessage->clear();
    });
    connect(m_rankScroll, &QScrollBar::valueChanged, this, [timeline](int value) {
        if (value != timeline->rankFirst())
            timeline->setRankWindow(value, timeline->rankCount(), false);
    });
    connect(m_profileView, &QTableView::clicked, this,
            [this](const QModelIndex &index) { highlightProfileRow(index.row()); });
    connect(m_findFunction, &QLineEdit::textChanged, this, &MainWindow::filterProfile);
    connect(m_findFunction, &QLineEdit::returnPressed, this, &MainWindow::highlightFirstMatch);
    // new answers and sorting reorder the rows: the rows hidden are the ones that do not match now
    connect(viewer->profile(), &QAbstractItemModel::modelReset, this, &MainWindow::filterProfile);
    connect(viewer->profile(), &QAbstractItemModel::layoutChanged, this, &MainWindow::filterProfile);
    connect(timeline, &TimelineModel::viewportChanged, this, &MainWindow::updateWindowLabel);
    connect(timeline, &TimelineModel::dataChanged, this, &MainWindow::updateWindowLabel);
    connect(timeline, &TimelineModel::dataChanged, this, &MainWindow::updateLegend);
    connect(viewer->profile(), &QAbstractItemModel::modelReset, this, &MainWindow::updateLegend);
    connect(viewer->profile(), &QAbstractItemModel::modelReset, this, &MainWindow::updateWindowLabel);
    connect(viewer->client(), &ProtocolClient::stateChanged, this, &MainWindow::updateConnection);
    connect(viewer->client(), &ProtocolClient::connected, this, [this] { m_connectedFor.start(); });
    connect(viewer->status(), &StatusModel::updated, this, &MainWindow::updateStatus);
    connect(viewer->status(), &StatusModel::updated, this, &MainWindow::showJobState);
    connect(viewer, &Viewer::logged, m_log, &QPlainTextEdit::appendPlainText);
    connect(viewer, &Viewer::commandAnswered, this, &MainWindow::onAnswer);
    connect(viewer, &Viewer::jobChanged, this, [this] {
        // Another job: the old one's answers, states and filter are not this one's.
        m_answer->clear();
        static_cast<ElidedLabel *>(m_message)->setFullText(QString());
        m_message->setStyleSheet(QString());
        m_busy->hide();
        m_shownStrategy.clear();
        m_shownClasses = -2;
        m_log->appendPlainText(tr("— another job: %1 —").arg(m_viewer->client()->welcome().value("job")));
    });
    connect(viewer, &Viewer::commandSent, this, [this](quint32, const QString &line) {
        m_busy->show();
        static_cast<ElidedLabel *>(m_message)->setFullText(tr("%1 …").arg(line));
        m_message->setStyleSheet(QString());
    });
    connect(viewer, &Viewer::noticeReceived, this, [this](const Record &notice) {
        QStringList details;
        for (const QByteArray &key : notice.order)
            if (key != "event")
                details << QStringLiteral("%1=%2").arg(QString::fromUtf8(key), notice.fields.value(key));
        static_cast<ElidedLabel *>(m_message)->setFullText(
            details.isEmpty()
                ? notice.value("event")
                : notice.value("event") + QStringLiteral(": ") + details.join(QLatin1Char(' ')));
        updateConnection();
    });
    auto *clock = new QTimer(this);
    connect(clock, &QTimer::timeout, this, &MainWindow::updateStatus);
    clock->start(1000);
    for (const QString &line : viewer->log())
        m_log->appendPlainText(line);
    updateConnection();
    updateStatus();
    updateWindowLabel();
    updateLegend();
}

QWidget *MainWindow::buildControls()
{
    auto *panel = new QWidget;
    auto *layout = new QVBoxLayout(panel);
    auto button = [this](const QString &text, const QString &line, const QString &tip) {
        auto *b = new QPushButton(text);
        b->setToolTip(tip);
        connect(b, &QPushButton::clicked, this, [this, line] { m_viewer->command(line); });
        m_steering << b;
        return b;
    };

    auto *record = new QGroupBox(tr("Recording"));
    auto *recordLayout = new QGridLayout(record);
    recordLayout->addWidget(button(tr("Pause recording"), QStringLiteral("record pause"),
                                   tr("Every rank stops recording (the application goes on)")),
                            0, 0);
    recordLayout->addWidget(
        button(tr("Resume recording"), QStringLiteral("record resume"), tr("Every rank records again")), 0,
        1);
    m_windowSeconds = new QSpinBox;
    m_windowSeconds->setRange(1, 3600);
    m_windowSeconds->setValue(2);
    m_windowSeconds->setSuffix(tr(" s"));
    auto *windowButton = new QPushButton(tr("Record window"));
    windowButton->setToolTip(tr("Record from now for N seconds, then stop recording"));
    connect(windowButton, &QPushButton::clicked, this,
            [this] { m_viewer->command(QStringLiteral("record window %1s").arg(m_windowSeconds->value())); });
    m_steering << windowButton;
    recordLayout->addWidget(m_windowSeconds, 1, 0);
    recordLayout->addWidget(windowButton, 1, 1);
    layout->addWidget(record);

    auto *app = new QGroupBox(tr("Application"));
    auto *appLayout = new QHBoxLayout(app);
    appLayout->addWidget(button(tr("Pause application"), QStringLiteral("app pause"),
                                tr("The application ranks block (answered once all are blocked)")));
    appLayout->addWidget(
        button(tr("Resume / start"), QStringLiteral("app resume"),
               tr("The application ranks continue (also starts a job run with --start-paused)")));
    layout->addWidget(app);

    auto *buffers = new QGroupBox(tr("Buffers"));
    auto *buffersLayout = new QGridLayout(buffers);
    m_reduction = new QComboBox;
    m_reduction->setObjectName(QStringLiteral("reduction"));
    for (const char *s : {"ring", "time", "type", "depth", "stop"})
        m_reduction->addItem(QLatin1String(s));
    m_reduction->setCurrentIndex(-1); // until the job says which it uses
    m_reduction->setPlaceholderText(tr("(job's strategy unknown)"));
    m_reduction->setToolTip(
        tr("What a full buffer does: ring drops the oldest detail, time thins the older part, "
           "type drops event classes, depth drops the deepest levels, stop stops storing. "
           "Shows the job's strategy until you pick another."));
    auto *applyReduction = new QPushButton(tr("Set reduction"));
    connect(applyReduction, &QPushButton::clicked, this, [this] {
        if (m_reduction->currentIndex() >= 0)
            m_viewer->command(QStringLiteral("reduction ") + m_reduction->currentText());
    });
    auto *reset = new QPushButton(tr("Reset buffers…"));
    reset->setToolTip(tr("The event places drop every event they hold (definitions stay)"));
    connect(reset, &QPushButton::clicked, this, &MainWindow::confirmReset);
    m_steering << m_reduction << applyReduction << reset;
    buffersLayout->addWidget(m_reduction, 0, 0);
    buffersLayout->addWidget(applyReduction, 0, 1);
    buffersLayout->addWidget(reset, 1, 0, 1, 2);
    layout->addWidget(buffers);

    auto *classes = new QGroupBox(tr("Event classes recorded"));
    auto *classesLayout = new QGridLayout(classes);
    for (int i = 0; i < 4; i++) {
        m_classes[i] = new QCheckBox(QLatin1String(classNames[i]));
        m_classes[i]->setObjectName(QStringLiteral("class-") + QLatin1String(classNames[i]));
        m_classes[i]->setChecked(true);
        m_classes[i]->setToolTip(tr("Shows what the job's ranks record (half checked: some ranks do)"));
        classesLayout->addWidget(m_classes[i], i / 2, i % 2);
        m_steering << m_classes[i];
    }
    auto *applyClassesButton = new QPushButton(tr("Apply"));
    applyClassesButton->setToolTip(tr("enable the checked classes, disable the others"));
    connect(applyClassesButton, &QPushButton::clicked, this, &MainWindow::applyClasses);
    m_steering << applyClassesButton;
    classesLayout->addWidget(applyClassesButton, 2, 0, 1, 2);
    layout->addWidget(classes);

    auto *snapshot = new QGroupBox(tr("Snapshot"));
    auto *snapshotLayout = new QVBoxLayout(snapshot);
    auto *snapshotButton = new QPushButton(tr("Save snapshot…"));
    snapshotButton->setObjectName(QStringLiteral("saveSnapshot"));
    snapshotButton->setToolTip(tr("The job writes an OTF2 archive of its buffers or of the visible window"));
    connect(snapshotButton, &QPushButton::clicked, this, &MainWindow::openSnapshotDialog);
    m_steering << snapshotButton;
    snapshotLayout->addWidget(snapshotButton);
    layout->addWidget(snapshot);

    layout->addWidget(new QLabel(tr("Last answer of the job:")));
    m_answer = new QPlainTextEdit;
    m_answer->setObjectName(QStringLiteral("answer"));
    m_answer->setReadOnly(true);
    m_answer->setMinimumHeight(80);
    m_answer->setPlaceholderText(tr("(no command sent yet)"));
    layout->addWidget(m_answer, 1);
    return panel;
}

void MainWindow::confirmReset()
{
    QMessageBox box(QMessageBox::Question, tr("Reset buffers"),
                    tr("Drop every event the job holds? This cannot be undone."),
                    QMessageBox::Yes | QMessageBox::No, this);
    box.setDefaultButton(QMessageBox::No); // Enter must not drop a job's trace
    box.setObjectName(QStringLiteral("confirmReset"));
    if (box.exec() == QMessageBox::Yes)
        m_viewer->command(QStringLiteral("reset"));
}

void MainWindow::applyClasses()
{
    QStringList enable, disable;
    for (int i = 0; i < 4; i++) {
        if (m_classes[i]->checkState() == Qt::PartiallyChecked)
            continue; // left as the ranks have it
        (m_classes[i]->isChecked() ? enable : disable) << QLatin1String(classNames[i]);
    }
    for (const QStringList *list : {&enable, &disable})
        if (!list->isEmpty()) {
            m_viewer->command((list == &enable ? QStringLiteral("enable ") : QStringLiteral("disable ")) +
                              list->join(QLatin1Char(',')));
        }
}

void MainWindow::showJobState()
{
    const StatusModel *status = m_viewer->status();
    if (!status->valid())
        return;
    // Only when the job's state changed, so a choice not applied yet is not taken away every second.
    const QString strategy = status->commonStrategy();
    if (strategy != m_shownStrategy) {
        m_shownStrategy = strategy;
        m_reduction->setCurrentIndex(strategy.isEmpty() ? -1 : m_reduction->findText(strategy));
        m_reduction->setPlaceholderText(status->strategies().isEmpty()
                                            ? tr("(job's strategy unknown)")
                                            : tr("mixed: %1").arg(status->strategies()));
    }
    const Record &summary = status->summary();
    if (!summary.has("classes"))
        return;
    const int every = int(summary.u64("classes")), some = int(summary.u64("classes_any", quint64(every)));
    const int key = every | (some << 8);
    if (key == m_shownClasses)
        return;
    m_shownClasses = key;
    for (int i = 0; i < 4; i++) {
        const bool all = every & int(classBits[i]), any = some & int(classBits[i]);
        m_classes[i]->setTristate(all != any);
        m_classes[i]->setCheckState(all ? Qt::Checked : any ? Qt::PartiallyChecked : Qt::Unchecked);
    }
}

void MainWindow::onAnswer(quint32, const QString &line, bool ok, const QString &answer)
{
    m_busy->setVisible(m_viewer->commandsInFlight() > 0);
    m_answer->setPlainText(QStringLiteral("%1 — %2\n%3").arg(line, ok ? tr("done") : tr("FAILED"), answer));
    static_cast<ElidedLabel *>(m_message)->setFullText(
        QStringLiteral("%1: %2").arg(line, ok ? tr("done") : tr("FAILED")));
    m_message->setStyleSheet(ok ? QString() : QStringLiteral("color: #b00020; font-weight: bold"));
}

void MainWindow::openConnectDialog()
{
    if (m_connectDialog) {
        m_connectDialog->raise();
        m_connectDialog->activateWindow();
        return;
    }
    auto *dialog = new ConnectDialog(m_viewer->session(), m_viewer->sessionDirectory(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setModal(false);
    connect(dialog, &QDialog::accepted, this,
            [this, dialog] { m_viewer->connectToSession(dialog->session()); });
    // Connected meanwhile (a session file appeared, or Reconnect): the dialog has nothing left to do.
    connect(m_viewer->client(), &ProtocolClient::stateChanged, dialog, [dialog](ProtocolClient::State state) {
        if (state == ProtocolClient::Connected && dialog->isVisible() &&
            dialog->result() != QDialog::Accepted)
            dialog->reject();
    });
    m_connectDialog = dialog;
    dialog->show();
}

ConnectDialog *MainWindow::connectDialog() const
{
    return m_connectDialog.data();
}

QString MainWindow::visibleWindowText() const
{
    const TimelineModel *t = m_viewer->timeline();
    if (!t->hasViewport())
        return QString();
    const double span = double(t->to() - t->from());
    const double resolution = std::max(1.0, span / 1000.0);
    const double end = double(t->to()) - double(t->origin());
    QString text =
        QStringLiteral("%1 … %2").arg(formatTime(double(t->from()) - double(t->origin()), resolution, end),
                                      formatTime(end, resolution, end));
    if (!t->visibleRankSet().isEmpty())
        text += tr(", ranks %1").arg(t->visibleRankSet());
    return text;
}

void MainWindow::openSnapshotDialog()
{
    const SessionInfo &session = m_viewer->session();
    const QString dir = session.path.isEmpty() ? QDir::currentPath() : QFileInfo(session.path).absolutePath();
    SnapshotDialog dialog(dir, visibleWindowText(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    m_answer->setPlainText(tr("writing snapshot %1 …").arg(dialog.name()));
    m_viewer->snapshot(dialog.name(), dialog.visibleWindow(), dialog.overwrite());
}

bool MainWindow::applyRankFilter(const QString &text)
{
    QString error;
    if (!m_viewer->timeline()->setRankFilter(text, &error)) {
        m_filterMessage->setText(error);
        return false;
    }
    return true;
}

bool MainWindow::applyMessageFilter(const QString &text)
{
    QString error;
    if (!m_viewer->timeline()->setMessageFilter(text, &error)) {
        m_filterMessage->setText(error);
        return false;
    }
    return true;
}

QString MainWindow::findFunction(const QString &text)
{
    m_findFunction->setText(text); // lists only the matching functions (textChanged)
    return highlightFirstMatch();
}

QString MainWindow::highlightFirstMatch()
{
    const int row = m_viewer->profile()->firstMatch(m_findFunction->text());
    if (row < 0)
        return QString();
    highlightProfileRow(row);
    return m_viewer->profile()->regionAt(row);
}

QMap<QString, QString> MainWindow::state() const
{
    QMap<QString, QString> s;
    s[QStringLiteral("filter_error")] = m_filterMessage->text();
    int shown = 0;
    for (int row = 0; row < m_viewer->profile()->rowCount(); row++)
        shown += !m_profileView->isRowHidden(row);
    s[QStringLiteral("profile_shown")] = QString::number(shown);
    s[QStringLiteral("highlight")] = m_timelineView->highlight();
    return s;
}

bool MainWindow::saveScreenshot(const QString &path)
{
    return grab().toImage().save(path, "PNG");
}

void MainWindow::saveScreenshotInteractive()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Screenshot"), QStringLiteral("otfx-gui.png"),
                                                      tr("PNG images (*.png)"));
    if (!path.isEmpty() && !saveScreenshot(path))
        QMessageBox::warning(this, tr("Screenshot"), tr("Could not write %1").arg(path));
}

void MainWindow::updateConnection()
{
    ProtocolClient *client = m_viewer->client();
    const auto state = client->state();
    const QString where = QStringLiteral("%1:%2").arg(client->address()).arg(client->port());
    auto *connection = static_cast<ElidedLabel *>(m_connection);
    for (QWidget *w : m_steering)
        w->setEnabled(state == ProtocolClient::Connected);
    m_snapshotAction->setEnabled(state == ProtocolClient::Connected);
    switch (state) {
    case ProtocolClient::Connected:
        connection->setFullText(tr("● job %1 (%2)").arg(client->welcome().value("job"), where));
        m_connection->setStyleSheet(QStringLiteral("color: #1b5e20"));
        m_banner->hide();
        m_reconnectButton->hide();
        setWindowTitle(tr("otfx-gui — job %1").arg(client->welcome().value("job")));
        break;
    case ProtocolClient::Connecting:
    case ProtocolClient::Authenticating:
        connection->setFullText(tr("connecting to %1 …").arg(where));
        m_connection->setStyleSheet(QString());
        break;
    case ProtocolClient::Disconnected: {
        connection->setFullText(tr("✖ not connected"));
        m_connection->setStyleSheet(QStringLiteral("color: #b00020; font-weight: bold"));
        // The client's own reason, stored before it said "disconnected": this loss's, not the last one's.
        const QString reason = client->lostReason();
        m_banner->setText(
            m_viewer->jobEnded() ? tr("The job ended. Reconnect to the next job of this session directory.")
            : client->port() ? tr("Connection lost: %1").arg(reason.isEmpty() ? tr("not connected") : reason)
                             : tr("Not connected: use Job ▸ Connect… to pick a job"));
        m_banner->show();
        m_reconnectButton->setVisible(client->port() != 0);
        break;
    }
    }
}

void MainWindow::updateStatus()
{
    const StatusModel *status = m_viewer->status();
    auto set = [](QLabel *label, const QString &text) {
        static_cast<ElidedLabel *>(label)->setFullText(text);
    };
    if (!status->valid()) {
        for (QLabel *l : {m_app, m_recording, m_rate, m_reduced, m_elapsed})
            set(l, QString());
        m_fill->setValue(0);
        m_fill->setToolTip(QString());
        return;
    }
    // After the connection ended these are what the job said last: marked so.
    const QString stale =
        m_viewer->client()->state() == ProtocolClient::Connected ? QString() : tr(" (last known)");
    set(m_app, tr("application: %1%2").arg(status->appState(), stale));
    set(m_recording, tr("recording: %1%2").arg(status->recording(), stale));
    m_recording->setStyleSheet(status->recording() == QLatin1String("on") ? QStringLiteral("color: #1b5e20")
                                                                          : QStringLiteral("color: #b00020"));
    const Record &summary = status->summary();
    const QString answered =
        status->partial()
            ? tr(" (%1 of %2 places)").arg(summary.value("places_answered"), summary.value("places_total"))
            : QString();
    if (status->appState() == QLatin1String("finished"))
        set(m_rate,
            tr("finished: %1 events received").arg(formatCount(double(summary.u64("events_received")))) +
                answered);
    else
        set(m_rate, tr("%1 events/s").arg(formatCount(status->eventsPerSecond())) + answered);
    m_fill->setValue(int(status->fill() * 1000.0));
    m_fill->setToolTip(
        tr("Fill of all trace buffers together; per place:\n%1")
            .arg(status->bufferSummary().replace(QStringLiteral(" · "), QStringLiteral("\n"))));
    // Events never stored (stop, dropped at the source, throttled) count as dropped, by cause.
    QStringList causes;
    for (const char *cause : {"stop", "source-drop", "throttle"}) {
        const QByteArray key = QByteArray("dropped_") + cause;
        if (summary.u64(key.constData()))
            causes << QStringLiteral("%1 %2").arg(QLatin1String(cause),
                                                  formatCount(double(summary.u64(key.constData()))));
    }
    set(m_reduced,
        tr("reduced %1 · dropped %2%3")
            .arg(formatCount(double(status->reducedEvents())), formatCount(double(status->droppedEvents())),
                 causes.isEmpty()
                     ? QString()
                     : QStringLiteral(" (") + causes.join(QStringLiteral(", ")) + QLatin1Char(')')));
    const quint64 started = m_viewer->session().startedNs;
    double elapsed = m_connectedFor.isValid() ? double(m_connectedFor.elapsed()) * 1e6 : 0.0;
    if (started && status->lastTime() > started)
        elapsed = double(status->lastTime() - started);
    set(m_elapsed, tr("elapsed %1").arg(formatDuration(elapsed)));
}

void MainWindow::updateWindowLabel()
{
    const TimelineModel *t = m_viewer->timeline();
    m_backButton->setEnabled(t->canGoBack());
    m_forwardButton->setEnabled(t->canGoForward());
    m_modeLabel->setText(m_timelineView->modeText());
    QStringList partial;
    if (!t->partialText().isEmpty())
        partial << tr("timeline %1").arg(t->partialText());
    if (!m_viewer->profile()->partialText().isEmpty())
        partial << tr("profile %1").arg(m_viewer->profile()->partialText());
    m_partialLabel->setText(partial.join(QStringLiteral(" · ")));
    updateRankScroll();
    if (!t->hasViewport()) {
        m_windowLabel->setText(tr("everything held"));
        return;
    }
    const double span = double(t->to() - t->from());
    const double end = double(t->to()) - double(t->origin());
    const double resolution = std::max(1.0, span / 1000.0);
    m_windowLabel->setText((t->showingAll() ? tr("everything held: ") : QString()) +
                           tr("%1 … %2 (%3)%4")
                               .arg(formatTime(double(t->from()) - double(t->origin()), resolution, end),
                                    formatTime(end, resolution, end), formatDuration(span),
                                    t->wantsEvents() ? tr(" — single events") : QString()));
}

void MainWindow::updateRankScroll()
{
    const TimelineModel *t = m_viewer->timeline();
    const int selected = t->selectedRanks(), count = t->rankCount();
    const QSignalBlocker block(m_rankScroll);
    m_rankScroll->setRange(0, std::max(0, selected - count));
    m_rankScroll->setPageStep(std::max(1, count));
    m_rankScroll->setValue(t->rankFirst());
    m_rankScroll->setVisible(selected > count);
    if (selected <= 0) {
        m_rankLabel->clear();
        return;
    }
    const int first = t->rankAtPosition(t->rankFirst()), last = t->rankAtPosition(t->rankFirst() + count - 1);
    m_rankLabel->setText(count == selected && t->rankFilter().isEmpty()
                             ? tr("all %1 ranks").arg(t->totalRanks())
                             : tr("showing %1 of %2 selected (%3–%4), %5 in the job")
                                   .arg(count)
                                   .arg(selected)
                                   .arg(first)
                                   .arg(last)
                                   .arg(t->totalRanks()));
}

void MainWindow::filterProfile()
{
    const ProfileModel *profile = m_viewer->profile();
    const QString text = m_findFunction->text();
    int shown = 0;
    for (int row = 0; row < profile->rowCount(); row++) {
        const bool match = profile->matches(row, text);
        m_profileView->setRowHidden(row, !match);
        shown += match;
    }
    if (text.trimmed().isEmpty())
        m_findCount->clear();
    else
        m_findCount->setText(shown ? tr("%1 of %2 functions").arg(shown).arg(profile->rowCount())
                                   : tr("no function matches"));
}

void MainWindow::highlightProfileRow(int row)
{
    m_timelineView->setHighlight(m_viewer->profile()->regionAt(row));
    m_profileView->selectRow(row);
    m_profileView->scrollTo(m_viewer->profile()->index(row, ProfileModel::Region));
}

void MainWindow::updateLegend()
{
    auto swatch = [](const QColor &colour, const QString &name) {
        return QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2")
            .arg(colour.name(), name.toHtmlEscaped());
    };
    QStringList items;
    if (m_timelineView->colourByFunction()) {
        // The functions of the visible window, largest exclusive time first (the profile's order).
        QStringList names;
        for (const auto &entry : m_viewer->profile()->entries())
            names << entry.name;
        for (const auto &entry : m_viewer->timeline()->legend())
            if (!entry.name.isEmpty() && !names.contains(entry.name))
                names << entry.name;
        const int shown = std::min<int>(int(names.size()), 16);
        for (int i = 0; i < shown; i++)
            items << swatch(TimelineView::functionColor(names[i]), names[i]);
        if (names.size() > shown)
            items << tr("… %1 more (hover for names)").arg(names.size() - shown);
    } else {
        for (const char *role : {"user", "p2p", "collective", "mpi_other", "phase"})
            items << swatch(TimelineView::roleColor(QLatin1String(role)), QLatin1String(role));
    }
    items << tr("▨ reduced");
    const auto veil = [this](int kind) {
        const QColor c = TimelineView::periodColor(m_timelineView->palette(), kind);
        return QStringLiteral("rgba(%1,%2,%3,%4)")
            .arg(c.red())
            .arg(c.green())
            .arg(c.blue())
            .arg(c.alphaF() * 2);
    };
    items << QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2")
                 .arg(veil(TimelineModel::Period::AppPaused), tr("application paused"));
    items << QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2")
                 .arg(veil(TimelineModel::Period::NotRecording), tr("not recording"));
    m_legend->setText(
        items.join(QStringLiteral(" &nbsp; ")) +
        tr("<br><span style='color:#666'>wheel: zoom · Ctrl + wheel: zoom ranks · Shift + wheel: "
           "scroll ranks · drag: pan · right-drag: zoom to range · double-click / Home: show "
           "all · Alt + ←/→: back / forward</span>"));
}
