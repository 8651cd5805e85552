// Drives the real hone-worker binary ($HONE_WORKER) over its JSON-lines protocol with a tiny
// problem, y = 2*x + b, and candidates that are right, wrong in each way the checks must catch,
// or hostile to the harness.
#include "core/eval_result.h"
#include "core/protocol.h"

#include <QHostAddress>
#include <QProcess>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QUuid>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <string>
#include <vector>

using nlohmann::json;
namespace protocol = hone::core::protocol;

namespace {

const char* const kReference = R"(#include <hone/kernel.h>
extern "C" int hone_run(const hone_args* a)
{
    const float* x = static_cast<const float*>(a->inputs[0].data);
    float* y = static_cast<float*>(a->outputs[0].data);
    const int64_t n = hone_numel(&a->outputs[0]);
    const float b = static_cast<float>(hone_param_or(a, "b", 0.0));
    for (int64_t i = 0; i < n; ++i)
        y[i] = 2.0f * x[i] + b;
    return 0;
}
)";

/// A candidate for y = 2*x + b whose loop is `body` (x, y, n and b are in scope).
std::string candidate(const std::string& body)
{
    return "#include <hone/kernel.h>\n"
           "#include <cmath>\n"
           "#include <cstdio>\n"
           "#include <new>\n"
           "#include <stdexcept>\n"
           "extern \"C\" int hone_run(const hone_args* a)\n"
           "{\n"
           "    const float* x = static_cast<const float*>(a->inputs[0].data);\n"
           "    float* y = static_cast<float*>(a->outputs[0].data);\n"
           "    const int64_t n = hone_numel(&a->outputs[0]);\n"
           "    const float b = static_cast<float>(hone_param_or(a, \"b\", 0.0));\n"
        + body + "}\n";
}

/// A candidate with `prelude` (includes, helpers, statics) before hone_run.
std::string candidateWith(const std::string& prelude, const std::string& body)
{
    return "#include <cstdint>\n" + prelude + "\n" + candidate(body);
}

const char* const kCorrectBody = "#pragma omp parallel for\n"
                                 "    for (int64_t i = 0; i < n; ++i)\n"
                                 "        y[i] = 2.0f * x[i] + b;\n"
                                 "    return 0;\n";

json shape(const std::string& label, int64_t n)
{
    return json { { "label", label }, { "symbols", { { "N", n } } }, { "flops", 2.0 * double(n) },
        { "bytes", 8.0 * double(n) },
        { "inputs",
            json::array({ { { "name", "x" }, { "dtype", "f32" }, { "shape", json::array({ n }) },
                { "init", { { "dist", "normal" }, { "mean", 0.0 }, { "std", 1.0 } } } } }) },
        { "outputs",
            json::array({ { { "name", "y" }, { "dtype", "f32" }, { "shape", json::array({ n }) } } }) } };
}

json source(const std::string& name, const std::string& text, const std::string& flags = {})
{
    return json { { "name", name }, { "lang", "cpp" }, { "source", text }, { "knobs", json::object() },
        { "flags", flags } };
}

json evalRequest(const std::string& id, const json& cand, bool time, const json& baseline = nullptr)
{
    json problem = { { "name", "axpb" }, { "reference", source("reference.cpp", kReference) },
        { "params", { { "b", 0.5 } } },
        { "tolerance", { { "f32", { { "atol", 1e-6 }, { "rtol", 1e-5 } } } } },
        { "check", json::array({ shape("small[0]", 1000), shape("small[1]", 17) }) },
        { "bench", json::array({ shape("bench[0]", 1 << 20) }) } };
    json stages = time ? json::array({ "compile", "check", "time" }) : json::array({ "compile", "check" });
    return json { { "protocol", protocol::kVersion }, { "type", "eval" }, { "id", id }, { "problem", problem },
        { "candidate", cand }, { "baseline", baseline }, { "stages", stages },
        { "config", { { "seeds", { 1, 2, 3 } }, { "samples", 20 }, { "warmup", 2 }, { "timing_shape", 0 } } },
        { "limits", { { "compile_s", 120 }, { "run_s", 60 } } } };
}

struct Session {
    std::vector<json> messages; // every stdout line, parsed
    QStringList badLines; // stdout lines that are not protocol messages
    QByteArray stderrText;
    int exitCode = -1;
    QProcess::ExitStatus exitStatus = QProcess::NormalExit;

    std::vector<json> ofType(const std::string& type) const
    {
        std::vector<json> out;
        for (const auto& m : messages)
            if (m.value("type", "") == type)
                out.push_back(m);
        return out;
    }
};

} // namespace

class TestWorkerChecks : public QObject {
    Q_OBJECT

private:
    QString m_worker;
    QTemporaryDir m_cache;

    /// Starts a worker on `cacheDir`, writes `lines`, closes stdin and collects everything.
    Session talk(const std::vector<std::string>& lines, const QString& cacheDir = {}, int timeoutMs = 300000,
        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
    {
        QProcess p;
        p.setProcessEnvironment(env);
        p.setProgram(m_worker);
        p.setArguments({ "--stdio", "--cache-dir", cacheDir.isEmpty() ? m_cache.path() : cacheDir });
        p.start();
        Session s;
        if (!p.waitForStarted(10000)) {
            s.badLines << "worker did not start: " + p.errorString();
            return s;
        }
        for (const auto& line : lines)
            p.write(QByteArray::fromStdString(line + "\n"));
        p.closeWriteChannel();
        if (!p.waitForFinished(timeoutMs)) {
            p.kill();
            p.waitForFinished();
            s.badLines << "worker did not finish in time";
        }
        s.exitCode = p.exitCode();
        s.exitStatus = p.exitStatus();
        s.stderrText = p.readAllStandardError();
        const QList<QByteArray> out = p.readAllStandardOutput().split('\n');
        for (const QByteArray& line : out) {
            if (line.isEmpty())
                continue;
            try {
                s.messages.push_back(protocol::parseMessage(line.toStdString()));
            } catch (const protocol::ProtocolError& e) {
                s.badLines << QString::fromUtf8(line) + " (" + e.what() + ")";
            }
        }
        return s;
    }

    /// One eval in a fresh worker; fails the test unless exactly one result comes back.
    json evalOne(const json& request, Session* session = nullptr)
    {
        Session s = talk({ request.dump() });
        if (session)
            *session = s;
        if (!s.badLines.isEmpty())
            qWarning() << "non-protocol output:" << s.badLines;
        const auto results = s.ofType("result");
        if (results.size() != 1) {
            qWarning() << "stderr:" << s.stderrText;
            return json { { "status", "missing" }, { "results", results.size() } };
        }
        return results.front();
    }

private slots:
    void initTestCase()
    {
        m_worker = qEnvironmentVariable("HONE_WORKER");
        QVERIFY2(!m_worker.isEmpty(), "set HONE_WORKER to the hone-worker binary");
        QVERIFY2(QFileInfo(m_worker).isExecutable(), qPrintable(m_worker + " is not executable"));
        QVERIFY(m_cache.isValid());
    }

    void versionAndBadArguments()
    {
        QProcess p;
        p.start(m_worker, { "--version" });
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 0);
        QCOMPARE(p.readAllStandardOutput().trimmed(), QByteArray("hone-worker 0.1.0 protocol 2"));

        p.start(m_worker, { "--stdio", "--frobnicate" });
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("unknown argument '--frobnicate'"));

        p.start(m_worker, { "--stdio", "--threads", "0" });
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("missing positive number after '--threads'"));

        p.start(m_worker, {});
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 2);
    }

    void hello()
    {
        const Session s = talk({ R"({"protocol":2,"type":"hello","id":"h1"})" });
        QVERIFY2(s.badLines.isEmpty(), qPrintable(s.badLines.join('\n')));
        QCOMPARE(s.exitCode, 0);
        const auto hellos = s.ofType("hello");
        QCOMPARE(hellos.size(), size_t(1));
        const json& h = hellos.front();
        QCOMPARE(h["id"].get<std::string>(), std::string("h1"));
        QCOMPARE(h["version"].get<std::string>(), std::string("0.1.0"));
        QCOMPARE(h["backends"]["cpu"].get<bool>(), true);
        QCOMPARE(h["backends"]["cuda"].get<bool>(), false);
        QCOMPARE(h["devices"].size(), size_t(1));
        QCOMPARE(h["devices"][0]["kind"].get<std::string>(), std::string("cpu"));
        QVERIFY(!h["devices"][0]["name"].get<std::string>().empty());
        QVERIFY(h["devices"][0]["cores"].get<int>() >= 1);
        QVERIFY(!h["compiler"].get<std::string>().empty());
    }

    void malformedRequestsKeepServing()
    {
        const Session s = talk({ "this is not json", R"({"protocol":7,"type":"hello","id":"v7"})",
            R"({"protocol":2,"type":"dance","id":"d1"})", R"({"protocol":2,"type":"eval","id":"e1"})",
            R"({"protocol":2,"type":"hello","id":"h2"})" });
        QVERIFY2(s.badLines.isEmpty(), qPrintable(s.badLines.join('\n')));
        const auto results = s.ofType("result");
        QCOMPARE(results.size(), size_t(4));
        for (const auto& r : results) {
            QCOMPARE(r["status"].get<std::string>(), std::string("failed"));
            QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("worker_error"));
        }
        QVERIFY(results[0]["failure"]["message"].get<std::string>().find("not a JSON object")
            != std::string::npos);
        QVERIFY(results[1]["failure"]["message"].get<std::string>().find("version mismatch")
            != std::string::npos);
        QVERIFY(results[2]["failure"]["message"].get<std::string>().find("unknown request type 'dance'")
            != std::string::npos);
        QCOMPARE(results[3]["id"].get<std::string>(), std::string("e1"));
        QVERIFY(results[3]["failure"]["message"].get<std::string>().find("'problem'") != std::string::npos);
        QCOMPARE(s.ofType("hello").size(), size_t(1));
        QCOMPARE(s.exitCode, 0);
    }

    void calibrate()
    {
        QTemporaryDir cache;
        const std::string req = R"({"protocol":2,"type":"calibrate","id":"c1"})";
        const Session first = talk({ req, req }, cache.path());
        QVERIFY2(first.badLines.isEmpty(), qPrintable(first.badLines.join('\n')));
        const auto replies = first.ofType("ceilings");
        QCOMPARE(replies.size(), size_t(2));
        const json& c = replies[0];
        QCOMPARE(c["cached"].get<bool>(), false);
        QVERIFY(c["peak_gflops"].get<double>() > 0);
        QVERIFY(c["peak_gbps"].get<double>() > 0);
        QVERIFY(c["device"].get<std::string>().rfind("cpu: ", 0) == 0);
        QVERIFY(c["method"].get<std::string>().find("copy") != std::string::npos);
        QCOMPARE(replies[1]["cached"].get<bool>(), true);
        QCOMPARE(replies[1]["peak_gbps"].get<double>(), c["peak_gbps"].get<double>());
        qInfo("ceilings: %.1f GFLOP/s, %.1f GB/s", c["peak_gflops"].get<double>(),
            c["peak_gbps"].get<double>());

        // A new worker on the same cache reads the file instead of measuring again.
        const Session second = talk({ req }, cache.path());
        const auto again = second.ofType("ceilings");
        QCOMPARE(again.size(), size_t(1));
        QCOMPARE(again[0]["cached"].get<bool>(), true);
        QCOMPARE(again[0]["peak_gflops"].get<double>(), c["peak_gflops"].get<double>());

        // A corrupt cache file is measured again, not trusted.
        const QStringList files = QDir(cache.path()).entryList({ "ceilings-cpu-*.json" }, QDir::Files);
        QCOMPARE(files.size(), 1);
        QFile f(cache.filePath(files.front()));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("{ not json");
        f.close();
        const Session third = talk({ req }, cache.path());
        const auto remeasured = third.ofType("ceilings");
        QCOMPARE(remeasured.size(), size_t(1));
        QCOMPARE(remeasured[0]["cached"].get<bool>(), false);
        QVERIFY(remeasured[0]["peak_gbps"].get<double>() > 0);
    }

    void failures_data()
    {
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("flags");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("stage");
        QTest::addColumn<QStringList>("messageParts");

        QTest::addRow("wrong result")
            << "    for (int64_t i = 0; i < n; ++i)\n        y[i] = 2.0f * x[i] - b;\n"
               "    return 0;\n"
            << ""
            << "wrong_result"
            << "check"
            << QStringList { "output 'y' differs from the reference at 1000 of 1000 elements",
                   "small[0] seed 1", "want" };
        QTest::addRow("partial write")
            << "    for (int64_t i = 0; i + 1 < n; ++i)\n        y[i] = 2.0f * x[i] + b;\n"
               "    return 0;\n"
            << ""
            << "partial_write"
            << "check" << QStringList { "1 of 1000 elements of 'y' were never written (first at index 999)" };
        QTest::addRow("input mutation")
            << "    for (int64_t i = 0; i < n; ++i) {\n        const float v = x[i];\n"
               "        const_cast<float*>(x)[i] = 0.0f;\n        y[i] = 2.0f * v + b;\n"
               "    }\n    return 0;\n"
            << ""
            << "input_mutation"
            << "check" << QStringList { "input 'x' was modified", "first change at index 0", "read-only" };
        QTest::addRow("nan output")
            << "    for (int64_t i = 0; i < n; ++i)\n"
               "        y[i] = i == 7 ? std::nanf(\"\") : 2.0f * x[i] + b;\n    return 0;\n"
            << ""
            << "nan"
            << "check" << QStringList { "output 'y' has 1 of 1000 elements NaN or Inf", "first at index 7" };
        QTest::addRow("constant output")
            << "    for (int64_t i = 0; i < n; ++i)\n        y[i] = 0.0f;\n    return 0;\n"
            << ""
            << "wrong_result"
            << "check" << QStringList { "output 'y' is constant (every element = 0)" };
        QTest::addRow("returns 1") << "    for (int64_t i = 0; i < n; ++i)\n        y[i] = 2.0f * x[i] + b;\n"
                                      "    return 1;\n"
                                   << ""
                                   << "runtime_error"
                                   << "check" << QStringList { "hone_run returned 1 on small[0] seed 1" };
        QTest::addRow("throws") << "    (void)x; (void)y; (void)n; (void)b;\n"
                                   "    throw std::runtime_error(\"kaboom\");\n"
                                << ""
                                << "runtime_error"
                                << "check" << QStringList { "hone_run threw kaboom" };
        QTest::addRow("bad_alloc") << "    (void)x; (void)y; (void)n; (void)b;\n    throw std::bad_alloc();\n"
                                   << ""
                                   << "memory_limit"
                                   << "check" << QStringList { "ran out of memory" };
        QTest::addRow("compile error")
            << "    undeclared_helper(x, y, n, b);\n    return 0;\n"
            << ""
            << "compile_error"
            << "compile" << QStringList { "candidate.cpp:12:5: error:", "undeclared_helper" };
        QTest::addRow("refused plugin flag")
            << QString(kCorrectBody) << "-O2 -fplugin=x.so"
            << "bad_candidate"
            << "compile" << QStringList { "flag '-fplugin=x.so' is not allowed" };
        QTest::addRow("refused linker flag")
            << QString(kCorrectBody) << "-Wl,-rpath,/tmp"
            << "bad_candidate"
            << "compile" << QStringList { "flag '-Wl,-rpath,/tmp' is not allowed" };
    }

    void failures()
    {
        QFETCH(QString, body);
        QFETCH(QString, flags);
        QFETCH(QString, kind);
        QFETCH(QString, stage);
        QFETCH(QStringList, messageParts);
        const json cand = source("candidate.cpp", candidate(body.toStdString()), flags.toStdString());
        Session s;
        const json r = evalOne(evalRequest(QTest::currentDataTag(), cand, false), &s);
        QVERIFY2(s.badLines.isEmpty(), qPrintable(s.badLines.join('\n')));
        QCOMPARE(QString::fromStdString(r.value("status", "")), QString("failed"));
        const std::string message = r["failure"]["message"].get<std::string>();
        QCOMPARE(QString::fromStdString(r["failure"]["kind"].get<std::string>()), kind);
        QCOMPARE(QString::fromStdString(r["failure"]["stage"].get<std::string>()), stage);
        for (const QString& part : messageParts)
            QVERIFY2(message.find(part.toStdString()) != std::string::npos,
                qPrintable("'" + part + "' not in: " + QString::fromStdString(message)));
        QCOMPARE(r["id"].get<std::string>(), std::string(QTest::currentDataTag()));
        // A failed check is recorded with its numbers; a failed compile has no checks.
        if (stage == "check") {
            QVERIFY(!r["checks"].empty());
            const json& last = r["checks"].back();
            QCOMPARE(last["ok"].get<bool>(), false);
            QCOMPARE(QString::fromStdString(last["failure"]["kind"].get<std::string>()), kind);
            if (kind == "wrong_result" || kind == "partial_write" || kind == "nan") {
                QVERIFY(last["mismatches"].get<int>() > 0);
                QVERIFY(!last["first_mismatches"].empty());
                QVERIFY(last["first_mismatches"].size() <= 5);
            }
        } else {
            QVERIFY(r["checks"].empty());
        }
        QVERIFY(!r.contains("timing"));
        QVERIFY(!protocol::EvalResult::fromJson(r).ok());
    }

    void compileErrorMessages()
    {
        const std::string text
            = candidate("    (void)x; (void)y; (void)n; (void)b;\n    int k = undeclared_thing;\n"
                        "    return k;\n");
        const json r = evalOne(evalRequest("ce", source("broken.cpp", text), false));
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("compile_error"));
        const json& c = r["compile"];
        QCOMPARE(c["ok"].get<bool>(), false);
        QVERIFY(c["command"].get<std::string>().find("-O3 -march=native -fopenmp") != std::string::npos);
        QVERIFY(c["log"].get<std::string>().find("broken.cpp:13:13: error:") != std::string::npos);
        bool found = false;
        for (const auto& m : c["messages"])
            if (m["severity"] == "error" && m["line"].get<int>() == 13 && m["column"].get<int>() == 13
                && m["file"] == "broken.cpp"
                && m["text"].get<std::string>() == "'undeclared_thing' was not declared in this scope")
                found = true;
        QVERIFY2(found, c["messages"].dump().c_str());
        QCOMPARE(r["failure"]["message"].get<std::string>(),
            std::string("broken.cpp:13:13: error: 'undeclared_thing' was not declared in this scope"));
    }

    void missingEntryPoint()
    {
        // Never mentions hone_run at all: refused before compiling.
        json r = evalOne(evalRequest("none", source("none.cpp", "int helper() { return 1; }\n"), false));
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("bad_candidate"));
        QVERIFY(
            r["failure"]["message"].get<std::string>().find("never mentions hone_run") != std::string::npos);
        QVERIFY(!r.contains("compile"));

        // Mentions it, compiles, but exports something else.
        r = evalOne(evalRequest("other",
            source("other.cpp",
                "// hone_run is elsewhere\nextern \"C\" int hone_run_v2(const void*) { return 0; }\n"),
            false));
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("bad_candidate"));
        QVERIFY(
            r["failure"]["message"].get<std::string>().find("exports no 'hone_run'") != std::string::npos);
        QCOMPARE(r["compile"]["ok"].get<bool>(), true);
    }

    void constantReferenceIsRefused()
    {
        // An init that makes every output equal: a constant kernel would pass, so the worker
        // refuses the problem rather than the candidate.
        json req = evalRequest("const-ref", source("candidate.cpp", candidate(kCorrectBody)), false);
        for (auto& s : req["problem"]["check"])
            s["inputs"][0]["init"] = { { "dist", "uniform" }, { "low", 1.0 }, { "high", 1.0 } };
        const json r = evalOne(req);
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("worker_error"));
        QVERIFY(r["failure"]["message"].get<std::string>().find(
                    "problem init makes reference output 'y' constant")
            != std::string::npos);
        QVERIFY(r["failure"]["message"].get<std::string>().find("widen the init distribution")
            != std::string::npos);
    }

    void compileTimeLimit()
    {
        json req = evalRequest("slow", source("slow.cpp", candidate(kCorrectBody), "-DSLOW=1"), false);
        req["limits"]["compile_s"] = 0.01;
        const json r = evalOne(req);
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("timeout"));
        QCOMPARE(r["failure"]["stage"].get<std::string>(), std::string("compile"));
        QVERIFY(r["failure"]["message"].get<std::string>().find("limits.compile_s = 0.01 s")
            != std::string::npos);
    }

    void correctCandidateIsTimed()
    {
        json cand = source("tuned.cpp",
            "#if UNROLL != 4\n#error the knob did not arrive\n#endif\n" + candidate(kCorrectBody),
            "-ffast-math");
        cand["knobs"] = { { "UNROLL", "4" } };
        const json base = source("naive.cpp", kReference);
        Session s;
        const json r = evalOne(evalRequest("good", cand, true, base), &s);
        QVERIFY2(s.badLines.isEmpty(), qPrintable(s.badLines.join('\n')));
        QVERIFY2(r.value("status", "") == "ok", r.dump(2).c_str());
        QVERIFY(!r.contains("failure"));
        qInfo("result: %s", r.dump().c_str());

        // compile -> check -> timing inputs -> (wait for the timing lock) -> time -> recheck -> diagnose.
        std::vector<std::string> stages;
        for (const auto& p : s.ofType("progress"))
            if (stages.empty() || stages.back() != p["stage"])
                stages.push_back(p["stage"].get<std::string>());
        QCOMPARE(
            stages, (std::vector<std::string> { "compile", "check", "inputs", "wait", "time", "recheck", "diagnose" }));

        QCOMPARE(r["compile"]["ok"].get<bool>(), true);
        QVERIFY(
            r["compile"]["command"].get<std::string>().find("-DUNROLL=4 -ffast-math") != std::string::npos);
        QCOMPARE(r["checks"].size(), size_t(2 * 3 + 1));
        for (const auto& c : r["checks"]) {
            QCOMPARE(c["ok"].get<bool>(), true);
            QCOMPARE(c["mismatches"].get<int>(), 0);
        }
        QCOMPARE(r["checks"].back()["shape"].get<std::string>(), std::string("bench[0]"));
        QCOMPARE(r["checks"].back()["after_timing"].get<bool>(), true);

        const json& t = r["timing"];
        QCOMPARE(t["shape"].get<std::string>(), std::string("bench[0]"));
        QCOMPARE(t["samples_ns"].size(), size_t(20));
        const double median = t["median_ns"].get<double>();
        QVERIFY(median > 0);
        QVERIFY(t["p10_ns"].get<double>() <= median);
        QVERIFY(median <= t["p90_ns"].get<double>());
        QVERIFY(t["cv"].get<double>() >= 0);
        QVERIFY(t["baseline"]["median_ns"].get<double>() > 0);
        QVERIFY(t["speedup"].get<double>() > 0);

        const json& roof = r["roofline"];
        QCOMPARE(roof["bytes"].get<double>(), 8.0 * (1 << 20));
        QCOMPARE(roof["flops"].get<double>(), 2.0 * (1 << 20));
        QVERIFY(roof["gbps"].get<double>() > 0);
        QVERIFY(roof["peak_gbps"].get<double>() > 0);
        QVERIFY(roof["peak_gflops"].get<double>() > 0);
        QVERIFY(roof["floor_ns"].get<double>() > 0);
        const std::string bound = r["diagnosis"]["bound"].get<std::string>();
        QVERIFY(bound == "memory" || bound == "latency" || bound == "compute");
        QVERIFY(r["diagnosis"]["evidence"].get<std::string>().rfind(bound, 0) == 0);
        QVERIFY(r["diagnosis"]["evidence"].get<std::string>().find("GB/s") != std::string::npos);

        const json& env = r["environment"];
        QVERIFY(env["device"].get<std::string>().rfind("cpu: ", 0) == 0);
        QVERIFY(env["cores"].get<int>() >= 1);
        QVERIFY(!env["compiler"].get<std::string>().empty());
        QVERIFY(env["flags"].get<std::string>().find("-ffast-math") != std::string::npos);

        const protocol::EvalResult sum = protocol::EvalResult::fromJson(r);
        QVERIFY(sum.ok());
        QCOMPARE(sum.speedup(), t["speedup"].get<double>());
        // Decoded once, written back whole: nothing the worker wrote is lost on the way.
        QCOMPARE(sum.toJson(), r);

        // The same candidate again: its object comes from the compile cache.
        const json again = evalOne(evalRequest("good-again", cand, false));
        QCOMPARE(again["status"].get<std::string>(), std::string("ok"));
        QCOMPARE(again["compile"]["cached"].get<bool>(), true);
    }

    /// config.timing_shapes: every listed bench shape timed, re-checked and put on the roofline, in
    /// the order given; the first screens the others.
    void timesEveryListedShape()
    {
        json req = evalRequest("shapes", source("good.cpp", candidate(kCorrectBody)), true,
            source("plain.cpp", candidate("    for (int64_t i = 0; i < n; ++i)\n        y[i] = 2.0f * x[i] + b;\n    return 0;\n")));
        req["problem"]["bench"] = json::array({ shape("bench[0]", 1 << 16), shape("bench[1]", 1 << 14),
            shape("bench[2]", 3000 * 7), shape("bench[3]", 1 << 12) });
        req["config"]["timing_shapes"] = { 2, 0, 1 };
        const json r = evalOne(req);
        QVERIFY2(r.value("status", "") == "ok", r.dump(2).c_str());
        QCOMPARE(r["timing"]["shape"].get<std::string>(), std::string("bench[2]"));
        QCOMPARE(r["screened"].get<bool>(), false);
        QCOMPARE(r["shapes"].size(), size_t(3));
        const std::vector<std::pair<int, int64_t>> want = { { 2, 3000 * 7 }, { 0, 1 << 16 }, { 1, 1 << 14 } };
        for (size_t i = 0; i < want.size(); ++i) {
            const json& e = r["shapes"][i];
            QCOMPARE(e["index"].get<int>(), want[i].first);
            QCOMPARE(e["shape"].get<std::string>(), "bench[" + std::to_string(want[i].first) + "]");
            QCOMPARE(e["timing"]["shape"], e["shape"]);
            QCOMPARE(e["timing"]["samples_ns"].size(), size_t(20));
            QVERIFY(e["timing"]["verified_calls"].get<int>() >= 1);
            QVERIFY(e["timing"]["baseline"]["median_ns"].get<double>() > 0);
            QCOMPARE(e["speedup"], e["timing"]["speedup"]);
            QCOMPARE(e["roofline"]["bytes"].get<double>(), 8.0 * double(want[i].second));
            QVERIFY(e["diagnosis"]["evidence"].get<std::string>().find("GB/s") != std::string::npos);
        }
        // The first entry is the result's own timing; bench[3] was not asked for.
        QCOMPARE(r["shapes"][0]["timing"], r["timing"]);
        int rechecks = 0;
        for (const auto& c : r["checks"])
            rechecks += c.value("after_timing", false) ? 1 : 0;
        QCOMPARE(rechecks, 3);
        const protocol::EvalResult sum = protocol::EvalResult::fromJson(r);
        QCOMPARE(sum.shapeResults().size(), size_t(3));
        QCOMPARE(sum.shapeResults()[1].index, size_t(0));
        QCOMPARE(sum.shapeResults()[1].speedup.value_or(0.0), r["shapes"][1]["speedup"].get<double>());
        QCOMPARE(sum.shapeResults()[2].medianNs(), r["shapes"][2]["timing"]["median_ns"].get<double>());
        QVERIFY(!sum.isScreened());
        QCOMPARE(sum.toJson(), r);
        // The worker names its CPU's features (what a skill learnt from this session is for).
        QVERIFY2(sum.environment && !sum.environment->cpuFlags.value_or("").empty(), r["environment"].dump().c_str());

        // Under the screening speedup on the first shape: the others are not timed.
        req["id"] = "screened";
        req["config"]["screen_speedup"] = 1e9;
        const json s = evalOne(req);
        QVERIFY2(s.value("status", "") == "ok", s.dump(2).c_str());
        QCOMPARE(s["screened"].get<bool>(), true);
        QCOMPARE(s["shapes"].size(), size_t(1));
        QVERIFY(protocol::EvalResult::fromJson(s).isScreened());

        // With a probe shape: screened out on the first, timed on the probe, and timed on every
        // shape where it reaches the probe's bar there (a specialist for that shape).
        req["id"] = "probe-passes";
        req["config"]["screen_probe"] = { { "index", 1 }, { "speedup", 0 } };
        const json p = evalOne(req);
        QVERIFY2(p.value("status", "") == "ok", p.dump(2).c_str());
        QCOMPARE(p["screened"].get<bool>(), false);
        QCOMPARE(p["shapes"].size(), size_t(3));
        for (size_t i = 0; i < want.size(); ++i)
            QCOMPARE(p["shapes"][i]["index"].get<int>(), want[i].first);
        req["id"] = "probe-fails";
        req["config"]["screen_probe"] = { { "index", 0 }, { "speedup", 1e9 } };
        const json f = evalOne(req);
        QVERIFY2(f.value("status", "") == "ok", f.dump(2).c_str());
        QCOMPARE(f["screened"].get<bool>(), true);
        QCOMPARE(f["shapes"].size(), size_t(2));
        QCOMPARE(f["shapes"][1]["index"].get<int>(), 0);
        QVERIFY(f["shapes"][1]["speedup"].get<double>() > 0);
        QVERIFY(protocol::EvalResult::fromJson(f).isScreened());
        // A probe that is not one of the other timed shapes is a request error naming it.
        req["id"] = "probe-bad";
        req["config"]["screen_probe"] = { { "index", 3 }, { "speedup", 1 } };
        const json bad = evalOne(req);
        QVERIFY2(bad.dump().find("config.screen_probe.index 3 is not one of config.timing_shapes") != std::string::npos,
            bad.dump(2).c_str());
    }

    /// A result's per-shape entries are read defensively: a bad entry is a protocol error naming
    /// what is wrong (an index of 1e300 was undefined behaviour, found by tests/fuzz/fuzz_protocol).
    void summaryRejectsMalformedShapes_data()
    {
        QTest::addColumn<QString>("shapes");
        QTest::addColumn<QString>("message");
        QTest::addRow("negative index") << R"([{"index": -1, "timing": {"median_ns": 5}}])"
                                        << "result.shapes[0].index is negative";
        QTest::addRow("index past any shape") << R"([{"index": 1e300, "timing": {"median_ns": 5}}])"
                                              << "result.shapes[0].index is not the index of a bench shape";
        QTest::addRow("entry not an object") << R"([3])" << "result.shapes[0] is not an object";
        QTest::addRow("ok without a median") << R"([{"index": 0, "shape": "bench[0]"}])"
                                             << "result.shapes[0].timing missing";
    }
    void summaryRejectsMalformedShapes()
    {
        QFETCH(QString, shapes);
        QFETCH(QString, message);
        json r = { { "protocol", protocol::kVersion }, { "type", "result" }, { "status", "ok" },
            { "shapes", json::parse(shapes.toStdString()) } };
        try {
            (void)protocol::EvalResult::fromJson(r);
            QFAIL("no ProtocolError");
        } catch (const protocol::ProtocolError& e) {
            QCOMPARE(QString(e.what()), message);
        }
    }

    /// A candidate wrong only on a later bench shape fails there: every shape's timed calls are
    /// verified, as the first one's are.
    void verifiesEveryTimedShape()
    {
        const std::string body = "    for (int64_t i = 0; i < n; ++i)\n"
                                 "        y[i] = 2.0f * x[i] + (n == 16384 ? 1.0f : b);\n"
                                 "    return 0;\n";
        json req = evalRequest("late-wrong", source("late.cpp", candidate(body)), true);
        req["problem"]["bench"] = json::array({ shape("bench[0]", 1 << 16), shape("bench[1]", 1 << 14) });
        req["config"]["timing_shapes"] = { 0, 1 };
        const json r = evalOne(req);
        QCOMPARE(r.value("status", ""), std::string("failed"));
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("wrong_result"));
        QCOMPARE(r["failure"]["stage"].get<std::string>(), std::string("time"));
        QCOMPARE(r["shapes"].size(), size_t(1)); // bench[0] passed

        req["config"]["timing_shapes"] = { 0, 0 };
        const json twice = evalOne(req);
        QCOMPARE(twice["failure"]["kind"].get<std::string>(), std::string("worker_error"));
        QVERIFY2(twice["failure"]["message"].get<std::string>().find("names bench shape 0 twice") != std::string::npos,
            twice.dump().c_str());
    }

    void timingWaitsForTheDeviceLock()
    {
        // Another worker (here: this test) holds the machine's timing lock: compile and check
        // go ahead, timing waits until the lock is free. The lock is the machine's, not the
        // cache folder's ($HONE_LOCK_DIR, else /tmp/hone-locks): workers with other caches share it.
        const QString lockDir = m_cache.filePath("machine-locks");
        QVERIFY(QDir().mkpath(lockDir));
        const QByteArray lockPath = QFile::encodeName(lockDir + "/cpu-timing.lock");
        const int fd = ::open(lockPath.constData(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        QVERIFY(fd >= 0);
        QCOMPARE(::flock(fd, LOCK_EX), 0);
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("HONE_LOCK_DIR", lockDir);
        p.setProcessEnvironment(env);
        p.start(m_worker, { "--stdio", "--cache-dir", m_cache.path() });
        QVERIFY(p.waitForStarted(10000));
        p.write(QByteArray::fromStdString(
            evalRequest("locked", source("locked.cpp", candidate(kCorrectBody)), true).dump() + "\n"));
        p.closeWriteChannel();
        QByteArray out;
        QTRY_VERIFY_WITH_TIMEOUT((out += p.readAllStandardOutput()).contains("\"stage\":\"wait\""), 120000);
        QTest::qWait(1500);
        out += p.readAllStandardOutput();
        QVERIFY(out.contains("\"stage\":\"check\""));
        QVERIFY(!out.contains("\"stage\":\"time\""));
        QCOMPARE(p.state(), QProcess::Running);
        ::flock(fd, LOCK_UN);
        ::close(fd);
        QVERIFY(p.waitForFinished(120000));
        out += p.readAllStandardOutput();
        QVERIFY(out.contains("\"stage\":\"time\""));
        QVERIFY(out.contains("\"status\":\"ok\""));
    }

    void stdoutNoiseStaysOffTheProtocol()
    {
        const std::string body
            = "    std::printf(\"HELLO FROM CANDIDATE {\\\"type\\\":\\\"result\\\"}\\n\");\n"
              "    std::fflush(stdout);\n"
            + std::string(kCorrectBody);
        Session s;
        const json r = evalOne(evalRequest("noisy", source("noisy.cpp", candidate(body)), true), &s);
        QVERIFY2(s.badLines.isEmpty(), qPrintable(s.badLines.join('\n')));
        QVERIFY2(r.value("status", "") == "ok", r.dump(2).c_str());
        QVERIFY(s.stderrText.contains("HELLO FROM CANDIDATE"));
        QCOMPARE(s.ofType("result").size(), size_t(1));
        // No baseline: no speedup.
        QVERIFY(r["timing"]["median_ns"].get<double>() > 0);
        QVERIFY(!r["timing"].contains("speedup"));
        QVERIFY(!r["timing"].contains("baseline"));
    }

    /// Candidates that are honest only while they think they are watched, or that attack the
    /// timing: each must fail with its own kind, in the timing stage.
    void dishonestCandidatesFail_data()
    {
        QTest::addColumn<QString>("prelude");
        QTest::addColumn<QString>("body");
        QTest::addColumn<QStringList>("kinds");
        QTest::addColumn<QString>("stage");
        QTest::addColumn<QString>("fragment");
        // Checks make 2 shapes x 3 seeds = 6 calls; afterwards the candidate cheats.
        const QString count = "static int g_calls = 0;\n";
        const QString correct = QString(kCorrectBody);
        QTest::addRow("skips work once checks are over")
            << count << "    if (++g_calls > 6)\n        return 0;\n" + correct << QStringList { "partial_write" }
            << "time" << "timed call";
        QTest::addRow("finishes on a detached thread")
            << "#include <chrono>\n#include <thread>\n" + count
            << "    if (++g_calls > 6) {\n"
               "        std::thread([=] {\n"
               "            std::this_thread::sleep_for(std::chrono::seconds(2));\n"
               "            for (int64_t i = 0; i < n; ++i)\n                y[i] = 2.0f * x[i] + b;\n"
               "        }).detach();\n        return 0;\n    }\n" + correct
            << QStringList { "partial_write" } << "time" << "timed call";
        QTest::addRow("writes its inputs while timed")
            << count
            << "    for (int64_t i = 0; i < n; ++i)\n        y[i] = 2.0f * x[i] + b;\n"
               "    if (++g_calls > 6)\n        const_cast<float*>(x)[n / 2] += 1.0f;\n    return 0;\n"
            // Caught as the mutation itself (inputs are checksummed after timing) or, when a
            // verified call reads the changed input first, as the wrong output it causes.
            << QStringList { "input_mutation", "wrong_result" } << "time" << "";
        QTest::addRow("answers from the last call's inputs")
            << "#include <vector>\nstatic std::vector<float> g_memo;\n" + count
            << "    if (++g_calls > 6 && g_memo.size() == size_t(n)) {\n"
               "        for (int64_t i = 0; i < n; ++i)\n            y[i] = g_memo[size_t(i)];\n"
               "        return 0;\n    }\n"
               "    g_memo.assign(size_t(n), 0.0f);\n"
               "    for (int64_t i = 0; i < n; ++i)\n        y[i] = g_memo[size_t(i)] = 2.0f * x[i] + b;\n"
               "    return 0;\n"
            << QStringList { "wrong_result" } << "time" << "timed call";
        // Finds the socket to the worker and answers for the runner, at once and with 1 ns,
        // before it computes: a forged reply, out of step with the requests.
        QTest::addRow("forges a quick reply")
            << "#include <sys/socket.h>\n"
               "struct Forged { int32_t status; int32_t rc; double ns; uint64_t nonce; };\n" + count
            << "    if (++g_calls > 6)\n"
               "        for (int fd = 3; fd < 64; ++fd) {\n"
               "            const Forged f { 0, 0, 1.0, uint64_t(g_calls) };\n"
               "            (void)!send(fd, &f, sizeof f, MSG_NOSIGNAL);\n"
               "        }\n" + correct
            << QStringList { "protocol_error" } << "time" << "forged";
#if defined(__x86_64__)
        // Rewrites libc's clock_gettime in its own process so that every call seems to take 1 us.
        QTest::addRow("patches the clock")
            << "#include <cstring>\n#include <ctime>\n#include <dlfcn.h>\n#include <sys/mman.h>\n"
               "static int fakeClock(clockid_t, struct timespec* ts)\n{\n"
               "    static long t = 0;\n    t += 500;\n    ts->tv_sec = t / 1000000000;\n"
               "    ts->tv_nsec = t % 1000000000;\n    return 0;\n}\n"
               "__attribute__((constructor)) static void patchClock()\n{\n"
               "    void* f = dlsym(RTLD_DEFAULT, \"clock_gettime\");\n    if (!f)\n        return;\n"
               "    uintptr_t page = reinterpret_cast<uintptr_t>(f) & ~uintptr_t(4095);\n"
               "    if (mprotect(reinterpret_cast<void*>(page), 8192, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)\n"
               "        return;\n"
               "    unsigned char code[12] = { 0x48, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xE0 };\n"
               "    void* target = reinterpret_cast<void*>(&fakeClock);\n"
               "    std::memcpy(code + 2, &target, 8);\n    std::memcpy(f, code, sizeof code);\n}\n"
            << correct << QStringList { "suspicious" } << "time" << "clock";
#endif
    }

    void dishonestCandidatesFail()
    {
        QFETCH(QString, prelude);
        QFETCH(QString, body);
        QFETCH(QStringList, kinds);
        QFETCH(QString, stage);
        QFETCH(QString, fragment);
        const json cand = source("cheat.cpp", candidateWith(prelude.toStdString(), body.toStdString()));
        const json r = evalOne(evalRequest(QTest::currentDataTag(), cand, true, source("naive.cpp", kReference)));
        QCOMPARE(r.value("status", ""), std::string("failed"));
        const std::string kind = r["failure"]["kind"].get<std::string>();
        const std::string message = r["failure"]["message"].get<std::string>();
        QVERIFY2(kinds.contains(QString::fromStdString(kind)), (kind + ": " + message).c_str());
        QCOMPARE(QString::fromStdString(r["failure"]["stage"].get<std::string>()), stage);
        QVERIFY2(message.find(fragment.toStdString()) != std::string::npos, message.c_str());
        QVERIFY(!r.contains("roofline")); // no timing of a failed candidate is reported as a result
    }

    /// A time under the roofline floor is a verdict, not a remark.
    void belowTheFloorIsSuspicious()
    {
        json req = evalRequest("floor", source("fast.cpp", candidate(kCorrectBody)), true);
        req["problem"]["bench"][0]["bytes"] = 1e13; // a cost model no kernel can beat
        const json r = evalOne(req);
        QCOMPARE(r.value("status", ""), std::string("failed"));
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("suspicious"));
        QCOMPARE(r["failure"]["stage"].get<std::string>(), std::string("diagnose"));
        QVERIFY2(r["failure"]["message"].get<std::string>().find("below the roofline floor") != std::string::npos,
            r["failure"]["message"].get<std::string>().c_str());
        QCOMPARE(r["diagnosis"]["suspicious"].get<bool>(), true);
        QVERIFY(!protocol::EvalResult::fromJson(r).ok());
    }

    /// The sandbox: no network, no files of the host, no environment, no survivors.
    void candidatesAreSandboxed()
    {
        const Session hello = talk({ R"({"protocol":2,"type":"hello","id":"sb"})" });
        QCOMPARE(hello.ofType("hello").size(), size_t(1));
        const json sandbox = hello.ofType("hello").front()["sandbox"];
        if (!sandbox.value("enabled", false))
            QSKIP(("no sandbox on this host: " + sandbox.value("reason", std::string("?"))).c_str());

        QTcpServer listener;
        QVERIFY(listener.listen(QHostAddress::LocalHost));
        const QString marker = QDir::tempPath() + "/hone-sandbox-marker-" + QString::number(listener.serverPort());
        QFile::remove(marker);
        // Every escape it manages makes its output wrong, so a pass means none worked.
        const std::string prelude = "#include <arpa/inet.h>\n#include <cstdio>\n#include <cstdlib>\n"
                                    "#include <netinet/in.h>\n#include <sys/prctl.h>\n#include <sys/socket.h>\n"
                                    "#include <unistd.h>\n"
                                    "static int escapes()\n{\n    int found = 0;\n"
                                    "    int s = socket(AF_INET, SOCK_STREAM, 0);\n"
                                    "    sockaddr_in a {};\n    a.sin_family = AF_INET;\n"
                                    "    a.sin_port = htons(PORT);\n    a.sin_addr.s_addr = htonl(0x7f000001);\n"
                                    "    if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)\n"
                                    "        found |= 1;\n"
                                    "    if (FILE* f = std::fopen(\"/etc/passwd\", \"r\")) { found |= 2; std::fclose(f); }\n"
                                    "    if (std::getenv(\"HONE_TEST_SECRET\")) found |= 4;\n"
                                    "    char path[256];\n"
                                    "    std::snprintf(path, sizeof path, \"/tmp/hone-sandbox-marker-%d\", PORT);\n"
                                    "    if (FILE* f = std::fopen(path, \"w\")) std::fclose(f);\n"
                                    "    if (std::getenv(\"HOME\")) found |= 8;\n"
                                    "    if (fork() == 0) {\n        setsid();\n"
                                    "        prctl(PR_SET_NAME, \"hone-survivor\");\n        sleep(120);\n"
                                    "        _exit(0);\n    }\n"
                                    "    return found;\n}\n";
        const std::string body = "    if (escapes() != 0)\n        return 0;\n" + std::string(kCorrectBody);
        json cand = source("escape.cpp", candidateWith(prelude, body));
        cand["knobs"] = { { "PORT", std::to_string(listener.serverPort()) } };
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("HONE_TEST_SECRET", "sk-not-for-candidates");
        const Session s = talk({ evalRequest("escape", cand, false).dump() }, {}, 300000, env);
        const auto results = s.ofType("result");
        QCOMPARE(results.size(), size_t(1));
        QVERIFY2(results.front()["status"] == "ok", results.front().dump(2).c_str());
        QTest::qWait(200);
        QVERIFY(!listener.hasPendingConnections());
        QVERIFY(!QFile::exists(marker));
        // Nothing the candidate started outlives its worker.
        bool survivor = false;
        for (int attempt = 0; attempt < 20; ++attempt) {
            survivor = false;
            for (const QString& pid : QDir("/proc").entryList(QDir::Dirs)) {
                QFile comm("/proc/" + pid + "/comm");
                if (comm.open(QIODevice::ReadOnly) && comm.readAll().trimmed() == "hone-survivor")
                    survivor = true;
            }
            if (!survivor)
                break;
            QTest::qWait(100);
        }
        QVERIFY(!survivor);
    }

    /// Each runner process serves exactly one kernel, loaded from a private copy of its object:
    /// in one worker, a second candidate finds nothing the first left in its process
    /// (environment, private /tmp), sees no other runner (the reference's, the baseline's), and
    /// can write neither its object (a private copy) nor any other file it has mapped or open.
    /// Every escape it manages makes its output wrong.
    void runnersServeOneKernelAndSeeNoOther()
    {
        const Session hello = talk({ R"({"protocol":2,"type":"hello","id":"sb"})" });
        QCOMPARE(hello.ofType("hello").size(), size_t(1));
        const json sandbox = hello.ofType("hello").front()["sandbox"];
        if (!sandbox.value("enabled", false))
            QSKIP(("no sandbox on this host: " + sandbox.value("reason", std::string("?"))).c_str());

        const std::string marks = "#include <cstdio>\n#include <cstdlib>\n"
                                  "static int leaveMarks()\n{\n"
                                  "    setenv(\"HONE_LEFT_BEHIND\", \"1\", 1);\n"
                                  "    if (FILE* f = std::fopen(\"/tmp/hone-left-behind\", \"w\")) std::fclose(f);\n"
                                  "    return 0;\n}\n";
        const std::string marker = candidateWith(marks, "    leaveMarks();\n" + std::string(kCorrectBody));
        const std::string prelude = R"(#include <initializer_list>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
static bool writable(const char* link)
{
    char target[512] = {};
    if (readlink(link, target, sizeof target - 1) <= 0 || target[0] != '/' || std::strncmp(target, "/memfd:", 7) == 0
        || std::strncmp(target, "/dev/", 5) == 0)
        return false; // not a file, or a private copy
    const int fd = open(link, O_RDWR);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}
static int escapes()
{
    int found = 0;
    if (std::getenv("HONE_LEFT_BEHIND")) found |= 1;
    if (FILE* f = std::fopen("/tmp/hone-left-behind", "r")) { found |= 2; std::fclose(f); }
    char path[600];
    if (DIR* d = opendir("/proc")) {
        while (dirent* e = readdir(d)) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == getpid()) continue;
            std::snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
            char comm[64] = {};
            if (FILE* f = std::fopen(path, "r")) {
                if (std::fgets(comm, sizeof comm, f) && std::strncmp(comm, "hone-worker", 11) == 0) found |= 4;
                std::fclose(f);
            }
        }
        closedir(d);
    }
    for (const char* dir : { "/proc/self/map_files", "/proc/self/fd" })
        if (DIR* d = opendir(dir)) {
            while (dirent* e = readdir(d)) {
                if (e->d_name[0] == '.') continue;
                std::snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                if (writable(path)) found |= 8;
            }
            closedir(d);
        }
    return found;
}
static int g_found = -1;
)";
        const std::string body = "    if (g_found < 0)\n        g_found = escapes();\n"
                                 "    if (g_found != 0)\n        return 0;\n"
            + std::string(kCorrectBody);
        const json baseline = source("baseline.cpp", kReference);
        const Session s = talk({ evalRequest("marks", source("marks.cpp", marker), true, baseline).dump(),
            evalRequest("probe", source("probe.cpp", candidateWith(prelude, body)), true, baseline).dump() });
        const auto results = s.ofType("result");
        QCOMPARE(results.size(), size_t(2));
        QVERIFY2(results[0]["status"] == "ok", results[0].dump(2).c_str());
        QVERIFY2(results[1]["status"] == "ok", results[1].dump(2).c_str());
        QCOMPARE(results[1]["id"].get<std::string>(), std::string("probe"));
    }

    /// The compile is sandboxed too: a source that includes a file of the host (the password
    /// file, a secret under $HOME or in /tmp outside the cache) fails to compile, and none of
    /// the file's text reaches the result.
    void compilesAreSandboxed()
    {
        const Session hello = talk({ R"({"protocol":2,"type":"hello","id":"sb"})" });
        QCOMPARE(hello.ofType("hello").size(), size_t(1));
        const json sandbox = hello.ofType("hello").front()["sandbox"];
        if (!sandbox.value("enabled", false))
            QSKIP(("no sandbox on this host: " + sandbox.value("reason", std::string("?"))).c_str());

        QFile passwd("/etc/passwd");
        QVERIFY(passwd.open(QIODevice::ReadOnly));
        const std::string passwdLine = passwd.readLine().trimmed().toStdString();
        QVERIFY(!passwdLine.empty());
        QTemporaryDir home(QDir::homePath() + "/.hone-test-secret-XXXXXX");
        QTemporaryDir tmp(QDir::tempPath() + "/hone-test-secret-XXXXXX");
        QVERIFY(home.isValid() && tmp.isValid());
        // Read as C++, each secret is an error that the compiler would quote with its line.
        const std::string secret = "hone_secret_" + QUuid::createUuid().toString(QUuid::Id128).toStdString();
        std::vector<std::pair<std::string, std::string>> secrets; // candidate name, included path
        secrets.emplace_back("passwd.cpp", "/etc/passwd");
        for (const QTemporaryDir* dir : { &home, &tmp }) {
            const QString path = dir->filePath("key.h");
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray::fromStdString(secret + " = " + secret + ";\n"));
            f.close();
            secrets.emplace_back(dir == &home ? "home.cpp" : "tmp.cpp", path.toStdString());
        }
        auto requests = [&] {
            std::vector<std::string> lines;
            for (const auto& [name, path] : secrets) {
                const std::string text = "#include \"" + path + "\"\n" + candidate(kCorrectBody);
                lines.push_back(evalRequest(name, source(name, text), false).dump());
            }
            return lines;
        };
        const Session s = talk(requests());
        const auto results = s.ofType("result");
        QCOMPARE(results.size(), secrets.size());
        for (const json& r : results) {
            const std::string name = r["id"].get<std::string>();
            const std::string text = r.dump();
            QCOMPARE(r["status"].get<std::string>(), std::string("failed"));
            QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("compile_error"));
            const std::string message = r["failure"]["message"].get<std::string>();
            QVERIFY2(message.find(name + ":1:10: fatal error:") != std::string::npos, message.c_str());
            QVERIFY2(text.find(secret) == std::string::npos, text.c_str());
            QVERIFY2(text.find(passwdLine) == std::string::npos, text.c_str());
        }
        // The probe itself works: unsandboxed, the same compile quotes the secret.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("HONE_NO_SANDBOX", "1");
        const Session open = talk({ requests()[1] }, {}, 300000, env);
        QCOMPARE(open.ofType("result").size(), size_t(1));
        QVERIFY(open.ofType("result").front().dump().find(secret) != std::string::npos);
    }

    void crashNamesTheStage()
    {
        // The candidate runs in a process of its own: its crash is a verdict the worker gives,
        // and the worker lives on.
        const std::string body
            = "    (void)x; (void)n; (void)b;\n    y[0] = *static_cast<volatile float*>(nullptr);\n"
              "    return 0;\n";
        const Session s = talk({ evalRequest("crash", source("crash.cpp", candidate(body)), false).dump(),
            json { { "protocol", 2 }, { "type", "hello" }, { "id", "after" } }.dump() });
        QVERIFY2(s.badLines.isEmpty(), qPrintable(s.badLines.join('\n')));
        QCOMPARE(s.exitStatus, QProcess::NormalExit);
        QCOMPARE(s.exitCode, 0);
        const auto results = s.ofType("result");
        QCOMPARE(results.size(), size_t(1));
        const json& r = results.front();
        QCOMPARE(r["status"].get<std::string>(), std::string("failed"));
        QCOMPARE(r["failure"]["kind"].get<std::string>(), std::string("crash"));
        QCOMPARE(r["failure"]["stage"].get<std::string>(), std::string("check"));
        const std::string message = r["failure"]["message"].get<std::string>();
        QVERIFY2(message.find("SIGSEGV") != std::string::npos, message.c_str());
        QVERIFY2(message.find("small[0] seed 1") != std::string::npos, message.c_str());
        QCOMPARE(s.ofType("hello").size(), size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestWorkerChecks)
#include "tst_worker_checks.moc"
