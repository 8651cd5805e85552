#include "core/problem_spec.h"
#include "core/store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

using namespace hone::core;

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
