// Hit logging: which chunks fed which candidate, and whether that candidate beat its parent.

#include "knowledge/knowledge_base.h"

#include "core/store.h"
#include "knowledge/sqlite_db.h"

#include <map>

namespace hone::knowledge {

void KnowledgeBase::recordHits(
    int64_t session, int64_t node, const std::vector<Hit>& hits, const std::string& query)
{
    db::Transaction tx(m_db);
    db::Stmt s(m_db,
        "INSERT INTO kb_hits(session_id, node_id, chunk_id, rank, score, query, created_at) "
        "VALUES(?,?,?,?,?,?,?)");
    std::string now = core::nowIso();
    for (size_t i = 0; i < hits.size(); ++i) {
        s.reset();
        s.bind(1, session).bind(2, node).bind(3, hits[i].chunkId).bind(4, static_cast<int>(i + 1));
        s.bind(5, hits[i].score).bind(6, query).bind(7, now).run();
    }
    tx.commit();
}

int KnowledgeBase::recordOutcome(int64_t session, int64_t node, bool beatParent)
{
    db::Stmt s(m_db, "UPDATE kb_hits SET beat_parent = ? WHERE session_id = ? AND node_id = ?");
    s.bind(1, beatParent ? 1 : 0).bind(2, session).bind(3, node).run();
    return sqlite3_changes(m_db);
}

int KnowledgeBase::syncOutcomes(const core::Store& store, int64_t session)
{
    std::map<int64_t, int64_t> parentOf;
    for (const auto& n : store.nodes(session))
        parentOf[n.id] = n.parentId;
    std::map<int64_t, core::EvaluationRecord> evals;
    for (auto& e : store.evaluations(session))
        evals[e.nodeId] = std::move(e);
    std::vector<int64_t> nodes;
    {
        db::Stmt s(m_db, "SELECT DISTINCT node_id FROM kb_hits WHERE session_id = ?");
        s.bind(1, session);
        while (s.step())
            nodes.push_back(s.integer(0));
    }
    db::Transaction tx(m_db);
    int updated = 0;
    for (int64_t node : nodes) {
        auto self = evals.find(node);
        auto p = parentOf.find(node);
        if (self == evals.end() || p == parentOf.end())
            continue;
        auto parent = evals.find(p->second);
        if (parent == evals.end() || parent->second.status != "ok")
            continue; // the root (or an unevaluated parent): no comparison to make
        bool beat = self->second.status == "ok" && self->second.speedup > parent->second.speedup;
        updated += recordOutcome(session, node, beat);
    }
    tx.commit();
    return updated;
}

std::vector<HitRecord> KnowledgeBase::hits(int64_t session, std::optional<int64_t> node) const
{
    db::Stmt s(m_db,
        std::string("SELECT session_id, node_id, chunk_id, rank, score, query, beat_parent, created_at "
                    "FROM kb_hits WHERE session_id = ?")
            + (node ? " AND node_id = ?" : "") + " ORDER BY node_id, rank, id");
    s.bind(1, session);
    if (node)
        s.bind(2, *node);
    std::vector<HitRecord> out;
    while (s.step()) {
        HitRecord h;
        h.session = s.integer(0);
        h.node = s.integer(1);
        h.chunkId = s.integer(2);
        h.rank = static_cast<int>(s.integer(3));
        h.score = s.real(4);
        h.query = s.text(5);
        if (!s.isNull(6))
            h.beatParent = s.integer(6) != 0;
        h.createdAt = s.text(7);
        out.push_back(std::move(h));
    }
    return out;
}

ChunkStats KnowledgeBase::chunkStats(int64_t chunkId) const
{
    db::Stmt s(m_db, "SELECT uses, decided, wins FROM kb_chunk_stats WHERE chunk_id = ?");
    s.bind(1, chunkId);
    ChunkStats st;
    st.chunkId = chunkId;
    if (s.step()) {
        st.uses = static_cast<int>(s.integer(0));
        st.decided = static_cast<int>(s.integer(1));
        st.wins = static_cast<int>(s.integer(2));
    }
    return st;
}

} // namespace hone::knowledge
