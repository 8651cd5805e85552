#pragma once

#include "core/check_coverage.h"
#include "core/dtype.h"
#include "core/protocol.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

/// The `eval` request (docs/FORMATS.md) as a type: the engine, `hone eval` and `hone bench` fill
/// one and send `toJson()`; the worker reads it with `fromJson`, which validates every field up
/// front so that a malformed request fails with a message naming the field before anything is
/// compiled. The counterpart of `EvalResult` (core/eval_result.h).
namespace hone::core::protocol {

/// A request that cannot be acted on (missing or ill-typed field); the message names it.
class RequestError : public ProtocolError {
public:
    using ProtocolError::ProtocolError;
};

/// One input or output of a resolved shape.
struct TensorDesc {
    std::string name;
    DType dtype = HONE_F32;
    std::vector<int64_t> shape;
    nlohmann::json init; // inputs: {"dist": ..., numbers}; may be null

    size_t numel() const;
    size_t bytes() const { return numel() * dtypeSize(dtype); }
    nlohmann::json toJson() const;
};

/// Reads `inputs` or `outputs` of a resolved shape; `where` prefixes error messages.
std::vector<TensorDesc> parseTensors(const nlohmann::json& shape, const char* key, const std::string& where);

/// A kernel's source as sent: the candidate, the baseline or the problem's reference.
struct SourceSpec {
    std::string name; // "tuned.cpp"
    std::string lang; // "cpp"
    std::string source;
    std::map<std::string, std::string> knobs; // NAME -> value, compiled as -DNAME=value
    std::string flags;

    /// All five keys, knob values as strings.
    nlohmann::json toJson() const;
    /// `where` names the object in errors; `defaultName` stands in for a missing `name`.
    static SourceSpec fromJson(const nlohmann::json& j, const std::string& where, const std::string& defaultName);
};

/// One resolved shape: its symbols, cost model and tensors.
struct ShapeSpec {
    std::string label; // "small[1]"
    std::map<std::string, double> symbols;
    double flops = 0;
    bool flopsUnknown = false; // "flops_unknown": the cost model has no FLOPs (imported problems)
    double bytes = 0;
    std::string compute = "fma"; // the compute ceiling flops run against: fma | tensor
    std::vector<TensorDesc> inputs;
    std::vector<TensorDesc> outputs;
    // Set by the worker for the coverage checks it derives (backends/worker/coverage_checks),
    // never sent:
    /// The `[check]` distribution the inputs are drawn under ("" for their init as listed);
    /// its transform is in each affected input's `init.transform`.
    std::string distribution;
    /// A coverage check (a drawn shape or a distribution): a constant reference output is
    /// allowed (constant rows, N = 1), since the listed shapes already rule out constant kernels.
    bool coverage = false;

    nlohmann::json toJson() const;
    /// `set` and `index` name it in errors ("problem.bench[2]").
    static ShapeSpec fromJson(const nlohmann::json& j, const std::string& set, size_t index);
};

struct EvalRequest {
    std::string id;

    // The problem, resolved (core::resolveProblem): the request's `problem` object.
    std::string problemName;
    std::string family;
    SourceSpec reference;
    std::map<std::string, double> params;
    nlohmann::json tolerance = nlohmann::json::object(); // {"f32": {"atol":..,"rtol":..}}
    std::vector<std::string> libraries; // vendor libraries candidates may link ("cublasLt")
    std::vector<ShapeSpec> check;
    std::vector<ShapeSpec> bench;
    /// problem.coverage: extra distributions and shape ranges for the checks (docs/FORMATS.md).
    core::CheckCoverage coverage;

    SourceSpec candidate;
    std::optional<SourceSpec> baseline;

    bool wantCheck = true;
    bool wantTime = true;
    bool wantProfile = false; // the optional profiler stage (Nsight Compute on CUDA)

    // config
    std::vector<uint64_t> seeds; // fromJson: at least 3, distinct
    int samples = 25;            // fromJson: at least 20
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
    // uses recheckSeed. A re-verification passes new ones (docs/FORMATS.md). At their defaults
    // they are not written, so cache keys of earlier sessions stay as they were.
    static constexpr uint64_t kDefaultTimingSeed = 1;
    static constexpr uint64_t kDefaultRecheckSeed = 1000;
    uint64_t timingSeed = kDefaultTimingSeed;
    uint64_t recheckSeed = kDefaultRecheckSeed;
    /// config.coverage_seed as given (tests pin the coverage draw with it).
    std::optional<uint64_t> givenCoverageSeed;
    /// The per-request secret an executor stamps in (never the candidate's to know).
    std::optional<std::string> secret;
    /// Which random shapes, distributions and seeds the coverage checks draw (fromJson):
    /// config.coverage_seed, else a hash of the secret, else of the check seeds.
    uint64_t coverageSeed = 0;

    // limits
    double compileSeconds = 120;
    double runSeconds = 60;

    /// Fields this version does not know, kept and written back: top level, `problem`, `config`.
    nlohmann::json extra = nlohmann::json::object();
    nlohmann::json problemExtra = nlohmann::json::object();
    nlohmann::json configExtra = nlohmann::json::object();

    /// The whole message, `{"protocol": kVersion, "type": "eval", ...}`.
    nlohmann::json toJson() const;
    nlohmann::json problemToJson() const;
    /// The `config` object as sent (the engine's result cache keys on it).
    nlohmann::json configToJson() const;

    /// Reads and validates a request; throws RequestError naming the offending field. Fills in
    /// what the worker assumes: at least three distinct seeds, timingShapes, coverageSeed.
    static EvalRequest fromJson(const nlohmann::json& request);
    /// A request holding `problem` (a resolved problem object) and nothing else yet; the engine
    /// fills one per problem and copies it per candidate. Throws RequestError.
    static EvalRequest forProblem(const nlohmann::json& problem);
};

} // namespace hone::core::protocol
