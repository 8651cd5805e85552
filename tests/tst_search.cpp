#include "core/knob_synth.h"
#include "core/search_tree.h"

#include <QtTest>

#include <set>

using namespace hone::core;

namespace {

const char* kSource = "// hone:knob A = 1 | 2 | 4 | 8\n"
                      "// hone:knob B = 1 | 2 | 4 | 8\n"
                      "// hone:knob C = x | y\n"
                      "// hone:require A * B <= 16\n";

NodeId addSeed(SearchTree& t, KnobValues knobs)
{
    Node n;
    n.parent = 0;
    n.sourceHash = "src";
    n.knobs = std::move(knobs);
    n.origin = "seed";
    return t.add(n);
}

/// Grows a tree with a synthetic reward (a fixed function of the knobs) for `steps` steps.
std::vector<std::string> grow(uint64_t seed, int steps)
{
    SearchTree tree;
    KnobSynthesizer synth;
    synth.addSource("src", parseKnobSpace(kSource, "s.cpp"));
    NodeId s = addSeed(tree, {{"A", "1"}, {"B", "1"}, {"C", "x"}});
    tree.setResult(s, true, 1.0, "");
    std::vector<std::string> log;
    for (int i = 0; i < steps; ++i) {
        auto sel = tree.select(UctParams {});
        if (!sel)
            break;
        std::mt19937_64 rng(seed * 1000 + static_cast<uint64_t>(i));
        auto p = synth.propose(tree, *sel, rng);
        if (!p) {
            tree.markExhausted(*sel);
            continue;
        }
        Node n;
        n.parent = p->parent;
        n.sourceHash = p->sourceHash;
        n.knobs = p->knobs;
        n.origin = p->origin;
        NodeId id = tree.add(n);
        double speed = std::stod(p->knobs["A"]) * std::stod(p->knobs["B"]) / (p->knobs["C"] == "y" ? 2.0 : 4.0);
        tree.setResult(id, true, speed, "");
        log.push_back(std::to_string(n.parent) + ">" + knobsToString(n.knobs));
    }
    return log;
}

} // namespace

class TestSearch : public QObject {
    Q_OBJECT
private slots:
    void progressiveWideningLimitsChildren()
    {
        SearchTree t;
        NodeId s = addSeed(t, {{"A", "1"}});
        t.setResult(s, true, 1.0, "");
        UctParams p = UctParams::legacy(); // widening: ceil(1 * visits^0.5)
        QCOMPARE(t.select(p), std::optional<NodeId>(s)); // 1 visit allows 1 child
        Node c;
        c.parent = s;
        c.sourceHash = "src";
        c.knobs = {{"A", "2"}};
        NodeId c1 = t.add(c);
        t.setResult(c1, true, 1.5, "");
        // The seed now has 2 visits -> ceil(sqrt 2) = 2 children allowed: it is expanded again.
        QCOMPARE(t.select(p), std::optional<NodeId>(s));
        c.knobs = {{"A", "4"}};
        NodeId c2 = t.add(c);
        t.setResult(c2, true, 3.0, "");
        // 3 visits -> 2 allowed, and it has 2: selection descends to the better child.
        QCOMPARE(t.select(p), std::optional<NodeId>(c2));
        QCOMPARE(t.node(0).visits, 3);
        QCOMPARE(t.best(), std::optional<NodeId>(c2));
    }

    /// The default UCT expands the best kernel, not the first ancestor with room: expanding a
    /// node is one arm beside its children, and rewards are rescaled to the tree's range.
    void selfArmExpandsTheBestKernelNotItsAncestor()
    {
        SearchTree t;
        NodeId s = addSeed(t, {{"A", "1"}});
        t.setResult(s, true, 1.0, "");
        Node c;
        c.parent = s;
        c.sourceHash = "src";
        c.knobs = {{"A", "2"}};
        NodeId good = t.add(c);
        t.setResult(good, true, 3.0, "");
        QCOMPARE(t.select(UctParams::legacy()), std::optional<NodeId>(s)); // widening: the seed has room
        QCOMPARE(t.select(UctParams {}), std::optional<NodeId>(good));
        // A few children later the seed's own arm wins a turn again: exploration is still there.
        c.parent = good;
        for (const char* a : {"3", "4", "5", "6", "7", "8"}) {
            c.knobs = {{"A", a}};
            t.setResult(t.add(c), true, 2.9, "");
        }
        UctParams explore;
        explore.exploration = 2.0;
        QCOMPARE(t.select(explore), std::optional<NodeId>(s));
        QVERIFY(t.select(UctParams {}) != std::optional<NodeId>(s));
    }

    void prunedAndFailedNodesAreNeverSelected()
    {
        SearchTree t;
        NodeId a = addSeed(t, {{"A", "1"}});
        NodeId b = addSeed(t, {{"A", "2"}});
        t.setResult(a, true, 5.0, "");
        t.setResult(b, false, 0, "compile_error");
        t.node(a).pruned = true;
        QVERIFY(!t.select(UctParams {}).has_value());
        t.node(a).pruned = false;
        QCOMPARE(t.select(UctParams {}), std::optional<NodeId>(a));
        t.markExhausted(a);
        QVERIFY(!t.select(UctParams {}).has_value());
    }

    void virtualLossSteersParallelSelection()
    {
        SearchTree t;
        NodeId a = addSeed(t, {{"A", "1"}});
        NodeId b = addSeed(t, {{"A", "2"}});
        t.setResult(a, true, 1.2, "");
        t.setResult(b, true, 1.0, "");
        UctParams p = UctParams::legacy();
        p.widenK = 0.1; // no widening: pick among the two seeds by UCT
        p.maxWeight = 0;
        Node c;
        c.parent = a;
        c.sourceHash = "src";
        c.knobs = {{"A", "9"}};
        t.setResult(t.add(c), true, 1.2, "");
        c.parent = b;
        c.knobs = {{"A", "8"}};
        t.setResult(t.add(c), true, 1.0, "");
        auto first = t.select(p);
        QVERIFY(first.has_value());
        for (int i = 0; i < 6; ++i)
            t.addVirtualLoss(*first);
        auto second = t.select(p);
        QVERIFY(second.has_value());
        QVERIFY2(*second != *first, "virtual loss must push the next selection elsewhere");
    }

    void synthesizerRespectsRequireAndNeverRepeats()
    {
        auto log = grow(3, 120);
        QCOMPARE(log.size(), size_t(25)); // then select() reports the space exhausted
        std::set<std::string> seen;
        KnobSpace space = parseKnobSpace(kSource, "s.cpp");
        for (const auto& entry : log) {
            std::string knobs = entry.substr(entry.find('>') + 1);
            QVERIFY2(seen.insert(knobs).second, ("repeated candidate " + knobs).c_str());
            KnobValues v;
            std::istringstream in(knobs);
            std::string kv;
            while (in >> kv)
                v[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
            std::string why;
            QVERIFY2(space.admits(v, &why), why.c_str());
        }
        // 13 (A, B) pairs have A*B <= 16, times 2 values of C: 26 assignments, one is the seed.
        // The search must reach every one of them and then report the space exhausted.
        QCOMPARE(seen.size(), size_t(25));
    }

    void searchIsDeterministicForASeed()
    {
        QCOMPARE(grow(11, 25), grow(11, 25));
        QVERIFY(grow(11, 25) != grow(12, 25));
    }
};

QTEST_GUILESS_MAIN(TestSearch)
#include "tst_search.moc"
