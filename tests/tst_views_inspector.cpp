// The candidate inspector: the line diff, the code and diff views, the timing plot, the
// correctness model and the Inspector panel over a real store.
#include "core/problem_spec.h"
#include "core/store.h"
#include "views/code_view.h"
#include "views/diff_view.h"
#include "views/inspector.h"
#include "views/line_diff.h"
#include "views/session_data.h"
#include "views/timing_plot.h"

#include "tests/code_lines.h"

#include <Qsci/qscilexercpp.h>
#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using namespace hone;
using hone::views::DiffRow;
using Kind = hone::views::DiffRow::Kind;

Q_DECLARE_METATYPE(hone::views::CharRange)

namespace {

namespace proto = hone::core::protocol;

const QString kSoftmax = QStringLiteral(HONE_SOURCE_DIR "/resources/problems/cpu/softmax");

/// "= = ~ - +" → kinds, for compact expectations.
QString kindString(const views::LineDiff& d)
{
    QString s;
    for (const auto& r : d.rows)
        s += r.kind == Kind::Equal    ? QLatin1Char('=')
            : r.kind == Kind::Changed ? QLatin1Char('~')
            : r.kind == Kind::Added   ? QLatin1Char('+')
                                      : QLatin1Char('-');
    return s;
}

/// Every line of both sides appears once, in order; equal rows hold equal lines; the counts
/// match the rows. Returns what is wrong, or empty.
QString checkRows(const views::LineDiff& d, const QStringList& left, const QStringList& right)
{
    int nextLeft = 0, nextRight = 0, added = 0, removed = 0;
    for (size_t i = 0; i < d.rows.size(); ++i) {
        const auto& r = d.rows[i];
        const bool hasLeft = r.kind != Kind::Added, hasRight = r.kind != Kind::Removed;
        if (hasLeft != (r.left >= 0) || hasRight != (r.right >= 0))
            return QStringLiteral("row %1: kind and sides disagree").arg(i);
        if (hasLeft && r.left != nextLeft++)
            return QStringLiteral("row %1: left line %2 out of order").arg(i).arg(r.left);
        if (hasRight && r.right != nextRight++)
            return QStringLiteral("row %1: right line %2 out of order").arg(i).arg(r.right);
        if (r.kind == Kind::Equal && left[r.left] != right[r.right])
            return QStringLiteral("row %1: equal row with different lines").arg(i);
        if (r.kind != Kind::Equal) {
            added += hasRight;
            removed += hasLeft;
        }
    }
    if (nextLeft != left.size() || nextRight != right.size())
        return QStringLiteral("not every line is in a row");
    if (added != d.added || removed != d.removed)
        return QStringLiteral("counts +%1 -%2, rows say +%3 -%4")
            .arg(d.added)
            .arg(d.removed)
            .arg(added)
            .arg(removed);
    return {};
}

int lcsLength(const QStringList& a, const QStringList& b)
{
    std::vector<std::vector<int>> t(
        static_cast<size_t>(a.size() + 1), std::vector<int>(static_cast<size_t>(b.size() + 1)));
    for (qsizetype i = a.size() - 1; i >= 0; --i)
        for (qsizetype j = b.size() - 1; j >= 0; --j)
            t[i][j] = a[i] == b[j] ? t[i + 1][j + 1] + 1 : std::max(t[i + 1][j], t[i][j + 1]);
    return t[0][0];
}

/// 5,000 lines of code-like text: unique statements, repeated braces and blank lines.
/// The 5,000-line pair with three edits: line 1003 changed, a line inserted after 2504, line
/// 4004 deleted.
std::pair<QStringList, QStringList> threeEdits()
{
    const QStringList left = codeLines(5000);
    QStringList right = left;
    right[1003] = QStringLiteral("    x[1003] = y[1003] + 9;");
    right.insert(2505, QStringLiteral("    // inserted"));
    right.removeAt(4005); // left line 4004, one further down after the insertion
    return { left, right };
}

QString marginText(const views::CodeView* v, int line)
{
    const long n = v->SendScintilla(
        QsciScintillaBase::SCI_MARGINGETTEXT, static_cast<unsigned long>(line), static_cast<void*>(nullptr));
    QByteArray buf(static_cast<int>(n) + 1, '\0');
    v->SendScintilla(QsciScintillaBase::SCI_MARGINGETTEXT, static_cast<unsigned long>(line),
        static_cast<void*>(buf.data()));
    return QString::fromUtf8(buf.constData());
}

bool indicatorAt(const views::CodeView* v, int line, int column)
{
    const long pos
        = v->SendScintilla(QsciScintillaBase::SCI_POSITIONFROMLINE, static_cast<unsigned long>(line))
        + column;
    return v->SendScintilla(QsciScintillaBase::SCI_INDICATORVALUEAT,
               static_cast<unsigned long>(views::DiffView::kCharIndicator), pos)
        != 0;
}

bool hasMarker(const views::CodeView* v, int line, int marker)
{
    return (v->markersAtLine(line) & (1u << marker)) != 0;
}

QString readText(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll());
}

QString cliPath()
{
    const QString env = qEnvironmentVariable("HONE_CLI");
    return env.isEmpty() ? QCoreApplication::applicationDirPath() + QStringLiteral("/hone") : env;
}

/// Runs the real CLI; returns its stdout (the caller checks what it needs).
QByteArray runCli(const QStringList& args, int* exitCode = nullptr, int timeoutMs = 120000)
{
    QProcess p;
    p.start(cliPath(), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
    }
    if (exitCode)
        *exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() > 3)
        qWarning().noquote() << "hone" << args.join(' ') << "failed:" << p.readAllStandardError();
    return p.readAllStandardOutput();
}

/// A timed shape with `n` samples around `medianNs` and an interleaved baseline.
hone::core::protocol::Timing timingValue(double medianNs, double cv, int n, double baselineNs, double speedup)
{
    hone::core::protocol::Timing t;
    t.shape = "bench[0]";
    for (int i = 0; i < n; ++i)
        t.stats.samplesNs.push_back(medianNs * (1.0 + 0.01 * ((i % 5) - 2)));
    t.stats.medianNs = medianNs;
    t.stats.p10Ns = medianNs * 0.98;
    t.stats.p90Ns = medianNs * 1.02;
    t.stats.cv = cv;
    t.baseline = hone::core::protocol::SampleStats { {}, baselineNs, baselineNs * 0.99, baselineNs * 1.01, 0.01, {} };
    t.speedup = speedup;
    return t;
}

} // namespace

class TestViewsInspector : public QObject {
    Q_OBJECT

    // A session in a real store: 0 root, 1 seed naive.cpp (baseline), 2 seed tuned.cpp (VEC=1),
    // 3 its knob child (VEC=8, evaluated by the real worker), 4 a manual child that does not
    // compile (the real compiler's result), 5 a model-written child of 3 that fails a check.
    QTemporaryDir m_dir;
    std::unique_ptr<core::Store> m_store;
    int64_t m_session = 0;
    nlohmann::json m_result3;
    nlohmann::json m_result4;
    nlohmann::json m_knobs2;
    QString m_tuned;

    void loadInto(views::SessionData& data)
    {
        data.setStore(m_store.get());
        data.loadFromStore(*m_store, m_session);
    }

private slots:
    void initTestCase();

    void splitLines_data();
    void splitLines();
    void diffLines_data();
    void diffLines();
    void diffTextsIgnoresLineEndings();
    void diffLinesIsMinimal();
    void diffLinesOverBudgetStaysValid();
    void diffLargeFileMarksExactlyTheEdits();
    void diffChars_data();
    void diffChars();
    void diffCharsLongLineIsWhole();
    void knobDifferences();

    void codeView();
    void diffViewRowsAndLazyHighlights();
    void diffViewOpensLargeDiffQuickly();
    void timingPlot();
    void correctnessModel();

    void inspectorHeaderAndKnobs();
    void inspectorDiffAgainstParentShowsKnobs();
    void inspectorDiffAgainstBaselineAndOther();
    void inspectorCompileMessageMovesCursor();
    void inspectorCorrectnessAndTiming();
    void inspectorLlmTab();
    void inspectorSkipsUnchangedUpdates();
    void inspectorEditAndEmptyStates();
    void inspectorOnRealSearch();
};

void TestViewsInspector::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(cliPath() + " is missing; build the hone target"));
    m_store = std::make_unique<core::Store>((m_dir.path() + "/hone.db").toStdString());
    const auto spec = core::loadProblem(kSoftmax.toStdString());
    m_session
        = m_store->createSession(m_store->upsertProblem(spec), "cpu", "uct", 7, nlohmann::json::object());

    const QString naive = readText(kSoftmax + "/seeds/naive.cpp");
    m_tuned = readText(kSoftmax + "/seeds/tuned.cpp");
    QVERIFY(!naive.isEmpty() && m_tuned.contains("#define VEC 16"));
    QString broken = m_tuned;
    broken.replace("return s;", "retrun s;");
    QVERIFY(broken != m_tuned);
    QString llmSource = m_tuned;
    llmSource.replace("#define UNROLL 2", "#define UNROLL 2 // two accumulators hide the add latency");
    QVERIFY(llmSource != m_tuned);

    const std::string hNaive = m_store->putSource("cpp", "naive.cpp", naive.toStdString());
    const std::string hTuned = m_store->putSource("cpp", "tuned.cpp", m_tuned.toStdString());
    const std::string hBroken = m_store->putSource("cpp", "broken.cpp", broken.toStdString());
    const std::string hLlm = m_store->putSource("cpp", "tuned.cpp", llmSource.toStdString());

    m_knobs2 = { { "EXP", "0" }, { "ONE_PASS", "0" }, { "ROWS_PER_TASK", "1" }, { "STORE", "1" },
        { "THREADS", "1" }, { "UNROLL", "1" }, { "VEC", "1" } };
    nlohmann::json knobs3 = m_knobs2;
    knobs3["VEC"] = "8";
    const std::string flags = "-ffp-contract=fast";
    auto node = [&](int64_t id, int64_t parent, const std::string& hash, const nlohmann::json& knobs,
                    const std::string& fl, const std::string& origin, const std::string& op) {
        core::NodeRecord r;
        r.id = id;
        r.parentId = parent;
        r.seq = id;
        r.sourceHash = hash;
        r.knobs = knobs;
        r.flags = fl;
        r.origin = origin;
        r.op = op;
        m_store->insertNode(m_session, r);
    };
    node(0, -1, "", nlohmann::json::object(), "", "root", "restart");
    node(1, 0, hNaive, nlohmann::json::object(), "", "seed", "restart");
    node(2, 0, hTuned, m_knobs2, flags, "seed", "restart");
    node(3, 2, hTuned, knobs3, flags, "mutation", "inherit");
    node(4, 3, hBroken, knobs3, flags, "manual", "");
    node(5, 3, hLlm, knobs3, flags, "mutation", "inherit");

    // Real worker results: node 3 evaluated, node 4's compile error.
    int rc = -1;
    const QByteArray out3
        = runCli({ "eval", kSoftmax, kSoftmax + "/seeds/tuned.cpp", "--json", "--knob", "VEC=8", "--knob",
                     "THREADS=1", "--knob", "ROWS_PER_TASK=1", "--knob", "UNROLL=1", "--knob", "EXP=0",
                     "--knob", "STORE=1", "--knob", "ONE_PASS=0", "--flags", QString::fromStdString(flags) },
            &rc);
    m_result3 = nlohmann::json::parse(out3.toStdString(), nullptr, false);
    QVERIFY2(m_result3.is_object() && m_result3.value("status", "") == "ok", out3.left(2000).constData());
    const QString brokenPath = m_dir.path() + "/broken.cpp";
    {
        QFile f(brokenPath);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(broken.toUtf8());
    }
    const QByteArray out4 = runCli({ "eval", kSoftmax, brokenPath, "--json" }, &rc);
    m_result4 = nlohmann::json::parse(out4.toStdString(), nullptr, false);
    QVERIFY2(m_result4.is_object() && m_result4["failure"]["kind"] == "compile_error",
        out4.left(2000).constData());
    QVERIFY(m_result4["compile"]["messages"].size() >= 2);

    auto eval = [&](int64_t id, const proto::EvalResult& result) {
        core::EvaluationRecord e;
        e.nodeId = id;
        e.cacheKey = "k" + std::to_string(id);
        e.status = result.ok() ? "ok" : "failed";
        if (result.failure) {
            e.failureKind = proto::failureKindName(result.failure->kind);
            e.failureMessage = result.failure->message;
        }
        e.medianNs = result.medianNs();
        e.speedup = result.timedSpeedup();
        e.result = result.toJson();
        m_store->insertEvaluation(m_session, e);
    };
    auto check = [](const char* shape, int64_t seed, bool ok) {
        proto::Check c;
        c.shape = shape;
        c.seed = seed;
        c.ok = ok;
        c.maxAbsErr = 0.0;
        c.maxRelErr = 0.0;
        return c;
    };
    std::vector<proto::Check> okChecks;
    for (int seed = 1; seed <= 3; ++seed)
        okChecks.push_back(check("small[0]", seed, true));
    auto passed = [&](proto::Timing timing, const char* bound, const char* evidence) {
        proto::EvalResult r;
        r.status = proto::EvalStatus::Ok;
        r.checks = okChecks;
        r.timing = std::move(timing);
        r.diagnosis = proto::Diagnosis { bound, evidence, false, nlohmann::json::object() };
        return r;
    };
    eval(1, passed(timingValue(2.5e6, 0.01, 25, 2.5e6, 1.0), "memory", "memory-bound: naive"));
    eval(2, passed(timingValue(1.23e6, 0.021, 25, 2.5e6, 2.0325), "compute", "compute-bound: 80% of the FMA peak"));
    eval(3, proto::EvalResult::fromJson(m_result3)); // the worker's own output, decoded once
    eval(4, proto::EvalResult::fromJson(m_result4));
    std::vector<proto::Check> badChecks = okChecks;
    proto::Check bad = check("small[1]", 2, false);
    bad.maxAbsErr = 0.5;
    bad.maxRelErr = 0.9;
    bad.mismatches = 3;
    bad.firstMismatches = { proto::Mismatch { "y", 3, 0.1, 0.2, false, nlohmann::json::object() } };
    bad.failureKind = proto::FailureKind::WrongResult;
    bad.failureMessage = "y differs at 3 of 231 elements";
    badChecks.push_back(bad);
    proto::EvalResult wrong
        = proto::EvalResult::failed("", proto::FailureKind::WrongResult, "check", "y differs at 3 of 231 elements");
    wrong.compile.emplace();
    wrong.compile->ok = true;
    wrong.compile->command = "c++ -O3 tuned.cpp";
    wrong.compile->log = "";
    wrong.checks = badChecks;
    eval(5, wrong);

    core::LlmCallRecord call;
    call.nodeId = 5;
    call.purpose = "propose";
    call.op = "inherit";
    call.provider = "openai";
    call.model = "gpt-test";
    call.prompt = { { "system", "You write fast C++ kernels." },
        { "messages", { { { "role", "user" }, { "content", "Improve node 3 of softmax (VEC=8)." } } } } };
    call.response = "Use two accumulators.\n```cpp\n#define UNROLL 2\n```";
    call.finishReason = "stop";
    call.tokensIn = 1234;
    call.tokensOut = 567;
    call.costUsd = 0.0123;
    call.latencyMs = 2345;
    call.firstTokenMs = 456;
    call.attempts = 1;
    call.httpStatus = 200;
    call.status = "ok";
    m_store->insertLlmCall(m_session, call);
}

// ---------------------------------------------------------------------------------------------
// line_diff

void TestViewsInspector::splitLines_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("lines");
    QTest::addRow("empty") << QString() << QStringList {};
    QTest::addRow("one, no newline") << "a" << QStringList { "a" };
    QTest::addRow("one, newline") << "a\n" << QStringList { "a" };
    QTest::addRow("blank line") << "\n" << QStringList { "" };
    QTest::addRow("inner blank") << "a\n\nb" << QStringList { "a", "", "b" };
    QTest::addRow("crlf") << "a\r\nb\r\n" << QStringList { "a", "b" };
    QTest::addRow("lone cr") << "a\rb" << QStringList { "a", "b" };
    QTest::addRow("mixed") << "a\r\n\nb\n" << QStringList { "a", "", "b" };
}

void TestViewsInspector::splitLines()
{
    QFETCH(QString, text);
    QFETCH(QStringList, lines);
    QCOMPARE(views::splitLines(text), lines);
}

void TestViewsInspector::diffLines_data()
{
    QTest::addColumn<QString>("left");
    QTest::addColumn<QString>("right");
    QTest::addColumn<QString>("kinds");
    QTest::addColumn<int>("added");
    QTest::addColumn<int>("removed");
    // Lines are the space-separated words.
    QTest::addRow("both empty") << ""
                                << ""
                                << "" << 0 << 0;
    QTest::addRow("identical") << "a b c"
                               << "a b c"
                               << "===" << 0 << 0;
    QTest::addRow("left empty") << ""
                                << "a b"
                                << "++" << 2 << 0;
    QTest::addRow("right empty") << "a b"
                                 << ""
                                 << "--" << 0 << 2;
    QTest::addRow("insertion") << "a b c"
                               << "a b x c"
                               << "==+=" << 1 << 0;
    QTest::addRow("insertion at start") << "a b"
                                        << "x a b"
                                        << "+==" << 1 << 0;
    QTest::addRow("insertion at end") << "a b"
                                      << "a b x"
                                      << "==+" << 1 << 0;
    QTest::addRow("deletion") << "a b c d"
                              << "a c d"
                              << "=-==" << 0 << 1;
    QTest::addRow("replacement") << "a b c"
                                 << "a x c"
                                 << "=~=" << 1 << 1;
    QTest::addRow("two by one") << "a b c d"
                                << "a x d"
                                << "=~-=" << 1 << 2;
    QTest::addRow("one by two") << "a b d"
                                << "a x y d"
                                << "=~+=" << 2 << 1;
    QTest::addRow("moved line") << "a b c"
                                << "b c a"
                                << "-==+" << 1 << 1;
    QTest::addRow("all different") << "a b"
                                   << "x y z"
                                   << "~~+" << 3 << 2;
}

void TestViewsInspector::diffLines()
{
    QFETCH(QString, left);
    QFETCH(QString, right);
    QFETCH(QString, kinds);
    QFETCH(int, added);
    QFETCH(int, removed);
    const QStringList l = left.split(' ', Qt::SkipEmptyParts), r = right.split(' ', Qt::SkipEmptyParts);
    const auto d = views::diffLines(l, r);
    QCOMPARE(kindString(d), kinds);
    QCOMPARE(d.added, added);
    QCOMPARE(d.removed, removed);
    QVERIFY(d.minimal);
    const QString problem = checkRows(d, l, r);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestViewsInspector::diffTextsIgnoresLineEndings()
{
    const auto d = views::diffTexts("int a;\r\nint b;\r\n", "int a;\nint b;\n");
    QVERIFY(d.identical());
    QCOMPARE(kindString(d), QStringLiteral("=="));
    const auto e = views::diffTexts("int a;\r\nint b;\r\n", "int a;\nint c;");
    QCOMPARE(kindString(e), QStringLiteral("=~"));
    QCOMPARE(e.rows[1], (DiffRow { Kind::Changed, 1, 1 }));
}

void TestViewsInspector::diffLinesIsMinimal()
{
    // Random small sequences over a tiny alphabet (many repeats): the equal rows are a longest
    // common subsequence, checked against dynamic programming.
    QRandomGenerator gen(20240611);
    const QStringList alphabet { "{", "}", "x", "" };
    for (int round = 0; round < 400; ++round) {
        QStringList a, b;
        const int n = gen.bounded(0, 30), m = gen.bounded(0, 30);
        for (int i = 0; i < n; ++i)
            a << alphabet[gen.bounded(0, 4)];
        for (int i = 0; i < m; ++i)
            b << alphabet[gen.bounded(0, 4)];
        const auto d = views::diffLines(a, b);
        const QString problem = checkRows(d, a, b);
        QVERIFY2(problem.isEmpty(), qPrintable(QStringLiteral("round %1: %2").arg(round).arg(problem)));
        const int equal = static_cast<int>(std::count_if(
            d.rows.begin(), d.rows.end(), [](const DiffRow& r) { return r.kind == Kind::Equal; }));
        QCOMPARE(equal, lcsLength(a, b));
    }
}

void TestViewsInspector::diffLinesOverBudgetStaysValid()
{
    QRandomGenerator gen(7);
    QStringList a, b;
    for (int i = 0; i < 3000; ++i) {
        a << QString::number(gen.bounded(0, 50));
        b << QString::number(gen.bounded(0, 50));
    }
    const auto d = views::diffLines(a, b, 1000);
    QVERIFY(!d.minimal);
    const QString problem = checkRows(d, a, b);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    const auto full = views::diffLines(a, b);
    QVERIFY(full.minimal);
    QVERIFY(full.added <= d.added);
}

void TestViewsInspector::diffLargeFileMarksExactlyTheEdits()
{
    const auto [left, right] = threeEdits();
    const auto d = views::diffLines(left, right); // its speed: bench_workbench BM_DiffLines
    std::vector<DiffRow> marked;
    for (const auto& r : d.rows)
        if (r.kind != Kind::Equal)
            marked.push_back(r);
    const std::vector<DiffRow> expected { { Kind::Changed, 1003, 1003 }, { Kind::Added, -1, 2505 },
        { Kind::Removed, 4004, -1 } };
    QCOMPARE(marked, expected);
    QCOMPARE(d.rows.size(), size_t(5001));
    QCOMPARE(d.added, 2);
    QCOMPARE(d.removed, 2);
}

void TestViewsInspector::diffChars_data()
{
    QTest::addColumn<QString>("left");
    QTest::addColumn<QString>("right");
    QTest::addColumn<QList<views::CharRange>>("leftRanges");
    QTest::addColumn<QList<views::CharRange>>("rightRanges");
    using R = QList<views::CharRange>;
    QTest::addRow("one char") << "#define VEC 4"
                              << "#define VEC 8" << R { { 12, 1 } } << R { { 12, 1 } };
    QTest::addRow("insertion") << "abc"
                               << "abXc" << R {} << R { { 2, 1 } };
    QTest::addRow("deletion") << "abc"
                              << "ac" << R { { 1, 1 } } << R {};
    QTest::addRow("from empty") << ""
                                << "x = 1;" << R {} << R { { 0, 6 } };
    QTest::addRow("two changes far apart")
        << "a[i] + b[i]"
        << "a[j] + b[j]" << R { { 2, 1 }, { 9, 1 } } << R { { 2, 1 }, { 9, 1 } };
    QTest::addRow("short equal run folded") << "y * 2;"
                                            << "y + 9;" << R { { 2, 3 } } << R { { 2, 3 } };
    QTest::addRow("identical") << "same"
                               << "same" << R {} << R {};
}

void TestViewsInspector::diffChars()
{
    QFETCH(QString, left);
    QFETCH(QString, right);
    QFETCH(QList<views::CharRange>, leftRanges);
    QFETCH(QList<views::CharRange>, rightRanges);
    const auto d = views::diffChars(left, right);
    QCOMPARE(QList<views::CharRange>(d.left.begin(), d.left.end()), leftRanges);
    QCOMPARE(QList<views::CharRange>(d.right.begin(), d.right.end()), rightRanges);
    QVERIFY(!d.wholeLine);
}

void TestViewsInspector::diffCharsLongLineIsWhole()
{
    const QString a = QString(2500, 'a'), b = QString(2500, 'a') + "b";
    const auto d = views::diffChars(a, b);
    QVERIFY(d.wholeLine);
    QCOMPARE(d.left, (std::vector<views::CharRange> { { 0, 2500 } }));
    QCOMPARE(d.right, (std::vector<views::CharRange> { { 0, 2501 } }));
    // Below the limit the same lines are compared by character.
    const auto e = views::diffChars(a.left(1500), a.left(1500) + "b");
    QVERIFY(!e.wholeLine);
    QCOMPARE(e.right, (std::vector<views::CharRange> { { 1500, 1 } }));
}

void TestViewsInspector::knobDifferences()
{
    const nlohmann::json a = { { "VEC", "4" }, { "UNROLL", "2" }, { "EXP", "0" } };
    const nlohmann::json b = { { "VEC", "8" }, { "UNROLL", "2" }, { "THREADS", 2 } };
    QCOMPARE(views::knobDifferences(a, b),
        (QStringList { "EXP: 0 → (unset)", "THREADS: (unset) → 2", "VEC: 4 → 8" }));
    QVERIFY(views::knobDifferences(a, a).isEmpty());
}

// ---------------------------------------------------------------------------------------------
// Views

void TestViewsInspector::codeView()
{
    views::CodeView v;
    v.resize(600, 400);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setSource("__global__ void k(float* x) {\n  x[threadIdx.x] = 0;\n  __syncthreads();\n}\n", "kernel.cu");
    QVERIFY(v.highlightsCpp());
    QVERIFY(QByteArray(v.lexer()->keywords(2)).split(' ').contains("__global__"));
    QVERIFY(QByteArray(v.lexer()->keywords(2)).split(' ').contains("blockIdx"));
    QVERIFY(QByteArray(v.lexer()->keywords(1)).split(' ').contains("while")); // C++ keywords stay
    QVERIFY(QFontInfo(v.lexer()->font(QsciLexerCPP::Comment)).fixedPitch());
    // "__global__" is styled as a secondary keyword once the view has lexed the line.
    v.SendScintilla(QsciScintillaBase::SCI_COLOURISE, 0UL, -1L);
    QCOMPARE(v.SendScintilla(QsciScintillaBase::SCI_GETSTYLEAT, 0UL), long(QsciLexerCPP::KeywordSet2));

    QVERIFY(!v.isEditable());
    QTest::keyClicks(&v, "zzz");
    QVERIFY(!v.text().contains("zzz"));
    v.setEditable(true);
    v.setCursorPosition(0, 0);
    QTest::keyClicks(&v, "zzz");
    QVERIFY(v.text().startsWith("zzz__global__"));
    v.setEditable(false);

    v.goToLine(3, 3);
    QCOMPARE(v.cursorLine(), 3);
    QCOMPARE(v.cursorColumn(), 3);
    v.goToLine(99);
    QCOMPARE(v.cursorLine(), v.lines());
    v.markLine(2);
    v.markLine(3, "warning");
    QCOMPARE(v.markedLines(), (QList<int> { 2, 3 }));
    QVERIFY(hasMarker(&v, 1, views::CodeView::kErrorBackground));
    QVERIFY(hasMarker(&v, 2, views::CodeView::kWarningMarker));
    v.setSource("x\n", "notes.txt");
    QVERIFY(!v.highlightsCpp());
    QVERIFY(v.markedLines().isEmpty());
    QVERIFY(views::CodeView::isCppFile("a.HIP") && views::CodeView::isCppFile("b.cuh")
        && !views::CodeView::isCppFile("c.py"));
}

void TestViewsInspector::diffViewRowsAndLazyHighlights()
{
    const auto [left, right] = threeEdits();
    views::DiffView view;
    view.resize(1000, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSides({ "baseline: node 1 (tuned.cpp)", "tuned.cpp", left.join('\n'), { { "VEC", "4" } }, "" },
        { "node 17 (tuned.cpp, VEC=8)", "tuned.cpp", right.join('\n') + '\n', { { "VEC", "8" } }, "" });
    QCOMPARE(view.countsText(), QStringLiteral("+2 −2"));
    QCOMPARE(view.knobLines(), QStringList { "VEC: 4 → 8" });
    QVERIFY(!view.sameSource());
    auto* l = view.leftView();
    auto* r = view.rightView();
    QCOMPARE(l->lines(), 5001);
    QCOMPARE(r->lines(), 5001);

    // Row backgrounds on exactly the three edited rows (row 1003 changed, 2505 added, 4005 removed).
    for (int row = 0; row < 5001; ++row) {
        const bool edited = row == 1003 || row == 2505 || row == 4005;
        const unsigned any = (1u << views::DiffView::kAddedMarker) | (1u << views::DiffView::kRemovedMarker)
            | (1u << views::DiffView::kChangedMarker) | (1u << views::DiffView::kFillerMarker);
        if (((l->markersAtLine(row) & any) != 0) != edited || ((r->markersAtLine(row) & any) != 0) != edited)
            QFAIL(qPrintable(QStringLiteral("row %1 marked wrongly").arg(row)));
    }
    QVERIFY(hasMarker(l, 1003, views::DiffView::kChangedMarker)
        && hasMarker(r, 1003, views::DiffView::kChangedMarker));
    QVERIFY(hasMarker(l, 2505, views::DiffView::kFillerMarker)
        && hasMarker(r, 2505, views::DiffView::kAddedMarker));
    QVERIFY(hasMarker(l, 4005, views::DiffView::kRemovedMarker)
        && hasMarker(r, 4005, views::DiffView::kFillerMarker));
    // The margins number the original lines; fillers have none.
    QCOMPARE(marginText(l, 2505), QString());
    QCOMPARE(marginText(r, 2505), QStringLiteral("2506"));
    QCOMPARE(marginText(l, 2506), QStringLiteral("2506"));
    QCOMPARE(marginText(r, 2506), QStringLiteral("2507"));
    QCOMPARE(marginText(r, 4005), QString());

    // Character highlights only near the screen: row 1003 is not painted until scrolled to.
    QVERIFY(view.paintedRows() > 0 && view.paintedRows() < 1000);
    QVERIFY(!view.rowPainted(1003));
    QVERIFY(!indicatorAt(l, 1003, 22));
    l->setFirstVisibleLine(990);
    QTRY_COMPARE(r->firstVisibleLine(), 990); // scrolling is synchronised
    QTRY_VERIFY(view.rowPainted(1003));
    // "* 2" → "+ 9": one box over columns 22..24 on both sides.
    for (auto* v : { l, r }) {
        QVERIFY(!indicatorAt(v, 1003, 21));
        QVERIFY(indicatorAt(v, 1003, 22));
        QVERIFY(indicatorAt(v, 1003, 24));
        QVERIFY(!indicatorAt(v, 1003, 25));
    }
    r->setFirstVisibleLine(4000);
    QTRY_COMPARE(l->firstVisibleLine(), 4000);

    // Same source: no code rows marked, the knob difference leads.
    view.setSides(
        { "parent: node 3 (tuned.cpp, VEC=4)", "tuned.cpp", left.join('\n'), { { "VEC", "4" } }, "-O2" },
        { "node 17 (tuned.cpp, VEC=8)", "tuned.cpp", left.join('\n'), { { "VEC", "8" } }, "-O3" });
    QVERIFY(view.sameSource());
    QCOMPARE(view.countsText(), QStringLiteral("identical"));
    QCOMPARE(view.knobLines(), (QStringList { "VEC: 4 → 8", "flags: -O2 → -O3" }));
    QCOMPARE(l->markerFindNext(0, 0xffff << 8), -1);
    view.showMessage("no parent");
    QCOMPARE(view.message(), QStringLiteral("no parent"));
}

void TestViewsInspector::diffViewOpensLargeDiffQuickly()
{
    QStringList left = codeLines(20000), right = left;
    for (int i = 5; i < 20000; i += 50)
        right[i] += QStringLiteral(" // edited");
    const QString a = left.join('\n'), b = right.join('\n');
    views::DiffView view;
    view.resize(1000, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSides({ "left", "big.cpp", a, {}, "" }, { "right", "big.cpp", b, {}, "" });
    view.repaint();
    QCOMPARE(view.diff().rows.size(), size_t(20000));
    QCOMPARE(view.diff().added, 400);
    // What keeps it quick: only the rows around the viewport are painted up front. How long
    // opening takes is measured by bench_workbench (BM_OpenLargeDiff), not asserted here.
    QVERIFY2(view.paintedRows() <= 2 * views::DiffView::kPaintMargin + 100,
        qPrintable(QStringLiteral("%1 rows painted up front").arg(view.paintedRows())));
}

void TestViewsInspector::timingPlot()
{
    views::TimingPlot plot;
    QVERIFY(plot.isEmpty());
    plot.setResult(std::nullopt, "Not evaluated yet.");
    QVERIFY(plot.isEmpty());
    QCOMPARE(plot.message(), QStringLiteral("Not evaluated yet."));

    hone::core::protocol::EvalResult result;
    result.status = hone::core::protocol::EvalStatus::Ok;
    result.timing = timingValue(1.23e6, 0.021, 25, 2.5e6, 2.0325);
    plot.setResult(result);
    QVERIFY(!plot.isEmpty());
    QCOMPARE(
        plot.summary(), QStringLiteral("median 1.23 ms, CV 2.1%, n=25; baseline median 2.50 ms (2.03x)"));
    QCOMPARE(plot.unit(), QStringLiteral("ms"));
    QStringList names;
    for (int i = 0; i < plot.plot()->graphCount(); ++i)
        names << plot.plot()->graph(i)->name();
    QCOMPARE(names, (QStringList { "samples", "median", "p10 / p90", "p90", "baseline median" }));
    QCOMPARE(plot.plot()->graph(0)->dataCount(), 25);
    QCOMPARE(plot.plot()->graph(1)->data()->at(0)->value, 1.23);
    QCOMPARE(plot.plot()->graph(4)->data()->at(0)->value, 2.5);
    QVERIFY(plot.plot()->yAxis->range().contains(2.5));

    QCOMPARE(views::TimingPlot::formatNs(850), QStringLiteral("850 ns"));
    QCOMPARE(views::TimingPlot::formatNs(12345), QStringLiteral("12.3 µs"));
    QCOMPARE(views::TimingPlot::formatNs(2.5e9), QStringLiteral("2.50 s"));
}

void TestViewsInspector::correctnessModel()
{
    views::CorrectnessModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    using hone::core::protocol::Check;
    using hone::core::protocol::FailureKind;
    using hone::core::protocol::Mismatch;
    std::vector<Check> checks(3);
    checks[0].shape = "small[0]";
    checks[0].seed = 1;
    checks[0].ok = true;
    checks[0].maxAbsErr = 1e-8;
    checks[0].maxRelErr = 2e-7;
    checks[1].shape = "small[1]";
    checks[1].seed = 2;
    checks[1].maxAbsErr = 0.5;
    checks[1].maxRelErr = 0.9;
    checks[1].mismatches = 3;
    checks[1].firstMismatches = { Mismatch { "y", 3, 0.1, 0.2, false, {} }, Mismatch { "y", 9, 0.0, 1.0, true, {} } };
    checks[1].failureKind = FailureKind::WrongResult;
    checks[1].failureMessage = "y differs at 3 of 231 elements";
    checks[2].shape = "bench[0]";
    checks[2].seed = 1000;
    checks[2].ok = true;
    checks[2].maxAbsErr = 3e-6;
    checks[2].maxRelErr = 4e-6;
    checks[2].afterTiming = true;
    model.setChecks(checks);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 6);
    QCOMPARE(model.failedCount(), 1);
    auto cell = [&](int row, int col, int role = Qt::DisplayRole) {
        return model.data(model.index(row, col), role);
    };
    QCOMPARE(cell(1, views::CorrectnessModel::ShapeColumn).toString(), QStringLiteral("small[1]"));
    QCOMPARE(cell(1, views::CorrectnessModel::SeedColumn).toLongLong(), 2);
    QCOMPARE(cell(1, views::CorrectnessModel::OkColumn).toString(), QStringLiteral("FAILED"));
    QCOMPARE(cell(1, views::CorrectnessModel::MaxAbsColumn).toString(), QStringLiteral("0.5"));
    QCOMPARE(cell(1, views::CorrectnessModel::MaxRelColumn).toString(), QStringLiteral("0.9"));
    QCOMPARE(cell(1, views::CorrectnessModel::MismatchesColumn).toLongLong(), 3);
    QCOMPARE(cell(0, views::CorrectnessModel::MaxAbsColumn, Qt::UserRole).toDouble(), 1e-8);
    QCOMPARE(
        cell(2, views::CorrectnessModel::ShapeColumn).toString(), QStringLiteral("bench[0] (after timing)"));
    const QString tip = cell(1, views::CorrectnessModel::ShapeColumn, Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains("wrong_result: y differs at 3 of 231 elements"), qPrintable(tip));
    QVERIFY2(tip.contains("y[3]: got 0.1, want 0.2"), qPrintable(tip));
    QVERIFY2(tip.contains("y[9]: never written (want 1)"), qPrintable(tip));
    QCOMPARE(cell(0, 0, Qt::ToolTipRole).toString(), QStringLiteral("No mismatches."));
    QVERIFY(cell(1, 0, Qt::BackgroundRole).isValid());
    QVERIFY(!cell(0, 0, Qt::BackgroundRole).isValid());
    QCOMPARE(model.headerData(views::CorrectnessModel::MaxRelColumn, Qt::Horizontal).toString(),
        QStringLiteral("Max rel err"));
    model.setChecks({});
    QCOMPARE(model.rowCount(), 0);
}

// ---------------------------------------------------------------------------------------------
// Inspector

void TestViewsInspector::inspectorHeaderAndKnobs()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    QAbstractItemModelTester tester(
        inspector.knobModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    inspector.resize(1100, 800);
    inspector.show();
    QVERIFY(QTest::qWaitForWindowExposed(&inspector));

    selection.setCurrent(3);
    QCOMPARE(inspector.node(), qint64(3));
    const QString header = inspector.headerText();
    QVERIFY2(
        header.startsWith(
            QStringLiteral("node 3 · tuned.cpp · mutation (inherit) · %1").arg(data.node(3)->statusText())),
        qPrintable(header));
    QVERIFY2(header.contains(QString::fromStdString(m_result3["diagnosis"]["evidence"].get<std::string>())),
        qPrintable(header));
    QVERIFY2(header.contains(data.node(3)->bound + "-bound"), qPrintable(header));
    QCOMPARE(inspector.tabs()->currentIndex(), int(views::Inspector::SourceTab));
    QCOMPARE(inspector.sourceView()->text(), m_tuned);
    QVERIFY(inspector.sourceView()->highlightsCpp());
    QVERIFY(!inspector.sourceView()->isEditable());

    // name, value, the parent's value only where it differs
    auto* knobs = inspector.knobModel();
    QCOMPARE(knobs->rowCount(), 7);
    QStringList changed;
    for (int row = 0; row < knobs->rowCount(); ++row) {
        if (!knobs->item(row, 2)->text().isEmpty())
            changed << knobs->item(row, 0)->text() + "=" + knobs->item(row, 1)->text() + " (was "
                    + knobs->item(row, 2)->text() + ")";
    }
    QCOMPARE(changed, QStringList { "VEC=8 (was 1)" });
}

void TestViewsInspector::inspectorDiffAgainstParentShowsKnobs()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    inspector.resize(1100, 800);
    inspector.show();
    selection.setCurrent(3);
    inspector.tabs()->setCurrentIndex(views::Inspector::DiffTab);
    QCOMPARE(inspector.diffAgainst(), views::Inspector::AgainstParent);
    auto* diff = inspector.diffView();
    QVERIFY(diff->message().isEmpty());
    QVERIFY(diff->sameSource());
    QCOMPARE(diff->knobLines(), QStringList { "VEC: 1 → 8" });
    QCOMPARE(diff->countsText(), QStringLiteral("identical"));
    QCOMPARE(diff->leftTitle(),
        QStringLiteral("parent: node 2 (tuned.cpp, EXP=0, ONE_PASS=0, ROWS_PER_TASK=1, STORE=1, THREADS=1, "
                       "UNROLL=1, VEC=1)"));
    QCOMPARE(diff->rightTitle(),
        QStringLiteral(
            "node 3 (tuned.cpp, EXP=0, ONE_PASS=0, ROWS_PER_TASK=1, STORE=1, THREADS=1, UNROLL=1, VEC=8)"));

    // The model-written child changed one line of its parent's source.
    selection.setCurrent(5);
    QVERIFY(!diff->sameSource());
    QCOMPARE(diff->countsText(), QStringLiteral("+1 −1"));
    QVERIFY(diff->knobLines().isEmpty());
    int changedRow = -1;
    for (size_t i = 0; i < diff->diff().rows.size(); ++i)
        if (diff->diff().rows[i].kind == Kind::Changed)
            changedRow = static_cast<int>(i);
    QVERIFY(changedRow >= 0);
    QVERIFY(diff->rightView()->text(changedRow).contains("two accumulators"));

    // A seed's parent is the root: nothing to diff, and the message says what to do instead.
    selection.setCurrent(2);
    QVERIFY2(diff->message().contains("Compare it with the baseline"), qPrintable(diff->message()));
}

void TestViewsInspector::inspectorDiffAgainstBaselineAndOther()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    inspector.resize(1100, 800);
    inspector.show();
    selection.setCurrent(3);
    inspector.tabs()->setCurrentIndex(views::Inspector::DiffTab);
    inspector.setDiffAgainst(views::Inspector::AgainstBaseline);
    auto* diff = inspector.diffView();
    QVERIFY(diff->leftTitle().startsWith("baseline: node 1 (naive.cpp)"));
    QVERIFY(!diff->sameSource());
    QVERIFY(diff->diff().added > 100);
    QCOMPARE(diff->countsText(), QStringLiteral("+%1 −%2").arg(diff->diff().added).arg(diff->diff().removed));

    // compareRequested from another panel: that node, against the other one, on the Diff tab.
    inspector.tabs()->setCurrentIndex(views::Inspector::TimingTab);
    emit actions.compareRequested(5, 2);
    QCOMPARE(selection.current(), qint64(5));
    QCOMPARE(selection.other(), qint64(2));
    QCOMPARE(inspector.tabs()->currentIndex(), int(views::Inspector::DiffTab));
    QCOMPARE(inspector.diffAgainst(), views::Inspector::AgainstOther);
    QVERIFY(diff->leftTitle().startsWith("node 2 (tuned.cpp"));
    QVERIFY(diff->rightTitle().startsWith("node 5 (tuned.cpp"));
    QCOMPARE(diff->knobLines(), QStringList { "VEC: 1 → 8" });

    // The public slot alone; the other node changes with the Selection.
    inspector.compareWith(1);
    QVERIFY(diff->leftTitle().startsWith("node 1 (naive.cpp)"));
    selection.setOther(4);
    QVERIFY(diff->leftTitle().startsWith("node 4 (broken.cpp"));
    inspector.compareWith(5);
    QVERIFY2(diff->message().contains("itself"), qPrintable(diff->message()));
}

void TestViewsInspector::inspectorCompileMessageMovesCursor()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    inspector.resize(1100, 800);
    inspector.show();
    QVERIFY(QTest::qWaitForWindowExposed(&inspector));
    selection.setCurrent(4);
    QVERIFY(inspector.headerText().contains("failed: compile_error"));
    inspector.tabs()->setCurrentIndex(views::Inspector::CompileTab);
    QCOMPARE(inspector.compileCommand(),
        QString::fromStdString(m_result4["compile"]["command"].get<std::string>()));
    QVERIFY(inspector.compileLog().contains("'retrun' was not declared"));
    const auto& messages = m_result4["compile"]["messages"];
    auto* list = inspector.compileMessages();
    QCOMPARE(list->count(), int(messages.size()));
    QVERIFY(inspector.resourceModel()->rowCount() == 0); // a CPU build has no ptxas resources

    // Click the second message: Source tab, cursor on its line and column, the line marked.
    const int line = messages[1]["line"].get<int>();
    const int column = messages[1]["column"].get<int>();
    QVERIFY(line > 0 && line != messages[0]["line"].get<int>());
    QVERIFY(list->item(1)->text().contains(QStringLiteral("broken.cpp:%1:%2").arg(line).arg(column)));
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(list->item(1)).center());
    QCOMPARE(inspector.tabs()->currentIndex(), int(views::Inspector::SourceTab));
    QCOMPARE(inspector.sourceView()->cursorLine(), line);
    QCOMPARE(inspector.sourceView()->cursorColumn(), column);
    QVERIFY(inspector.sourceView()->text(line - 1).contains("retrun"));
    QVERIFY(inspector.sourceView()->markedLines().contains(line));
    const int first = inspector.sourceView()->firstVisibleLine();
    QVERIFY(line - 1 >= first
        && line - 1 < first + inspector.sourceView()->SendScintilla(QsciScintillaBase::SCI_LINESONSCREEN));

    // The same through the slot, for the first message.
    inspector.showCompileMessage(0);
    QCOMPARE(inspector.sourceView()->cursorLine(), messages[0]["line"].get<int>());

    // ptxas resources, as a CUDA result carries them.
    views::SessionData::Batch batch;
    views::NodeInfo n = *data.node(4);
    proto::EvalResult result = proto::EvalResult::fromJson(m_result4);
    proto::KernelResources ptxas;
    ptxas.name = "softmax_kernel(float const*, float*, int)";
    ptxas.registers = 40;
    ptxas.smemStatic = 4096;
    ptxas.stackBytes = 0;
    ptxas.spillStores = 8;
    ptxas.spillLoads = 12;
    result.compile->resources = { ptxas };
    views::applyResult(n, result);
    batch.nodes.push_back(n);
    data.apply(batch);
    inspector.tabs()->setCurrentIndex(views::Inspector::CompileTab);
    auto* res = inspector.resourceModel();
    QAbstractItemModelTester tester(res, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(res->rowCount(), 1);
    QCOMPARE(res->item(0, 0)->text(), QStringLiteral("softmax_kernel(float const*, float*, int)"));
    QCOMPARE(res->item(0, 1)->text(), QStringLiteral("40"));
    QCOMPARE(res->item(0, 2)->text(), QStringLiteral("4096"));
    QCOMPARE(res->item(0, 4)->text(), QStringLiteral("8"));
    QCOMPARE(res->item(0, 5)->text(), QStringLiteral("12"));

    // A HIP build: VGPRs, AGPRs, SGPRs, LDS, scratch, spills and occupancy, and the ISA in the log.
    proto::KernelResources amd;
    amd.name = "probe(float const*, float*, int)";
    amd.vgprs = 36;
    amd.agprs = 4;
    amd.sgprs = 14;
    amd.ldsBytes = 4096;
    amd.scratchBytes = 272;
    amd.vgprSpills = 0;
    amd.sgprSpills = 2;
    amd.amdOccupancy = proto::KernelResources::AmdOccupancy { "gfx90a", 256, 8.0, "none", nlohmann::json::object() };
    result.compile->resources = { amd };
    result.compile->isa = "_Z5probePKfPfi:\n\tv_mfma_f32_4x4x1f32 a[0:3], v1, v2, a[0:3]\n\ts_endpgm\n";
    views::applyResult(n, result);
    views::SessionData::Batch hipBatch;
    hipBatch.nodes.push_back(n);
    data.apply(hipBatch);
    QCOMPARE(res->rowCount(), 1);
    QCOMPARE(res->columnCount(), 8);
    QCOMPARE(res->horizontalHeaderItem(2)->text(), QStringLiteral("AGPRs"));
    QCOMPARE(res->item(0, 1)->text(), QStringLiteral("36"));
    QCOMPARE(res->item(0, 2)->text(), QStringLiteral("4"));
    QCOMPARE(res->item(0, 3)->text(), QStringLiteral("14"));
    QCOMPARE(res->item(0, 4)->text(), QStringLiteral("4096"));
    QCOMPARE(res->item(0, 5)->text(), QStringLiteral("272"));
    QCOMPARE(res->item(0, 6)->text(), QStringLiteral("0 / 2"));
    QVERIFY(res->item(0, 7)->text().contains(QStringLiteral("8 waves/SIMD at 256 threads (gfx90a), none")));
    QVERIFY(inspector.compileLog().contains(QStringLiteral("v_mfma_f32_4x4x1f32")));
}

void TestViewsInspector::inspectorCorrectnessAndTiming()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    QAbstractItemModelTester tester(
        inspector.correctnessModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    inspector.resize(1100, 800);
    inspector.show();
    inspector.tabs()->setCurrentIndex(views::Inspector::CorrectnessTab);

    selection.setCurrent(5);
    auto* model = inspector.correctnessModel();
    QCOMPARE(model->rowCount(), 4);
    QCOMPARE(model->failedCount(), 1);
    QCOMPARE(inspector.correctnessSummary(),
        QStringLiteral("1 of 4 checks failed; hover a row for its first mismatches."));

    selection.setCurrent(3); // the real worker's checks
    QCOMPARE(model->rowCount(), int(m_result3["checks"].size()));
    QCOMPARE(model->failedCount(), 0);
    QVERIFY(inspector.correctnessSummary().contains("all passed"));

    inspector.tabs()->setCurrentIndex(views::Inspector::TimingTab);
    const auto& timing = m_result3["timing"];
    const QString expected = QStringLiteral("median %1, CV %2%, n=%3")
                                 .arg(views::TimingPlot::formatNs(timing["median_ns"].get<double>()),
                                     QString::number(timing["cv"].get<double>() * 100, 'f', 1))
                                 .arg(timing["samples_ns"].size());
    QVERIFY2(inspector.timingPlot()->summary().startsWith(expected),
        qPrintable(inspector.timingPlot()->summary()));
    QVERIFY(inspector.timingPlot()->summary().contains("baseline median"));

    selection.setCurrent(2);
    QCOMPARE(inspector.timingPlot()->summary(),
        QStringLiteral("median 1.23 ms, CV 2.1%, n=25; baseline median 2.50 ms (2.03x)"));
    selection.setCurrent(4);
    QVERIFY(inspector.timingPlot()->isEmpty());
    QVERIFY2(inspector.timingPlot()->message().startsWith(
                 "No timing: the candidate failed (compile_error) at the compile stage."),
        qPrintable(inspector.timingPlot()->message()));
}

void TestViewsInspector::inspectorLlmTab()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    inspector.show();
    inspector.tabs()->setCurrentIndex(views::Inspector::LlmTab);
    selection.setCurrent(5);
    QVERIFY(data.node(5)->hasLlmCall);
    const QString text = inspector.llmText();
    for (const char* part : { "propose (inherit)", "openai / gpt-test", "status ok",
             "1234 tokens in, 567 out", "latency 2345 ms (first token 456 ms)", "cost $0.0123",
             "You write fast C++ kernels.", "Improve node 3 of softmax (VEC=8).", "assistant (reply)",
             "Use two accumulators.", "#define UNROLL 2" })
        QVERIFY2(text.contains(QLatin1String(part)),
            qPrintable(QStringLiteral("missing '%1' in:\n%2").arg(part, text)));
    // The order is the conversation's: system, user, reply.
    QVERIFY(text.indexOf("You write fast") < text.indexOf("Improve node 3")
        && text.indexOf("Improve node 3") < text.indexOf("Use two"));

    selection.setCurrent(3);
    QCOMPARE(inspector.llmText(), QStringLiteral("Written by the knob synthesizer (no model call)."));
    selection.setCurrent(1);
    QCOMPARE(inspector.llmText(), QStringLiteral("A seed from the problem folder (no model call)."));
}

void TestViewsInspector::inspectorSkipsUnchangedUpdates()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    inspector.show();
    selection.setCurrent(3);
    const int rebuilds = inspector.rebuildCount();

    // A new evaluated child of node 3 raises its visits: node 3 is "changed", its result is not.
    views::NodeInfo child = *data.node(5);
    child.id = data.size();
    child.parent = 3;
    child.children.clear();
    views::applyResult(child, proto::EvalResult::fromJson(m_result3));
    views::SessionData::Batch batch;
    batch.nodes.push_back(child);
    QSignalSpy changed(&data, &views::SessionData::nodesChanged);
    data.apply(batch);
    QCOMPARE(changed.count(), 1);
    QVERIFY(changed.at(0).at(0).value<QVector<qint64>>().contains(3));
    QCOMPARE(inspector.rebuildCount(), rebuilds);
    QVERIFY2(
        inspector.headerText().contains("4 evaluations in its subtree"), qPrintable(inspector.headerText()));

    // A new result for node 3 itself rebuilds the tabs.
    views::NodeInfo again = *data.node(3);
    proto::EvalResult result = proto::EvalResult::fromJson(m_result3);
    result.timing = timingValue(2e6, 0.05, 30, 2.5e6, 1.25);
    views::applyResult(again, result);
    batch.nodes = { again };
    data.apply(batch);
    QCOMPARE(inspector.rebuildCount(), rebuilds + 1);
    inspector.tabs()->setCurrentIndex(views::Inspector::TimingTab);
    QVERIFY(inspector.timingPlot()->summary().startsWith("median 2.00 ms, CV 5.0%, n=30"));
}

void TestViewsInspector::inspectorEditAndEmptyStates()
{
    views::SessionData data;
    loadInto(data);
    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    inspector.show();
    QCOMPARE(inspector.node(), qint64(-1));
    QVERIFY(!inspector.editButton()->isEnabled());

    QSignalSpy edits(&actions, &views::NodeActions::editRequested);
    selection.setCurrent(3);
    QVERIFY(inspector.editButton()->isEnabled());
    QTest::mouseClick(inspector.editButton(), Qt::LeftButton);
    QCOMPARE(edits.count(), 1);
    QCOMPARE(edits.at(0).at(0).toLongLong(), 3);

    selection.setCurrent(0);
    QVERIFY(!inspector.editButton()->isEnabled());
    QVERIFY(inspector.headerText().startsWith("node 0 · root"));
    inspector.tabs()->setCurrentIndex(views::Inspector::TimingTab);
    QCOMPARE(inspector.timingPlot()->message(), QStringLiteral("The root is not a candidate."));
    selection.setCurrent(42);
    QVERIFY(inspector.headerText().isEmpty());
    QVERIFY(!inspector.editButton()->isEnabled());
}

void TestViewsInspector::inspectorOnRealSearch()
{
    // A real search (the CLI, the worker, the knob synthesizer) read back from its store.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString db = dir.path() + "/run.db";
    int rc = -1;
    // uct: a knob synthesizer's mutation child (the default knob-space policy names its own origins).
    runCli({ "--store", db, "run", kSoftmax, "--budget", "3", "--workers", "1", "--policy", "uct" }, &rc, 300000);
    QCOMPARE(rc, 0);
    core::Store store(db.toStdString());
    const auto sessions = store.sessions();
    QCOMPARE(sessions.size(), size_t(1));
    views::SessionData data;
    data.setStore(&store);
    data.loadFromStore(store, sessions[0].id);
    qint64 mutation = -1;
    for (const auto& n : data.nodes())
        if (n.origin == "mutation" && n.evaluated())
            mutation = n.id;
    QVERIFY2(mutation > 0, "the search evaluated no knob child");
    const views::NodeInfo& n = *data.node(mutation);
    const views::NodeInfo& parent = *data.node(n.parent);

    views::Selection selection;
    views::NodeActions actions;
    views::Inspector inspector(&data, &selection, &actions);
    inspector.show();
    selection.setCurrent(mutation);
    QVERIFY(inspector.headerText().startsWith(
        QStringLiteral("node %1 · %2 · mutation").arg(mutation).arg(n.sourceName)));
    QCOMPARE(inspector.sourceView()->text(), data.sourceText(n.sourceHash));

    inspector.tabs()->setCurrentIndex(views::Inspector::DiffTab);
    QCOMPARE(n.sourceHash, parent.sourceHash);
    QVERIFY(inspector.diffView()->sameSource());
    QCOMPARE(inspector.diffView()->knobLines(), views::knobDifferences(parent.knobs, n.knobs));
    QVERIFY(!inspector.diffView()->knobLines().isEmpty());

    inspector.tabs()->setCurrentIndex(views::Inspector::CorrectnessTab);
    QCOMPARE(inspector.correctnessModel()->rowCount(), int(n.result->checks->size()));
    inspector.tabs()->setCurrentIndex(views::Inspector::TimingTab);
    if (n.status == views::NodeInfo::Status::Ok)
        QVERIFY(inspector.timingPlot()->summary().contains(
            QStringLiteral("n=%1").arg(n.result->timing->stats.samplesNs.size())));
    inspector.tabs()->setCurrentIndex(views::Inspector::CompileTab);
    QCOMPARE(inspector.compileCommand(),
        QString::fromStdString(*n.result->compile->command));
    inspector.tabs()->setCurrentIndex(views::Inspector::LlmTab);
    QCOMPARE(inspector.llmText(), QStringLiteral("Written by the knob synthesizer (no model call)."));
}

QTEST_MAIN(TestViewsInspector)
#include "tst_views_inspector.moc"
