// Workbench responsiveness (issue 7): the UI with 5,000 nodes taking 20 results a second; and
// how long the diff view takes to open a 20,000-line diff with 400 changed lines
// (BM_OpenLargeDiff: set both sides and paint once, the lexers already made), the line diff of a
// 5,000-line file with three edits (BM_DiffLines) and the tidy layout of a random 5,000-node
// forest (BM_LayoutForest). The view tests check what these do; this measures how fast.
// The node results are real: every evaluation of the sessions in the given store (default: the
// H100 sessions in resources/demo), cloned round-robin onto a random 5,000-node tree with
// varied knobs. Batches reach SessionData exactly as the engine bridge hands them over (one per
// 50 ms tick). Reported: the event loop's stalls (how late a 5 ms probe timer fires), as
// median, p99 and max over a 10 s feed, with every default panel visible.
//   bench_workbench [--store DB] [google benchmark flags]
#include "app/workbench/main_window.h"
#include "views/diff_view.h"
#include "views/line_diff.h"
#include "views/tree_layout.h"

#include "tests/code_lines.h"
#include "core/store.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTimer>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

using namespace hone;

namespace {

/// A result as the worker writes it (the status filled in where the test leaves it out), decoded.
[[maybe_unused]] hone::core::protocol::EvalResult decoded(nlohmann::json j, bool ok)
{
    if (!j.contains("status"))
        j["status"] = ok ? "ok" : "failed";
    return hone::core::protocol::EvalResult::fromJson(j);
}

std::string g_store = HONE_SOURCE_DIR "/resources/demo/h100-ads-2026-11-22.db";

std::vector<nlohmann::json> realResults()
{
    core::Store store(g_store);
    std::vector<nlohmann::json> out;
    for (const auto& s : store.sessions())
        for (const auto& e : store.evaluations(s.id))
            if (e.status == "ok")
                out.push_back(e.result);
    return out;
}

views::NodeInfo makeNode(qint64 id, qint64 parent, std::mt19937& rng)
{
    views::NodeInfo n;
    n.id = id;
    n.parent = parent;
    n.seq = id;
    n.sourceName = id == 0 ? "" : "tuned.cu";
    n.origin = id == 0 ? "root" : "mutation";
    n.op = "inherit";
    if (id > 0)
        n.knobs = {{"VEC", std::to_string(1 << (rng() % 4))}, {"BLOCK", std::to_string(64 << (rng() % 4))},
            {"UNROLL", std::to_string(1 + rng() % 8)}};
    return n;
}

void finish(views::NodeInfo& n, const nlohmann::json& result)
{
    views::applyResult(n, decoded(result, true));
    n.speedup = result["timing"].value("speedup", 1.0);
}

double quantile(std::vector<double> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

void BM_LiveTree(benchmark::State& state)
{
    const int nodes = static_cast<int>(state.range(0));
    const auto results = realResults();
    if (results.empty()) {
        state.SkipWithError("no evaluations in the store");
        return;
    }
    for (auto _ : state) {
        state.PauseTiming();
        QTemporaryDir dir;
        std::filesystem::copy_file(g_store, dir.filePath("store.db").toStdString());
        app::WorkbenchConfig config;
        config.runner.store = dir.filePath("store.db").toStdString();
        config.restoreLayout = false;
        app::MainWindow w(config);
        w.show();
        auto& data = *w.sessionData();
        data.setSession(1, "bench", "", "cuda");
        std::mt19937 rng(7);
        // The tree so far: `nodes` nodes, all evaluated, fed in 100-node batches.
        qint64 next = 0;
        while (next < nodes) {
            views::SessionData::Batch b;
            for (int i = 0; i < 100 && next < nodes; ++i, ++next) {
                auto n = makeNode(next, next == 0 ? -1 : static_cast<qint64>(rng() % next), rng);
                if (next > 0)
                    finish(n, results[static_cast<size_t>(next) % results.size()]);
                b.nodes.push_back(std::move(n));
            }
            data.apply(b);
            QApplication::processEvents();
        }
        w.selection()->setCurrent(nodes / 2);
        QApplication::processEvents();
        state.ResumeTiming();

        // 10 s of a running search: every 50 ms a batch with one new pending node and one result.
        std::vector<double> stalls;
        QElapsedTimer clock;
        clock.start();
        qint64 last = clock.nsecsElapsed();
        QTimer probe;
        probe.setInterval(5);
        QObject::connect(&probe, &QTimer::timeout, [&] {
            const qint64 now = clock.nsecsElapsed();
            stalls.push_back(std::max(0.0, (now - last) / 1e6 - 5.0));
            last = now;
        });
        QTimer feed;
        feed.setInterval(50);
        int fed = 0;
        QObject::connect(&feed, &QTimer::timeout, [&] {
            views::SessionData::Batch b;
            auto pending = makeNode(next, static_cast<qint64>(rng() % next), rng);
            b.nodes.push_back(pending);
            ++next;
            auto done = makeNode(next - 1, pending.parent, rng);
            done.knobs = pending.knobs;
            finish(done, results[static_cast<size_t>(next) % results.size()]);
            b.nodes.push_back(std::move(done));
            views::ProgressPoint p;
            p.seconds = clock.elapsed() / 1000.0;
            p.evaluations = static_cast<int>(next);
            p.bestSpeedup = 2;
            b.progress.push_back(p);
            data.apply(b);
            ++fed;
        });
        probe.start();
        feed.start();
        while (clock.elapsed() < 10000)
            QApplication::processEvents(QEventLoop::AllEvents, 5);
        feed.stop();
        probe.stop();
        state.counters["stall_p50_ms"] = quantile(stalls, 0.5);
        state.counters["stall_p99_ms"] = quantile(stalls, 0.99);
        state.counters["stall_max_ms"] = stalls.empty() ? 0 : *std::max_element(stalls.begin(), stalls.end());
        state.counters["results_per_s"] = fed / (clock.elapsed() / 1000.0);
        state.counters["nodes_at_end"] = static_cast<double>(data.size());
    }
}
BENCHMARK(BM_LiveTree)->Arg(5000)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_OpenLargeDiff(benchmark::State& state)
{
    const int lines = static_cast<int>(state.range(0));
    const QStringList left = codeLines(lines);
    QStringList right = left;
    for (int i = 5; i < lines; i += 50)
        right[i] += QStringLiteral(" // edited");
    const QString a = left.join('\n'), b = right.join('\n');
    views::DiffView view;
    view.resize(1000, 600);
    view.show();
    QApplication::processEvents();
    view.setSides({ "left", "big.cpp", b, {}, "" }, { "right", "big.cpp", a, {}, "" }); // lexers made
    view.repaint();
    for (auto _ : state) {
        view.setSides({ "left", "big.cpp", a, {}, "" }, { "right", "big.cpp", b, {}, "" });
        view.repaint();
    }
    state.counters["changed_lines"] = static_cast<double>(view.diff().added);
}
BENCHMARK(BM_OpenLargeDiff)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DiffLines(benchmark::State& state)
{
    const QStringList left = codeLines(static_cast<int>(state.range(0)));
    QStringList right = left;
    right[1003] += QStringLiteral(" // changed");
    right.insert(2505, QStringLiteral("    inserted();"));
    right.removeAt(4005);
    for (auto _ : state)
        benchmark::DoNotOptimize(views::diffLines(left, right));
}
BENCHMARK(BM_DiffLines)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_LayoutForest(benchmark::State& state)
{
    // Parents drawn from the 8 nodes before, as a search tree grows.
    std::mt19937 rng(42);
    std::vector<qint64> parents { -1 };
    for (qint64 i = 1; i < state.range(0); ++i)
        parents.push_back(std::max<qint64>(0, i - 1 - static_cast<qint64>(rng() % 8)));
    for (auto _ : state)
        benchmark::DoNotOptimize(views::layoutForest(parents));
}
BENCHMARK(BM_LayoutForest)->Arg(5000)->Unit(benchmark::kMillisecond);

} // namespace

int main(int argc, char** argv)
{
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--store") == 0) {
            g_store = argv[i + 1];
            for (int j = i; j + 2 <= argc; ++j)
                argv[j] = argv[j + 2];
            argc -= 2;
            break;
        }
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
