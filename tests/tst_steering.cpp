// Steering commands on a real search (the `scale` problem on the local worker): each command's
// effect on the tree and its record in the store.

#include "backends/local_executor.h"
#include "core/engine.h"
#include "core/store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>

using namespace hone;

namespace {

std::filesystem::path makeProblem(const QTemporaryDir& tmp)
{
    auto dir = std::filesystem::path(tmp.path().toStdString()) / "scale";
    std::filesystem::copy(std::filesystem::path(HONE_TEST_DATA) / "problems" / "scale", dir,
        std::filesystem::copy_options::recursive);
    return dir;
}

backends::LocalExecutorConfig executorConfig(const QTemporaryDir& tmp)
{
    const char* w = std::getenv("HONE_WORKER");
    backends::LocalExecutorConfig cfg;
    cfg.workerPath = w ? w : "hone-worker";
    cfg.cacheDir = tmp.path().toStdString() + "/cache";
    cfg.parallel = 1;
    cfg.limits.memoryMiB = 768;
    return cfg;
}

/// Calls `onEvaluated` on the engine thread after each result, where a test posts commands.
class Steerer : public core::EngineObserver {
public:
    std::function<void(const core::Node&)> onEvaluated;
    std::vector<core::NodeId> evaluated;
    void nodeEvaluated(const core::Node& n, const core::protocol::EvalResult&) override
    {
        evaluated.push_back(n.id);
        if (onEvaluated)
            onEvaluated(n);
    }
};

core::RunOptions options(const std::filesystem::path& problem, int budget)
{
    core::RunOptions opt;
    opt.problemDir = problem;
    opt.budget = budget;
    opt.workers = 1;
    opt.seed = 3;
    opt.samples = 20;
    return opt;
}

core::SteeringCommand command(core::SteeringCommand::Kind kind, core::NodeId node, const std::string& text = {})
{
    core::SteeringCommand c;
    c.kind = kind;
    c.node = node;
    c.text = text;
    c.author = "tester";
    return c;
}

} // namespace

class TestSteering : public QObject {
    Q_OBJECT
private slots:
    /// Seeds are nodes 1 (naive, no knobs) and 2 (tuned). A manual child of node 2 is evaluated
    /// next and ranked; pruned right after, it never gets a child; a hint reaches its subtree.
    void manualChildPruneHint()
    {
        QTemporaryDir tmp;
        auto problem = makeProblem(tmp);
        core::Store store(tmp.path().toStdString() + "/hone.db");
        backends::LocalExecutor exec(executorConfig(tmp));
        core::Engine engine(store, exec);
        const core::KnobValues manual {{"UNROLL", "4"}, {"THREADS", "2"}, {"CHUNK", "4096"}};
        Steerer obs;
        obs.onEvaluated = [&](const core::Node& n) {
            using K = core::SteeringCommand::Kind;
            if (n.id == 2) {
                auto c = command(K::ManualChild, 2);
                c.knobs = manual;
                engine.steer(c);
                engine.steer(command(K::Hint, 2, "keep CHUNK a multiple of the cache line"));
                engine.steer(command(K::Prune, 99)); // no such node: logged as rejected
            }
            if (n.id == 3)
                engine.steer(command(K::Prune, 3));
        };
        auto r = engine.run(options(problem, 9), &obs);
        const auto& t = engine.tree();

        QCOMPARE(r.progress.evaluations, 9);
        QCOMPARE(obs.evaluated.size(), size_t(9));
        QCOMPARE(obs.evaluated[2], core::NodeId(3)); // evaluated right after the seeds
        const core::Node& m = t.node(3);
        QCOMPARE(m.origin, std::string("manual"));
        QCOMPARE(m.parent, core::NodeId(2));
        QCOMPARE(core::knobsToString(m.knobs), core::knobsToString(manual));
        QCOMPARE(int(m.state), int(core::NodeState::Ok));
        QVERIFY(m.speedup > 0);
        QVERIFY(m.pruned);
        QVERIFY2(m.children.empty(), "a pruned node got a child");
        QVERIFY(r.bestSpeedup >= m.speedup); // ranked with the rest
        int grown = 0;
        for (const auto& n : t.nodes())
            grown += n.origin == "mutation" || n.origin == "crossover";
        QCOMPARE(grown, 6); // the search went on elsewhere

        QCOMPARE(engine.subtreeHints(3), std::vector<std::string> {"keep CHUNK a multiple of the cache line"});
        QVERIFY(engine.subtreeHints(1).empty());

        auto log = store.steering(engine.sessionId());
        QCOMPARE(log.size(), size_t(4));
        QCOMPARE(log[0].command, std::string("manual_child"));
        QCOMPARE(log[0].nodeId, int64_t(3));
        QCOMPARE(log[0].outcome, std::string("applied"));
        QCOMPARE(log[0].author, std::string("tester"));
        QVERIFY(!log[0].createdAt.empty());
        QCOMPARE(log[1].command, std::string("hint"));
        QCOMPARE(log[1].payload.value("text", std::string()), std::string("keep CHUNK a multiple of the cache line"));
        QCOMPARE(log[2].command, std::string("prune"));
        QVERIFY2(log[2].outcome.rfind("rejected: node 99 does not exist", 0) == 0, log[2].outcome.c_str());
        QCOMPARE(log[3].command, std::string("prune"));
        QCOMPARE(log[3].nodeId, int64_t(3));
        QCOMPARE(log[3].outcome, std::string("applied"));
        auto evals = store.evaluations(engine.sessionId());
        QVERIFY(std::any_of(evals.begin(), evals.end(), [](const auto& e) { return e.nodeId == 3 && e.status == "ok"; }));
    }

    /// Pause holds proposals until resume (posted from another thread); stop ends the session
    /// with the reason recorded.
    void pauseResumeStop()
    {
        QTemporaryDir tmp;
        auto problem = makeProblem(tmp);
        core::Store store(tmp.path().toStdString() + "/hone.db");
        backends::LocalExecutor exec(executorConfig(tmp));
        core::Engine engine(store, exec);
        using K = core::SteeringCommand::Kind;
        std::thread resumer;
        std::atomic<bool> resumed {false};
        Steerer obs;
        obs.onEvaluated = [&](const core::Node& n) {
            if (n.id == 2) {
                engine.steer(command(K::Pause, -1));
                resumer = std::thread([&] {
                    std::this_thread::sleep_for(std::chrono::milliseconds(700));
                    resumed = true;
                    engine.steer(command(K::Resume, -1));
                });
            }
            if (n.id == 3)
                QVERIFY(resumed.load()); // nothing was proposed while paused
            if (n.id == 4)
                engine.steer(command(K::Stop, -1));
        };
        auto r = engine.run(options(problem, 20), &obs);
        if (resumer.joinable())
            resumer.join();
        QCOMPARE(r.progress.evaluations, 4);
        QCOMPARE(r.stopReason, std::string("stopped by steering command from tester"));
        auto s = store.session(engine.sessionId());
        QCOMPARE(s->status, std::string("stopped"));
        QCOMPARE(s->stopReason, r.stopReason);
        auto log = store.steering(engine.sessionId());
        QCOMPARE(log.size(), size_t(3));
        QCOMPARE(log[0].command, std::string("pause"));
        QCOMPARE(log[1].command, std::string("resume"));
        QCOMPARE(log[2].command, std::string("stop"));
    }
};

QTEST_GUILESS_MAIN(TestSteering)
#include "tst_steering.moc"
