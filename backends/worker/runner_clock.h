#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

/// The checks that bound a runner's reported times by clocks the runner cannot touch
/// (docs/THREAT_MODEL.md, "What the clock check can and cannot see").
namespace hone::backends {

/// One timed call of a runner, as the runner reported it and as the judge saw it.
struct RunnerTimedCall {
    double reported = 0; // the runner's clock, ns
    double wall = 0; // the judge's clock from request to reply, ns
    double cpu = -1; // CPU ns the kernel charged to the runner's main thread; -1 unknown
};

/// On the CPU: empty when the reports agree with the CPU time of the runner's main thread, else
/// why not. Fewer than three calls, or no CPU accounting, cannot be judged (empty).
std::string cpuClockDisagreement(const std::vector<RunnerTimedCall>& calls);

/// On a GPU: empty when the reports fit the judge's windows (the median call's window at most
/// kDeviceClockFactor x its report + kDeviceClockAllowanceNs, and no report beyond its
/// window), else why not.
std::string deviceClockDisagreement(const std::vector<RunnerTimedCall>& calls);

/// The medians deviceClockDisagreement compared: {calls, median_reported_ns, median_wall_ns};
/// null without calls.
nlohmann::json deviceClockStats(const std::vector<RunnerTimedCall>& calls);

/// The GPU bound in words, for timing.method.clock_check.
std::string deviceClockBound();

/// The GPU check's bound on the judge's window per call: this factor times the runner's report
/// plus this allowance, which covers the 50 us pre-start delay kernel, the switch between the
/// judge's and the runner's contexts, the closing synchronize and event reads, and the socket
/// round trip: together about 0.4 ms a call on an H100, measured.
constexpr double kDeviceClockFactor = 1.5;
constexpr double kDeviceClockAllowanceNs = 1e6;

} // namespace hone::backends
