#include "app/replay_cli.h"

#include "app/cli_common.h"
#include "app/cli_errors.h"

#include "core/replay.h"
#include "core/selection_policy.h"
#include "core/store.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>

namespace hone::app {
namespace {

struct ReplayCliOptions {
    std::vector<int64_t> sessions;
    std::string policies = "uct";
    int seeds = 10;
    uint64_t firstSeed = 1;
    int budget = 0;
    bool json = false;
    // Policy parameters; unset: as the first session ran (docs/SEARCH.md, "Replay").
    std::optional<double> uctC;
    bool uctWidening = false;
    std::optional<int> evoArchive;
    std::optional<int> evoTournament;
};

std::vector<std::string> splitPolicies(const std::string& list)
{
    if (list == "all")
        return core::selectionPolicyNames();
    std::vector<std::string> out;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            out.push_back(item);
    for (const auto& p : out) {
        try {
            core::makeSelectionPolicy(p); // throws with the list of known names
        } catch (const std::exception& e) {
            throw CliError(ExitCode::Usage, std::string("--policy: ") + e.what());
        }
    }
    return out;
}

/// Median with never-reached runs counted as budget + 1, so it is an honest lower bound.
double median(std::vector<int> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string cell(double median, int budget)
{
    char buf[32];
    if (median > budget)
        std::snprintf(buf, sizeof buf, ">%d", budget);
    else
        std::snprintf(buf, sizeof buf, "%g", median);
    return buf;
}

int cmdReplay(const ReplayCliOptions& o, const std::string& storePath)
{
    auto policies = splitPolicies(o.policies);
    if (o.seeds < 1)
        throw CliError(ExitCode::Usage, "--seeds must be at least 1");
    core::Store store(storePath);
    auto table = core::ReplayTable::fromStore(store, o.sessions);
    const int budget = o.budget > 0 ? o.budget : static_cast<int>(table.size());
    nlohmann::json out = {{"sessions", o.sessions}, {"recorded", table.size()}, {"table_best", table.bestSpeedup()},
        {"budget", budget}, {"unrecorded", "nearest recorded assignment of the same source"},
        {"policies", nlohmann::json::array()}};
    if (!o.json)
        std::printf("replay of %zu recorded candidates, best %.3fx, budget %d evaluations; a candidate never "
                    "recorded gets the result of the nearest recorded one of its source\n",
            table.size(), table.bestSpeedup(), budget);
    for (const auto& policy : policies) {
        std::vector<int> toBest, to5;
        nlohmann::json runs = nlohmann::json::array();
        if (!o.json)
            std::printf("\n%-13s %6s %8s %6s %8s %6s\n", policy.c_str(), "seed", "to-best", "to-5%", "best", "exact");
        for (int i = 0; i < o.seeds; ++i) {
            core::ReplayOptions ro;
            ro.policy = policy;
            ro.seed = o.firstSeed + static_cast<uint64_t>(i);
            ro.budget = budget;
            if (o.uctC || o.uctWidening) {
                core::UctParams u = o.uctWidening ? core::UctParams::legacy() : table.recording().uct;
                if (o.uctC)
                    u.exploration = *o.uctC;
                ro.uct = u;
            }
            if (o.evoArchive || o.evoTournament) {
                core::EvolutionParams e = table.recording().evolution;
                e.archiveSize = o.evoArchive.value_or(e.archiveSize);
                e.tournament = o.evoTournament.value_or(e.tournament);
                ro.evolution = e;
            }
            auto r = core::replaySearch(table, ro);
            toBest.push_back(r.toBest.value_or(budget + 1));
            to5.push_back(r.toWithin5.value_or(budget + 1));
            runs.push_back({{"seed", ro.seed}, {"evaluations", r.speedups.size()}, {"best", r.best},
                {"to_best", r.toBest ? nlohmann::json(*r.toBest) : nlohmann::json()},
                {"to_within_5pct", r.toWithin5 ? nlohmann::json(*r.toWithin5) : nlohmann::json()},
                {"exact_hits", r.exactHits}});
            if (!o.json)
                std::printf("%-13s %6llu %8s %6s %7.3fx %3d/%zu\n", "", static_cast<unsigned long long>(ro.seed),
                    r.toBest ? std::to_string(*r.toBest).c_str() : "-",
                    r.toWithin5 ? std::to_string(*r.toWithin5).c_str() : "-", r.best, r.exactHits,
                    r.speedups.size());
        }
        double mb = median(toBest), m5 = median(to5);
        out["policies"].push_back({{"policy", policy}, {"median_to_best", mb}, {"median_to_within_5pct", m5},
            {"never_reached_counts_as", budget + 1}, {"runs", runs}});
        if (!o.json)
            std::printf("%-13s median over %d seeds: to-best %s, to-5%% %s\n", policy.c_str(), o.seeds,
                cell(mb, budget).c_str(), cell(m5, budget).c_str());
    }
    if (o.json)
        std::printf("%s\n", out.dump(2).c_str());
    return 0;
}

} // namespace

void addReplayCommand(CLI::App& app, const std::string& storePath)
{
    auto o = std::make_shared<ReplayCliOptions>();
    auto* cmd = app.add_subcommand("replay",
        "run selection policies against a session's recorded evaluations (no device) and report "
        "evaluations to the best kernel and to within 5% of it");
    cmd->add_option("session", o->sessions, "session ids of one problem; their evaluations form one table")
        ->required();
    cmd->add_option("--policy", o->policies, "uct, evolutionary, greedy, random, a comma-separated list, or all");
    cmd->add_option("--seeds", o->seeds, "replays per policy, seeds S, S+1, ...")->check(CLI::Range(1, 100000));
    cmd->add_option("--seed", o->firstSeed, "first seed");
    cmd->add_option("--budget", o->budget, "evaluations per replay, seeds included (default: the table's size)")
        ->check(CLI::Range(1, 1000000));
    cmd->add_flag("--json", o->json, "print the results as JSON");
    cmd->add_option("--uct-c", o->uctC, "UCT exploration constant (default: as the session ran)")
        ->check(CLI::Range(0.0, 100.0));
    cmd->add_flag("--uct-widening", o->uctWidening,
        "UCT with progressive widening and raw rewards, as before the self arm (c 0.5 unless --uct-c)");
    cmd->add_option("--evo-archive", o->evoArchive, "evolutionary: elites kept")->check(CLI::Range(1, 1000));
    cmd->add_option("--evo-tournament", o->evoTournament, "evolutionary: entrants per parent choice")
        ->check(CLI::Range(1, 1000));
    const std::string* path = &storePath; // bound to --store, filled in by the time this runs
    cmd->callback([o, path] {
        int rc = 0;
        try {
            requireExistingStore(*path);
            rc = cmdReplay(*o, *path);
        } catch (const std::exception& e) {
            rc = reportError(e);
        }
        std::fflush(stdout);
        if (rc != 0)
            throw CLI::RuntimeError(rc);
    });
}

} // namespace hone::app
