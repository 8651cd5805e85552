// The search loop end to end on the real worker: isolation failures, determinism, and resume
// after kill -9.

#include "backends/local_executor.h"
#include "core/engine.h"
#include "core/protocol.h"
#include "core/store.h"
#include "core/utf8.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <csignal>
#include <thread>
#include <filesystem>
#include <thread>
#include <map>

using namespace hone;

namespace {

std::filesystem::path dataDir() { return HONE_TEST_DATA; }

std::string workerPath()
{
    const char* w = std::getenv("HONE_WORKER");
    return w ? w : "hone-worker";
}

/// A copy of the `scale` problem, optionally with extra (hostile) seeds.
std::filesystem::path makeProblem(const QTemporaryDir& tmp, const std::vector<std::string>& extraSeeds)
{
    auto dir = std::filesystem::path(tmp.path().toStdString()) / "scale";
    std::filesystem::copy(dataDir() / "problems" / "scale", dir, std::filesystem::copy_options::recursive);
    for (const auto& s : extraSeeds)
        std::filesystem::copy_file(dataDir() / "hostile" / s, dir / "seeds" / s);
    return dir;
}

backends::LocalExecutorConfig executorConfig(const QTemporaryDir& tmp, int parallel)
{
    backends::LocalExecutorConfig cfg;
    cfg.workerPath = workerPath();
    cfg.cacheDir = tmp.path().toStdString() + "/cache";
    cfg.parallel = parallel;
    cfg.limits.memoryMiB = 768;
    return cfg;
}

struct Shape {
    int64_t parent;
    std::string source;
    std::string knobs;
    std::string origin;
    bool operator==(const Shape&) const = default;
};

std::vector<Shape> shapeOf(const core::SearchTree& t)
{
    std::vector<Shape> out;
    for (const auto& n : t.nodes())
        out.push_back({n.parent, n.sourceName, core::knobsToString(n.knobs), n.origin});
    return out;
}

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
private slots:
    /// A worker binary that is missing for a moment (a rebuild rewriting it) does not fail the
    /// evaluation: the executor starts it again after a pause. One that stays missing fails with
    /// the reason by name, after the retries.
    /// Parallel workers split the host's cores for their tensor work (--threads), unless the
    /// user set $HONE_WORKER_THREADS; one worker keeps every core.
    void parallelWorkersShareTheCores()
    {
        QTemporaryDir tmp;
        if (qEnvironmentVariableIsSet("HONE_WORKER_THREADS"))
            QSKIP("$HONE_WORKER_THREADS is set in this environment: the executor passes it through");
        const auto argv = [&](int parallel) {
            return backends::LocalExecutor(executorConfig(tmp, parallel)).command().argv;
        };
        const auto one = argv(1);
        QVERIFY(std::find(one.begin(), one.end(), "--threads") == one.end());
        const auto two = argv(2);
        const auto at = std::find(two.begin(), two.end(), "--threads");
        QVERIFY(at != two.end() && at + 1 != two.end());
        const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        QCOMPARE(std::stoi(*(at + 1)), std::max(1, cores / 2));
    }

    void workerThatCannotStartIsRetriedThenNamed()
    {
        QTemporaryDir tmp;
        const std::filesystem::path late = tmp.path().toStdString() + "/late-worker";
        backends::LocalExecutorConfig cfg = executorConfig(tmp, 1);
        cfg.workerPath = late;
        nlohmann::json hello = core::protocol::makeMessage("hello");
        hello["id"] = "h";
        {
            backends::LocalExecutor exec(cfg);
            std::thread appear([&] {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                std::filesystem::copy_file(workerPath(), late);
            });
            exec.submit(core::EvalJob {"h", hello});
            auto done = exec.next(std::chrono::seconds(60));
            appear.join();
            QVERIFY(done.has_value());
            QVERIFY2(done->result.value("type", std::string()) == "hello", done->result.dump().c_str());
        }
        {
            cfg.workerPath = tmp.path().toStdString() + "/never-there";
            backends::LocalExecutor exec(cfg);
            const auto t0 = std::chrono::steady_clock::now();
            exec.submit(core::EvalJob {"h", hello});
            auto done = exec.next(std::chrono::seconds(60));
            const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            QVERIFY(done.has_value());
            const std::string msg = done->result["failure"].value("message", std::string());
            QVERIFY2(msg.find("could not start the worker: exec of the worker command failed: ENOENT") == 0, msg.c_str());
            QVERIFY2(took > 3.0, std::to_string(took).c_str()); // 0.5 + 1 + 2 s of pauses
        }
    }

    void isolationFailuresCostOneCandidate()
    {
        QTemporaryDir tmp;
        auto problem = makeProblem(tmp,
            {"segfault.cpp", "abort.cpp", "infinite_loop.cpp", "runaway_alloc.cpp", "garbage_stdout.cpp"});
        core::Store store(tmp.path().toStdString() + "/hone.db");
        backends::LocalExecutor exec(executorConfig(tmp, 2));
        core::Engine engine(store, exec);
        core::RunOptions opt;
        opt.problemDir = problem;
        opt.budget = 14;   // 7 seeds, then 7 knob children of the tuned seed
        opt.workers = 2;
        opt.seed = 5;
        opt.runLimitSeconds = 4;
        opt.samples = 20;
        core::Report r = engine.run(opt);

        QCOMPARE(r.progress.evaluations, 14);
        QCOMPARE(r.stopReason, std::string("budget of 14 evaluations spent"));
        std::map<std::string, std::pair<std::string, std::string>> failures; // source -> (kind, message)
        for (const auto& e : store.evaluations(engine.sessionId())) {
            const auto& n = engine.tree().node(e.nodeId);
            if (e.status == "failed")
                failures[n.sourceName] = {e.failureKind, e.failureMessage};
        }
        auto expect = [&](const char* source, const char* kind, const char* fragment) {
            QVERIFY2(failures.count(source), source);
            QCOMPARE(failures[source].first, std::string(kind));
            QVERIFY2(failures[source].second.find(fragment) != std::string::npos, failures[source].second.c_str());
        };
        expect("segfault.cpp", "crash", "SIGSEGV");
        expect("abort.cpp", "crash", "SIGABRT");
        expect("infinite_loop.cpp", "timeout", "no progress for");
        expect("runaway_alloc.cpp", "memory_limit", "MiB limit");
        // Candidate code runs in a process that holds no protocol pipe: the junk reaches stderr
        // only, and the candidate fails on what it did not write.
        expect("garbage_stdout.cpp", "partial_write", "never written");
        QCOMPARE(failures.size(), size_t(5)); // nothing else failed

        // The search went on past the failures: knob children were evaluated and ranked.
        int children = 0;
        for (const auto& n : engine.tree().nodes())
            if (n.origin == "mutation" || n.origin == "crossover") {
                ++children;
                QCOMPARE(int(n.state), int(core::NodeState::Ok));
            }
        QCOMPARE(children, 7);
        QVERIFY(r.best.has_value());
        QVERIFY(r.bestSpeedup > 0.2);
        QCOMPARE(store.session(engine.sessionId())->status, std::string("finished"));
    }

    /// A candidate that writes bytes which are not UTF-8 into the protocol pipe and stderr: the
    /// evaluation fails with the bytes shown as U+FFFD, is stored, and the search goes on (before,
    /// the store threw and every resume died the same way). `hone eval` prints it as JSON too.
    void invalidUtf8FromACandidateDoesNotEndTheRun()
    {
        QTemporaryDir tmp;
        auto problem = makeProblem(tmp, {"invalid_utf8.cpp"});
        const std::string storePath = tmp.path().toStdString() + "/hone.db";
        core::Report r;
        int64_t session = 0;
        {
            core::Store store(storePath);
            backends::LocalExecutor exec(executorConfig(tmp, 1));
            core::Engine engine(store, exec);
            core::RunOptions opt;
            opt.problemDir = problem;
            opt.budget = 5; // 3 seeds, then 2 knob children
            opt.workers = 1;
            opt.seed = 2;
            opt.samples = 10;
            opt.warmStart = false;
            r = engine.run(opt);
            session = engine.sessionId();
        }
        QCOMPARE(r.progress.evaluations, 5);
        QCOMPARE(r.stopReason, std::string("budget of 5 evaluations spent"));
        core::Store store(storePath); // as `hone resume` and `hone show` read it
        QCOMPARE(store.session(session)->status, std::string("finished"));
        const auto nodes = store.nodes(session);
        int failed = 0;
        for (const auto& e : store.evaluations(session)) {
            const auto src = store.source(nodes.at(size_t(e.nodeId)).sourceHash);
            QVERIFY(src.has_value());
            if (src->name != "invalid_utf8.cpp") {
                QVERIFY2(e.status == "ok", e.failureMessage.c_str());
                continue;
            }
            ++failed;
            QCOMPARE(e.status, std::string("failed"));
            // The junk reaches stderr only (candidate code runs in a runner that holds no
            // protocol pipe): the candidate fails on the output it did not write, and nothing
            // foreign reaches the store unrepaired.
            QCOMPARE(e.failureKind, std::string("partial_write"));
            QVERIFY2(core::isValidUtf8(e.failureMessage), e.failureMessage.c_str());
            QVERIFY(!e.result.dump().empty()); // valid UTF-8 throughout: dump() does not throw
        }
        QCOMPARE(failed, 1);

        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (run through ctest)");
        QProcess eval;
        eval.start(cli, {"--cache-dir", tmp.path() + "/cache", "--worker", QString::fromStdString(workerPath()), "eval",
                            QString::fromStdString(problem.string()),
                            QString::fromStdString((problem / "seeds" / "invalid_utf8.cpp").string()), "--json"});
        QVERIFY(eval.waitForFinished(120000));
        const QByteArray err = eval.readAllStandardError();
        QCOMPARE(eval.exitCode(), 7); // ExitCode::EvaluationFailed (app/exit_code.h), not a crashed hone
        const auto result = nlohmann::json::parse(eval.readAllStandardOutput().toStdString(), nullptr, false);
        QVERIFY2(!result.is_discarded(), err.constData());
        QCOMPARE(result["status"].get<std::string>(), std::string("failed"));
        QCOMPARE(result["failure"]["kind"].get<std::string>(), std::string("partial_write"));
    }

    void sameSeedSameResultsSameTree()
    {
        QTemporaryDir tmp;
        auto problem = makeProblem(tmp, {});
        core::Store store(tmp.path().toStdString() + "/hone.db");
        core::RunOptions opt;
        opt.problemDir = problem;
        opt.budget = 14;
        opt.workers = 2;
        opt.seed = 7;
        opt.samples = 20;
        opt.warmStart = false; // a warm start would (rightly) grow the second tree differently

        std::vector<Shape> first, second, other;
        {
            backends::LocalExecutor exec(executorConfig(tmp, 2));
            core::Engine engine(store, exec);
            auto r = engine.run(opt);
            QCOMPARE(r.progress.evaluations, 14);
            first = shapeOf(engine.tree());
        }
        {
            // Every evaluation now comes from the store's result cache: the same results.
            backends::LocalExecutor exec(executorConfig(tmp, 2));
            core::Engine engine(store, exec);
            auto r = engine.run(opt);
            QCOMPARE(r.progress.cacheHits, 14);
            QCOMPARE(r.progress.fresh, 0);
            second = shapeOf(engine.tree());
        }
        QCOMPARE(second.size(), first.size());
        for (size_t i = 0; i < first.size(); ++i)
            QVERIFY2(first[i] == second[i], ("node " + std::to_string(i) + " differs: " + first[i].knobs + " vs "
                                                + second[i].knobs).c_str());
        {
            opt.seed = 8;
            backends::LocalExecutor exec(executorConfig(tmp, 2));
            core::Engine engine(store, exec);
            engine.run(opt);
            other = shapeOf(engine.tree());
        }
        QVERIFY2(!(other == first), "another seed should grow another tree");
    }

    void resumeAfterKill9()
    {
        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (run through ctest)");
        QTemporaryDir tmp;
        auto problem = makeProblem(tmp, {});
        QString storePath = tmp.path() + "/hone.db";
        QStringList common {"--store", storePath, "--cache-dir", tmp.path() + "/cache", "--worker",
            QString::fromStdString(workerPath())};

        QProcess run;
        run.start(cli, common + QStringList {"run", QString::fromStdString(problem.string()), "--budget", "14",
                                   "--seed", "3", "--json"});
        QVERIFY(run.waitForStarted());
        std::vector<core::EvaluationRecord> before;
        QDeadlineTimer deadline(180000);
        while (!deadline.hasExpired()) {
            QTest::qWait(100);
            if (!std::filesystem::exists(storePath.toStdString()))
                continue;
            core::Store peek(storePath.toStdString());
            auto sessions = peek.sessions();
            if (!sessions.empty() && peek.evaluations(sessions[0].id).size() >= 5)
                break;
        }
        ::kill(static_cast<pid_t>(run.processId()), SIGKILL);
        QVERIFY(run.waitForFinished(10000));
        QCOMPARE(run.exitStatus(), QProcess::CrashExit);

        int64_t session = 0;
        {
            core::Store s(storePath.toStdString());
            auto sessions = s.sessions();
            QCOMPARE(sessions.size(), size_t(1));
            session = sessions[0].id;
            QCOMPARE(sessions[0].status, std::string("running")); // killed, never finished
            before = s.evaluations(session);
            QVERIFY(before.size() >= 5 && before.size() < 14);
        }

        QProcess resume;
        resume.start(cli, common + QStringList {"resume", QString::number(session), "--json"});
        QVERIFY(resume.waitForFinished(300000));
        QVERIFY2(resume.exitCode() == 0, resume.readAllStandardError().constData());
        auto report = nlohmann::json::parse(resume.readAllStandardOutput().toStdString());
        QCOMPARE(report["evaluations"].get<int>(), 14);
        QCOMPARE(report["session"].get<int64_t>(), session);

        core::Store s(storePath.toStdString());
        QCOMPARE(s.session(session)->status, std::string("finished"));
        auto after = s.evaluations(session);
        QCOMPARE(after.size(), size_t(14));
        // Everything stored before the kill is still there, untouched.
        for (const auto& b : before) {
            auto it = std::find_if(after.begin(), after.end(), [&](const auto& a) { return a.nodeId == b.nodeId; });
            QVERIFY(it != after.end());
            QCOMPARE(it->createdAt, b.createdAt);
            QCOMPARE(it->medianNs, b.medianNs);
        }
        auto nodes = s.nodes(session);
        for (size_t i = 0; i < nodes.size(); ++i)
            QCOMPARE(nodes[i].id, int64_t(i));
        QCOMPARE(nodes.size(), size_t(15)); // root + 14 candidates, none lost, none doubled
    }
};

QTEST_GUILESS_MAIN(TestEngine)
#include "tst_engine.moc"
