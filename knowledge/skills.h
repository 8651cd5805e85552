#pragma once

#include "core/knob_synth.h"
#include "core/knobs.h"
#include "core/prompt_builder.h"
#include "knowledge/document.h"
#include "knowledge/retrieval.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hone::core {
class Store;
}

namespace hone::knowledge {

class KnowledgeBase;
struct AddResult;

/// What a skill needs to know about one stored session: its sources, nodes and evaluations.
/// Loaded from the store, or from JSON (a recorded session for tests and replays).
struct SessionDump {
    struct Source {
        std::string name;
        std::string hash;
        std::string text;
    };
    struct Node {
        int64_t id = 0;
        int64_t parent = -1;
        int64_t seq = 0;
        std::string source; // source name; empty for the root
        core::KnobValues knobs;
        std::string origin;
    };
    struct Evaluation {
        int64_t node = 0;
        bool ok = false;
        double speedup = 0;
        double medianNs = 0;
        std::string bound;
        std::string evidence;
        std::string failureKind;
    };
    int64_t session = 0;
    std::string problem;
    std::string family;
    std::string target;
    std::string device;
    std::string cpuFlags; // the worker's CPU feature flags, when it reported them
    std::vector<Source> sources;
    std::vector<Node> nodes; // in proposal order
    std::vector<Evaluation> evaluations;

    const Source* source(const std::string& name) const;
    const Evaluation* evaluation(int64_t node) const;
    const Node* node(int64_t id) const;

    nlohmann::json toJson() const;
    /// Throws std::runtime_error naming `name` when a field is missing or has the wrong type.
    static SessionDump fromJson(const nlohmann::json& j, const std::string& name);
};

/// Reads a session from the store. Throws when it does not exist.
SessionDump loadSession(const core::Store& store, int64_t session);

/// A lesson from one session that beat its baseline: where it applies, what limited the
/// baseline, what changed and what it gained.
struct Skill {
    struct Config {
        std::string source;
        core::KnobValues knobs;
        double speedup = 0;
    };
    std::string problem;
    std::string family;
    std::string arch;
    std::string platform;
    int64_t session = 0;
    std::string device;
    std::string baselineSource;
    std::string boundBefore;
    std::string evidenceBefore;
    std::string boundAfter;
    std::string evidenceAfter;
    std::string bestSource;
    core::KnobValues seedKnobs; // where the best source started
    core::KnobValues bestKnobs;
    double gain = 1; // best speedup over the baseline
    int evaluations = 0;
    std::vector<Config> winners; // the best few distinct candidates, best first

    nlohmann::json toJson() const;
    static Skill fromJson(const nlohmann::json& j);
    /// The skill as a Markdown-like document (category skill) for the knowledge base.
    SourceDocument toDocument() const;
};

struct DistillOptions {
    double minGain = 1.10; // a session must beat its baseline by this factor
    std::string arch; // overrides the arch derived from the session
    int winners = 3;
};

/// The arch a session ran on: CUDA/HIP targets name it in the device text; for CPUs the
/// widest x86 vector extension in the worker's flags (x86_64-avx512, x86_64-avx2, x86_64).
std::string sessionArch(const SessionDump& s);

/// The retrieval signals for what the engine (or a panel, for a candidate's diagnosis) asks:
/// the arch from the device and target as sessionArch reads them, a compile error as such, any
/// other failure as evidence text. The one translation, for the LLM's knowledge source and the
/// workbench's hits panel alike.
RetrievalSignals retrievalSignals(const core::KnowledgeQuery& q);

/// Distils a skill, or nullopt (with `why`) when the session did not gain enough.
std::optional<Skill> distillSkill(
    const SessionDump& session, const DistillOptions& options, std::string* why = nullptr);

/// Knob value weights for `space` from skills: each winning configuration adds
/// log2(its speedup) / rank to the values it used. Only knobs and values the space declares
/// are kept.
core::KnobPrior skillPrior(const std::vector<Skill>& skills, const core::KnobSpace& space);

/// After a session: distils a skill from it and writes it into `kb`; nullopt (with `why`) when
/// the session did not beat its baseline by `options.minGain`.
std::optional<AddResult> writeBackSkill(KnowledgeBase& kb, const core::Store& store, int64_t session,
    const DistillOptions& options = {}, std::string* why = nullptr);

/// Before a session: the prior for a source with knob space `space`, from the skills stored for
/// `family` on a compatible `arch` (empty when there are none). Pass it to
/// KnobSynthesizer::setPrior for that source.
core::KnobPrior priorFor(const KnowledgeBase& kb, const std::string& family, const std::string& arch,
    const core::KnobSpace& space);

} // namespace hone::knowledge
