#pragma once

#include <filesystem>
#include <string>
#include <vector>

struct sqlite3;

namespace hone::knowledge {

enum class Category { Correctness, Guidance, Hardware, Skill };
const char* categoryName(Category c);

struct Hit {
    int64_t chunkId = 0;
    std::string title;
    std::string heading;
    std::string snippet;
    double score = 0;   // BM25, higher is better
};

/// Documents chunked by Markdown heading and indexed with SQLite FTS5 (BM25). The full
/// curation workflow (ingestion formats, tags, hit tracking, skills) grows on this.
class KnowledgeBase {
public:
    explicit KnowledgeBase(const std::filesystem::path& path);
    ~KnowledgeBase();
    KnowledgeBase(const KnowledgeBase&) = delete;
    KnowledgeBase& operator=(const KnowledgeBase&) = delete;

    /// Adds a Markdown document; returns the number of chunks stored.
    int addMarkdown(const std::string& title, Category category, const std::string& platform, const std::string& text);

    /// Top `k` chunks for a free-text query (terms OR-ed), best first.
    std::vector<Hit> search(const std::string& query, int k) const;

private:
    sqlite3* m_db = nullptr;
};

} // namespace hone::knowledge
