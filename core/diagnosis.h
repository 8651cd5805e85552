#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

/// Roofline and bottleneck classification (DESIGN.md §6). Pure math, shared by every backend.
namespace hone::core {

/// Per-device ceilings, measured once per machine and cached.
struct Ceilings {
    std::string device;        // "cpu: AMD EPYC ... (2 cores)"
    double peakGflops = 0;     // measured FMA (or tensor-core) peak, GFLOP/s
    double peakGbps = 0;       // measured copy bandwidth, GB/s (bytes read + written)
    double peakTensorGflops = 0; // measured bf16 tensor-core peak (GPUs), GFLOP/s; 0 = none
    std::string method;        // how they were measured
    double loadPerCore = -1;   // the host's 1-minute load average per core while measuring; -1 unknown
};

/// Which compute ceiling a problem's FLOPs run against: the FMA units or the tensor cores
/// (`[cost] compute = "tensor"` in problem.toml). Falls back to FMA where there is no tensor
/// peak.
Ceilings forComputeUnit(const Ceilings& c, const std::string& unit);

enum class Bound { Memory, Compute, Latency, Occupancy };
const char* boundName(Bound b);

struct Roofline {
    double flops = 0;
    double bytes = 0;
    double seconds = 0;
    double gflops = 0;         // achieved
    double gbps = 0;           // achieved, against the cost model's minimum bytes
    double intensity = 0;      // flops / byte
    double peakGflops = 0;
    double peakGbps = 0;
    double fracCompute = 0;    // gflops / peakGflops
    double fracBandwidth = 0;  // gbps / peakGbps
    double floorSeconds = 0;   // max(flops/peak, bytes/bandwidth): no kernel runs faster
};

Roofline computeRoofline(double flops, double bytes, double seconds, const Ceilings& ceilings);

/// GPU only: theoretical occupancy and what limits it.
struct OccupancyInfo {
    double theoretical = 0;    // 0..1
    std::string limiter;       // "registers", "shared memory", "block size", "blocks per SM"
};

struct Diagnosis {
    Bound bound = Bound::Latency;
    std::string evidence;      // one or two sentences with the numbers behind the call
    bool suspicious = false;   // faster than the roofline floor allows
};

/// Names one bound with its evidence. Memory/compute when that fraction of its ceiling
/// dominates (>= 0.5); occupancy-limited when neither does and occupancy is low; otherwise
/// latency-bound. A time under 90% of the roofline floor is flagged as suspicious.
Diagnosis diagnose(const Roofline& r, const std::optional<OccupancyInfo>& occupancy = std::nullopt);

nlohmann::json toJson(const Roofline& r);
nlohmann::json toJson(const Diagnosis& d);
nlohmann::json toJson(const Ceilings& c);
Ceilings ceilingsFromJson(const nlohmann::json& j);

} // namespace hone::core
