#include "runner_clock.h"

#include <algorithm>
#include <cstdio>

namespace hone::backends {

/// The runner's clock against one it cannot touch: the CPU time the kernel charged to the
/// runner's main thread while it served the timed calls. That thread runs hone_run (it
/// takes part in any OpenMP team), so an honest report is at least its CPU time; a clock
/// patched inside the runner reports less than the thread demonstrably computed. Wall time
/// seen from here is no bound on a loaded host (scheduling delays), CPU time is.
std::string cpuClockDisagreement(const std::vector<RunnerTimedCall>& calls)
{
    if (calls.size() < 3)
        return {};
    double reported = 0, cpu = 0;
    for (const auto& t : calls) {
        if (t.reported > t.wall * 1.01 + 2000)
            return "the candidate's process reported " + std::to_string(t.reported / 1e3)
                + " us for a call that took " + std::to_string(t.wall / 1e3) + " us from request to reply";
        if (t.cpu < 0)
            return {}; // no CPU accounting on this host: the check cannot be made
        reported += t.reported;
        cpu += t.cpu;
    }
    const double n = static_cast<double>(calls.size());
    // Per call, the runner's own work around hone_run (a packet in, one out) is a few us.
    const double allowed = 1.5 * reported + n * 100e3;
    if (cpu <= allowed)
        return {};
    char msg[360];
    std::snprintf(msg, sizeof msg,
        "the candidate's clock disagrees with the CPU time it used: its process reported %.1f us per call, "
        "but its main thread computed for %.1f us per call (at most %.1f us allowed)",
        reported / n / 1e3, cpu / n / 1e3, allowed / n / 1e3);
    return msg;
}

/// On a GPU: the runner's event time against the judge's own clock around each call. An
/// honest report is the GPU's work, which fits inside the judge's window from request to
/// reply, and that window exceeds it only by the runner's fixed overhead: the pre-start delay
/// kernel, the closing synchronize and the socket round trip. A clock patched in the runner
/// (cuEventElapsedTime swapped, a fake elapsed time) reports less than the window shows.
/// Judged on the median call, so that one-off delays (lazy module loading in the first call,
/// a descheduled runner) do not count.
std::string deviceClockDisagreement(const std::vector<RunnerTimedCall>& calls)
{
    if (calls.size() < 3)
        return {};
    std::vector<double> excess, reported, wall;
    for (const auto& t : calls) {
        if (t.reported > t.wall * 1.01 + 2000)
            return "the candidate's process reported " + std::to_string(t.reported / 1e3)
                + " us for a call that took " + std::to_string(t.wall / 1e3) + " us from request to reply";
        excess.push_back(t.wall - (kDeviceClockFactor * t.reported + kDeviceClockAllowanceNs));
        reported.push_back(t.reported);
        wall.push_back(t.wall);
    }
    auto median = [](std::vector<double> v) {
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        return v[v.size() / 2];
    };
    if (median(excess) <= 0)
        return {};
    char msg[400];
    std::snprintf(msg, sizeof msg,
        "the candidate's GPU clock disagrees with the worker's: its process reported %.1f us per call (median), "
        "but the worker waited %.1f us per call from request to reply (median; at most %.1f x the report + "
        "%.0f us allowed)",
        median(reported) / 1e3, median(wall) / 1e3, kDeviceClockFactor, kDeviceClockAllowanceNs / 1e3);
    return msg;
}

/// The medians the device clock check compared, for timing.method.
nlohmann::json deviceClockStats(const std::vector<RunnerTimedCall>& calls)
{
    if (calls.empty())
        return nullptr;
    std::vector<double> reported, wall;
    for (const auto& t : calls) {
        reported.push_back(t.reported);
        wall.push_back(t.wall);
    }
    std::sort(reported.begin(), reported.end());
    std::sort(wall.begin(), wall.end());
    return { { "calls", calls.size() }, { "median_reported_ns", reported[reported.size() / 2] },
        { "median_wall_ns", wall[wall.size() / 2] } };
}

std::string deviceClockBound()
{
    char text[200];
    std::snprintf(text, sizeof text,
        "the worker's wall clock from request to reply bounds the runner's report: median call at most %.1f x the "
        "report + %.0f us",
        kDeviceClockFactor, kDeviceClockAllowanceNs / 1e3);
    return text;
}

} // namespace hone::backends
