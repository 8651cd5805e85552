// The workbench's session assembly (issue 17): it is the one `hone run` uses, so the workbench
// records skills and knowledge in the base its own panels show ($HONE_KB wins over the store's
// file), and it can evaluate on a target of a targets file (here an ssh target on the loopback
// sshd of scripts/infra/start-local-sshd.sh). Real engine, real workers, real SQLite.
#include "app/workbench/engine_runner.h"
#include "app/workbench/launcher.h"
#include "app/workbench/main_window.h"
#include "core/store.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/skills.h"
#include "views/kb_curator.h"

#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace hone;

namespace {

QString problemDir() { return QStringLiteral(HONE_SOURCE_DIR "/resources/problems/cpu/softmax"); }

std::string sshConfig()
{
    const QByteArray c = qgetenv("HONE_TEST_SSH_CONFIG");
    return c.isEmpty() ? std::string("/tmp/local-infra/sshd/ssh_config") : c.toStdString();
}

/// Empty when the loopback sshd answers; otherwise why not.
QString sshMissing()
{
    if (!std::filesystem::exists(sshConfig()))
        return QString::fromStdString("no loopback sshd (" + sshConfig()
            + " missing); start it with scripts/infra/start-local-sshd.sh");
    QProcess p;
    p.start("ssh", { "-F", QString::fromStdString(sshConfig()), "hone-test-host", "true" });
    if (!p.waitForFinished(20000) || p.exitCode() != 0) {
        p.kill();
        return "the loopback sshd does not answer: " + QString::fromUtf8(p.readAllStandardError());
    }
    return {};
}

size_t filesUnder(const std::filesystem::path& dir)
{
    std::error_code ec;
    size_t n = 0;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        n += it->is_regular_file() ? 1 : 0;
    return n;
}

} // namespace

class TestWorkbenchSession : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.filePath("config"));
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.filePath("config"));
        qputenv("HONE_CACHE_DIR", m_dir.filePath("cache").toUtf8());
    }

    void skillsGoToTheBaseThePanelShows()
    {
        // $HONE_KB names a base apart from the store: the search's skill lands there, the
        // store's own file gets none, and the workbench's curator lists it.
        const std::string kbPath = m_dir.filePath("knowledge.db").toStdString();
        qputenv("HONE_KB", QByteArray::fromStdString(kbPath));
        app::WorkbenchConfig config;
        config.runner.store = m_dir.filePath("skills.db").toStdString();
        config.runner.workerPath = qEnvironmentVariable("HONE_WORKER").toStdString();
        config.restoreLayout = false;
        {
            app::MainWindow w(config);
            w.show();
            w.launcher()->setProblemDir(problemDir());
            w.launcher()->setBudget(8);
            w.launcher()->setWorkers(2);
            QVERIFY(w.startSearch());
            QVERIFY2(w.runner()->wait(600000), "the search did not end");
            QTest::qWait(200); // the runner's last batch reaches the window

            knowledge::KnowledgeBase kb(kbPath);
            const auto skills = kb.skills();
            QVERIFY2(!skills.empty(), "no skill was written to $HONE_KB");
            {
                knowledge::KnowledgeBase own(config.runner.store);
                QVERIFY2(own.skills().empty(), "a skill went to the store's own file, not to $HONE_KB");
            }
            // The panel shows the base the run wrote to.
            std::string uid;
            for (const auto& d : kb.documents())
                if (d.category == knowledge::Category::Skill)
                    uid = d.uid;
            QVERIFY(!uid.empty());
            w.curator()->search(QString());
            QVERIFY2(w.curator()->selectDocument(QString::fromStdString(uid)),
                "the workbench's curator does not list the skill the run wrote");
        }
        qunsetenv("HONE_KB");
    }

    void searchOnATargetOfTheTargetsFile()
    {
        if (const QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        // A targets file with one ssh target whose worker cache is a folder of its own: a search
        // started from the launcher with "Run on" = that target fills that cache, not the local one.
        const std::string remoteCache = m_dir.filePath("remote-cache").toStdString();
        const std::string file = m_dir.filePath("targets.toml").toStdString();
        std::ofstream(file) << "[targets.loop]\nexecutor = \"ssh\"\nhost = \"hone-test-host\"\nssh_config = \""
                            << sshConfig() << "\"\nworker = \"" << qEnvironmentVariable("HONE_WORKER").toStdString()
                            << "\"\ncache_dir = \"" << remoteCache << "\"\nparallel = 2\n";
        app::WorkbenchConfig config;
        config.runner.store = m_dir.filePath("remote.db").toStdString();
        config.runner.workerPath = qEnvironmentVariable("HONE_WORKER").toStdString();
        config.runner.cacheDir = m_dir.filePath("local-cache").toStdString();
        config.runner.targetsFile = file;
        config.restoreLayout = false;
        app::MainWindow w(config);
        w.show();
        QVERIFY2(w.launcher()->setRunOn("loop"), "the launcher does not list the targets file's target");
        QVERIFY(!w.launcher()->setRunOn("nowhere"));
        QCOMPARE(w.launcher()->runOn(), QStringLiteral("loop"));
        w.launcher()->setProblemDir(problemDir());
        w.launcher()->setBudget(4);
        w.launcher()->setWorkers(2);
        QVERIFY(w.startSearch());
        QVERIFY2(w.runner()->wait(600000), "the search did not end");
        QTest::qWait(200);

        core::Store store(config.runner.store);
        const auto sessions = store.sessions();
        QCOMPARE(sessions.size(), size_t(1));
        int ok = 0;
        for (const auto& e : store.evaluations(sessions[0].id))
            ok += e.status == "ok" ? 1 : 0;
        QVERIFY2(ok >= 2, "the search on the target evaluated nothing");
        QVERIFY2(filesUnder(remoteCache) > 0, "the target's worker cache is empty: the search did not run there");
        QCOMPARE(filesUnder(config.runner.cacheDir), size_t(0));
    }

private:
    QTemporaryDir m_dir { QDir::tempPath() + "/tst_workbench_session-XXXXXX" };
};

QTEST_MAIN(TestWorkbenchSession)
#include "tst_workbench_session.moc"
