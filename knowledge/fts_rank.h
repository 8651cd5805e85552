#pragma once

struct sqlite3;

namespace hone::knowledge {

/// Registers hone_rank(), a BM25 with per-phrase weights, on `db`'s FTS5. False when FTS5 is
/// missing or too old.
bool registerRankFunction(sqlite3* db);

} // namespace hone::knowledge
