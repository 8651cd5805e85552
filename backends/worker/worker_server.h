#pragma once

#include "channel.h"
#include "compiler.h"
#include "cpu_backend.h"
#ifdef HONE_WITH_CUDA
#include "cuda_backend.h"
#endif
#include "evaluator.h"
#ifdef HONE_WITH_HIP
#include "hip_backend.h"
#endif
#include "runner_backend.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace hone::backends {

/// The worker's request loop (docs/FORMATS.md, worker protocol): reads one JSON request per line
/// from its channel, routes `hello`, `eval`, `calibrate`, `dump` and `shutdown` to the backends,
/// and answers each. hone-worker's main() parses its options and runs one.
class Worker {
public:
    /// `compiler` builds CPU candidates; `version` is what `hello` reports.
    Worker(ProtocolChannel& channel, const std::filesystem::path& cacheDir, const std::string& compiler,
        std::string version);

#ifdef HONE_WITH_HIP
    /// Made on first use (hello, a HIP eval or calibrate): a worker that evaluates CPU or CUDA
    /// code never loads ROCm.
    HipBackend& hip();
#endif

    /// Serves requests until end of input or `shutdown`.
    void serve();

private:
    /// False when the worker should exit.
    bool handle(const std::string& line);

    /// Routes by the candidate's language; false (exit) when a GPU fault lost the context.
    bool evaluate(const nlohmann::json& request);

    /// HIP: the request's `hip_arch` picks the gfx target; without an AMD GPU only compile-only
    /// requests (compile errors, registers, occupancy, ISA) are served, anything else refused.
    bool evaluateHip(const nlohmann::json& request);

    /// Sends an evaluation's result (marked `device_lost` when the GPU context was lost) and
    /// ends the request; false (the worker exits) when it was lost.
    bool reply(nlohmann::json result, bool lost);

    void refuse(const std::string& id, const std::string& message);

    nlohmann::json hello(const std::string& id);

    nlohmann::json calibrate(const std::string& id, const nlohmann::json& request);

    ProtocolChannel& m_channel;
    HostCompiler m_compiler;
    CpuBackend m_cpu;
    RunnerBackend m_runners; // CPU code (candidates, references) runs in runner processes
    Evaluator m_evaluator;
#ifdef HONE_WITH_CUDA
    CudaBackend m_cuda;
    // CUDA candidates run in GPU runner processes, the judge keeping its own context
    // (HONE_CUDA_IN_PROCESS=1: in this process, as before the split; docs/THREAT_MODEL.md).
    RunnerBackend m_cudaRunners;
    Evaluator m_cudaEvaluator;
#endif
#ifdef HONE_WITH_HIP
    std::filesystem::path m_cacheDir;
    std::unique_ptr<HipBackend> m_hip;
    std::unique_ptr<Evaluator> m_hipEvaluator;
#endif
    std::string m_version;
};

} // namespace hone::backends
