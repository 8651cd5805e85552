// `hone export --torch`: the op's schema derived from problem.toml (symbols from input sizes,
// relations, int arguments, params), the package for every bundled CUDA problem, and on the CPU
// the whole path with real PyTorch: a session, the export, the package's own pytest (eager, error
// messages, non-contiguous inputs), and a two-configuration portfolio whose dispatcher picks the
// configuration of the nearest shape and falls back when one refuses a shape.
//
// PyTorch comes from /usr/bin/python3 (Debian's python3-torch); without it the PyTorch parts
// skip, naming the reason. $HONE_TORCH_EXPORT_DIR keeps the CUDA packages (for the GPU machine).

#include "core/export_bundle.h"
#include "core/export_torch.h"
#include "core/knobs.h"
#include "core/problem_spec.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

namespace fs = std::filesystem;
using namespace hone::core;

namespace {

struct Run {
    int code = -1;
    QString out;
};

Run run(const QString& program, const QStringList& args, const QString& dir = {}, int timeoutMs = 600000)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    if (!dir.isEmpty())
        p.setWorkingDirectory(dir);
    p.start(program, args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
    }
    return { p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAll()) };
}

const char* kPython = "/usr/bin/python3";

/// Why PyTorch cannot be used here, or empty.
QString torchMissing()
{
    static const QString why = [] {
        if (!QFile::exists(kPython))
            return QStringLiteral("no /usr/bin/python3");
        const Run r = run(kPython, { "-c", "import torch, pytest, ninja" }, {}, 120000);
        if (r.code == 0)
            return QString();
        const Run r2 = run(kPython, { "-c", "import torch, pytest" }, {}, 120000);
        if (r2.code == 0 && QFile::exists("/usr/bin/ninja"))
            return QString();
        return "PyTorch, pytest or ninja is missing for /usr/bin/python3 (apt install python3-torch python3-pytest "
               "ninja-build): "
            + r2.out.trimmed().split('\n').last();
    }();
    return why;
}

fs::path problemDir(const std::string& rel) { return fs::path(HONE_SOURCE_DIR) / "resources" / "problems" / rel; }

std::string readAll(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// A seed at its starting knobs.
TorchKernel seedKernel(const ProblemSpec& spec, const Seed& seed)
{
    TorchKernel k;
    k.sourceName = seed.fileName;
    k.sourceText = seed.source;
    k.label = "seed " + seed.fileName;
    const KnobSpace space = parseKnobSpace(seed.source, seed.fileName);
    if (auto v = space.initial())
        for (const auto& [name, value] : *v)
            k.knobs[name] = value;
    k.flags = space.flags;
    (void)spec;
    return k;
}

/// The pytest run of a package: the counts from its summary line.
struct PytestResult {
    int code = -1;
    int passed = 0;
    int failed = 0;
    QString out;
};

PytestResult pytest(const fs::path& dir, const QStringList& extra = {})
{
    PytestResult r;
    const Run p = run(kPython, QStringList { "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider" } + extra,
        QString::fromStdString(dir.string()));
    r.code = p.code;
    r.out = p.out;
    const QRegularExpression passed(QStringLiteral("(\\d+) passed")), failed(QStringLiteral("(\\d+) failed"));
    if (auto m = passed.match(p.out); m.hasMatch())
        r.passed = m.captured(1).toInt();
    if (auto m = failed.match(p.out); m.hasMatch())
        r.failed = m.captured(1).toInt();
    return r;
}

} // namespace

class TestExportTorch : public QObject {
    Q_OBJECT

private slots:
    void schemaFromProblemToml_data()
    {
        QTest::addColumn<QString>("problem");
        QTest::addColumn<QString>("schema");
        QTest::addColumn<QString>("relations");
        QTest::newRow("softmax") << "ads/softmax" << "softmax(Tensor x) -> Tensor" << "";
        QTest::newRow("layernorm: a float param")
            << "ads/layernorm" << "layernorm_bf16(Tensor x, Tensor gamma, Tensor beta, float eps=1.0000000000000001e-05) -> Tensor"
            << "";
        QTest::newRow("embedding_bag_sum: B from offsets")
            << "ads/embedding_bag_sum" << "embedding_bag_sum(Tensor table, Tensor indices, Tensor offsets) -> Tensor"
            << "B=B1 - 1";
        QTest::newRow("dot_interaction: P from F")
            << "ads/dot_interaction" << "dot_interaction(Tensor X) -> Tensor" << "P=F * (F - 1) / 2";
        QTest::newRow("jagged_to_padded: MAXL is an argument")
            << "ads/jagged_to_padded"
            << "jagged_to_padded(Tensor values, Tensor offsets, int MAXL, float padding_value=-1.0) -> Tensor"
            << "B=B1 - 1;MAXL=argument";
        QTest::newRow("feature_hash: params are doubles, exact to 2^53")
            << "ads/feature_hash" << "feature_hash(Tensor ids, float num_buckets=1000003.0, float salt=6004799503160661.0) -> Tensor"
            << "";
    }

    void schemaFromProblemToml()
    {
        QFETCH(QString, problem);
        QFETCH(QString, schema);
        QFETCH(QString, relations);
        const ProblemSpec spec = loadProblem(problemDir(problem.toStdString()));
        const TorchSignature sig = torchSignature(spec);
        QCOMPARE(QString::fromStdString(sig.schema), schema);
        QStringList got;
        for (const TorchSymbol& s : sig.symbols) {
            if (s.from == TorchSymbol::From::Relation)
                got << QString::fromStdString(s.name + "=" + s.expression);
            if (s.from == TorchSymbol::From::Argument)
                got << QString::fromStdString(s.name + "=argument");
        }
        QCOMPARE(got.join(';'), relations);
    }

    /// Every bundled CUDA problem gets a complete package from its tuned seed; with
    /// $HONE_TORCH_EXPORT_DIR the packages stay there, for the GPU machine's pytest.
    void cudaPackagesForEveryBundledProblem()
    {
        QTemporaryDir tmp;
        const QString keep = qEnvironmentVariable("HONE_TORCH_EXPORT_DIR");
        const fs::path root = keep.isEmpty() ? fs::path(tmp.path().toStdString()) : fs::path(keep.toStdString());
        int written = 0;
        for (const auto& entry : fs::directory_iterator(problemDir("ads"))) {
            const ProblemSpec spec = loadProblem(entry.path());
            // The first non-baseline seed (the tuned one), at its starting knobs.
            const Seed* seed = nullptr;
            for (const Seed& s : spec.seeds)
                if (s.fileName != spec.baseline && s.fileName.find("cublas") == std::string::npos && !seed)
                    seed = &s;
            QVERIFY2(seed, spec.name.c_str());
            const fs::path dir = root / spec.name;
            const TorchPackage p = writeTorchPackage(spec, { seedKernel(spec, *seed) }, "cuda", kernelHeaderText(), dir);
            for (const char* f : { "README.md", "problem.json", "test_op.py", "torch_ref.py", "k0_config.cu" })
                QVERIFY2(fs::exists(dir / f), (spec.name + ": no " + f).c_str());
            const std::string op = readAll(dir / ("hone_" + p.signature.opName + "_op.cpp"));
            QVERIFY(op.find("TORCH_LIBRARY_IMPL(hone, CUDA, m)") != std::string::npos);
            QVERIFY(op.find("TORCH_LIBRARY_IMPL(hone, Meta, m)") != std::string::npos);
            QVERIFY(op.find("getCurrentCUDAStream") != std::string::npos);
            QVERIFY2(op.find("cudaDeviceSynchronize") == std::string::npos && op.find("cudaMalloc") == std::string::npos,
                "the op must neither synchronize nor allocate outside PyTorch");
            ++written;
        }
        QCOMPARE(written, 9);
    }

    void refusesWhatItCannotBuild()
    {
        const ProblemSpec spec = loadProblem(problemDir("cpu/softmax"));
        QTemporaryDir tmp;
        try {
            writeTorchPackage(spec, { seedKernel(spec, spec.seeds.front()) }, "hip", kernelHeaderText(),
                tmp.path().toStdString());
            QFAIL("a HIP kernel was packaged");
        } catch (const ExportError& e) {
            QVERIFY2(QString(e.what()).contains("C++ and CUDA"), e.what());
        }
        try {
            writeTorchPackage(spec, {}, "cpp", kernelHeaderText(), tmp.path().toStdString());
            QFAIL("an empty package was written");
        } catch (const ExportError& e) {
            QVERIFY2(QString(e.what()).contains("at least one"), e.what());
        }
    }

    /// The whole path on the CPU: `hone run`, `hone export --torch`, the package's pytest.
    void cpuSessionExportsAnOpThatPassesItsPytest()
    {
        if (qEnvironmentVariableIsEmpty("HONE_CLI"))
            QSKIP("HONE_CLI is not set (run through ctest)");
        if (const QString why = torchMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        QTemporaryDir tmp;
        const QString store = tmp.filePath("s.db");
        const QString hone = qEnvironmentVariable("HONE_CLI");
        const Run r = run(hone, { "--store", store, "--create", "run",
                                    QString::fromStdString(problemDir("cpu/embedding_bag_sum").string()), "--budget", "2",
                                    "--no-reverify" });
        QVERIFY2(r.code == 0, qPrintable(r.out));
        const QString out = tmp.filePath("export");
        const Run e = run(hone, { "--store", store, "export", "1/2", out, "--torch" });
        QVERIFY2(e.code == 0, qPrintable(e.out));
        QVERIFY2(e.out.contains("hone::embedding_bag_sum(Tensor table, Tensor indices, Tensor offsets) -> Tensor"),
            qPrintable(e.out));
        const PytestResult t = pytest(fs::path(out.toStdString()) / "torch");
        QVERIFY2(t.code == 0 && t.failed == 0, qPrintable(t.out));
        // Eager on the 5 small shapes and the bench shape, the error messages, non-contiguous input.
        QVERIFY2(t.passed >= 7, qPrintable(t.out));
    }

    /// A session on a problem with a three-shape bench set: `hone export SESSION --portfolio`
    /// picks the fastest node per shape, writes one source whose hone_run dispatches by shape,
    /// and that source passes Hone's own harness (`hone eval`) on every check shape; with
    /// --torch, the PyTorch package of the same configurations passes its pytest.
    void sessionPortfolioPassesTheHarness()
    {
        if (qEnvironmentVariableIsEmpty("HONE_CLI"))
            QSKIP("HONE_CLI is not set (run through ctest)");
        QTemporaryDir tmp;
        const QString store = tmp.filePath("s.db");
        const QString hone = qEnvironmentVariable("HONE_CLI");
        const QString problem = QString::fromStdString(problemDir("cpu/softmax").string());
        const Run r = run(hone, { "--store", store, "--create", "run", problem, "--budget", "6", "--no-reverify" });
        QVERIFY2(r.code == 0, qPrintable(r.out));
        const QString out = tmp.filePath("portfolio");
        const bool torch = torchMissing().isEmpty();
        QStringList args = { "--store", store, "export", "1", out, "--portfolio" };
        if (torch)
            args << "--torch";
        const Run e = run(hone, args);
        QVERIFY2(e.code == 0, qPrintable(e.out));
        QVERIFY2(e.out.contains("exported the portfolio of session 1"), qPrintable(e.out));
        QFile f(out + "/portfolio.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto table = nlohmann::json::parse(f.readAll().toStdString());
        QCOMPARE(table["shapes"].size(), size_t(3)); // every bench shape has its fastest node
        for (const auto& c : table["shapes"]) {
            QVERIFY(c["median_ns"].get<double>() > 0);
            QVERIFY(c["config"].get<size_t>() < table["configurations"].size());
        }
        // The dispatcher is a candidate like any other: the worker checks it against the reference.
        const Run check = run(hone, { "eval", problem, out + "/portfolio.cpp" });
        QVERIFY2(check.code == 0, qPrintable(check.out));
        QVERIFY(fs::exists(fs::path(out.toStdString()) / "build.sh"));
        if (!torch)
            QSKIP(qPrintable("the PyTorch half: " + torchMissing()));
        const PytestResult t = pytest(fs::path(out.toStdString()) / "torch", { "-k", "eager or errors" });
        QVERIFY2(t.code == 0 && t.failed == 0 && t.passed >= 3, qPrintable(t.out));
    }

    /// A session that timed one shape has no portfolio: the export says why.
    void portfolioNeedsPerShapeResults()
    {
        if (qEnvironmentVariableIsEmpty("HONE_CLI"))
            QSKIP("HONE_CLI is not set (run through ctest)");
        QTemporaryDir tmp;
        const QString hone = qEnvironmentVariable("HONE_CLI");
        const Run e = run(hone, { "--store", tmp.filePath("none.db"), "--create", "run",
                                    QString::fromStdString(problemDir("cpu/softmax").string()), "--budget", "1",
                                    "--no-reverify" });
        QVERIFY2(e.code == 0 || e.code == 1, qPrintable(e.out));
        const Run bad = run(hone, { "--store", tmp.filePath("none.db"), "export", "1/2", tmp.filePath("x"), "--portfolio" });
        QVERIFY2(bad.code == 2 && bad.out.contains("expected SESSION"), qPrintable(bad.out));
    }

    /// Two configurations of one source in one library (each in its own namespace): the op
    /// serves each shape with the configuration chosen for the nearest shape of the table,
    /// and falls back to the other when the chosen one refuses a shape.
    void portfolioDispatchesByShape()
    {
        if (const QString why = torchMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const ProblemSpec spec = loadProblem(problemDir("cpu/softmax"));
        const Seed* tuned = nullptr;
        for (const Seed& s : spec.seeds)
            if (s.fileName == "tuned.cpp")
                tuned = &s;
        QVERIFY(tuned);
        TorchKernel small = seedKernel(spec, *tuned);
        small.label = "small rows";
        small.shapes = spec.smallShapes;
        TorchKernel large = seedKernel(spec, *tuned);
        large.label = "long rows";
        large.knobs["UNROLL"] = "4";
        large.shapes = spec.benchShapes;
        // A configuration that refuses every shape with more than 64 columns: the op must fall
        // back to another for those.
        TorchKernel picky;
        picky.sourceName = "picky.cpp";
        picky.sourceText = "#include <hone/kernel.h>\n#include <cmath>\n"
                           "extern \"C\" int hone_run(const hone_args* a)\n{\n"
                           "    const long M = (long)hone_param_or(a, \"M\", 0), N = (long)hone_param_or(a, \"N\", 0);\n"
                           "    if (N > 64) return 7;\n"
                           "    const float* x = (const float*)a->inputs[0].data; float* y = (float*)a->outputs[0].data;\n"
                           "    for (long i = 0; i < M; ++i) { double m = -INFINITY, s = 0;\n"
                           "        for (long j = 0; j < N; ++j) m = std::fmax(m, x[i * N + j]);\n"
                           "        for (long j = 0; j < N; ++j) s += std::exp(x[i * N + j] - m);\n"
                           "        for (long j = 0; j < N; ++j) y[i * N + j] = (float)(std::exp(x[i * N + j] - m) / s); }\n"
                           "    return 0;\n}\n";
        picky.label = "picky";
        picky.shapes = { { { "M", 5 }, { "N", 5000 } } }; // chosen for a shape it then refuses
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        const TorchPackage p = writeTorchPackage(spec, { small, large, picky }, "cpp", kernelHeaderText(), dir);
        QCOMPARE(p.signature.schema, std::string("softmax(Tensor x) -> Tensor"));
        // Which configuration serves which shape (symbols in problem.json's order: M, N).
        std::ofstream(dir / "test_dispatch.py") << R"py(
import json, os, sys, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hone_softmax
op = hone_softmax.load()
cfg = torch.ops.hone.softmax_config
assert json.load(open("problem.json"))["symbols"] == ["M", "N"]

def test_table_shapes_get_their_configuration():
    assert cfg([64, 1000]) == 0       # small shapes
    assert cfg([7, 33]) == 0
    assert cfg([2048, 1024]) == 1     # the bench shape
    assert cfg([5, 5000]) == 2        # the picky one's shape

def test_unseen_shapes_get_the_nearest():
    assert cfg([60, 900]) == 0
    assert cfg([4000, 1000]) == 1

def test_refused_shape_falls_back():
    x = torch.randn(5, 5000)
    torch.testing.assert_close(op(x), torch.softmax(x.double(), -1).float(), rtol=1e-4, atol=1e-7)
)py";
        const PytestResult t = pytest(dir);
        QVERIFY2(t.code == 0 && t.failed == 0, qPrintable(t.out));
        QVERIFY2(t.passed >= 3 + 7, qPrintable(t.out)); // dispatch tests and the package's own
    }
};

QTEST_GUILESS_MAIN(TestExportTorch)
#include "tst_export_torch.moc"
