#include "app/workbench/main_window.h"
#include "app/session.h"

#include "app/workbench/edit_dialog.h"
#include "app/workbench/kb_access.h"
#include "app/workbench/launcher.h"
#include "core/store.h"
#include "knowledge/corpus.h"
#include "knowledge/knowledge_base.h"
#include "views/inspector.h"
#include "views/kb_curator.h"
#include "views/knowledge_hits.h"
#include "views/node_table.h"
#include "views/occupancy_plot.h"
#include "views/progress_plot.h"
#include "views/review_panel.h"
#include "views/roofline_plot.h"
#include "views/tree_legend.h"
#include "views/tree_view.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QScreen>
#include <QScrollArea>
#include <QVBoxLayout>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>

#include <cstdlib>

namespace hone::app {

namespace {

QString defaultAuthor()
{
    const char* user = std::getenv("USER");
    return user && *user ? QString::fromLocal8Bit(user) : QStringLiteral("engineer");
}

} // namespace

MainWindow::MainWindow(WorkbenchConfig config, QWidget* parent)
    : QMainWindow(parent)
    , m_config(std::move(config))
{
    if (m_config.author.isEmpty())
        m_config.author = defaultAuthor();
    if (m_config.exportRoot.isEmpty())
        m_config.exportRoot = QDir::home().filePath("hone-exports");
    setWindowTitle(tr("Hone workbench"));
    m_store = std::make_unique<core::Store>(m_config.runner.store);
    try {
        // The runner writes skills and hits where the panels read: one knowledge base for both
        // ($HONE_KB, else the store's file: app::knowledgeBasePath).
        if (m_config.runner.knowledgeBase.empty())
            m_config.runner.knowledgeBase = knowledgeBasePath(m_config.runner.store.string());
        m_kb = std::make_unique<knowledge::KnowledgeBase>(m_config.runner.knowledgeBase);
    } catch (const std::exception& e) {
        m_kb.reset(); // the knowledge panels say why they are empty
        statusBar()->showMessage(tr("no knowledge base: %1").arg(QString::fromUtf8(e.what())), 10000);
    }
    m_data.setStore(m_store.get());
    m_runner = std::make_unique<EngineRunner>(&m_data);

    m_tree = new views::TreeView(&m_data, &m_selection, &m_actions);
    m_tree->setObjectName("tree");
    m_legend = new views::TreeLegend;
    m_legend->setObjectName("treeLegend");
    connect(m_legend, &views::TreeLegend::labelChanged, m_tree, &views::TreeView::setLabel);
    connect(m_tree, &views::TreeView::scaleChanged, m_legend, &views::TreeLegend::setScale);
    // The tree is the heart of the workbench: the central widget, its legend in a strip below it
    // (never over a node); every panel is a dock around it.
    auto* centre = new QWidget(this);
    centre->setObjectName("centre");
    auto* centreLayout = new QVBoxLayout(centre);
    centreLayout->setContentsMargins(0, 0, 0, 0);
    centreLayout->setSpacing(0);
    centreLayout->addWidget(m_tree, 1);
    centreLayout->addWidget(m_legend);
    setCentralWidget(centre);
    m_launcher = new Launcher(this);
    m_launcher->setTargetsFile(QString::fromStdString(m_config.runner.targetsFile));
    if (!m_config.runner.on.empty())
        m_launcher->setRunOn(QString::fromStdString(m_config.runner.on));
    m_table = new views::NodeTable(&m_data, &m_selection, &m_actions, this);
    m_inspector = new views::Inspector(&m_data, &m_selection, &m_actions, this);
    m_roofline = new views::RooflinePlot(&m_data, &m_selection, this);
    m_occupancy = new views::OccupancyPlot(&m_data, &m_selection, this);
    m_progress = new views::ProgressPlot(&m_data, this);
    if (m_kb)
        m_kbAccess = std::make_unique<KbAccess>(*m_kb);
    m_hits = new views::KnowledgeHits(&m_data, &m_selection, m_kbAccess.get(), this);
    m_curator = new views::KbCurator(m_kbAccess.get(), this);
    m_curator->setCorpusDir(QString::fromStdString(knowledge::bundledCorpusDir().string()));
    m_review = new views::ReviewPanel(&m_data, &m_selection, &m_actions, this);
    m_review->setStore(m_store.get());
    m_review->setExportRoot(m_config.exportRoot);

    // Left and right columns run the full height (the inspector and the review get room for
    // their evidence); the bottom row sits under the tree only.
    setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    setDockNestingEnabled(true);
    auto* launcherDock = addPanel(m_launcher, tr("Launcher"), "launcher", Qt::LeftDockWidgetArea);
    auto* progressDock = addPanel(m_progress, tr("Progress"), "progress", Qt::LeftDockWidgetArea);
    auto* tableDock = addPanel(m_table, tr("Nodes"), "nodes", Qt::BottomDockWidgetArea);
    auto* rooflineDock = addPanel(m_roofline, tr("Roofline"), "roofline", Qt::BottomDockWidgetArea);
    auto* occupancyDock = addPanel(m_occupancy, tr("Occupancy"), "occupancy", Qt::BottomDockWidgetArea);
    auto* inspectorDock = addPanel(m_inspector, tr("Candidate"), "inspector", Qt::RightDockWidgetArea);
    auto* reviewDock = addPanel(m_review, tr("Review"), "review", Qt::RightDockWidgetArea);
    auto* hitsDock = addPanel(m_hits, tr("Knowledge"), "knowledge", Qt::RightDockWidgetArea);
    auto* curatorDock = addPanel(m_curator, tr("Curator"), "curator", Qt::RightDockWidgetArea);
    splitDockWidget(launcherDock, progressDock, Qt::Vertical);
    tabifyDockWidget(tableDock, rooflineDock);
    tabifyDockWidget(rooflineDock, occupancyDock);
    tabifyDockWidget(inspectorDock, reviewDock);
    tabifyDockWidget(reviewDock, hitsDock);
    tabifyDockWidget(hitsDock, curatorDock);
    inspectorDock->raise();
    tableDock->raise();
    // The window fits the screen it opens on (a 1366x768 laptop included); panels shrink to fit.
    QSize size(1600, 1000);
    if (const QScreen* screen = QGuiApplication::primaryScreen())
        size = size.boundedTo(screen->availableGeometry().size());
    resize(size);
    arrangeDocks();

    auto* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : docks())
        view->addAction(d->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("Fit tree"), QKeySequence(Qt::Key_F), m_tree, &views::TreeView::fitAll);
    view->addAction(tr("Reset layout"), this, [this] {
        for (QDockWidget* d : docks()) {
            d->setFloating(false);
            d->show();
        }
        arrangeDocks();
    });

    m_status = new QLabel(this);
    statusBar()->addPermanentWidget(m_status);
    if (m_curator->corpusOffered())
        statusBar()->showMessage(
            tr("The knowledge base is empty: Curator → \"Import the bundled corpus\" (or `hone kb init`)"), 20000);

    connect(m_launcher, &Launcher::startRequested, this, [this] { startSearch(); });
    connect(m_launcher, &Launcher::pauseRequested, m_runner.get(), &EngineRunner::pause);
    connect(m_launcher, &Launcher::resumeRequested, m_runner.get(), &EngineRunner::resumeSearch);
    connect(m_launcher, &Launcher::stopRequested, m_runner.get(), &EngineRunner::stop);
    connect(m_launcher, &Launcher::openSessionRequested, this, [this](qint64 s) { openSession(s); });
    connect(m_launcher, &Launcher::resumeSessionRequested, this,
        [this](qint64 s, int extra) { resumeSession(s, extra); });
    connect(m_launcher, &Launcher::refreshRequested, this, &MainWindow::refreshSessions);

    connect(m_runner.get(), &EngineRunner::started, this, [this](qint64 session) {
        m_launcher->setRunning(true, false);
        m_launcher->setMessage(tr("session %1 running").arg(session));
        refreshSessions();
    });
    connect(m_runner.get(), &EngineRunner::pausedChanged, this,
        [this](bool paused) { m_launcher->setRunning(m_runner->running(), paused); });
    connect(m_runner.get(), &EngineRunner::finished, this, [this](const QString& reason, const QString& error) {
        m_launcher->setRunning(false, false);
        if (!error.isEmpty())
            m_launcher->setMessage(tr("session %1 failed: %2").arg(m_data.sessionId()).arg(error), true);
        else
            m_launcher->setMessage(tr("session %1 finished: %2").arg(m_data.sessionId()).arg(reason));
        refreshSessions();
        updateStatus();
    });
    connect(m_runner.get(), &EngineRunner::steeringApplied, this,
        [this](const QString& command, qint64 node, const QString& outcome) {
            statusBar()->showMessage(tr("%1 on node %2: %3").arg(command).arg(node).arg(outcome), 8000);
        });
    connect(m_review, &views::ReviewPanel::approved, this, [this](qint64 node, const QString& dir) {
        statusBar()->showMessage(tr("node %1 approved; bundle in %2").arg(node).arg(dir), 15000);
    });
    connect(&m_data, &views::SessionData::nodesAdded, this, &MainWindow::updateStatus);
    connect(&m_data, &views::SessionData::progressAppended, this, &MainWindow::updateStatus);
    connect(&m_data, &views::SessionData::sessionReset, this, &MainWindow::updateStatus);
    wireActions();

    // Responsiveness probe: a 10 ms timer; how late it fires is how long the loop was busy.
    auto* probe = new QTimer(this);
    probe->setInterval(10);
    auto* clock = new QElapsedTimer;
    clock->start();
    connect(probe, &QTimer::timeout, this, [this, clock] {
        const qint64 now = clock->nsecsElapsed();
        if (m_lastTick > 0)
            m_longestStallMs = std::max(m_longestStallMs, (now - m_lastTick) / 1e6 - 10.0);
        m_lastTick = now;
    });
    connect(this, &QObject::destroyed, this, [clock] { delete clock; });
    probe->start();

    if (m_config.restoreLayout) {
        QSettings settings("Hone", "workbench");
        restoreGeometry(settings.value("geometry").toByteArray());
        restoreState(settings.value("state").toByteArray());
    }
    refreshSessions();
    updateStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::arrangeDocks()
{
    // Side columns about a quarter and a third of the width, the bottom row a third of the
    // height: the tree keeps the largest share at any window size.
    const int w = width(), h = height();
    QDockWidget* launcherDock = dockOf(m_launcher);
    QDockWidget* inspectorDock = dockOf(m_inspector);
    QDockWidget* tableDock = dockOf(m_table);
    QDockWidget* progressDock = dockOf(m_progress);
    resizeDocks({launcherDock, inspectorDock}, {std::clamp(w * 24 / 100, 260, 440), std::clamp(w * 33 / 100, 380, 640)},
        Qt::Horizontal);
    resizeDocks({tableDock}, {std::clamp(h * 30 / 100, 170, 340)}, Qt::Vertical);
    resizeDocks({launcherDock, progressDock}, {h * 60 / 100, h * 40 / 100}, Qt::Vertical);
}

QDockWidget* MainWindow::addPanel(QWidget* widget, const QString& title, const QString& name, Qt::DockWidgetArea area)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name); // saveState()/restoreState() key
    widget->setObjectName(name + "-panel");
    // A panel squeezed below its own minimum scrolls instead of pushing the window beyond a
    // small screen (a 1366x768 laptop): the sum of every panel's minimum is far wider.
    auto* scroll = new QScrollArea;
    scroll->setObjectName(name + "-scroll");
    scroll->setWidget(widget);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    dock->setWidget(scroll);
    addDockWidget(area, dock);
    return dock;
}

QDockWidget* MainWindow::dockOf(QWidget* widget) const
{
    for (QDockWidget* d : docks()) {
        auto* scroll = qobject_cast<QScrollArea*>(d->widget());
        if (d->widget() == widget || (scroll && scroll->widget() == widget))
            return d;
    }
    return nullptr;
}

QList<QDockWidget*> MainWindow::docks() const { return findChildren<QDockWidget*>(); }

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings settings("Hone", "workbench");
    settings.setValue("geometry", saveGeometry());
    settings.setValue("state", saveState());
    m_runner->stop();
    m_runner->wait(60000);
    event->accept();
}

RunnerConfig MainWindow::runnerConfig() const
{
    RunnerConfig c = m_config.runner;
    c.on = m_launcher->runOn().toStdString(); // the launcher's "Run on"
    return c;
}

bool MainWindow::startSearch()
{
    try {
        const core::RunOptions options = m_launcher->options();
        m_selection.setCurrent(-1);
        m_runner->start(options, runnerConfig());
        m_launcher->setRunning(true, false);
        m_launcher->setMessage(tr("starting %1 ...").arg(QString::fromStdString(options.problemDir.string())));
        return true;
    } catch (const std::exception& e) {
        m_launcher->setMessage(QString::fromUtf8(e.what()), true);
        return false;
    }
}

bool MainWindow::openSession(qint64 session)
{
    if (m_runner->running()) {
        m_launcher->setMessage(tr("stop the running search before opening another session"), true);
        return false;
    }
    try {
        m_selection.setCurrent(-1);
        m_data.loadFromStore(*m_store, session);
        m_launcher->setMessage(tr("session %1 (%2, %3): %4 nodes")
                                   .arg(session)
                                   .arg(m_data.problemName(), m_data.status())
                                   .arg(m_data.size()));
        if (m_data.bestNode() >= 0)
            m_selection.setCurrent(m_data.bestNode());
        return true;
    } catch (const std::exception& e) {
        m_launcher->setMessage(QString::fromUtf8(e.what()), true);
        return false;
    }
}

bool MainWindow::resumeSession(qint64 session, int extraBudget)
{
    try {
        m_runner->resume(session, extraBudget, runnerConfig());
        m_launcher->setRunning(true, false);
        return true;
    } catch (const std::exception& e) {
        m_launcher->setMessage(QString::fromUtf8(e.what()), true);
        return false;
    }
}

void MainWindow::refreshSessions()
{
    try {
        auto sessions = m_store->sessions();
        std::map<int64_t, std::pair<int, double>> stats;
        // Only the newest sessions carry counts: reading every evaluation of a large store is slow.
        int counted = 0;
        for (auto it = sessions.rbegin(); it != sessions.rend() && counted < 50; ++it, ++counted) {
            int n = 0;
            double best = 0;
            for (const auto& e : m_store->evaluations(it->id)) {
                ++n;
                if (e.status == "ok")
                    best = std::max(best, e.speedup);
            }
            stats[it->id] = {n, best};
        }
        m_launcher->showSessions(sessions, stats);
    } catch (const std::exception& e) {
        m_launcher->setMessage(QString::fromUtf8(e.what()), true);
    }
}

void MainWindow::updateStatus()
{
    int evaluated = 0;
    for (const auto& n : m_data.nodes())
        evaluated += n.evaluated() && n.id != 0 ? 1 : 0;
    QString text = m_data.sessionId() > 0 ? tr("session %1 · %2").arg(m_data.sessionId()).arg(m_data.status())
                                         : tr("no session");
    text += tr(" · %1 nodes · %2 evaluated").arg(std::max(0, m_data.size() - 1)).arg(evaluated);
    if (m_data.bestNode() >= 0)
        text += tr(" · best %1x (node %2)")
                    .arg(m_data.node(m_data.bestNode())->speedup, 0, 'f', 2)
                    .arg(m_data.bestNode());
    if (!m_data.progress().empty() && m_data.progress().back().evaluationsPerMinute > 0)
        text += tr(" · %1 eval/min").arg(m_data.progress().back().evaluationsPerMinute, 0, 'f', 1);
    m_status->setText(text);
}

void MainWindow::steerOrQueue(core::SteeringCommand command, const QString& what)
{
    command.author = m_config.author.toStdString();
    if (m_runner->steer(command)) {
        statusBar()->showMessage(tr("%1 sent").arg(what), 5000);
        return;
    }
    if (command.kind == core::SteeringCommand::Kind::Hint && m_data.sessionId() > 0) {
        // No search is running: the hint is logged for the session and applied when it resumes.
        core::SteeringRecord rec;
        rec.nodeId = command.node;
        rec.command = "hint";
        rec.payload = {{"text", command.text}};
        rec.author = command.author;
        rec.outcome = "queued";
        m_store->insertSteering(m_data.sessionId(), rec);
        if (const views::NodeInfo* n = m_data.node(command.node)) {
            views::NodeInfo copy = *n;
            copy.hints << QString::fromStdString(command.text);
            m_data.apply({{copy}, {}});
        }
        statusBar()->showMessage(tr("%1 queued: session %2 applies it when resumed").arg(what).arg(m_data.sessionId()), 8000);
        return;
    }
    m_launcher->setMessage(
        tr("%1: no search is running; resume the session (Launcher → Resume) to steer it").arg(what), true);
}

std::optional<core::SteeringCommand> MainWindow::editDialog(qint64 node)
{
    const views::NodeInfo* n = m_data.node(node);
    if (!n || n->sourceHash.isEmpty())
        return std::nullopt;
    EditDialog dialog(node, n->sourceName, m_data.sourceText(n->sourceHash), n->knobs, n->flags, this);
    if (dialog.exec() != QDialog::Accepted)
        return std::nullopt;
    return dialog.command(m_config.author);
}

void MainWindow::wireActions()
{
    using Kind = core::SteeringCommand::Kind;
    connect(&m_actions, &views::NodeActions::pruneRequested, this, [this](qint64 node) {
        core::SteeringCommand c;
        c.kind = Kind::Prune;
        c.node = node;
        steerOrQueue(c, tr("prune node %1").arg(node));
    });
    connect(&m_actions, &views::NodeActions::boostRequested, this, [this](qint64 node) {
        core::SteeringCommand c;
        c.kind = Kind::Boost;
        c.node = node;
        steerOrQueue(c, tr("boost node %1").arg(node));
    });
    connect(&m_actions, &views::NodeActions::hintRequested, this, [this](qint64 node, const QString& given) {
        QString text = given;
        if (text.isEmpty()) {
            bool ok = false;
            text = QInputDialog::getText(this, tr("Hint for node %1").arg(node),
                tr("A hint for this node's subtree (shown to the synthesizer):"), QLineEdit::Normal, {}, &ok);
            if (!ok || text.trimmed().isEmpty())
                return;
        }
        core::SteeringCommand c;
        c.kind = Kind::Hint;
        c.node = node;
        c.text = text.trimmed().toStdString();
        steerOrQueue(c, tr("hint on node %1").arg(node));
    });
    connect(&m_actions, &views::NodeActions::editRequested, this, [this](qint64 node) {
        auto command = m_editProvider ? m_editProvider(node) : editDialog(node);
        if (command)
            steerOrQueue(*command, tr("edited child of node %1").arg(node));
    });
    // The inspector and the review panel act on these themselves; the window brings them forward.
    connect(&m_actions, &views::NodeActions::compareRequested, this, [this] {
        if (auto* d = dockOf(m_inspector)) {
            d->show();
            d->raise();
        }
    });
    connect(&m_actions, &views::NodeActions::reviewRequested, this, [this] {
        if (auto* d = dockOf(m_review)) {
            d->show();
            d->raise();
        }
    });
    connect(m_curator, &views::KbCurator::knowledgeChanged, m_hits, &views::KnowledgeHits::refresh);
    // A run's write-back (hit outcomes, a skill) changes the base behind the panels' backs.
    connect(m_runner.get(), &EngineRunner::knowledgeChanged, this, [this] {
        m_curator->reload();
        m_hits->refresh();
    });
}

} // namespace hone::app
