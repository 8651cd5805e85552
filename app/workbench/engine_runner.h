#pragma once

#include "core/engine.h"
#include "views/session_data.h"

#include <QObject>
#include <QTimer>

#include <atomic>
#include <functional>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace hone::app {

/// Where a workbench search runs: the store file, the worker binary, the cache, the target.
struct RunnerConfig {
    std::filesystem::path store;
    std::string workerPath;          // empty: next to this executable, else PATH
    std::filesystem::path cacheDir;  // empty: the worker's default
    bool skills = true;              // knob priors from the knowledge base, and a skill written back at the end
    std::filesystem::path knowledgeBase; // empty: app::knowledgeBasePath(store)
    std::string targetsFile;         // empty: backends::defaultTargetsPath()
    std::string on;                  // a target of the targets file; empty: this machine
};

/// The engine↔Qt bridge (DESIGN.md §2): the engine runs on its own thread with its own Store
/// and executor; its events become immutable NodeInfo values, queued under a mutex and handed to
/// SessionData in batches at most 20 times a second. Commands go the other way through the
/// engine's thread-safe steering queue. The GUI thread never touches engine state.
class EngineRunner : public QObject {
    Q_OBJECT
public:
    explicit EngineRunner(views::SessionData* data, QObject* parent = nullptr);
    ~EngineRunner() override; // stops the search and joins its thread

    bool running() const { return m_running; }
    bool paused() const { return m_paused; }

    /// Starts a new session (throws std::runtime_error with the reason when the problem cannot be
    /// loaded or a search is already running).
    void start(const core::RunOptions& options, const RunnerConfig& config);
    /// Continues a stored session with `extraBudget` more evaluations.
    void resume(qint64 session, int extraBudget, const RunnerConfig& config);

    /// Thread-safe; the command is applied before the engine's next proposal. Returns false when
    /// no search is running (nothing was sent).
    bool steer(core::SteeringCommand command);
    void pause();
    void resumeSearch();
    void stop();

    /// Blocks until the running search has ended (tests, shutdown); false on timeout.
    bool wait(int timeoutMs);

    /// How the batches went: the longest time one SessionData::apply took, and the batch count.
    double longestApplyMs() const { return m_longestApplyMs; }
    int batches() const { return m_batches; }

signals:
    void started(qint64 session);
    void finished(const QString& stopReason, const QString& error);
    void steeringApplied(const QString& command, qint64 node, const QString& outcome);
    void pausedChanged(bool paused);
    /// The run wrote to the knowledge base (hit outcomes, a skill): panels that show it re-read.
    void knowledgeChanged();

private:
    class Observer;
    struct Pending {
        std::vector<views::NodeInfo> nodes;
        std::vector<views::ProgressPoint> progress;
        std::vector<core::SteeringRecord> steering;
        qint64 session = 0;
        bool sessionAnnounced = false;
        std::optional<std::pair<std::string, std::string>> finished; // (stop reason, error)
        bool knowledgeChanged = false;
    };

    void launch(std::function<core::Report(core::Engine&, core::EngineObserver*)> body, const core::RunOptions& options,
        const RunnerConfig& config, std::vector<views::NodeInfo> known);
    void flush();
    void join();

    views::SessionData* m_data;
    QTimer m_flushTimer;
    std::thread m_thread;
    std::atomic<bool> m_running {false};
    bool m_paused = false;
    std::mutex m_mutex;
    Pending m_pending;                 // guarded by m_mutex
    core::Engine* m_engine = nullptr;  // guarded by m_mutex; set while the engine thread runs
    std::vector<core::SteeringCommand> m_early; // commands sent before the engine existed
    bool m_announced = false;
    double m_longestApplyMs = 0;
    int m_batches = 0;
};

} // namespace hone::app
