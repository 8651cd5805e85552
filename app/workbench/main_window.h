#pragma once

#include "app/workbench/engine_runner.h"
#include "views/session_data.h"

#include <QMainWindow>

#include <memory>

class QDockWidget;
class QLabel;

namespace hone::knowledge {
class KnowledgeBase;
}
namespace hone::views {
class Inspector;
class KbCurator;
class KnowledgeHits;
class NodeTable;
class OccupancyPlot;
class ProgressPlot;
class ReviewPanel;
class RooflinePlot;
class TreeLegend;
class TreeView;
}

namespace hone::app {

class KbAccess;
class Launcher;

struct WorkbenchConfig {
    RunnerConfig runner;
    QString exportRoot;     // approved bundles go here (empty: ~/hone-exports)
    QString author;         // who steers and reviews (empty: $USER)
    bool restoreLayout = true;
};

/// The workbench window: the live tree (the central widget, with its legend), and around it as
/// docks the launcher and progress (left), the node table, roofline and occupancy (below the
/// tree), the inspector, review, knowledge and curator (right). It fits a 1366x768 screen; the
/// layout is saved on close and restored on start (QSettings). It owns the engine bridge and turns the panels' NodeActions into steering.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(WorkbenchConfig config, QWidget* parent = nullptr);
    ~MainWindow() override;

    views::SessionData* sessionData() { return &m_data; }
    views::Selection* selection() { return &m_selection; }
    views::NodeActions* actions() { return &m_actions; }
    EngineRunner* runner() { return m_runner.get(); }
    Launcher* launcher() const { return m_launcher; }
    views::TreeView* treeView() const { return m_tree; }
    views::TreeLegend* treeLegend() const { return m_legend; }
    views::NodeTable* nodeTable() const { return m_table; }
    views::Inspector* inspector() const { return m_inspector; }
    views::RooflinePlot* roofline() const { return m_roofline; }
    views::OccupancyPlot* occupancy() const { return m_occupancy; }
    views::ProgressPlot* progress() const { return m_progress; }
    views::KnowledgeHits* knowledgeHits() const { return m_hits; }
    views::KbCurator* curator() const { return m_curator; }
    views::ReviewPanel* review() const { return m_review; }
    /// The dock that holds `widget` (for screenshots and raising).
    QDockWidget* dockOf(QWidget* widget) const;
    QList<QDockWidget*> docks() const;

    /// Starts the launcher's run; false (with the reason in the launcher) when it cannot.
    bool startSearch();
    /// The runner's configuration with the launcher's "Run on" target.
    RunnerConfig runnerConfig() const;
    /// Opens a stored session read-only.
    bool openSession(qint64 session);
    bool resumeSession(qint64 session, int extraBudget);

    /// The longest gap between two event-loop turns seen so far, in milliseconds (the
    /// responsiveness probe: a timer that should fire every 10 ms measures how late it is).
    double longestStallMs() const { return m_longestStallMs; }
    void resetStallProbe() { m_longestStallMs = 0; }

    /// How "Add hint…" and "Edit as new child…" ask the engineer; tests replace the dialogs.
    using EditProvider = std::function<std::optional<core::SteeringCommand>(qint64 node)>;
    void setEditProvider(EditProvider provider) { m_editProvider = std::move(provider); }

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    QDockWidget* addPanel(QWidget* widget, const QString& title, const QString& name, Qt::DockWidgetArea area);
    void wireActions();
    /// Sizes the dock columns and the bottom row for the window's size (start, "Reset layout").
    void arrangeDocks();
    void refreshSessions();
    void updateStatus();
    void steerOrQueue(core::SteeringCommand command, const QString& what);
    std::optional<core::SteeringCommand> editDialog(qint64 node);

    WorkbenchConfig m_config;
    std::unique_ptr<core::Store> m_store; // the GUI thread's own connection
    std::unique_ptr<knowledge::KnowledgeBase> m_kb;
    std::unique_ptr<KbAccess> m_kbAccess; // the knowledge panels' view of m_kb
    views::SessionData m_data;
    views::Selection m_selection;
    views::NodeActions m_actions;
    std::unique_ptr<EngineRunner> m_runner;
    Launcher* m_launcher = nullptr;
    views::TreeView* m_tree = nullptr;
    views::TreeLegend* m_legend = nullptr;
    views::NodeTable* m_table = nullptr;
    views::Inspector* m_inspector = nullptr;
    views::RooflinePlot* m_roofline = nullptr;
    views::OccupancyPlot* m_occupancy = nullptr;
    views::ProgressPlot* m_progress = nullptr;
    views::KnowledgeHits* m_hits = nullptr;
    views::KbCurator* m_curator = nullptr;
    views::ReviewPanel* m_review = nullptr;
    QLabel* m_status = nullptr;
    EditProvider m_editProvider;
    double m_longestStallMs = 0;
    qint64 m_lastTick = 0;
};

} // namespace hone::app
