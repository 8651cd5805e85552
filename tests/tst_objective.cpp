// Shape sets (docs/SEARCH.md): the weighted geometric mean of per-shape speedups as the search
// objective, screening on the heaviest shape, and the mark on a candidate slower than the
// baseline on some shape; the engine runs on the real worker.
#include "backends/local_executor.h"
#include "core/engine.h"
#include "core/objective.h"
#include "core/store.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace hone;

namespace {

/// y = a * x + b computed `passes` times over (a compiler barrier keeps every pass); with
/// `fastN`, shapes of that N take one pass.
std::string pacedSeed(int passes, int64_t fastN = -1)
{
    return "#include <hone/kernel.h>\n"
           "extern \"C\" int hone_run(const hone_args* args)\n"
           "{\n"
           "    const float* x = static_cast<const float*>(args->inputs[0].data);\n"
           "    const float* b = static_cast<const float*>(args->inputs[1].data);\n"
           "    float* y = static_cast<float*>(args->outputs[0].data);\n"
           "    const float a = static_cast<float>(hone_param_or(args, \"a\", 0.0));\n"
           "    const int64_t n = hone_numel(&args->inputs[0]);\n"
           "    const int passes = n == "
        + std::to_string(fastN) + " ? 1 : " + std::to_string(passes)
        + ";\n"
          "    for (int p = 0; p < passes; ++p) {\n"
          "        for (int64_t i = 0; i < n; ++i)\n"
          "            y[i] = a * x[i] + b[i];\n"
          "        asm volatile(\"\" ::: \"memory\");\n"
          "    }\n"
          "    return 0;\n"
          "}\n";
}

void write(const std::filesystem::path& p, const std::string& text)
{
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

/// The `scale` test problem with two bench shapes (bench[0] weighs 3) and four seeds: the
/// baseline (16 passes), `split` (1 pass on bench[0], 32 on bench[1]), `slow` (64 passes) and
/// `short` (64 passes on bench[0], 1 on bench[1]: a specialist for the light shape).
/// The first pass reads from memory (caches are flushed before each timed call), the others
/// from cache: the ratios are smaller than the pass counts, but far from 1.
std::filesystem::path makeTwoShapeProblem(const QTemporaryDir& tmp)
{
    const auto dir = std::filesystem::path(tmp.path().toStdString()) / "scale2";
    std::filesystem::create_directories(dir / "seeds");
    std::filesystem::copy_file(std::filesystem::path(HONE_TEST_DATA) / "problems/scale/reference.cpp", dir / "reference.cpp");
    std::ifstream in(std::filesystem::path(HONE_TEST_DATA) / "problems/scale/problem.toml");
    std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    toml.replace(toml.find("baseline = \"naive.cpp\""), 22, "baseline = \"paced.cpp\"");
    const size_t b = toml.find("bench = ");
    toml.replace(b, toml.find('\n', b) - b, "bench = [ { N = 65536, weight = 3 }, { N = 65537 } ]");
    write(dir / "problem.toml", toml);
    write(dir / "seeds" / "paced.cpp", pacedSeed(16));
    write(dir / "seeds" / "split.cpp", pacedSeed(32, 65536));
    write(dir / "seeds" / "slow.cpp", pacedSeed(64));
    write(dir / "seeds" / "short.cpp", pacedSeed(64, 65537));
    return dir;
}

} // namespace

class TestObjective : public QObject {
    Q_OBJECT

private slots:
    void weightedGeometricMean()
    {
        QCOMPARE(core::weightedGeomean({ 4.0, 0.25 }, { 1.0, 1.0 }), 1.0);
        QVERIFY(std::abs(core::weightedGeomean({ 4.0, 0.125 }, { 3.0, 1.0 }) - std::pow(4.0, 0.75) * std::pow(0.125, 0.25)) < 1e-12);
        // Weights are shares: scaling them all changes nothing.
        QCOMPARE(core::weightedGeomean({ 2.0, 8.0 }, { 10.0, 30.0 }), core::weightedGeomean({ 2.0, 8.0 }, { 1.0, 3.0 }));
        QCOMPARE(core::weightedGeomean({ 2.0, 0.0 }, { 1.0, 1.0 }), 0.0); // a shape without a speedup
        QCOMPARE(core::weightedGeomean({ 2.0 }, { 1.0, 1.0 }), 0.0);
        QCOMPARE(core::weightedGeomean({}, {}), 0.0);
    }

    void objectiveMarksSlowerShapesAndEstimatesScreened()
    {
        auto shape = [](size_t index, const std::string& label, double medianNs, double speedup) {
            core::protocol::ShapeResult x;
            x.index = index;
            x.label = label;
            x.timing = core::protocol::Timing {};
            x.timing->stats.medianNs = medianNs;
            x.speedup = speedup;
            return x;
        };
        core::protocol::EvalResult s;
        s.status = core::protocol::EvalStatus::Ok;
        s.timing = core::protocol::Timing {};
        s.timing->speedup = 4.0; // the screening shape's
        s.shapes = std::vector { shape(0, "bench[0]", 100, 4.0), shape(1, "bench[1]", 800, 0.125) };
        const core::Objective o = core::objectiveOf(s, { 3.0, 1.0 }, 0);
        QCOMPARE(o.value, core::weightedGeomean({ 4.0, 0.125 }, { 3.0, 1.0 }));
        QCOMPARE(o.slowerOn, std::vector<std::string> { "bench[1]" });
        QCOMPARE(o.weights, (std::vector<double> { 3.0, 1.0 }));
        QVERIFY(!o.screened);
        // Within timing noise of the baseline is no regression.
        (*s.shapes)[1].speedup = 0.99;
        QVERIFY(core::objectiveOf(s, { 3.0, 1.0 }, 0).slowerOn.empty());

        core::protocol::EvalResult screened = s;
        screened.shapes->resize(1);
        (*screened.shapes)[0].speedup = 0.5;
        screened.screened = true;
        const core::Objective e = core::objectiveOf(screened, { 3.0, 1.0 }, 0.4);
        QVERIFY(e.screened);
        QCOMPARE(e.value, 0.5 * 0.4);
        // One bench shape: the result's own speedup.
        core::protocol::EvalResult one;
        one.status = core::protocol::EvalStatus::Ok;
        one.timing = core::protocol::Timing {};
        one.timing->speedup = 2.5;
        QCOMPARE(core::objectiveOf(one, { 1.0 }, 0).value, 2.5);
    }

    void heaviestShapeIsTimedFirst()
    {
        core::ProblemSpec spec = core::parseProblemToml(R"(name = "s"
family = "s"
[[inputs]]
name = "x"
dtype = "f32"
shape = ["N"]
[[outputs]]
name = "y"
dtype = "f32"
shape = ["N"]
[shapes]
small = [ { N = 3 } ]
bench = [ { N = 1000 }, { N = 4000 }, { N = 3000, weight = 2 } ]
[cost]
flops = "N"
bytes = "8 * N"
[tolerance]
f32 = { atol = 1e-6, rtol = 1e-4 }
)",
            "problem.toml");
        core::Ceilings c;
        QCOMPARE(core::timingOrder(spec, c), (std::vector<size_t> { 2, 0, 1 })); // 2 x 3000 > 4000
        spec.benchWeights = { 1, 1, 1 };
        QCOMPARE(core::timingOrder(spec, c), (std::vector<size_t> { 1, 0, 2 }));
        // Against ceilings: compute-bound when flops / peak dominates.
        c.peakGbps = 100;
        c.peakGflops = 1;
        QCOMPARE(core::timingOrder(spec, c), (std::vector<size_t> { 1, 0, 2 }));
    }

    /// An engine run on a CPU problem with two bench shapes: the candidate faster on the heavy
    /// shape and slower on the other wins by the weighted geometric mean and is marked; a
    /// candidate slow on the screening shape is not timed on the other.
    void engineRanksByTheWeightedObjective()
    {
        QTemporaryDir tmp;
        const auto problem = makeTwoShapeProblem(tmp);
        const std::string storePath = tmp.path().toStdString() + "/hone.db";
        core::Store store(storePath);
        backends::LocalExecutorConfig cfg;
        const char* w = std::getenv("HONE_WORKER");
        cfg.workerPath = w ? w : "hone-worker";
        cfg.cacheDir = tmp.path().toStdString() + "/cache";
        cfg.parallel = 1;
        cfg.limits.memoryMiB = 768;
        backends::LocalExecutor exec(cfg);
        core::Engine engine(store, exec);
        core::RunOptions opt;
        opt.problemDir = problem;
        opt.budget = 4; // the four seeds; they have no knobs
        opt.workers = 1;
        opt.samples = 20;
        opt.useCache = false;
        const core::Report r = engine.run(opt);
        QCOMPARE(r.progress.evaluations, 4);

        std::map<std::string, core::EvaluationRecord> bySource;
        for (const auto& e : store.evaluations(engine.sessionId()))
            bySource[engine.tree().node(e.nodeId).sourceName] = e;
        QCOMPARE(bySource.size(), size_t(4));
        for (const auto& [name, e] : bySource)
            QVERIFY2(e.status == "ok", (name + ": " + e.failureMessage).c_str());

        const core::EvaluationRecord& split = bySource["split.cpp"];
        QCOMPARE(split.shapes.size(), size_t(2));
        QCOMPARE(split.shapes[0].label, std::string("bench[0]")); // the heaviest first
        QCOMPARE(split.shapes[0].weight, 3.0);
        QVERIFY2(split.shapes[0].speedup > 1.5, std::to_string(split.shapes[0].speedup).c_str());
        QVERIFY2(split.shapes[1].speedup < 0.8, std::to_string(split.shapes[1].speedup).c_str());
        QCOMPARE(split.speedup, core::weightedGeomean({ split.shapes[0].speedup, split.shapes[1].speedup }, { 3, 1 }));
        QCOMPARE(split.slowerShapes, std::vector<std::string> { "bench[1]" });
        QVERIFY(!split.screened);
        QVERIFY(split.result["objective"]["slower_on"] == nlohmann::json::array({ "bench[1]" }));

        // The baseline is never marked; the slow seed was screened out on bench[0].
        QVERIFY(bySource["paced.cpp"].slowerShapes.empty());
        const core::EvaluationRecord& slow = bySource["slow.cpp"];
        QVERIFY(slow.screened);
        // Also timed on the probe shape (the only other), where it is slow too.
        QCOMPARE(slow.shapes.size(), size_t(2));
        QCOMPARE(slow.shapes[1].label, std::string("bench[1]"));
        QVERIFY(slow.speedup < split.speedup);
        // The specialist for bench[1]: under the bar on bench[0], the fastest on bench[1], so
        // timed on both and not screened.
        const core::EvaluationRecord& specialist = bySource["short.cpp"];
        QVERIFY(!specialist.screened);
        QCOMPARE(specialist.shapes.size(), size_t(2));
        QVERIFY2(specialist.shapes[0].speedup < 0.8, std::to_string(specialist.shapes[0].speedup).c_str());
        QVERIFY2(specialist.shapes[1].speedup > 1.5, std::to_string(specialist.shapes[1].speedup).c_str());

        QVERIFY(r.best.has_value());
        QCOMPARE(r.bestSource, std::string("split.cpp"));
        QCOMPARE(r.bestSlowerOn, std::vector<std::string> { "bench[1]" });
        QCOMPARE(r.bestShapes.size(), size_t(2));

        // `hone show` says so.
        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (run through ctest)");
        QProcess show;
        show.start(cli, { "--store", QString::fromStdString(storePath), "show", QString::number(engine.sessionId()) });
        QVERIFY(show.waitForFinished(60000));
        const QString out = QString::fromUtf8(show.readAllStandardOutput());
        QVERIFY2(out.contains("SLOWER THAN BASELINE on bench[1]"), qPrintable(out));
        QVERIFY2(out.contains("(screened on bench[0]: estimate)"), qPrintable(out));
        QVERIFY2(out.contains(QRegularExpression("bench\\[1\\]\\s+weight 1 .*SLOWER THAN BASELINE")), qPrintable(out));
    }

    /// `hone bench` tabulates every bench shape of a set: JSON rows with per-shape seed, best and
    /// speedup, and one Markdown line per shape plus the problem's weighted summary line.
    void benchTablesEveryShape()
    {
        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (run through ctest)");
        QTemporaryDir tmp;
        QProcess bench;
        bench.start(cli, { "--store", tmp.filePath("hone.db"), "--create", "--cache-dir", tmp.filePath("cache"),
                             "bench", QStringLiteral(HONE_SOURCE_DIR "/resources/problems/cpu"), "--only", "softmax",
                             "--budget", "3", "--workers", "1", "--no-torch", "--no-profile", "--out",
                             tmp.filePath("out") });
        QVERIFY(bench.waitForFinished(240000));
        QVERIFY2(bench.exitCode() == 0, bench.readAllStandardError().constData());
        std::ifstream in(tmp.filePath("out/bench.json").toStdString());
        const nlohmann::json j = nlohmann::json::parse(in);
        QCOMPARE(j["rows"].size(), size_t(1));
        const nlohmann::json& row = j["rows"][0];
        QCOMPARE(row["shapes"].size(), size_t(3));
        std::vector<double> speedups, weights;
        for (const auto& sh : row["shapes"]) {
            QVERIFY(sh["seed_median_ns"].get<double>() > 0);
            QVERIFY(sh["best_median_ns"].get<double>() > 0);
            speedups.push_back(sh["speedup"].get<double>());
            weights.push_back(sh["weight"].get<double>());
        }
        QCOMPARE(row["shapes"][0]["label"].get<std::string>(), std::string("bench[0]")); // M = 2048: the heaviest
        QCOMPARE(row["shapes"][0]["shape"].get<std::string>(), std::string("M=2048 N=1024"));
        QVERIFY(std::abs(row["speedup"].get<double>() - core::weightedGeomean(speedups, weights)) < 1e-9);
        std::ifstream mdIn(tmp.filePath("out/bench.md").toStdString());
        const std::string md((std::istreambuf_iterator<char>(mdIn)), std::istreambuf_iterator<char>());
        QVERIFY2(md.find("| softmax | bench[2] M=64 N=4099 | 1 |") != std::string::npos, md.c_str());
        QVERIFY2(md.find("| **softmax** | all shapes |") != std::string::npos, md.c_str());
    }
};

QTEST_GUILESS_MAIN(TestObjective)
#include "tst_objective.moc"
