#pragma once

// Small RAII helpers over the SQLite C API, private to the knowledge module.

#include "core/sqlite_stmt.h"
#include "knowledge/document.h"

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hone::knowledge {

namespace db {

/// One prepared statement of the knowledge base (core/sqlite_stmt.h).
class Stmt : public core::sqlite::Statement<KbError> {
public:
    Stmt(sqlite3* db, std::string_view sql)
        : Statement(db, sql, "knowledge base")
    {
    }
};

inline void exec(sqlite3* db, const char* sql)
{
    core::sqlite::exec<KbError>(db, sql, "knowledge base");
}

/// BEGIN IMMEDIATE ... COMMIT, rolled back when the scope is left by an exception, so a
/// failed import or add leaves the base exactly as it was.
class Transaction {
public:
    explicit Transaction(sqlite3* db)
        : m_db(db)
    {
        exec(db, "BEGIN IMMEDIATE");
    }
    ~Transaction()
    {
        if (!m_done)
            sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit()
    {
        exec(m_db, "COMMIT");
        m_done = true;
    }

private:
    sqlite3* m_db;
    bool m_done = false;
};

} // namespace db
} // namespace hone::knowledge
