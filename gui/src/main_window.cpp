#include "main_window.h"

#include "analyses_panel.h"
#include "connect_dialog.h"
#include "format.h"
#include "snapshot_dialog.h"
#include "timeline_view.h"

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
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

static const char *const classNames[4] = {"p2p", "collective", "mpi-other", "user"};

MainWindow::MainWindow(Viewer *viewer, QWidget *parent) : QMainWindow(parent), m_viewer(viewer)
{
    setWindowTitle(tr("otfx-gui"));
    resize(1400, 860);

    // ---- centre: banner, timeline, tabs ----
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
    auto *showAll = new QPushButton(tr("Show all"));
    auto *zoomIn = new QPushButton(tr("Zoom in"));
    auto *zoomOut = new QPushButton(tr("Zoom out"));
    auto *clearHighlight = new QPushButton(tr("Clear highlight"));
    m_windowLabel = new QLabel;
    timelineBar->addWidget(new QLabel(tr("<b>Timeline</b>")));
    timelineBar->addWidget(m_windowLabel, 1);
    timelineBar->addWidget(m_follow);
    timelineBar->addWidget(zoomIn);
    timelineBar->addWidget(zoomOut);
    timelineBar->addWidget(showAll);
    timelineBar->addWidget(clearHighlight);

    auto *timelineBox = new QWidget;
    auto *timelineLayout = new QVBoxLayout(timelineBox);
    timelineLayout->setContentsMargins(0, 0, 0, 0);
    timelineLayout->addLayout(timelineBar);
    m_timelineView = new TimelineView(viewer->timeline());
    timelineLayout->addWidget(m_timelineView, 1);
    auto *legend = new QLabel;
    QString legendText;
    for (const char *role : {"user", "p2p", "collective", "mpi_other", "phase"})
        legendText += QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span> %2 &nbsp; ")
                          .arg(TimelineView::roleColor(QLatin1String(role)).name(), QLatin1String(role));
    legendText +=
        tr("▨ reduced · wheel: zoom · drag: pan · right-drag: zoom to range · double-click: show all");
    legend->setText(legendText);
    timelineLayout->addWidget(legend);

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
    tabs->addTab(m_profileView, tr("Profile (visible window)"));
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

    // ---- controls dock ----
    auto *dock = new QDockWidget(tr("Controls"));
    dock->setObjectName(QStringLiteral("controls"));
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    dock->setWidget(buildControls());
    addDockWidget(Qt::RightDockWidgetArea, dock);

    // ---- status bar ----
    m_connection = new QLabel;
    m_app = new QLabel;
    m_app->setObjectName(QStringLiteral("application"));
    m_recording = new QLabel;
    m_recording->setObjectName(QStringLiteral("recording"));
    m_rate = new QLabel;
    m_fill = new QProgressBar;
    m_fill->setRange(0, 1000);
    m_fill->setMaximumWidth(120);
    m_fill->setFormat(tr("buffers %p%"));
    m_buffers = new QLabel;
    m_reduced = new QLabel;
    m_elapsed = new QLabel;
    m_busy = new QProgressBar;
    m_busy->setRange(0, 0);
    m_busy->setMaximumWidth(80);
    m_busy->setToolTip(tr("A steering command is being carried out"));
    m_busy->hide();
    for (QWidget *w : std::initializer_list<QWidget *>{m_connection, m_app, m_recording, m_rate, m_fill,
                                                       m_buffers, m_reduced, m_elapsed})
        statusBar()->addWidget(w);
    m_message = new QLabel;
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
    job->addAction(tr("Save &snapshot…"), this, &MainWindow::openSnapshotDialog);
    job->addAction(tr("Save screens&hot…"), this, &MainWindow::saveScreenshotInteractive);
    job->addSeparator();
    job->addAction(tr("&Quit"), this, &QWidget::close);
    QMenu *view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("Show &all"), viewer->timeline(), &TimelineModel::showAll);
    view->addAction(tr("&Follow live"), this, [this] { m_follow->setChecked(!m_follow->isChecked()); });

    // ---- wiring ----
    connect(m_analyses, &AnalysesPanel::message, m_message, &QLabel::setText);
    TimelineModel *timeline = viewer->timeline();
    connect(m_reconnectButton, &QPushButton::clicked, m_viewer, &Viewer::reconnect);
    connect(m_follow, &QCheckBox::toggled, timeline, &TimelineModel::setFollowLive);
    connect(timeline, &TimelineModel::followLiveChanged, m_follow, &QCheckBox::setChecked);
    connect(showAll, &QPushButton::clicked, timeline, &TimelineModel::showAll);
    connect(zoomIn, &QPushButton::clicked, this, [timeline] { timeline->zoom(0.5, 0.5); });
    connect(zoomOut, &QPushButton::clicked, this, [timeline] { timeline->zoom(2.0, 0.5); });
    connect(clearHighlight, &QPushButton::clicked, this, [this] {
        m_timelineView->setHighlight(QString());
        m_profileView->clearSelection();
    });
    connect(m_profileView, &QTableView::clicked, this, [this](const QModelIndex &index) {
        m_timelineView->setHighlight(m_viewer->profile()->regionAt(index.row()));
    });
    connect(timeline, &TimelineModel::viewportChanged, this, &MainWindow::updateWindowLabel);
    connect(timeline, &TimelineModel::dataChanged, this, &MainWindow::updateWindowLabel);
    connect(viewer->client(), &ProtocolClient::stateChanged, this, &MainWindow::updateConnection);
    connect(viewer->client(), &ProtocolClient::connected, this, [this] { m_connectedFor.start(); });
    connect(viewer->status(), &StatusModel::updated, this, &MainWindow::updateStatus);
    connect(viewer, &Viewer::logged, m_log, &QPlainTextEdit::appendPlainText);
    connect(viewer, &Viewer::commandAnswered, this, &MainWindow::onAnswer);
    connect(viewer, &Viewer::commandSent, this, [this](quint32, const QString &line) {
        m_busy->show();
        m_message->setText(tr("%1 …").arg(line));
        m_message->setStyleSheet(QString());
    });
    connect(viewer, &Viewer::noticeReceived, this, [this](const Record &notice) {
        m_message->setText(tr("notice: %1").arg(notice.value("event")));
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
}

QWidget *MainWindow::buildControls()
{
    auto *panel = new QWidget;
    auto *layout = new QVBoxLayout(panel);
    auto button = [this](const QString &text, const QString &line, const QString &tip) {
        auto *b = new QPushButton(text);
        b->setToolTip(tip);
        connect(b, &QPushButton::clicked, this, [this, line] { m_viewer->command(line); });
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
    for (const char *s : {"ring", "time", "type", "depth", "stop"})
        m_reduction->addItem(QLatin1String(s));
    m_reduction->setToolTip(
        tr("What a full buffer does: ring drops the oldest detail, time thins the older part, "
           "type drops event classes, depth drops the deepest levels, stop stops storing"));
    auto *applyReduction = new QPushButton(tr("Set reduction"));
    connect(applyReduction, &QPushButton::clicked, this,
            [this] { m_viewer->command(QStringLiteral("reduction ") + m_reduction->currentText()); });
    auto *reset = new QPushButton(tr("Reset buffers…"));
    reset->setToolTip(tr("The event places drop every event they hold (definitions stay)"));
    connect(reset, &QPushButton::clicked, this, [this] {
        if (QMessageBox::question(this, tr("Reset buffers"), tr("Drop every event the job holds?")) ==
            QMessageBox::Yes) {
            m_viewer->command(QStringLiteral("reset"));
        }
    });
    buffersLayout->addWidget(m_reduction, 0, 0);
    buffersLayout->addWidget(applyReduction, 0, 1);
    buffersLayout->addWidget(reset, 1, 0, 1, 2);
    layout->addWidget(buffers);

    auto *classes = new QGroupBox(tr("Event classes recorded"));
    auto *classesLayout = new QGridLayout(classes);
    for (int i = 0; i < 4; i++) {
        m_classes[i] = new QCheckBox(QLatin1String(classNames[i]));
        m_classes[i]->setChecked(true);
        classesLayout->addWidget(m_classes[i], i / 2, i % 2);
    }
    auto *applyClassesButton = new QPushButton(tr("Apply"));
    applyClassesButton->setToolTip(tr("enable the checked classes, disable the others"));
    connect(applyClassesButton, &QPushButton::clicked, this, &MainWindow::applyClasses);
    classesLayout->addWidget(applyClassesButton, 2, 0, 1, 2);
    layout->addWidget(classes);

    auto *snapshot = new QGroupBox(tr("Snapshot"));
    auto *snapshotLayout = new QVBoxLayout(snapshot);
    auto *snapshotButton = new QPushButton(tr("Save snapshot…"));
    snapshotButton->setToolTip(tr("The job writes an OTF2 archive of its buffers or of the visible window"));
    connect(snapshotButton, &QPushButton::clicked, this, &MainWindow::openSnapshotDialog);
    snapshotLayout->addWidget(snapshotButton);
    layout->addWidget(snapshot);

    layout->addWidget(new QLabel(tr("Last answer of the job:")));
    m_answer = new QPlainTextEdit;
    m_answer->setReadOnly(true);
    m_answer->setMinimumWidth(300);
    m_answer->setPlaceholderText(tr("(no command sent yet)"));
    layout->addWidget(m_answer, 1);
    return panel;
}

void MainWindow::applyClasses()
{
    QStringList enable, disable;
    for (int i = 0; i < 4; i++)
        (m_classes[i]->isChecked() ? enable : disable) << QLatin1String(classNames[i]);
    for (const QStringList *list : {&enable, &disable})
        if (!list->isEmpty()) {
            m_viewer->command((list == &enable ? QStringLiteral("enable ") : QStringLiteral("disable ")) +
                              list->join(QLatin1Char(',')));
        }
}

void MainWindow::onAnswer(quint32, const QString &line, bool ok, const QString &answer)
{
    m_busy->setVisible(m_viewer->commandsInFlight() > 0);
    m_answer->setPlainText(QStringLiteral("%1 — %2\n%3").arg(line, ok ? tr("done") : tr("FAILED"), answer));
    m_message->setText(QStringLiteral("%1: %2").arg(line, ok ? tr("done") : tr("FAILED")));
    m_message->setStyleSheet(ok ? QString() : QStringLiteral("color: #b00020; font-weight: bold"));
}

void MainWindow::openConnectDialog()
{
    ConnectDialog dialog(m_viewer->session(), this);
    if (dialog.exec() == QDialog::Accepted)
        m_viewer->connectToSession(dialog.session());
}

void MainWindow::openSnapshotDialog()
{
    const SessionInfo &session = m_viewer->session();
    const QString dir = session.path.isEmpty() ? QDir::currentPath() : QFileInfo(session.path).absolutePath();
    TimelineModel *t = m_viewer->timeline();
    const QString window =
        t->hasViewport()
            ? QStringLiteral("%1 … %2").arg(formatDuration(double(t->from()) - double(t->origin())),
                                            formatDuration(double(t->to()) - double(t->origin())))
            : QString();
    SnapshotDialog dialog(dir, window, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    m_answer->setPlainText(tr("writing snapshot %1 …").arg(dialog.name()));
    m_viewer->snapshot(dialog.name(), dialog.visibleWindow(), dialog.overwrite());
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
    switch (state) {
    case ProtocolClient::Connected:
        m_connection->setText(tr("● job %1 (%2)").arg(client->welcome().value("job"), where));
        m_connection->setStyleSheet(QStringLiteral("color: #1b5e20"));
        m_banner->hide();
        m_reconnectButton->hide();
        setWindowTitle(tr("otfx-gui — job %1").arg(client->welcome().value("job")));
        break;
    case ProtocolClient::Connecting:
    case ProtocolClient::Authenticating:
        m_connection->setText(tr("connecting to %1 …").arg(where));
        m_connection->setStyleSheet(QString());
        break;
    case ProtocolClient::Disconnected: {
        m_connection->setText(tr("✖ not connected"));
        m_connection->setStyleSheet(QStringLiteral("color: #b00020; font-weight: bold"));
        const QString state = m_viewer->state().value(QStringLiteral("lost"));
        m_banner->setText(
            m_viewer->jobEnded() ? tr("The job ended. Reconnect to the next job of this session directory.")
            : client->port() ? tr("Connection lost: %1").arg(state.isEmpty() ? tr("not connected") : state)
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
    if (!status->valid()) {
        for (QLabel *l : {m_app, m_recording, m_rate, m_buffers, m_reduced, m_elapsed})
            l->clear();
        m_fill->setValue(0);
        return;
    }
    // After the connection ended these are what the job said last: marked so.
    const QString stale =
        m_viewer->client()->state() == ProtocolClient::Connected ? QString() : tr(" (last known)");
    m_app->setText(tr("application: <b>%1</b>%2").arg(status->appState(), stale));
    m_recording->setText(tr("recording: <b>%1</b>%2").arg(status->recording(), stale));
    m_recording->setStyleSheet(status->recording() == QLatin1String("on") ? QStringLiteral("color: #1b5e20")
                                                                          : QStringLiteral("color: #b00020"));
    const Record &summary = status->summary();
    m_rate->setText(tr("%1 events/s").arg(formatCount(status->eventsPerSecond())) +
                    (status->partial()
                         ? tr(" (%1 of %2 places answered)")
                               .arg(summary.value("places_answered"), summary.value("places_total"))
                         : QString()));
    m_fill->setValue(int(status->fill() * 1000.0));
    m_buffers->setText(status->bufferSummary());
    m_reduced->setText(
        tr("reduced %1 · dropped %2")
            .arg(formatCount(double(status->reducedEvents())), formatCount(double(status->droppedEvents()))));
    const quint64 started = m_viewer->session().startedNs;
    double elapsed = m_connectedFor.isValid() ? double(m_connectedFor.elapsed()) * 1e6 : 0.0;
    if (started && status->lastTime() > started)
        elapsed = double(status->lastTime() - started);
    m_elapsed->setText(tr("elapsed %1").arg(formatDuration(elapsed)));
}

void MainWindow::updateWindowLabel()
{
    const TimelineModel *t = m_viewer->timeline();
    if (!t->hasViewport()) {
        m_windowLabel->setText(tr("everything held"));
        return;
    }
    m_windowLabel->setText((t->showingAll() ? tr("everything held: ") : QString()) +
                           tr("%1 … %2 (%3)%4")
                               .arg(formatDuration(double(t->from()) - double(t->origin())),
                                    formatDuration(double(t->to()) - double(t->origin())),
                                    formatDuration(double(t->to() - t->from())),
                                    t->wantsEvents() ? tr(" — single events") : QString()));
}
