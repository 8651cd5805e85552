// The diagnosis-guided knob policy (docs/SEARCH.md, "Diagnosis-guided moves").

#include "core/knob_policy.h"
#include "core/replay.h"
#include "core/store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace hone::core;

namespace {

const char* kSource = "// hone:knob A = 0 | 1 | 2 | 3 | 4 | 5  acts=bytes_per_access\n"
                      "// hone:knob B = 0 | 1 | 2 | 3 | 4 | 5  acts=parallelism\n"
                      "// hone:knob C = 0 | 1 | 2 | 3 | 4 | 5  acts=launch_shape\n"
                      "// hone:knob D = 0 | 1 | 2 | 3 | 4 | 5\n";

/// A landscape where what helps depends on the diagnosis: below A = 5 the kernel is memory-
/// bound and only raising A (bytes per access) helps; at A = 5 it is latency-bound and only
/// raising B (parallelism) helps. C and D change nothing.
ReplayTable diagnosisTable()
{
    ReplayTable table;
    table.addSource("src", parseKnobSpace(kSource, "s.cu"));
    table.addSeed({"src", "s.cu", {{"A", "0"}, {"B", "0"}, {"C", "0"}, {"D", "0"}}, ""});
    for (int a = 0; a < 6; ++a)
        for (int b = 0; b < 6; ++b)
            for (int c = 0; c < 6; ++c)
                for (int d = 0; d < 6; ++d) {
                    const double speed = 1.0 + 0.5 * a + (a == 5 ? 0.3 * b : 0.0);
                    table.addResult("src",
                        {{"A", std::to_string(a)}, {"B", std::to_string(b)}, {"C", std::to_string(c)},
                            {"D", std::to_string(d)}},
                        "", {true, speed, "", a < 5 ? "memory" : "latency"});
                }
    return table;
}

/// Per parent diagnosis, how often each knob was the one a one-knob move changed, leaving out
/// the moves from the peak.
using MoveCounts = std::map<std::string, std::map<std::string, int>>;

void countMoves(const SearchTree& tree, MoveCounts& counts)
{
    for (size_t i = 1; i < tree.size(); ++i) {
        const Node& n = tree.node(static_cast<NodeId>(i));
        if (n.origin != "neighbour")
            continue;
        const Node& p = tree.node(n.parent);
        if (p.knobs.at("B") == "5" && p.knobs.at("A") == "5")
            continue; // the peak: every neighbour is evaluated before a restart, whatever the order
        for (const auto& [k, v] : n.knobs)
            if (p.knobs.at(k) != v)
                ++counts[p.bound][k];
    }
}

double share(const MoveCounts& c, const std::string& bound, const std::string& knob)
{
    int total = 0;
    for (const auto& [k, n] : c.at(bound))
        total += n;
    auto it = c.at(bound).find(knob);
    return total > 0 && it != c.at(bound).end() ? static_cast<double>(it->second) / total : 0.0;
}

} // namespace

class TestGuided : public QObject {
    Q_OBJECT
private slots:
    /// Over 300 replay seeds of 80 evaluations (about 5,000 moves from memory-bound and 3,300
    /// from latency-bound parents, leaving out the peak's, so a share has a standard error under
    /// 0.01), the guided policy learns within each run which kind of move helps under which
    /// diagnosis: from memory-bound parents it moves A (bytes_per_access) far more often than the
    /// hill climber's uniform order does (5 of 20 neighbours; measured 0.55 vs 0.25), and from
    /// latency-bound parents B (parallelism) (0.60 vs 0.25). The thresholds are more than ten
    /// standard errors from both.
    void prefersTheKindThatHelpedUnderTheDiagnosis()
    {
        ReplayTable table = diagnosisTable();
        MoveCounts guided, climb;
        for (uint64_t seed = 1; seed <= 300; ++seed) {
            ReplayOptions o;
            o.seed = seed;
            o.budget = 80;
            o.policy = "guided";
            countMoves(replaySearch(table, o).tree, guided);
            o.policy = "hillclimb";
            countMoves(replaySearch(table, o).tree, climb);
        }
        const double gA = share(guided, "memory", "A"), cA = share(climb, "memory", "A");
        const double gB = share(guided, "latency", "B"), cB = share(climb, "latency", "B");
        auto total = [](const MoveCounts& c, const std::string& bound) {
            int n = 0;
            for (const auto& [k, m] : c.at(bound))
                n += m;
            return n;
        };
        const QString say = QString("memory: A moved %1 (guided) vs %2 (hillclimb); latency: B moved %3 vs %4; moves "
                                    "from memory/latency parents: guided %5/%6, hillclimb %7/%8")
                                .arg(gA)
                                .arg(cA)
                                .arg(gB)
                                .arg(cB)
                                .arg(total(guided, "memory"))
                                .arg(total(guided, "latency"))
                                .arg(total(climb, "memory"))
                                .arg(total(climb, "latency"));
        qInfo("%s", qPrintable(say));
        QVERIFY2(cA > 0.15 && cA < 0.35, qPrintable(say)); // the uniform order: 5 of 20 neighbours
        QVERIFY2(gA > 0.5, qPrintable(say));
        QVERIFY2(gB > cB + 0.15, qPrintable(say));
        QVERIFY2(share(guided, "latency", "A") < share(climb, "latency", "A"), qPrintable(say));
    }

    /// Knobs without `acts` are still moved (as one more kind): the policy covers the space
    /// without repeats (tst_policies checks every knob-space policy) and reaches the best.
    void reachesTheBestWithoutActs()
    {
        ReplayTable table;
        std::string plain = kSource;
        for (const char* kind : {"  acts=bytes_per_access", "  acts=parallelism", "  acts=launch_shape"})
            plain.erase(plain.find(kind), std::string(kind).size());
        table.addSource("src", parseKnobSpace(plain, "s.cu"));
        table.addSeed({"src", "s.cu", {{"A", "0"}, {"B", "0"}, {"C", "0"}, {"D", "0"}}, ""});
        for (int a = 0; a < 6; ++a)
            for (int b = 0; b < 6; ++b)
                table.addResult("src", {{"A", std::to_string(a)}, {"B", std::to_string(b)}, {"C", "0"}, {"D", "0"}}, "",
                    {true, 1.0 + a + 0.1 * b, "", ""});
        for (uint64_t seed = 1; seed <= 20; ++seed) {
            ReplayOptions o;
            o.seed = seed;
            o.budget = 200;
            o.policy = "guided";
            o.stopAtBest = true;
            QVERIFY(replaySearch(table, o).toBest.has_value());
        }
    }

    /// On a real recording (the layernorm sweep of 2026-11-25, 145 settings, every evaluation
    /// with its roofline bound) the recorded source adopts the current seed's acts=, the
    /// replayed nodes carry the recorded diagnosis, and every one of 200 guided replays comes
    /// within 5% of the best inside the recording.
    void replaysARealRecording()
    {
        QTemporaryDir tmp;
        const std::string db = tmp.path().toStdString() + "/sweeps.db";
        std::filesystem::copy_file(std::string(HONE_SOURCE_DIR) + "/resources/demo/cpu-sweeps-2026-11-25.db", db);
        Store store(db);
        auto table = ReplayTable::fromStore(store, {2});
        QCOMPARE(table.actsCoverage().second, 0); // recorded before acts= existed
        const std::string seed = std::string(HONE_SOURCE_DIR) + "/resources/problems/cpu/layernorm/seeds/tuned.cpp";
        std::ifstream in(seed);
        std::stringstream text;
        text << in.rdbuf();
        const int adopted = table.adoptActs({{"tuned.cpp", parseKnobSpace(text.str(), seed)}});
        QCOMPARE(adopted, 6);
        QCOMPARE(table.actsCoverage(), (std::pair<int, int>(6, 6)));
        int withBound = 0, nodes = 0;
        for (uint64_t s = 1; s <= 200; ++s) {
            ReplayOptions o;
            o.policy = "guided";
            o.seed = s;
            o.budget = static_cast<int>(table.size());
            o.stopAtWithin5 = true;
            auto r = replaySearch(table, o);
            QVERIFY2(r.toWithin5.has_value(), qPrintable(QString("seed %1").arg(s)));
            QCOMPARE(r.exactHits, static_cast<int>(r.speedups.size()));
            for (size_t i = 1; i < r.tree.size(); ++i) {
                ++nodes;
                withBound += r.tree.node(static_cast<NodeId>(i)).bound.empty() ? 0 : 1;
            }
        }
        QCOMPARE(withBound, nodes);
    }
};

QTEST_GUILESS_MAIN(TestGuided)
#include "tst_guided.moc"
