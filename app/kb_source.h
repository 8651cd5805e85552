#pragma once

#include "core/engine.h"
#include "core/prompt_builder.h"
#include "knowledge/knowledge_base.h"

#include <memory>
#include <string>
#include <vector>

/// The knowledge base as the LLM synthesizer's knowledge source: a query from the runtime
/// signals of each expansion (family, arch, bound, failure text), the top hits as prompt text,
/// and every hit recorded against the node the model call produced.
namespace hone::app {

class KbKnowledgeSource final : public core::KnowledgeSource {
public:
    KbKnowledgeSource(knowledge::KnowledgeBase& kb, int topK = 3);
    ~KbKnowledgeSource() override;

    std::vector<std::string> lookup(const core::KnowledgeQuery& query) override;

    /// Records the hits of the last lookup against `node` of `session` (the node a model call
    /// just produced); a second call for the same lookup records nothing.
    void recordFor(int64_t session, int64_t node);

    /// Forwards every event to `inner`, recording hits when a model call lands on a node.
    core::EngineObserver* observer(core::EngineObserver* inner);

private:
    class Observer;
    knowledge::KnowledgeBase& m_kb;
    int m_topK;
    std::vector<knowledge::Hit> m_pending;
    std::string m_pendingQuery;
    int64_t m_session = 0;
    std::unique_ptr<Observer> m_observer;
};

} // namespace hone::app
