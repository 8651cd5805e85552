// Problems from PyTorch (issue 24): `hone import kernelbench` on our own KernelBench-format files
// (tests/data/kernelbench), the problems it writes (shapes, dtypes, tolerances, cost model), the
// error line of each file it cannot convert, a hand-written C++ candidate evaluated through the
// real worker against the PyTorch reference and baseline, the runner's GPU-baseline requests
// (stage, time; the device-less answer on a host without CUDA), an all-zeros candidate that fails on
// every imported problem, a host without PyTorch, and the LLM synthesizer driving an imported
// problem that has no seed kernels. Skips, naming the reason, where PyTorch is missing.

#include "core/problem_spec.h"
#include "core/protocol.h"
#include "core/store.h"
#ifdef HONE_TEST_HTTPLIB
#include "tst_llm_server.h"
#endif

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Run {
    int exitCode = -1;
    std::string out;
    std::string err;
};

std::string readFile(const fs::path& p)
{
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

fs::path data(const std::string& rel)
{
    return fs::path(HONE_TEST_DATA) / "kernelbench" / rel;
}

std::string python()
{
    const char* p = std::getenv("HONE_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

/// The problems the importer must write, with the numbers it must derive.
const std::vector<std::string> kConverted = { "01_relu", "02_mul_add", "03_sum_reduction", "04_max_reduction",
    "05_layernorm", "06_softmax", "07_matmul", "08_linear_relu", "09_gemm_scale_sigmoid", "10_conv2d",
    "11_conv_relu_bias", "12_rmsnorm", "13_groupnorm", "14_log_softmax_bf16", "15_sort" };

} // namespace

class TestImport : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    fs::path m_out;
    fs::path m_cache;
    Run m_import;

    Run runProcess(const QString& program, const QStringList& args, const QProcessEnvironment& env
                                                                     = QProcessEnvironment::systemEnvironment())
    {
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(program, args);
        Run r;
        if (!p.waitForFinished(600000)) {
            p.kill();
            p.waitForFinished();
        }
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.out = p.readAllStandardOutput().toStdString();
        r.err = p.readAllStandardError().toStdString();
        return r;
    }

    Run hone(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
    {
        QStringList all { "--store", m_tmp.path() + "/hone.db", "--cache-dir", QString::fromStdString(m_cache.string()),
            "--worker", QString(std::getenv("HONE_WORKER")) };
        return runProcess(std::getenv("HONE_CLI"), all + args, env);
    }

    /// Replies of a worker fed `lines` (one JSON request each).
    std::vector<json> worker(const std::vector<json>& lines,
        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(), const fs::path& cache = {})
    {
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(std::getenv("HONE_WORKER"),
            { "--stdio", "--cache-dir", QString::fromStdString((cache.empty() ? m_cache : cache).string()) });
        for (const auto& l : lines)
            p.write(QByteArray::fromStdString(l.dump() + "\n"));
        p.closeWriteChannel();
        p.waitForFinished(600000);
        std::vector<json> out;
        std::istringstream in(p.readAllStandardOutput().toStdString());
        for (std::string line; std::getline(in, line);) {
            json j = json::parse(line, nullptr, false);
            if (j.is_object() && j.value("type", std::string()) != "progress")
                out.push_back(j);
        }
        return out;
    }

    json checkRequest(const std::string& problem, const fs::path& candidate)
    {
        const hone::core::ProblemSpec spec = hone::core::loadProblem(m_out / problem);
        json req = hone::core::protocol::makeMessage("eval");
        req["id"] = "zeros-" + problem;
        req["problem"] = hone::core::resolveProblem(spec);
        req["candidate"] = { { "name", candidate.filename().string() }, { "lang", "cpp" }, { "source", readFile(candidate) } };
        req["stages"] = { "compile", "check" };
        return req;
    }

private slots:
    void initTestCase()
    {
        if (!std::getenv("HONE_CLI") || !std::getenv("HONE_WORKER"))
            QSKIP("HONE_CLI and HONE_WORKER are not set (run through ctest)");
        const Run probe = runProcess(QString::fromStdString(python()), { "-c", "import torch, numpy" });
        if (probe.exitCode != 0)
            QSKIP(qPrintable(QString::fromStdString(python() + " cannot import torch and numpy (install python3-torch): "
                + probe.err.substr(probe.err.rfind('\n', probe.err.size() - 2) + 1))));
        m_out = fs::path(m_tmp.path().toStdString()) / "kb";
        m_cache = fs::path(m_tmp.path().toStdString()) / "cache";
        m_import = hone({ "import", "kernelbench", QString::fromStdString(data("").string()), "--out",
            QString::fromStdString(m_out.string()) });
        qInfo().noquote() << QString::fromStdString(m_import.out + m_import.err);
    }

    void importSaysWhatItDidPerFile_data()
    {
        QTest::addColumn<QString>("line");
        for (const auto& name : kConverted)
            QTest::addRow("%s", name.c_str()) << QString::fromStdString("ok " + name + ": ");
        QTest::addRow("dropout") << "bad_dropout.py: forward is not deterministic (randomness inside forward";
        QTest::addRow("nonzero") << "bad_nonzero.py: forward calls nonzero, whose result depends on the values";
        QTest::addRow("complex") << "bad_complex.py: unsupported dtype torch.complex64 (input 'x')";
        QTest::addRow("no get_inputs") << "bad_no_inputs.py: no get_inputs defined";
        QTest::addRow("syntax") << "bad_syntax.py: not valid Python";
    }

    void importSaysWhatItDidPerFile()
    {
        QFETCH(QString, line);
        QVERIFY2(m_import.out.find(line.toStdString()) != std::string::npos, m_import.out.c_str());
        // Some files could not be converted: exit status 9 (ExitCode::Failed), and the others were
        // written all the same.
        QCOMPARE(m_import.exitCode, 9);
        size_t lines = 0;
        for (char c : m_import.out)
            lines += c == '\n';
        QCOMPARE(lines, kConverted.size() + 5); // one line per file, nothing else
        QVERIFY(!fs::exists(m_out / "bad_dropout"));
    }

    void importedProblems_data()
    {
        QTest::addColumn<QString>("problem");
        QTest::addColumn<QString>("inputs");    // name:dtype:dims ...
        QTest::addColumn<QString>("output");    // dtype:dims at the bench shape
        QTest::addColumn<double>("benchFlops"); // -1: unknown
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("toleranceDtype");
        QTest::addRow("relu") << "01_relu" << "x:f32:batch_size,dim" << "f32:16,4096" << 16.0 * 4096 << "elementwise" << "f32";
        QTest::addRow("mul add") << "02_mul_add" << "a:f32:N b:f32:N" << "f32:65536" << 2.0 * 65536 << "elementwise" << "f32";
        QTest::addRow("sum") << "03_sum_reduction" << "x:f32:batch_size,dim1,dim1" << "f32:16,1,256"
                             << 16.0 * 256 * 256 << "reduction" << "f32";
        QTest::addRow("max") << "04_max_reduction" << "x:f32:batch_size,features" << "f32:32" << 32.0 * 1024
                             << "reduction" << "f32";
        QTest::addRow("layernorm") << "05_layernorm" << "x:f32:batch_size,features ln_weight:f32:features ln_bias:f32:features"
                                   << "f32:64,1024" << 8.0 * 64 * 1024 << "norm" << "f32";
        QTest::addRow("softmax") << "06_softmax" << "x:f32:batch_size,dim" << "f32:16,16384" << 5.0 * 16 * 16384
                                 << "softmax" << "f32";
        QTest::addRow("matmul") << "07_matmul" << "A:f32:M,K B:f32:K,N" << "f32:256,128" << 2.0 * 256 * 512 * 128
                                << "gemm" << "f32";
        QTest::addRow("linear relu") << "08_linear_relu"
                                     << "x:f32:batch_size,in_features linear_weight:f32:out_features,in_features "
                                        "linear_bias:f32:out_features"
                                     << "f32:128,256" << 2.0 * 128 * 512 * 256 + 2.0 * 128 * 256 << "gemm_epilogue"
                                     << "f32";
        QTest::addRow("gemm scale sigmoid sum")
            << "09_gemm_scale_sigmoid"
            << "x:f32:batch_size,input_size gemm_weight:f32:hidden_size,input_size gemm_bias:f32:hidden_size"
            << "f32:64,1" << 2.0 * 64 * 256 * 128 + 4.0 * 64 * 128 << "gemm_epilogue" << "f32";
        QTest::addRow("conv2d") << "10_conv2d" << "x:f32:4,3,height,height conv_weight:f32:out_channels,3,3,3"
                                << "f32:4,16,62,62" << 2.0 * 4 * 16 * 62 * 62 * 3 * 9 << "conv" << "f32";
        QTest::addRow("conv relu bias") << "11_conv_relu_bias"
                                        << "x:f32:2,3,height,height bias:f32:out_channels,1,1 "
                                           "conv_weight:f32:out_channels,3,3,3 conv_bias:f32:out_channels"
                                        << "f32:2,16,30,30"
                                        << 2.0 * 2 * 16 * 30 * 30 * 27 + 3.0 * 2 * 16 * 30 * 30 << "conv_epilogue" << "f32";
        QTest::addRow("rmsnorm") << "12_rmsnorm" << "x:f32:batch_size,features,dim1,dim1" << "f32:16,64,32,32"
                                 << 3.0 * 16 * 64 * 32 * 32 + 2.0 * 16 * 32 * 32 << "reduction" << "f32";
        QTest::addRow("groupnorm") << "13_groupnorm"
                                   << "x:f32:8,features,dim1,dim1 gn_weight:f32:features gn_bias:f32:features"
                                   << "f32:8,64,32,32" << 8.0 * 8 * 64 * 32 * 32 << "norm" << "f32";
        QTest::addRow("log softmax bf16") << "14_log_softmax_bf16" << "x:bf16:batch_size,dim" << "bf16:16,2048"
                                          << 5.0 * 16 * 2048 << "softmax" << "bf16";
        QTest::addRow("sort: no cost rule") << "15_sort" << "x:f32:batch_size,dim" << "f32:16,4096" << -1.0 << "other"
                                            << "f32";
    }

    void importedProblems()
    {
        QFETCH(QString, problem);
        QFETCH(QString, inputs);
        QFETCH(QString, output);
        QFETCH(double, benchFlops);
        QFETCH(QString, family);
        QFETCH(QString, toleranceDtype);
        const hone::core::ProblemSpec spec = hone::core::loadProblem(m_out / problem.toStdString());
        QCOMPARE(spec.referenceLang, std::string("python"));
        QCOMPARE(spec.baseline, std::string("reference.py"));
        QVERIFY(spec.seeds.empty());
        QVERIFY(spec.baselineSeed() && spec.baselineSeed()->lang == "python");
        QCOMPARE(QString::fromStdString(spec.family), family);

        QStringList got;
        for (const auto& t : spec.inputs) {
            QStringList dims;
            for (const auto& d : t.shape)
                dims << (d.symbol.empty() ? QString::number(d.extent) : QString::fromStdString(d.symbol));
            got << QString::fromStdString(t.name + ":" + hone::core::dtypeName(t.dtype) + ":") + dims.join(",");
        }
        QCOMPARE(got.join(" "), inputs);

        // The bench shape is the file's own sizes; every small shape is smaller and differs from it.
        const json bench = hone::core::resolveShape(spec, spec.benchShapes.at(0), "bench[0]");
        QCOMPARE(spec.outputs.size(), size_t(1));
        const json& out = bench["outputs"][0];
        QStringList outDims;
        for (const auto& d : out["shape"])
            outDims << QString::number(d.get<int64_t>());
        QCOMPARE(QString::fromStdString(out["dtype"].get<std::string>() + ":") + outDims.join(","), output);
        QVERIFY(!spec.smallShapes.empty());
        auto elements = [](const json& shape) {
            double n = 0;
            for (const auto& t : shape["inputs"]) {
                double e = 1;
                for (const auto& d : t["shape"])
                    e *= d.get<double>();
                n += e;
            }
            return n;
        };
        for (size_t i = 0; i < spec.smallShapes.size(); ++i) {
            const json small = hone::core::resolveShape(spec, spec.smallShapes[i], "small");
            QVERIFY(spec.smallShapes[i] != spec.benchShapes[0]);
            QVERIFY2(elements(small) < elements(bench), problem.toStdString().c_str());
        }

        // Cost model: derived FLOPs, or "unknown" that reaches the worker as flops_unknown.
        if (benchFlops < 0) {
            QVERIFY(spec.flopsUnknown);
            QCOMPARE(bench.value("flops_unknown", false), true);
            QVERIFY(readFile(m_out / problem.toStdString() / "problem.toml").find("flops = \"unknown\"   # no cost rule for sort")
                != std::string::npos);
        } else {
            QVERIFY(!spec.flopsUnknown);
            QCOMPARE(bench["flops"].get<double>(), benchFlops);
        }
        double bytes = 0;
        for (const char* key : { "inputs", "outputs" })
            for (const auto& t : bench[key]) {
                double e = t["dtype"] == "bf16" ? 2 : 4;
                for (const auto& d : t["shape"])
                    e *= d.get<double>();
                bytes += e;
            }
        QCOMPARE(bench["bytes"].get<double>(), bytes);

        // Tolerances per output dtype, as the bundled problems have them.
        QCOMPARE(spec.tolerance.size(), size_t(1));
        const auto dt = hone::core::dtypeFromName(toleranceDtype.toStdString());
        QVERIFY(dt && spec.tolerance.count(*dt));
        const auto tol = spec.tolerance.at(*dt);
        if (*dt == HONE_BF16) {
            QVERIFY(tol.atol <= 2e-2 && tol.rtol == 1.6e-2);
        } else {
            QVERIFY(tol.atol <= 1e-4 && tol.atol > 0 && tol.rtol == 1e-3);
        }
        // The module's parameters are inputs with a seeded init; LayerNorm's ones and zeros vary.
        if (problem == "05_layernorm") {
            QCOMPARE(spec.inputs[1].init.dist, std::string("uniform"));
            QCOMPARE(spec.inputs[2].init.dist, std::string("uniform"));
        }
    }

    void handWrittenCandidateThroughTheWorker()
    {
        // The PyTorch reference gives the outputs and is the baseline: the speedup is over PyTorch eager.
        const Run r = hone({ "eval", QString::fromStdString((m_out / "08_linear_relu").string()),
            QString::fromStdString(data("candidates/linear_relu.cpp").string()), "--json" });
        QVERIFY2(r.exitCode == 0, (r.out + r.err).c_str());
        const json res = json::parse(r.out);
        QCOMPARE(res["status"].get<std::string>(), std::string("ok"));
        QVERIFY(res["checks"].size() >= 6); // 2 small shapes x 3 seeds, and the re-check
        for (const auto& c : res["checks"])
            QVERIFY(c["ok"].get<bool>());
        QVERIFY(res["timing"]["baseline"]["median_ns"].get<double>() > 0);
        QVERIFY(res["timing"]["speedup"].get<double>() > 0);
        QVERIFY(res["roofline"]["flops"].get<double>() == 2.0 * 128 * 512 * 256 + 2.0 * 128 * 256);
    }

    void allZerosFailsOnEveryImportedProblem()
    {
        std::vector<json> requests;
        for (const auto& name : kConverted)
            requests.push_back(checkRequest(name, data("candidates/zeros.cpp")));
        const std::vector<json> replies = worker(requests);
        QCOMPARE(replies.size(), requests.size());
        for (size_t i = 0; i < replies.size(); ++i) {
            const json& r = replies[i];
            QVERIFY2(r["status"] == "failed", (kConverted[i] + ": " + r.dump()).c_str());
            QVERIFY2(r["failure"]["kind"] == "wrong_result", (kConverted[i] + ": " + r.dump()).c_str());
        }
        // The same check passes a correct kernel: the failures above are the zeros', not the harness's.
        const std::vector<json> ok = worker({ checkRequest("08_linear_relu", data("candidates/linear_relu.cpp")) });
        QCOMPARE(ok.at(0)["status"].get<std::string>(), std::string("ok"));
    }

    void hostWithoutPyTorch()
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("HONE_PYTHON", m_tmp.path() + "/no-such-python");
        json hello = hone::core::protocol::makeMessage("hello");
        hello["id"] = "h";
        const std::vector<json> withTorch = worker({ hello });
        QCOMPARE(withTorch.at(0)["torch"]["available"].get<bool>(), true);
        QVERIFY(!withTorch.at(0)["torch"]["version"].get<std::string>().empty());

        json check = checkRequest("01_relu", data("candidates/zeros.cpp"));
        // A fresh cache: reference outputs cached by the cases above would need no Python.
        const std::vector<json> without = worker({ hello, check }, env, m_cache.parent_path() / "cache-no-torch");
        QCOMPARE(without.at(0)["torch"]["available"].get<bool>(), false);
        const std::string reason = without.at(0)["torch"]["reason"].get<std::string>();
        QVERIFY2(reason.find("install python3-torch") != std::string::npos, reason.c_str());
        // A check needs the reference: the problem's failure, not the candidate's, saying why.
        QCOMPARE(without.at(1)["failure"]["kind"].get<std::string>(), std::string("worker_error"));
        const std::string msg = without.at(1)["failure"]["message"].get<std::string>();
        QVERIFY2(msg.find("cannot run the PyTorch reference") != std::string::npos, msg.c_str());
    }

    void knobSearchSaysItNeedsSeeds()
    {
        const Run r = hone({ "run", QString::fromStdString((m_out / "01_relu").string()), "--budget", "2" });
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.find("has no seed kernel for target cpu: --synth knob only tunes the knobs of seeds") != std::string::npos,
            r.err.c_str());
        QVERIFY2(r.err.find("--synth llm") != std::string::npos, r.err.c_str());
    }

    void benchReportsCorrectnessAndFastP()
    {
        // A suite of two imported problems given seed kernels: a correct one and an all-zeros one.
        const fs::path suite = m_out.parent_path() / "suite";
        for (const auto& [problem, seed] : { std::pair { "01_relu", "relu.cpp" }, { "02_mul_add", "zeros.cpp" } }) {
            fs::create_directories(suite / problem / "seeds");
            for (const char* f : { "problem.toml", "reference.py" })
                fs::copy_file(m_out / problem / f, suite / problem / f);
            fs::copy_file(data(std::string("candidates/") + seed), suite / problem / "seeds" / seed);
        }
        const fs::path out = m_out.parent_path() / "bench-out";
        const Run r = hone({ "bench", QString::fromStdString(suite.string()), "--target", "cpu", "--budget", "1",
            "--no-torch", "--out", QString::fromStdString(out.string()) });
        QVERIFY2(r.exitCode == 0, (r.out + r.err).c_str());
        const json bench = json::parse(readFile(out / "bench.json"));
        const json& kb = bench["kernelbench"];
        QCOMPARE(kb["problems"].get<int>(), 2);
        QCOMPARE(kb["correct"].get<int>(), 1);
        QCOMPARE(kb["correct_rate"].get<double>(), 0.5);
        QCOMPARE(kb["with_eager_speedup"].get<int>(), 1); // timed beside the PyTorch baseline
        const json& relu = bench["rows"][0];
        QCOMPARE(relu["problem"].get<std::string>(), std::string("01_relu"));
        const double speedup = relu["speedup_vs_eager"].get<double>();
        QVERIFY(speedup > 0);
        for (const auto& [p, value] : { std::pair { "1.0", 1.0 }, { "1.5", 1.5 }, { "2.0", 2.0 } })
            QCOMPARE(kb["fast_p"][p].get<double>(), speedup > value ? 0.5 : 0.0);
        QCOMPARE(bench["rows"][1]["correct"].get<bool>(), false);
        const std::string md = readFile(out / "bench.md");
        QVERIFY2(md.find("KernelBench: 1 of 2 problems correct (50%); fast_1.0 ") != std::string::npos, md.c_str());
    }

    void gpuBaselineRequestsOfTheReferenceRunner()
    {
        // The requests that time a PyTorch baseline on a CUDA target (stage, then time), sent to
        // the runner script the worker embeds, with an imported reference. Without a GPU the
        // answer names the missing device and the process goes on serving reference calls; with
        // one, the staged set is timed with the delay sized as docs/BENCH.md says.
        const fs::path dir = fs::path(m_tmp.path().toStdString()) / "runner";
        fs::create_directories(dir);
        const char* src = std::getenv("HONE_SOURCE_DIR");
        const fs::path runner = (src && *src ? fs::path(src) : fs::path(HONE_TEST_DATA) / "../..")
            / "resources/python/hone_torch_runner.py";
        QVERIFY2(fs::exists(runner), runner.c_str());
        const std::vector<float> x = { -2.f, -1.f, 0.f, 1.f, 2.f, -0.5f, 0.5f, 3.f, -3.f, 4.f };
        std::ofstream(dir / "x.bin", std::ios::binary)
            .write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(float)));
        const json io = { { "inputs", { { { "name", "x" }, { "dtype", "f32" }, { "shape", { 2, 5 } }, { "file", (dir / "x.bin").string() } } } },
            { "outputs", { { { "name", "out" }, { "dtype", "f32" }, { "shape", { 2, 5 } }, { "file", (dir / "out.bin").string() } } } },
            { "params", { { "batch_size", 2 }, { "dim", 5 } } } };
        json stage = io;
        stage["op"] = "stage";
        stage["set"] = 0;
        json time = { { "op", "time" }, { "set", 0 }, { "samples", 3 } };
        QProcess p;
        p.start(QString::fromStdString(python()), { "-I", "-B", QString::fromStdString(runner.string()),
                                                      QString::fromStdString((m_out / "01_relu" / "reference.py").string()) });
        for (const json& line : { stage, time, io })
            p.write(QByteArray::fromStdString(line.dump() + "\n"));
        p.closeWriteChannel();
        QVERIFY(p.waitForFinished(300000));
        std::vector<json> replies;
        std::istringstream in(p.readAllStandardOutput().toStdString());
        for (std::string line; std::getline(in, line);)
            replies.push_back(json::parse(line));
        QCOMPARE(replies.size(), size_t(4));
        QCOMPARE(replies[0]["ok"].get<bool>(), true); // torch and the module loaded
        const bool gpu = runProcess(QString::fromStdString(python()),
                             { "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" })
                             .exitCode
            == 0;
        if (gpu) {
            QCOMPARE(replies[1]["ok"].get<bool>(), true);
            QVERIFY(replies[1]["delay_ns"].get<double>() >= 50e3);
            QCOMPARE(replies[2]["ns"].size(), size_t(3));
            for (const auto& ns : replies[2]["ns"])
                QVERIFY(ns.get<double>() > 0);
        } else {
            QCOMPARE(replies[1]["ok"].get<bool>(), false);
            const std::string why = replies[1]["error"].get<std::string>();
            QVERIFY2(why.find("PyTorch sees no CUDA device") != std::string::npos, why.c_str());
            QCOMPARE(replies[2]["ok"].get<bool>(), false); // no device to time on either
        }
        // A reference call after them: the right outputs, written where the request said.
        QCOMPARE(replies[3]["ok"].get<bool>(), true);
        std::vector<float> out(x.size());
        std::ifstream(dir / "out.bin", std::ios::binary)
            .read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(float)));
        for (size_t i = 0; i < x.size(); ++i)
            QCOMPARE(out[i], x[i] > 0 ? x[i] : 0.f);
    }

    void llmWritesKernelsFromThePyTorchReference()
    {
#ifndef HONE_TEST_HTTPLIB
        QSKIP("cpp-httplib not found: no scripted model server");
#else
        hone::testing::ScriptedLlmServer server;
        server.requireKey("sk-import-test");
        server.knownModels({ "scripted-coder" });
        hone::testing::ScriptedReply reply;
        reply.text = hone::testing::ScriptedLlmServer::fenced(readFile(data("candidates/linear_relu.cpp")));
        server.push(reply);
        server.push(reply);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("HONE_IMPORT_KEY", "sk-import-test");
        env.insert("XDG_CONFIG_HOME", m_tmp.path() + "/config");
        env.remove("HONE_LLM_CONFIG");
        const Run r = hone({ "run", QString::fromStdString((m_out / "08_linear_relu").string()), "--synth", "llm",
                               "--target", "cpu", "--llm-url", QString::fromStdString(server.url()), "--llm-model",
                               "scripted-coder", "--llm-key-env", "HONE_IMPORT_KEY", "--budget", "2", "--no-warm-start",
                               "--no-reverify", "--json" },
            env);
        QVERIFY2(r.exitCode == 0, (r.out + r.err).c_str());
        const json report = json::parse(r.out);
        QVERIFY2(report["best"].is_object(), r.out.c_str());
        QVERIFY(report["best"]["source"].get<std::string>().starts_with("llm_"));
        QVERIFY(report["best"]["speedup"].get<double>() > 0); // over the PyTorch baseline
        // The prompt carries the PyTorch reference, the adapter included, in a python block.
        const auto requests = server.requests();
        QVERIFY(!requests.empty());
        const std::string prompt = requests.front().user();
        QVERIFY2(prompt.find("```python\n# KernelBench file 08_linear_relu.py") != std::string::npos, prompt.c_str());
        QVERIFY(prompt.find("def run(inputs, params):") != std::string::npos);
        QVERIFY(prompt.find("the module's parameters among them") != std::string::npos);
#endif
    }
};

QTEST_GUILESS_MAIN(TestImport)
#include "tst_import.moc"
