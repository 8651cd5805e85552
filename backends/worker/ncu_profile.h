#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

/// The optional Nsight Compute stage: one fixed metric set, run on one call of the candidate
/// in a child worker (`hone-worker --profile-once REQUEST`), parsed into structured metrics.
namespace hone::backends {

/// The metrics asked of ncu: DRAM and SM throughput, achieved occupancy, and the stall
/// reasons (per warp active) that the top-3 list is drawn from.
const std::vector<std::string>& ncuMetrics();

/// Parses `ncu --csv --page raw` output: per kernel {name, grid, block, dram_pct, sm_pct,
/// achieved_occupancy_pct, stalls: [{reason, pct}] (top 3)}. Throws std::runtime_error with the
/// first line of ncu's complaint when there is no table.
nlohmann::json parseNcuCsv(const std::string& text);

/// One sentence for the diagnosis evidence: "Nsight Compute: DRAM 81% of peak, SM 23%, ...".
std::string ncuEvidence(const nlohmann::json& profile);

} // namespace hone::backends
