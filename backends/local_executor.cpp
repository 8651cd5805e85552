#include "backends/local_executor.h"

#include "core/protocol.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace hone::backends {

LocalExecutor::LocalExecutor(LocalExecutorConfig config)
    : m_config(std::move(config))
    , m_jobs([this](const core::EvalJob& job) {
        WorkerLimits limits = m_config.limits;
        if (auto l = job.request.find("limits"); l != job.request.end() && l->is_object()) {
            limits.compileSeconds = l->value("compile_s", limits.compileSeconds);
            limits.stageSeconds = l->value("run_s", limits.stageSeconds);
            limits.totalSeconds = l->value("total_s", limits.totalSeconds);
        }
        // A worker that could not be started at all (exit 127 before any message: the binary
        // missing for a moment, or being rewritten by a rebuild) says nothing about the
        // candidate: tried again after a pause, three times, before the candidate is failed.
        nlohmann::json r;
        for (int attempt = 0;; ++attempt) {
            r = runWorker(command(), job.request, limits, m_jobs.cancelled());
            const auto f = r.find("failure");
            const bool notStarted = f != r.end() && f->is_object() && f->value("stage", std::string()) == "start"
                && f->value("message", std::string()).rfind("could not start the worker", 0) == 0;
            if (!notStarted || attempt == 3 || *m_jobs.cancelled())
                return r;
            std::this_thread::sleep_for(std::chrono::milliseconds(500 << attempt));
        }
    })
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
    // Several workers at once share the host's cores: each draws, hashes and compares tensors on
    // its share instead of on every core (16 workers x 16 threads oversubscribed a 16-core GPU
    // host). $HONE_WORKER_THREADS, when set, is the user's choice and passes through.
    if (m_config.parallel > 1 && !std::getenv("HONE_WORKER_THREADS")) {
        const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        cmd.argv.push_back("--threads");
        cmd.argv.push_back(std::to_string(std::max(1, cores / m_config.parallel)));
    }
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

void LocalExecutor::submit(core::EvalJob job)
{
    m_jobs.submit(std::move(job));
}

std::optional<core::EvalDone> LocalExecutor::next(std::chrono::milliseconds timeout)
{
    return m_jobs.next(timeout);
}

void LocalExecutor::cancelAll()
{
    m_jobs.cancelAll();
}

} // namespace hone::backends
