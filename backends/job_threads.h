#pragma once

#include "core/executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

/// The thread-per-evaluation pool behind the local and remote executors: `submit` runs a job on
/// its own thread, `next` hands out results in completion order, `cancelAll` stops waiting for
/// the jobs in flight (their runners see `cancelled()`) and drops their results.
namespace hone::backends {

class JobThreads {
public:
    /// Runs one job to its protocol `result`; called on the job's thread.
    using Runner = std::function<nlohmann::json(const core::EvalJob&)>;

    explicit JobThreads(Runner runner)
        : m_runner(std::move(runner))
    {
    }
    ~JobThreads() { cancelAll(); }
    JobThreads(const JobThreads&) = delete;
    JobThreads& operator=(const JobThreads&) = delete;

    void submit(core::EvalJob job);
    std::optional<core::EvalDone> next(std::chrono::milliseconds timeout);
    void cancelAll();

    /// Set while cancelAll runs: runners pass it on (runWorker kills the worker when it is set).
    const std::atomic<bool>* cancelled() const { return &m_cancel; }

private:
    struct Job {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> finished;
    };
    void reapFinished(); // joins the threads of finished jobs; m_mutex held

    Runner m_runner;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<core::EvalDone> m_done; // guarded by m_mutex
    std::vector<Job> m_jobs; // guarded by m_mutex
    std::atomic<bool> m_cancel { false };
};

} // namespace hone::backends
