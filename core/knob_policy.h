#pragma once

#include "core/knobs.h"
#include "core/move_skill.h"
#include "core/search_tree.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace hone::core {

/// The knob spaces of a session's seed sources as one finite set of points, so that the
/// tuning baselines of docs/SEARCH.md ("Knob-space policies") can index, sample and step
/// through it. A point is (source, one value per knob); sources without knobs have one point.
/// Built once per session (or once per replay table) and shared read-only.
class KnobDomain {
public:
    struct Source {
        std::string hash;
        std::string flags;
        std::vector<KnobDecl> knobs;
        size_t offset = 0; // index of its first point
        size_t count = 1;  // points before constraints
    };

    /// `sources`: distinct (source hash, flags) in the order the seeds list them; `spaceOf`
    /// gives a source's knob space (nullptr: no knobs). Throws KnobError for a space too large
    /// to enumerate (more than 100,000 points before constraints, as a sweep).
    KnobDomain(const std::vector<std::pair<std::string, std::string>>& sources,
        const std::function<const KnobSpace*(const std::string&)>& spaceOf);

    size_t size() const { return m_admissible.size(); } // points before constraints
    bool admissible(size_t p) const { return m_admissible[p] != 0; }
    const std::vector<size_t>& admissiblePoints() const { return m_points; }
    const std::vector<Source>& sources() const { return m_sources; }

    size_t sourceOf(size_t p) const;
    /// Index of knob `k`'s value at point `p`.
    int value(size_t p, size_t k) const;
    /// `p` with knob `k` set to value index `v`.
    size_t with(size_t p, size_t k, int v) const;
    KnobValues knobs(size_t p) const;
    /// The point of a node's candidate, or nullopt when it is outside the domain (another
    /// source, other flags, a value the source does not declare).
    std::optional<size_t> pointOf(const std::string& hash, const KnobValues& knobs, const std::string& flags) const;
    /// Admissible points that differ from `p` in exactly one knob (Hamming neighbours).
    std::vector<size_t> neighbours(size_t p) const;

private:
    std::vector<Source> m_sources;
    std::vector<std::vector<size_t>> m_strides; // per source, per knob
    std::vector<char> m_admissible;
    std::vector<size_t> m_points;
};

/// A candidate a knob-space policy wants evaluated next: a child of `parent` (the node the
/// move started from, or the seed of its source for a fresh sample).
struct KnobMove {
    NodeId parent = 0;
    std::string sourceHash;
    KnobValues knobs;
    std::string flags;
    std::string origin; // sample | neighbour | offspring | model
    std::string op;     // restart for a fresh point, inherit for a move from `parent`
};

struct AnnealParams {
    double t0 = 1.0;      // starting temperature (relative time difference units)
    double alpha = 0.995; // T = t0 * alpha^k after k evaluations
    double tMin = 0.001;  // the temperature never drops below this
};

struct GeneticParams {
    int population = 20;     // members per generation
    int generations = 100;   // then the GA starts over from a fresh random generation
    int mutationChance = 10; // a child mutates (one knob to a random admissible neighbour) 1 in this often
};

struct TpeParams {
    int startup = 10;        // uniform samples before the model is used (known results, seeds included)
    int candidates = 24;     // draws from l(x) per proposal; the best l(x)/g(x) is taken
    double gammaFraction = 0.1; // the good group: the best min(ceil(gammaFraction * n), gammaMax)
    int gammaMax = 25;
    double priorWeight = 1.0; // a uniform prior of this many observations in l and g
};

struct GuidedParams {
    double priorWins = 1.0;   // Beta(priorWins + wins, priorLosses + losses) per (diagnosis, acts)
    double priorLosses = 1.0;
    double minGain = 0.01;    // a one-knob move "helped" when its speedup beat the parent's by this
};

struct HybridParams {
    int startup = 6;          // results (seeds included) before the model is used
    bool climbStart = true;   // the start-up climbs from the best seed (false: uniform samples, the 2026-11-27 hybrid)
    double randomPick = 0.25; // share of the climb's neighbour picks drawn uniformly instead of by the model
    double localBonus = 0;    // a neighbour wins over the model's global candidate unless that scores this much higher (log l/g)
    TpeParams tpe {10, 24, 0.2, 25, 1.0}; // the model (its startup unused): good group the best 20%
    /// A skill that transfers (docs/SEARCH.md): its log-odds for a neighbour's move, times
    /// skillWeight, is added to the model's score of that neighbour. Null: no skill.
    std::shared_ptr<const MoveSkill> skill;
    double skillWeight = 2.0;
    int skillStartup = 3; // with a skill: start-up results (seeds included) before the model is used
};

struct KnobPolicyParams {
    AnnealParams anneal;
    GeneticParams genetic;
    TpeParams tpe;
    GuidedParams guided;
    HybridParams hybrid;
};

/// A tuning baseline that proposes points of the knob domain directly, instead of choosing a
/// tree node for the knob synthesizer to expand (docs/SEARCH.md). It never proposes a
/// candidate the tree holds. Its choices depend only on the tree, the session seed and the
/// proposal's generator `rng`, so a replay with the same seed and results retraces a session.
class KnobPolicy {
public:
    virtual ~KnobPolicy() = default;
    virtual std::string name() const = 0;
    /// The next candidate, or nullopt when the domain has no unseen admissible point left.
    virtual std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64& rng) = 0;
};

/// uniform | hillclimb | anneal | genetic | tpe | guided | hybrid. Throws std::invalid_argument for other names.
std::unique_ptr<KnobPolicy> makeKnobPolicy(const std::string& name, std::shared_ptr<const KnobDomain> domain,
    uint64_t sessionSeed, const KnobPolicyParams& params = {});

/// The default policy (docs/SEARCH.md, "The default knob search"): `hybrid` for the
/// knob synthesizer, `uct` otherwise (an LLM needs a node to expand; a sweep runs no policy).
/// `hone run` and the workbench's launcher use it when no policy is given.
std::string defaultPolicy(const std::string& synth);

/// The names makeKnobPolicy accepts.
const std::vector<std::string>& knobPolicyNames();
bool isKnobPolicy(const std::string& name);

/// Every policy `hone run --policy` and `hone replay --policy` accept: the selection policies
/// first, then the knob-space ones.
const std::vector<std::string>& allPolicyNames();

/// The domain of a tree's seeds: the distinct (source, flags) of its top-level seed and warm
/// nodes, in node order.
std::shared_ptr<const KnobDomain> domainOfSeeds(
    const SearchTree& tree, const std::function<const KnobSpace*(const std::string&)>& spaceOf);

} // namespace hone::core
