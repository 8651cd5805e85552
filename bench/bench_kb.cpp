// Retrieval latency of the knowledge base (issue 6: < 20 ms on 10,000 chunks).
//
// The base holds the seed corpus plus synthetic documents whose text is drawn from the
// corpus's own vocabulary (Zipf-weighted), so that query words match thousands of chunks, as
// they would in a large curated base, rather than none.
//
//   bench_kb --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include "knowledge/knowledge_base.h"

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <random>

namespace {

namespace kb = hone::knowledge;
namespace fs = std::filesystem;

std::vector<kb::SourceDocument> seedCorpus()
{
    std::vector<kb::SourceDocument> docs;
    fs::path dir = fs::path(HONE_SOURCE_DIR) / "resources" / "knowledge";
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".md")
            files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
        docs.push_back(kb::readDocument(f.string()));
    return docs;
}

/// Word frequencies of the corpus, most frequent first.
std::vector<std::string> vocabulary(const std::vector<kb::SourceDocument>& docs)
{
    std::map<std::string, int> counts;
    for (const auto& d : docs) {
        for (const auto& s : d.sections) {
            std::string w;
            for (char c : s.text + " ") {
                if (std::isalnum(static_cast<unsigned char>(c))) {
                    w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                } else {
                    if (w.size() >= 3)
                        ++counts[w];
                    w.clear();
                }
            }
        }
    }
    std::vector<std::pair<int, std::string>> byCount;
    for (const auto& [w, n] : counts)
        byCount.emplace_back(n, w);
    std::sort(byCount.rbegin(), byCount.rend());
    std::vector<std::string> out;
    for (const auto& [n, w] : byCount)
        out.push_back(w);
    return out;
}

/// A knowledge base of (at least) `chunks` chunks in a temporary file, built once per size.
class Fixture {
public:
    explicit Fixture(int chunks)
        : m_path(fs::temp_directory_path()
            / ("hone_bench_kb_" + std::to_string(getpid()) + "_" + std::to_string(chunks) + ".db"))
    {
        fs::remove(m_path);
        m_kb = std::make_unique<kb::KnowledgeBase>(m_path);
        auto docs = seedCorpus();
        std::vector<std::string> vocab = vocabulary(docs);
        m_kb->addAll(docs);
        int have = m_kb->liveChunkCount();
        std::mt19937_64 rng(42);
        // Zipf(1) over the vocabulary by inverse transform on precomputed cumulative weights.
        std::vector<double> cumulative;
        double total = 0;
        for (size_t i = 0; i < vocab.size(); ++i)
            cumulative.push_back(total += 1.0 / double(i + 1));
        std::uniform_real_distribution<double> u(0.0, total);
        auto word = [&] {
            return vocab[static_cast<size_t>(
                std::lower_bound(cumulative.begin(), cumulative.end(), u(rng)) - cumulative.begin())];
        };
        const char* platforms[] = { "cuda", "hip", "cpu", "any" };
        const char* archs[] = { "sm_90", "sm_80", "gfx942", "x86_64-avx2", "" };
        const char* families[]
            = { "softmax", "gemm", "layernorm", "reduction", "embedding_bag", "transpose", "" };
        std::vector<kb::SourceDocument> synthetic;
        for (int d = 0; have < chunks; ++d) {
            kb::SourceDocument doc;
            doc.uid = "synthetic-" + std::to_string(d);
            doc.title = "Synthetic note " + std::to_string(d) + " on " + word() + " and " + word();
            doc.format = "markdown";
            doc.category = static_cast<kb::Category>(d % 3);
            doc.categorySet = true;
            doc.tags.platform = platforms[d % 4];
            if (*archs[d % 5] && doc.tags.platform != "any")
                doc.tags.arch = { archs[d % 5] };
            if (*families[d % 7])
                doc.tags.family = { families[d % 7] };
            for (int s = 0; s < 10 && have < chunks; ++s, ++have) {
                kb::Section sec;
                sec.heading = word() + " " + word() + " " + word();
                for (int i = 0; i < 140; ++i)
                    sec.text += word() + (i % 15 == 14 ? ".\n" : " ");
                doc.sections.push_back(std::move(sec));
            }
            synthetic.push_back(std::move(doc));
        }
        m_kb->addAll(synthetic);
    }
    ~Fixture()
    {
        m_kb.reset();
        fs::remove(m_path);
        fs::remove(m_path.string() + "-wal");
        fs::remove(m_path.string() + "-shm");
    }

    kb::KnowledgeBase& base() { return *m_kb; }

private:
    fs::path m_path;
    std::unique_ptr<kb::KnowledgeBase> m_kb;
};

Fixture& fixture(int chunks)
{
    static std::map<int, std::unique_ptr<Fixture>> fixtures;
    auto& f = fixtures[chunks];
    if (!f)
        f = std::make_unique<Fixture>(chunks);
    return *f;
}

std::vector<kb::RetrievalSignals> querySet()
{
    std::vector<kb::RetrievalSignals> q(6);
    q[0].family = "softmax";
    q[0].arch = "sm_90";
    q[0].bound = "memory";
    q[0].evidence = "memory-bound: 41% of the measured copy bandwidth";
    q[1].family = "gemm";
    q[1].arch = "sm_90";
    q[1].bound = "compute";
    q[1].hints = { "use tensor cores" };
    q[2].family = "layernorm";
    q[2].arch = "gfx942";
    q[2].bound = "occupancy";
    q[2].evidence = "occupancy limited by VGPR usage";
    q[3].family = "embedding_bag";
    q[3].arch = "x86_64-avx512";
    q[3].bound = "latency";
    q[4].family = "reduction";
    q[4].arch = "sm_90";
    q[4].compileError = "ptxas error: Entry function uses too much shared data (0x12000 bytes, 0xc000 max)";
    q[5].family = "transpose";
    q[5].arch = "sm_90";
    q[5].bound = "memory";
    q[5].hints = { "shared memory bank conflicts" };
    return q;
}

void BM_Retrieve(benchmark::State& state)
{
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    auto queries = querySet();
    size_t i = 0;
    size_t hits = 0;
    for (auto _ : state) {
        auto h = f.base().retrieve(queries[i++ % queries.size()], 5);
        hits += h.size();
        benchmark::DoNotOptimize(h);
    }
    state.counters["chunks"] = f.base().liveChunkCount();
    state.counters["hits_per_query"] = double(hits) / double(state.iterations());
}
BENCHMARK(BM_Retrieve)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_SearchText(benchmark::State& state)
{
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    const char* texts[] = { "shared memory bank conflicts", "coalescing vectorized loads",
        "warp shuffle reduction", "tensor cores wgmma", "LDS wavefront occupancy" };
    size_t i = 0;
    for (auto _ : state) {
        auto h = f.base().search(texts[i++ % 5], {}, 5);
        benchmark::DoNotOptimize(h);
    }
    state.counters["chunks"] = f.base().liveChunkCount();
}
BENCHMARK(BM_SearchText)->Arg(10000)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
