// The typed evaluation result (core/eval_result.h): one decoder, one encoder, nothing lost.
#include "core/eval_result.h"

#include <QtTest>

#include <fstream>

using namespace hone::core;
using nlohmann::json;

namespace {

/// A result recorded from hone-worker (tests/data/results/README.md says how).
json recorded(const char* name)
{
    std::ifstream in(std::string(HONE_TEST_DATA) + "/results/" + name);
    if (!in)
        throw std::runtime_error(std::string("missing test data results/") + name);
    return json::parse(in);
}

} // namespace

class TstEvalResult : public QObject {
    Q_OBJECT
private slots:
    void realWorkerResultsRoundTrip_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addRow("cpu ok") << "cpu_ok.json";
        QTest::addRow("cpu three shapes") << "cpu_shapes.json";
        QTest::addRow("cpu wrong result") << "cpu_wrong.json";
    }
    void realWorkerResultsRoundTrip()
    {
        QFETCH(QString, file);
        const json j = recorded(file.toUtf8().constData());
        const protocol::EvalResult r = protocol::EvalResult::fromJson(j);
        QCOMPARE(r.toJson(), j);
        QCOMPARE(protocol::EvalResult::fromJson(r.toJson()), r);
    }

    void typedFieldsOfARealResult()
    {
        const json j = recorded("cpu_ok.json");
        const protocol::EvalResult r = protocol::EvalResult::fromJson(j);
        QVERIFY(r.ok());
        QVERIFY(!r.failure);
        QCOMPARE(r.medianNs(), j["timing"]["median_ns"].get<double>());
        QCOMPARE(r.timing->stats.samplesNs.size(), j["timing"]["samples_ns"].size());
        QCOMPARE(r.baselineMedianNs(), j["timing"]["baseline"]["median_ns"].get<double>());
        QCOMPARE(r.speedup(), j["timing"]["speedup"].get<double>());
        QCOMPARE(r.fracBandwidth(), j["roofline"]["frac_bandwidth"].get<double>());
        QCOMPARE(r.bound(), j["diagnosis"]["bound"].get<std::string>());
        QCOMPARE(r.checks->size(), j["checks"].size());
        QCOMPARE(r.environment->backend, std::string("cpu"));
        // What no struct names yet is kept, not dropped.
        QVERIFY(r.timing->extra.contains("method"));
        QVERIFY(r.extra.contains("stage_seconds"));

        const protocol::EvalResult w = protocol::EvalResult::fromJson(recorded("cpu_wrong.json"));
        QVERIFY(!w.ok());
        QCOMPARE(w.failureKind(), protocol::FailureKind::WrongResult);
        QCOMPARE(w.speedup(), 0.0);
        bool failedCheck = false;
        for (const auto& c : *w.checks)
            failedCheck |= !c.ok && c.failureKind == protocol::FailureKind::WrongResult && c.mismatches > 0;
        QVERIFY(failedCheck);

        const protocol::EvalResult s = protocol::EvalResult::fromJson(recorded("cpu_shapes.json"));
        QCOMPARE(s.shapeResults().size(), size_t(3));
        QVERIFY(s.shapeResults()[1].medianNs() > 0);
    }

    /// `phases` (host time by kind of work) is read as numbers; a kind this hone has no field
    /// for is kept, and an absent kind stays absent.
    void phasesAreTyped()
    {
        json j = recorded("cpu_ok.json");
        j["phases"] = { { "generate", 1.5 }, { "cache_read", 0.25 }, { "cache_hash", 1.0 }, { "reference", 2.0 },
            { "transfer", 0.5 }, { "candidate", 0.125 }, { "verify", 0.75 }, { "upload_pinned", 0.1 } };
        const protocol::EvalResult r = protocol::EvalResult::fromJson(j);
        QVERIFY(r.phases);
        QCOMPARE(r.phases->generate.value_or(-1), 1.5);
        QCOMPARE(r.phases->cacheRead.value_or(-1), 0.25);
        QCOMPARE(r.phases->cacheHash.value_or(-1), 1.0);
        QVERIFY(!r.phases->cacheWrite);
        QCOMPARE(r.phases->reference.value_or(-1), 2.0);
        QCOMPARE(r.phases->transfer.value_or(-1), 0.5);
        QCOMPARE(r.phases->candidate.value_or(-1), 0.125);
        QCOMPARE(r.phases->verify.value_or(-1), 0.75);
        QCOMPARE(r.phases->extra["upload_pinned"].get<double>(), 0.1);
        QVERIFY(!r.extra.contains("phases"));
        QCOMPARE(r.toJson(), j);
        QVERIFY(!protocol::EvalResult::fromJson(recorded("cpu_ok.json")).phases);
    }

    /// A newer worker's fields survive the engine: kept in `extra` at every level, written back.
    void unknownFieldsAreKept()
    {
        json j = recorded("cpu_ok.json");
        j["energy_j"] = 0.25;
        j["timing"]["method"]["new_clock"] = "tsc";
        j["timing"]["power_w"] = { 1, 2, 3 };
        j["diagnosis"]["confidence"] = 0.9;
        j["checks"][0]["ulp"] = 2;
        const protocol::EvalResult r = protocol::EvalResult::fromJson(j);
        QCOMPARE(r.extra["energy_j"].get<double>(), 0.25);
        QCOMPARE(r.diagnosis->extra["confidence"].get<double>(), 0.9);
        QCOMPARE(r.toJson(), j);
        // A known field with an unexpected type is kept as it was, not read as a value.
        j["roofline"]["gbps"] = "fast";
        const protocol::EvalResult odd = protocol::EvalResult::fromJson(j);
        QVERIFY(!odd.roofline->gbps);
        QCOMPARE(odd.toJson(), j);
    }

    void missingRequiredFieldIsNamed_data()
    {
        QTest::addColumn<QString>("pointer"); // what is removed (a JSON pointer)
        QTest::addColumn<QString>("message");
        QTest::addRow("median") << "/timing/median_ns" << "result.timing.median_ns missing";
        QTest::addRow("baseline median") << "/timing/baseline/median_ns" << "result.timing.baseline.median_ns missing";
        QTest::addRow("status") << "/status" << "result.status missing";
        QTest::addRow("check verdict") << "/checks/1/ok" << "result.checks[1].ok missing";
    }
    void missingRequiredFieldIsNamed()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, message);
        json j = recorded("cpu_ok.json");
        const json::json_pointer p(pointer.toStdString());
        j[p.parent_pointer()].erase(p.back());
        try {
            (void)protocol::EvalResult::fromJson(j);
            QFAIL("no ProtocolError");
        } catch (const protocol::ProtocolError& e) {
            QCOMPARE(QString(e.what()), message);
        }
    }

    void failedResultNeedsAKnownKind()
    {
        json j = recorded("cpu_wrong.json");
        j["failure"]["kind"] = "gremlins";
        QVERIFY_EXCEPTION_THROWN(protocol::EvalResult::fromJson(j), protocol::ProtocolError);
        j.erase("failure");
        try {
            (void)protocol::EvalResult::fromJson(j);
            QFAIL("no ProtocolError");
        } catch (const protocol::ProtocolError& e) {
            QCOMPARE(QString(e.what()), QString("result.failure missing in a failed result"));
        }
        j = recorded("cpu_ok.json");
        j["protocol"] = 3;
        QVERIFY_EXCEPTION_THROWN(protocol::EvalResult::fromJson(j), protocol::ProtocolError);
    }

    void everyFailureKindRoundTrips()
    {
        using K = protocol::FailureKind;
        int seen = 0;
        for (K k : { K::BadCandidate, K::CompileError, K::RuntimeError, K::WrongResult, K::Nan, K::PartialWrite,
                 K::InputMutation, K::Crash, K::Timeout, K::MemoryLimit, K::ProtocolError, K::WorkerError,
                 K::Suspicious, K::LlmError }) {
            const protocol::EvalResult r = protocol::EvalResult::failed("n1", k, "check", "why");
            const json j = r.toJson();
            QCOMPARE(j["failure"]["kind"].get<std::string>(), std::string(protocol::failureKindName(k)));
            const protocol::EvalResult back = protocol::EvalResult::fromJson(j);
            QCOMPARE(back.failureKind(), k);
            QCOMPARE(back.failure->message, std::string("why"));
            QCOMPARE(protocol::failureKindFromName(protocol::failureKindName(k)), std::optional<K>(k));
            ++seen;
        }
        QCOMPARE(seen, 14);
    }

    /// A value built in code (as the views' tests build theirs) encodes to what a worker writes.
    void builtValueEncodes()
    {
        protocol::EvalResult r;
        r.id = "s1-n4";
        r.status = protocol::EvalStatus::Ok;
        r.timing = protocol::Timing {};
        r.timing->stats.medianNs = 1200;
        r.timing->speedup = 2.0;
        r.objective = protocol::ObjectiveRecord {};
        r.objective->value = 1.5;
        const json j = r.toJson();
        QCOMPARE(j["protocol"].get<int>(), protocol::kVersion);
        QCOMPARE(j["timing"]["median_ns"].get<double>(), 1200.0);
        QCOMPARE(r.speedup(), 1.5); // the engine's objective ranks, when recorded
        QCOMPARE(r.timedSpeedup(), 2.0);
        QCOMPARE(protocol::EvalResult::fromJson(j), r);
    }
};

QTEST_GUILESS_MAIN(TstEvalResult)
#include "tst_eval_result.moc"
