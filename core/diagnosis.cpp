#include "core/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hone::core {
namespace {

// A fraction of a ceiling must reach this to name that ceiling as the bound.
constexpr double kDominantFraction = 0.5;
// Below this theoretical occupancy a kernel that is neither memory- nor compute-bound is
// called occupancy-limited rather than latency-bound.
constexpr double kLowOccupancy = 0.5;
// A measured time under this fraction of the roofline floor cannot be real.
constexpr double kSuspiciousFraction = 0.9;

double ratio(double num, double den)
{
    return den > 0 && std::isfinite(num) ? num / den : 0.0;
}

/// Three significant digits, no exponent for everyday magnitudes: "41.2", "0.00312", "1250".
std::string num(double v)
{
    if (!std::isfinite(v))
        return "?";
    char buf[64];
    const double a = std::fabs(v);
    if (a != 0 && (a >= 1e7 || a < 1e-4))
        std::snprintf(buf, sizeof buf, "%.3g", v);
    else if (a >= 100)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else if (a >= 10)
        std::snprintf(buf, sizeof buf, "%.1f", v);
    else if (a >= 1)
        std::snprintf(buf, sizeof buf, "%.2f", v);
    else
        std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

/// "78%", and one decimal below 1% so that a small fraction does not read as none.
std::string pct(double fraction)
{
    char buf[64];
    const double p = fraction * 100.0;
    std::snprintf(buf, sizeof buf, p > 0 && p < 1 ? "%.1f%%" : "%.0f%%", p);
    return buf;
}

/// "12.5 us", "3.41 ms", "1.20 s".
std::string duration(double seconds)
{
    if (seconds < 1e-6)
        return num(seconds * 1e9) + " ns";
    if (seconds < 1e-3)
        return num(seconds * 1e6) + " us";
    if (seconds < 1)
        return num(seconds * 1e3) + " ms";
    return num(seconds) + " s";
}

std::string bandwidthClause(const Roofline& r)
{
    if (r.peakGbps <= 0)
        return num(r.gbps) + " GB/s (no measured copy bandwidth to compare with)";
    return num(r.gbps) + " GB/s is " + pct(r.fracBandwidth) + " of the measured " + num(r.peakGbps)
        + " GB/s copy bandwidth";
}

std::string computeClause(const Roofline& r)
{
    if (r.peakGflops <= 0)
        return num(r.gflops) + " GFLOP/s (no measured FMA peak to compare with)";
    return num(r.gflops) + " GFLOP/s is " + pct(r.fracCompute) + " of the measured " + num(r.peakGflops)
        + " GFLOP/s FMA peak";
}

} // namespace

const char* boundName(Bound b)
{
    switch (b) {
    case Bound::Memory:
        return "memory";
    case Bound::Compute:
        return "compute";
    case Bound::Latency:
        return "latency";
    case Bound::Occupancy:
        return "occupancy";
    }
    return "latency";
}

Roofline computeRoofline(double flops, double bytes, double seconds, const Ceilings& ceilings)
{
    Roofline r;
    r.flops = std::max(0.0, flops);
    r.bytes = std::max(0.0, bytes);
    r.seconds = std::max(0.0, seconds);
    r.peakGflops = std::max(0.0, ceilings.peakGflops);
    r.peakGbps = std::max(0.0, ceilings.peakGbps);
    r.gflops = ratio(r.flops, r.seconds) * 1e-9;
    r.gbps = ratio(r.bytes, r.seconds) * 1e-9;
    r.intensity = ratio(r.flops, r.bytes);
    r.fracCompute = ratio(r.gflops, r.peakGflops);
    r.fracBandwidth = ratio(r.gbps, r.peakGbps);
    const double computeFloor = ratio(r.flops, r.peakGflops * 1e9);
    const double memoryFloor = ratio(r.bytes, r.peakGbps * 1e9);
    r.floorSeconds = std::max(computeFloor, memoryFloor);
    return r;
}

Diagnosis diagnose(const Roofline& r, const std::optional<OccupancyInfo>& occupancy)
{
    Diagnosis d;
    const bool memoryDominates = r.fracBandwidth >= kDominantFraction && r.fracBandwidth >= r.fracCompute;
    const bool computeDominates = r.fracCompute >= kDominantFraction && r.fracCompute > r.fracBandwidth;

    if (memoryDominates) {
        d.bound = Bound::Memory;
        d.evidence = "memory-bound: " + bandwidthClause(r) + "; compute at " + pct(r.fracCompute) + " of "
            + num(r.peakGflops) + " GFLOP/s compute peak";
    } else if (computeDominates) {
        d.bound = Bound::Compute;
        d.evidence = "compute-bound: " + computeClause(r) + "; bandwidth at " + pct(r.fracBandwidth) + " of "
            + num(r.peakGbps) + " GB/s copy bandwidth";
    } else if (occupancy && occupancy->theoretical < kLowOccupancy) {
        d.bound = Bound::Occupancy;
        d.evidence = "occupancy-limited: theoretical occupancy " + pct(occupancy->theoretical)
            + (occupancy->limiter.empty() ? std::string() : " (limited by " + occupancy->limiter + ")")
            + " while bandwidth is at " + pct(r.fracBandwidth) + " and compute at " + pct(r.fracCompute)
            + " of their ceilings; too little parallel work is in flight to hide latency";
    } else {
        d.bound = Bound::Latency;
        if (r.peakGbps <= 0 && r.peakGflops <= 0) {
            d.evidence = "latency-bound by default: no calibrated ceilings, so " + num(r.gbps) + " GB/s and "
                + num(r.gflops) + " GFLOP/s cannot be placed on a roofline";
        } else {
            d.evidence = "latency-bound: neither ceiling is approached (" + bandwidthClause(r) + "; "
                + computeClause(r) + "); the time goes to overheads, dependent steps or poor "
                + "parallelism rather than to throughput";
        }
    }

    if (r.floorSeconds > 0 && r.seconds < kSuspiciousFraction * r.floorSeconds) {
        d.suspicious = true;
        d.evidence += ". Suspicious: " + duration(r.seconds) + " is below the roofline floor of "
            + duration(r.floorSeconds) + " (" + pct(ratio(r.seconds, r.floorSeconds))
            + " of it); check the cost model, or whether the candidate skips work or caches results";
    }
    return d;
}

nlohmann::json toJson(const Roofline& r)
{
    return nlohmann::json {
        { "flops", r.flops },
        { "bytes", r.bytes },
        { "gflops", r.gflops },
        { "gbps", r.gbps },
        { "intensity", r.intensity },
        { "peak_gflops", r.peakGflops },
        { "peak_gbps", r.peakGbps },
        { "frac_compute", r.fracCompute },
        { "frac_bandwidth", r.fracBandwidth },
        { "floor_ns", r.floorSeconds * 1e9 },
    };
}

nlohmann::json toJson(const Diagnosis& d)
{
    return nlohmann::json { { "bound", boundName(d.bound) }, { "evidence", d.evidence },
        { "suspicious", d.suspicious } };
}

nlohmann::json toJson(const Ceilings& c)
{
    return nlohmann::json {
        { "device", c.device },
        { "peak_gflops", c.peakGflops },
        { "peak_gbps", c.peakGbps },
        { "peak_tensor_gflops", c.peakTensorGflops },
        { "method", c.method },
        { "load_per_core", c.loadPerCore },
    };
}

Ceilings forComputeUnit(const Ceilings& c, const std::string& unit)
{
    Ceilings out = c;
    if (unit == "tensor" && c.peakTensorGflops > 0)
        out.peakGflops = c.peakTensorGflops;
    return out;
}

Ceilings ceilingsFromJson(const nlohmann::json& j)
{
    Ceilings c;
    if (!j.is_object())
        return c;
    auto str = [&](const char* key) {
        auto it = j.find(key);
        return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto number = [&](const char* key) {
        auto it = j.find(key);
        return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
    };
    c.device = str("device");
    c.method = str("method");
    c.peakGflops = number("peak_gflops");
    c.peakGbps = number("peak_gbps");
    c.peakTensorGflops = number("peak_tensor_gflops");
    if (auto it = j.find("load_per_core"); it != j.end() && it->is_number())
        c.loadPerCore = it->get<double>();
    return c;
}

} // namespace hone::core
