#include "core/cache_hashes.h"
#include "core/problem_spec.h"
#include "core/session_lock.h"
#include "core/store.h"

#include "tests/hone_cli.h"

#include <QProcess>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>
#include <unistd.h>

using namespace hone::core;

namespace {

const std::string kFffd = "\xEF\xBF\xBD"; // U+FFFD REPLACEMENT CHARACTER

using CliRun = HoneRun;

/// The `hone` command line (HONE_CLI) on `store`, as a separate process.
CliRun runHone(const QString& store, const QString& cache, const QStringList& args)
{
    return runHoneCli(
        QStringList { "--store", store, "--cache-dir", cache, "--worker", qEnvironmentVariable("HONE_WORKER") } + args,
        240000);
}

} // namespace

class TestStore : public QObject {
    Q_OBJECT
private slots:
    void createsSchemaAndPersists()
    {
        QTemporaryDir dir;
        auto path = std::filesystem::path(dir.path().toStdString()) / "sub" / "hone.db";
        int64_t session = 0;
        std::string hash;
        {
            Store s(path);
            QCOMPARE(s.schemaVersion(), Store::kSchemaVersion);
            ProblemSpec spec = loadProblem(std::string(HONE_TEST_DATA) + "/problems/scale");
            int64_t pid = s.upsertProblem(spec);
            QCOMPARE(s.upsertProblem(spec), pid); // same content, same row
            hash = s.putSource("cpp", "a.cpp", "int x;");
            QCOMPARE(s.putSource("cpp", "a.cpp", "int x;"), hash); // content-addressed
            QCOMPARE(hash.size(), size_t(64));
            session = s.createSession(pid, "cpu", "uct", 42, {{"budget", 10}});
            NodeRecord root {0, -1, 0, "", nlohmann::json::object(), "", "root", "restart", {}};
            s.insertNode(session, root);
            NodeRecord n {1, 0, 1, hash, {{"A", "2"}}, "-O2", "seed", "restart", {}};
            s.insertNode(session, n);
            EvaluationRecord e;
            e.nodeId = 1;
            e.cacheKey = "k1";
            e.status = "ok";
            e.medianNs = 1234.5;
            e.speedup = 2.0;
            e.result = {{"status", "ok"}};
            s.insertEvaluation(session, e);
        }
        Store s(path); // reopen: nothing lost, no migration re-run
        QCOMPARE(s.schemaVersion(), Store::kSchemaVersion);
        auto rec = s.session(session);
        QVERIFY(rec.has_value());
        QCOMPARE(rec->seed, uint64_t(42));
        QCOMPARE(rec->status, std::string("running"));
        QCOMPARE(rec->problemName, std::string("scale"));
        QCOMPARE(rec->config["budget"].get<int>(), 10);
        auto nodes = s.nodes(session);
        QCOMPARE(nodes.size(), size_t(2));
        QCOMPARE(nodes[1].knobs["A"].get<std::string>(), std::string("2"));
        QCOMPARE(nodes[1].flags, std::string("-O2"));
        auto evals = s.evaluations(session);
        QCOMPARE(evals.size(), size_t(1));
        QCOMPARE(evals[0].medianNs, 1234.5);
        QVERIFY(s.cachedEvaluation("k1").has_value());
        QVERIFY(!s.cachedEvaluation("k2").has_value());
        QCOMPARE(s.source(hash)->text, std::string("int x;"));
        s.setSessionStatus(session, "finished", "budget spent");
        QCOMPARE(s.session(session)->stopReason, std::string("budget spent"));
    }

    /// A compiler log, a candidate's stderr or a model's reply with bytes that are not UTF-8:
    /// stored (each bad sequence as U+FFFD) instead of ending the run, and read back.
    void invalidUtf8IsStoredAsReplacementCharacters()
    {
        QTemporaryDir dir;
        const auto path = std::filesystem::path(dir.path().toStdString()) / "hone.db";
        const std::string bad = "error: stray '\xFF' in program; caf\xE9 \xE2\x82";
        const std::string repaired = "error: stray '" + kFffd + "' in program; caf" + kFffd + " " + kFffd;
        const std::string source = "// caf\xE9\nint x;"; // content-addressed: kept byte for byte
        int64_t session = 0;
        std::string hash;
        {
            Store s(path);
            ProblemSpec spec = loadProblem(std::string(HONE_TEST_DATA) + "/problems/scale");
            session = s.createSession(s.upsertProblem(spec), "cpu", "uct", 1, {{"budget", 3}});
            hash = s.putSource("cpp", "latin1.cpp", source);
            s.insertNode(session, NodeRecord {0, -1, 0, "", nlohmann::json::object(), "", "root", "restart", {}});
            s.insertNode(session, NodeRecord {1, 0, 1, hash, {{"A", "1"}}, "", "seed", "restart", {}});
            s.insertNode(session, NodeRecord {2, 0, 2, hash, {{"A", "2"}}, "", "seed", "restart", {}});
            EvaluationRecord e;
            e.nodeId = 1;
            e.status = "failed";
            e.failureKind = "compile_error";
            e.failureMessage = bad;
            e.result = {{"status", "failed"}, {"compile", {{"log", bad}}},
                {"failure", {{"kind", "compile_error"}, {"message", bad}}}};
            s.insertEvaluation(session, e); // threw nlohmann type_error 316 before
            LlmCallRecord c;
            c.purpose = "propose";
            c.prompt = {{"system", "you write kernels"}, {"messages", {{{"role", "user"}, {"content", bad}}}}};
            c.response = bad;
            c.status = "rejected";
            c.error = bad;
            s.insertLlmCall(session, c);
            // The run goes on: the next evaluation is stored like any other.
            EvaluationRecord next;
            next.nodeId = 2;
            next.status = "ok";
            next.medianNs = 10;
            next.result = {{"status", "ok"}};
            s.insertEvaluation(session, next);
        }
        Store s(path); // as a resume reads it
        auto evals = s.evaluations(session);
        QCOMPARE(evals.size(), size_t(2));
        QCOMPARE(evals[0].failureMessage, repaired);
        QCOMPARE(evals[0].result["compile"]["log"].get<std::string>(), repaired);
        QCOMPARE(evals[0].result["failure"]["message"].get<std::string>(), repaired);
        QCOMPARE(evals[1].status, std::string("ok"));
        auto calls = s.llmCalls(session);
        QCOMPARE(calls.size(), size_t(1));
        QCOMPARE(calls[0].response, repaired);
        QCOMPARE(calls[0].error, repaired);
        QCOMPARE(calls[0].prompt["messages"][0]["content"].get<std::string>(), repaired);
        QCOMPARE(s.source(hash)->text, source);
        // Everything read back is JSON-safe again.
        QVERIFY(!nlohmann::json(evals[0].failureMessage).dump().empty());
    }

    /// One process drives a session; a second `hone resume` is refused with the session and the
    /// holder's pid, `hone show` still reads it, and once the lock is released resume works.
    void secondDriverOfASessionIsRefused()
    {
        if (qEnvironmentVariableIsEmpty("HONE_CLI") || qEnvironmentVariableIsEmpty("HONE_WORKER"))
            QSKIP("HONE_CLI and HONE_WORKER are not set (run through ctest)");
        QTemporaryDir dir;
        const QString store = dir.path() + "/hone.db";
        const QString cache = dir.path() + "/cache";
        const QString problem = QString(HONE_TEST_DATA) + "/problems/scale";
        CliRun first = runHone(store, cache, {"run", problem, "--budget", "2", "--seed", "1", "--json"});
        QVERIFY2(first.code == 0, qPrintable(first.err));
        const int64_t session = nlohmann::json::parse(first.out.toStdString())["session"].get<int64_t>();
        const QString id = QString::number(session);
        {
            // This process drives the session now, as `hone run` or the workbench would.
            SessionLock lock(store.toStdString(), session);
            QCOMPARE(SessionLock::holder(store.toStdString(), session).value_or(0), long(::getpid()));
            CliRun second = runHone(store, cache, {"resume", id, "--extra-budget", "1", "--json"});
            QVERIFY2(second.code != 0, qPrintable(second.out));
            QVERIFY2(second.err.contains(QString("session %1 of store %2 is driven by process %3")
                                             .arg(id, store, QString::number(::getpid()))),
                qPrintable(second.err));
            QVERIFY2(second.err.contains("only one process may run a session at a time"), qPrintable(second.err));
            // Reading is not driving.
            CliRun show = runHone(store, cache, {"show", id});
            QVERIFY2(show.code == 0, qPrintable(show.err));
            // The refused resume changed nothing.
            Store s(store.toStdString());
            QCOMPARE(s.evaluations(session).size(), size_t(2));
            QCOMPARE(s.session(session)->status, std::string("finished"));
        }
        QVERIFY(!SessionLock::holder(store.toStdString(), session).has_value());
        CliRun resumed = runHone(store, cache, {"resume", id, "--extra-budget", "1", "--json"});
        QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
        QCOMPARE(nlohmann::json::parse(resumed.out.toStdString())["evaluations"].get<int>(), 3);
    }

    /// Re-verifications: kept apart from the search's evaluations, read back in order, a status
    /// other than verified/failed refused, and a failed node is no warm-start kernel.
    void reverificationsAreKeptApart()
    {
        QTemporaryDir dir;
        Store s(std::filesystem::path(dir.path().toStdString()) / "hone.db");
        ProblemSpec spec = loadProblem(std::string(HONE_TEST_DATA) + "/problems/scale");
        const int64_t session = s.createSession(s.upsertProblem(spec), "cpu", "uct", 1, {});
        const std::string hash = s.putSource("cpp", "a.cpp", "int x;");
        s.insertNode(session, {0, -1, 0, "", nlohmann::json::object(), "", "root", "restart", {}});
        for (int64_t id : {1, 2}) {
            s.insertNode(session, {id, 0, id, hash, {{"A", std::to_string(id)}}, "", "seed", "restart", {}});
            EvaluationRecord e;
            e.nodeId = id;
            e.status = "ok";
            e.speedup = double(id);
            e.result = {{"status", "ok"}};
            s.insertEvaluation(session, e);
        }
        ReverificationRecord bad;
        bad.nodeId = 2;
        bad.status = "failed";
        bad.failureKind = "wrong_result";
        bad.config = {{"seeds", {1000001, 1000002, 1000003}}};
        bad.result = {{"status", "failed"}};
        s.insertReverification(session, bad);
        ReverificationRecord good = bad;
        good.nodeId = 1;
        good.status = "verified";
        good.failureKind.clear();
        good.speedup = 0.98;
        s.insertReverification(session, good);
        ReverificationRecord odd = good;
        odd.status = "maybe";
        QVERIFY_THROWS_EXCEPTION(StoreError, s.insertReverification(session, odd));

        const auto rows = s.reverifications(session);
        QCOMPARE(rows.size(), size_t(2));
        QCOMPARE(rows[0].nodeId, int64_t(2));
        QCOMPARE(rows[0].failureKind, std::string("wrong_result"));
        QCOMPARE(rows[0].config["seeds"][0].get<int64_t>(), int64_t(1000001));
        QCOMPARE(rows[1].status, std::string("verified"));
        QCOMPARE(rows[1].speedup, 0.98);
        QCOMPARE(s.evaluations(session).size(), size_t(2)); // not search evaluations

        // Node 2 (2x) failed its re-verification: a later session warm-starts from node 1 only.
        const auto prior = s.priorKernels("cpu", spec.contentHash, spec.name, spec.family, -1, 10);
        QCOMPARE(prior.size(), size_t(1));
        QCOMPARE(prior[0].node, int64_t(1));
    }

    /// Schema 8 (issue 23): an old store (the schema-4 demo database) opens, keeps its rows, and
    /// takes approvals with a justification, read back as written; older rows read it empty.
    void oldStoreTakesJustifiedApprovals()
    {
        const QString demo = QStringLiteral(HONE_SOURCE_DIR "/resources/demo/h100-ads-2026-11-22.db");
        if (!QFile::exists(demo))
            QSKIP("the demo databases are not in this tree");
        QTemporaryDir dir;
        const QString copy = dir.filePath("old.db");
        QVERIFY(QFile::copy(demo, copy));
        Store s(copy.toStdString());
        QCOMPARE(s.schemaVersion(), Store::kSchemaVersion);
        QCOMPARE(int(s.sessions().size()), 5);
        const size_t before = s.approvals(3).size();
        ApprovalRecord plain;
        plain.nodeId = 5;
        plain.decision = "rejected";
        plain.reviewer = "bob";
        s.insertApproval(3, plain);
        ApprovalRecord justified;
        justified.nodeId = 7;
        justified.decision = "approved";
        justified.reviewer = "alice";
        justified.justification = "re-timed on an idle GPU: CV 1%";
        s.insertApproval(3, justified);
        const auto rows = s.approvals(3);
        QCOMPARE(rows.size(), before + 2);
        QCOMPARE(rows[rows.size() - 2].justification, std::string());
        QCOMPARE(rows.back().justification, std::string("re-timed on an idle GPU: CV 1%"));
    }

    /// The first hash of a worker cache entry is kept per machine; a different one later is
    /// returned (the engine flags it), the same one or another machine's is not; kept across
    /// reopening.
    void cacheHashesAreKeptPerMachine()
    {
        QTemporaryDir dir;
        const auto path = std::filesystem::path(dir.path().toStdString()) / "hone.db";
        const std::string a(64, 'a'), b(64, 'b');
        {
            Store s(path);
            QVERIFY(!s.recordCacheHash("host1 cpu: X", "object", "so/k1", a));
            QVERIFY(!s.recordCacheHash("host1 cpu: X", "object", "so/k1", a));
            QVERIFY(!s.recordCacheHash("host2 cpu: X", "object", "so/k1", b));
            QVERIFY(!s.recordCacheHash("host1 cpu: X", "reference", "so/k1", b));
        }
        Store s(path);
        const auto before = s.recordCacheHash("host1 cpu: X", "object", "so/k1", b);
        QVERIFY(before.has_value());
        QCOMPARE(*before, a);
        QCOMPARE(*s.recordCacheHash("host1 cpu: X", "object", "so/k1", b), a); // the first stays
    }

    /// A result that reports another hash for an entry the store knows carries a warning and an
    /// evidence sentence naming the entry and both hashes; the first result does not.
    void changedCacheEntryIsFlagged()
    {
        QTemporaryDir dir;
        Store s(std::filesystem::path(dir.path().toStdString()) / "hone.db");
        auto result = [](const std::string& sha) {
            auto r = hone::core::protocol::EvalResult::fromJson(nlohmann::json {
                { "type", "result" }, { "id", "1" }, { "status", "ok" },
                { "diagnosis", { { "bound", "memory" }, { "evidence", "at 80% of bandwidth" } } },
                { "environment", { { "device", "cpu: X" }, { "backend", "cpu" }, { "host", "h1" } } },
                { "cache", { { "entries", { { { "kind", "reference" }, { "key", "ref/k.bin" }, { "sha256", sha } } } },
                               { "warnings", nlohmann::json::array() } } } });
            return r;
        };
        auto first = result(std::string(64, '1'));
        QVERIFY(hone::core::flagCacheChanges(s, first).empty());
        QVERIFY(first.cache->warnings.empty());
        auto same = result(std::string(64, '1'));
        QVERIFY(hone::core::flagCacheChanges(s, same).empty());
        auto changed = result(std::string(64, '2'));
        const auto flagged = hone::core::flagCacheChanges(s, changed);
        QCOMPARE(flagged.size(), size_t(1));
        QCOMPARE(changed.cache->warnings.size(), size_t(1));
        const std::string& w = changed.cache->warnings.front();
        QVERIFY2(w.find("ref/k.bin") != std::string::npos && w.find(std::string(64, '1')) != std::string::npos
                && w.find(std::string(64, '2')) != std::string::npos,
            w.c_str());
        QVERIFY(changed.evidence().rfind("at 80% of bandwidth. cache entry reference ref/k.bin", 0) == 0);
        // Decoded again from the stored JSON, the warning is still there.
        const auto stored = hone::core::protocol::EvalResult::fromJson(changed.toJson());
        QCOMPARE(stored.cache->warnings, changed.cache->warnings);
    }

    void refusesNewerSchema()
    {
        QTemporaryDir dir;
        auto path = std::filesystem::path(dir.path().toStdString()) / "hone.db";
        {
            Store s(path);
        }
        sqlite3* db = nullptr;
        sqlite3_open(path.c_str(), &db);
        sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        try {
            Store s(path);
            QFAIL("a newer schema must be refused");
        } catch (const StoreError& e) {
            QVERIFY2(QString(e.what()).contains(QString("has schema version 99, newer than this hone understands (%1); "
                                                        "upgrade hone")
                                                    .arg(Store::kSchemaVersion)),
                e.what());
        }
    }

    void unwritablePathGivesClearError()
    {
        try {
            Store s("/proc/hone-cannot-be-here/hone.db");
            QFAIL("expected an error");
        } catch (const StoreError& e) {
            QVERIFY2(QString(e.what()).startsWith("cannot open store /proc/hone-cannot-be-here/hone.db"), e.what());
            QVERIFY(QString(e.what()).contains("--store PATH"));
        }
    }
};

QTEST_GUILESS_MAIN(TestStore)
#include "tst_store.moc"
