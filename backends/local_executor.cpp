#include "backends/local_executor.h"

#include "core/protocol.h"

#include <algorithm>
#include <stdexcept>

namespace hone::backends {

LocalExecutor::LocalExecutor(LocalExecutorConfig config)
    : m_config(std::move(config))
{
}

LocalExecutor::~LocalExecutor()
{
    cancelAll();
}

WorkerCommand LocalExecutor::command() const
{
    WorkerCommand cmd;
    cmd.argv = {m_config.workerPath, "--stdio"};
    if (!m_config.cacheDir.empty()) {
        cmd.argv.push_back("--cache-dir");
        cmd.argv.push_back(m_config.cacheDir.string());
    }
    return cmd;
}

nlohmann::json LocalExecutor::hello()
{
    if (!m_hello.is_null())
        return m_hello;
    nlohmann::json req = core::protocol::makeMessage("hello");
    req["id"] = "hello";
    WorkerLimits limits = m_config.limits;
    limits.stageSeconds = 30;
    nlohmann::json reply = runWorker(command(), req, limits);
    if (reply.value("type", std::string()) != "hello") {
        std::string why = reply.contains("failure") ? reply["failure"].value("message", std::string()) : reply.dump();
        throw std::runtime_error("cannot start the local worker '" + m_config.workerPath + "': " + why
            + "; build it (cmake --build) or pass --worker PATH");
    }
    m_hello = reply;
    return m_hello;
}

nlohmann::json LocalExecutor::ceilings(const std::string& kind)
{
    nlohmann::json req = core::protocol::makeMessage("calibrate");
    req["id"] = "calibrate";
    req["kind"] = kind;
    WorkerLimits limits = m_config.limits;
    limits.stageSeconds = 300;
    // Calibration streams buffers far larger than the last-level cache; candidates' limit is
    // not meant for it.
    limits.memoryMiB = std::max(limits.memoryMiB, 4096.0);
    nlohmann::json reply = runWorker(command(), req, limits);
    if (reply.value("type", std::string()) != "ceilings") {
        const std::string why = reply.contains("failure") ? reply["failure"].value("message", reply.dump()) : reply.dump();
        throw std::runtime_error("calibrating the " + kind + " device failed: " + why);
    }
    return reply;
}

void LocalExecutor::reapFinished()
{
    for (auto it = m_jobs.begin(); it != m_jobs.end();) {
        if (it->finished->load()) {
            it->thread.join();
            it = m_jobs.erase(it);
        } else {
            ++it;
        }
    }
}

void LocalExecutor::submit(core::EvalJob job)
{
    std::lock_guard lock(m_mutex);
    reapFinished();
    auto finished = std::make_shared<std::atomic<bool>>(false);
    std::thread t([this, finished, job = std::move(job)] {
        struct Done {
            std::atomic<bool>& flag;
            ~Done() { flag = true; }
        } done {*finished};
        auto start = std::chrono::steady_clock::now();
        WorkerLimits limits = m_config.limits;
        if (auto l = job.request.find("limits"); l != job.request.end() && l->is_object()) {
            limits.compileSeconds = l->value("compile_s", limits.compileSeconds);
            limits.stageSeconds = l->value("run_s", limits.stageSeconds);
        }
        nlohmann::json result = runWorker(command(), job.request, limits, &m_cancel);
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (m_cancel)
            return;
        std::lock_guard inner(m_mutex);
        m_done.push_back(core::EvalDone {job.id, std::move(result), wall});
        m_cv.notify_all();
    });
    m_jobs.push_back(Job {std::move(t), std::move(finished)});
}

std::optional<core::EvalDone> LocalExecutor::next(std::chrono::milliseconds timeout)
{
    std::unique_lock lock(m_mutex);
    if (!m_cv.wait_for(lock, timeout, [&] { return !m_done.empty(); }))
        return std::nullopt;
    core::EvalDone d = std::move(m_done.front());
    m_done.pop_front();
    return d;
}

void LocalExecutor::cancelAll()
{
    m_cancel = true;
    std::vector<Job> jobs;
    {
        std::lock_guard lock(m_mutex);
        jobs.swap(m_jobs);
    }
    for (auto& j : jobs)
        if (j.thread.joinable())
            j.thread.join();
    std::lock_guard lock(m_mutex);
    m_done.clear();
    m_cancel = false;
}

} // namespace hone::backends
