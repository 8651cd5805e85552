#pragma once

#include "core/knobs.h"
#include "core/memory_policy.h"
#include "core/protocol.h"
#include "core/search_tree.h"
#include "core/store.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hone::core {

struct ProblemSpec;

/// One earlier candidate as a prompt shows it: code, result and diagnosis.
struct MemoryEntry {
    NodeId node = 0;
    std::string relation; // parent | ancestor | sibling
    std::string sourceName;
    std::string source; // empty for a reply that never became code
    std::string reply; // the model's reply when it was rejected (no source)
    KnobValues knobs;
    std::string flags;
    std::string origin;
    std::string status; // ok | failed | pending
    double speedup = 0;
    double medianNs = 0;
    std::string failureKind;
    std::string failureMessage;
    std::string feedback; // compiler messages, mismatches (rendered from the worker's result)
    std::string bound; // diagnosis
    std::string evidence;
    double fracBandwidth = 0;
    double fracCompute = 0;
};

/// What the engine shows the synthesizer about the tree around the node it expands.
struct MemoryContext {
    MemoryOperator op = MemoryOperator::Inherit;
    std::vector<MemoryEntry> entries; // the expanded node first
    std::vector<std::string> hints; // the engineer's for this subtree (steering), oldest first
};

/// What stays fixed over a session: the problem and the machine.
struct SynthSession {
    const ProblemSpec* problem = nullptr;
    std::string target; // cpu | cuda | hip
    std::string device; // "cpu: AMD EPYC ... (2 cores)"
    std::string toolchain; // compiler version
    nlohmann::json ceilings; // the worker's calibrated ceilings
    std::vector<std::string> hints; // the user's
    double spentUsd = 0; // LLM spend of the session so far (resume)
    int64_t spentTokens = 0;
};

/// A source a synthesizer wrote.
struct NewSource {
    std::string name;
    std::string lang; // cpp | cuda | hip
    std::string text;
};

/// A child the engine should add. Either an existing source with other knobs, or a new source,
/// or a rejection: a failed node that is never evaluated, with `rejectKind` and `rejectReason`
/// as its failure.
struct SynthProposal {
    NodeId parent = 0;
    std::string sourceHash; // when newSource is empty
    std::optional<NewSource> newSource;
    KnobValues knobs; // empty with a new source: its first admissible assignment
    std::string flags;
    std::string origin; // llm | repair | mutation | crossover
    std::string op = "inherit";
    std::optional<protocol::FailureKind> rejectKind; // BadCandidate | LlmError; none when evaluable
    std::string rejectReason;
    std::vector<LlmCallRecord> calls; // model calls behind it (node ids filled by the engine)
};

struct SynthRequest {
    const SearchTree* tree = nullptr;
    NodeId node = 0; // the node to expand, or the failed node to repair
    MemoryContext memory;
    int64_t seq = 0; // proposal index, stable over resume
    const std::atomic<bool>* cancel = nullptr;
};

/// Stops proposing. `fatal`: the session failed (unreachable endpoint, refused key) and the
/// report says so; otherwise a limit was reached (LLM budget). `calls` are stored unattached.
class SynthError : public std::runtime_error {
public:
    SynthError(const std::string& message, bool fatal, std::vector<LlmCallRecord> calls = {})
        : std::runtime_error(message)
        , m_fatal(fatal)
        , m_calls(std::move(calls))
    {
    }
    bool fatal() const { return m_fatal; }
    const std::vector<LlmCallRecord>& calls() const { return m_calls; }

private:
    bool m_fatal;
    std::vector<LlmCallRecord> m_calls;
};

/// A source of children other than the engine's built-in knob synthesizer (`--synth knob`,
/// the default). The engine calls it on its own thread, in proposal order.
class Synthesizer {
public:
    virtual ~Synthesizer() = default;

    /// Once per run or resume, before the first proposal.
    virtual void begin(const SynthSession& session) = 0;

    /// A failed node to repair before anything new is tried, or nullopt. Called before each
    /// selection; a node returned here gets a child from repair() at once.
    virtual std::optional<NodeId> repairCandidate(const SearchTree&) { return std::nullopt; }

    /// A child of `request.node`, or nullopt when that node has nothing more to offer (the
    /// engine then marks it exhausted). Throws SynthError to stop the session.
    virtual std::optional<SynthProposal> propose(const SynthRequest& request) = 0;

    /// A fix of the failed `request.node` (its failure is `request.memory.entries[0]`).
    virtual std::optional<SynthProposal> repair(const SynthRequest&) { return std::nullopt; }
};

} // namespace hone::core
