// hone_rank(): BM25 with a weight per query phrase, as an FTS5 auxiliary function.
//
// FTS5's own bm25() has column weights but no phrase weights, and it reads term frequencies
// through xInst, which merges the positions of all phrases of a row (cost grows with phrases
// x instances). Retrieval queries OR two or three dozen weighted words over chunks where common
// words occur many times, so here each phrase is walked on its own (cost grows with instances).

#include "knowledge/fts_rank.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace hone::knowledge {
namespace {

constexpr double kK1 = 1.2;
constexpr double kB = 0.75;

struct RankState {
    std::vector<double> idf;
    std::vector<double> phraseWeight;
    std::vector<double> freq; // scratch, one per phrase
    double avgLength = 1;
};

int countRow(const Fts5ExtensionApi*, Fts5Context*, void* counter)
{
    ++*static_cast<sqlite3_int64*>(counter);
    return SQLITE_OK;
}

/// hone_rank(fts, w_col0, ..., w_colN-1, 'w_phrase0,w_phrase1,...'): lower is better, like bm25().
void honeRank(
    const Fts5ExtensionApi* api, Fts5Context* fts, sqlite3_context* ctx, int nVal, sqlite3_value** values)
{
    const int nPhrase = api->xPhraseCount(fts);
    const int nCol = api->xColumnCount(fts);
    auto* st = static_cast<RankState*>(api->xGetAuxdata(fts, 0));
    if (!st) {
        // Once per query: phrase weights, IDF of every phrase, average row length.
        st = new RankState;
        st->phraseWeight.assign(static_cast<size_t>(nPhrase), 1.0);
        if (nVal > nCol) {
            const char* text = reinterpret_cast<const char*>(sqlite3_value_text(values[nCol]));
            for (int i = 0; text && *text && i < nPhrase; ++i) {
                char* end = nullptr;
                st->phraseWeight[static_cast<size_t>(i)] = std::strtod(text, &end);
                text = *end == ',' ? end + 1 : end;
            }
        }
        sqlite3_int64 rows = 0, tokens = 0;
        int rc = api->xRowCount(fts, &rows);
        if (rc == SQLITE_OK)
            rc = api->xColumnTotalSize(fts, -1, &tokens);
        st->avgLength = rows > 0 ? std::max(1.0, double(tokens) / double(rows)) : 1.0;
        for (int i = 0; i < nPhrase && rc == SQLITE_OK; ++i) {
            sqlite3_int64 hits = 0;
            rc = api->xQueryPhrase(fts, i, &hits, countRow);
            // Lucene's smoothed IDF: positive even for words in most rows.
            st->idf.push_back(std::log(1.0 + (double(rows - hits) + 0.5) / (double(hits) + 0.5)));
        }
        st->freq.assign(static_cast<size_t>(nPhrase), 0.0);
        if (rc != SQLITE_OK) {
            delete st;
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        api->xSetAuxdata(fts, st, [](void* p) { delete static_cast<RankState*>(p); });
    }
    for (int i = 0; i < nPhrase; ++i) {
        double f = 0;
        Fts5PhraseIter it;
        int col = -1, off = 0;
        for (api->xPhraseFirst(fts, i, &it, &col, &off); col >= 0; api->xPhraseNext(fts, &it, &col, &off))
            f += col < nVal ? sqlite3_value_double(values[col]) : 1.0;
        st->freq[static_cast<size_t>(i)] = f;
    }
    int length = 0;
    api->xColumnSize(fts, -1, &length);
    const double norm = kK1 * (1.0 - kB + kB * double(length) / st->avgLength);
    double score = 0;
    for (int i = 0; i < nPhrase; ++i) {
        double f = st->freq[static_cast<size_t>(i)];
        if (f > 0)
            score += st->phraseWeight[static_cast<size_t>(i)] * st->idf[static_cast<size_t>(i)] * f
                * (kK1 + 1.0) / (f + norm);
    }
    sqlite3_result_double(ctx, -score);
}

} // namespace

bool registerRankFunction(sqlite3* db)
{
    fts5_api* fts = nullptr;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, nullptr) != SQLITE_OK)
        return false;
    sqlite3_bind_pointer(st, 1, static_cast<void*>(&fts), "fts5_api_ptr", nullptr);
    sqlite3_step(st);
    sqlite3_finalize(st);
    if (!fts || fts->iVersion < 2)
        return false;
    return fts->xCreateFunction(fts, "hone_rank", nullptr, honeRank, nullptr) == SQLITE_OK;
}

} // namespace hone::knowledge
