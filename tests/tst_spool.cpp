// `hone run --spool DIR`: the worker protocol carried through files to a worker no ssh reaches.
// `hone` and `hone-worker` run as real subprocesses; the test plays the courier: it feeds the
// spooled requests to `hone-worker --stdio` and appends the replies, round after round, until
// the session has spent its budget. Then: the results are the worker's, byte for byte; a
// malformed reply line is reported with FILE:LINE and its request stays pending; a reply in
// another protocol version is refused with both versions named.

#include "core/store.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

struct Run {
    int exitCode = -1;
    std::string out;
    std::string err;
};

std::string readFile(const std::filesystem::path& p)
{
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

int countLines(const std::string& text)
{
    int n = 0;
    for (char c : text)
        n += c == '\n';
    return n;
}

} // namespace

class TestSpool : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::string m_store;

    Run hone(const QStringList& args)
    {
        QProcess p;
        QStringList all { "--store", QString::fromStdString(m_store), "--cache-dir", m_tmp.path() + "/cache",
            "--worker", std::getenv("HONE_WORKER") };
        p.start(std::getenv("HONE_CLI"), all + args);
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

    /// What the courier does on the worker host: `hone-worker --stdio < IN >> OUT` in DIR.
    void feedWorker(const QString& dir, const QString& in, const QString& out, bool append)
    {
        QProcess w;
        w.setWorkingDirectory(dir);
        w.setStandardInputFile(dir + "/" + in);
        w.setStandardOutputFile(dir + "/" + out, append ? QIODevice::Append : QIODevice::Truncate);
        w.start(std::getenv("HONE_WORKER"), { "--stdio", "--cache-dir", m_tmp.path() + "/worker-cache" });
        QVERIFY(w.waitForFinished(600000));
        QCOMPARE(w.exitCode(), 0);
    }

private slots:
    void initTestCase()
    {
        if (!std::getenv("HONE_CLI") || !std::getenv("HONE_WORKER"))
            QSKIP("HONE_CLI / HONE_WORKER are not set (run through ctest)");
        m_store = m_tmp.path().toStdString() + "/hone.db";
    }

    void searchRoundTripsThroughFiles()
    {
        const QString spool = m_tmp.path() + "/spool";
        const QStringList runArgs { "run", QString(HONE_SOURCE_DIR) + "/resources/problems/cpu/softmax", "--spool",
            spool, "--budget", "10", "--workers", "4", "--seed", "3" };

        // Round 0: no worker description yet. The probe is written and the command says what to do.
        Run r = hone(runArgs);
        QCOMPARE(r.exitCode, 6); // ExitCode::Pending
        QVERIFY2(r.err.find("probe.jsonl") != std::string::npos, r.err.c_str());
        QVERIFY(QFile::exists(spool + "/probe.jsonl"));
        feedWorker(spool, "probe.jsonl", "hello.jsonl", false);

        // Round 1: the seeds are spooled; the session waits for them.
        r = hone(runArgs);
        QCOMPARE(r.exitCode, 6); // ExitCode::Pending
        QVERIFY2(r.out.find("waits for spooled replies") != std::string::npos, r.out.c_str());
        hone::core::Store store(m_store);
        const auto sessions = store.sessions();
        QCOMPARE(sessions.size(), size_t(1));
        const int64_t session = sessions.front().id;
        QCOMPARE(store.evaluations(session).size(), size_t(0));
        const int seeds = countLines(readFile((spool + "/requests.jsonl").toStdString()));
        QVERIFY(seeds >= 2);

        // Rounds until the budget is spent: feed the pending requests, resume.
        int rounds = 0;
        while (r.exitCode == 6 && rounds < 10) {
            feedWorker(spool, "requests.jsonl", "replies.jsonl", true);
            r = hone({ "resume", QString::number(session), "--spool", spool });
            ++rounds;
        }
        QVERIFY2(r.exitCode == 0, (r.out + r.err).c_str());
        QVERIFY(rounds >= 2); // the seeds, then children that needed their results
        QVERIFY2(r.out.find("budget of 10 evaluations spent") != std::string::npos, r.out.c_str());

        // Every stored result is the worker's reply for that node, as written to replies.jsonl.
        std::map<std::string, nlohmann::json> replies;
        std::istringstream lines(readFile((spool + "/replies.jsonl").toStdString()));
        for (std::string line; std::getline(lines, line);) {
            auto j = nlohmann::json::parse(line);
            if (j.value("type", "") == "result")
                replies[j["id"]] = j;
        }
        const auto evals = store.evaluations(session);
        QCOMPARE(evals.size(), size_t(10));
        int ok = 0;
        for (const auto& e : evals) {
            const std::string id = "s" + std::to_string(session) + "-n" + std::to_string(e.nodeId);
            QVERIFY2(replies.count(id), id.c_str());
            nlohmann::json stored = e.result;
            stored.erase("objective"); // the engine's shape-set objective, next to the worker's reply
            QCOMPARE(stored.dump(), replies[id].dump());
            ok += e.status == "ok";
        }
        QVERIFY(ok >= 8);
        QCOMPARE(QFileInfo(spool + "/requests.jsonl").size(), qint64(0)); // nothing pending
    }

    void badReplyLinesAreNamedAndSkipped()
    {
        const QString spool = m_tmp.path() + "/spool-bad";
        const QStringList runArgs { "run", QString(HONE_SOURCE_DIR) + "/resources/problems/cpu/softmax", "--spool",
            spool, "--budget", "2", "--workers", "4",
            // The first case evaluated these seeds in the same store: without this they would be
            // cache hits and nothing would be spooled.
            "--no-cache" };
        QCOMPARE(hone(runArgs).exitCode, 6);
        feedWorker(spool, "probe.jsonl", "hello.jsonl", false);
        Run r = hone(runArgs);
        QCOMPARE(r.exitCode, 6); // ExitCode::Pending
        hone::core::Store store(m_store);
        const int64_t session = store.sessions().back().id;
        const std::string requests = readFile((spool + "/requests.jsonl").toStdString());
        const int pending = countLines(requests);
        QCOMPARE(pending, 2); // the seeds

        // Two good replies are damaged on the way back: one cut in half, one from another version.
        feedWorker(spool, "requests.jsonl", "raw.jsonl", false);
        std::istringstream raw(readFile((spool + "/raw.jsonl").toStdString()));
        std::vector<std::string> results;
        for (std::string line; std::getline(raw, line);)
            if (nlohmann::json::parse(line).value("type", "") == "result")
                results.push_back(line);
        QCOMPARE(static_cast<int>(results.size()), pending);
        auto other = nlohmann::json::parse(results[1]);
        other["protocol"] = 99;
        {
            std::ofstream out((spool + "/replies.jsonl").toStdString());
            out << results[0].substr(0, results[0].size() / 2) << "\n" << other.dump() << "\n";
            for (size_t i = 2; i < results.size(); ++i)
                out << results[i] << "\n";
        }
        r = hone({ "resume", QString::number(session), "--spool", spool });
        QCOMPARE(r.exitCode, 6); // ExitCode::Pending
        QVERIFY2(r.err.find("replies.jsonl:1: not a worker message") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("replies.jsonl:2: the worker speaks protocol version 99, this hone speaks version 2")
                != std::string::npos,
            r.err.c_str());
        QCOMPARE(store.evaluations(session).size(), results.size() - 2);
        // The two damaged ones are still asked for; a clean reply for them finishes the session.
        QCOMPARE(countLines(readFile((spool + "/requests.jsonl").toStdString())), 2);
        feedWorker(spool, "requests.jsonl", "replies.jsonl", true);
        r = hone({ "resume", QString::number(session), "--spool", spool });
        // The search is done; its best is re-verified with new seeds: one more request, asked
        // again unchanged by the next resume.
        QCOMPARE(r.exitCode, 6); // ExitCode::Pending
        QCOMPARE(countLines(readFile((spool + "/requests.jsonl").toStdString())), 1);
        QVERIFY(readFile((spool + "/requests.jsonl").toStdString()).find("-reverify1") != std::string::npos);
        feedWorker(spool, "requests.jsonl", "replies.jsonl", true);
        r = hone({ "resume", QString::number(session), "--spool", spool });
        QVERIFY2(r.exitCode == 0, (r.out + r.err).c_str());
        QVERIFY2(r.out.find("again in a fresh worker with new seeds") != std::string::npos, r.out.c_str());
        QCOMPARE(store.evaluations(session).size(), size_t(2));
        QCOMPARE(store.reverifications(session).size(), size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestSpool)
#include "tst_spool.moc"
