#include "app/kb_source.h"

#include "knowledge/skills.h"

#include <cstdio>

namespace hone::app {

class KbKnowledgeSource::Observer final : public core::ForwardingObserver {
public:
    Observer(KbKnowledgeSource& source, core::EngineObserver* inner)
        : ForwardingObserver(inner)
        , m_source(source)
    {
    }
    void progressChanged(const core::Progress& p) override
    {
        m_source.m_session = p.session;
        ForwardingObserver::progressChanged(p);
    }
    void llmCallRecorded(const core::Node& n, const core::LlmCallRecord& c) override
    {
        m_source.recordFor(m_source.m_session, n.id);
        ForwardingObserver::llmCallRecorded(n, c);
    }

private:
    KbKnowledgeSource& m_source;
};

KbKnowledgeSource::KbKnowledgeSource(knowledge::KnowledgeBase& kb, int topK)
    : m_kb(kb)
    , m_topK(topK)
{
}

KbKnowledgeSource::~KbKnowledgeSource() = default;

std::vector<std::string> KbKnowledgeSource::lookup(const core::KnowledgeQuery& q)
{
    const knowledge::RetrievalSignals s = knowledge::retrievalSignals(q);
    m_pending = m_kb.retrieve(s, m_topK);
    m_pendingQuery = knowledge::recordedQuery(s, q.failureKind);
    std::vector<std::string> out;
    for (const auto& h : m_pending) {
        char score[32];
        std::snprintf(score, sizeof score, "%.2f", h.score);
        // The whole chunk (chunks are size-limited at ingestion), else the snippet.
        const auto chunk = m_kb.chunk(h.chunkId);
        out.push_back("[" + h.title + (h.heading.empty() ? std::string() : " > " + h.heading) + "] (score " + score
            + "; " + h.reason + ")\n" + (chunk ? chunk->body : h.snippet));
    }
    return out;
}

void KbKnowledgeSource::recordFor(int64_t session, int64_t node)
{
    if (m_pending.empty() || session <= 0)
        return;
    m_kb.recordHits(session, node, m_pending, m_pendingQuery);
    m_pending.clear();
}

core::EngineObserver* KbKnowledgeSource::observer(core::EngineObserver* inner)
{
    m_observer = std::make_unique<Observer>(*this, inner);
    return m_observer.get();
}

} // namespace hone::app
