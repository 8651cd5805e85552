#include "app/replay_cli.h"

#include "app/cli_common.h"
#include "app/cli_errors.h"

#include "core/knob_policy.h"
#include "core/replay.h"
#include "core/selection_policy.h"
#include "core/store.h"
#include "knowledge/skills.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

namespace hone::app {
namespace {

struct ReplayCliOptions {
    std::vector<int64_t> sessions;
    std::string policies = "uct";
    int seeds = 1000;
    uint64_t firstSeed = 1;
    int budget = 0;
    bool json = false;
    bool runs = false;
    bool toBest = false;
    // Policy parameters; unset: as the first session ran (docs/SEARCH.md, "Replay").
    std::optional<double> uctC;
    bool uctWidening = false;
    std::optional<int> evoArchive;
    std::optional<int> evoTournament;
    std::string actsFrom; // a problem or seeds folder whose hone:knob acts= the recorded sources adopt
    std::string skill;       // a move skill (JSON) the hybrid policy applies
    std::string learnMoves;  // write the move skill learnt from the table here
    std::optional<double> skillWeight;
    std::optional<int> skillStartup;
    std::string hybridStart;               // climb | sample: hybrid's start-up (default climb)
    std::optional<double> hybridRandomPick; // hybrid's share of model-free neighbour picks (default 0.25)
};

/// The knob spaces of the seed files in `dir` (its seeds/ folder when it has one), by file name.
std::map<std::string, core::KnobSpace> seedSpaces(const std::string& dir)
{
    namespace fs = std::filesystem;
    fs::path folder = fs::is_directory(fs::path(dir) / "seeds") ? fs::path(dir) / "seeds" : fs::path(dir);
    if (!fs::is_directory(folder))
        throw CliError(ExitCode::Usage, "--acts-from: " + dir + " is not a folder; expected a problem folder or its seeds/");
    std::map<std::string, core::KnobSpace> out;
    for (const auto& entry : fs::directory_iterator(folder)) {
        const std::string ext = entry.path().extension().string();
        if (!entry.is_regular_file() || (ext != ".cu" && ext != ".cpp" && ext != ".hip"))
            continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        out[entry.path().filename().string()] = core::parseKnobSpace(text.str(), entry.path().string());
    }
    return out;
}

std::vector<std::string> splitPolicies(const std::string& list)
{
    if (list == "all")
        return core::allPolicyNames();
    std::vector<std::string> out;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            out.push_back(item);
    const auto& known = core::allPolicyNames();
    for (const auto& p : out)
        if (std::find(known.begin(), known.end(), p) == known.end()) {
            std::string names;
            for (const auto& k : known)
                names += (names.empty() ? "" : ", ") + k;
            throw CliError(ExitCode::Usage, "--policy: unknown policy '" + p + "'; expected " + names + " or all");
        }
    return out;
}

std::string cell(double v, int budget)
{
    char buf[32];
    if (v > budget)
        std::snprintf(buf, sizeof buf, ">%d", budget);
    else
        std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

nlohmann::json statsJson(const core::ReplayStats& st)
{
    return {{"median", st.median}, {"p75", st.p75}, {"p90", st.p90}, {"median_ci95", {st.medianLow, st.medianHigh}},
        {"reached", st.reached}};
}

int cmdReplay(const ReplayCliOptions& o, const std::string& storePath)
{
    auto policies = splitPolicies(o.policies);
    if (o.seeds < 1)
        throw CliError(ExitCode::Usage, "--seeds must be at least 1");
    core::Store store(storePath);
    auto table = core::ReplayTable::fromStore(store, o.sessions);
    const int adopted = o.actsFrom.empty() ? 0 : table.adoptActs(seedSpaces(o.actsFrom));
    const auto [knobCount, withActs] = table.actsCoverage();
    if (!o.learnMoves.empty()) {
        core::MoveSkill learnt = core::learnMoveSkill(table);
        const auto dump = knowledge::loadSession(store, o.sessions.front());
        learnt.arch = knowledge::sessionArch(dump);
        learnt.learntFrom = dump.problem + ", session " + std::to_string(o.sessions.front()) + " of " + storePath;
        std::ofstream f(o.learnMoves, std::ios::binary);
        f << learnt.toJson().dump(2) << "\n";
        if (!f)
            throw CliError(ExitCode::Input, "--learn-moves: cannot write " + o.learnMoves);
        if (!o.json) {
            std::printf("move skill learnt from %s (%s), %zu kinds of move, written to %s:\n", learnt.learntFrom.c_str(),
                learnt.arch.c_str(), learnt.stats.size(), o.learnMoves.c_str());
            for (const auto& line : learnt.statements())
                std::printf("  %s\n", line.c_str());
            std::printf("\n");
        }
    }
    std::shared_ptr<const core::MoveSkill> skill;
    if (!o.skill.empty()) {
        std::ifstream f(o.skill, std::ios::binary);
        if (!f)
            throw CliError(ExitCode::Input, "--skill: cannot read " + o.skill);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(f);
        } catch (const nlohmann::json::exception& e) {
            throw CliError(ExitCode::Usage, "--skill: " + o.skill + " is not JSON (" + e.what() + ")");
        }
        try {
            skill = std::make_shared<const core::MoveSkill>(core::MoveSkill::fromJson(j, o.skill));
        } catch (const std::runtime_error& e) {
            throw CliError(ExitCode::Usage, std::string("--skill: ") + e.what());
        }
    }
    const int budget = o.budget > 0 ? o.budget : static_cast<int>(table.size());
    const auto [fewest, most] = table.timingsPerCandidate();
    const std::string noise = most > 1
        ? "each evaluation draws one of the candidate's " + std::to_string(fewest) + "-" + std::to_string(most)
            + " recorded timings"
        : "one timing per candidate: replay is noise-free";
    nlohmann::json out = {{"sessions", o.sessions}, {"recorded", table.size()}, {"table_best", table.bestSpeedup()},
        {"budget", budget}, {"seeds", o.seeds}, {"first_seed", o.firstSeed},
        {"timings_per_candidate", {fewest, most}}, {"noise", noise},
        {"unrecorded", "nearest recorded assignment of the same source"},
        {"never_reached_counts_as", budget + 1},
        {"acts", {{"knobs", knobCount}, {"declared", withActs}, {"adopted", adopted}}},
        {"policies", nlohmann::json::array()}};
    if (!o.json)
        std::printf("replay of %zu recorded candidates, best %.3fx, budget %d evaluations, seeds %llu-%llu; %s; a "
                    "candidate never recorded gets the result of the nearest recorded one of its source\n"
                    "evaluations (seeds included) until a candidate within 5%% of the best; never = %d\n\n"
                    "%-13s %8s %15s %6s %6s %8s %8s %7s\n",
            table.size(), table.bestSpeedup(), budget, static_cast<unsigned long long>(o.firstSeed),
            static_cast<unsigned long long>(o.firstSeed + static_cast<uint64_t>(o.seeds) - 1), noise.c_str(), budget + 1,
            "policy", "median", "95% CI", "p75", "p90", "reached", "to-best", "exact");
    if (!o.json && (withActs > 0 || !o.actsFrom.empty()))
        std::printf("(%d of the recorded sources' %d knobs declare acts=, %d of them taken from %s)\n", withActs,
            knobCount, adopted, o.actsFrom.empty() ? "no folder" : o.actsFrom.c_str());
    std::optional<double> uniformMedian;
    for (const auto& policy : policies) {
        std::vector<int> toBest, to5;
        long long exact = 0, evaluated = 0;
        nlohmann::json runs = nlohmann::json::array();
        for (int i = 0; i < o.seeds; ++i) {
            core::ReplayOptions ro;
            ro.policy = policy;
            ro.seed = o.firstSeed + static_cast<uint64_t>(i);
            ro.budget = budget;
            // The statistics need no evaluation past the target (the best, with --to-best).
            ro.stopAtBest = o.toBest;
            ro.stopAtWithin5 = !o.toBest;
            ro.knobPolicy.hybrid.skill = skill;
            if (o.skillWeight)
                ro.knobPolicy.hybrid.skillWeight = *o.skillWeight;
            if (o.skillStartup)
                ro.knobPolicy.hybrid.skillStartup = *o.skillStartup;
            if (!o.hybridStart.empty())
                ro.knobPolicy.hybrid.climbStart = o.hybridStart == "climb";
            if (o.hybridRandomPick)
                ro.knobPolicy.hybrid.randomPick = *o.hybridRandomPick;
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
            exact += r.exactHits;
            evaluated += static_cast<long long>(r.speedups.size());
            if (o.runs) {
                runs.push_back({{"seed", ro.seed}, {"evaluations", r.speedups.size()}, {"best", r.best},
                    {"to_best", r.toBest ? nlohmann::json(*r.toBest) : nlohmann::json()},
                    {"to_within_5pct", r.toWithin5 ? nlohmann::json(*r.toWithin5) : nlohmann::json()},
                    {"exact_hits", r.exactHits}});
                if (!o.json)
                    std::printf("%-13s seed %llu: to-best %s, to-5%% %s, best %.3fx, exact %d/%zu\n", policy.c_str(),
                        static_cast<unsigned long long>(ro.seed), r.toBest ? std::to_string(*r.toBest).c_str() : "-",
                        r.toWithin5 ? std::to_string(*r.toWithin5).c_str() : "-", r.best, r.exactHits,
                        r.speedups.size());
            }
        }
        const core::ReplayStats s5 = core::replayStats(to5, budget);
        const core::ReplayStats sb = core::replayStats(toBest, budget);
        if (policy == "uniform")
            uniformMedian = s5.median;
        const double exactShare = evaluated > 0 ? static_cast<double>(exact) / static_cast<double>(evaluated) : 0.0;
        nlohmann::json pj = {{"policy", policy}, {"to_within_5pct", statsJson(s5)},
            {"median_to_within_5pct", s5.median}, {"exact_share", exactShare}};
        if (o.toBest) {
            pj["to_best"] = statsJson(sb);
            pj["median_to_best"] = sb.median;
        }
        if (o.runs)
            pj["runs"] = runs;
        out["policies"].push_back(pj);
        if (!o.json) {
            std::string ci = "[" + cell(s5.medianLow, budget) + ", " + cell(s5.medianHigh, budget) + "]";
            std::printf("%-13s %8s %15s %6s %6s %7.1f%% %8s %6.1f%%\n", policy.c_str(), cell(s5.median, budget).c_str(),
                ci.c_str(), cell(s5.p75, budget).c_str(), cell(s5.p90, budget).c_str(), 100.0 * s5.reached,
                o.toBest ? cell(sb.median, budget).c_str() : "-", 100.0 * exactShare);
        }
    }
    if (uniformMedian) {
        std::string line;
        for (auto& pj : out["policies"]) {
            const double m = pj["median_to_within_5pct"].get<double>();
            pj["uniform_over_this"] = m > 0 ? *uniformMedian / m : 0.0;
            char buf[96];
            std::snprintf(buf, sizeof buf, "%s%s %.2f", line.empty() ? "" : ", ", pj["policy"].get<std::string>().c_str(),
                pj["uniform_over_this"].get<double>());
            line += buf;
        }
        if (!o.json)
            std::printf("\nuniform's median over each policy's (how many times fewer evaluations): %s\n", line.c_str());
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
    cmd->add_option("--policy", o->policies,
        "uct, evolutionary, greedy, random, uniform, hillclimb, anneal, genetic, tpe, guided, hybrid, a comma-separated list, or all");
    cmd->add_option("--acts-from", o->actsFrom,
        "a problem (or seeds) folder: recorded sources of the same file name take its knobs' acts= declarations "
        "(for the guided policy on recordings made before they existed)");
    cmd->add_option("--skill", o->skill,
        "a move skill (JSON from --learn-moves) that orders the hybrid policy's moves (docs/SEARCH.md, \"Skills that transfer\")");
    cmd->add_option("--skill-weight", o->skillWeight, "weight of the skill's log-odds in the hybrid's neighbour score (default 2)");
    cmd->add_option("--skill-startup", o->skillStartup,
        "with --skill: start-up results (seeds included) before the hybrid's model is used (default 3)");
    cmd->add_option("--hybrid-start", o->hybridStart,
           "hybrid's start-up: climb from the best seed (default) or sample uniformly (the hybrid of 2026-11-27)")
        ->check(CLI::IsMember({"climb", "sample"}));
    cmd->add_option("--hybrid-random-pick", o->hybridRandomPick,
           "hybrid: share of its neighbour picks made without the model (default 0.25; 0: the hybrid of 2026-11-27)")
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--learn-moves", o->learnMoves,
        "write the move skill learnt from the table's one-knob pairs (after --acts-from) to this file");
    cmd->add_option("--seeds", o->seeds, "replays per policy, seeds S, S+1, ... (default 1000)")
        ->check(CLI::Range(1, 100000));
    cmd->add_flag("--runs", o->runs, "also print (or list in --json) every replay's numbers");
    cmd->add_flag("--to-best", o->toBest,
        "also count evaluations to the best candidate itself (each replay runs until it, slower)");
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
