// The workbench as a user drives it (issue 7): start a search from the launcher, prune a branch,
// add a hint and edit a candidate from the tree's context menu while it runs, review and approve
// the best node, find the exported bundle; the steering reaches the engine (its log in the store)
// and the layout survives a restart. Real engine, real worker processes, real SQLite.
#include "app/workbench/engine_runner.h"
#include "app/workbench/launcher.h"
#include "app/workbench/main_window.h"
#include "core/store.h"
#include "views/kb_curator.h"
#include "views/node_menu.h"
#include "views/review_panel.h"
#include "views/tree_view.h"

#include <QAction>
#include <QDockWidget>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#ifdef HONE_TEST_LLM_SERVER
#include "tst_llm_server.h"
using hone::testing::ScriptedLlmServer;
using hone::testing::ScriptedReply;
#endif

using namespace hone;

namespace {

QString problemDir() { return QStringLiteral(HONE_SOURCE_DIR "/resources/problems/cpu/softmax"); }

int evaluated(const views::SessionData& d)
{
    int n = 0;
    for (const auto& node : d.nodes())
        n += node.id != 0 && node.evaluated() ? 1 : 0;
    return n;
}

/// Waits, with the event loop running, until `done` holds; false after `ms`.
bool waitFor(const std::function<bool()>& done, int ms)
{
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > ms)
            return false;
        QTest::qWait(50);
    }
    return true;
}

} // namespace

class TestWorkbench : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_dir.setAutoRemove(qEnvironmentVariableIsEmpty("HONE_KEEP_TEST_DIR"));
        // Layout settings go to the temporary folder, never to the user's.
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.filePath("config"));
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.filePath("config"));
        qputenv("HONE_CACHE_DIR", m_dir.filePath("cache").toUtf8());
    }

    void userSteersReviewsAndApproves()
    {
        app::WorkbenchConfig config;
        config.runner.store = m_dir.filePath("hone.db").toStdString();
        config.runner.workerPath = qEnvironmentVariable("HONE_WORKER").toStdString();
        config.exportRoot = m_dir.filePath("exports");
        config.author = "alice";
        config.restoreLayout = false;
        app::MainWindow w(config);
        w.show();

        // The launcher, as a user fills it in.
        w.launcher()->setProblemDir(problemDir());
        w.launcher()->setBudget(36);
        w.launcher()->setWorkers(2);
        auto* start = w.launcher()->findChild<QPushButton*>("start");
        QVERIFY(start && start->isEnabled());
        QTest::mouseClick(start, Qt::LeftButton);
        QVERIFY(w.runner()->running());
        auto& data = *w.sessionData();
        QVERIFY2(waitFor([&] { return evaluated(data) >= 6; }, 240000), "the search produced no results");
        QVERIFY(data.sessionId() > 0);
        const qint64 session = data.sessionId();

        // Pause, so that the steering lands before the budget runs out.
        auto* pause = w.launcher()->findChild<QPushButton*>("pause");
        QTest::mouseClick(pause, Qt::LeftButton);
        QVERIFY(w.runner()->paused());

        // The tree's context menu on live nodes: prune the second seed's branch, hint the best
        // node, edit the best node as a new child.
        auto* tree = w.treeView();
        tree->refresh();
        const qint64 best = data.bestNode();
        QVERIFY(best > 0);
        // A branch off the best node's path: an evaluated node that is neither the best nor one
        // of its ancestors.
        std::set<qint64> path;
        for (qint64 a = best; a >= 0; a = data.node(a)->parent)
            path.insert(a);
        qint64 seed2 = -1; // the node to prune
        for (const auto& n : data.nodes())
            if (n.id > 0 && n.evaluated() && !path.count(n.id) && n.id != data.baselineNode())
                seed2 = n.id;
        QVERIFY2(seed2 > 0, "no branch off the best node's path to prune");
        tree->setHintTextProvider([](qint64) { return std::optional<QString>("try wider vectors"); });
        w.setEditProvider([&](qint64 node) {
            core::SteeringCommand c;
            c.kind = core::SteeringCommand::Kind::ManualChild;
            c.node = node;
            const views::NodeInfo& at = *data.node(node);
            for (auto it = at.knobs.begin(); it != at.knobs.end(); ++it)
                c.knobs[it.key()] = it->get<std::string>();
            c.flags = at.flags.toStdString();
            // The engineer's own choice: one knob of the node changed to a setting (admissible
            // under tuned.cpp's require lines) that the search has not tried yet, whatever
            // the search happened to try before the pause.
            auto tried = [&](const std::map<std::string, std::string>& knobs) {
                for (const auto& n : data.nodes()) {
                    if (n.sourceHash != at.sourceHash || n.flags != at.flags)
                        continue;
                    std::map<std::string, std::string> k;
                    for (auto it = n.knobs.begin(); it != n.knobs.end(); ++it)
                        k[it.key()] = it->get<std::string>();
                    if (k == knobs)
                        return true;
                }
                return false;
            };
            const std::vector<std::pair<std::string, std::vector<std::string>>> choices = { { "UNROLL", { "4", "2", "1" } },
                { "ROWS_PER_TASK", { "64", "8", "1" } }, { "EXP", { "1", "0" } }, { "THREADS", { "2", "1" } },
                { "VEC", { "8", "16", "1" } } };
            const std::map<std::string, std::string> base(c.knobs.begin(), c.knobs.end());
            for (const auto& [knob, values] : choices)
                for (const auto& v : values) {
                    std::map<std::string, std::string> k = base;
                    if (!k.count(knob) || k[knob] == v)
                        continue;
                    k[knob] = v;
                    if (std::stoi(k["VEC"]) * std::stoi(k["UNROLL"]) > 32 || tried(k))
                        continue;
                    for (const auto& [name, value] : k)
                        c.knobs[name] = value;
                    return std::optional<core::SteeringCommand>(c);
                }
            return std::optional<core::SteeringCommand>();
        });
        {
            QMenu menu;
            auto built = tree->buildMenu(menu, best);
            QVERIFY(built.hint && built.hint->isEnabled());
            built.hint->trigger();
        }
        {
            QMenu menu;
            auto built = tree->buildMenu(menu, best);
            QVERIFY(built.edit && built.edit->isEnabled());
            built.edit->trigger();
        }
        {
            QMenu menu;
            auto built = tree->buildMenu(menu, seed2);
            QVERIFY(built.prune && built.prune->isEnabled());
            built.prune->trigger();
        }
        QTest::mouseClick(pause, Qt::LeftButton); // "Resume"
        QVERIFY(!w.runner()->paused());
        QVERIFY2(w.runner()->wait(600000), "the search did not end");
        QCOMPARE(data.status(), QString("finished"));

        // Every command reached the engine: the store's steering log says applied.
        core::Store store(config.runner.store);
        QStringList applied;
        for (const auto& s : store.steering(session)) {
            QVERIFY2(s.outcome == "applied",
                qPrintable(QString::fromStdString(s.command) + ": " + QString::fromStdString(s.outcome)));
            if (s.command == "prune" || s.command == "hint" || s.command == "manual_child")
                QCOMPARE(QString::fromStdString(s.author), QString("alice"));
            applied << QString::fromStdString(s.command);
        }
        QVERIFY2(applied.contains("pause") && applied.contains("resume") && applied.contains("hint")
                && applied.contains("manual_child"),
            qPrintable(applied.join(",")));
        // The edited child joined the tree under the best node and was evaluated.
        const views::NodeInfo* manual = nullptr;
        for (const auto& n : data.nodes())
            if (n.origin == "manual")
                manual = &n;
        QVERIFY(manual);
        QCOMPARE(manual->parent, best);
        QVERIFY(manual->evaluated());
        QVERIFY(data.node(best)->hints.contains("try wider vectors"));
        {
            QVERIFY(applied.contains("prune"));
            QVERIFY(data.node(seed2)->pruned);
            // Nothing new grew under the pruned seed after the prune: every node below it is older
            // than the manual child (the prune was sent before the edit was applied).
            std::function<void(qint64)> noNew = [&](qint64 id) {
                for (qint64 c : data.node(id)->children) {
                    QVERIFY2(data.node(c)->seq < manual->seq, qPrintable(QString("node %1 grew after the prune").arg(c)));
                    noNew(c);
                }
            };
            noNew(seed2);
        }

        // Review the best node from its context menu, and approve it as alice.
        const qint64 winner = data.bestNode();
        {
            QMenu menu;
            auto built = tree->buildMenu(menu, winner);
            QVERIFY(built.review && built.review->isEnabled());
            built.review->trigger();
        }
        auto* review = w.review();
        QCOMPARE(review->node(), winner);
        QVERIFY(w.dockOf(review)->isVisible());
        review->reviewerEdit()->setText("alice");
        review->noteEdit()->setPlainText("checked the diff and the timing spread");
        QTest::mouseClick(review->approveButton(), Qt::LeftButton);
        const auto approvals = store.approvals(session);
        QCOMPARE(approvals.size(), size_t(1));
        QCOMPARE(approvals[0].nodeId, winner);
        QCOMPARE(QString::fromStdString(approvals[0].reviewer), QString("alice"));
        QCOMPARE(approvals[0].decision, std::string("approved"));
        const std::filesystem::path bundle = approvals[0].exportDir;
        QVERIFY2(bundle.string().rfind(m_dir.filePath("exports").toStdString(), 0) == 0, bundle.c_str());
        for (const char* f : {"knobs.json", "build.sh", "evidence.json", "run_test.sh", "reference.cpp"})
            QVERIFY2(std::filesystem::exists(bundle / f), (bundle / f).c_str());
        QVERIFY(std::filesystem::exists(bundle / data.node(winner)->sourceName.toStdString()));
    }

    void llmSearchFromTheLauncher()
    {
#ifndef HONE_TEST_LLM_SERVER
        QSKIP("cpp-httplib is not installed (apt install libcpp-httplib-dev): no scripted LLM server");
#else
        // A model behind an OpenAI-compatible endpoint (the scripted server speaks the real
        // protocol): picked in the launcher, it writes a child whose prompt and reply the
        // inspector shows.
        ScriptedLlmServer server;
        server.requireKey("wb-test-key");
        std::ifstream in(std::filesystem::path(HONE_TEST_DATA) / "llm" / "softmax_fast.cpp");
        std::stringstream kernel;
        kernel << in.rdbuf();
        ScriptedReply reply;
        reply.text = ScriptedLlmServer::fenced(kernel.str());
        server.push(reply);
        qputenv("HONE_WB_KEY", "wb-test-key");

        app::WorkbenchConfig config;
        config.runner.store = m_dir.filePath("llm.db").toStdString();
        config.runner.workerPath = qEnvironmentVariable("HONE_WORKER").toStdString();
        config.restoreLayout = false;
        app::MainWindow w(config);
        w.show();
        w.launcher()->setProblemDir(problemDir());
        w.launcher()->setBudget(3); // the two seeds and one proposal
        w.launcher()->setWorkers(1);
        // A key variable that is not set is refused with the reason, before anything starts.
        w.launcher()->setLlm("openai", QString::fromStdString(server.url()), "scripted-coder", "HONE_WB_NO_SUCH_KEY");
        QVERIFY(!w.startSearch());
        QVERIFY(!w.runner()->running());
        w.launcher()->setLlm("openai", QString::fromStdString(server.url()), "scripted-coder", "HONE_WB_KEY");
        QVERIFY(w.startSearch());
        QVERIFY2(w.runner()->wait(600000), "the LLM search did not end");
        auto& data = *w.sessionData();
        const views::NodeInfo* written = nullptr;
        for (const auto& n : data.nodes())
            if (n.hasLlmCall)
                written = &n;
        QVERIFY2(written, "no node was written by the model");
        QVERIFY(written->evaluated());
        core::Store store(config.runner.store);
        const auto calls = store.llmCalls(data.sessionId());
        QCOMPARE(calls.size(), size_t(1));
        QCOMPARE(calls[0].nodeId, written->id);
        QCOMPARE(calls[0].model, std::string("scripted-coder"));
        // The key went to the server and nowhere into the store.
        QCOMPARE(server.requests().size(), size_t(1));
        QVERIFY(calls[0].prompt.dump().find("wb-test-key") == std::string::npos);
#endif
    }

    void layoutIsSavedAndRestored()
    {
        app::WorkbenchConfig config;
        config.runner.store = m_dir.filePath("layout.db").toStdString();
        config.restoreLayout = true;
        {
            app::MainWindow w(config);
            w.show();
            QDockWidget* curator = w.dockOf(static_cast<QWidget*>(w.curator()));
            QVERIFY(curator);
            curator->setFloating(true);
            w.close(); // saves the layout
        }
        app::MainWindow again(config);
        again.show();
        QTest::qWait(100);
        QDockWidget* curator = again.dockOf(static_cast<QWidget*>(again.curator()));
        QVERIFY(curator->isFloating());
    }

private:
    QTemporaryDir m_dir {QDir::tempPath() + "/tst_workbench-XXXXXX"};
};

QTEST_MAIN(TestWorkbench)
#include "tst_workbench.moc"
