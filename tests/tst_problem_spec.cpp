#include "core/engine.h"
#include "core/knobs.h"
#include "core/problem_spec.h"
#include "core/sha256.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hone::core;

namespace {

// Line numbers matter: the malformed cases below point into this text.
const char* const kGood = R"(name = "softmax"
family = "softmax"
description = "Row softmax."

[[inputs]]
name = "x"
dtype = "f32"
shape = ["M", "N"]
init = { dist = "normal", mean = 0.0, std = "N / 250" }

[[inputs]]
name = "lengths"
dtype = "i32"
shape = ["M"]
init = { dist = "randint", low = 1, high = "N + 1" }

[[outputs]]
name = "y"
dtype = "f32"
shape = ["M", "N"]

[params]
eps = 1e-5

[shapes]
small = [ { M = 7, N = 33 }, { M = 64, N = 1000 } ]
bench = [ { M = 4096, N = 2048 } ]

[cost]
flops = "5 * M * N"
bytes = "8 * M * N + 4 * M"

[tolerance]
f32 = { atol = 1e-6, rtol = 1e-4 }

[libraries]
allowed = ["cublas"]
)";

QString dataDir()
{
    return QStringLiteral(HONE_TEST_DATA "/problems");
}

std::string readText(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

class TestProblemSpec : public QObject {
    Q_OBJECT

private slots:
    void parsesGoodProblem()
    {
        const ProblemSpec spec = parseProblemToml(kGood, "problem.toml");
        QCOMPARE(spec.name, std::string("softmax"));
        QCOMPARE(spec.family, std::string("softmax"));
        QCOMPARE(spec.description, std::string("Row softmax."));
        QCOMPARE(spec.baseline, std::string()); // chosen by loadProblem from the seeds
        QCOMPARE(spec.inputs.size(), size_t(2));
        QCOMPARE(spec.inputs[0].name, std::string("x"));
        QCOMPARE(spec.inputs[0].dtype, HONE_F32);
        QCOMPARE(spec.inputs[0].shape.size(), size_t(2));
        QCOMPARE(spec.inputs[0].shape[1].symbol, std::string("N"));
        QCOMPARE(spec.inputs[0].init.dist, std::string("normal"));
        QCOMPARE(spec.inputs[0].init.args.at("std").text(), std::string("N / 250"));
        QCOMPARE(spec.inputs[1].dtype, HONE_I32);
        QCOMPARE(spec.inputs[1].init.dist, std::string("randint"));
        QCOMPARE(spec.outputs.size(), size_t(1));
        QCOMPARE(spec.outputs[0].name, std::string("y"));
        QCOMPARE(spec.params.at("eps"), 1e-5);
        QCOMPARE(spec.smallShapes.size(), size_t(2));
        QCOMPARE(spec.smallShapes[1].at("N"), int64_t(1000));
        QCOMPARE(spec.benchShapes.size(), size_t(1));
        QCOMPARE(spec.benchShapes[0].at("M"), int64_t(4096));
        QCOMPARE(spec.flops.text(), std::string("5 * M * N"));
        QCOMPARE(spec.tolerance.size(), size_t(1));
        QCOMPARE(spec.tolerance.at(HONE_F32).atol, 1e-6);
        QCOMPARE(spec.tolerance.at(HONE_F32).rtol, 1e-4);
        QCOMPARE(spec.allowedLibraries, std::vector<std::string> { "cublas" });
    }

    void resolvesShape()
    {
        const ProblemSpec spec = parseProblemToml(kGood, "problem.toml");
        const nlohmann::json got = resolveShape(spec, spec.smallShapes[1], "small[1]");
        const nlohmann::json want = nlohmann::json::parse(R"({
            "label": "small[1]",
            "symbols": {"M": 64, "N": 1000},
            "flops": 320000.0,
            "bytes": 512256.0,
            "compute": "fma",
            "inputs": [
                {"name": "x", "dtype": "f32", "shape": [64, 1000],
                 "init": {"dist": "normal", "mean": 0.0, "std": 4}},
                {"name": "lengths", "dtype": "i32", "shape": [64],
                 "init": {"dist": "randint", "low": 1, "high": 1001}}
            ],
            "outputs": [{"name": "y", "dtype": "f32", "shape": [64, 1000]}]
        })");
        QCOMPARE(QString::fromStdString(got.dump()), QString::fromStdString(want.dump()));
        // Integer expressions stay integers (C division), decimals stay decimals.
        QVERIFY(got["inputs"][0]["init"]["std"].is_number_integer());
        QVERIFY(got["inputs"][0]["init"]["mean"].is_number_float());
        QVERIFY(got["flops"].is_number_float());
    }

    void resolvesDefaultsAndOffsets()
    {
        const ProblemSpec spec = parseProblemToml(R"toml(name = "segment_sum"
family = "segment_reduce"
[[inputs]]
name = "values"
dtype = "bf16"
shape = ["E", 4]
[[inputs]]
name = "ids"
dtype = "u8"
shape = ["E"]
[[inputs]]
name = "row_ptr"
dtype = "i64"
shape = ["R"]
init = { dist = "offsets", total = "E" }
[[inputs]]
name = "scale"
dtype = "f64"
shape = [1]
init = { dist = "uniform", low = "-alpha", high = "alpha * log2(E)" }
[[outputs]]
name = "sums"
dtype = "bf16"
shape = ["R", 4]
[params]
alpha = 0.5
[shapes]
small = [ { E = 1024, R = 9 } ]
bench = [ { E = 65536, R = 513 } ]
[cost]
flops = 0
bytes = "ceil_div(E, 128) * 128 * 2"
[tolerance]
bf16 = { atol = 1e-2, rtol = 1e-2 }
)toml",
            "problem.toml");
        const nlohmann::json got = resolveShape(spec, spec.benchShapes[0], "bench[0]");
        const nlohmann::json want = nlohmann::json::parse(R"({
            "label": "bench[0]",
            "symbols": {"E": 65536, "R": 513},
            "flops": 0.0,
            "bytes": 131072.0,
            "compute": "fma",
            "inputs": [
                {"name": "values", "dtype": "bf16", "shape": [65536, 4],
                 "init": {"dist": "normal", "mean": 0.0, "std": 1.0}},
                {"name": "ids", "dtype": "u8", "shape": [65536],
                 "init": {"dist": "randint", "low": 0, "high": 100}},
                {"name": "row_ptr", "dtype": "i64", "shape": [513],
                 "init": {"dist": "offsets", "total": 65536}},
                {"name": "scale", "dtype": "f64", "shape": [1],
                 "init": {"dist": "uniform", "low": -0.5, "high": 8.0}}
            ],
            "outputs": [{"name": "sums", "dtype": "bf16", "shape": [513, 4]}]
        })");
        QCOMPARE(QString::fromStdString(got.dump()), QString::fromStdString(want.dump()));
    }

    void resolvesProblem()
    {
        ProblemSpec spec = parseProblemToml(kGood, "problem.toml");
        spec.referenceSource = "int hone_run(const hone_args*) { return 0; }";
        const nlohmann::json p = resolveProblem(spec);
        QCOMPARE(p["name"], "softmax");
        QCOMPARE(p["family"], "softmax");
        QCOMPARE(p["reference"], nlohmann::json({ { "lang", "cpp" }, { "source", spec.referenceSource } }));
        QCOMPARE(p["params"], nlohmann::json({ { "eps", 1e-5 } }));
        QCOMPARE(p["tolerance"], nlohmann::json::parse(R"({"f32":{"atol":1e-6,"rtol":1e-4}})"));
        QCOMPARE(p["check"].size(), size_t(2));
        QCOMPARE(p["check"][0]["label"], "small[0]");
        QCOMPARE(p["check"][0]["flops"], 5.0 * 7 * 33);
        QCOMPARE(p["check"][1]["label"], "small[1]");
        QCOMPARE(p["bench"].size(), size_t(1));
        QCOMPARE(p["bench"][0]["label"], "bench[0]");
        QCOMPARE(p["bench"][0]["inputs"][0]["shape"], nlohmann::json({ 4096, 2048 }));
        QCOMPARE(p["bench"][0]["inputs"][0]["init"]["std"], 8); // 2048 / 250 in integers
    }

    void resolvesSortedInitAndComputeUnit()
    {
        QString text = QString::fromUtf8(kGood);
        text.replace("[[outputs]]",
            "[[inputs]]\nname = \"edges\"\ndtype = \"f32\"\nshape = [\"N\"]\n"
            "init = { dist = \"uniform\", low = -1.0, high = 1.0, sorted = true }\n\n[[outputs]]");
        text.replace("bytes = \"8 * M * N + 4 * M\"", "bytes = \"8 * M * N + 4 * M\"\ncompute = \"tensor\"");
        ProblemSpec spec = parseProblemToml(text.toStdString(), "problem.toml");
        spec.referenceSource = "int hone_run(const hone_args*) { return 0; }";
        QCOMPARE(spec.computeUnit, std::string("tensor"));
        const nlohmann::json p = resolveProblem(spec);
        QCOMPARE(p["bench"][0]["compute"], "tensor");
        QCOMPARE(p["bench"][0]["inputs"][2]["init"]["sorted"], true);
        QVERIFY(!p["bench"][0]["inputs"][0]["init"].contains("sorted"));
        QCOMPARE(p["libraries"], nlohmann::json({ "cublas" }));
        // Without the key: the FMA ceiling.
        QCOMPARE(parseProblemToml(kGood, "problem.toml").computeUnit, std::string("fma"));
    }

    void rejectsMalformed_data()
    {
        QTest::addColumn<QString>("from");
        QTest::addColumn<QString>("to");
        QTest::addColumn<QString>("message");

        const QString dtypes = "one of f32, f16, bf16, f64, i32, i64, u8";
        // One row per case reads as a table, so the formatter leaves these alone.
        // clang-format off
        QTest::addRow("toml syntax error")
            << "name = \"x\"\n" << "name = \"x\n"
            << "problem.toml:6:10: field '': Error while parsing string: unescaped control characters "
               "other than TAB (U+0009) are explicitly prohibited; expected valid TOML";
        QTest::addRow("toml duplicate key")
            << "dtype = \"f32\"\nshape = [\"M\", \"N\"]\ninit" << "dtype = \"f32\"\ndtype = \"f16\"\ninit"
            << "problem.toml:8:9: field '': Error while parsing key-value pair: cannot redefine existing "
               "string 'dtype'; expected valid TOML";
        QTest::addRow("unknown dtype")
            << "dtype = \"f32\"\nshape = [\"M\", \"N\"]\ninit" << "dtype = \"f33\"\nshape = [\"M\", \"N\"]\ninit"
            << "problem.toml:7:9: field 'inputs[0].dtype': unknown dtype 'f33'; expected " + dtypes;
        QTest::addRow("missing name")
            << "name = \"softmax\"\n" << ""
            << "problem.toml:1:1: field 'name': missing required key; expected a string of [a-z0-9_]+";
        QTest::addRow("bad name chars")
            << "name = \"softmax\"" << "name = \"Soft-Max\""
            << "problem.toml:1:8: field 'name': invalid name 'Soft-Max'; expected only lower-case letters, "
               "digits and '_' ([a-z0-9_]+)";
        QTest::addRow("name not a string")
            << "name = \"softmax\"" << "name = 7"
            << "problem.toml:1:8: field 'name': found an integer; expected a string of [a-z0-9_]+";
        QTest::addRow("unknown top-level key")
            << "description =" << "descripton ="
            << "problem.toml:3:1: field 'descripton': unknown key 'descripton'; expected one of name, family, "
               "description, baseline, inputs, outputs, params, shapes, cost, tolerance, libraries, check";
        QTest::addRow("duplicate tensor name")
            << "name = \"y\"" << "name = \"x\""
            << "problem.toml:18:8: field 'outputs[0].name': duplicate tensor name 'x' (also inputs[0].name); "
               "expected names unique across inputs and outputs";
        QTest::addRow("tensor name not an identifier")
            << "name = \"lengths\"" << "name = \"2lengths\""
            << "problem.toml:12:8: field 'inputs[1].name': invalid tensor name '2lengths'; expected a C identifier";
        QTest::addRow("unknown key typo")
            << "shape = [\"M\", \"N\"]\ninit" << "shpe = [\"M\", \"N\"]\ninit"
            << "problem.toml:8:1: field 'inputs[0].shpe': unknown key 'shpe'; expected one of name, dtype, shape, init";
        QTest::addRow("init on an output")
            << "shape = [\"M\", \"N\"]\n\n[params]" << "shape = [\"M\", \"N\"]\ninit = { dist = \"normal\" }\n[params]"
            << "problem.toml:21:1: field 'outputs[0].init': unknown key 'init'; expected one of name, dtype, shape";
        QTest::addRow("rank above 8")
            << "shape = [\"M\", \"N\"]\ninit" << "shape = [\"M\", \"N\", 1, 1, 1, 1, 1, 1, 1]\ninit"
            << "problem.toml:8:9: field 'inputs[0].shape': rank 9 is too high; expected at most 8 dimensions";
        QTest::addRow("empty shape")
            << "shape = [\"M\"]" << "shape = []"
            << "problem.toml:14:9: field 'inputs[1].shape': empty shape; expected at least one dimension "
               "(use [1] for a scalar)";
        QTest::addRow("zero fixed extent")
            << "shape = [\"M\"]" << "shape = [\"M\", 0]"
            << "problem.toml:14:15: field 'inputs[1].shape[1]': extent 0 is not positive; expected a positive integer";
        QTest::addRow("shape symbol not bound")
            << "{ M = 64, N = 1000 }" << "{ M = 64 }"
            << "problem.toml:26:30: field 'shapes.small[1].N': missing extent for symbol 'N' (used by "
               "inputs[0].shape[1]); expected a positive integer for every symbol in use (M, N)";
        QTest::addRow("empty small set")
            << "small = [ { M = 7, N = 33 }, { M = 64, N = 1000 } ]" << "small = []"
            << "problem.toml:26:9: field 'shapes.small': empty array; expected a non-empty array of tables "
               "such as [ { M = 64, N = 128 } ]";
        QTest::addRow("missing bench set")
            << "bench = [ { M = 4096, N = 2048 } ]\n" << ""
            << "problem.toml:25:1: field 'shapes.bench': missing required key; expected a non-empty array of "
               "tables such as [ { M = 64, N = 128 } ] (or production = \"trace.csv\")";
        QTest::addRow("negative extent")
            << "{ M = 7, N = 33 }" << "{ M = -7, N = 33 }"
            << "problem.toml:26:17: field 'shapes.small[0].M': extent -7 is not positive; expected a positive integer";
        QTest::addRow("decimal extent")
            << "{ M = 4096, N = 2048 }" << "{ M = 4096, N = 2048.5 }"
            << "problem.toml:27:27: field 'shapes.bench[0].N': found a float; expected a positive integer";
        QTest::addRow("bad cost expression")
            << "flops = \"5 * M * N\"" << "flops = \"5 * (M * N\""
            << "problem.toml:30:9: field 'cost.flops': expected ')' at column 11; expected an expression over "
               "shape symbols and params";
        QTest::addRow("cost expression with unknown symbol")
            << "flops = \"5 * M * N\"" << "flops = \"5 * M * K\""
            << "problem.toml:30:9: field 'cost.flops': unknown symbol 'K'; expected a shape symbol (M, N) or "
               "a param (eps)";
        QTest::addRow("missing cost bytes")
            << "bytes = \"8 * M * N + 4 * M\"\n" << ""
            << "problem.toml:29:1: field 'cost.bytes': missing required key; expected an expression over shape "
               "symbols and params";
        QTest::addRow("missing tolerance for an output dtype")
            << "dtype = \"f32\"\nshape = [\"M\", \"N\"]\n\n" << "dtype = \"f16\"\nshape = [\"M\", \"N\"]\n\n"
            << "problem.toml:33:1: field 'tolerance.f16': missing tolerance for outputs[0] (f16); expected a "
               "table { atol = ..., rtol = ... }";
        QTest::addRow("zero tolerance for a float dtype")
            << "atol = 1e-6, rtol = 1e-4" << "atol = 0, rtol = 0.0"
            << "problem.toml:34:7: field 'tolerance.f32': atol and rtol are both 0; expected a positive atol or "
               "rtol for a float dtype";
        QTest::addRow("negative tolerance")
            << "rtol = 1e-4" << "rtol = -1e-4"
            << "problem.toml:34:29: field 'tolerance.f32.rtol': tolerance -1e-04 is not a finite number >= 0; "
               "expected a number >= 0";
        QTest::addRow("randint on a float tensor")
            << "dist = \"normal\", mean = 0.0, std = \"N / 250\"" << "dist = \"randint\", low = 0, high = 9"
            << "problem.toml:9:17: field 'inputs[0].init.dist': 'randint' does not fit inputs[0] (f32, rank 2); "
               "expected one of normal, uniform for f32";
        QTest::addRow("offsets on a rank-2 int tensor")
            << "shape = [\"M\"]\ninit = { dist = \"randint\", low = 1, high = \"N + 1\" }"
            << "shape = [\"M\", \"N\"]\ninit = { dist = \"offsets\", total = \"M * N\" }"
            << "problem.toml:15:17: field 'inputs[1].init.dist': 'offsets' does not fit inputs[1] (i32, rank 2); "
               "expected one of uniform, randint for i32 with rank 2";
        QTest::addRow("unknown init key")
            << "std = \"N / 250\"" << "sd = \"N / 250\""
            << "problem.toml:9:39: field 'inputs[0].init.sd': unknown key 'sd'; expected one of dist, mean, std";
        QTest::addRow("missing randint bound")
            << "low = 1, high = \"N + 1\"" << "low = 1"
            << "problem.toml:15:8: field 'inputs[1].init.high': missing required key; expected a number or an "
               "expression string";
        QTest::addRow("init divides by zero for a shape")
            << "std = \"N / 250\"" << "std = \"N / (N - 33)\""
            << "problem.toml:9:45: field 'inputs[0].init.std': division by zero with shapes.small[0]; expected "
               "an expression valid for every shape";
        QTest::addRow("empty randint range for a shape")
            << "high = \"N + 1\"" << "high = \"N - 900\""
            << "problem.toml:15:44: field 'inputs[1].init.high': high is not above low with shapes.small[0]; "
               "expected high > low";
        QTest::addRow("param not a number")
            << "eps = 1e-5" << "eps = \"1e-5\""
            << "problem.toml:23:7: field 'params.eps': found a string; expected a number";
        QTest::addRow("shape symbol that is a param")
            << "{ M = 4096, N = 2048 }" << "{ M = 4096, N = 2048, eps = 3 }"
            << "problem.toml:27:33: field 'shapes.bench[0].eps': symbol 'eps' is also a param; expected distinct "
               "names for shape symbols and params";
        QTest::addRow("missing outputs")
            << "[[outputs]]\nname = \"y\"\ndtype = \"f32\"\nshape = [\"M\", \"N\"]\n" << ""
            << "problem.toml:1:1: field 'outputs': missing required key; expected an array of tables ([[outputs]])";
        QTest::addRow("outputs as a single table")
            << "[[outputs]]" << "[outputs]"
            << "problem.toml:17:1: field 'outputs': found a table; expected an array of tables ([[outputs]])";
        QTest::addRow("unknown compute unit")
            << "bytes = \"8 * M * N + 4 * M\"" << "bytes = \"8 * M * N + 4 * M\"\ncompute = \"gpu\""
            << "problem.toml:32:11: field 'cost.compute': unknown compute unit 'gpu'; expected \"fma\" or \"tensor\"";
        QTest::addRow("sorted on a rank-2 tensor")
            << "std = \"N / 250\"" << "std = \"N / 250\", sorted = true"
            << "problem.toml:9:56: field 'inputs[0].init.sorted': unknown key 'sorted'; expected one of dist, mean, std";
        QTest::addRow("libraries not strings")
            << "allowed = [\"cublas\"]" << "allowed = [\"cublas\", 3]"
            << "problem.toml:37:22: field 'libraries.allowed[1]': found an integer; expected a non-empty library name";
        // clang-format on
    }

    void rejectsMalformed()
    {
        QFETCH(QString, from);
        QFETCH(QString, to);
        QFETCH(QString, message);
        QString text = QString::fromUtf8(kGood);
        QVERIFY2(text.count(from) == 1, "the edit must match exactly once in kGood");
        text.replace(from, to);
        try {
            parseProblemToml(text.toStdString(), "problem.toml");
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), message);
        }
    }

    // [check] (issue 18, class 9): extra distributions and shape ranges for the checks.
    void readsCheckSection()
    {
        const std::string text = std::string(kGood) + R"(
[check]
shapes = 5
ranges = { M = [1, 64], N = { min = 8, max = 4096, multiple_of = 4 } }
require = [ "M * N <= 65536" ]
distributions = [
  { name = "large", scale = 30.0 },
  { name = "negative", inputs = ["x"], sign = "negative", shift = -1 },
  { name = "flat", constant = "rows" },
]
)";
        const ProblemSpec spec = parseProblemToml(text, "problem.toml");
        const CheckCoverage& c = spec.coverage;
        QCOMPARE(c.randomShapes, 5);
        QCOMPARE(c.ranges.size(), size_t(2));
        QCOMPARE(c.ranges[1].multipleOf, int64_t(4));
        QCOMPARE(c.distributions.size(), size_t(3));
        QCOMPARE(c.distributions[0].scale, 30.0);
        QVERIFY(c.distributions[1].sign == SignTransform::Negative);
        QCOMPARE(c.distributions[1].shift, -1.0);
        QVERIFY(c.distributions[2].constant == ConstantTransform::Rows);

        // What the worker gets: the same coverage, with the symbolic shapes to resolve draws with.
        const nlohmann::json problem = resolveProblem(spec);
        const CheckCoverage sent = CheckCoverage::fromJson(problem["coverage"], "problem.coverage");
        QCOMPARE(sent.toJson(), problem["coverage"]);
        const auto drawn = sent.drawShapes(42, spec.smallShapes, spec.params);
        QCOMPARE(drawn.size(), size_t(5));
        QCOMPARE(sent.drawShapes(42, spec.smallShapes, spec.params), drawn); // a function of the seed
        QVERIFY(sent.drawShapes(43, spec.smallShapes, spec.params) != drawn);
        for (const auto& b : drawn) {
            QVERIFY(b.at("M") >= 1 && b.at("M") <= 64);
            QVERIFY(b.at("N") >= 8 && b.at("N") <= 4096 && b.at("N") % 4 == 0);
            QVERIFY(b.at("M") * b.at("N") <= 65536);
            QVERIFY(std::find(spec.smallShapes.begin(), spec.smallShapes.end(), b) == spec.smallShapes.end());
            // Resolved exactly as the engine resolves a listed shape.
            QCOMPARE(sent.shape.resolve(b, spec.params, "r"), resolveShape(spec, b, "r"));
        }
        QVERIFY(!resolveProblem(parseProblemToml(kGood, "problem.toml")).contains("coverage"));
    }

    void readsDerivedSymbols()
    {
        std::string text = QString::fromUtf8(kGood)
                               .replace("shape = [\"M\"]\ninit", "shape = [\"M1\"]\ninit")
                               .replace("{ M = 7, N = 33 }, { M = 64, N = 1000 }", "{ M = 7, M1 = 8, N = 33 }")
                               .replace("{ M = 4096, N = 2048 }", "{ M = 4096, M1 = 4097, N = 2048 }")
                               .toStdString();
        text += "\n[check]\nranges = { M1 = \"M + 1\", M = [1, 9], N = [1, 50] }\n";
        const ProblemSpec spec = parseProblemToml(text, "problem.toml");
        QCOMPARE(spec.coverage.randomShapes, 2); // the default with ranges
        for (const auto& b : spec.coverage.drawShapes(7, spec.smallShapes, spec.params))
            QCOMPARE(b.at("M1"), b.at("M") + 1);
    }

    void rejectsBadCheckSection_data()
    {
        QTest::addColumn<QString>("check");
        QTest::addColumn<QString>("message");
        // kGood ends on line 37; [check] is line 39, the next line 40.
        // clang-format off
        QTest::addRow("unknown key") << "ranges = { M = [1, 9], N = [1, 9] }\nshape = 3"
            << "problem.toml:41:1: field 'check.shape': unknown key 'shape'; expected one of shapes, ranges, require, distributions";
        QTest::addRow("symbol not in the problem") << "ranges = { M = [1, 9], N = [1, 9], K = [1, 2] }"
            << "problem.toml:40:36: field 'check.ranges.K': 'K' is not a shape symbol of this problem; expected one of the symbols the small shapes bind (M, N)";
        QTest::addRow("symbol without a range") << "ranges = { M = [1, 9] }"
            << "problem.toml:40:10: field 'check.ranges.N': no range for symbol 'N'; expected a range or an expression for every symbol of the listed shapes (M, N)";
        QTest::addRow("max below min") << "ranges = { M = [9, 1], N = [1, 9] }"
            << "problem.toml:40:16: field 'check.ranges.M': max 1 is below min 9; expected min <= max";
        QTest::addRow("zero extent") << "ranges = { M = [0, 9], N = [1, 9] }"
            << "problem.toml:40:17: field 'check.ranges.M[0]': extent 0 is not positive; expected a positive integer";
        QTest::addRow("no multiple in the range") << "ranges = { M = [1, 9], N = { min = 5, max = 7, multiple_of = 8 } }"
            << "problem.toml:40:28: field 'check.ranges.N': no multiple of 8 in [5, 7]; expected a range that holds a multiple of multiple_of";
        QTest::addRow("shapes without ranges") << "shapes = 3"
            << "problem.toml:40:10: field 'check.shapes': random shapes without ranges; expected check.ranges = { SYMBOL = [min, max], ... } to draw them from";
        QTest::addRow("too many shapes") << "ranges = { M = [1, 9], N = [1, 9] }\nshapes = 100"
            << "problem.toml:41:10: field 'check.shapes': value 100; expected an integer in [0, 16]: random shapes drawn per evaluation";
        QTest::addRow("require nothing meets") << "ranges = { M = [1, 9], N = [1, 9] }\nrequire = [\"M > 100\"]"
            << "problem.toml:40:10: field 'check.ranges': 1000 draws from the [check] ranges found no shape that meets every require and differs from the listed ones; widen the ranges; expected ranges whose derived symbols stay positive and where every require can hold";
        QTest::addRow("distribution on an integer input") << "distributions = [ { name = \"neg\", inputs = [\"lengths\"], sign = \"negative\" } ]"
            << "problem.toml:40:45: field 'check.distributions[0].inputs[0]': 'lengths' is not a float input; expected an array of float input names (x); integer inputs (indices, offsets) keep their init";
        QTest::addRow("distribution that changes nothing") << "distributions = [ { name = \"same\" } ]"
            << "problem.toml:40:19: field 'check.distributions[0]': distribution 'same' changes nothing; expected at least one of scale, shift, sign = \"negative\"|\"positive\", constant = \"rows\"|\"all\"";
        QTest::addRow("unknown sign") << "distributions = [ { name = \"neg\", sign = \"minus\" } ]"
            << "problem.toml:40:42: field 'check.distributions[0].sign': unknown value 'minus'; expected one of keep, negative, positive";
        QTest::addRow("two distributions of one name") << "distributions = [ { name = \"a\", scale = 2 }, { name = \"a\", shift = 1 } ]"
            << "problem.toml:40:55: field 'check.distributions[1].name': a second distribution named 'a'; expected distinct names";
        QTest::addRow("derived symbol that refers to itself") << "ranges = { M = \"M + 1\", N = [1, 9] }"
            << "problem.toml:40:16: field 'check.ranges.M': 'M + 1' refers to a symbol without a value, or derived symbols refer to each other; expected an expression over ranged symbols, earlier derived symbols and params";
        // clang-format on
    }

    void rejectsBadCheckSection()
    {
        QFETCH(QString, check);
        QFETCH(QString, message);
        const std::string text = std::string(kGood) + "\n[check]\n" + check.toStdString() + "\n";
        try {
            parseProblemToml(text, "problem.toml");
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), message);
        }
    }

    void errorCarriesItsParts()
    {
        try {
            parseProblemToml(
                QString::fromUtf8(kGood).replace("\"f32\"\nshape", "\"f33\"\nshape").toStdString(),
                "problems/softmax/problem.toml");
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            QCOMPARE(e.file(), std::string("problems/softmax/problem.toml"));
            QCOMPARE(e.line(), 7);
            QCOMPARE(e.column(), 9);
            QCOMPARE(e.field(), std::string("inputs[0].dtype"));
        }
    }

    // Every bundled problem loads, resolves for every shape, and every seed's knob space has an
    // admissible entry point: the suites cannot rot without CI noticing, GPU or not.
    void bundledProblemsAreValid_data()
    {
        QTest::addColumn<QString>("dir");
        for (const char* suite : { "cpu", "ads" }) {
            const std::filesystem::path root = std::filesystem::path(HONE_SOURCE_DIR) / "resources" / "problems" / suite;
            std::vector<std::filesystem::path> dirs;
            for (const auto& e : std::filesystem::directory_iterator(root))
                dirs.push_back(e.path());
            std::sort(dirs.begin(), dirs.end());
            for (const auto& d : dirs)
                QTest::addRow("%s/%s", suite, d.filename().string().c_str()) << QString::fromStdString(d.string());
        }
    }
    void bundledProblemsAreValid()
    {
        QFETCH(QString, dir);
        const ProblemSpec spec = loadProblem(dir.toStdString());
        const nlohmann::json p = resolveProblem(spec);
        QVERIFY(!p["check"].empty());
        QVERIFY(p["bench"][0]["bytes"].get<double>() > 0);
        // Every bundled problem declares its check coverage (issue 18, class 9), and its draws
        // resolve in the worker's form.
        QVERIFY2(!spec.coverage.ranges.empty() && spec.coverage.randomShapes > 0, "no [check] ranges");
        const CheckCoverage sent = CheckCoverage::fromJson(p["coverage"], "problem.coverage");
        for (uint64_t seed = 1; seed <= 20; ++seed)
            for (const auto& b : sent.drawShapes(seed, spec.smallShapes, spec.params))
                QCOMPARE(sent.shape.resolve(b, spec.params, "r"), resolveShape(spec, b, "r"));
        const std::string target = resolveTarget(spec, "auto");
        QVERIFY(target == "cpu" || target == "cuda");
        for (const Seed& s : spec.seeds) {
            const KnobSpace space = parseKnobSpace(s.source, s.fileName);
            QVERIFY2(space.empty() || space.initial().has_value(), s.fileName.c_str());
            QVERIFY2(checkFlags(space.flags, s.lang).empty(), s.fileName.c_str());
        }
    }

    void loadsProblemFolder()
    {
        const std::filesystem::path dir = (dataDir() + "/good_scale").toStdString();
        const ProblemSpec spec = loadProblem(dir);
        QCOMPARE(spec.name, std::string("scale"));
        QCOMPARE(spec.dir, dir);
        QCOMPARE(spec.seeds.size(), size_t(2));
        QCOMPARE(spec.seeds[0].fileName, std::string("naive.cpp"));
        QCOMPARE(spec.seeds[0].lang, std::string("cpp"));
        QCOMPARE(spec.seeds[1].fileName, std::string("vec.cu"));
        QCOMPARE(spec.seeds[1].lang, std::string("cuda"));
        QCOMPARE(spec.seeds[1].source, readText(dir / "seeds/vec.cu"));
        QCOMPARE(spec.referenceSource, readText(dir / "reference.cpp"));
        QVERIFY(spec.baselineSeed() == &spec.seeds[0]);

        // The hash covers every file, each framed by its name and length.
        std::string data;
        auto part = [&](const std::string& name, const std::string& text) {
            data += name + '\0' + std::to_string(text.size()) + '\0' + text;
        };
        part("problem.toml", readText(dir / "problem.toml"));
        part("reference.cpp", spec.referenceSource);
        part("seeds/naive.cpp", spec.seeds[0].source);
        part("seeds/vec.cu", spec.seeds[1].source);
        QCOMPARE(spec.contentHash, sha256Hex(data));
        QCOMPARE(spec.contentHash.size(), size_t(64));

        const nlohmann::json p = resolveProblem(spec);
        QCOMPARE(p["reference"]["source"], spec.referenceSource);
        QCOMPARE(p["bench"][0]["bytes"], 8.0 * 1048576);
    }

    void defaultsBaselineToFirstSeed()
    {
        const ProblemSpec spec = loadProblem((dataDir() + "/no_baseline_named").toStdString());
        QCOMPARE(spec.baseline, std::string("blocked.cpp")); // no naive.cpp: first by name
        QCOMPARE(spec.seeds.size(), size_t(2));
    }

    void rejectsBadFolder_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("message");

        const QString d = dataDir();
        // clang-format off
        QTest::addRow("missing reference.cpp")
            << "missing_reference"
            << d + "/missing_reference/reference.cpp:1:1: field '': cannot read the file; expected a CPU reference "
                   "implementing resources/include/hone/kernel.h, or a PyTorch reference.py";
        QTest::addRow("bad seed extension")
            << "bad_seed_extension"
            << d + "/bad_seed_extension/seeds/notes.txt:1:1: field '': unknown seed extension '.txt'; expected seed "
                   "files ending in .cpp, .cu or .hip";
        QTest::addRow("baseline names a missing seed")
            << "missing_baseline"
            << d + "/missing_baseline/problem.toml:4:12: field 'baseline': no seed named 'fast.cpp' in seeds/; "
                   "expected one of naive.cpp";
        QTest::addRow("no such folder")
            << "does_not_exist"
            << d + "/does_not_exist/problem.toml:1:1: field '': cannot read the file; expected a problem folder "
                   "with problem.toml, reference.cpp and seeds/";
        // clang-format on
    }

    void rejectsBadFolder()
    {
        QFETCH(QString, folder);
        QFETCH(QString, message);
        try {
            loadProblem((dataDir() + "/" + folder).toStdString());
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), message);
        }
    }

    /// Sources travel to the worker as JSON text: a seed that is not UTF-8 is named with the line
    /// and column of its first bad byte, instead of failing later at every evaluation.
    void rejectsSeedThatIsNotUtf8()
    {
        QTemporaryDir tmp;
        const auto dir = std::filesystem::path(tmp.path().toStdString()) / "scale";
        std::filesystem::copy((dataDir() + "/scale").toStdString(), dir, std::filesystem::copy_options::recursive);
        std::ofstream(dir / "seeds" / "latin1.cpp", std::ios::binary) << "int a;\n// caf\xE9 au lait\n";
        try {
            loadProblem(dir);
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            QCOMPARE(QString::fromUtf8(e.what()),
                QString::fromStdString((dir / "seeds" / "latin1.cpp").string())
                    + ":2:7: field '': not valid UTF-8 (byte 0xe9); expected source text saved as UTF-8");
        }
    }

    void dtypeHelpers()
    {
        for (const char* name : { "f32", "f16", "bf16", "f64", "i32", "i64", "u8" })
            QCOMPARE(dtypeName(*dtypeFromName(name)), name);
        QVERIFY(!dtypeFromName("f33"));
        QCOMPARE(dtypeSize(HONE_BF16), size_t(2));
        QCOMPARE(dtypeSize(HONE_I64), size_t(8));
        QCOMPARE(dtypeSize(HONE_U8), size_t(1));
        QVERIFY(isFloat(HONE_F16));
        QVERIFY(!isFloat(HONE_I32));
    }
};

QTEST_GUILESS_MAIN(TestProblemSpec)
#include "tst_problem_spec.moc"
