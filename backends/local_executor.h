#pragma once

#include "backends/job_threads.h"
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
    JobThreads m_jobs; // after m_config, which its runner reads
    nlohmann::json m_hello;
};

} // namespace hone::backends
