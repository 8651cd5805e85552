// Weighted bench sets and production traces in problem.toml (docs/FORMATS.md, "Shape sets").
#include "core/problem_spec.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace hone::core;

namespace {

// Line 11 holds the shape sets; the malformed cases edit it.
const char* const kProblem = R"(name = "softmax"
family = "softmax"
[[inputs]]
name = "x"
dtype = "f32"
shape = ["M", "N"]
[[outputs]]
name = "y"
dtype = "f32"
shape = ["M", "N"]
[shapes]
small = [ { M = 7, N = 33 } ]
SETS
[cost]
flops = "5 * M * N"
bytes = "8 * M * N"
[tolerance]
f32 = { atol = 1e-6, rtol = 1e-4 }
)";

std::string problemWith(const std::string& sets)
{
    std::string text = kProblem;
    text.replace(text.find("SETS"), 4, sets);
    if (sets.rfind("small", 0) == 0) // the edit brings its own small set
        text.erase(text.find("small = [ { M = 7"), std::string("small = [ { M = 7, N = 33 } ]\n").size());
    return text;
}

/// Parses the problem with `sets` as problem.toml in a fresh folder holding `traceName`.
ProblemSpec parseWithTrace(const QTemporaryDir& dir, const std::string& sets, const std::string& traceName,
    const std::string& trace)
{
    const std::filesystem::path root = dir.path().toStdString();
    std::ofstream(root / traceName, std::ios::binary | std::ios::trunc) << trace;
    return parseProblemToml(problemWith(sets), (root / "problem.toml").string());
}

} // namespace

class TestShapeSets : public QObject {
    Q_OBJECT

private slots:
    void weightsDefaultToOne()
    {
        const ProblemSpec spec = parseProblemToml(
            problemWith("bench = [ { M = 4096, N = 2048 }, { M = 1000, N = 8192, weight = 3.5 } ]"), "problem.toml");
        QCOMPARE(spec.benchShapes.size(), size_t(2));
        QCOMPARE(spec.benchWeights, (std::vector<double> { 1.0, 3.5 }));
        // The weight is no shape symbol: it never reaches the kernel.
        QCOMPARE(spec.benchShapes[1].count("weight"), size_t(0));
        QVERIFY(spec.production.empty());
        const nlohmann::json p = resolveProblem(spec);
        QCOMPARE(p["bench"][1]["symbols"], nlohmann::json({ { "M", 1000 }, { "N", 8192 } }));
    }

    void rejectsBadWeights_data()
    {
        QTest::addColumn<QString>("sets");
        QTest::addColumn<QString>("message");
        // clang-format off
        QTest::addRow("zero weight")
            << "bench = [ { M = 64, N = 128, weight = 0 } ]"
            << "problem.toml:13:39: field 'shapes.bench[0].weight': weight 0 is not positive; expected a positive "
               "number (the shape's share of calls)";
        QTest::addRow("weight as a string")
            << "bench = [ { M = 64, N = 128, weight = \"3\" } ]"
            << "problem.toml:13:39: field 'shapes.bench[0].weight': found a string; expected a positive number "
               "(the shape's share of calls)";
        QTest::addRow("duplicate key")
            << "bench = [ { M = 64, N = 128 } ]\nbench = []"
            << "TOML error";
        QTest::addRow("weight on a check shape")
            << "small = [ { M = 7, N = 33, weight = 2 } ]\nbench = [ { M = 64, N = 128 } ]"
            << "problem.toml:12:28: field 'shapes.small[0].weight': small shapes have no weight; expected weights "
               "on bench shapes only ('weight' is not a shape symbol)";
        QTest::addRow("duplicate bench shape")
            << "bench = [ { M = 64, N = 128 }, { N = 128, M = 64, weight = 2 } ]"
            << "problem.toml:13:32: field 'shapes.bench[1]': the same shape as shapes.bench[0]; expected distinct "
               "bench shapes (give one entry a larger weight instead)";
        QTest::addRow("bench and production")
            << "bench = [ { M = 64, N = 128 } ]\nproduction = \"trace.csv\""
            << "problem.toml:14:14: field 'shapes.production': both bench and production are set; expected "
               "either a weighted bench set or a production trace, not both";
        QTest::addRow("production outside the folder")
            << "production = \"../trace.csv\""
            << "problem.toml:13:14: field 'shapes.production': invalid trace path '../trace.csv'; expected a "
               "trace file next to problem.toml, such as \"trace.csv\"";
        QTest::addRow("neither bench nor production")
            << ""
            << "problem.toml:11:1: field 'shapes.bench': missing required key; expected a non-empty array of "
               "tables such as [ { M = 64, N = 128 } ] (or production = \"trace.csv\")";
        // clang-format on
    }
    void rejectsBadWeights()
    {
        QFETCH(QString, sets);
        QFETCH(QString, message);
        try {
            parseProblemToml(problemWith(sets.toStdString()), "problem.toml");
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            if (message.endsWith("TOML error")) // a duplicate key: toml++ words it
                QVERIFY2(QString::fromUtf8(e.what()).contains("expected valid TOML"), e.what());
            else
                QCOMPARE(QString::fromUtf8(e.what()), message);
        }
    }

    void readsCsvTrace()
    {
        QTemporaryDir dir;
        const ProblemSpec spec = parseWithTrace(dir, "production = \"trace.csv\"", "trace.csv",
            "# rows from a day of serving\n"
            "M, N, count\n"
            "4096, 2048, 120\n"
            "\n"
            "512,1000,30\n"
            "4096,2048,80\n");
        QCOMPARE(spec.production, std::string("trace.csv"));
        // Rows of one shape merge; the first row's order is kept.
        QCOMPARE(spec.benchShapes.size(), size_t(2));
        QCOMPARE(spec.benchShapes[0], (ShapeBinding { { "M", 4096 }, { "N", 2048 } }));
        QCOMPARE(spec.benchShapes[1], (ShapeBinding { { "M", 512 }, { "N", 1000 } }));
        QCOMPARE(spec.benchWeights, (std::vector<double> { 200.0, 30.0 }));
    }

    void readsJsonTrace()
    {
        QTemporaryDir dir;
        const ProblemSpec spec = parseWithTrace(dir, "production = \"trace.json\"", "trace.json",
            R"([ {"M": 128, "N": 8192, "count": 7},
  {"N": 96, "M": 3000, "count": 2.5} ])");
        QCOMPARE(spec.benchShapes.size(), size_t(2));
        QCOMPARE(spec.benchShapes[1], (ShapeBinding { { "M", 3000 }, { "N", 96 } }));
        QCOMPARE(spec.benchWeights, (std::vector<double> { 7.0, 2.5 }));
    }

    void traceChangesTheContentHash()
    {
        QTemporaryDir dir;
        const std::filesystem::path root = dir.path().toStdString();
        std::filesystem::copy(std::filesystem::path(HONE_SOURCE_DIR) / "resources/problems/cpu/softmax", root,
            std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
        std::ifstream in(root / "problem.toml");
        std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const size_t b = toml.find("bench = ");
        toml.replace(b, toml.find('\n', b) - b, "production = \"trace.csv\"");
        std::ofstream(root / "problem.toml", std::ios::trunc) << toml;
        std::ofstream(root / "trace.csv", std::ios::trunc) << "M,N,count\n64,1000,1\n256,128,3\n";
        const ProblemSpec a = loadProblem(root);
        QCOMPARE(a.benchWeights, (std::vector<double> { 1.0, 3.0 }));
        std::ofstream(root / "trace.csv", std::ios::trunc) << "M,N,count\n64,1000,2\n256,128,3\n";
        const ProblemSpec b2 = loadProblem(root);
        QCOMPARE(b2.benchWeights, (std::vector<double> { 2.0, 3.0 }));
        QVERIFY(a.contentHash != b2.contentHash);
    }

    void rejectsBadTraces_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("trace");
        QTest::addColumn<QString>("message");
        // clang-format off
        QTest::addRow("csv row too short")
            << "trace.csv" << "M,N,count\n64,128,1\n64,3\n"
            << "trace.csv:3:1: field '': row has 2 fields, the header 3; expected one value per header column "
               "(M,N,count)";
        QTest::addRow("csv extent not an integer")
            << "trace.csv" << "M,N,count\n64,12.5,1\n"
            << "trace.csv:2:4: field 'N': '12.5' is not a positive integer; expected a positive integer extent for N";
        QTest::addRow("csv zero count")
            << "trace.csv" << "M,N,count\n64,128,0\n"
            << "trace.csv:2:8: field 'count': '0' is not a positive count; expected a positive number of calls";
        QTest::addRow("csv header without count")
            << "trace.csv" << "# shapes\nM,N\n64,128\n"
            << "trace.csv:2:1: field '': the header has no 'count' column; expected a header line of shape "
               "symbols and count, such as \"M,N,count\"";
        QTest::addRow("csv header with a bad name")
            << "trace.csv" << "M,N rows,count\n"
            << "trace.csv:1:3: field '': header column 'N rows' is not a symbol name; expected a header line of "
               "shape symbols and count, such as \"M,N,count\"";
        QTest::addRow("csv missing a symbol in use")
            << "trace.csv" << "M,count\n64,1\n"
            << "trace.csv:2:1: field 'N': no extent for symbol 'N' (used by inputs[0].shape[1]); expected a "
               "column (CSV) or key (JSON) for every symbol in use (M, N)";
        QTest::addRow("csv without rows")
            << "trace.csv" << "M,N,count\n"
            << "trace.csv:1:1: field '': no rows; expected at least one row of shape symbols and a count";
        QTest::addRow("json not an array")
            << "trace.json" << "{\"M\": 1}"
            << "trace.json:1:1: field '': the top level is not an array; expected an array of objects such as "
               "[{\"M\": 64, \"N\": 1000, \"count\": 120}]";
        QTest::addRow("json syntax error")
            << "trace.json" << "[\n {\"M\": 64, \"N\": 128, \"count\": 1},\n {\"M\": 64 \"N\": 1}\n]"
            << "trace.json:3:13: field '': not valid JSON; expected an array of objects such as "
               "[{\"M\": 64, \"N\": 1000, \"count\": 120}]";
        QTest::addRow("json row without count")
            << "trace.json" << "[\n {\"M\": 64, \"N\": 128, \"count\": 1},\n {\"M\": 32, \"N\": 128}\n]"
            << "trace.json:3:2: field '[1].count': row has no count; expected a positive number of calls in "
               "every row";
        QTest::addRow("json negative extent")
            << "trace.json" << "[{\"M\": -64, \"N\": 128, \"count\": 1}]"
            << "trace.json:1:2: field '[0].M': -64 is not a positive integer; expected a positive integer extent "
               "for M";
        QTest::addRow("json rows with other symbols")
            << "trace.json" << "[{\"M\": 64, \"N\": 128, \"count\": 1},\n {\"M\": 64, \"K\": 128, \"count\": 1}]"
            << "trace.json:2:2: field '[1]': row names other symbols than row 0; expected the same symbols in "
               "every row";
        // Found by tests/fuzz/fuzz_problem_reader: a number past double's range escaped as a JSON
        // out_of_range exception, and counts near DBL_MAX added up to an infinite weight.
        QTest::addRow("json number out of range")
            << "trace.json" << "[{\"M\": 1e400, \"count\": 1}]"
            << "trace.json:1:1: field '': a number is out of range ([json.exception.out_of_range.406] number "
               "overflow parsing '1e400'); expected an array of objects such as [{\"M\": 64, \"N\": 1000, "
               "\"count\": 120}]";
        QTest::addRow("csv counts that add up past a double")
            << "trace.csv" << "M,N,count\n64,128,1e308\n64,128,1e308\n"
            << "trace.csv:3:1: field 'count': the counts of this shape add up past a double's range; expected "
               "counts of calls, or shares, of ordinary size";
        QTest::addRow("unknown trace format")
            << "trace.txt" << "M N count\n"
            << "trace.txt:1:1: field '': unknown trace format '.txt'; expected a .csv or .json file";
        // clang-format on
    }
    void rejectsBadTraces()
    {
        QFETCH(QString, file);
        QFETCH(QString, trace);
        QFETCH(QString, message);
        QTemporaryDir dir;
        try {
            parseWithTrace(dir, "production = \"" + file.toStdString() + "\"", file.toStdString(), trace.toStdString());
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            // Errors name the trace by its path; compare from the file name on.
            QString what = QString::fromUtf8(e.what());
            what.remove(0, dir.path().size() + 1);
            QCOMPARE(what, message);
        }
    }

    void rejectsTooManyProductionShapes()
    {
        std::string trace = "M,N,count\n";
        for (int i = 1; i <= 65; ++i)
            trace += std::to_string(i) + ",128,1\n";
        QTemporaryDir dir;
        try {
            parseWithTrace(dir, "production = \"trace.csv\"", "trace.csv", trace);
            QFAIL("no ProblemError");
        } catch (const ProblemError& e) {
            QCOMPARE(e.line(), 66);
            QVERIFY2(QString::fromUtf8(e.what()).contains("65 distinct shapes"), e.what());
            QVERIFY2(QString::fromUtf8(e.what()).contains("at most 64: bucket the rows"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestShapeSets)
#include "tst_shape_sets.moc"
