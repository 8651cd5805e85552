#pragma once

#include "core/llm_client.h"
#include "core/prompt_builder.h"
#include "core/response_parser.h"
#include "core/synthesizer.h"

#include <set>

namespace hone::core {

struct LlmSynthConfig {
    int repairAttempts = 2; // fix attempts per failed LLM candidate (--repair)
    int maxTokens = 8192; // per reply
    double temperature = -1; // < 0: provider default
    bool stream = true;
    double budgetUsd = 0; // stop once the session spent this much; 0 = no limit
    int64_t tokenBudget = 0; // stop once the session used this many tokens; 0 = no limit
    size_t maxSourceBytes = 200 * 1024;
    int maxConsecutiveErrors = 3; // transient call failures in a row before the session stops
};

/// Sees each model call as it happens (the CLI prints them). Called on the engine's thread.
class LlmSynthObserver : public LlmStreamObserver {
public:
    /// Before the request is sent.
    virtual void callStarted(const std::string& /*purpose*/, NodeId /*from*/, const Prompt&) { }
    /// After the reply came back and was parsed (record.status ok | rejected | error).
    virtual void callFinished(const LlmCallRecord&, NodeId /*from*/) { }
};

/// The online synthesizer (DESIGN.md §1, step 4): builds a prompt from the memory context,
/// asks the model, parses the reply into a new source, and sends failures back for a bounded
/// number of repairs. Each repair is a child of the node it fixes.
class LlmSynthesizer final : public Synthesizer {
public:
    LlmSynthesizer(LlmClient& client, PromptBuilder builder, LlmSynthConfig config,
        KnowledgeSource* knowledge = nullptr, LlmSynthObserver* observer = nullptr);

    void begin(const SynthSession& session) override;
    std::optional<NodeId> repairCandidate(const SearchTree& tree) override;
    std::optional<SynthProposal> propose(const SynthRequest& request) override;
    std::optional<SynthProposal> repair(const SynthRequest& request) override;

    double spentUsd() const { return m_spentUsd; }
    int64_t spentTokens() const { return m_spentTokens; }

    /// Failure kinds worth a repair: the code is at fault and the message says how.
    static bool repairable(const std::string& failureKind);

    /// How many repairs led to `node` (0 for a first attempt).
    static int repairDepth(const SearchTree& tree, NodeId node);

private:
    PromptInputs inputsFor(const SynthRequest& request) const;
    std::optional<SynthProposal> ask(
        const SynthRequest& request, const Prompt& prompt, const std::string& purpose, NodeId parent);
    void checkBudget() const;

    LlmClient& m_client;
    PromptBuilder m_builder;
    LlmSynthConfig m_config;
    KnowledgeSource* m_knowledge;
    LlmSynthObserver* m_observer;
    SynthSession m_session;
    ReplyRules m_rules;
    double m_spentUsd = 0;
    int64_t m_spentTokens = 0;
    int m_consecutiveErrors = 0;
    std::set<NodeId> m_declined; // failed nodes not to offer for repair again
};

} // namespace hone::core
