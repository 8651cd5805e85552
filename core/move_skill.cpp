// Skills that transfer: statistics of one-knob moves under a diagnosis (docs/SEARCH.md).

#include "core/move_skill.h"

#include "core/knob_policy.h"
#include "core/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace hone::core {

double MoveSkill::logOdds(
    const std::string& bound, const std::string& knob, const std::string& acts, int direction, double minTrials) const
{
    // Four levels, most specific first; the first with enough moves decides.
    for (int level = 0; level < 4; ++level) {
        const bool anyBound = level >= 2;
        const bool byName = level % 2 == 0;
        if (!byName && acts.empty())
            continue;
        double wins = 0, trials = 0;
        for (const Stat& s : stats) {
            if (s.direction != direction || (!anyBound && s.bound != bound))
                continue;
            if (byName ? s.knob != knob : s.acts != acts)
                continue;
            wins += s.wins;
            trials += s.trials;
        }
        if (trials >= minTrials) {
            const double rate = (wins + 1) / (trials + 2);
            return std::log(rate / (1 - rate));
        }
    }
    return 0;
}

std::vector<std::string> MoveSkill::statements(size_t limit) const
{
    std::vector<const Stat*> order;
    for (const Stat& s : stats)
        if (s.trials >= 4)
            order.push_back(&s);
    auto strength = [](const Stat* s) { return std::abs((s->wins + 1) / (s->trials + 2) - 0.5) * std::sqrt(s->trials); };
    std::stable_sort(order.begin(), order.end(), [&](const Stat* a, const Stat* b) { return strength(a) > strength(b); });
    std::vector<std::string> out;
    for (const Stat* s : order) {
        if (out.size() >= limit)
            break;
        char buf[256];
        const std::string knob = s->acts.empty() ? s->knob : s->knob + " (" + s->acts + ")";
        std::snprintf(buf, sizeof buf, "%s%s%s-bound: %s %s gained in %.0f%% of %.0f moves", arch.empty() ? "" : "on ",
            arch.empty() ? "" : (arch + ", ").c_str(), s->bound.empty() ? "unknown" : s->bound.c_str(), knob.c_str(),
            s->direction > 0 ? "up" : "down", 100.0 * s->wins / s->trials, s->trials);
        out.push_back(buf);
    }
    return out;
}

nlohmann::json MoveSkill::toJson() const
{
    nlohmann::json moves = nlohmann::json::array();
    for (const Stat& s : stats)
        moves.push_back({{"bound", s.bound}, {"knob", s.knob}, {"acts", s.acts}, {"direction", s.direction},
            {"wins", s.wins}, {"trials", s.trials}});
    return {{"kind", "move_skill"}, {"arch", arch}, {"learnt_from", learntFrom}, {"min_gain", minGain},
        {"moves", moves}, {"statements", statements()}};
}

MoveSkill MoveSkill::fromJson(const nlohmann::json& j, const std::string& name)
{
    if (!j.is_object() || j.value("kind", std::string()) != "move_skill" || !j.contains("moves")
        || !j["moves"].is_array())
        throw std::runtime_error(name + ": not a move skill (expected an object with \"kind\": \"move_skill\" and "
                                        "\"moves\"; write one with hone replay --learn-moves)");
    MoveSkill m;
    m.arch = j.value("arch", std::string());
    m.learntFrom = j.value("learnt_from", std::string());
    m.minGain = j.value("min_gain", 0.01);
    try {
        for (const auto& s : j["moves"])
            m.stats.push_back({s.at("bound").get<std::string>(), s.at("knob").get<std::string>(),
                s.at("acts").get<std::string>(), s.at("direction").get<int>(), s.at("wins").get<double>(),
                s.at("trials").get<double>()});
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(name + ": a move lacks a field or has the wrong type (" + e.what() + ")");
    }
    return m;
}

MoveSkill learnMoveSkill(const ReplayTable& table, double minGain)
{
    const auto domain = table.domain();
    const auto& sources = domain->sources();
    // Typical outcomes of the points recorded exactly.
    std::map<size_t, ReplayTable::Outcome> known;
    for (size_t p : domain->admissiblePoints()) {
        const auto& src = sources[domain->sourceOf(p)];
        bool exact = false;
        auto o = table.lookup(src.hash, domain->knobs(p), src.flags, &exact);
        if (exact)
            known[p] = o;
    }
    std::map<std::tuple<std::string, std::string, int>, MoveSkill::Stat> acc; // (bound, knob, direction)
    for (const auto& [p, from] : known) {
        if (!from.ok)
            continue;
        const auto& src = sources[domain->sourceOf(p)];
        for (size_t q : domain->neighbours(p)) {
            auto to = known.find(q);
            if (to == known.end())
                continue;
            size_t k = 0;
            while (k < src.knobs.size() && domain->value(p, k) == domain->value(q, k))
                ++k;
            if (k == src.knobs.size())
                continue;
            const int dir = domain->value(q, k) > domain->value(p, k) ? 1 : -1;
            MoveSkill::Stat& s = acc[{from.bound, src.knobs[k].name, dir}];
            s.bound = from.bound;
            s.knob = src.knobs[k].name;
            s.acts = src.knobs[k].acts;
            s.direction = dir;
            s.trials += 1;
            if (to->second.ok && to->second.speedup > from.speedup * (1 + minGain))
                s.wins += 1;
        }
    }
    MoveSkill m;
    m.minGain = minGain;
    for (auto& [key, s] : acc)
        m.stats.push_back(s);
    return m;
}

} // namespace hone::core
