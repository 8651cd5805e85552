// The eval request type (core/eval_request.h: EvalRequest::fromJson / toJson, as the engine
// writes and the worker reads it) and the worker's input draws (HostTensor::fill), linked from
// hone_worker_lib: what a request line becomes, that writing it back loses nothing, the errors
// that name the bad field, and the inputs fuzz_eval_request found undefined behaviour on.

#include "coverage_checks.h"
#include "eval_request.h"
#include "tensors.h"

#include <QtTest>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

using namespace hone::backends;

namespace {

/// A request the engine sent to the worker (captured from `hone eval` on the CPU softmax; it is
/// also a seed of the fuzz corpus).
nlohmann::json realRequest()
{
    std::ifstream f(HONE_SOURCE_DIR "/tests/fuzz/corpus/fuzz_eval_request/real_softmax");
    std::stringstream ss;
    ss << f.rdbuf();
    return nlohmann::json::parse(ss.str());
}

/// The message of the RequestError that `EvalRequest::fromJson(r)` throws, or "" when it accepts.
QString requestError(const nlohmann::json& r)
{
    try {
        (void)EvalRequest::fromJson(r);
    } catch (const RequestError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

/// A one-input tensor of `dtype` and `shape` with `init`, drawn with seed 1.
HostTensor drawn(hone_dtype dtype, std::vector<int64_t> shape, const nlohmann::json& init)
{
    TensorDesc d;
    d.name = "x";
    d.dtype = dtype;
    d.shape = std::move(shape);
    d.init = init;
    HostTensor t(d);
    t.fill(1, "small[0]", 0);
    return t;
}

/// realRequest() with a [check] coverage: two distributions, three shapes drawn from ranges.
nlohmann::json coveredRequest(const std::string& secret)
{
    nlohmann::json r = realRequest();
    r["secret"] = secret;
    r["problem"]["coverage"] = nlohmann::json::parse(R"({
        "shapes": 3,
        "ranges": [ {"symbol": "M", "min": 1, "max": 300, "multiple_of": 1},
                    {"symbol": "N", "min": 1, "max": 5000, "multiple_of": 1} ],
        "distributions": [ {"name": "large", "scale": 30}, {"name": "negative", "sign": "negative"} ],
        "template": {
            "inputs": [ {"name": "x", "dtype": "f32", "shape": ["M", "N"],
                         "init": {"dist": "normal", "args": {"mean": "0.0", "std": "3.0"}}} ],
            "outputs": [ {"name": "y", "dtype": "f32", "shape": ["M", "N"]} ],
            "flops": "5 * M * N", "bytes": "8 * M * N" } })");
    return r;
}

std::vector<std::string> labels(const std::vector<CoverageCheck>& plan)
{
    std::vector<std::string> out;
    for (const auto& c : plan)
        out.push_back(c.shape.label + " seed " + std::to_string(c.seed));
    return out;
}

QString fillError(hone_dtype dtype, std::vector<int64_t> shape, const nlohmann::json& init)
{
    try {
        (void)drawn(dtype, std::move(shape), init);
    } catch (const RequestError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestEvalRequest : public QObject {
    Q_OBJECT
private slots:
    void readsARealRequest()
    {
        const EvalRequest r = EvalRequest::fromJson(realRequest());
        QCOMPARE(r.problemName, std::string("softmax"));
        QCOMPARE(r.seeds, (std::vector<uint64_t> { 1, 2, 3 }));
        QCOMPARE(r.bench.size(), size_t(3));
        QCOMPARE(r.timingShapes, (std::vector<size_t> { 0, 1, 2 }));
        QVERIFY(r.baseline.has_value());
        QCOMPARE(r.bench[0].inputs.at(0).name, std::string("x"));
        QVERIFY(!r.bench[0].outputs.empty());
    }

    /// toJson writes back what fromJson read: reading the written request gives the same JSON
    /// again (a fixed point), and the fields the worker acts on are unchanged.
    void writingBackLosesNothing()
    {
        nlohmann::json in = coveredRequest("00000000000000000000000000000009");
        in["config"]["screen_speedup"] = 1.5;
        in["config"]["screen_probe"] = { { "index", 2 }, { "speedup", 1.25 } };
        in["config"]["timing_seed"] = 77;
        in["stages"] = { "compile", "check", "time", "profile" };
        const EvalRequest a = EvalRequest::fromJson(in);
        const nlohmann::json written = a.toJson();
        const EvalRequest b = EvalRequest::fromJson(written);
        QCOMPARE(QString::fromStdString(b.toJson().dump()), QString::fromStdString(written.dump()));
        QCOMPARE(b.candidate.source, a.candidate.source);
        QCOMPARE(b.candidate.knobs, a.candidate.knobs);
        QCOMPARE(b.baseline->name, a.baseline->name);
        QCOMPARE(b.bench.size(), a.bench.size());
        QCOMPARE(QString::fromStdString(b.bench[1].toJson().dump()), QString::fromStdString(a.bench[1].toJson().dump()));
        QCOMPARE(b.timingShapes, a.timingShapes);
        QVERIFY(b.screenProbe == std::optional<size_t>(2));
        QCOMPARE(b.screenProbeSpeedup, 1.25);
        QCOMPARE(b.timingSeed, uint64_t(77));
        QVERIFY(b.wantProfile);
        QCOMPARE(b.coverageSeed, a.coverageSeed); // the same secret, the same coverage draw
        QCOMPARE(labels(coverageChecks(b)), labels(coverageChecks(a)));
    }

    /// The engine's result cache keys on configToJson(): seeds at their defaults are left out,
    /// as the engine left them out before the request was a type, so earlier keys still match.
    void configLeavesDefaultsOut()
    {
        EvalRequest r = EvalRequest::fromJson(realRequest());
        nlohmann::json c = r.configToJson();
        QVERIFY(!c.contains("timing_seed") && !c.contains("recheck_seed") && !c.contains("screen_speedup"));
        r.recheckSeed = 5;
        QCOMPARE(r.configToJson().at("recheck_seed").get<uint64_t>(), uint64_t(5));
    }

    /// Fields a newer engine sends are kept and written back, at every level that has them.
    void unknownFieldsAreKept()
    {
        nlohmann::json in = realRequest();
        in["audit"] = { { "rerun", 2 } };
        in["problem"]["layout"] = "rowmajor";
        in["config"]["clock_lock"] = true;
        const EvalRequest r = EvalRequest::fromJson(in);
        QCOMPARE(QString::fromStdString(r.extra.dump()), QStringLiteral("{\"audit\":{\"rerun\":2}}"));
        const nlohmann::json out = r.toJson();
        QCOMPARE(out.at("audit").at("rerun").get<int>(), 2);
        QCOMPARE(out.at("problem").at("layout").get<std::string>(), std::string("rowmajor"));
        QVERIFY(out.at("config").at("clock_lock").get<bool>());
    }

    /// The engine decodes the problem once per session; a problem that would fail in every
    /// worker fails there, naming the field.
    void forProblemNamesTheField()
    {
        nlohmann::json problem = realRequest()["problem"];
        const EvalRequest ok = EvalRequest::forProblem(problem);
        QCOMPARE(ok.bench.size(), size_t(3));
        problem["bench"][1]["outputs"] = nlohmann::json::array();
        try {
            (void)EvalRequest::forProblem(problem);
            QFAIL("a bench shape without outputs was accepted");
        } catch (const RequestError& e) {
            QVERIFY2(QString(e.what()).contains("problem.bench[1] has no outputs"), e.what());
        }
    }

    void repeatedSeedsBecomeThreeDistinct()
    {
        nlohmann::json r = realRequest();
        r["config"]["seeds"] = { 7, 7 };
        QCOMPARE(EvalRequest::fromJson(r).seeds, (std::vector<uint64_t> { 7, 8, 9 }));
    }

    void errorsNameTheField_data()
    {
        QTest::addColumn<QString>("pointer");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("want");
        QTest::addRow("no candidate") << "/candidate" << "null" << "has no 'candidate'";
        QTest::addRow("timing shape past bench") << "/config/timing_shapes" << "[7]" << "problem.bench has 3";
        // 1e300 is integral, and was cast to size_t unchecked (UB; fuzz_eval_request).
        QTest::addRow("timing shape 1e300") << "/config/timing_shape" << "1e300"
                                            << "timing_shape is not a non-negative integer index";
        QTest::addRow("shape rank") << "/problem/bench/0/outputs/0/shape" << "[1,1,1,1,1,1,1,1,1,1]"
                                    << "problem.bench[0].outputs[0]";
        QTest::addRow("stages not strings") << "/stages" << "[1]" << "'stages' holds a value";
    }
    void errorsNameTheField()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, want);
        nlohmann::json r = realRequest();
        r[nlohmann::json::json_pointer(pointer.toStdString())] = nlohmann::json::parse(value.toStdString());
        const QString got = requestError(r);
        QVERIFY2(got.contains(want), qPrintable(got));
    }

    void offsetsRunFromZeroToTotal()
    {
        const HostTensor t = drawn(HONE_I64, { 9 }, { { "dist", "offsets" }, { "total", 100 } });
        QCOMPARE(t.at(0), 0.0);
        QCOMPARE(t.at(8), 100.0);
        for (size_t i = 1; i < 9; ++i)
            QVERIFY(t.at(i - 1) <= t.at(i));
    }

    /// A normal draw far past int64's range saturates at its end: it was cast from 2^63 (UB;
    /// x86 gave INT64_MIN, the wrong end).
    void int64DrawsSaturate()
    {
        const HostTensor hi = drawn(HONE_I64, { 4 }, { { "dist", "normal" }, { "mean", 1e19 }, { "std", 0 } });
        const HostTensor lo = drawn(HONE_I64, { 4 }, { { "dist", "normal" }, { "mean", -1e19 }, { "std", 0 } });
        for (size_t i = 0; i < 4; ++i) {
            int64_t h = 0, l = 0;
            std::memcpy(&h, static_cast<const char*>(hi.data()) + 8 * i, 8);
            std::memcpy(&l, static_cast<const char*>(lo.data()) + 8 * i, 8);
            QCOMPARE(h, std::numeric_limits<int64_t>::max());
            QCOMPARE(l, std::numeric_limits<int64_t>::lowest());
        }
    }

    /// Integer draws whose bounds do not fit were cast (UB) or overflowed a span (UB): each now
    /// fails naming the dist and the bound (found by fuzz_eval_request).
    void integerBoundsOutOfRangeAreRefused_data()
    {
        QTest::addColumn<QByteArray>("init");
        QTest::addColumn<QString>("want");
        QTest::addRow("randint span past int64")
            << QByteArray(R"({"dist":"randint","low":-9e18,"high":9e18})") << "init 'randint' has low outside";
        QTest::addRow("uniform on integers at 1e19")
            << QByteArray(R"({"dist":"uniform","low":1e19,"high":2e19})") << "init 'uniform' has low outside";
        QTest::addRow("offsets total 9.3e18")
            << QByteArray(R"({"dist":"offsets","total":9.3e18})") << "init 'offsets' has total outside";
    }
    void integerBoundsOutOfRangeAreRefused()
    {
        QFETCH(QByteArray, init);
        QFETCH(QString, want);
        const QString got = fillError(HONE_I64, { 5 }, nlohmann::json::parse(init.toStdString()));
        QVERIFY2(got.contains(want), qPrintable(got));
        QVERIFY2(got.startsWith("input 'x': "), qPrintable(got));
    }

    // [check] distributions (issue 18, class 9): transforms on top of the init's draws.
    void transformsApplyOnTopOfTheInit()
    {
        const nlohmann::json init = { { "dist", "normal" }, { "mean", 0.5 }, { "std", 2.0 } };
        const HostTensor base = drawn(HONE_F32, { 3, 5 }, init);
        nlohmann::json scaled = init;
        scaled["transform"] = { { "scale", 30.0 }, { "shift", -1.0 } };
        const HostTensor large = drawn(HONE_F32, { 3, 5 }, scaled);
        nlohmann::json negative = init;
        negative["transform"] = { { "sign", "negative" } };
        const HostTensor neg = drawn(HONE_F32, { 3, 5 }, negative);
        nlohmann::json rows = init;
        rows["transform"] = { { "constant", "rows" } };
        const HostTensor flat = drawn(HONE_F32, { 3, 5 }, rows);
        for (size_t i = 0; i < 15; ++i) {
            QCOMPARE(float(large.at(i)), float(base.at(i) * 30.0 - 1.0));
            QCOMPARE(neg.at(i), -std::fabs(base.at(i)));
            QCOMPARE(flat.at(i), base.at(i - i % 5)); // each row is its first value
        }
        QVERIFY(fillError(HONE_I64, { 5 }, { { "dist", "randint" }, { "high", 9 }, { "transform", { { "scale", 2 } } } })
                    .contains("float tensors only"));
    }

    // Which shapes, seeds and distributions the coverage checks draw comes from the request's
    // secret (new per request, never in a candidate's process), or from config.coverage_seed.
    void coverageDrawComesFromTheSecret()
    {
        const EvalRequest a = EvalRequest::fromJson(coveredRequest("00000000000000000000000000000001"));
        const EvalRequest b = EvalRequest::fromJson(coveredRequest("00000000000000000000000000000002"));
        const auto planA = coverageChecks(a);
        QCOMPARE(planA.size(), a.check.size() * 2 + 3 * 2); // listed x dists, drawn x (init, one dist)
        QCOMPARE(labels(coverageChecks(a)), labels(planA)); // a function of the request
        QVERIFY(labels(coverageChecks(b)) != labels(planA));
        size_t drawnShapes = 0;
        for (const auto& c : planA) {
            const std::string& l = c.shape.label;
            QVERIFY2(l.find(" dist ") != std::string::npos || l.rfind("random[", 0) == 0, l.c_str());
            if (l.rfind("random[", 0) == 0 && l.find(" dist ") == std::string::npos) {
                ++drawnShapes;
                QVERIFY2(l.find("M=") != std::string::npos && l.find("N=") != std::string::npos, l.c_str());
                QVERIFY(!c.shape.inputs.at(0).init.contains("transform"));
            }
            if (l.find(" dist large") != std::string::npos)
                QCOMPARE(c.shape.inputs.at(0).init["transform"]["scale"], nlohmann::json(30.0));
        }
        QCOMPARE(drawnShapes, size_t(3));
        nlohmann::json fixed = coveredRequest("00000000000000000000000000000001");
        fixed["config"]["coverage_seed"] = 77;
        nlohmann::json fixed2 = coveredRequest("00000000000000000000000000000002");
        fixed2["config"]["coverage_seed"] = 77;
        QCOMPARE(labels(coverageChecks(EvalRequest::fromJson(fixed))), labels(coverageChecks(EvalRequest::fromJson(fixed2))));
        nlohmann::json bad = coveredRequest("x");
        bad["problem"]["coverage"]["ranges"][0]["max"] = 0;
        QVERIFY2(requestError(bad).contains("problem.coverage.ranges[0]"), qPrintable(requestError(bad)));
    }

    // Derived symbols and require hold on every drawn shape, and integer inputs stay valid:
    // offsets run from 0 to L and indices stay below V (the fuzz corpus's coverage request).
    void drawnShapesKeepIntegerInputsValid()
    {
        std::ifstream f(HONE_SOURCE_DIR "/tests/fuzz/corpus/fuzz_eval_request/coverage_embedding_bag_sum");
        std::stringstream ss;
        ss << f.rdbuf();
        nlohmann::json req = nlohmann::json::parse(ss.str());
        for (int secret = 0; secret < 10; ++secret) {
            req["secret"] = "0123456789abcdef0123456789abcde" + std::to_string(secret);
            const EvalRequest r = EvalRequest::fromJson(req);
            for (const CoverageCheck& c : coverageChecks(r)) {
                if (c.shape.label.rfind("random[", 0) != 0)
                    continue;
                const auto& sym = c.shape.symbols;
                QCOMPARE(sym.at("B1"), sym.at("B") + 1);
                QVERIFY(sym.at("L") <= 40 * sym.at("B"));
                HostTensor indices(c.shape.inputs.at(1));
                indices.fill(c.seed, c.shape.label, 1);
                for (size_t i = 0; i < indices.numel(); ++i)
                    QVERIFY(indices.at(i) >= 0 && indices.at(i) < sym.at("V"));
                HostTensor offsets(c.shape.inputs.at(2));
                offsets.fill(c.seed, c.shape.label, 2);
                QCOMPARE(offsets.at(0), 0.0);
                QCOMPARE(offsets.at(offsets.numel() - 1), sym.at("L"));
            }
        }
    }

    void integerBoundsWithinRangeDraw()
    {
        const HostTensor t = drawn(HONE_I64, { 64 }, { { "dist", "randint" }, { "low", -9e15 }, { "high", 9e15 } });
        for (size_t i = 0; i < 64; ++i)
            QVERIFY(t.at(i) >= -9e15 && t.at(i) < 9e15);
    }
};

QTEST_APPLESS_MAIN(TestEvalRequest)
#include "tst_eval_request.moc"
