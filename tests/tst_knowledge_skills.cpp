// Skills: the knob synthesizer's prior, distillation of a session into a skill document, the
// write-back into the knowledge base, and the replay that shows the prior's effect on a real
// recorded CPU search (tests/data/kb/softmax_session.json, from `hone run
// resources/problems/cpu/softmax --budget 40 --seed 1 --workers 1`).

#include "core/knob_synth.h"
#include "core/problem_spec.h"
#include "core/store.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/replay.h"
#include "knowledge/skills.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace hone;
using namespace hone::knowledge;
namespace fs = std::filesystem;

namespace {

const char* kSource = "// hone:knob A = 1 | 2 | 4 | 8\n"
                      "// hone:knob B = x | y | z\n"
                      "// hone:knob C = 0 | 1\n"
                      "// hone:require A * 1 <= 8\n";

/// Root, one seed with the first admissible assignment, evaluated.
core::SearchTree seededTree(const std::string& hash, const core::KnobSpace& space)
{
    core::SearchTree tree;
    core::Node seed;
    seed.parent = 0;
    seed.sourceHash = hash;
    seed.knobs = *space.firstAdmissible();
    seed.origin = "seed";
    core::NodeId id = tree.add(seed);
    tree.setResult(id, true, 1.0, "");
    return tree;
}

SessionDump syntheticSession(double bestSpeedup)
{
    SessionDump s;
    s.session = 7;
    s.problem = "softmax";
    s.family = "softmax";
    s.target = "cpu";
    s.device = "cpu: Test CPU (2 cores)";
    s.cpuFlags = "fpu sse2 avx avx2 fma";
    s.sources = { { "naive.cpp", "h-naive", "int x;" }, { "tuned.cpp", "h-tuned", kSource } };
    s.nodes = { { 0, -1, 0, "", {}, "root" }, { 1, 0, 1, "naive.cpp", {}, "seed" },
        { 2, 0, 2, "tuned.cpp", { { "A", "1" }, { "B", "x" }, { "C", "0" } }, "seed" },
        { 3, 2, 3, "tuned.cpp", { { "A", "4" }, { "B", "x" }, { "C", "0" } }, "mutation" },
        { 4, 3, 4, "tuned.cpp", { { "A", "4" }, { "B", "y" }, { "C", "1" } }, "mutation" } };
    s.evaluations = { { 1, true, 1.0, 100, "memory", "memory-bound: 30% of copy bandwidth", "" },
        { 2, true, 1.4, 70, "memory", "memory-bound: 42% of copy bandwidth", "" },
        { 3, true, 2.0, 50, "latency", "latency-bound: neither ceiling", "" },
        { 4, true, bestSpeedup, 40, "memory", "memory-bound: 75% of copy bandwidth", "" } };
    return s;
}

} // namespace

class TestKnowledgeSkills : public QObject {
    Q_OBJECT
private slots:
    void noPriorMeansUnchangedChoices()
    {
        core::KnobSpace space = core::parseKnobSpace(kSource, "k.cpp");
        core::KnobSynthesizer plain;
        core::KnobSynthesizer other;
        plain.addSource("h", space);
        other.addSource("h", space);
        other.addSource("g", space);
        other.setPrior("g", { { "A", { { "8", 5.0 } } } }); // a prior for another source
        other.setPrior("h", { { "A", { { "8", 0.0 } } } }); // weights <= 0 are no prior at all
        QVERIFY(other.prior("h") == nullptr);
        core::SearchTree tree = seededTree("h", space);
        for (uint64_t seed = 0; seed < 200; ++seed) {
            std::mt19937_64 r1(seed), r2(seed);
            auto a = plain.propose(tree, 1, r1);
            auto b = other.propose(tree, 1, r2);
            QVERIFY(a && b);
            QCOMPARE(a->knobs, b->knobs);
            QCOMPARE(a->origin, b->origin);
        }
    }

    void priorProposesItsFavouriteThenBiasesMutations()
    {
        core::KnobSpace space = core::parseKnobSpace(kSource, "k.cpp");
        core::KnobSynthesizer synth;
        synth.addSource("h", space);
        synth.setPrior("h",
            { { "A", { { "8", 3.0 }, { "4", 1.0 } } }, { "B", { { "z", 1.0 } } },
                { "NOT_A_KNOB", { { "1", 9.0 } } } });
        core::SearchTree tree = seededTree("h", space);
        std::mt19937_64 rng(1);
        auto first = synth.propose(tree, 1, rng);
        QVERIFY(first.has_value());
        QCOMPARE(first->origin, std::string("prior"));
        QCOMPARE(first->knobs, (core::KnobValues { { "A", "8" }, { "B", "z" }, { "C", "0" } }));

        // Once the favourite is in the tree, mutations still lean towards the prior's values.
        core::Node fav;
        fav.parent = 1;
        fav.sourceHash = "h";
        fav.knobs = first->knobs;
        fav.origin = "prior";
        tree.setResult(tree.add(fav), true, 1.5, "");
        core::KnobSynthesizer plain;
        plain.addSource("h", space);
        int withPrior = 0, without = 0;
        for (uint64_t seed = 0; seed < 400; ++seed) {
            std::mt19937_64 r1(seed), r2(seed);
            auto a = synth.propose(tree, 1, r1);
            auto b = plain.propose(tree, 1, r2);
            QVERIFY(a && b);
            QVERIFY(space.admits(a->knobs));
            withPrior += a->knobs.at("A") == "4" || a->knobs.at("A") == "8";
            without += b->knobs.at("A") == "4" || b->knobs.at("A") == "8";
        }
        QVERIFY2(withPrior > without + 40, qPrintable(QString("%1 vs %2").arg(withPrior).arg(without)));
    }

    void distilsAndWritesTheSkillBack()
    {
        std::string why;
        SessionDump small = syntheticSession(1.05);
        small.evaluations[1].speedup = 1.01;
        small.evaluations[2].speedup = 1.03;
        QVERIFY(!distillSkill(small, {}, &why).has_value());
        QVERIFY2(QString::fromStdString(why).contains("reached 1.05x over its baseline; a skill needs 1.10x"),
            why.c_str());

        auto skill = distillSkill(syntheticSession(2.5), {});
        QVERIFY(skill.has_value());
        QCOMPARE(skill->arch, std::string("x86_64-avx2")); // from the CPU flags
        QCOMPARE(skill->platform, std::string("cpu"));
        QCOMPARE(skill->gain, 2.5);
        QCOMPARE(skill->boundBefore, std::string("memory"));
        QCOMPARE(skill->boundAfter, std::string("memory"));
        QCOMPARE(skill->baselineSource, std::string("naive.cpp"));
        QCOMPARE(skill->bestSource, std::string("tuned.cpp"));
        QCOMPARE(skill->seedKnobs.at("A"), std::string("1"));
        QCOMPARE(skill->bestKnobs.at("A"), std::string("4"));
        QCOMPARE(skill->winners.size(), size_t(3));
        QCOMPARE(skill->winners[1].speedup, 2.0);

        SourceDocument doc = skill->toDocument();
        QCOMPARE(doc.category, Category::Skill);
        std::string all;
        for (const auto& s : doc.sections)
            all += s.heading + "\n" + s.text + "\n";
        for (const char* expected : { "2.50x", "memory-bound (memory-bound: 30% of copy bandwidth)",
                 "- source: naive.cpp -> tuned.cpp", "- knob A: 1 -> 4", "- knob B: x -> y",
                 "- knob C: 0 -> 1", "tuned.cpp [A=4 B=y C=1]: 2.50x" })
            QVERIFY2(all.find(expected) != std::string::npos, expected);

        QTemporaryDir dir;
        KnowledgeBase kb(fs::path(dir.path().toStdString()) / "kb.db");
        auto r = kb.addSkill(*skill);
        QCOMPARE(r.status, AddStatus::Added);
        QCOMPARE(kb.addSkill(*skill).status, AddStatus::Unchanged);
        auto info = kb.document(r.uid);
        QCOMPARE(info->category, Category::Skill);
        QCOMPARE(info->tags.family, std::vector<std::string> { "softmax" });
        QCOMPARE(kb.skills("softmax", "x86_64-avx512").size(), size_t(1)); // AVX2 lessons apply to AVX-512
        QCOMPARE(kb.skills("softmax", "sm_90").size(), size_t(0));
        QCOMPARE(kb.skills("layernorm", "x86_64-avx2").size(), size_t(0));
        RetrievalSignals s;
        s.family = "softmax";
        s.arch = "x86_64-avx2";
        s.categories = { Category::Skill };
        auto hits = kb.retrieve(s, 3);
        QVERIFY(!hits.empty());
        QCOMPARE(hits[0].uid, r.uid);

        core::KnobPrior prior
            = skillPrior(kb.skills("softmax", "x86_64-avx2"), core::parseKnobSpace(kSource, "k.cpp"));
        QVERIFY(prior.at("A").at("4") > prior.at("A").at("1")); // the winners' values weigh most
        QVERIFY(prior.at("B").at("y") > 0);
    }

    void loadsASessionFromTheStore()
    {
        QTemporaryDir dir;
        core::Store store(fs::path(dir.path().toStdString()) / "hone.db");
        auto spec = core::loadProblem(std::string(HONE_TEST_DATA) + "/problems/scale");
        int64_t session
            = store.createSession(store.upsertProblem(spec), "cpu", "uct", 3, nlohmann::json::object());
        std::string h = store.putSource("cpp", "tuned.cpp", kSource);
        store.insertNode(session, { 0, -1, 0, "", nlohmann::json::object(), "", "root", "restart", {} });
        store.insertNode(
            session, { 1, 0, 1, h, { { "A", "1" }, { "B", "x" }, { "C", "0" } }, "", "seed", "restart", {} });
        store.insertNode(session,
            { 2, 1, 2, h, { { "A", "2" }, { "B", "x" }, { "C", "0" } }, "", "mutation", "inherit", {} });
        core::EvaluationRecord e;
        e.nodeId = 1;
        e.cacheKey = "k1";
        e.status = "ok";
        e.speedup = 1.0;
        e.bound = "memory";
        e.device = "cpu: Test";
        e.result = { { "diagnosis",
            { { "bound", "memory" }, { "evidence", "memory-bound: 20% of copy bandwidth" } } } };
        store.insertEvaluation(session, e);
        e.nodeId = 2;
        e.cacheKey = "k2";
        e.speedup = 1.8;
        // The worker reports its CPU's features: the skill's arch is the worker's, not this host's.
        e.result = { { "protocol", core::protocol::kVersion }, { "type", "result" }, { "status", "ok" },
            { "diagnosis", { { "bound", "memory" }, { "evidence", "memory-bound: 20% of copy bandwidth" } } },
            { "environment", { { "device", "cpu: Test" }, { "backend", "cpu" }, { "cpu_flags", "fpu sse2 avx512f" } } } };
        store.insertEvaluation(session, e);
        SessionDump d = loadSession(store, session);
        QCOMPARE(d.cpuFlags, std::string("fpu sse2 avx512f"));
        QVERIFY2(sessionArch(d).find("avx512") != std::string::npos, sessionArch(d).c_str());
        QCOMPARE(d.family, spec.family);
        QCOMPARE(d.nodes.size(), size_t(3));
        QCOMPARE(d.nodes[2].source, std::string("tuned.cpp"));
        QCOMPARE(d.nodes[2].knobs.at("A"), std::string("2"));
        QCOMPARE(d.evaluations.size(), size_t(2));
        QCOMPARE(d.device, std::string("cpu: Test"));
        QCOMPARE(d.sources.size(), size_t(1));
        // The dump survives JSON (how replays are recorded for tests).
        SessionDump back = SessionDump::fromJson(d.toJson(), "dump.json");
        QCOMPARE(back.evaluations[1].speedup, 1.8);
        QCOMPARE(back.nodes[1].origin, std::string("seed"));
        try {
            loadSession(store, 99);
            QFAIL("a missing session must be refused");
        } catch (const std::runtime_error& err) {
            QVERIFY(QString(err.what()).contains("no session 99 in store"));
        }
    }

    void skillPriorNeedsFewerEvaluationsOnARecordedSearch()
    {
        std::ifstream in(std::string(HONE_TEST_DATA) + "/kb/softmax_session.json");
        QVERIFY(in.good());
        SessionDump dump = SessionDump::fromJson(nlohmann::json::parse(in), "softmax_session.json");
        QVERIFY(dump.evaluations.size() >= 40);

        // Write-back: the recorded session becomes a skill in the knowledge base ...
        QTemporaryDir dir;
        KnowledgeBase kb(fs::path(dir.path().toStdString()) / "kb.db");
        auto skill = distillSkill(dump, {});
        QVERIFY(skill.has_value());
        QVERIFY(skill->gain >= 1.10);
        kb.addSkill(*skill);
        // ... and a later session on the same family and arch reads it back as its prior.
        auto skills = kb.skills(dump.family, skill->arch);
        QCOMPARE(skills.size(), size_t(1));
        NearestReplayTable table(dump);
        QCOMPARE(table.size(), dump.evaluations.size());
        std::map<std::string, core::KnobPrior> priors;
        for (const auto& s : table.seeds())
            if (!s.space.empty())
                priors[s.source] = skillPrior(skills, s.space);
        QCOMPARE(priors.size(), size_t(1));

        std::vector<uint64_t> seeds;
        for (uint64_t s = 1; s <= 20; ++s)
            seeds.push_back(s);
        const int budget = 60;
        ReplayStudy st = replayStudy(table, priors, seeds, budget);
        QString perSeed;
        for (size_t i = 0; i < seeds.size(); ++i)
            perSeed += QString(" %1/%2").arg(st.without[i]).arg(st.with[i]);
        qInfo().noquote() << QString(
            "replay of %1 recorded evaluations (best %2x): evaluations to within 5% of the "
            "best, median without prior %3 (reached %4/%5), with skill prior %6 (reached "
            "%7/%5); per seed without/with:%8")
                                 .arg(table.size())
                                 .arg(table.bestSpeedup(), 0, 'f', 2)
                                 .arg(st.medianWithout)
                                 .arg(st.reachedWithout)
                                 .arg(seeds.size())
                                 .arg(st.medianWith)
                                 .arg(st.reachedWith)
                                 .arg(perSeed);
        QVERIFY(st.medianWith < st.medianWithout);
        QVERIFY(st.reachedWith >= st.reachedWithout);
        // The replay is deterministic: the same seed gives the same search.
        QCOMPARE(replaySearch(table, priors, 5, budget).evaluationsToTarget, st.with[4]);
    }
};

QTEST_GUILESS_MAIN(TestKnowledgeSkills)
#include "tst_knowledge_skills.moc"
