// Live move skills: learnt from the store's history when a session starts (docs/SEARCH.md).

#include "knowledge/move_history.h"

#include "core/replay.h"
#include "core/store.h"
#include "knowledge/skills.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>

namespace hone::knowledge {

namespace {

/// The kind of device: "cuda: NVIDIA H100 80GB HBM3" of "cuda: NVIDIA H100 80GB HBM3 [GPU-...]",
/// so that the cards of one host count as one machine.
std::string machineOf(const std::string& device)
{
    return device.substr(0, device.find(" ["));
}

} // namespace

MoveHistorySkill learnMoveHistory(const core::Store& store, const MoveHistoryQuery& q)
{
    MoveHistorySkill out;
    // Newest first, so that a long history keeps its most recent sessions.
    auto sessions = store.sessions();
    std::sort(sessions.begin(), sessions.end(), [](const auto& a, const auto& b) { return a.id > b.id; });
    std::map<std::string, std::vector<int64_t>> byProblem; // problem hash -> sessions
    std::map<std::string, std::string> names;              // problem hash -> name
    int taken = 0, read = 0;
    for (const auto& rec : sessions) {
        // A long history of other problems costs a read per session: look at the newest only.
        if (taken >= q.maxSessions || read >= 4 * q.maxSessions)
            break;
        if (rec.target != q.target)
            continue;
        ++read;
        SessionDump dump;
        try {
            dump = loadSession(store, rec.id);
        } catch (const std::exception&) {
            continue;
        }
        if (dump.evaluations.empty() || sessionArch(dump) != q.arch || (q.sameFamily && dump.family != q.family)
            || (!q.device.empty() && machineOf(dump.device) != machineOf(q.device)))
            continue;
        byProblem[rec.problemHash].push_back(rec.id);
        names[rec.problemHash] = rec.problemName;
        ++taken;
    }
    // One table per problem (a replay table holds one problem), pooled by kind of move.
    std::map<std::tuple<std::string, std::string, std::string, int>, core::MoveSkill::Stat> pooled;
    std::vector<std::string> used; // "1, 3 (scale)"
    for (auto& [hash, ids] : byProblem) {
        std::sort(ids.begin(), ids.end());
        core::MoveSkill learnt;
        try {
            learnt = core::learnMoveSkill(core::ReplayTable::fromStore(store, ids));
        } catch (const std::exception&) {
            continue; // nothing evaluated, or a space too large to enumerate
        }
        if (learnt.empty())
            continue;
        for (const auto& s : learnt.stats) {
            auto& p = pooled[{s.bound, s.knob, s.acts, s.direction}];
            if (p.trials == 0)
                p = s;
            else {
                p.wins += s.wins;
                p.trials += s.trials;
            }
        }
        std::string list;
        for (int64_t id : ids) {
            list += (list.empty() ? "" : ", ") + std::to_string(id);
            out.sessions.push_back(id);
        }
        used.push_back(list + " (" + names[hash] + ")");
    }
    std::sort(out.sessions.begin(), out.sessions.end());
    std::string where = (q.sameFamily ? "family " + q.family + " on " : std::string("on ")) + q.arch;
    if (!q.device.empty())
        where += " (" + machineOf(q.device) + ")";
    if (pooled.empty()) {
        out.note = "none: no earlier session of this store (" + where + ") has one-knob moves to learn from";
        return out;
    }
    auto skill = std::make_shared<core::MoveSkill>();
    skill->arch = q.arch;
    std::string list;
    for (const auto& u : used)
        list += (list.empty() ? "" : "; ") + u;
    skill->learntFrom = "sessions " + list;
    for (auto& [key, s] : pooled)
        skill->stats.push_back(s);
    out.from = "this store's sessions " + list + ", " + where;
    out.skill = std::move(skill);
    return out;
}

core::MoveSkill readMoveSkillFile(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw std::runtime_error("--move-skill: cannot read " + path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error("--move-skill: " + path + " is not JSON (" + e.what() + ")");
    }
    // Name the field a user has to fix, before MoveSkill::fromJson reads the moves.
    if (j.is_object() && j.contains("moves") && j["moves"].is_array()) {
        const auto& moves = j["moves"];
        for (size_t i = 0; i < moves.size(); ++i) {
            const std::string at = path + ": moves[" + std::to_string(i) + "]";
            if (!moves[i].is_object())
                throw std::runtime_error("--move-skill: " + at + " is not an object");
            for (const char* field : {"bound", "knob", "acts"})
                if (!moves[i].contains(field) || !moves[i][field].is_string())
                    throw std::runtime_error("--move-skill: " + at + "." + field
                        + (moves[i].contains(field) ? " is not a string" : " is missing"));
            for (const char* field : {"direction", "wins", "trials"})
                if (!moves[i].contains(field) || !moves[i][field].is_number())
                    throw std::runtime_error("--move-skill: " + at + "." + field
                        + (moves[i].contains(field) ? " is not a number" : " is missing"));
            const int dir = moves[i]["direction"].get<int>();
            if (dir != 1 && dir != -1)
                throw std::runtime_error("--move-skill: " + at + ".direction is " + std::to_string(dir)
                    + "; expected 1 (up) or -1 (down)");
        }
    }
    try {
        return core::MoveSkill::fromJson(j, path);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string("--move-skill: ") + e.what());
    }
}

std::string describeMoveSkill(const core::MoveSkill& skill, const std::string& from)
{
    double moves = 0;
    for (const auto& s : skill.stats)
        moves += s.trials;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.0f moves (%zu kinds)", moves, skill.stats.size());
    std::string line = std::string(buf) + " from " + from;
    const auto strongest = skill.statements(1);
    if (!strongest.empty())
        line += "; strongest: " + strongest.front();
    return line;
}

} // namespace hone::knowledge
