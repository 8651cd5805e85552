#pragma once

#include "knowledge/document.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hone::knowledge {

/// Tag filters of a query. Empty fields do not filter.
struct SearchFilter {
    std::vector<Category> categories; // hard: only these categories
    std::string platform; // hard: documents of this platform or of "any"
    std::string arch; // hard: documents for a compatible arch, or untagged
    std::vector<std::string> families; // soft: documents tagged with one of these rank higher
};

/// A retrieved chunk.
struct Hit {
    int64_t chunkId = 0;
    int64_t docId = 0;
    std::string uid;
    std::string title;
    std::string heading;
    std::string snippet;
    Category category = Category::Guidance;
    int pageFirst = 0;
    int pageLast = 0;
    double score = 0; // higher is better: BM25 times the tag boost
    double bm25 = 0; // weighted BM25 (hone_rank), higher is better
    std::vector<std::string> matchedTerms; // query words found in the chunk, as written there
    std::string reason; // "matched: coalescing, bandwidth; family softmax"
};

/// What the engine knows when it asks for knowledge (DESIGN.md §1 step 3).
struct RetrievalSignals {
    std::string family; // op family of the problem: softmax, gemm, ...
    std::string arch; // target arch: sm_90, gfx942, x86_64-avx2, ...
    std::string platform; // cuda | hip | cpu; derived from arch when empty
    std::string bound; // diagnosis class: memory | compute | latency | occupancy
    std::string evidence; // the diagnosis evidence text
    std::string compileError; // the last compile log, when the candidate did not build
    std::vector<std::string> hints; // the user's hints, free text
    std::vector<Category> categories; // empty: all
};

/// The query a knowledge hit is recorded with (KnowledgeBase::recordHits), e.g.
/// "family=softmax arch=sm_90 bound=memory failure=wrong_result": the signals that explain the
/// hit, and the failure kind of the parent when it had one.
std::string recordedQuery(const RetrievalSignals& s, const std::string& failureKind);

/// The signals a recorded query names; `failure` comes back as the evidence (the engine's
/// evidence starts with the failure kind). Unknown keys are skipped.
RetrievalSignals parseRecordedQuery(const std::string& query);

/// A weighted bag of query words plus tag filters. A word of weight w counts w times in BM25.
struct QueryPlan {
    struct Term {
        std::string word;
        int weight = 1;
        std::string why; // family | bound | evidence | compile | hint | text
    };
    std::vector<Term> terms;
    SearchFilter filter;
    double familyBoost = 0.6; // score factor 1 + this for documents tagged with the family

    void add(const std::string& word, int weight, const std::string& why);
    /// The FTS5 MATCH expression: every term quoted, OR-ed, in order (phrase i = term i).
    std::string matchExpression() const;
    /// "3,1,2,...": the weight of each phrase of matchExpression(), for hone_rank().
    std::string weightList() const;
    /// "family=softmax arch=sm_90 terms: softmax reduction bandwidth ..."
    std::string describe() const;
};

/// The retrieval policy: query words from the family (and the techniques it depends on), the
/// bound and its usual remedies, the evidence, the compile error and the hints; hard filters
/// on platform, arch and category; the family as a soft boost.
QueryPlan planQuery(const RetrievalSignals& query);

/// Words of free text as query terms (lower-cased, stop words dropped), weight 1.
QueryPlan planText(const std::string& text, const SearchFilter& filter);

} // namespace hone::knowledge
