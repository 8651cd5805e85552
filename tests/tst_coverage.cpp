// Input coverage (issue 18, class 9): candidates that are right only on the listed check shapes
// or on the init distribution are caught by the `[check]` coverage of the bundled CPU softmax
// (resources/problems/cpu/softmax): extra distributions and shapes drawn from ranges. Runs the
// real `hone eval` and asserts what a user sees: the exit status, the failure kind and a message
// that names the shape and distribution that failed.
#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

using nlohmann::json;

namespace {

struct Eval {
    int exitCode = -1;
    json result;
    QString stderrText;
};

Eval honeEval(const QString& problem, const QString& candidate)
{
    Eval out;
    QProcess p;
    p.start(QString::fromUtf8(std::getenv("HONE_CLI")), { "eval", problem, candidate, "--json" });
    if (!p.waitForFinished(300000))
        return out;
    out.exitCode = p.exitCode();
    out.stderrText = QString::fromUtf8(p.readAllStandardError());
    const std::string text = p.readAllStandardOutput().toStdString();
    out.result = json::parse(text, nullptr, false);
    return out;
}

QString source(const char* path)
{
    return QString::fromUtf8(HONE_SOURCE_DIR) + "/" + path;
}

QString data(const char* file)
{
    const char* env = std::getenv("HONE_TEST_DATA");
    return QString::fromUtf8(env && *env ? env : HONE_TEST_DATA) + "/coverage/" + file;
}

} // namespace

class TestCoverage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        if (!std::getenv("HONE_CLI"))
            QSKIP("HONE_CLI is not set (run through ctest)");
    }

    // Without the max subtraction exp overflows (large |x|) or underflows (very negative x):
    // the listed inputs (normal, std 3) never show it, the large and negative distributions do.
    void softmaxWithoutMaxIsCaught()
    {
        const Eval e = honeEval(source("resources/problems/cpu/softmax"), data("softmax_no_max.cpp"));
        QVERIFY2(e.result.is_object(), qPrintable(e.stderrText));
        QCOMPARE(e.exitCode, 7); // evaluation failed
        QCOMPARE(e.result.value("status", ""), std::string("failed"));
        const std::string kind = e.result["failure"].value("kind", "");
        QVERIFY2(kind == "nan" || kind == "wrong_result", kind.c_str());
        const std::string message = e.result["failure"].value("message", "");
        QVERIFY2(message.find(" dist large ") != std::string::npos || message.find(" dist negative ") != std::string::npos,
            message.c_str());
        // Every listed shape passed on its listed init first: only the distribution caught it.
        for (const auto& c : e.result["checks"])
            if (c["shape"].get<std::string>().find(" dist ") == std::string::npos)
                QVERIFY2(c["ok"].get<bool>(), c.dump().c_str());
    }

    // Right on exactly the listed (M, N) pairs, garbage elsewhere: a drawn shape catches it, and
    // the message names the shape's extents.
    void kernelForTheListedShapesIsCaught()
    {
        const Eval e = honeEval(source("resources/problems/cpu/softmax"), data("softmax_listed_shapes.cpp"));
        QVERIFY2(e.result.is_object(), qPrintable(e.stderrText));
        QCOMPARE(e.exitCode, 7);
        QCOMPARE(e.result["failure"].value("kind", ""), std::string("wrong_result"));
        const std::string message = e.result["failure"].value("message", "");
        QVERIFY2(message.find("random[") != std::string::npos && message.find("M=") != std::string::npos
                && message.find("N=") != std::string::npos,
            message.c_str());
        size_t listedOk = 0;
        for (const auto& c : e.result["checks"])
            if (c["shape"].get<std::string>().rfind("small[", 0) == 0)
                listedOk += c["ok"].get<bool>() ? 1 : 0;
        QVERIFY(listedOk >= 4 * 3); // four listed shapes on three seeds, and under each distribution
    }

    // The bundled seeds pass the same coverage (every evaluation draws new shapes and values).
    void seedsPass_data()
    {
        QTest::addColumn<QString>("seed");
        QTest::addRow("naive") << "naive.cpp";
        QTest::addRow("tuned") << "tuned.cpp";
    }
    void seedsPass()
    {
        QFETCH(QString, seed);
        const Eval e = honeEval(source("resources/problems/cpu/softmax"), source("resources/problems/cpu/softmax/seeds/") + seed);
        QVERIFY2(e.result.is_object(), qPrintable(e.stderrText));
        QVERIFY2(e.exitCode == 0, e.result.dump().c_str());
        size_t drawn = 0, distributions = 0;
        for (const auto& c : e.result["checks"]) {
            const std::string shape = c["shape"];
            drawn += shape.rfind("random[", 0) == 0 ? 1 : 0;
            distributions += shape.find(" dist ") != std::string::npos ? 1 : 0;
        }
        QVERIFY(drawn >= 3);
        QVERIFY(distributions >= 3 * 4);
    }
};

QTEST_GUILESS_MAIN(TestCoverage)
#include "tst_coverage.moc"
