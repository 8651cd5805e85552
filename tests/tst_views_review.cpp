// Review and approval: a real short CPU search (softmax, the local worker), its best candidate
// reviewed in the ReviewPanel, approved (bundle exported, its standalone test built and run for
// real), rejected (row and hint), refused without a reviewer; the evidence view and the
// paired-ratio speedup interval; a CUDA bundle whose standalone test compiles with nvcc.

#include "backends/local_executor.h"
#include "core/engine.h"
#include "core/export_bundle.h"
#include "core/problem_spec.h"
#include "core/store.h"
#include "views/diff_view.h"
#include "views/evidence.h"
#include "views/review_concerns.h"
#include "views/review_panel.h"
#include "views/session_data.h"

#include <QAbstractItemModelTester>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QCheckBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTextDocument>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <memory>

using namespace hone;
namespace fs = std::filesystem;
namespace proto = hone::core::protocol;

/// A change made to a clean result (a row of concernsOfAResult).
using ResultChange = void (*)(proto::EvalResult&);
Q_DECLARE_METATYPE(ResultChange)

namespace {

fs::path sourceDir()
{
    const char* s = std::getenv("HONE_SOURCE_DIR");
    return s && *s ? fs::path(s) : fs::path(HONE_SOURCE_DIR);
}

std::string readFile(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Runs `script` (with args) to its end; returns {exit code, output}.
std::pair<int, QString> runScript(const fs::path& script, const QStringList& args, int timeoutMs)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QString::fromStdString(script.string()), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {-1, QStringLiteral("timed out: ") + QString::fromLocal8Bit(p.readAll())};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromLocal8Bit(p.readAll())};
}

} // namespace

class TestViewsReview : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::unique_ptr<core::Store> m_store;
    int64_t m_session = 0;
    views::SessionData m_data;
    qint64 m_best = -1;
    qint64 m_baseline = -1;

    int approvalCount() const { return static_cast<int>(m_store->approvals(m_session).size()); }

private slots:
    /// A real search: 8 evaluations of softmax on the CPU through hone-worker.
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        m_store = std::make_unique<core::Store>(m_tmp.path().toStdString() + "/hone.db");
        backends::LocalExecutorConfig cfg;
        const char* w = std::getenv("HONE_WORKER");
        cfg.workerPath = w ? w : "hone-worker";
        cfg.cacheDir = m_tmp.path().toStdString() + "/cache";
        cfg.parallel = 1;
        backends::LocalExecutor exec(cfg);
        core::Engine engine(*m_store, exec);
        core::RunOptions opt;
        opt.problemDir = sourceDir() / "resources" / "problems" / "cpu" / "softmax";
        opt.budget = 8;
        opt.workers = 1;
        opt.seed = 5;
        opt.samples = 25;
        const core::Report r = engine.run(opt);
        QCOMPARE(r.progress.evaluations, 8);
        m_session = r.progress.session;
        m_data.setStore(m_store.get());
        m_data.loadFromStore(*m_store, m_session);
        m_best = m_data.bestNode();
        m_baseline = m_data.baselineNode();
        QVERIFY(m_best > 0);
        QVERIFY(m_baseline > 0);
        QCOMPARE(int(m_data.node(m_best)->status), int(views::NodeInfo::Status::Ok));
    }

    /// The interval on samples whose ratios are known: exact order statistics and coverage.
    void speedupIntervalKnownSamples()
    {
        // Ratios baseline/candidate are 1, 2, ..., 25 (in shuffled order): the median is 13 and
        // the 95% sign-test interval is [r_8, r_18] with coverage 1 - 2 P(Bin(25, .5) <= 7).
        std::vector<double> cand, base;
        for (int i = 0; i < 25; ++i) {
            const int ratio = (i * 7) % 25 + 1;
            cand.push_back(1000.0);
            base.push_back(1000.0 * ratio);
        }
        core::SpeedupInterval ci = core::pairedSpeedupInterval(cand, base);
        QVERIFY(ci.valid);
        QCOMPARE(ci.pairs, 25);
        QCOMPARE(ci.median, 13.0);
        QCOMPARE(ci.low, 8.0);
        QCOMPARE(ci.high, 18.0);
        QVERIFY2(std::fabs(ci.coverage - 0.956715) < 1e-5, qPrintable(QString::number(ci.coverage, 'g', 8)));

        // Constant ratio: a point interval.
        ci = core::pairedSpeedupInterval(std::vector<double>(20, 50.0), std::vector<double>(20, 100.0));
        QVERIFY(ci.valid);
        QCOMPARE(ci.median, 2.0);
        QCOMPARE(ci.low, 2.0);
        QCOMPARE(ci.high, 2.0);

        // Five pairs cannot reach 95%: the full range, and the coverage says so (1 - 2/32).
        ci = core::pairedSpeedupInterval({1, 1, 1, 1, 1}, {3, 1, 5, 2, 4});
        QVERIFY(ci.valid);
        QCOMPARE(ci.low, 1.0);
        QCOMPARE(ci.high, 5.0);
        QCOMPARE(ci.median, 3.0);
        QCOMPARE(ci.coverage, 0.9375);

        // Even count: the interpolated median, as the worker computes timing.speedup.
        ci = core::pairedSpeedupInterval({1, 1, 1, 1, 1, 1}, {1, 2, 3, 4, 5, 6});
        QCOMPARE(ci.median, 3.5);
        QCOMPARE(ci.coverage, 0.96875);

        // Unpaired or empty: no interval, and why.
        ci = core::pairedSpeedupInterval({1, 2, 3}, {1, 2});
        QVERIFY(!ci.valid);
        QVERIFY(QString::fromStdString(ci.why).contains(QLatin1String("not paired")));
        QVERIFY(!core::pairedSpeedupInterval({}, {}).valid);
        core::protocol::Timing unpaired;
        unpaired.stats.samplesNs = {1.0, 2.0};
        unpaired.stats.medianNs = 1.5;
        const auto noBase = core::speedupInterval(unpaired);
        QVERIFY(!noBase.valid);
        QVERIFY(!noBase.why.empty());

        // On the worker's real result: the interval's median is the worker's own speedup.
        const auto& timing = *m_data.node(m_best)->result->timing;
        const auto real = core::speedupInterval(timing);
        QVERIFY2(real.valid, real.why.c_str());
        QCOMPARE(real.pairs, 25);
        QVERIFY(std::fabs(real.median - *timing.speedup) < 1e-12);
        QVERIFY(real.low <= real.median && real.median <= real.high);
    }

    /// The evidence view on the real best result: the matrix, the interval, and CPU's clear
    /// "not measured" for occupancy and profile.
    void evidenceOnRealResult()
    {
        views::EvidenceView view;
        const auto* best = m_data.node(m_best);
        const auto* base = m_data.node(m_baseline);
        view.setResults(best->result, base->result);
        auto* model = view.correctnessModel();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        // small[0..3], each under the problem's 3 [check] distributions, 3 drawn shapes with their
        // init and under one distribution each, and the re-check of each of the 3 bench shapes.
        QCOMPARE(model->rowCount(), 4 + 4 * 3 + 3 * 2 + 3);
        QCOMPARE(model->columnCount(), 4); // seeds 1 2 3 and 1000 (after timing)
        QCOMPARE(model->headerData(0, Qt::Vertical).toString(), QStringLiteral("small[0]"));
        QCOMPARE(model->headerData(3, Qt::Horizontal).toString(), QStringLiteral("seed 1000 (after timing)"));
        QCOMPARE(model->index(1, 2).data().toString(), QStringLiteral("ok"));
        const int recheck = model->rowCount() - 3; // the re-checks of the bench shapes come last
        QVERIFY(!model->index(recheck, 0).data().isValid()); // the bench shape is not checked with seed 1
        QCOMPARE(model->index(recheck, 3).data().toString(), QStringLiteral("ok"));
        QVERIFY(model->index(3, 1).data(Qt::ToolTipRole).toString().contains(QLatin1String("max abs err")));

        const QString timing = view.timingText();
        QVERIFY2(timing.contains(QLatin1String("95% CI")), qPrintable(timing));
        QVERIFY(timing.contains(QLatin1String("p10")));
        QVERIFY(timing.contains(QLatin1String("Baseline: median")));
        const auto ci = core::speedupInterval(*best->result->timing);
        QVERIFY2(timing.contains(QString::number(ci.low, 'f', 2) + QStringLiteral("x")), qPrintable(timing));

        QVERIFY(view.sectionText(QStringLiteral("occupancy")).startsWith(QLatin1String("not measured")));
        QVERIFY(view.sectionText(QStringLiteral("profile")).startsWith(QLatin1String("not measured")));
        const QString roofline = view.sectionText(QStringLiteral("roofline"));
        QVERIFY2(roofline.contains(QLatin1String("bound: ")), qPrintable(roofline));
        QVERIFY(roofline.contains(QLatin1String("% of bandwidth")));
        QVERIFY(!roofline.contains(QLatin1String("not measured")));

        // Nothing evaluated yet: every section says so.
        view.setResults(std::nullopt, std::nullopt);
        QCOMPARE(model->rowCount(), 0);
        QVERIFY(view.timingText().startsWith(QLatin1String("not measured")));
        QVERIFY(view.sectionText(QStringLiteral("roofline")).startsWith(QLatin1String("not measured")));
    }

    /// CUDA occupancy and profile deltas from results in the documented format.
    void evidenceCudaDeltas()
    {
        using namespace core::protocol;
        auto kernel = [](std::string name, int64_t registers, int64_t staticSmem, int64_t dynamicSmem) {
            LaunchOccupancy k;
            k.name = std::move(name);
            k.registers = registers;
            k.staticSmem = staticSmem;
            k.dynamicSmem = dynamicSmem;
            return k;
        };
        auto cudaResult = [](Occupancy occupancy) {
            EvalResult r;
            r.status = EvalStatus::Ok;
            r.environment = Environment {"cuda: test", "cuda", std::nullopt, std::nullopt, {}};
            r.occupancy = std::move(occupancy);
            return r;
        };
        const EvalResult base = cudaResult(Occupancy {{kernel("softmax_naive", 32, 0, 0)}, 1.0, "none", "softmax_naive", std::nullopt, {}});
        EvalResult cand = cudaResult(Occupancy {{kernel("other", 16, 0, 0), kernel("softmax_warp", 64, 1024, 1024)}, 0.5,
            "registers", "softmax_warp", std::nullopt, {}});
        cand.profile = Profile {};
        cand.profile->main = ProfiledKernel {"softmax_warp", 81.5, 30.0, 45.0, {Stall {"long_scoreboard", 40.0, {}}}, {}};
        const auto occ = views::occupancyDeltas(cand, base);
        QCOMPARE(occ.rows.size(), size_t(5));
        QCOMPARE(occ.rows[0].before, QStringLiteral("100.0%"));
        QCOMPARE(occ.rows[0].after, QStringLiteral("50.0%"));
        QCOMPARE(occ.rows[0].change, QStringLiteral("-50.0 pts"));
        QCOMPARE(occ.rows[1].after, QStringLiteral("64")); // the main kernel's, not the first one's
        QCOMPARE(occ.rows[1].change, QStringLiteral("+100.0%"));
        QCOMPARE(occ.rows[2].after, QStringLiteral("2.0 KiB"));
        QCOMPARE(occ.rows[3].change, QStringLiteral("none → registers"));

        const auto prof = views::profileDeltas(cand, base);
        QCOMPARE(prof.rows.size(), size_t(4));
        QCOMPARE(prof.rows[0].before, QStringLiteral("not measured")); // the baseline was not profiled
        QCOMPARE(prof.rows[0].after, QStringLiteral("81.5%"));
        QVERIFY(!prof.rows[0].measured);
        QCOMPARE(prof.rows[3].after, QStringLiteral("long_scoreboard 40.0%"));
        EvalResult unprofiled = base;
        unprofiled.profile = Profile {};
        unprofiled.profile->error = "ncu not found";
        const auto failed = views::profileDeltas(unprofiled, base);
        QVERIFY(failed.rows.empty());
        QCOMPARE(failed.why, QStringLiteral("not measured: ncu not found"));
    }

    /// Approve with "also write a PyTorch package" ticked: the bundle gains torch/ with the op's
    /// registration, problem.json and its pytest, and the message names the op.
    void approveWritesTorchPackageWhenAsked()
    {
        views::Selection selection;
        views::NodeActions actions;
        views::ReviewPanel panel(&m_data, &selection, &actions);
        panel.setStore(m_store.get());
        const QString root = m_tmp.path() + QStringLiteral("/exports-torch");
        panel.setExportRoot(root);
        emit actions.reviewRequested(m_best);
        auto* torch = panel.findChild<QCheckBox*>(QStringLiteral("exportTorch"));
        QVERIFY(torch);
        QVERIFY(!torch->isChecked()); // off unless asked
        torch->setChecked(true);
        panel.reviewerEdit()->setText(QStringLiteral("bob"));
        // A loaded machine may make the real timing noisy; then a justification is due.
        panel.justificationEdit()->setPlainText(QStringLiteral("timing spread from the shared test machine"));
        QSignalSpy approvedSpy(&panel, &views::ReviewPanel::approved);
        QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
        QVERIFY2(approvedSpy.count() == 1 || approvedSpy.wait(300000), qPrintable(panel.message()));
        QVERIFY2(panel.message().contains(QLatin1String("PyTorch op hone::")), qPrintable(panel.message()));
        const fs::path d = approvedSpy.at(0).at(1).toString().toStdString();
        for (const char* f : {"torch/problem.json", "torch/test_op.py", "torch/README.md", "torch/k0_config.cpp"})
            QVERIFY2(fs::is_regular_file(d / f), f);
    }

    /// Approve: the bundle is exported with every file, the approval row holds the reviewer, the
    /// note and the folder, and the bundle's standalone test builds and passes with only c++.
    void approveExportsBundle()
    {
        views::Selection selection;
        views::NodeActions actions;
        views::ReviewPanel panel(&m_data, &selection, &actions);
        panel.setStore(m_store.get());
        const QString root = m_tmp.path() + QStringLiteral("/exports");
        panel.setExportRoot(root);
        emit actions.reviewRequested(m_best); // the panel follows review requests
        QCOMPARE(panel.node(), m_best);
        QVERIFY(panel.headerText().contains(QStringLiteral("node %1").arg(m_best)));
        if (m_best != m_baseline) {
            QVERIFY(panel.diffView()->message().isEmpty());
            QVERIFY(panel.diffView()->leftTitle().startsWith(QLatin1String("baseline")));
        } else {
            QVERIFY(panel.diffView()->message().contains(QLatin1String("baseline itself")));
        }
        QCOMPARE(panel.evidenceView()->correctnessModel()->rowCount(), 4 + 4 * 3 + 3 * 2 + 3); // with [check]

        QSignalSpy approvedSpy(&panel, &views::ReviewPanel::approved);
        panel.reviewerEdit()->setText(QStringLiteral("alice"));
        panel.noteEdit()->setPlainText(QStringLiteral("checked the odd widths"));
        panel.justificationEdit()->setPlainText(QStringLiteral("timing spread from the shared test machine"));
        const int before = approvalCount();
        QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
        // The export runs off the GUI thread: until it is done the buttons are off and the panel
        // says what it is doing.
        QVERIFY(panel.busy());
        QVERIFY(!panel.approveButton()->isEnabled());
        QVERIFY(!panel.rejectButton()->isEnabled());
        QVERIFY2(panel.message().startsWith(QLatin1String("Exporting node")), qPrintable(panel.message()));
        QVERIFY2(approvedSpy.count() == 1 || approvedSpy.wait(300000), qPrintable(panel.message()));
        QVERIFY(!panel.busy());
        QVERIFY(panel.approveButton()->isEnabled());
        const QString dir = root + QStringLiteral("/session-%1-node-%2").arg(m_session).arg(m_best);
        QCOMPARE(approvedSpy.at(0).at(0).toLongLong(), m_best);
        QCOMPARE(approvedSpy.at(0).at(1).toString(), dir);

        const auto rows = m_store->approvals(m_session);
        QCOMPARE(int(rows.size()), before + 1);
        const auto& a = rows.back();
        QCOMPARE(a.nodeId, int64_t(m_best));
        QCOMPARE(a.decision, std::string("approved"));
        QCOMPARE(a.reviewer, std::string("alice"));
        QCOMPARE(a.note, std::string("checked the odd widths"));
        QCOMPARE(QString::fromStdString(a.exportDir), dir);
        QCOMPARE(a.evidence["node"].get<int64_t>(), int64_t(m_best));
        QCOMPARE(a.evidence["review"]["reviewer"].get<std::string>(), std::string("alice"));
        QVERIFY(panel.historyLines().join('\n').contains(QLatin1String("approved by alice")));

        const fs::path d = dir.toStdString();
        const auto* best = m_data.node(m_best);
        for (const std::string& f : {best->sourceName.toStdString(), std::string("knobs.json"), std::string("build.sh"),
                 std::string("evidence.json"), std::string("hone/kernel.h"), std::string("reference.cpp"),
                 std::string("problem.toml"), std::string("test_candidate.cpp"), std::string("run_test.sh")})
            QVERIFY2(fs::is_regular_file(d / f), f.c_str());
        QCOMPARE(readFile(d / best->sourceName.toStdString()), m_data.sourceText(best->sourceHash).toStdString());
        QCOMPARE(nlohmann::json::parse(readFile(d / "knobs.json")), best->knobs);
        QCOMPARE(readFile(d / "hone" / "kernel.h"), readFile(sourceDir() / "resources" / "include" / "hone" / "kernel.h"));
        const auto evidence = nlohmann::json::parse(readFile(d / "evidence.json"));
        QCOMPARE(evidence["review"]["decision"].get<std::string>(), std::string("approved"));
        QVERIFY(evidence["baseline"]["evaluation"]["result"].contains("timing"));
        QVERIFY(!evidence["device"].get<std::string>().empty());
        QVERIFY(!evidence["toolchain"]["compiler"].get<std::string>().empty());
        // Over a shape set the node's speedup is the weighted objective; the median and its
        // interval are the timed shape's paired ratios.
        const double median = evidence["speedup"]["median"].get<double>();
        const double headline
            = evidence["speedup"].contains("objective") ? evidence["speedup"]["objective"].get<double>() : median;
        QVERIFY(std::fabs(headline - best->speedup) < 1e-9);
        QVERIFY(evidence["speedup"]["ci95"][0].get<double>() <= median);
        QVERIFY(evidence["speedup"]["ci95"][1].get<double>() >= median);
        for (auto it = best->knobs.begin(); it != best->knobs.end(); ++it)
            QVERIFY(readFile(d / "build.sh").find("-D" + it.key() + "=" + it->get<std::string>()) != std::string::npos);

        // The standalone test, for real: reference and candidate built as shared objects by c++.
        const auto [rc, out] = runScript(d / "run_test.sh", {}, 240000);
        QVERIFY2(rc == 0, qPrintable(out));
        QVERIFY2(out.contains(QLatin1String("softmax: 12 of 12 checks passed")), qPrintable(out));

        // The same test fails a wrong candidate: 1/N everywhere is right only for N = 1.
        const fs::path broken = fs::path(m_tmp.path().toStdString()) / "broken";
        fs::copy(d, broken, fs::copy_options::recursive);
        fs::remove_all(broken / "build");
        std::ofstream(broken / best->sourceName.toStdString()) << R"(#include "hone/kernel.h"
extern "C" int hone_run(const hone_args* a)
{
    const int64_t n = a->outputs[0].shape[1];
    float* y = static_cast<float*>(a->outputs[0].data);
    for (int64_t i = 0; i < hone_numel(&a->outputs[0]); ++i)
        y[i] = 1.0f / static_cast<float>(n);
    return 0;
}
)";
        const auto [brc, bout] = runScript(broken / "run_test.sh", {}, 240000);
        QVERIFY2(brc == 1, qPrintable(bout));
        QVERIFY2(bout.contains(QLatin1String("softmax: 3 of 12 checks passed")), qPrintable(bout));
        QVERIFY(bout.contains(QLatin1String("FAIL small[1] seed 1: output 'y'")));
        QVERIFY(bout.contains(QLatin1String("out of tolerance")));
    }

    /// Reject: a rejection row with no export, and the reason asked for as a hint.
    void rejectRecordsAndHints()
    {
        views::Selection selection;
        views::NodeActions actions;
        views::ReviewPanel panel(&m_data, &selection, &actions);
        panel.setStore(m_store.get());
        panel.setExportRoot(m_tmp.path() + QStringLiteral("/exports"));
        // Another evaluated candidate than the approved one, so its export folder must not appear.
        qint64 node = -1;
        for (const auto& n : m_data.nodes())
            if (n.id != m_best && n.status == views::NodeInfo::Status::Ok && node < 0)
                node = n.id;
        QVERIFY(node > 0);
        selection.setCurrent(node);
        panel.review(selection.current());
        QSignalSpy hints(&actions, &views::NodeActions::hintRequested);
        QSignalSpy rejected(&panel, &views::ReviewPanel::rejected);
        panel.reviewerEdit()->setText(QStringLiteral("bob"));
        panel.noteEdit()->setPlainText(QStringLiteral("too fragile on odd N"));
        const int before = approvalCount();
        QTest::mouseClick(panel.rejectButton(), Qt::LeftButton);
        // The row is written off the GUI thread: until it lands the buttons are off and the panel
        // says what it is doing.
        QVERIFY(panel.busy());
        QVERIFY(!panel.approveButton()->isEnabled());
        QVERIFY(!panel.rejectButton()->isEnabled());
        QVERIFY2(panel.message().startsWith(QLatin1String("Recording the rejection")), qPrintable(panel.message()));
        QVERIFY2(rejected.count() == 1 || rejected.wait(60000), qPrintable(panel.message()));
        QVERIFY(!panel.busy());
        QVERIFY(panel.rejectButton()->isEnabled());
        QVERIFY2(panel.message().startsWith(QLatin1String("Rejected by bob")), qPrintable(panel.message()));
        QCOMPARE(rejected.count(), 1);
        QCOMPARE(rejected.at(0).at(0).toLongLong(), node);
        QCOMPARE(hints.count(), 1);
        QCOMPARE(hints.at(0).at(0).toLongLong(), node);
        QCOMPARE(hints.at(0).at(1).toString(), QStringLiteral("Rejected by bob: too fragile on odd N"));
        const auto rows = m_store->approvals(m_session);
        QCOMPARE(int(rows.size()), before + 1);
        QCOMPARE(rows.back().decision, std::string("rejected"));
        QCOMPARE(rows.back().reviewer, std::string("bob"));
        QCOMPARE(rows.back().note, std::string("too fragile on odd N"));
        QVERIFY(rows.back().exportDir.empty());
        QCOMPARE(rows.back().evidence["node"].get<int64_t>(), int64_t(node));
        QVERIFY(panel.historyLines().join('\n').contains(QLatin1String("rejected by bob")));
        QVERIFY(!fs::exists(fs::path(m_tmp.path().toStdString()) / "exports"
            / QStringLiteral("session-%1-node-%2").arg(m_session).arg(node).toStdString())); // a rejection exports nothing
    }

    /// No reviewer: neither button writes a row, and the message says what to do.
    void emptyReviewerRefused()
    {
        views::Selection selection;
        views::NodeActions actions;
        views::ReviewPanel panel(&m_data, &selection, &actions);
        panel.setStore(m_store.get());
        panel.setExportRoot(m_tmp.path() + QStringLiteral("/exports-none"));
        panel.review(m_best);
        QSignalSpy approvedSpy(&panel, &views::ReviewPanel::approved);
        QSignalSpy hints(&actions, &views::NodeActions::hintRequested);
        panel.reviewerEdit()->setText(QStringLiteral("   "));
        panel.noteEdit()->setPlainText(QStringLiteral("looks fine"));
        const int before = approvalCount();
        QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
        QCOMPARE(approvedSpy.count(), 0);
        QVERIFY2(panel.message().contains(QLatin1String("reviewer's name is required")), qPrintable(panel.message()));
        QTest::mouseClick(panel.rejectButton(), Qt::LeftButton);
        QCOMPARE(hints.count(), 0);
        QCOMPARE(approvalCount(), before);
        QVERIFY(!fs::exists(m_tmp.path().toStdString() + "/exports-none"));

        // No writable store: refused with a message too.
        views::ReviewPanel readOnly(&m_data, &selection, &actions);
        readOnly.review(m_best);
        QVERIFY(!readOnly.approveButton()->isEnabled());
        readOnly.reviewerEdit()->setText(QStringLiteral("carol"));
        QVERIFY(!readOnly.approve());
        QVERIFY(readOnly.message().contains(QLatin1String("No writable store")));
        QCOMPARE(approvalCount(), before);
    }

    /// `hone export` on the same session through the CLI: same bundle, and a clear error for a
    /// node that does not exist.
    void cliExport()
    {
        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (run through ctest)");
        const QString dir = m_tmp.path() + QStringLiteral("/cli-export");
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(QString::fromLocal8Bit(cli), {QStringLiteral("--store"), m_tmp.path() + QStringLiteral("/hone.db"),
            QStringLiteral("export"), QStringLiteral("%1/%2").arg(m_session).arg(m_best), dir});
        QVERIFY(p.waitForFinished(60000));
        const QString out = QString::fromLocal8Bit(p.readAll());
        QVERIFY2(p.exitCode() == 0, qPrintable(out));
        QVERIFY(out.contains(QLatin1String("run_test.sh")));
        QVERIFY(fs::is_regular_file(dir.toStdString() + "/test_candidate.cpp"));
        QVERIFY(fs::is_regular_file(dir.toStdString() + "/evidence.json"));
        p.start(QString::fromLocal8Bit(cli), {QStringLiteral("--store"), m_tmp.path() + QStringLiteral("/hone.db"),
            QStringLiteral("export"), QStringLiteral("%1/999").arg(m_session), dir});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 3); // ExitCode::Input: no such node
        QVERIFY(QString::fromLocal8Bit(p.readAll()).contains(QLatin1String("has no candidate node 999")));
    }

    /// A CUDA candidate's bundle: nvcc build line with the arch, knobs and flags, and a
    /// standalone test (cudaMalloc/cudaMemcpy) that compiles with nvcc here (it needs a GPU to run).
    void cudaBundleCompiles()
    {
        const fs::path problemDir = sourceDir() / "resources" / "problems" / "ads" / "softmax";
        const core::ProblemSpec spec = core::loadProblem(problemDir);
        core::Store store(m_tmp.path().toStdString() + "/cuda.db");
        const int64_t problem = store.upsertProblem(spec);
        const int64_t session = store.createSession(problem, "cuda", "uct", 1, {{"check_seeds", {1, 2, 3}}});
        store.insertNode(session, {0, -1, 0, "", nlohmann::json::object(), "", "root", "", {}});
        std::string naive, warp;
        for (const auto& seed : spec.seeds) {
            const std::string h = store.putSource(seed.lang, seed.fileName, seed.source);
            if (seed.fileName == "naive.cu")
                naive = h;
            if (seed.fileName == "warp.cu")
                warp = h;
        }
        QVERIFY(!naive.empty() && !warp.empty());
        store.insertNode(session, {1, 0, 1, naive, nlohmann::json::object(), "", "seed", "restart", {}});
        const nlohmann::json knobs = {{"BLOCK", "256"}, {"GRID", "1"}, {"LANES", "32"}, {"MAXV", "4"}, {"ROWS", "2"}, {"VEC", "2"}};
        store.insertNode(session, {2, 0, 2, warp, knobs, "--use_fast_math", "seed", "restart", {}});
        core::EvaluationRecord e;
        e.nodeId = 2;
        e.status = "ok";
        e.speedup = 3.0;
        e.medianNs = 1000;
        e.device = "NVIDIA H100 80GB HBM3";
        e.result = {{"status", "ok"}, {"environment", {{"device", e.device}, {"backend", "cuda"},
            {"compiler", "nvcc 12.8"}, {"flags", "-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -shared"}}},
            {"timing", {{"samples_ns", {1000.0, 1010.0, 990.0}}, {"median_ns", 1000.0},
                {"baseline", {{"samples_ns", {3000.0, 3030.0, 2970.0}}, {"median_ns", 3000.0}}}, {"speedup", 3.0}}}};
        store.insertEvaluation(session, e);

        const fs::path dir = fs::path(m_tmp.path().toStdString()) / "cuda-export";
        const core::ExportResult r = core::exportBundle(store, session, 2, dir);
        QVERIFY(r.hasTest);
        QCOMPARE(r.lang, std::string("cuda"));
        QVERIFY(fs::is_regular_file(dir / "test_candidate.cu"));
        QVERIFY(fs::is_regular_file(dir / "warp.cu"));
        const std::string build = readFile(dir / "build.sh");
        QVERIFY2(build.find("nvcc} -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC")
                != std::string::npos, build.c_str());
        QVERIFY(build.find("-DLANES=32 -DMAXV=4 -DROWS=2 -DVEC=2 --use_fast_math") != std::string::npos);
        QVERIFY(build.find("# Architecture: sm_90a") != std::string::npos);
        QVERIFY(build.find("-lcublas") == std::string::npos); // softmax allows no library
        const std::string test = readFile(dir / "test_candidate.cu");
        QVERIFY(test.find("#define HONE_TEST_CUDA 1") != std::string::npos);
        QVERIFY(test.find("cudaMemcpy") != std::string::npos);
        QCOMPARE(r.evidence["speedup"]["ci95"][0].get<double>(), 3.0);

        QString nvcc = QStandardPaths::findExecutable(QStringLiteral("nvcc"));
        if (nvcc.isEmpty() && fs::exists("/usr/local/cuda/bin/nvcc"))
            nvcc = QStringLiteral("/usr/local/cuda/bin/nvcc");
        if (nvcc.isEmpty())
            QSKIP("nvcc not found: the CUDA bundle's test was written but not compiled");
        qputenv("NVCC", nvcc.toLocal8Bit());
        const auto [rc, out] = runScript(dir / "run_test.sh", {QStringLiteral("--build-only")}, 480000);
        QVERIFY2(rc == 0, qPrintable(out));
        QVERIFY(fs::is_regular_file(dir / "build" / "candidate.so"));
        QVERIFY(fs::is_regular_file(dir / "build" / "reference.so"));
        QVERIFY(fs::is_regular_file(dir / "build" / "test_candidate"));
    }

    /// The concerns a result raises (issue 23), one kind per row; a clean result raises none.
    void concernsOfAResult_data()
    {
        using proto::EvalResult;
        QTest::addColumn<ResultChange>("change");
        QTest::addColumn<QString>("kind");
        QTest::addRow("clean") << ResultChange(+[](EvalResult&) {}) << "";
        QTest::addRow("noisy candidate") << ResultChange(+[](EvalResult& r) { r.timing->stats.cv = 0.25; })
                                         << "noisy_timing";
        QTest::addRow("noisy baseline") << ResultChange(+[](EvalResult& r) { r.timing->baseline->cv = 0.3; })
                                        << "noisy_timing";
        QTest::addRow("noisy other shape") << ResultChange(+[](EvalResult& r) {
            proto::ShapeResult s;
            s.index = 1;
            s.label = "bench[1]";
            s.timing.emplace();
            s.timing->stats.medianNs = 1000.0;
            s.timing->stats.cv = 0.4;
            r.shapes = std::vector { s };
        }) << "noisy_timing";
        QTest::addRow("suspicious") << ResultChange(+[](EvalResult& r) {
            r.diagnosis->suspicious = true;
            r.diagnosis->evidence = "under the floor";
        }) << "suspicious";
        QTest::addRow("failing shape") << ResultChange(+[](EvalResult& r) {
            proto::Check c;
            c.shape = "small[2]";
            c.seed = 1;
            c.ok = false;
            r.checks = std::vector { c };
        }) << "failing_shape";
        QTest::addRow("slower shape") << ResultChange(+[](EvalResult& r) {
            r.objective.emplace();
            r.objective->value = 1.2;
            r.objective->slowerOn = { "bench[2]" };
        }) << "slower_shape";
    }
    void concernsOfAResult()
    {
        QFETCH(ResultChange, change);
        QFETCH(QString, kind);
        // A quiet result: 25 paired samples, every ratio 3x, CV 1%.
        proto::EvalResult result;
        result.status = proto::EvalStatus::Ok;
        result.timing.emplace();
        result.timing->shape = "bench[0]";
        result.timing->stats.medianNs = 1012.0;
        result.timing->stats.cv = 0.01;
        result.timing->speedup = 3.0;
        result.timing->baseline.emplace();
        result.timing->baseline->medianNs = 3036.0;
        result.timing->baseline->cv = 0.01;
        for (int i = 0; i < 25; ++i) {
            result.timing->stats.samplesNs.push_back(1000.0 + i);
            result.timing->baseline->samplesNs.push_back(3000.0 + 3 * i);
        }
        result.diagnosis.emplace();
        proto::Check check;
        check.shape = "small[0]";
        check.seed = 1;
        check.ok = true;
        result.checks = std::vector { check };
        change(result);
        const auto concerns = views::reviewConcerns(result);
        if (kind.isEmpty()) {
            QVERIFY(concerns.empty());
            return;
        }
        QCOMPARE(int(concerns.size()), 1);
        QCOMPARE(QString(views::concernKey(concerns[0].kind)), kind);
        QVERIFY(!concerns[0].text.isEmpty());
    }

    /// Issue 23: a noisy candidate (CV 98%, a 95% interval that reaches below 1x) is not
    /// approved on a click: the panel lists the concerns and asks for a justification; with one
    /// typed, the approval goes through and the audit row and evidence.json keep it.
    void approvalOfNoisyCandidateNeedsJustification()
    {
        views::SessionData data;
        data.setStore(m_store.get());
        data.loadFromStore(*m_store, m_session);
        views::NodeInfo noisy = *data.node(m_best);
        auto& timing = *noisy.result->timing;
        timing.stats.samplesNs.assign(25, 1000.0);
        timing.baseline->samplesNs.clear();
        for (int i = 0; i < 25; ++i)
            timing.baseline->samplesNs.push_back(i < 10 ? 800.0 : 20000.0); // ten pairs slower than the baseline
        timing.stats.cv = 0.98;
        noisy.cv = 0.98;
        // The real search's best may come out slower on some shape on a loaded machine; that
        // concern is not this test's subject, so the node's per-shape verdict is made clean.
        if (noisy.result->objective)
            noisy.result->objective->slowerOn.clear();
        data.apply({{noisy}, {}});

        views::Selection selection;
        views::NodeActions actions;
        views::ReviewPanel panel(&data, &selection, &actions);
        panel.setStore(m_store.get());
        const QString root = m_tmp.path() + QStringLiteral("/exports-noisy");
        panel.setExportRoot(root);
        panel.review(m_best);
        const QString concerns = panel.concernTexts().join('\n');
        QVERIFY2(concerns.contains(QLatin1String("CV 98.0%")), qPrintable(concerns));
        QVERIFY2(concerns.contains(QLatin1String("includes 1x")), qPrintable(concerns));
        // Shown as a list with one item per concern, not as text with the list's tags in it.
        const auto* shown = panel.findChild<QLabel*>(QStringLiteral("concerns"));
        QVERIFY(shown);
        QTextDocument doc;
        doc.setHtml(shown->text());
        const QString plain = doc.toPlainText();
        QVERIFY2(!plain.contains(QLatin1String("<li>")) && !plain.contains(QLatin1String("</li>")), qPrintable(plain));
        QVERIFY2(shown->text().count(QLatin1String("<li>")) == panel.concernTexts().size(), qPrintable(shown->text()));
        QVERIFY2(panel.concernTexts().size() >= 2, qPrintable(concerns));
        QVERIFY(panel.justificationEdit()->isEnabled());
        panel.reviewerEdit()->setText(QStringLiteral("carol"));
        panel.noteEdit()->setPlainText(QStringLiteral("looks fine"));

        QSignalSpy approvedSpy(&panel, &views::ReviewPanel::approved);
        const int before = approvalCount();
        QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
        QCOMPARE(approvedSpy.count(), 0);
        QVERIFY2(panel.message().contains(QLatin1String("needs a justification")), qPrintable(panel.message()));
        QCOMPARE(approvalCount(), before);
        QVERIFY(!fs::exists(root.toStdString()));
        panel.justificationEdit()->setPlainText(QStringLiteral("short")); // too short to be a reason
        QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
        QCOMPARE(approvedSpy.count(), 0);

        const QString why = QStringLiteral("re-timed on an idle node: CV 2%, interval 3.1x-3.4x");
        panel.justificationEdit()->setPlainText(why);
        QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
        QVERIFY2(approvedSpy.count() == 1 || approvedSpy.wait(300000), qPrintable(panel.message()));
        const auto rows = m_store->approvals(m_session);
        QCOMPARE(int(rows.size()), before + 1);
        QCOMPARE(QString::fromStdString(rows.back().justification), why);
        QCOMPARE(rows.back().reviewer, std::string("carol"));
        const auto evidence = nlohmann::json::parse(readFile(fs::path(rows.back().exportDir) / "evidence.json"));
        QCOMPARE(QString::fromStdString(evidence["review"]["justification"].get<std::string>()), why);
        QStringList kinds;
        for (const auto& c : evidence["review"]["concerns"])
            kinds << QString::fromStdString(c["kind"].get<std::string>());
        QVERIFY2(kinds.contains("noisy_timing") && kinds.contains("interval_includes_1x"), qPrintable(kinds.join(',')));
        QVERIFY2(panel.historyLines().join('\n').contains(QLatin1String("justified: re-timed")),
            qPrintable(panel.historyLines().join('\n')));
        // The store reopened (schema 8) reads the row back the same.
        core::Store again(m_store->path());
        QCOMPARE(QString::fromStdString(again.approvals(m_session).back().justification), why);
    }

    /// A node whose re-verification failed (tst_reverify makes one for real) says so in the
    /// header and cannot be approved: nothing is exported or recorded.
    void failedReverificationCannotBeApproved()
    {
        qint64 node = -1;
        for (const auto& e : m_store->evaluations(m_session))
            if (e.status == "ok" && e.nodeId != m_best && e.nodeId != m_baseline)
                node = e.nodeId;
        if (node < 0)
            QSKIP("the search has no third passing node");
        core::ReverificationRecord rec;
        rec.nodeId = node;
        rec.status = "failed";
        rec.failureKind = "wrong_result";
        rec.failureMessage = "small[1] seed 1000123: output 'y' out of tolerance";
        rec.result = nlohmann::json::object();
        m_store->insertReverification(m_session, rec);

        views::Selection selection;
        views::NodeActions actions;
        views::ReviewPanel panel(&m_data, &selection, &actions);
        panel.setStore(m_store.get());
        const QString root = m_tmp.path() + QStringLiteral("/exports-reverify");
        panel.setExportRoot(root);
        panel.review(node);
        QVERIFY2(panel.headerText().contains(QLatin1String("FAILED re-verification (wrong_result")),
            qPrintable(panel.headerText()));
        QSignalSpy approvedSpy(&panel, &views::ReviewPanel::approved);
        panel.reviewerEdit()->setText(QStringLiteral("alice"));
        const int before = approvalCount();
        QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
        QCOMPARE(approvedSpy.count(), 0);
        QVERIFY2(panel.message().contains(QLatin1String("cannot be approved")), qPrintable(panel.message()));
        QCOMPARE(approvalCount(), before);
        QVERIFY(!fs::exists(root.toStdString()));
    }
};

QTEST_MAIN(TestViewsReview)
#include "tst_views_review.moc"
