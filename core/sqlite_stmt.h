#pragma once

// One prepared-statement wrapper over the SQLite C API for the store (core/store.cpp) and the
// knowledge base (knowledge/): binds are 1-based like SQLite's, columns 0-based. `Error` is the
// owner's exception type, `what` its name in messages ("store", "knowledge base").

#include "core/utf8.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

namespace hone::core::sqlite {

template <class Error> class Statement {
public:
    Statement(sqlite3* db, std::string_view sql, const char* what)
        : m_db(db)
        , m_what(what)
    {
        if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &m_stmt, nullptr) != SQLITE_OK)
            throw Error(std::string(what) + ": cannot prepare statement: " + sqlite3_errmsg(db));
    }
    ~Statement() { sqlite3_finalize(m_stmt); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    /// Text is stored as valid UTF-8: compiler logs, candidate output, model replies and
    /// imported documents may hold any bytes, and one invalid byte would make the row
    /// unreadable as JSON later.
    Statement& bind(int i, std::string_view v) { return bindBytes(i, validUtf8(v)); }
    Statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
    Statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
    /// Exactly these bytes (content-addressed text, whose hash must match).
    Statement& bindBytes(int i, std::string_view v)
    {
        sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Statement& bindJson(int i, const nlohmann::json& v) { return bindBytes(i, dumpJson(v)); }
    Statement& bind(int i, int64_t v)
    {
        sqlite3_bind_int64(m_stmt, i, v);
        return *this;
    }
    Statement& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
    Statement& bind(int i, double v)
    {
        sqlite3_bind_double(m_stmt, i, v);
        return *this;
    }
    Statement& bindNull(int i)
    {
        sqlite3_bind_null(m_stmt, i);
        return *this;
    }

    /// True while there is a row. Retries briefly when another process holds the lock.
    bool step()
    {
        for (int attempt = 0;; ++attempt) {
            const int rc = sqlite3_step(m_stmt);
            if (rc == SQLITE_ROW)
                return true;
            if (rc == SQLITE_DONE)
                return false;
            if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && attempt < 200) {
                sqlite3_reset(m_stmt);
                std::this_thread::sleep_for(std::chrono::milliseconds(25));
                continue;
            }
            throw Error(m_what + ": " + sqlite3_errmsg(m_db));
        }
    }
    void run()
    {
        while (step()) {
        }
    }
    void reset()
    {
        sqlite3_reset(m_stmt);
        sqlite3_clear_bindings(m_stmt);
    }

    /// Valid UTF-8, also from a file written before text was sanitized.
    std::string text(int col) const { return validUtf8(bytes(col)); }
    std::string bytes(int col) const
    {
        auto* p = sqlite3_column_text(m_stmt, col);
        return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(m_stmt, col)))
                 : std::string();
    }
    int64_t integer(int col) const { return sqlite3_column_int64(m_stmt, col); }
    double real(int col) const { return sqlite3_column_double(m_stmt, col); }
    bool isNull(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
    nlohmann::json json(int col) const
    {
        std::string t = text(col);
        if (t.empty())
            return nullptr;
        return nlohmann::json::parse(t, nullptr, false);
    }

private:
    sqlite3* m_db;
    std::string m_what;
    sqlite3_stmt* m_stmt = nullptr;
};

/// Runs `sql` (statements that return no rows); throws Error("<what>: <SQLite's message>").
template <class Error> void exec(sqlite3* db, const char* sql, const std::string& what)
{
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : "unknown error";
        sqlite3_free(err);
        throw Error(what + ": " + msg);
    }
}

} // namespace hone::core::sqlite
