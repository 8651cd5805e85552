#pragma once

#include "tensors.h"

#include "core/check_coverage.h"
#include "core/protocol.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

/// An `eval` request (docs/FORMATS.md), read and validated up front so that a malformed
/// request fails with a message naming the field before anything is compiled.
namespace hone::backends {

struct SourceSpec {
    std::string name; // "tuned.cpp"
    std::string lang; // "cpp"
    std::string source;
    std::map<std::string, std::string> knobs; // NAME -> value, compiled as -DNAME=value
    std::string flags;
};

struct ShapeSpec {
    std::string label; // "small[1]"
    std::map<std::string, double> symbols;
    double flops = 0;
    bool flopsUnknown = false; // "flops_unknown": the cost model has no FLOPs (imported problems)
    double bytes = 0;
    std::string compute = "fma"; // the compute ceiling flops run against: fma | tensor
    std::vector<TensorDesc> inputs;
    std::vector<TensorDesc> outputs;
    /// The `[check]` distribution the inputs are drawn under ("" for their init as listed);
    /// its transform is in each affected input's `init.transform`.
    std::string distribution;
    /// A coverage check (a drawn shape or a distribution): a constant reference output is
    /// allowed (constant rows, N = 1), since the listed shapes already rule out constant kernels.
    bool coverage = false;
};

struct EvalRequest {
    std::string id;
    std::string problemName;
    SourceSpec reference;
    SourceSpec candidate;
    std::optional<SourceSpec> baseline;
    std::map<std::string, double> params;
    nlohmann::json tolerance; // {"f32": {"atol":..,"rtol":..}}
    std::vector<std::string> libraries; // vendor libraries candidates may link ("cublasLt")
    std::vector<ShapeSpec> check;
    std::vector<ShapeSpec> bench;
    /// problem.coverage: extra distributions and shape ranges for the checks (docs/FORMATS.md).
    core::CheckCoverage coverage;
    /// Which random shapes, distributions and seeds the coverage checks draw: config.coverage_seed,
    /// else a hash of the request's secret (new for every request, unknown to the candidate),
    /// else of the check seeds.
    uint64_t coverageSeed = 0;
    bool wantCheck = true;
    bool wantTime = true;
    bool wantProfile = false; // the optional profiler stage (Nsight Compute on CUDA)
    std::vector<uint64_t> seeds; // at least 3, distinct
    int samples = 25; // at least 20
    int warmup = 3;
    size_t timingShape = 0;
    // The bench shapes timed, in order: config.timing_shapes, else { timingShape }. The first is
    // the screening shape: with screenSpeedup > 0 the others are timed only when its speedup over
    // the baseline reaches screenSpeedup (docs/FORMATS.md).
    std::vector<size_t> timingShapes;
    double screenSpeedup = 0;
    // A candidate screened out is still timed on this bench shape (an index of timingShapes past
    // the first) and timed on all when its speedup there reaches screenProbeSpeedup: a specialist
    // for that shape (config.screen_probe, docs/FORMATS.md).
    std::optional<size_t> screenProbe;
    double screenProbeSpeedup = 0;
    // The timing input sets are seeds timingSeed, timingSeed+1, ...; the re-check after timing
    // uses recheckSeed. A re-verification passes new ones (docs/FORMATS.md).
    uint64_t timingSeed = 1;
    uint64_t recheckSeed = 1000;
    double compileSeconds = 120;
    double runSeconds = 60;
};

/// The request's `id`, or "" when it has none (for failures of unparsable requests).
using core::protocol::requestId;

/// Throws RequestError naming the offending field.
EvalRequest parseEvalRequest(const nlohmann::json& request);

/// One resolved SHAPE object (docs/FORMATS.md); `set` and `index` name it in errors.
ShapeSpec parseShape(const nlohmann::json& j, const std::string& set, size_t index);

} // namespace hone::backends
