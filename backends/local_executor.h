#pragma once

#include "backends/worker_process.h"
#include "core/executor.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace hone::backends {

struct LocalExecutorConfig {
    std::string workerPath = "hone-worker";
    std::filesystem::path cacheDir;  // empty: the worker's default
    int parallel = 1;               // evaluations at once
    WorkerLimits limits;
};

/// A local process pool: every evaluation runs in a fresh `hone-worker --stdio` process, so a
/// candidate that crashes, hangs or eats memory costs one candidate, never the session.
class LocalExecutor final : public core::Executor {
public:
    explicit LocalExecutor(LocalExecutorConfig config);
    ~LocalExecutor() override;

    nlohmann::json hello() override;
    nlohmann::json ceilings(const std::string& kind) override;
    int slotCount() const override { return m_config.parallel; }
    void submit(core::EvalJob job) override;
    std::optional<core::EvalDone> next(std::chrono::milliseconds timeout) override;
    void cancelAll() override;

    /// The command line that starts one worker.
    WorkerCommand command() const;

private:
    LocalExecutorConfig m_config;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<core::EvalDone> m_done;   // guarded by m_mutex
    struct Job {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> finished;
    };
    void reapFinished();                 // joins the threads of finished jobs; m_mutex held
    std::vector<Job> m_jobs;             // guarded by m_mutex
    std::atomic<bool> m_cancel {false};
    nlohmann::json m_hello;
};

} // namespace hone::backends
