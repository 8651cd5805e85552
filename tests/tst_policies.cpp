#include "core/knob_policy.h"
#include "core/replay.h"
#include "core/selection_policy.h"
#include "core/store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

using namespace hone::core;

namespace {

const char* kSource = "// hone:knob A = 1 | 2 | 4 | 8\n"
                      "// hone:knob B = 1 | 2 | 4 | 8\n"
                      "// hone:knob C = x | y\n"
                      "// hone:require A * B <= 16\n";

NodeId addNode(SearchTree& t, NodeId parent, KnobValues knobs, bool ok, double speedup)
{
    Node n;
    n.parent = parent;
    n.sourceHash = "src";
    n.knobs = std::move(knobs);
    n.origin = parent == 0 ? "seed" : "mutation";
    NodeId id = t.add(n);
    t.setResult(id, ok, speedup, ok ? "" : "compile_error");
    return id;
}

/// A fixed landscape over the knobs, peaked at A=4, B=4, C=y (speedup 32).
double landscape(const KnobValues& k)
{
    double a = std::stod(k.at("A")), b = std::stod(k.at("B"));
    return (k.at("C") == "y" ? 2.0 : 1.0) * 16.0 / (1.0 + std::abs(a - 4.0) + std::abs(b - 4.0));
}

/// Every admissible assignment of kSource, recorded with the landscape's speedup, except those
/// with A = 8 (so that some candidates are answered by their nearest neighbour).
ReplayTable syntheticTable()
{
    ReplayTable table;
    KnobSpace space = parseKnobSpace(kSource, "s.cpp");
    table.addSource("src", space);
    table.addSeed({"src", "s.cpp", {{"A", "1"}, {"B", "1"}, {"C", "x"}}, ""});
    for (const char* a : {"1", "2", "4"})
        for (const char* b : {"1", "2", "4", "8"})
            for (const char* c : {"x", "y"}) {
                KnobValues k {{"A", a}, {"B", b}, {"C", c}};
                if (space.admits(k))
                    table.addResult("src", k, "", {true, landscape(k), "", ""});
            }
    return table;
}

} // namespace

/// "what: median [low, high] vs median [low, high]", for a failed comparison of two policies.
static QString say(const char* what, const ReplayStats& a, const ReplayStats& b)
{
    return QString("%1: %2 [%3, %4] vs %5 [%6, %7]")
        .arg(what)
        .arg(a.median)
        .arg(a.medianLow)
        .arg(a.medianHigh)
        .arg(b.median)
        .arg(b.medianLow)
        .arg(b.medianHigh);
}

class TestPolicies : public QObject {
    Q_OBJECT
private slots:
    void unknownPolicyNamesTheKnownOnes()
    {
        try {
            makeSelectionPolicy("annealing");
            QFAIL("an unknown policy was accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY(std::string(e.what()).find("'annealing'") != std::string::npos);
            QVERIFY(std::string(e.what()).find("uct, evolutionary, greedy or random") != std::string::npos);
        }
        for (const auto& name : selectionPolicyNames())
            QCOMPARE(makeSelectionPolicy(name)->name(), name);
    }

    void policiesExpandOnlyOpenNodes_data()
    {
        QTest::addColumn<QString>("policy");
        for (const auto& name : selectionPolicyNames())
            QTest::addRow("%s", name.c_str()) << QString::fromStdString(name);
    }

    /// Failed, exhausted and pruned nodes, and everything under a pruned node, are never chosen,
    /// however fast they are; once nothing is open every policy says so.
    void policiesExpandOnlyOpenNodes()
    {
        QFETCH(QString, policy);
        SearchTree t;
        NodeId open = addNode(t, 0, {{"A", "1"}}, true, 1.0);
        addNode(t, 0, {{"A", "2"}}, false, 0.0);
        NodeId pruned = addNode(t, 0, {{"A", "4"}}, true, 3.0);
        NodeId underPruned = addNode(t, pruned, {{"A", "8"}}, true, 5.0);
        NodeId exhausted = addNode(t, 0, {{"B", "2"}}, true, 2.0);
        t.node(pruned).pruned = true;
        t.markExhausted(exhausted);
        QCOMPARE(expandableNodes(t), std::vector<NodeId> {open});
        Q_UNUSED(underPruned);

        auto p = makeSelectionPolicy(policy.toStdString());
        for (uint64_t s = 0; s < 50; ++s) {
            std::mt19937_64 rng(s);
            QCOMPARE(p->select(t, rng), std::optional<NodeId>(open));
        }
        t.markExhausted(open);
        std::mt19937_64 rng(1);
        QVERIFY(!p->select(t, rng).has_value());
    }

    void greedyTakesTheFastest()
    {
        SearchTree t;
        addNode(t, 0, {{"A", "1"}}, true, 1.0);
        NodeId fast = addNode(t, 0, {{"A", "2"}}, true, 3.0);
        NodeId child = addNode(t, fast, {{"A", "4"}}, true, 2.5);
        auto p = makeSelectionPolicy("greedy");
        std::mt19937_64 rng(1);
        QCOMPARE(p->select(t, rng), std::optional<NodeId>(fast));
        t.markExhausted(fast);
        QCOMPARE(p->select(t, rng), std::optional<NodeId>(child));
    }

    void randomDrawsEveryOpenNodeEvenly()
    {
        SearchTree t;
        std::vector<NodeId> ids {addNode(t, 0, {{"A", "1"}}, true, 1.0), addNode(t, 0, {{"A", "2"}}, true, 9.0),
            addNode(t, 0, {{"A", "4"}}, true, 0.5)};
        auto p = makeSelectionPolicy("random");
        std::map<NodeId, int> counts;
        for (uint64_t s = 0; s < 300; ++s) {
            std::mt19937_64 rng(s);
            ++counts[*p->select(t, rng)];
        }
        QCOMPARE(counts.size(), size_t(3));
        for (NodeId id : ids)
            QVERIFY2(counts[id] > 60, qPrintable(QString("node %1 drawn %2 of 300 times").arg(id).arg(counts[id])));
    }

    /// The archive keeps the best nodes but not near-copies of a better elite; parents come
    /// only from the archive, and the fastest elite wins more tournaments than the slowest.
    void evolutionaryArchiveIsDiverse()
    {
        SearchTree t;
        NodeId best = addNode(t, 0, {{"A", "1"}, {"B", "1"}}, true, 5.0);
        NodeId nearCopy = addNode(t, 0, {{"A", "1"}, {"B", "2"}}, true, 4.9);
        NodeId distinct = addNode(t, 0, {{"A", "2"}, {"B", "2"}}, true, 4.0);
        NodeId slow = addNode(t, 0, {{"A", "4"}, {"B", "4"}}, true, 1.0);
        EvolutionaryPolicy p({2, 2, 2});
        std::map<NodeId, int> counts;
        for (uint64_t s = 0; s < 200; ++s) {
            std::mt19937_64 rng(s);
            ++counts[*p.select(t, rng)];
        }
        QCOMPARE(p.archive(), (std::vector<NodeId> {best, distinct}));
        QCOMPARE(counts.count(nearCopy), size_t(0));
        QCOMPARE(counts.count(slow), size_t(0));
        QVERIFY(counts[best] > counts[distinct]);
    }

    void nearestRecordedAnswersUnrecorded()
    {
        ReplayTable table;
        table.addSource("src", parseKnobSpace(kSource, "s.cpp"));
        table.addResult("src", {{"A", "1"}, {"B", "1"}, {"C", "x"}}, "", {true, 1.0, "", ""});
        table.addResult("src", {{"A", "1"}, {"B", "2"}, {"C", "x"}}, "", {true, 2.0, "", ""});
        table.addResult("src", {{"A", "2"}, {"B", "8"}, {"C", "y"}}, "", {true, 7.0, "", ""});
        bool exact = true;
        auto o = table.lookup("src", {{"A", "1"}, {"B", "2"}, {"C", "x"}}, "", &exact);
        QVERIFY(exact);
        QCOMPARE(o.speedup, 2.0);
        // One knob away from both 1.0 and 2.0: the tie goes to the slower.
        o = table.lookup("src", {{"A", "1"}, {"B", "4"}, {"C", "x"}}, "", &exact);
        QVERIFY(!exact);
        QCOMPARE(o.speedup, 1.0);
        o = table.lookup("other", {{"A", "1"}}, "", &exact);
        QVERIFY(!o.ok);
        QCOMPARE(o.failureKind, std::string("not_recorded"));
        QCOMPARE(table.bestSpeedup(), 7.0);
    }

    void replayIsDeterministic_data()
    {
        QTest::addColumn<QString>("policy");
        for (const auto& name : allPolicyNames())
            QTest::addRow("%s", name.c_str()) << QString::fromStdString(name);
    }

    /// Same seed: the same tree node for node. Other seeds: other trees.
    void replayIsDeterministic()
    {
        QFETCH(QString, policy);
        ReplayTable table = syntheticTable();
        ReplayOptions o;
        o.policy = policy.toStdString();
        o.budget = 15;
        o.seed = 7;
        auto a = replaySearch(table, o);
        auto b = replaySearch(table, o);
        QCOMPARE(a.sequence.size(), size_t(15));
        QCOMPARE(a.sequence, b.sequence);
        QCOMPARE(a.tree.size(), b.tree.size());
        for (size_t i = 0; i < a.tree.size(); ++i)
            QCOMPARE(a.tree.node(static_cast<NodeId>(i)).parent, b.tree.node(static_cast<NodeId>(i)).parent);
        std::set<std::vector<std::string>> others;
        for (uint64_t s = 1; s <= 5; ++s) {
            o.seed = s;
            others.insert(replaySearch(table, o).sequence);
        }
        QVERIFY(others.size() > 1);
    }

    /// With memory operators on auto: the same seed gives the same tree and the same operator per
    /// node; the bandit tries each context operator and restarts once the replay stalls.
    void replayIsDeterministicWithAutoOperators()
    {
        ReplayTable table = syntheticTable();
        QCOMPARE(table.recording().memoryOp, std::string("inherit")); // a table made by hand: the old choices
        ReplayOptions o;
        o.budget = 20;
        o.seed = 7;
        auto legacy = replaySearch(table, o);
        o.memoryOp = "auto";
        o.restartAfter = 3;
        auto a = replaySearch(table, o);
        auto b = replaySearch(table, o);
        QCOMPARE(a.sequence.size(), size_t(20));
        QCOMPARE(a.sequence, b.sequence);
        QCOMPARE(a.operators, b.operators);
        for (size_t i = 0; i < a.tree.size(); ++i)
            QCOMPARE(a.tree.node(static_cast<NodeId>(i)).parent, b.tree.node(static_cast<NodeId>(i)).parent);
        std::set<std::string> ops(a.operators.begin() + 1, a.operators.end()); // past the seed
        QVERIFY2(ops.count("inherit") && ops.count("compare") && ops.count("combine"), "a context operator was never tried");
        QVERIFY2(ops.count("restart"), "no restart in 20 evaluations with a stall window of 3");
        for (size_t i = 1; i < a.tree.size(); ++i) {
            const Node& n = a.tree.node(static_cast<NodeId>(i));
            if (n.op == "restart" && n.origin != "seed") {
                QCOMPARE(n.origin, std::string("restart"));
                QCOMPARE(a.tree.node(n.parent).parent, NodeId(0)); // a child of the seed
            }
        }
        QVERIFY(a.sequence != legacy.sequence);
        for (const auto& op : legacy.operators)
            QVERIFY(op == "inherit" || op == "restart"); // the seed is "restart", as stored
        std::set<std::vector<std::string>> others;
        for (uint64_t s = 1; s <= 5; ++s) {
            o.seed = s;
            others.insert(replaySearch(table, o).sequence);
        }
        QVERIFY(others.size() > 1);
        o.memoryOp = "sometimes";
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, replaySearch(table, o));
    }

    void replayReportsEvaluationsToBest_data()
    {
        QTest::addColumn<QString>("policy");
        for (const auto& name : allPolicyNames())
            QTest::addRow("%s", name.c_str()) << QString::fromStdString(name);
    }

    /// With a budget as large as the space, every policy reaches the peak; the counts are
    /// 1-based evaluation indices and reaching within 5% never comes after reaching the best.
    void replayReportsEvaluationsToBest()
    {
        QFETCH(QString, policy);
        ReplayTable table = syntheticTable();
        QCOMPARE(table.bestSpeedup(), 32.0);
        ReplayOptions o;
        o.policy = policy.toStdString();
        o.budget = 26; // every admissible assignment
        auto r = replaySearch(table, o);
        QVERIFY(r.toBest.has_value());
        QVERIFY(r.toWithin5.has_value());
        QVERIFY(*r.toWithin5 <= *r.toBest);
        QCOMPARE(r.speedups[static_cast<size_t>(*r.toBest - 1)], 32.0);
        QCOMPARE(r.best, 32.0);
        QVERIFY(r.exactHits < static_cast<int>(r.speedups.size())); // A = 8 is never recorded
        QCOMPARE(r.speedups.front(), landscape({{"A", "1"}, {"B", "1"}, {"C", "x"}})); // the seed first
    }

    void knobPoliciesCoverTheSpaceWithoutRepeats_data()
    {
        QTest::addColumn<QString>("policy");
        for (const auto& name : knobPolicyNames())
            QTest::addRow("%s", name.c_str()) << QString::fromStdString(name);
    }

    /// A knob-space policy proposes only admissible candidates, never one twice, and goes on
    /// until every admissible assignment was evaluated (26 here, the seed included).
    void knobPoliciesCoverTheSpaceWithoutRepeats()
    {
        QFETCH(QString, policy);
        ReplayTable table = syntheticTable();
        const KnobSpace space = parseKnobSpace(kSource, "s.cpp");
        for (uint64_t seed = 1; seed <= 20; ++seed) {
            ReplayOptions o;
            o.policy = policy.toStdString();
            o.seed = seed;
            o.budget = 100;
            auto r = replaySearch(table, o);
            QCOMPARE(r.sequence.size(), size_t(26));
            QCOMPARE(std::set<std::string>(r.sequence.begin(), r.sequence.end()).size(), size_t(26));
            for (size_t i = 1; i < r.tree.size(); ++i)
                QVERIFY(space.admits(r.tree.node(static_cast<NodeId>(i)).knobs));
        }
    }

    /// Uniform sampling: over 2,000 seeds, the first candidate after the seed is each of the 25
    /// other admissible assignments about equally often (80 expected; a count outside 40-130
    /// has a probability below 1e-6 for a fair draw).
    void uniformSamplesEvenly()
    {
        ReplayTable table = syntheticTable();
        std::map<std::string, int> counts;
        for (uint64_t seed = 1; seed <= 2000; ++seed) {
            ReplayOptions o;
            o.policy = "uniform";
            o.seed = seed;
            o.budget = 2;
            ++counts[replaySearch(table, o).sequence.at(1)];
        }
        QCOMPARE(counts.size(), size_t(25));
        for (const auto& [key, n] : counts)
            QVERIFY2(n >= 40 && n <= 130, qPrintable(QString("%1 drawn %2 times").arg(QString::fromStdString(key)).arg(n)));
    }

    /// `hybrid` climbs from the seed for its first HybridParams::startup results (the seed
    /// included: one-knob neighbours, or a uniform restart at a local optimum, never the
    /// model), then proposes only one-knob neighbours of the node it stands on or the model's
    /// candidates (jumps and restarts), both of which occur.
    void hybridClimbsThenFollowsTheModel()
    {
        // The default (docs/SEARCH.md, "The default knob search").
        QCOMPARE(defaultPolicy("knob"), std::string("hybrid"));
        QCOMPARE(defaultPolicy("llm"), std::string("uct"));
        ReplayTable table = syntheticTable();
        const int startup = HybridParams {}.startup;
        QVERIFY(HybridParams {}.climbStart);
        int neighbours = 0, jumps = 0, startNeighbours = 0;
        for (uint64_t seed = 1; seed <= 50; ++seed) {
            ReplayOptions o;
            o.policy = "hybrid";
            o.seed = seed;
            o.budget = 20;
            auto r = replaySearch(table, o);
            QCOMPARE(r.sequence.size(), size_t(20));
            QCOMPARE(r.tree.node(2).parent, NodeId(1)); // the first move leaves the seed
            for (size_t i = 2; i < r.tree.size(); ++i) {
                const Node& n = r.tree.node(static_cast<NodeId>(i));
                if (static_cast<int>(i) <= startup) {
                    QVERIFY2(n.origin == "neighbour" || n.origin == "sample", n.origin.c_str());
                    startNeighbours += n.origin == "neighbour" ? 1 : 0;
                    continue;
                }
                QVERIFY2(n.origin == "neighbour" || n.origin == "model", n.origin.c_str());
                if (n.origin == "neighbour") {
                    ++neighbours;
                    int differ = 0;
                    for (const auto& [k, v] : n.knobs)
                        differ += r.tree.node(n.parent).knobs.at(k) != v;
                    QCOMPARE(differ, 1);
                } else {
                    ++jumps;
                }
            }
        }
        QVERIFY2(startNeighbours > 50 * (startup - 1) / 2, qPrintable(QString("%1 start-up neighbours").arg(startNeighbours)));
        QVERIFY2(neighbours > 0 && jumps > 0, qPrintable(QString("%1 neighbours, %2 jumps").arg(neighbours).arg(jumps)));
    }

    /// Hill climbing moves one knob at a time from the node it stands on, and on a landscape
    /// with one peak it climbs there faster than uniform sampling does.
    void hillClimbMovesOneKnobAndClimbs()
    {
        ReplayTable table = syntheticTable();
        std::vector<int> climb, uniform;
        for (uint64_t seed = 1; seed <= 200; ++seed) {
            ReplayOptions o;
            o.policy = "hillclimb";
            o.seed = seed;
            o.budget = 26;
            auto r = replaySearch(table, o);
            for (size_t i = 1; i < r.tree.size(); ++i) {
                const Node& n = r.tree.node(static_cast<NodeId>(i));
                if (n.origin != "neighbour")
                    continue;
                const Node& p = r.tree.node(n.parent);
                int differ = 0;
                for (const auto& [k, v] : n.knobs)
                    differ += p.knobs.at(k) != v ? 1 : 0;
                QCOMPARE(differ, 1);
            }
            climb.push_back(r.toBest.value_or(27));
            o.policy = "uniform";
            uniform.push_back(replaySearch(table, o).toBest.value_or(27));
        }
        auto c = replayStats(climb, 26), u = replayStats(uniform, 26);
        QVERIFY2(c.medianHigh < u.medianLow, qPrintable(QString("hill climbing %1, uniform %2").arg(c.median).arg(u.median)));
    }

    /// With several timings per candidate a replay draws one per evaluation; the typical
    /// result (the median) decides the table's best and whether the target was reached.
    void replayDrawsOneTimingPerEvaluation()
    {
        ReplayTable table;
        table.addSource("src", parseKnobSpace(kSource, "s.cpp"));
        const KnobValues k {{"A", "1"}, {"B", "2"}, {"C", "x"}};
        for (double s : {1.0, 3.0, 2.0})
            table.addResult("src", k, "", {true, s, "", ""});
        table.addResult("src", {{"A", "2"}, {"B", "2"}, {"C", "x"}}, "", {true, 2.5, "", ""});
        QCOMPARE(table.size(), size_t(2));
        QCOMPARE(table.timingsPerCandidate(), (std::pair<size_t, size_t>(1, 3)));
        QCOMPARE(table.bestSpeedup(), 2.5); // the median of 1, 2, 3 is below 2.5
        std::mt19937_64 noise(1);
        std::set<double> seen;
        for (int i = 0; i < 100; ++i) {
            double typical = 0;
            seen.insert(table.lookup("src", k, "", nullptr, &noise, &typical).speedup);
            QCOMPARE(typical, 2.0);
        }
        QCOMPARE(seen, (std::set<double> {1.0, 2.0, 3.0}));
        QCOMPARE(table.lookup("src", k, "").speedup, 2.0); // no generator: the typical result
    }

    /// The order statistics and the bootstrap interval of the median over runs 1..100.
    void replayStatsOfKnownRuns()
    {
        std::vector<int> runs;
        for (int i = 1; i <= 100; ++i)
            runs.push_back(i);
        auto st = replayStats(runs, 80);
        QCOMPARE(st.runs, 100);
        QCOMPARE(st.median, 50.5);
        QCOMPARE(st.p75, 75.0);
        QCOMPARE(st.p90, 90.0);
        QCOMPARE(st.reached, 0.8);
        QVERIFY(st.medianLow < 50.5 && st.medianHigh > 50.5);
        QVERIFY(st.medianLow >= 38 && st.medianHigh <= 63); // about +-1.96 * sqrt(100) / 2 ranks * 1.1
    }

    /// The policy table of docs/SEARCH.md on the recorded CPU sweeps (resources/demo): every
    /// admissible knob assignment timed, so every replayed evaluation is a recorded one.
    /// Evaluations until a candidate within 5% of the best, over replay seeds 1-1000, each
    /// median with its bootstrap 95% interval (2,000 resamples); a claim holds only when the
    /// intervals are apart by the stated factor, so a lucky block of seeds cannot pass it:
    /// - UCT (the default with an LLM) needs at least 1.3x fewer evaluations than uniform
    ///   sampling without replacement (measured 1.55-2.44x);
    /// - first-improvement hill climbing needs at least 2x fewer than uniform (2.37-3.88x);
    /// - the old `random` selection is worse than uniform sampling (0.70-0.76x);
    /// - `hybrid` (the default knob search, docs/SEARCH.md "The default knob search"): at least
    ///   2x fewer than uniform and 1.5x fewer than the genetic algorithm with the intervals apart
    ///   by those factors (measured medians 2.5-4.7x and 1.8-2.7x); issue 21's 3x over uniform
    ///   on the medians where it is met (softmax 66 vs 14, embedding_bag_sum 64.5 vs 21; on
    ///   layernorm-145, 45 vs 18, it is not: docs/SEARCH.md says why); and issue 21's "never more
    ///   than 10% worse than the hill climber" at the pessimistic ends: the upper end of hybrid's
    ///   interval at most 1.1x the lower end of the hill climber's (softmax 14 [14-15] vs
    ///   17 [16-18], layernorm 18 [17-18] vs 19 [18-21], embedding_bag_sum 21 [20-22] vs
    ///   21 [20-22]).
    /// 1,000 seeds per policy; a bootstrap 95% interval of a median is 1-7 evaluations wide here.
    /// UCT was tuned on softmax and layernorm; `hybrid` on all three (docs/SEARCH.md).
    void recordedSweepRatios_data()
    {
        QTest::addColumn<qint64>("session");
        QTest::addColumn<int>("recorded");
        QTest::addColumn<bool>("threeTimesUniform"); // issue 21's 3x over uniform is met here
        QTest::addRow("softmax") << qint64(4) << 289 << true;
        QTest::addRow("layernorm") << qint64(2) << 145 << false;
        QTest::addRow("embedding_bag_sum") << qint64(3) << 379 << true;
    }
    void recordedSweepRatios()
    {
        QFETCH(qint64, session);
        QFETCH(int, recorded);
        QFETCH(bool, threeTimesUniform);
        QTemporaryDir tmp; // the store is opened read-write: a copy, not the committed file
        const std::string db = tmp.path().toStdString() + "/sweeps.db";
        std::filesystem::copy_file(std::string(HONE_SOURCE_DIR) + "/resources/demo/cpu-sweeps-2026-11-25.db", db);
        Store store(db);
        auto table = ReplayTable::fromStore(store, {session});
        QCOMPARE(static_cast<int>(table.size()), recorded);
        auto statsOf = [&](const std::string& policy) {
            std::vector<int> v;
            for (uint64_t seed = 1; seed <= 1000; ++seed) {
                ReplayOptions ro;
                ro.policy = policy;
                ro.seed = seed;
                ro.budget = recorded;
                ro.stopAtWithin5 = true;
                auto r = replaySearch(table, ro);
                if (r.exactHits != static_cast<int>(r.speedups.size()))
                    qFatal("a replay of a complete sweep left the recording");
                v.push_back(r.toWithin5.value_or(recorded + 1));
            }
            return replayStats(v, recorded);
        };
        const auto uniform = statsOf("uniform");
        const auto uct = statsOf("uct");
        const auto climb = statsOf("hillclimb");
        const auto random = statsOf("random");
        const auto genetic = statsOf("genetic");
        const auto hybrid = statsOf("hybrid");
        QVERIFY2(1.3 * uct.medianHigh <= uniform.medianLow, qPrintable(say("uct vs uniform", uct, uniform)));
        QVERIFY2(2.0 * climb.medianHigh <= uniform.medianLow, qPrintable(say("hillclimb vs uniform", climb, uniform)));
        QVERIFY2(uniform.medianHigh < random.medianLow, qPrintable(say("uniform vs random", uniform, random)));
        // The default knob-space policy (docs/SEARCH.md, "Policy table").
        QVERIFY2(2.0 * hybrid.medianHigh <= uniform.medianLow, qPrintable(say("hybrid vs uniform", hybrid, uniform)));
        QVERIFY2(1.5 * hybrid.medianHigh <= genetic.medianLow, qPrintable(say("hybrid vs genetic", hybrid, genetic)));
        QVERIFY2(hybrid.medianHigh <= 1.1 * climb.medianLow, qPrintable(say("hybrid vs hillclimb", hybrid, climb)));
        if (threeTimesUniform)
            QVERIFY2(3.0 * hybrid.median <= uniform.median, qPrintable(say("hybrid vs uniform (3x)", hybrid, uniform)));
    }

    /// The larger space (layernorm-1188, 761 of 1,188 settings recorded; held out for the
    /// 2026-11-28 revision of `hybrid`): the default needs fewer evaluations than the GA and the
    /// hill climber, over seeds 1-500 with the bootstrap 95% intervals of the medians apart by
    /// 1.25x and 1.9x (over these seeds: 66.5 [61-72.5] vs 96.5 [92-102] and 156 [139.5-173];
    /// over 1,000 seeds 64 vs 99 and 154, medians 1.55x and 2.4x apart). Uniform (368) is left
    /// out: its replays through the nearest-recorded surrogate cost minutes here; docs/SEARCH.md
    /// has its row.
    void recordedLargeSpaceRatios()
    {
        QTemporaryDir tmp;
        const std::string db = tmp.path().toStdString() + "/ln1188.db";
        std::filesystem::copy_file(std::string(HONE_SOURCE_DIR) + "/resources/demo/cpu-layernorm-1188-2026-11-27.db", db);
        Store store(db);
        auto table = ReplayTable::fromStore(store, {2});
        QCOMPARE(static_cast<int>(table.size()), 761);
        const int budget = 761;
        auto statsOf = [&](const std::string& policy) {
            std::vector<int> v;
            for (uint64_t seed = 1; seed <= 500; ++seed) {
                ReplayOptions ro;
                ro.policy = policy;
                ro.seed = seed;
                ro.budget = budget;
                ro.stopAtWithin5 = true;
                v.push_back(replaySearch(table, ro).toWithin5.value_or(budget + 1));
            }
            return replayStats(v, budget);
        };
        const auto climb = statsOf("hillclimb");
        const auto genetic = statsOf("genetic");
        const auto hybrid = statsOf("hybrid");
        QCOMPARE(hybrid.reached, 1.0);
        QVERIFY2(1.25 * hybrid.medianHigh <= genetic.medianLow, qPrintable(say("hybrid vs genetic", hybrid, genetic)));
        QVERIFY2(1.9 * hybrid.medianHigh <= climb.medianLow, qPrintable(say("hybrid vs hillclimb", hybrid, climb)));
    }
};

QTEST_GUILESS_MAIN(TestPolicies)
#include "tst_policies.moc"
