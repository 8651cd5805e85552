// Skills that transfer (docs/SEARCH.md): move statistics learnt from one recording, applied by
// the hybrid policy on another.

#include "core/knob_policy.h"
#include "core/move_skill.h"
#include "core/replay.h"
#include "core/store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hone::core;

namespace {

/// A recorded sweep with the `acts=` of the problem's current seed files (the recording
/// predates them).
ReplayTable recorded(const QTemporaryDir& tmp, const std::string& file, const std::vector<int64_t>& sessions,
    const std::string& problem)
{
    const std::string db = tmp.path().toStdString() + "/" + problem + std::to_string(sessions.front()) + "-" + file;
    std::filesystem::copy_file(std::string(HONE_SOURCE_DIR) + "/resources/demo/" + file, db);
    Store store(db);
    auto table = ReplayTable::fromStore(store, sessions);
    std::map<std::string, KnobSpace> seeds;
    const auto dir = std::filesystem::path(HONE_SOURCE_DIR) / "resources/problems/cpu" / problem / "seeds";
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(e.path());
        std::stringstream text;
        text << in.rdbuf();
        seeds[e.path().filename().string()] = parseKnobSpace(text.str(), e.path().string());
    }
    table.adoptActs(seeds);
    return table;
}

ReplayStats hybridStats(const ReplayTable& table, std::shared_ptr<const MoveSkill> skill)
{
    const int budget = static_cast<int>(table.size());
    std::vector<int> v;
    for (uint64_t seed = 1; seed <= 1000; ++seed) {
        ReplayOptions ro;
        ro.policy = "hybrid";
        ro.seed = seed;
        ro.budget = budget;
        ro.stopAtWithin5 = true;
        ro.knobPolicy.hybrid.skill = skill;
        v.push_back(replaySearch(table, ro).toWithin5.value_or(budget + 1));
    }
    return replayStats(v, budget);
}

QString say(const ReplayStats& with, const ReplayStats& without)
{
    return QStringLiteral("with the skill %1 [%2-%3], without %4 [%5-%6]")
        .arg(with.median).arg(with.medianLow).arg(with.medianHigh)
        .arg(without.median).arg(without.medianLow).arg(without.medianHigh);
}

} // namespace

class TestMoveSkill : public QObject {
    Q_OBJECT
private slots:
    /// A skill is a statement about kinds of moves, matched by knob name, else by what the knob
    /// acts on, under the diagnosis (else any diagnosis); a move it knows nothing of scores 0.
    void matchesByNameThenActsThenAnyDiagnosis()
    {
        MoveSkill s;
        s.stats = {{"latency", "VEC", "bytes_per_access", 1, 18, 20}, {"latency", "VEC", "bytes_per_access", -1, 2, 20},
            {"memory", "THREADS", "parallelism", 1, 0, 10}};
        QVERIFY(s.logOdds("latency", "VEC", "bytes_per_access", 1) > 1.5);
        QVERIFY(s.logOdds("latency", "VEC", "bytes_per_access", -1) < -1.5);
        // Another problem's knob of the same kind, under the same diagnosis.
        QCOMPARE(s.logOdds("latency", "WIDTH", "bytes_per_access", 1), s.logOdds("latency", "VEC", "", 1));
        // No statistics for this diagnosis: pooled over diagnoses.
        QVERIFY(s.logOdds("compute", "THREADS", "", 1) < -1.5);
        QCOMPARE(s.logOdds("latency", "UNROLL", "work_per_thread", 1), 0.0);
        QCOMPARE(s.logOdds("latency", "UNKNOWN", "", 1), 0.0);
        const auto back = MoveSkill::fromJson(s.toJson(), "skill.json");
        QCOMPARE(back.stats.size(), s.stats.size());
        QCOMPARE(back.logOdds("memory", "THREADS", "parallelism", 1), s.logOdds("memory", "THREADS", "parallelism", 1));
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, MoveSkill::fromJson(nlohmann::json {{"kind", "skill"}}, "x.json"));
    }

    /// Learnt from layernorm's 145-setting sweep: the skill holds move statistics, no setting,
    /// and says what the sweep shows (a second thread helped almost every latency-bound point).
    void learnsMoveStatisticsNotSettings()
    {
        QTemporaryDir tmp;
        const auto table = recorded(tmp, "cpu-sweeps-2026-11-25.db", {2}, "layernorm");
        const MoveSkill skill = learnMoveSkill(table);
        QVERIFY(!skill.empty());
        const auto j = skill.toJson();
        QVERIFY2(j.dump().find("\"knobs\"") == std::string::npos, "a move skill must not copy settings");
        bool threads = false;
        for (const auto& s : skill.stats)
            if (s.bound == "latency" && s.knob == "THREADS" && s.direction == 1) {
                threads = true;
                QCOMPARE(s.acts, std::string("parallelism"));
                QVERIFY2(s.wins / s.trials > 0.9, qPrintable(QString::number(s.wins / s.trials)));
            }
        QVERIFY(threads);
        QVERIFY(!skill.statements().empty());
    }

    /// Held out, same machine state: learnt on layernorm-1188 (2026-11-27), applied on the
    /// three-timing softmax recording (2026-11-27, noise-aware replay), the skill's content
    /// cuts hybrid's evaluations to within 5% of the best against the same policy with a skill
    /// that matches no knob (the same shorter start-up, no knowledge): measured over seeds
    /// 1-1000, 20 [18-21] vs 25 [24-26], 1.25x; the check needs the bootstrap 95% intervals
    /// apart. (Across machine states the same skill does not help or harms, and nothing reaches
    /// the 1.5x held out: docs/SEARCH.md, "Skills that transfer".)
    void skillContentTransfersWithinAMachineState()
    {
        QTemporaryDir tmp;
        const auto source = recorded(tmp, "cpu-layernorm-1188-2026-11-27.db", {2}, "layernorm");
        const auto target = recorded(tmp, "cpu-softmax-3timings-2026-11-27.db", {1, 2, 3}, "softmax");
        auto skill = std::make_shared<const MoveSkill>(learnMoveSkill(source));
        auto blank = std::make_shared<MoveSkill>();
        blank->stats = {{"latency", "NO_SUCH_KNOB", "", 1, 5, 10}};
        const auto with = hybridStats(target, skill);
        const auto without = hybridStats(target, blank);
        QCOMPARE(with.reached, 1.0);
        QVERIFY2(with.medianHigh < without.medianLow, qPrintable(say(with, without)));
    }
};

QTEST_GUILESS_MAIN(TestMoveSkill)
#include "tst_move_skill.moc"
