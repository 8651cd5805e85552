#include "ncu_profile.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace hone::backends {
namespace {

constexpr const char* kStalls[] = { "long_scoreboard", "short_scoreboard", "barrier", "membar", "mio_throttle",
    "lg_throttle", "math_pipe_throttle", "tex_throttle", "wait", "not_selected", "no_instruction", "branch_resolving",
    "dispatch_stall", "drain", "imc_miss", "sleeping", "gmma", "misc" };

std::string stallMetric(const std::string& reason)
{
    return "smsp__warp_issue_stalled_" + reason + "_per_warp_active.pct";
}

/// One CSV record; quotes may hold commas, "" is a quote.
std::vector<std::string> splitCsv(const std::string& line)
{
    std::vector<std::string> out;
    std::string cur;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                cur += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cur += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            out.push_back(cur);
            cur.clear();
        } else if (c != '\r') {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

double toNumber(const std::string& s)
{
    std::string t;
    for (char c : s)
        if (c != ',' && c != ' ')
            t += c;
    try {
        size_t used = 0;
        const double v = std::stod(t, &used);
        return used ? v : 0.0;
    } catch (const std::exception&) {
        return 0.0;
    }
}

std::string pct(double v)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.0f%%", v);
    return b;
}

} // namespace

const std::vector<std::string>& ncuMetrics()
{
    static const std::vector<std::string> metrics = [] {
        std::vector<std::string> m = { "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm__warps_active.avg.pct_of_peak_sustained_active",
            "gpu__time_duration.sum", "dram__bytes.sum" };
        for (const char* s : kStalls)
            m.push_back(stallMetric(s));
        return m;
    }();
    return metrics;
}

nlohmann::json parseNcuCsv(const std::string& text)
{
    std::istringstream in(text);
    std::string line;
    std::vector<std::string> header;
    std::vector<std::string> units;
    nlohmann::json kernels = nlohmann::json::array();
    std::string firstNoise;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        if (line[0] != '"') {
            if (firstNoise.empty() && line.find("==ERROR==") != std::string::npos)
                firstNoise = line;
            continue;
        }
        const std::vector<std::string> cells = splitCsv(line);
        if (header.empty()) {
            if (std::find(cells.begin(), cells.end(), "Kernel Name") != cells.end())
                header = cells;
            continue;
        }
        if (cells.size() != header.size())
            continue;
        auto at = [&](const std::string& col) -> std::string {
            const auto it = std::find(header.begin(), header.end(), col);
            return it == header.end() ? std::string() : cells[static_cast<size_t>(it - header.begin())];
        };
        // The units row repeats the header's width with empty identity columns.
        if (at("ID").empty() || at("Kernel Name").empty()) {
            if (units.empty())
                units = cells;
            continue;
        }
        // ncu scales byte counts to the unit its units row names (byte, Kbyte, Mbyte, ...).
        auto bytes = [&](const std::string& col) {
            const auto it = std::find(header.begin(), header.end(), col);
            const size_t i = static_cast<size_t>(it - header.begin());
            const std::string unit = i < units.size() ? units[i] : std::string();
            const double scale = unit.rfind("Kbyte", 0) == 0 ? 1e3
                : unit.rfind("Mbyte", 0) == 0                ? 1e6
                : unit.rfind("Gbyte", 0) == 0                ? 1e9
                : unit.rfind("Tbyte", 0) == 0                ? 1e12
                                                             : 1.0;
            return toNumber(at(col)) * scale;
        };
        nlohmann::json k = { { "name", at("Kernel Name") }, { "grid", at("Grid Size") }, { "block", at("Block Size") },
            { "dram_pct", toNumber(at("dram__throughput.avg.pct_of_peak_sustained_elapsed")) },
            { "sm_pct", toNumber(at("sm__throughput.avg.pct_of_peak_sustained_elapsed")) },
            { "achieved_occupancy_pct", toNumber(at("sm__warps_active.avg.pct_of_peak_sustained_active")) },
            { "duration_ns", toNumber(at("gpu__time_duration.sum")) } };
        if (!at("dram__bytes.sum").empty())
            k["dram_bytes"] = bytes("dram__bytes.sum");
        std::vector<std::pair<double, std::string>> stalls;
        for (const char* s : kStalls) {
            const std::string v = at(stallMetric(s));
            if (!v.empty())
                stalls.emplace_back(toNumber(v), s);
        }
        std::sort(stalls.begin(), stalls.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        nlohmann::json top = nlohmann::json::array();
        for (size_t i = 0; i < stalls.size() && i < 3; ++i)
            top.push_back({ { "reason", stalls[i].second }, { "pct", stalls[i].first } });
        k["stalls"] = top;
        kernels.push_back(k);
    }
    if (kernels.empty())
        throw std::runtime_error("ncu reported no kernel"
            + (firstNoise.empty() ? std::string() : std::string(": ") + firstNoise));
    // The headline: the longest kernel.
    size_t main = 0;
    for (size_t i = 1; i < kernels.size(); ++i)
        if (kernels[i]["duration_ns"].get<double>() > kernels[main]["duration_ns"].get<double>())
            main = i;
    nlohmann::json out = { { "tool", "ncu" }, { "kernels", kernels }, { "main", kernels[main] } };
    // The DRAM traffic of the whole call (every kernel of it): the measured roofline intensity.
    double dram = 0;
    bool measured = false;
    for (const auto& k : kernels)
        if (k.contains("dram_bytes")) {
            dram += k["dram_bytes"].get<double>();
            measured = true;
        }
    if (measured)
        out["dram_bytes"] = dram;
    return out;
}

std::string ncuEvidence(const nlohmann::json& profile)
{
    if (!profile.is_object() || !profile.contains("main"))
        return {};
    const auto& k = profile["main"];
    std::string s = "Nsight Compute on " + k.value("name", std::string("?")) + ": DRAM throughput "
        + pct(k.value("dram_pct", 0.0)) + " of peak, SM throughput " + pct(k.value("sm_pct", 0.0))
        + ", achieved occupancy " + pct(k.value("achieved_occupancy_pct", 0.0));
    if (k.contains("stalls") && !k["stalls"].empty()) {
        s += "; top stalls (cycles per warp):";
        for (const auto& st : k["stalls"])
            s += " " + st.value("reason", std::string()) + " " + pct(st.value("pct", 0.0));
    }
    return s;
}

} // namespace hone::backends
