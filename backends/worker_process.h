#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <string>
#include <vector>

namespace hone::backends {

/// Limits the executor enforces from outside the worker.
struct WorkerLimits {
    double compileSeconds = 120;     // wall time while the worker is in stage 'compile'
    double stageSeconds = 60;        // wall time in any other stage
    double memoryMiB = 4096;         // resident set size of the worker process
    bool addressSpaceLimit = true;   // RLIMIT_AS backstop; off for GPU workers, whose driver
                                     // reserves far more address space than it uses
};

/// How to start one worker: the command line (`hone-worker --stdio ...`, or `ssh host ...`).
struct WorkerCommand {
    std::vector<std::string> argv;
};

/// Runs one request through a fresh worker process and returns its `result` (or, for hello
/// and calibrate, the reply). Anything that goes wrong becomes a failed result with a reason:
/// a crash (signal), a time-out per stage, the memory limit, garbage on stdout, or an exit
/// without a result. The worker is started in its own process group and killed as a group.
nlohmann::json runWorker(const WorkerCommand& cmd, const nlohmann::json& request, const WorkerLimits& limits,
    const std::atomic<bool>* cancel = nullptr);

/// "SIGSEGV (Segmentation fault)".
std::string signalDescription(int sig);

} // namespace hone::backends
