#include "knowledge/knowledge_base.h"

#include <sqlite3.h>

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace hone::knowledge {
namespace {

void check(sqlite3* db, int rc, const char* what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
        throw std::runtime_error(std::string("knowledge base: ") + what + ": " + sqlite3_errmsg(db));
}

/// FTS5 query syntax treats many characters as operators; keep words only and OR them.
std::string toMatchQuery(const std::string& query)
{
    std::string out, word;
    auto flush = [&] {
        if (word.size() >= 2) {
            if (!out.empty())
                out += " OR ";
            out += "\"" + word + "\"";
        }
        word.clear();
    };
    for (char c : query) {
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_')
            word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else
            flush();
    }
    flush();
    return out;
}

} // namespace

const char* categoryName(Category c)
{
    switch (c) {
    case Category::Correctness:
        return "correctness";
    case Category::Guidance:
        return "guidance";
    case Category::Hardware:
        return "hardware";
    case Category::Skill:
        return "skill";
    }
    return "guidance";
}

KnowledgeBase::KnowledgeBase(const std::filesystem::path& path)
{
    if (sqlite3_open(path.c_str(), &m_db) != SQLITE_OK) {
        std::string msg = sqlite3_errmsg(m_db);
        sqlite3_close(m_db);
        throw std::runtime_error("cannot open knowledge base " + path.string() + ": " + msg);
    }
    const char* schema = "CREATE TABLE IF NOT EXISTS kb_documents(id INTEGER PRIMARY KEY, title TEXT NOT NULL, "
                         "category TEXT NOT NULL, platform TEXT NOT NULL);"
                         "CREATE VIRTUAL TABLE IF NOT EXISTS kb_chunks USING fts5(doc_id UNINDEXED, heading, body);";
    check(m_db, sqlite3_exec(m_db, schema, nullptr, nullptr, nullptr), "schema");
}

KnowledgeBase::~KnowledgeBase()
{
    sqlite3_close(m_db);
}

int KnowledgeBase::addMarkdown(const std::string& title, Category category, const std::string& platform,
    const std::string& text)
{
    check(m_db, sqlite3_exec(m_db, "BEGIN", nullptr, nullptr, nullptr), "begin");
    sqlite3_stmt* doc = nullptr;
    check(m_db, sqlite3_prepare_v2(m_db, "INSERT INTO kb_documents(title, category, platform) VALUES(?,?,?)", -1, &doc, nullptr),
        "prepare");
    sqlite3_bind_text(doc, 1, title.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(doc, 2, categoryName(category), -1, SQLITE_STATIC);
    sqlite3_bind_text(doc, 3, platform.c_str(), -1, SQLITE_TRANSIENT);
    check(m_db, sqlite3_step(doc), "insert document");
    sqlite3_finalize(doc);
    int64_t docId = sqlite3_last_insert_rowid(m_db);

    sqlite3_stmt* ins = nullptr;
    check(m_db, sqlite3_prepare_v2(m_db, "INSERT INTO kb_chunks(doc_id, heading, body) VALUES(?,?,?)", -1, &ins, nullptr),
        "prepare");
    int chunks = 0;
    std::string heading = title, body, line;
    auto flush = [&] {
        if (body.find_first_not_of(" \n\t") == std::string::npos)
            return;
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, docId);
        sqlite3_bind_text(ins, 2, heading.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 3, body.c_str(), -1, SQLITE_TRANSIENT);
        check(m_db, sqlite3_step(ins), "insert chunk");
        ++chunks;
    };
    std::istringstream in(text);
    while (std::getline(in, line)) {
        if (!line.empty() && line[0] == '#') {
            flush();
            heading = line.substr(line.find_first_not_of("# "));
            body.clear();
        } else {
            body += line + "\n";
        }
    }
    flush();
    sqlite3_finalize(ins);
    check(m_db, sqlite3_exec(m_db, "COMMIT", nullptr, nullptr, nullptr), "commit");
    return chunks;
}

std::vector<Hit> KnowledgeBase::search(const std::string& query, int k) const
{
    std::vector<Hit> hits;
    std::string match = toMatchQuery(query);
    if (match.empty())
        return hits;
    sqlite3_stmt* st = nullptr;
    check(m_db,
        sqlite3_prepare_v2(m_db,
            "SELECT c.rowid, d.title, c.heading, snippet(kb_chunks, 2, '[', ']', '...', 12), bm25(kb_chunks) "
            "FROM kb_chunks c JOIN kb_documents d ON d.id = c.doc_id WHERE kb_chunks MATCH ? "
            "ORDER BY bm25(kb_chunks) LIMIT ?",
            -1, &st, nullptr),
        "prepare search");
    sqlite3_bind_text(st, 1, match.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, k);
    while (sqlite3_step(st) == SQLITE_ROW) {
        Hit h;
        h.chunkId = sqlite3_column_int64(st, 0);
        h.title = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
        h.heading = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
        h.snippet = reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
        h.score = -sqlite3_column_double(st, 4); // SQLite's bm25() is lower-is-better
        hits.push_back(std::move(h));
    }
    sqlite3_finalize(st);
    return hits;
}

} // namespace hone::knowledge
