#pragma once

#include "core/protocol.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

/// The worker's `result` message as one typed value (docs/FORMATS.md, worker protocol). It is
/// decoded once, by `EvalResult::fromJson`, where it enters the engine (and where the workbench
/// reads a stored one); everything downstream reads these fields, so a renamed field is a compile
/// error instead of a silent key mismatch.
///
/// Every struct keeps the keys it does not know (a newer worker's, or ones nobody reads as a
/// type yet) in `extra`, and `toJson` writes them back: `fromJson(toJson(r))` is `r`, and
/// `toJson(fromJson(j))` equals `j` for any result a worker wrote. An optional field that is
/// present with another JSON type than the one it is read as stays in `extra` too.
namespace hone::core::protocol {

enum class EvalStatus { Ok, Failed };

struct Failure {
    FailureKind kind = FailureKind::WorkerError;
    std::string stage;
    std::string message;
    nlohmann::json extra = nlohmann::json::object();
};

/// A compiler diagnostic (`compile.messages`).
struct CompileMessage {
    std::optional<std::string> file;
    int64_t line = 0;
    int64_t column = 0;
    std::string severity;
    std::string text;
    nlohmann::json extra = nlohmann::json::object();
};

/// One kernel's resources from the compiler (`compile.resources`, CUDA and HIP).
struct KernelResources {
    std::string name;
    std::optional<int64_t> registers;
    std::optional<int64_t> smemStatic;
    std::optional<int64_t> stackBytes;
    std::optional<int64_t> spillStores;
    std::optional<int64_t> spillLoads;
    // AMD code objects (HIP): register files, LDS and scratch, and the occupancy they allow.
    std::optional<int64_t> vgprs;
    std::optional<int64_t> agprs;
    std::optional<int64_t> sgprs;
    std::optional<int64_t> ldsBytes;
    std::optional<int64_t> scratchBytes;
    std::optional<int64_t> vgprSpills;
    std::optional<int64_t> sgprSpills;
    struct AmdOccupancy {
        std::string arch;
        std::optional<int64_t> block;
        std::optional<double> wavesPerSimd;
        std::string limiter;
        nlohmann::json extra = nlohmann::json::object();
    };
    std::optional<AmdOccupancy> amdOccupancy;   // `occupancy` of one kernel
    nlohmann::json extra = nlohmann::json::object();
};

struct CompileInfo {
    std::optional<bool> ok;
    bool cached = false;
    std::optional<double> seconds;
    std::optional<std::string> command;
    std::optional<std::string> log;
    std::vector<CompileMessage> messages;
    std::vector<KernelResources> resources; // empty without per-kernel resources
    std::optional<std::string> resourcesError; // `resources: {"error": ...}`: the code object could not be read
    std::optional<std::string> isa;             // HIP: llvm-objdump's disassembly
    std::optional<std::string> objectSha256;    // `object_sha256`: the object as loaded, verified against the cache
    nlohmann::json extra = nlohmann::json::object();
};

struct Mismatch {
    std::string output;
    int64_t index = 0;
    std::optional<double> got;  // null in JSON for a NaN
    std::optional<double> want;
    bool unwritten = false;
    nlohmann::json extra = nlohmann::json::object();
};

/// One comparison with the reference: one shape, one seed (`checks[]`).
struct Check {
    std::string shape;
    int64_t seed = 0;
    bool ok = false;
    std::optional<double> maxAbsErr;
    std::optional<double> maxRelErr;
    int64_t mismatches = 0;
    std::vector<Mismatch> firstMismatches;
    bool afterTiming = false;                   // the re-check on fresh inputs after timing
    std::optional<FailureKind> failureKind;     // on a failed check
    std::string failureMessage;
    nlohmann::json extra = nlohmann::json::object();
};

/// Sample statistics of one timed kernel (the candidate's, or `timing.baseline`).
struct SampleStats {
    std::vector<double> samplesNs;
    double medianNs = 0;
    std::optional<double> p10Ns;
    std::optional<double> p90Ns;
    std::optional<double> cv;
    nlohmann::json extra = nlohmann::json::object();
};

struct Timing {
    std::optional<std::string> shape;
    SampleStats stats;
    std::optional<SampleStats> baseline;        // interleaved baseline, when the request had one
    std::optional<double> speedup;              // baseline / candidate from interleaved samples
    nlohmann::json extra = nlohmann::json::object(); // method, input_sets, verified_calls, ...
};

struct Roofline {
    std::optional<double> flops;
    std::optional<double> bytes;
    std::optional<double> gflops;
    std::optional<double> gbps;
    std::optional<double> intensity;
    std::optional<double> peakGflops;
    std::optional<double> peakGbps;
    std::optional<double> fracCompute;
    std::optional<double> fracBandwidth;
    std::optional<double> floorNs;
    nlohmann::json extra = nlohmann::json::object();
};

struct Diagnosis {
    std::string bound;                          // memory | compute | latency | occupancy
    std::string evidence;
    bool suspicious = false;
    nlohmann::json extra = nlohmann::json::object();
};

/// One captured launch (`occupancy.kernels[]`, CUDA).
struct LaunchOccupancy {
    std::string name;
    std::vector<int64_t> block;                 // block dimensions; empty when not reported
    std::optional<int64_t> threads;
    std::optional<int64_t> registers;
    std::optional<int64_t> staticSmem;
    std::optional<int64_t> dynamicSmem;
    std::optional<int64_t> blocksPerSm;
    std::optional<double> occupancy;
    std::string limiter;
    nlohmann::json extra = nlohmann::json::object();
};

struct Occupancy {
    std::vector<LaunchOccupancy> kernels;
    std::optional<double> theoretical;
    std::string limiter;
    std::string mainKernel;
    std::optional<std::string> error;           // no launch could be measured
    nlohmann::json extra = nlohmann::json::object();
};

struct Stall {
    std::string reason;
    double pct = 0;
    nlohmann::json extra = nlohmann::json::object();
};

/// One profiled kernel (`profile.main`).
struct ProfiledKernel {
    std::string name;
    std::optional<double> dramPct;
    std::optional<double> smPct;
    std::optional<double> achievedOccupancyPct;
    std::vector<Stall> stalls;                  // the top stall reasons
    nlohmann::json extra = nlohmann::json::object();
};

/// Nsight Compute's numbers for one call (`profile`); `error` when it could not run.
struct Profile {
    std::optional<double> dramBytes;            // the whole call's DRAM traffic
    std::string error;
    std::optional<ProfiledKernel> main;         // the longest kernel
    nlohmann::json extra = nlohmann::json::object(); // every kernel's counters

    /// The `profile` object as the result holds it (`hone bench` writes it to its table).
    nlohmann::json toJson() const;
};

/// One timed bench shape of a multi-shape request (`shapes[]`).
struct ShapeResult {
    size_t index = 0;                           // into problem.bench
    std::string label;                          // "bench[2]"
    std::optional<Timing> timing;               // always present in an ok result
    std::optional<double> speedup;
    std::optional<Roofline> roofline;
    std::optional<Diagnosis> diagnosis;
    nlohmann::json extra = nlohmann::json::object();

    double medianNs() const { return timing ? timing->stats.medianNs : 0.0; }
    double baselineMedianNs() const { return timing && timing->baseline ? timing->baseline->medianNs : 0.0; }
};

/// What the engine adds to a stored multi-shape result (docs/SEARCH.md, "Shape sets").
struct ObjectiveRecord {
    double value = 0;                           // weighted geometric mean of the shapes' speedups
    bool screened = false;
    std::vector<std::string> slowerOn;
    std::vector<double> weights;
    nlohmann::json extra = nlohmann::json::object();
};

struct Environment {
    std::string device;                         // "cpu: ...", "cuda: ..."
    std::string backend;                        // cpu | cuda | hip
    std::optional<std::string> compiler;
    std::optional<std::string> flags;           // the compile flags used
    std::optional<std::string> cpuFlags;        // `cpu_flags`: the worker's CPU features (/proc/cpuinfo)
    nlohmann::json extra = nlohmann::json::object(); // cores, host, ...
};

/// One cache entry a request used or wrote (`cache.entries`): what the engine's store compares.
struct CacheEntry {
    std::string kind;   // object | inputs | reference
    std::string key;    // its path under the worker's cache folder ("so/<hash>.so", "ref/<hash>.bin")
    std::string sha256; // of its bytes as used
    nlohmann::json extra = nlohmann::json::object();
};

/// `cache`: the entries, and warnings for entries whose bytes were not the ones recorded (by the
/// worker's manifest, or, added by the engine, by the store).
struct CacheRecord {
    std::vector<CacheEntry> entries;
    std::vector<std::string> warnings;
    nlohmann::json extra = nlohmann::json::object();
};

/// `phases`: where the worker's host time went over the whole request, by kind of work (seconds;
/// summed over stages: a timing input set and the re-check both add to `cache_hash`). A kind the
/// request did not do is absent. `stage_seconds` (kept in `extra`) says the same time by stage.
struct Phases {
    std::optional<double> generate;             // drawing inputs (HostTensor::fill)
    std::optional<double> cacheRead;            // `cache_read`: reading cached inputs and reference outputs
    std::optional<double> cacheHash;            // `cache_hash`: SHA-256 of cached tensors, read or written
    std::optional<double> cacheWrite;           // `cache_write`: writing new cache entries
    std::optional<double> reference;            // running the reference (copies included)
    std::optional<double> transfer;             // the candidate's check buffers: poison, copies in and out
    std::optional<double> candidate;            // the candidate's untimed check calls
    std::optional<double> verify;               // input checksums and the comparison with the reference
    nlohmann::json extra = nlohmann::json::object();
};

struct EvalResult {
    std::string id;                             // the request's id (an integer id is written as a string)
    EvalStatus status = EvalStatus::Failed;
    std::optional<Failure> failure;             // present when failed
    std::optional<CompileInfo> compile;
    std::optional<std::vector<Check>> checks;
    std::optional<Timing> timing;               // the (first) timed shape's
    std::optional<Roofline> roofline;
    std::optional<Diagnosis> diagnosis;
    std::optional<Occupancy> occupancy;
    std::optional<Profile> profile;
    std::optional<std::vector<ShapeResult>> shapes; // with config.timing_shapes
    std::optional<bool> screened;
    std::optional<ObjectiveRecord> objective;   // added by the engine to a stored result
    std::optional<Environment> environment;
    std::optional<CacheRecord> cache;           // the worker's cache entries and their hashes
    std::optional<Phases> phases;               // host time by kind of work
    bool deviceLost = false;
    nlohmann::json extra = nlohmann::json::object(); // unknown keys, kept and written back

    bool ok() const { return status == EvalStatus::Ok; }
    FailureKind failureKind() const { return failure ? failure->kind : FailureKind::WorkerError; }
    double medianNs() const { return timing ? timing->stats.medianNs : 0.0; }
    double cv() const { return timing ? timing->stats.cv.value_or(0.0) : 0.0; }
    /// The interleaved baseline's median; 0 when none.
    double baselineMedianNs() const { return timing && timing->baseline ? timing->baseline->medianNs : 0.0; }
    /// The worker's speedup on the (first) timed shape; 0 without a baseline.
    double timedSpeedup() const { return timing ? timing->speedup.value_or(0.0) : 0.0; }
    /// What the search ranks by: the engine's objective when recorded, else the timed speedup;
    /// 0 for a failure.
    double speedup() const;
    std::string bound() const { return diagnosis ? diagnosis->bound : std::string(); }
    std::string evidence() const { return diagnosis ? diagnosis->evidence : std::string(); }
    bool suspicious() const { return diagnosis && diagnosis->suspicious; }
    double fracBandwidth() const { return roofline ? roofline->fracBandwidth.value_or(0.0) : 0.0; }
    double fracCompute() const { return roofline ? roofline->fracCompute.value_or(0.0) : 0.0; }
    bool compileCached() const { return compile && compile->cached; }
    bool isScreened() const { return screened.value_or(false); }
    /// `environment.device` ("cuda: NVIDIA H100 ... (sm_90, 132 SMs)"); empty when not recorded.
    std::string device() const { return environment ? environment->device : std::string(); }
    /// `environment.backend` (cpu | cuda | hip); empty when not recorded.
    std::string backend() const { return environment ? environment->backend : std::string(); }
    const std::vector<ShapeResult>& shapeResults() const;

    /// The one encoder: the `result` message, with `protocol` (the layout's version: kVersion)
    /// and `type`.
    nlohmann::json toJson() const;
    /// The one decoder. Throws ProtocolError naming the field ("result.timing.median_ns missing",
    /// "result.shapes[1].index is negative") for a result that breaks the format, and for one of
    /// another protocol version. A result without `protocol` (written by hand) reads as kVersion; a stored version-1 result
    /// (same layout, before the secret) reads too.
    static EvalResult fromJson(const nlohmann::json& j);
    /// A failed result, as an executor or the engine makes one when the worker could not.
    static EvalResult failed(std::string id, FailureKind kind, std::string stage, std::string message);
};

bool operator==(const EvalResult& a, const EvalResult& b);

} // namespace hone::core::protocol
