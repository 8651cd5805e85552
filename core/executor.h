#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace hone::core {

/// One evaluation request (the worker-protocol `eval` message) and its id.
struct EvalJob {
    std::string id;
    nlohmann::json request;
};

/// A finished job: always a protocol `result`, also when the worker died (the executor then
/// writes the failure itself: crash, timeout, memory_limit, protocol_error).
struct EvalDone {
    std::string id;
    nlohmann::json result;
    double wallSeconds = 0;
};

/// Runs evaluations somewhere: a local process pool, ssh, Slurm. The engine sees only this.
class Executor {
public:
    virtual ~Executor() = default;

    /// The worker's `hello` reply (device, compiler, protocol); throws with a clear message
    /// when no worker can be started.
    virtual nlohmann::json hello() = 0;

    /// The `ceilings` reply for the device of `kind` ("cpu", "cuda"): calibrated once per
    /// machine, cached by the worker.
    virtual nlohmann::json ceilings(const std::string& kind) = 0;

    /// How many evaluations may run at once.
    virtual int slotCount() const = 0;

    virtual void submit(EvalJob job) = 0;

    /// Waits up to `timeout` for one finished job.
    virtual std::optional<EvalDone> next(std::chrono::milliseconds timeout) = 0;

    /// Kills everything in flight; their results are dropped.
    virtual void cancelAll() = 0;
};

} // namespace hone::core
