#pragma once

#include "cache_integrity.h"
#include "channel.h"
#include "checks.h"
#include "device_backend.h"
#include "eval_request.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
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

    /// Reference outputs of large shapes are kept under `dir`/ref, keyed by (reference, shape,
    /// params, seed), so that bench-sized references run once per problem, not per candidate.
    void setReferenceCache(std::filesystem::path dir) { m_refCache = std::move(dir); }

    /// Never throws: every failure becomes a `result` with status "failed".
    nlohmann::json evaluate(const nlohmann::json& request);

    /// A `dump` request: writes the timing inputs of the bench shape (the exact bytes a timed
    /// candidate sees), the reference's outputs for them and a manifest.json to request.dir,
    /// so that other implementations (PyTorch) can be checked and timed on the same data.
    nlohmann::json dump(const nlohmann::json& request);

    /// `hone-worker --profile-once`: builds the candidate of an eval request and calls it once
    /// on the timing inputs, for a profiler that watches this process. Returns an exit code.
    int runOnce(const nlohmann::json& request);

private:
    struct Built {
        CompileOutput compile;
        std::unique_ptr<LoadedKernel> kernel;
    };

    void progress(const std::string& stage, const std::string& detail);
    /// Compiles and loads `spec`; `built.compile` is filled even when this throws.
    void build(DeviceBackend& backend, const SourceSpec& spec, const char* role, Built& built);
    /// The reference's outputs for `inputs` (from the cache, or run in the host's own process);
    /// a reference that fails or writes a constant output is a worker_error.
    std::vector<HostTensor> referenceOutputs(
        const ShapeSpec& shape, uint64_t seed, const std::vector<HostTensor>& inputs, LoadedKernel& reference);
    CheckOutcome checkOnce(
        const ShapeSpec& shape, uint64_t seed, LoadedKernel& candidate, LoadedKernel& reference);
    /// Times the candidate against the baseline on the bench shape; every call accountable:
    /// random input sets, poisoned outputs, verified calls, inputs checksummed, clocks compared.
    nlohmann::json timeCandidate(const ShapeSpec& shape, LoadedKernel& candidate, LoadedKernel* baseline,
        LoadedKernel& reference, double* medianSeconds);

    /// Seeded inputs of `shape`, from the input cache when they are large.
    std::vector<HostTensor> inputsFor(const ShapeSpec& shape, uint64_t seed) const;
    std::filesystem::path referenceCachePath(const ShapeSpec& shape, uint64_t seed) const;
    /// Cached tensors, used only when their hash is the one recorded beside them; `kind`
    /// (inputs, reference) names them in the ledger and in a warning.
    bool loadTensors(const std::filesystem::path& path, std::vector<HostTensor>& tensors, const char* kind) const;
    void storeTensors(const std::filesystem::path& path, const std::vector<HostTensor>& tensors, const char* kind) const;

    DeviceBackend& m_device;
    DeviceBackend& m_host;
    ProtocolChannel& m_channel;
    const EvalRequest* m_request = nullptr;
    std::string m_id;
    std::string m_stage;
    std::chrono::steady_clock::time_point m_stageStart;
    std::map<std::string, double> m_stageSeconds; // wall time per stage of the current request
    void closeStage();
    /// Host work by kind over the whole request (result `phases`): input generation, cache
    /// reads, hashes and writes, reference runs, transfers, candidate check calls, verification.
    mutable std::map<std::string, double> m_phaseSeconds;
    /// Adds the wall time of its scope to `m_phaseSeconds[phase]`.
    class PhaseClock {
    public:
        PhaseClock(const Evaluator& e, const char* phase)
            : m_slot(e.m_phaseSeconds[phase])
        {
        }
        ~PhaseClock() { m_slot += std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count(); }
        PhaseClock(const PhaseClock&) = delete;
        PhaseClock& operator=(const PhaseClock&) = delete;

    private:
        double& m_slot;
        std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    };
    std::filesystem::path m_refCache;
    std::string m_referenceKey; // hash of the reference build, for the output cache
    nlohmann::json m_launches; // the candidate's launch profile from the timing stage
    mutable CacheLedger m_ledger; // the cache entries this request used, for the result's `cache`
};

} // namespace hone::backends
