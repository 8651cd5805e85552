#pragma once

#include "views/knowledge_access.h"

namespace hone::knowledge {
class KnowledgeBase;
}

namespace hone::app {

/// The knowledge panels' view of a knowledge::KnowledgeBase (views/knowledge_access.h): rows
/// with the reasons each chunk was retrieved, imports one transaction per file, re-tags as new
/// versions. Lives on the GUI thread with the panels, over the base it is given (not owned).
class KbAccess final : public views::KnowledgeAccess {
public:
    explicit KbAccess(knowledge::KnowledgeBase& kb);
    ~KbAccess() override;

    QString location() const override;
    std::vector<views::KbDocument> documents() const override;
    std::optional<views::KbDocument> document(const QString& uidOrId) const override;
    int liveChunkCount() const override;
    std::vector<views::KbChunk> chunks(qint64 docId) const override;
    std::optional<views::KbChunk> chunk(qint64 chunkId) const override;

    std::vector<views::KnowledgeHitRow> search(const QString& text, int k) const override;
    views::KbRecordedHits recordedHits(qint64 session, qint64 node) const override;
    views::KbSuggestion suggest(const core::KnowledgeQuery& query, int k) const override;

    QStringList expandPath(const QString& path) const override;
    views::KbImportOutcome importFile(const QString& path, const QString& fallbackKind) override;
    views::KbImportOutcome retag(const QString& uid, const views::KbTags& tags) override;
    bool remove(const QString& uid) override;
    int importCorpus(const QString& dir) override;

    knowledge::KnowledgeBase& base() { return m_kb; }

private:
    knowledge::KnowledgeBase& m_kb;
};

} // namespace hone::app
