// Search depth on the real worker and a real store: the memory-operator bandit (per-node
// operators, restart after a stall, statistics rebuilt on resume, replay) and warm start
// (kernels of earlier sessions of the problem and of its family).

#include "backends/local_executor.h"
#include "core/engine.h"
#include "core/problem_spec.h"
#include "core/replay.h"
#include "core/store.h"
#include "core/warm_start.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

using namespace hone;

namespace {

std::filesystem::path dataDir() { return HONE_TEST_DATA; }

std::string workerPath()
{
    const char* w = std::getenv("HONE_WORKER");
    return w ? w : "hone-worker";
}

/// A copy of the `scale` problem (seeds naive.cpp, the baseline, and tuned.cpp with knobs).
std::filesystem::path scaleProblem(const QTemporaryDir& tmp)
{
    auto dir = std::filesystem::path(tmp.path().toStdString()) / "scale";
    std::filesystem::copy(dataDir() / "problems" / "scale", dir, std::filesystem::copy_options::recursive);
    return dir;
}

/// Another problem of the `elementwise` family: the same operation under another name, with only
/// a (differently written) naive seed, so that every knob it can tune comes from a warm start.
std::filesystem::path familyProblem(const QTemporaryDir& tmp)
{
    auto dir = std::filesystem::path(tmp.path().toStdString()) / "axpb";
    std::filesystem::copy(dataDir() / "problems" / "scale", dir, std::filesystem::copy_options::recursive);
    std::filesystem::remove(dir / "seeds" / "tuned.cpp");
    std::string toml;
    {
        std::ifstream in(dir / "problem.toml");
        toml.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string from = "name = \"scale\"";
    toml.replace(toml.find(from), from.size(), "name = \"axpb\"");
    std::ofstream(dir / "problem.toml") << toml;
    std::ofstream(dir / "seeds" / "naive.cpp", std::ios::app) << "// axpb: the family's plain loop\n";
    return dir;
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

core::RunOptions options(const std::filesystem::path& problem, int budget, uint64_t seed)
{
    core::RunOptions o;
    o.problemDir = problem;
    o.budget = budget;
    o.workers = 1;
    o.seed = seed;
    o.samples = 20;
    return o;
}

struct Shape {
    int64_t parent;
    std::string source;
    std::string knobs;
    std::string origin;
    std::string op;
    bool operator==(const Shape&) const = default;
};

std::vector<Shape> shapeOf(const core::Store& store, int64_t session)
{
    std::vector<Shape> out;
    for (const auto& n : store.nodes(session))
        out.push_back({n.parentId, n.sourceHash, n.knobs.dump(), n.origin, n.op});
    return out;
}

std::string describe(const Shape& s)
{
    std::string d = std::to_string(s.parent);
    d += " ";
    d += s.knobs;
    d += " ";
    d += s.origin;
    d += "/";
    d += s.op;
    return d;
}

} // namespace

class TestSearchDepth : public QObject {
    Q_OBJECT
private slots:
    void runOptionsRoundTrip()
    {
        core::RunOptions o;
        QCOMPARE(o.memoryOp, std::string("auto"));
        QVERIFY(o.warmStart);
        o.problemDir = "/nowhere/scale";
        o.memoryOp = "compare";
        o.restartAfter = 7;
        o.warmStart = false;
        o.warmStartCount = 5;
        auto back = core::RunOptions::fromJson(o.toJson());
        QCOMPARE(back.memoryOp, std::string("compare"));
        QCOMPARE(back.restartAfter, 7);
        QVERIFY(!back.warmStart);
        QCOMPARE(back.warmStartCount, 5);
        QVERIFY(back.knobOperators);
        // A session stored before these fields: inherit, the old knob choices, no warm start.
        nlohmann::json old = o.toJson();
        for (const char* k : {"memory_op", "restart_after", "knob_operators", "warm_start", "warm_start_count"})
            old.erase(k);
        auto legacy = core::RunOptions::fromJson(old);
        QCOMPARE(legacy.memoryOp, std::string("inherit"));
        QVERIFY(!legacy.knobOperators);
        QVERIFY(!legacy.warmStart);
    }

    /// `--synth grid` evaluates every admissible assignment of the knob seed exactly once, as
    /// children of that seed, in an order the seed fixes; the session ends "sweep complete", and a
    /// replay against the sweep answers every evaluation from the recording.
    void gridSweepCoversTheSpaceOnce()
    {
        QTemporaryDir tmp;
        auto problem = scaleProblem(tmp);
        core::Store store(tmp.path().toStdString() + "/hone.db");
        core::KnobSpace space;
        {
            std::ifstream in(problem / "seeds" / "tuned.cpp");
            space = core::parseKnobSpace(std::string(std::istreambuf_iterator<char>(in), {}), "tuned.cpp");
        }
        const std::vector<core::KnobValues> all = space.admissibleAssignments();
        QCOMPARE(all.size(), size_t(21)); // 4 x 2 x 3, less UNROLL=8 with THREADS=2

        auto sweep = [&](uint64_t seed, int budget) {
            auto o = options(problem, budget, seed);
            o.synth = "grid";
            o.warmStart = false;
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.run(o);
            return std::make_pair(engine.sessionId(), r);
        };
        const auto [sid, report] = sweep(5, 100);
        QVERIFY2(report.stopReason.rfind("sweep complete", 0) == 0, report.stopReason.c_str());
        auto nodes = store.nodes(sid);
        QCOMPARE(nodes.size(), size_t(1 + 2 + 20)); // root, seeds, every other assignment once
        QCOMPARE(store.evaluations(sid).size(), size_t(22));
        std::set<std::string> seen;
        std::vector<std::string> order;
        for (const auto& n : nodes) {
            if (n.id == 0 || (n.origin == "seed" && n.knobs.empty()))
                continue;
            QVERIFY(seen.insert(n.knobs.dump()).second);
            if (n.origin == "seed")
                continue;
            QCOMPARE(n.origin, std::string("grid"));
            QCOMPARE(n.op, std::string("restart"));
            QCOMPARE(n.parentId, int64_t(2)); // the tuned seed
            order.push_back(n.knobs.dump());
        }
        QCOMPARE(seen.size(), all.size());
        for (const auto& v : all) {
            nlohmann::json j = nlohmann::json::object();
            for (const auto& [k, x] : v)
                j[k] = x;
            QVERIFY2(seen.count(j.dump()), j.dump().c_str());
        }

        // Another seed, cut by its budget: a different order of the same space.
        const auto [other, cut] = sweep(6, 8);
        QCOMPARE(cut.stopReason, std::string("budget of 8 evaluations spent"));
        std::vector<std::string> otherOrder;
        for (const auto& n : store.nodes(other))
            if (n.origin == "grid")
                otherOrder.push_back(n.knobs.dump());
        QCOMPARE(otherOrder.size(), size_t(6));
        QVERIFY(!std::equal(otherOrder.begin(), otherOrder.end(), order.begin()));

        // Every answer of a replay against the full sweep is a recorded one.
        auto table = core::ReplayTable::fromStore(store, {sid});
        QCOMPARE(table.size(), size_t(22));
        for (const char* policy : {"uct", "random"}) {
            core::ReplayOptions ro;
            ro.policy = policy;
            ro.budget = 22;
            auto rr = core::replaySearch(table, ro);
            QVERIFY(rr.speedups.size() >= 10);
            QCOMPARE(rr.exactHits, static_cast<int>(rr.speedups.size()));
        }
    }

    /// With `auto` the nodes record the operators the bandit chose (each context operator is
    /// tried), and once the search goes `restartAfter` evaluations without a 1% gain a restart
    /// child of a top-level node is proposed, never before.
    void autoOperatorsAndRestartAfterStall()
    {
        QTemporaryDir tmp;
        auto problem = scaleProblem(tmp);
        core::Store store(tmp.path().toStdString() + "/hone.db");
        backends::LocalExecutor exec(executorConfig(tmp));
        core::Engine engine(store, exec);
        auto o = options(problem, 16, 3);
        o.restartAfter = 2;
        auto r = engine.run(o);
        QCOMPARE(r.progress.evaluations, 16);
        QCOMPARE(r.memoryOp, std::string("auto"));

        auto nodes = store.nodes(engine.sessionId());
        std::map<int64_t, core::EvaluationRecord> evals;
        for (auto& e : store.evaluations(engine.sessionId()))
            evals.emplace(e.nodeId, std::move(e));
        std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
        // Recount the stall from the stored results, independently of the engine (one worker:
        // every proposal saw all earlier results).
        double best = 0;
        int sinceGain = 0;
        int64_t lastRestart = -1;
        std::set<std::string> contextOps;
        int restarts = 0;
        for (const auto& n : nodes) {
            if (n.id == 0)
                continue;
            if (n.origin != "seed") {
                const bool stalled = sinceGain >= o.restartAfter && (lastRestart < 0 || n.seq - lastRestart >= o.restartAfter);
                if (n.op == "restart") {
                    ++restarts;
                    QVERIFY2(stalled, ("restart at seq " + std::to_string(n.seq) + " after only "
                                          + std::to_string(sinceGain) + " evaluations without a gain").c_str());
                    QCOMPARE(n.origin, std::string("restart"));
                    auto parent = std::find_if(nodes.begin(), nodes.end(), [&](const auto& x) { return x.id == n.parentId; });
                    QVERIFY(parent != nodes.end());
                    QCOMPARE(parent->parentId, int64_t(0)); // a child of a seed
                    lastRestart = n.seq;
                } else {
                    QVERIFY2(!stalled, ("no restart at seq " + std::to_string(n.seq) + " after "
                                           + std::to_string(sinceGain) + " evaluations without a gain").c_str());
                    contextOps.insert(n.op);
                }
            }
            const auto& e = evals.at(n.id);
            const double before = best;
            if (e.status == "ok" && e.speedup > best)
                best = e.speedup;
            sinceGain = best > before * 1.01 ? 0 : sinceGain + 1;
        }
        QVERIFY2(restarts >= 1, "the search never stalled for 2 evaluations in 14: no restart to check");
        QVERIFY2(contextOps.size() >= 2, ("only one context operator was used: " + *contextOps.begin()).c_str());
        for (const auto& op : contextOps)
            QVERIFY2(op == "inherit" || op == "compare" || op == "combine", op.c_str());
        int restartArm = 0;
        for (const auto& [name, arm] : r.operators)
            if (name == "restart")
                restartArm = arm.proposed;
        QCOMPARE(restartArm, restarts);

        // Replay from the store retraces the session node for node: the same operator choices
        // from the same results.
        auto table = core::ReplayTable::fromStore(store, {engine.sessionId()});
        QCOMPARE(table.recording().memoryOp, std::string("auto"));
        core::ReplayOptions ro;
        ro.seed = o.seed;
        ro.budget = o.budget;
        auto replay = core::replaySearch(table, ro);
        QCOMPARE(replay.exactHits, o.budget);
        QCOMPARE(replay.tree.size(), nodes.size());
        for (const auto& n : nodes) {
            if (n.id == 0)
                continue;
            const auto& rn = replay.tree.node(n.id);
            QCOMPARE(rn.parent, n.parentId);
            QCOMPARE(rn.op, n.op);
            QCOMPARE(rn.origin, n.origin);
        }
    }

    /// Interrupted after 9 evaluations and resumed, a session grows the same tree (operators
    /// included) as one that ran straight through: the bandit's statistics and the stall count
    /// are rebuilt from the store. The second session's results come from the store's cache, so
    /// both see the same results.
    void operatorStatisticsSurviveResume()
    {
        QTemporaryDir tmp;
        auto problem = scaleProblem(tmp);
        core::Store store(tmp.path().toStdString() + "/hone.db");
        auto o = options(problem, 18, 5);
        o.restartAfter = 3;
        o.warmStart = false;
        int64_t straight = 0, resumed = 0;
        {
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.run(o);
            QCOMPARE(r.progress.evaluations, 18);
            straight = engine.sessionId();
        }
        {
            auto cut = o;
            cut.budget = 9;
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.run(cut);
            QCOMPARE(r.progress.cacheHits, 9);
            resumed = engine.sessionId();
        }
        {
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.resume(resumed, nullptr, 9);
            QCOMPARE(r.progress.evaluations, 18);
            if (r.progress.fresh != 0) // say which results the cache could not hold
                for (int64_t s : { straight, resumed })
                    for (const auto& e : store.evaluations(s))
                        if (e.status != "ok")
                            qWarning("session %lld: %s: %s", static_cast<long long>(s), e.failureKind.c_str(),
                                e.failureMessage.c_str());
            QCOMPARE(r.progress.fresh, 0); // every candidate was one the straight run evaluated
        }
        auto a = shapeOf(store, straight);
        auto b = shapeOf(store, resumed);
        QCOMPARE(b.size(), a.size());
        std::set<std::string> ops;
        for (size_t i = 0; i < a.size(); ++i) {
            std::string msg = "node " + std::to_string(i) + ": ";
            msg += describe(a[i]);
            msg += " vs ";
            msg += describe(b[i]);
            QVERIFY2(a[i] == b[i], msg.c_str());
            if (i > 9)
                ops.insert(a[i].op);
        }
        QVERIFY2(ops.size() >= 2, "the resumed part used a single operator; the check says little");
    }

    /// A second session on the same problem starts from the first one's best kernels (warm
    /// nodes after the seeds, recording where they came from); a session on another problem of
    /// the family gets them too and tunes their knobs; warmStart = false gives none.
    void warmStartFromProblemAndFamily()
    {
        QTemporaryDir tmp;
        auto problem = scaleProblem(tmp);
        core::Store store(tmp.path().toStdString() + "/hone.db");
        int64_t first = 0;
        {
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.run(options(problem, 10, 1));
            QVERIFY(r.warmStart.empty()); // nothing earlier in this store
            first = engine.sessionId();
        }
        // What the first session found, best first, seeds' own assignments excluded.
        auto firstNodes = store.nodes(first);
        std::vector<std::pair<double, int64_t>> ranked;
        for (const auto& e : store.evaluations(first)) {
            const auto& n = firstNodes.at(static_cast<size_t>(e.nodeId));
            if (e.status == "ok" && n.origin != "seed")
                ranked.emplace_back(e.speedup, e.nodeId);
        }
        std::sort(ranked.begin(), ranked.end(), [](auto x, auto y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
        QVERIFY(ranked.size() >= 3);

        {
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.run(options(problem, 8, 2));
            QCOMPARE(r.warmStart.size(), size_t(3));
            auto nodes = store.nodes(engine.sessionId());
            for (size_t i = 0; i < 3; ++i) {
                const auto& w = nodes.at(3 + i); // root, the two seeds, then the warm nodes
                QCOMPARE(w.origin, std::string("warm"));
                QCOMPARE(w.parentId, int64_t(0));
                QCOMPARE(w.fromSession, first);
                QCOMPARE(w.fromNode, ranked[i].second);
                const auto& src = firstNodes.at(static_cast<size_t>(w.fromNode));
                QCOMPARE(w.sourceHash, src.sourceHash);
                QCOMPARE(w.knobs, src.knobs);
                QCOMPARE(r.warmStart[i].node, w.id);
                QVERIFY(r.warmStart[i].sameProblem);
                QCOMPARE(r.warmStart[i].speedup, ranked[i].first);
            }
            QCOMPARE(nodes.at(6).origin == "warm", false);
            auto evals = store.evaluations(engine.sessionId());
            QVERIFY(std::count_if(evals.begin(), evals.end(), [](const auto& e) { return e.nodeId >= 3 && e.nodeId <= 5; }) == 3);
            QCOMPARE(core::describeWarmStart(r.warmStart, "elementwise"),
                "3 from session " + std::to_string(first) + " (scale)");
        }
        {
            // Another problem of the family: its only seed has no knobs, so every later child
            // is a mutation of a warm node's knobs, from a source this problem does not have.
            auto other = familyProblem(tmp);
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.run(options(other, 8, 1));
            QCOMPARE(r.warmStart.size(), size_t(3));
            QVERIFY(r.warmStartNotes.empty());
            const auto& tree = engine.tree();
            const std::string seedHash = tree.node(1).sourceHash;
            for (const auto& w : r.warmStart) {
                QVERIFY(!w.sameProblem);
                QCOMPARE(w.problemName, std::string("scale"));
                const auto& n = tree.node(w.node);
                QCOMPARE(n.origin, std::string("warm"));
                QVERIFY(n.sourceHash != seedHash);
            }
            // Everything after the seed and the warm nodes was grown from a warm node's knobs.
            int grown = 0;
            for (const auto& n : tree.nodes()) {
                if (n.id == 0 || n.origin == "seed" || n.origin == "warm")
                    continue;
                core::NodeId top = n.id;
                while (tree.node(top).parent != 0)
                    top = tree.node(top).parent;
                QCOMPARE(tree.node(top).origin, std::string("warm"));
                QCOMPARE(n.sourceHash, tree.node(top).sourceHash);
                QVERIFY(!n.knobs.empty());
                ++grown;
            }
            QCOMPARE(grown, 8 - 1 - 3); // the budget less the seed and the warm nodes
            QVERIFY(core::describeWarmStart(r.warmStart, "elementwise").find("family elementwise") != std::string::npos);
        }
        {
            auto o = options(problem, 4, 3);
            o.warmStart = false;
            backends::LocalExecutor exec(executorConfig(tmp));
            core::Engine engine(store, exec);
            auto r = engine.run(o);
            QVERIFY(r.warmStart.empty());
            for (const auto& n : store.nodes(engine.sessionId()))
                QVERIFY(n.origin != "warm");
        }
    }

    /// The selection rules on a hand-made store: the same problem before the family, best first,
    /// only successes on the same target kind, distinct kernels, at most `count`, and a source
    /// whose knobs do not parse skipped with a note.
    void warmStartSelectionRules()
    {
        QTemporaryDir tmp;
        core::Store store(tmp.path().toStdString() + "/hone.db");
        auto problemOf = [&](const std::string& name, const std::string& family) {
            core::ProblemSpec p;
            p.name = name;
            p.family = family;
            p.dir = tmp.path().toStdString();
            p.contentHash = name + "-hash";
            return store.upsertProblem(p);
        };
        const int64_t mine = problemOf("mine", "fam");
        const int64_t sibling = problemOf("sibling", "fam");
        const int64_t stranger = problemOf("stranger", "other");
        const std::string good = store.putSource("cpp", "good.cpp", "// hone:knob A = 1 | 2 | 4\n");
        const std::string bad = store.putSource("cpp", "bad.cpp", "// hone:knob A = \n");
        const std::string plain = store.putSource("cpp", "plain.cpp", "int x;\n");
        int64_t nodeId = 0;
        auto add = [&](int64_t session, const std::string& src, const char* a, bool ok, double speedup) {
            ++nodeId;
            nlohmann::json knobs = a ? nlohmann::json {{"A", a}} : nlohmann::json::object();
            store.insertNode(session, {nodeId, 0, nodeId, src, knobs, "", "mutation", "inherit", {}});
            core::EvaluationRecord e;
            e.nodeId = nodeId;
            e.status = ok ? "ok" : "failed";
            e.speedup = speedup;
            e.result = nlohmann::json::object();
            store.insertEvaluation(session, e);
            return nodeId;
        };
        const int64_t s1 = store.createSession(mine, "cpu", "uct", 1, {});
        const int64_t s2 = store.createSession(sibling, "cpu", "uct", 1, {});
        const int64_t s3 = store.createSession(stranger, "cpu", "uct", 1, {});
        const int64_t s4 = store.createSession(mine, "cuda", "uct", 1, {});
        add(s1, good, "1", true, 2.0);
        const int64_t mineBest = add(s1, good, "2", true, 3.0);
        add(s1, good, "4", false, 0.0);         // failed: never
        add(s1, bad, "1", true, 50.0);          // does not parse: skipped with a note
        add(s2, good, "2", true, 9.0);          // the same kernel as mineBest: taken once
        const int64_t siblingBest = add(s2, plain, nullptr, true, 8.0);
        add(s3, good, "4", true, 99.0);         // another family
        add(s4, good, "4", true, 99.0);         // another target kind

        core::WarmStartQuery q;
        q.problemHash = "mine-hash";
        q.problemName = "mine";
        q.family = "fam";
        q.target = "cpu";
        q.count = 3;
        core::SearchTree tree;
        std::vector<std::string> notes;
        auto got = core::findWarmStart(store, q, tree, notes);
        QCOMPARE(got.size(), size_t(3));
        QCOMPARE(got[0].fromNode, mineBest);
        QVERIFY(got[0].sameProblem);
        QCOMPARE(got[0].knobs.at("A"), std::string("2"));
        QCOMPARE(got[1].knobs.at("A"), std::string("1"));
        QCOMPARE(got[1].speedup, 2.0);
        QCOMPARE(got[2].fromNode, siblingBest);
        QVERIFY(!got[2].sameProblem);
        QCOMPARE(got[2].problemName, std::string("sibling"));
        QCOMPARE(notes.size(), size_t(1));
        QVERIFY2(notes[0].find("bad.cpp do not parse") != std::string::npos, notes[0].c_str());

        // Kernels the tree already holds are not taken again; fewer asked, fewer given.
        core::Node n;
        n.parent = 0;
        n.sourceHash = good;
        n.knobs = {{"A", "2"}};
        tree.add(n);
        notes.clear();
        q.count = 1;
        got = core::findWarmStart(store, q, tree, notes);
        QCOMPARE(got.size(), size_t(1));
        QCOMPARE(got[0].knobs.at("A"), std::string("1"));
        q.count = 0;
        QVERIFY(core::findWarmStart(store, q, tree, notes).empty());
    }

    /// `hone run` warm-starts by default and says so; --no-warm-start gives none; --memory-op
    /// is stored with the session.
    void cliWarmStartAndMemoryOp()
    {
        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (run through ctest)");
        QTemporaryDir tmp;
        auto problem = scaleProblem(tmp);
        const QString storePath = tmp.path() + "/hone.db";
        const QStringList common {"--store", storePath, "--cache-dir", tmp.path() + "/cache", "--worker",
            QString::fromStdString(workerPath()), "--no-skills"};
        auto run = [&](const QStringList& extra) {
            QProcess p;
            // Memory operators steer the knob synthesizer under a selection policy: uct, not the
            // default knob-space policy.
            p.start(cli, common + QStringList {"run", QString::fromStdString(problem.string()), "--budget", "6", "--policy", "uct"} + extra);
            const bool finished = p.waitForFinished(300000);
            const QByteArray out = p.readAllStandardOutput();
            const QByteArray err = p.readAllStandardError();
            return std::make_tuple(finished && p.exitCode() == 0, QString::fromUtf8(out), QString::fromUtf8(err));
        };
        auto [ok1, out1, err1] = run({"--seed", "1", "--memory-op", "compare"});
        QVERIFY2(ok1, qPrintable(err1));
        auto [ok2, out2, err2] = run({"--seed", "2"});
        QVERIFY2(ok2, qPrintable(err2));
        QVERIFY2(out2.contains("warm start 3 node(s) from earlier sessions: 3 from session 1 (scale)"), qPrintable(out2));
        QVERIFY2(out2.contains("operators  auto: inherit"), qPrintable(out2));
        auto [ok3, out3, err3] = run({"--seed", "3", "--no-warm-start", "--json"});
        QVERIFY2(ok3, qPrintable(err3));
        auto j = nlohmann::json::parse(out3.toStdString());
        QCOMPARE(j["warm_start"].size(), size_t(0));
        QCOMPARE(j["memory_op"].get<std::string>(), std::string("auto"));
        auto [ok4, out4, err4] = run({"--memory-op", "sometimes"});
        QVERIFY(!ok4);
        QVERIFY2(err4.contains("sometimes"), qPrintable(err4));

        core::Store store(storePath.toStdString());
        auto sessions = store.sessions();
        QCOMPARE(sessions.size(), size_t(3));
        QCOMPARE(sessions[0].config.value("memory_op", std::string()), std::string("compare"));
        QVERIFY(!sessions[2].config.value("warm_start", true));
        for (const auto& n : store.nodes(sessions[0].id))
            if (n.origin == "mutation" || n.origin == "crossover")
                QCOMPARE(n.op, std::string("compare"));
    }

    /// A store written before schema 5 opens, gains the warm-start columns and reads its nodes
    /// as they were.
    void schemaFourStoreUpgrades()
    {
        QTemporaryDir tmp;
        const auto path = std::filesystem::path(tmp.path().toStdString()) / "hone.db";
        {
            core::Store s(path);
            core::ProblemSpec p;
            p.name = "old";
            p.family = "fam";
            p.dir = tmp.path().toStdString();
            p.contentHash = "old-hash";
            const int64_t session = s.createSession(s.upsertProblem(p), "cpu", "uct", 1, {});
            s.insertNode(session, {0, -1, 0, "", nlohmann::json::object(), "", "root", "restart", {}});
        }
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db,
                     "ALTER TABLE nodes DROP COLUMN from_session; ALTER TABLE nodes DROP COLUMN from_node; "
                     "DROP TABLE reverifications; ALTER TABLE evaluations DROP COLUMN shapes; "
                     "ALTER TABLE evaluations DROP COLUMN slower_shapes; ALTER TABLE evaluations DROP COLUMN screened; "
                     "ALTER TABLE approvals DROP COLUMN justification; PRAGMA user_version = 4;",
                     nullptr, nullptr, nullptr),
            SQLITE_OK);
        sqlite3_close(db);
        core::Store s(path);
        QCOMPARE(s.schemaVersion(), core::Store::kSchemaVersion);
        QVERIFY(s.reverifications(1).empty()); // schema 6 added the table
        auto nodes = s.nodes(1);
        QCOMPARE(nodes.size(), size_t(1));
        QCOMPARE(nodes[0].origin, std::string("root"));
        QCOMPARE(nodes[0].fromSession, int64_t(-1));
        QCOMPARE(nodes[0].fromNode, int64_t(-1));
    }
};

QTEST_GUILESS_MAIN(TestSearchDepth)
#include "tst_search_depth.moc"
