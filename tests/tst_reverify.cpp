// The best of a session is re-verified in a fresh worker with new seeds and inputs before it is
// reported, exported or approved (issue 18). Real worker, real engine, real store.

#include "backends/local_executor.h"
#include "backends/worker/tensors.h"
#include "core/engine.h"
#include "core/export_bundle.h"
#include "core/problem_spec.h"
#include "core/store.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace hone;

namespace {

std::filesystem::path dataDir() { return HONE_TEST_DATA; }

std::string workerPath()
{
    const char* w = std::getenv("HONE_WORKER");
    return w ? w : "hone-worker";
}

backends::LocalExecutorConfig executorConfig(const QTemporaryDir& tmp)
{
    backends::LocalExecutorConfig cfg;
    cfg.workerPath = workerPath();
    cfg.cacheDir = tmp.path().toStdString() + "/cache";
    cfg.parallel = 1;
    cfg.limits.memoryMiB = 768;
    return cfg;
}

core::RunOptions runOptions(const std::filesystem::path& problem, int budget)
{
    core::RunOptions o;
    o.problemDir = problem;
    o.budget = budget;
    o.samples = 20;
    o.warmStart = false;
    return o;
}

void writeFile(const std::filesystem::path& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

/// y = a*x + b, `reps` times over (so the baseline is slow and the others measurably faster);
/// `gate` is code run first that may return early.
std::string scaleKernel(int reps, const std::string& gate)
{
    std::ostringstream s;
    s << "#include <hone/kernel.h>\n#include <cstring>\n#include <cstdint>\n\n"
      << "extern \"C\" int hone_run(const hone_args* args)\n{\n"
      << "    const float* x = static_cast<const float*>(args->inputs[0].data);\n"
      << "    const float* b = static_cast<const float*>(args->inputs[1].data);\n"
      << "    float* y = static_cast<float*>(args->outputs[0].data);\n"
      << "    const float a = static_cast<float>(hone_param_or(args, \"a\", 0.0));\n"
      << "    const int64_t n = hone_numel(&args->inputs[0]);\n"
      << gate
      << "    for (int r = 0; r < " << reps << "; ++r) {\n"
      << "        for (int64_t i = 0; i < n; ++i)\n"
      << "            y[i] = a * x[i] + b[i];\n"
      << "        asm volatile(\"\" ::: \"memory\");\n"
      << "    }\n"
      << "    return 0;\n}\n";
    return s.str();
}

/// The bits of x[0] for every (shape, seed) the search draws with its defaults: checks with
/// seeds 1, 2, 3 on the small shapes, timing sets 1, 2, 3 and the re-check 1000 on the bench
/// shape. Drawn with the worker's own generator.
std::set<uint32_t> searchInputs(const std::filesystem::path& problem)
{
    const nlohmann::json resolved = core::resolveProblem(core::loadProblem(problem));
    std::set<uint32_t> out;
    auto add = [&](const nlohmann::json& shape, uint64_t seed) {
        backends::HostTensor t(backends::parseTensors(shape, "inputs", "test").at(0));
        const std::string label = shape["label"].get<std::string>();
        t.fill(seed, label, 0);
        uint32_t bits = 0;
        std::memcpy(&bits, t.data(), 4);
        out.insert(bits);
    };
    for (const auto& shape : resolved["check"])
        for (uint64_t seed : {1, 2, 3})
            add(shape, seed);
    for (uint64_t seed : {1, 2, 3, 1000})
        add(resolved["bench"][0], seed);
    return out;
}

/// `scale` with three seeds: a slow baseline (8 passes), an honest medium kernel (3 passes) and
/// a one-pass kernel that is right only on inputs whose first element it has seen in a search
/// with the default seeds, and off by one everywhere else.
std::filesystem::path hostileProblem(const QTemporaryDir& tmp)
{
    auto dir = std::filesystem::path(tmp.path().toStdString()) / "scale";
    std::filesystem::copy(dataDir() / "problems" / "scale", dir, std::filesystem::copy_options::recursive);
    std::filesystem::remove(dir / "seeds" / "tuned.cpp");
    writeFile(dir / "seeds" / "naive.cpp", scaleKernel(8, ""));
    writeFile(dir / "seeds" / "medium.cpp", scaleKernel(3, ""));
    std::string table;
    for (uint32_t bits : searchInputs(dir))
        table += std::to_string(bits) + "u, ";
    const std::string gate = "    static const uint32_t seen[] = {" + table
        + "};\n"
          "    uint32_t first = 0;\n"
          "    std::memcpy(&first, x, 4);\n"
          "    bool known = false;\n"
          "    for (uint32_t s : seen)\n"
          "        known = known || s == first;\n"
          "    if (!known) {\n"
          "        for (int64_t i = 0; i < n; ++i)\n"
          "            y[i] = a * x[i] + b[i] + 1.0f;\n"
          "        return 0;\n"
          "    }\n";
    writeFile(dir / "seeds" / "memorized.cpp", scaleKernel(1, gate));
    return dir;
}

int64_t nodeOf(const core::SearchTree& tree, const std::string& source)
{
    for (const auto& n : tree.nodes())
        if (n.sourceName == source)
            return n.id;
    return -1;
}

} // namespace

class TestReverify : public QObject {
    Q_OBJECT
private slots:
    /// An honest run ends with its best re-verified: the report says so, with the second
    /// measurement, and the store holds the re-verification (new seeds), apart from the search's
    /// evaluations and budget.
    void honestBestIsVerified()
    {
        QTemporaryDir tmp;
        auto problem = std::filesystem::path(tmp.path().toStdString()) / "scale";
        std::filesystem::copy(dataDir() / "problems" / "scale", problem, std::filesystem::copy_options::recursive);
        core::Store store(tmp.path().toStdString() + "/hone.db");
        backends::LocalExecutor exec(executorConfig(tmp));
        core::Engine engine(store, exec);
        const core::Report r = engine.run(runOptions(problem, 4));
        QVERIFY(r.best.has_value());
        QVERIFY2(r.bestVerified, r.reverifyNote.c_str());
        QVERIFY(r.reverifyNote.empty());
        QVERIFY(r.reverifyMedianNs > 0);
        QVERIFY(r.reverifySpeedup > 0);
        QCOMPARE(r.progress.evaluations, 4); // the re-verification is not a search evaluation
        QCOMPARE(store.evaluations(r.progress.session).size(), size_t(4));

        const auto rows = store.reverifications(r.progress.session);
        QCOMPARE(rows.size(), size_t(1));
        QCOMPARE(rows[0].nodeId, *r.best);
        QCOMPARE(rows[0].status, std::string("verified"));
        QCOMPARE(rows[0].medianNs, r.reverifyMedianNs);
        // New seeds for the checks, the timing sets and the re-check, and the worker used them.
        for (const auto& s : rows[0].config["seeds"])
            QVERIFY(s.get<uint64_t>() >= 1'000'000);
        QVERIFY(rows[0].config["timing_seed"].get<uint64_t>() >= 1'000'000);
        const uint64_t timingSeed = rows[0].config["timing_seed"].get<uint64_t>();
        QCOMPARE(rows[0].result["timing"]["seed"].get<uint64_t>(), timingSeed);
        std::set<uint64_t> checked;
        for (const auto& c : rows[0].result["checks"])
            checked.insert(c["seed"].get<uint64_t>());
        QVERIFY(checked.count(rows[0].config["recheck_seed"].get<uint64_t>()));
        QVERIFY(!checked.count(1) && !checked.count(1000));

        const nlohmann::json evidence = core::buildEvidence(store, r.progress.session, *r.best);
        QCOMPARE(evidence["reverification"]["status"].get<std::string>(), std::string("verified"));

        // --no-reverify: no re-verification, and the report says the best is not verified.
        core::RunOptions off = runOptions(problem, 2);
        off.reverify = false;
        const core::Report r2 = engine.run(off);
        QVERIFY(r2.best.has_value());
        QVERIFY(!r2.bestVerified);
        QVERIFY2(r2.reverifyNote.find("--no-reverify") != std::string::npos, r2.reverifyNote.c_str());
        QVERIFY(store.reverifications(r2.progress.session).empty());
    }

    /// A kernel that is right only on the inputs a search with the default seeds draws is the
    /// search's best, fails its re-verification, is not reported, cannot be exported or shown as
    /// best, and the next node, re-verified, is reported instead.
    void memorizedInputsFailReverification()
    {
        QTemporaryDir tmp;
        const auto problem = hostileProblem(tmp);
        const std::string storePath = tmp.path().toStdString() + "/hone.db";
        core::Store store(storePath);
        backends::LocalExecutor exec(executorConfig(tmp));
        core::Engine engine(store, exec);
        const core::Report r = engine.run(runOptions(problem, 10));
        const int64_t session = r.progress.session;
        const int64_t memorized = nodeOf(engine.tree(), "memorized.cpp");
        const int64_t medium = nodeOf(engine.tree(), "medium.cpp");
        QVERIFY(memorized > 0 && medium > 0);

        // The search itself was fooled: every check and timed call passed, and it was fastest.
        const auto& tree = engine.tree();
        QVERIFY2(tree.node(memorized).state == core::NodeState::Ok, tree.node(memorized).failureKind.c_str());
        QVERIFY2(tree.node(memorized).speedup > tree.node(medium).speedup,
            (std::to_string(tree.node(memorized).speedup) + " vs " + std::to_string(tree.node(medium).speedup)).c_str());

        // The report names the next node, verified.
        QVERIFY(r.best.has_value());
        QCOMPARE(*r.best, medium);
        QCOMPARE(r.bestSource, std::string("medium.cpp"));
        QVERIFY2(r.bestVerified, r.reverifyNote.c_str());
        QCOMPARE(r.reverifications.size(), size_t(2));
        QCOMPARE(r.reverifications[0].node, memorized);
        QVERIFY(!r.reverifications[0].verified);
        QCOMPARE(r.reverifications[0].failureKind, std::string("wrong_result"));
        QCOMPARE(r.reverifications[1].node, medium);
        QVERIFY(r.reverifications[1].verified);

        const auto rows = store.reverifications(session);
        QCOMPARE(rows.size(), size_t(2));
        QCOMPARE(rows[0].nodeId, memorized);
        QCOMPARE(rows[0].status, std::string("failed"));
        QCOMPARE(rows[1].status, std::string("verified"));

        // Export refuses it (unless asked to, for inspection).
        const std::filesystem::path out = tmp.path().toStdString() + "/export";
        QVERIFY_THROWS_EXCEPTION(core::ExportError, core::exportBundle(store, session, memorized, out / "a"));
        core::ExportOptions inspect;
        inspect.allowFailedReverification = true;
        const core::ExportResult e = core::exportBundle(store, session, memorized, out / "b", inspect);
        QCOMPARE(e.evidence["reverification"]["status"].get<std::string>(), std::string("failed"));
        QVERIFY(!e.warnings.empty() && e.warnings[0].find("FAILED its re-verification") != std::string::npos);

        // A later session does not warm-start from it.
        for (const auto& k : store.priorKernels("cpu", "", "scale", "elementwise", -1, 10))
            QVERIFY(!(k.session == session && k.node == memorized));

        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (run through ctest)");
        QProcess show;
        show.start(cli, {"--store", QString::fromStdString(storePath), "show", QString::number(session)});
        QVERIFY(show.waitForFinished(60000));
        const QString text = QString::fromUtf8(show.readAllStandardOutput());
        QVERIFY2(text.contains(QStringLiteral("best node %1 ").arg(medium)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("FAILED RE-VERIFICATION wrong_result")), qPrintable(text));
        QProcess exp;
        exp.start(cli, {"--store", QString::fromStdString(storePath), "export",
                           QStringLiteral("%1/%2").arg(session).arg(memorized), QString::fromStdString((out / "c").string())});
        QVERIFY(exp.waitForFinished(60000));
        QVERIFY(exp.exitCode() != 0);
        const QString err = QString::fromUtf8(exp.readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("failed its re-verification")), qPrintable(err));
        QVERIFY(!std::filesystem::exists(out / "c"));
    }
};

QTEST_GUILESS_MAIN(TestReverify)
#include "tst_reverify.moc"
