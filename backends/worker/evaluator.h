#pragma once

#include "channel.h"
#include "checks.h"
#include "device_backend.h"
#include "eval_request.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

/// One `eval` request: compile -> check -> time -> re-check -> roofline/diagnosis, producing
/// the `result` of docs/FORMATS.md.
namespace hone::backends {

class Evaluator {
public:
    /// `device` builds and runs candidates and baselines; `host` builds and runs the problem's
    /// reference (the CPU; the same object when the device is the CPU).
    Evaluator(DeviceBackend& device, DeviceBackend& host, ProtocolChannel& channel);

    /// Never throws: every failure becomes a `result` with status "failed".
    nlohmann::json evaluate(const nlohmann::json& request);

private:
    struct Built {
        CompileOutput compile;
        std::unique_ptr<LoadedKernel> kernel;
    };

    void progress(const std::string& stage, const std::string& detail);
    /// Compiles and loads `spec`; `built.compile` is filled even when this throws.
    void build(DeviceBackend& backend, const SourceSpec& spec, const char* role, Built& built);
    CheckOutcome checkOnce(
        const ShapeSpec& shape, uint64_t seed, LoadedKernel& candidate, LoadedKernel& reference);
    nlohmann::json timeCandidate(
        const ShapeSpec& shape, LoadedKernel& candidate, LoadedKernel* baseline, double* medianSeconds);

    DeviceBackend& m_device;
    DeviceBackend& m_host;
    ProtocolChannel& m_channel;
    const EvalRequest* m_request = nullptr;
    std::string m_id;
    std::string m_stage;
};

} // namespace hone::backends
