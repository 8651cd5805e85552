// The retrieval policy (signals -> weighted query + filters) and its execution on FTS5.

#include "knowledge/retrieval.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/sqlite_db.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace hone::knowledge {
namespace {

// Column weights (title, heading, body, tags) of hone_rank, a BM25 with per-word weights (see
// fts_rank.cpp): a word in a heading says more about a chunk than the same word in its body.
constexpr const char* kRank = "hone_rank(kb_fts, 3.0, 4.0, 1.0, 2.0, ?2)";
constexpr double kArchBoost = 0.25; // the document is written for the query's arch
constexpr int kPerDocument = 2; // at most this many chunks of one document in a result

const std::set<std::string>& stopWords()
{
    static const std::set<std::string> words = { "the", "and", "for", "with", "that", "this", "from", "into",
        "are", "was", "were", "has", "have", "had", "not", "but", "per", "its", "than", "then", "when",
        "which", "what", "use", "used", "using", "can", "may", "should", "would", "could", "will", "all",
        "any", "each", "also", "only", "over", "under", "about", "after", "before", "there", "their", "they",
        "them", "these", "those", "such", "very", "more", "most", "less", "some", "how", "why", "where",
        "who", "you", "your", "our", "out", "off", "one", "two", "via", "vs", "get", "got", "make", "made",
        "of", "to", "in", "on", "at", "by", "as", "is", "it", "be", "or", "an", "a", "if", "so", "no", "do",
        "does", "did", "up", "we", "i", "ok", "bound", "achieved", "measured", "error", "errors", "warning",
        "note", "line", "file", "function", "expected", "declared", "here", "candidate", "kernel" };
    return words;
}

/// Lower-case words of `text` (letters, digits, '_' kept inside a word), in order, unique.
std::vector<std::string> words(const std::string& text, size_t minLength = 2)
{
    std::vector<std::string> out;
    std::string w;
    auto flush = [&] {
        while (!w.empty() && w.back() == '_')
            w.pop_back();
        size_t lead = w.find_first_not_of('_');
        w = lead == std::string::npos ? std::string() : w.substr(lead);
        bool numeric
            = !w.empty() && std::all_of(w.begin(), w.end(), [](unsigned char c) { return std::isdigit(c); });
        if (w.size() >= minLength && !numeric && !stopWords().count(w)
            && std::find(out.begin(), out.end(), w) == out.end())
            out.push_back(w);
        w.clear();
    };
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '_')
            w += static_cast<char>(std::tolower(c));
        else
            flush();
    }
    flush();
    return out;
}

struct Weighted {
    const char* word;
    int weight;
};

/// What an op family leans on, in the corpus's own words.
const std::vector<Weighted>* familyTerms(const std::string& family)
{
    static const std::map<std::string, std::vector<Weighted>> table = {
        { "softmax", { { "softmax", 3 }, { "reduction", 1 }, { "exp", 1 }, { "row", 1 }, { "online", 1 } } },
        { "layernorm",
            { { "layernorm", 3 }, { "normalization", 1 }, { "reduction", 1 }, { "variance", 1 },
                { "row", 1 } } },
        { "rmsnorm", { { "rmsnorm", 3 }, { "normalization", 1 }, { "reduction", 1 }, { "row", 1 } } },
        { "gemm", { { "gemm", 3 }, { "matmul", 1 }, { "tile", 1 }, { "tensor", 1 }, { "mma", 1 } } },
        { "matmul", { { "gemm", 3 }, { "matmul", 2 }, { "tile", 1 }, { "tensor", 1 }, { "mma", 1 } } },
        { "reduction", { { "reduction", 3 }, { "shuffle", 1 }, { "sum", 1 }, { "atomic", 1 } } },
        { "embedding_bag",
            { { "embedding", 3 }, { "gather", 2 }, { "indices", 1 }, { "bag", 1 }, { "irregular", 1 } } },
        { "embedding", { { "embedding", 3 }, { "gather", 2 }, { "indices", 1 } } },
        { "gather", { { "gather", 3 }, { "indices", 1 }, { "irregular", 1 } } },
        { "elementwise", { { "elementwise", 3 }, { "vectorized", 1 }, { "bandwidth", 1 }, { "fusion", 1 } } },
        { "transpose", { { "transpose", 3 }, { "bank", 1 }, { "shared", 1 }, { "coalescing", 1 } } },
        { "attention",
            { { "attention", 3 }, { "softmax", 1 }, { "gemm", 1 }, { "online", 1 }, { "tile", 1 } } },
        { "scan", { { "scan", 3 }, { "prefix", 2 }, { "shuffle", 1 } } },
        { "histogram", { { "histogram", 3 }, { "atomic", 2 }, { "privatization", 1 } } },
    };
    auto it = table.find(family);
    return it == table.end() ? nullptr : &it->second;
}

/// The usual remedies of a bottleneck class, as words the corpus uses.
std::vector<Weighted> boundTerms(const std::string& bound)
{
    if (bound == "memory")
        return { { "bandwidth", 2 }, { "coalescing", 2 }, { "memory", 1 }, { "vectorized", 1 },
            { "bytes", 1 }, { "traffic", 1 }, { "fusion", 1 } };
    if (bound == "compute")
        return { { "compute", 2 }, { "throughput", 2 }, { "tensor", 1 }, { "fma", 1 }, { "instruction", 1 },
            { "ilp", 1 } };
    if (bound == "latency")
        return { { "latency", 2 }, { "ilp", 2 }, { "occupancy", 1 }, { "independent", 1 }, { "launch", 1 } };
    if (bound == "occupancy")
        return { { "occupancy", 3 }, { "registers", 2 }, { "shared", 1 }, { "blocks", 1 }, { "spill", 1 } };
    return {};
}

std::string normalBound(const std::string& b)
{
    std::string t;
    for (unsigned char c : b)
        t += static_cast<char>(std::tolower(c));
    for (const char* name : { "memory", "compute", "latency", "occupancy" })
        if (t.find(name) != std::string::npos)
            return name;
    if (t.find("bandwidth") != std::string::npos || t.find("dram") != std::string::npos)
        return "memory";
    if (t.find("register") != std::string::npos)
        return "occupancy";
    return t;
}

/// Compile errors that mean something specific get the words of their remedy.
std::vector<Weighted> compileErrorTerms(const std::string& log)
{
    std::string t;
    for (unsigned char c : log)
        t += static_cast<char>(std::tolower(c));
    // A recognised message is also searched as a phrase: documents that quote it explain it.
    std::vector<Weighted> out;
    if (t.find("too many resources requested") != std::string::npos)
        out.insert(out.end(), { { "too many resources requested", 3 } });
    if (t.find("too many resources requested") != std::string::npos
        || t.find("register") != std::string::npos)
        out.insert(out.end(), { { "registers", 3 }, { "launch_bounds", 2 }, { "spill", 1 } });
    if (t.find("shared data") != std::string::npos)
        out.insert(out.end(), { { "too much shared data", 3 } });
    if (t.find("shared data") != std::string::npos || t.find("shared memory") != std::string::npos
        || t.find("lds") != std::string::npos)
        out.insert(out.end(), { { "shared", 3 }, { "dynamic", 2 }, { "limit", 1 } });
    if (t.find("misaligned") != std::string::npos || t.find("alignment") != std::string::npos)
        out.insert(out.end(),
            { { "misaligned address", 3 }, { "alignment", 3 }, { "aligned", 2 }, { "vectorized", 1 } });
    if (t.find("illegal memory access") != std::string::npos || t.find("out of bounds") != std::string::npos
        || t.find("out-of-bounds") != std::string::npos)
        out.insert(
            out.end(), { { "illegal memory access", 3 }, { "bounds", 3 }, { "tail", 2 }, { "guard", 1 } });
    if (t.find("wgmma") != std::string::npos || t.find("sm_90a") != std::string::npos)
        out.insert(out.end(), { { "wgmma", 3 }, { "sm_90a", 2 }, { "not supported on", 2 } });
    return out;
}

std::string sqlQuote(const std::string& s)
{
    std::string out = "\"";
    for (char c : s) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

std::vector<std::string> highlighted(const std::string& text)
{
    std::vector<std::string> out;
    size_t pos = 0;
    while ((pos = text.find('\x01', pos)) != std::string::npos) {
        size_t end = text.find('\x02', pos);
        if (end == std::string::npos)
            break;
        std::string w;
        for (size_t i = pos + 1; i < end; ++i)
            w += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
        if (!w.empty())
            out.push_back(w);
        pos = end + 1;
    }
    return out;
}

bool hasTag(const std::string& commaList, const std::string& tag)
{
    return commaList.find("," + tag + ",") != std::string::npos;
}

} // namespace

void QueryPlan::add(const std::string& word, int weight, const std::string& why)
{
    if (word.empty() || weight <= 0)
        return;
    for (auto& t : terms) {
        if (t.word == word) {
            t.weight = std::min(4, std::max(t.weight, weight) + 1); // a word two signals agree on counts more
            return;
        }
    }
    terms.push_back({ word, std::min(weight, 4), why });
}

std::string QueryPlan::matchExpression() const
{
    std::string out;
    for (const auto& t : terms)
        out += (out.empty() ? "" : " OR ") + sqlQuote(t.word);
    return out;
}

std::string QueryPlan::weightList() const
{
    std::string out;
    for (const auto& t : terms)
        out += (out.empty() ? "" : ",") + std::to_string(t.weight);
    return out;
}

std::string QueryPlan::describe() const
{
    std::string out;
    if (!filter.platform.empty())
        out += "platform=" + filter.platform + " ";
    if (!filter.arch.empty())
        out += "arch=" + filter.arch + " ";
    for (const auto& f : filter.families)
        out += "family=" + f + " ";
    for (Category c : filter.categories)
        out += std::string("category=") + categoryName(c) + " ";
    out += "terms:";
    for (const auto& t : terms)
        out += " " + t.word + (t.weight > 1 ? "^" + std::to_string(t.weight) : "");
    return out;
}

QueryPlan planQuery(const RetrievalSignals& s)
{
    QueryPlan plan;
    std::string family;
    for (unsigned char c : s.family)
        family += static_cast<char>(std::tolower(c));
    if (!family.empty()) {
        plan.filter.families.push_back(family);
        if (const auto* terms = familyTerms(family)) {
            for (const auto& t : *terms)
                plan.add(t.word, t.weight, "family");
        } else {
            for (const auto& w : words(family))
                plan.add(w, 3, "family");
        }
    }
    std::string bound = normalBound(s.bound);
    for (const auto& t : boundTerms(bound))
        plan.add(t.word, t.weight, "bound");
    for (const auto& w : words(s.evidence, 3))
        plan.add(w, 1, "evidence");
    for (const auto& t : compileErrorTerms(s.compileError))
        plan.add(t.word, t.weight, "compile");
    for (const auto& w : words(s.compileError, 4))
        if (plan.terms.size() < 48)
            plan.add(w, 1, "compile");
    for (const auto& h : s.hints)
        for (const auto& w : words(h))
            plan.add(w, 2, "hint");
    // The arch filters and boosts; as a query word it would favour every document of the arch
    // over the ones that answer the question.
    if (!s.arch.empty() && canonicalArch(s.arch) != "any")
        plan.filter.arch = canonicalArch(s.arch);
    // A compile error is the most specific signal there is: the family then counts for less.
    if (!s.compileError.empty())
        plan.familyBoost = 0.2;
    plan.filter.platform = s.platform.empty() ? platformOfArch(s.arch) : s.platform;
    plan.filter.categories = s.categories;
    return plan;
}

QueryPlan planText(const std::string& text, const SearchFilter& filter)
{
    QueryPlan plan;
    plan.filter = filter;
    for (const auto& w : words(text))
        plan.add(w, 1, "text");
    return plan;
}

std::vector<Hit> KnowledgeBase::search(const std::string& text, const SearchFilter& filter, int k) const
{
    return run(planText(text, filter), k);
}

std::vector<Hit> KnowledgeBase::retrieve(const RetrievalSignals& query, int k) const
{
    return run(planQuery(query), k);
}

std::vector<Hit> KnowledgeBase::run(const QueryPlan& plan, int k) const
{
    std::vector<Hit> pool;
    std::string match = plan.matchExpression();
    if (match.empty() || k <= 0)
        return pool;
    const SearchFilter& f = plan.filter;
    std::string sql
        = std::string("SELECT c.id, c.doc_id, d.uid, d.title, c.heading, d.category, c.page_first, "
                      "c.page_last, ")
        + kRank
        + " AS r, d.family, d.arch FROM kb_fts JOIN kb_chunks c ON c.id = kb_fts.rowid "
          "JOIN kb_documents d ON d.id = c.doc_id WHERE kb_fts MATCH ?1 AND d.removed_at IS NULL";
    std::vector<std::string> binds;
    if (!f.platform.empty() && f.platform != "any") {
        sql += " AND d.platform IN (?, 'any')";
        binds.push_back(f.platform);
    }
    std::vector<std::string> archs = f.arch.empty() ? std::vector<std::string>() : compatibleArchs(f.arch);
    if (!archs.empty()) {
        sql += " AND (d.arch = ''";
        for (const auto& a : archs) {
            sql += " OR instr(d.arch, ?) > 0";
            binds.push_back("," + a + ",");
        }
        sql += ")";
    }
    if (!f.categories.empty()) {
        sql += " AND d.category IN (";
        for (size_t i = 0; i < f.categories.size(); ++i) {
            sql += i ? ", ?" : "?";
            binds.push_back(categoryName(f.categories[i]));
        }
        sql += ")";
    }
    // A pool deeper than k, so that the tag boost and the per-document cap can reorder it.
    sql += " ORDER BY r LIMIT ?";
    db::Stmt st(m_db, sql);
    st.bind(1, match);
    st.bind(2, plan.weightList());
    int i = 3;
    for (const auto& b : binds)
        st.bind(i++, b);
    st.bind(i, std::max(40, 8 * k));
    while (st.step()) {
        Hit h;
        h.chunkId = st.integer(0);
        h.docId = st.integer(1);
        h.uid = st.text(2);
        h.title = st.text(3);
        h.heading = st.text(4);
        h.category = parseCategory(st.text(5)).value_or(Category::Guidance);
        h.pageFirst = static_cast<int>(st.integer(6));
        h.pageLast = static_cast<int>(st.integer(7));
        h.bm25 = -st.real(8); // hone_rank, like bm25(), is lower-is-better
        std::string family = st.text(9), arch = st.text(10);
        double boost = 1.0;
        std::string why;
        for (const auto& fam : f.families) {
            if (hasTag(family, fam)) {
                boost += plan.familyBoost;
                why += "; family " + fam;
                break;
            }
        }
        for (const auto& a : archs) {
            if (hasTag(arch, a)) {
                boost += kArchBoost;
                why += "; arch " + a;
                break;
            }
        }
        h.score = h.bm25 * boost;
        h.reason = why;
        pool.push_back(std::move(h));
    }
    return finish(std::move(pool), plan, k);
}

std::vector<Hit> KnowledgeBase::finish(std::vector<Hit> pool, const QueryPlan& plan, int k) const
{
    std::stable_sort(pool.begin(), pool.end(), [](const Hit& a, const Hit& b) { return a.score > b.score; });
    std::vector<Hit> out;
    std::map<int64_t, int> perDoc;
    for (auto& h : pool) {
        if (static_cast<int>(out.size()) == k)
            break;
        if (++perDoc[h.docId] > kPerDocument)
            continue;
        out.push_back(std::move(h));
    }
    // Matched words and a snippet for the few hits returned: FTS5 marks them with the same
    // tokenizer (and stemming) that matched, so the reason is exactly what the index saw.
    db::Stmt st(m_db,
        "SELECT highlight(kb_fts, 1, char(1), char(2)), highlight(kb_fts, 2, char(1), char(2)), "
        "snippet(kb_fts, 2, '[', ']', '...', 14) FROM kb_fts WHERE kb_fts MATCH ?1 AND rowid = ?2");
    std::string match = plan.matchExpression();
    for (auto& h : out) {
        st.reset();
        st.bind(1, match).bind(2, h.chunkId);
        if (st.step()) {
            for (const auto& w : highlighted(st.text(0) + " " + st.text(1)))
                if (std::find(h.matchedTerms.begin(), h.matchedTerms.end(), w) == h.matchedTerms.end())
                    h.matchedTerms.push_back(w);
            h.snippet = st.text(2);
        }
        std::string matched;
        for (const auto& w : h.matchedTerms)
            matched += (matched.empty() ? "" : ", ") + w;
        h.reason = "matched: " + (matched.empty() ? std::string("title or tags") : matched) + h.reason;
    }
    return out;
}

std::string recordedQuery(const RetrievalSignals& s, const std::string& failureKind)
{
    return "family=" + s.family + " arch=" + s.arch + " bound=" + s.bound
        + (failureKind.empty() ? std::string() : " failure=" + failureKind);
}

RetrievalSignals parseRecordedQuery(const std::string& query)
{
    RetrievalSignals s;
    size_t at = 0;
    while (at < query.size()) {
        const size_t end = std::min(query.find(' ', at), query.size());
        const std::string part = query.substr(at, end - at);
        at = end + 1;
        const size_t eq = part.find('=');
        if (eq == std::string::npos || eq == 0)
            continue;
        const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
        if (key == "family")
            s.family = value;
        else if (key == "arch")
            s.arch = value;
        else if (key == "bound")
            s.bound = value;
        else if (key == "failure")
            s.evidence = value;
    }
    return s;
}

} // namespace hone::knowledge
