// `hone run --synth llm` as a real subprocess against a scripted model server: a correct faster
// kernel, one that fails to compile and is repaired, one reply that is not a kernel. Then the
// trajectory export, the key that must appear nowhere, and clear errors for an unreachable
// endpoint, a refused key, an unknown model and bad options.

#include "core/store.h"
#include "tst_llm_server.h"

#include "knowledge/knowledge_base.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

using hone::testing::ScriptedLlmServer;
using hone::testing::ScriptedReply;

namespace {

const std::string kKey = "sk-hone-e2e-7Q2xW9vLp4Zk8Rt1Yb6N";
const char* kModel = "scripted-coder";

std::string readFile(const std::filesystem::path& p)
{
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string canned(const std::string& name)
{
    return readFile(std::filesystem::path(HONE_TEST_DATA) / "llm" / name);
}

ScriptedReply kernelReply(const std::string& file)
{
    ScriptedReply r;
    r.text = ScriptedLlmServer::fenced(canned(file));
    r.chunkSize = 97;
    return r;
}

struct Run {
    int exitCode = -1;
    std::string out;
    std::string err;
};

bool looksLikeACrash(const std::string& err)
{
    for (const char* s : { "terminate called", "what():", "Aborted", "core dumped", "Segmentation fault" })
        if (err.find(s) != std::string::npos)
            return true;
    return false;
}

} // namespace

class TestLlmE2e : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::string m_store;
    std::string m_config;

    Run hone(const QStringList& args, const std::string& key = kKey)
    {
        const char* cli = std::getenv("HONE_CLI");
        const char* worker = std::getenv("HONE_WORKER");
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("OPENAI_API_KEY");
        env.remove("ANTHROPIC_API_KEY");
        env.remove("HONE_LLM_CONFIG");
        env.insert("XDG_CONFIG_HOME", m_tmp.path() + "/config"); // no user configuration
        if (!key.empty())
            env.insert("HONE_E2E_KEY", QString::fromStdString(key));
        p.setProcessEnvironment(env);
        QStringList all { "--store", QString::fromStdString(m_store), "--cache-dir",
            m_tmp.path() + "/cache" };
        if (worker)
            all << "--worker" << worker;
        p.start(cli, all + args);
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

    QStringList runArgs(const std::string& url, int budget, const QString& model = kModel)
    {
        return { "run", QString(HONE_SOURCE_DIR) + "/resources/problems/cpu/softmax", "--synth", "llm",
            "--llm-url", QString::fromStdString(url), "--llm-model", model, "--llm-key-env", "HONE_E2E_KEY",
            "--llm-config", QString::fromStdString(m_config), "--budget", QString::number(budget), "--seed",
            "11",
            // The cases share one store: warm-start nodes from earlier cases would take the small
            // budgets that each case gives the model.
            "--no-warm-start" };
    }

private slots:
    void initTestCase()
    {
        if (!std::getenv("HONE_CLI"))
            QSKIP("HONE_CLI is not set (run through ctest)");
        m_store = m_tmp.path().toStdString() + "/hone.db";
        m_config = m_tmp.path().toStdString() + "/llm.json";
        std::ofstream(m_config)
            << R"({"prices": {"scripted-coder": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}})";
    }

    void searchFindsAFasterKernelWithRepairs()
    {
        ScriptedLlmServer server;
        server.requireKey(kKey);
        server.knownModels({ kModel });
        server.push(kernelReply("softmax_fast.cpp"));
        server.push(kernelReply("softmax_broken.cpp"));
        server.push(kernelReply("softmax_fixed.cpp"));
        ScriptedReply prose;
        prose.text = canned("not_a_kernel.txt");
        server.push(prose);
        server.push(kernelReply("softmax_alt.cpp"));

        Run r = hone(runArgs(server.url(), 7) << "--json"
                                              << "--llm-log-prompts");
        // The log of this run, for people reading the test output.
        qInfo().noquote() << "---- hone run stderr ----\n" << QString::fromStdString(r.err);
        qInfo().noquote() << "---- hone run stdout ----\n" << QString::fromStdString(r.out);
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY(!looksLikeACrash(r.err));
        auto report = nlohmann::json::parse(r.out);
        const int64_t session = report["session"].get<int64_t>();
        QCOMPARE(report["evaluations"].get<int>(), 7);
        QCOMPARE(report["stop_reason"].get<std::string>(), std::string("budget of 7 evaluations spent"));

        // The winner is the model's, correct and faster than the seed baseline.
        QVERIFY(report["best"].is_object());
        const double speedup = report["best"]["speedup"].get<double>();
        QVERIFY2(report["best"]["source"].get<std::string>().starts_with("llm_"), r.out.c_str());
        QVERIFY2(speedup > 1.0, r.out.c_str());

        // Calls, tokens, cost.
        const auto& llm = report["llm"];
        QCOMPARE(llm["calls"].get<int>(), 5);
        QCOMPARE(llm["proposals"].get<int>(), 3);
        QCOMPARE(llm["repairs"].get<int>(), 2);
        QCOMPARE(llm["rejected"].get<int>(), 1);
        QCOMPARE(llm["errors"].get<int>(), 0);
        QCOMPARE(llm["model"].get<std::string>(), std::string("openai/scripted-coder"));
        QVERIFY(llm["tokens_in"].get<int64_t>() > 5 * 2000);
        QVERIFY(llm["tokens_out"].get<int64_t>() > 1000);
        const double cost = llm["cost_usd"].get<double>();
        QVERIFY(std::abs(cost
                    - (3.0 * llm["tokens_in"].get<double>() + 15.0 * llm["tokens_out"].get<double>()) / 1e6)
            < 1e-9);
        QVERIFY(r.err.find("---- system ----") != std::string::npos); // --llm-log-prompts
        QVERIFY(r.err.find("REJECTED: the reply has no fenced code block") != std::string::npos);
        QVERIFY(r.err.find("FAILED compile_error") != std::string::npos);

        // The tree: seeds #1 #2, then the model's nodes; repairs are children of what they fix.
        {
            hone::core::Store store(m_store);
            auto nodes = store.nodes(session);
            std::map<int64_t, hone::core::EvaluationRecord> evals;
            for (auto& e : store.evaluations(session))
                evals.emplace(e.nodeId, e);
            QCOMPARE(nodes.size(), size_t(8));
            QCOMPARE(nodes[3].origin, std::string("llm"));
            QCOMPARE(evals[3].status, std::string("ok"));
            QCOMPARE(nodes[4].origin, std::string("llm"));
            QCOMPARE(evals[4].failureKind, std::string("compile_error"));
            QCOMPARE(nodes[5].origin, std::string("repair"));
            QCOMPARE(nodes[5].parentId, int64_t(4));
            QCOMPARE(evals[5].status, std::string("ok"));
            QCOMPARE(nodes[6].origin, std::string("llm"));
            QCOMPARE(evals[6].failureKind, std::string("bad_candidate"));
            QCOMPARE(nodes[7].origin, std::string("repair"));
            QCOMPARE(nodes[7].parentId, int64_t(6));
            QCOMPARE(evals[7].status, std::string("ok"));
            auto calls = store.llmCalls(session);
            QCOMPARE(calls.size(), size_t(5));
            for (const auto& c : calls) {
                QVERIFY(c.prompt["messages"][0]["content"].get<std::string>().size()
                    > 1000); // prompt stored per node
                QVERIFY(c.latencyMs > 0);
            }
            QCOMPARE(calls[3].response, canned("not_a_kernel.txt"));
        }
        // Resume goes on with the stored settings; the key comes from the environment again.
        server.push(kernelReply("softmax_alt.cpp"));
        Run resumed = hone({ "resume", QString::number(session), "--extra-budget", "1", "--json" });
        QVERIFY2(resumed.exitCode == 0, resumed.err.c_str());
        auto again = nlohmann::json::parse(resumed.out);
        QCOMPARE(again["evaluations"].get<int>(), 8);
        QCOMPARE(again["llm"]["calls"].get<int>(), 6);

        // What the server was asked: the key in its header, the compile error in the repair.
        auto reqs = server.requests();
        QCOMPARE(reqs.size(), size_t(6));
        for (const auto& q : reqs) {
            QCOMPARE(q.headers.at("Authorization"), "Bearer " + kKey);
            QCOMPARE(q.body["model"].get<std::string>(), std::string(kModel));
            QCOMPARE(q.body["stream"].get<bool>(), true);
        }
        QVERIFY2(reqs[2].user().find("'rowsum' was not declared in this scope") != std::string::npos,
            reqs[2].user().c_str());
        QVERIFY(reqs[2].user().find("repair attempt 1 of") != std::string::npos);
        QVERIFY(reqs[4].user().find(canned("not_a_kernel.txt").substr(0, 60)) != std::string::npos);

        // Trajectories: prompt, response, feedback and reward per step.
        const std::string out = m_tmp.path().toStdString() + "/trajectories.jsonl";
        Run ex = hone({ "export-trajectories", QString::number(session), QString::fromStdString(out) });
        QVERIFY2(ex.exitCode == 0, ex.err.c_str());
        QVERIFY2(ex.out.find("exported 6 steps from 1 session") != std::string::npos, ex.out.c_str());
        std::vector<nlohmann::json> steps;
        {
            std::ifstream f(out);
            for (std::string line; std::getline(f, line);)
                steps.push_back(nlohmann::json::parse(line));
        }
        QCOMPARE(steps.size(), size_t(6));
        for (const auto& s : steps) {
            QVERIFY(s["prompt"]["system"].get<std::string>().find("Output contract") != std::string::npos);
            QVERIFY(!s["response"].get<std::string>().empty());
            QVERIFY(s.contains("feedback") && s.contains("reward"));
            QCOMPARE(s["session"].get<int64_t>(), session);
        }
        QCOMPARE(steps[0]["feedback"]["status"].get<std::string>(), std::string("ok"));
        QVERIFY(steps[0]["reward"].get<double>() > 0);
        QCOMPARE(steps[1]["feedback"]["failure_kind"].get<std::string>(), std::string("compile_error"));
        QVERIFY(steps[1]["feedback"]["text"].get<std::string>().find("rowsum") != std::string::npos);
        QCOMPARE(steps[1]["reward"].get<double>(), 0.0);
        QCOMPARE(steps[2]["purpose"].get<std::string>(), std::string("repair"));
        QCOMPARE(steps[3]["feedback"]["failure_kind"].get<std::string>(), std::string("bad_candidate"));
        Run all = hone({ "export-trajectories", "--all", QString::fromStdString(out + ".all") });
        QVERIFY2(all.exitCode == 0, all.err.c_str());

        Run show = hone({ "show", QString::number(session) });
        qInfo().noquote() << "---- hone show ----\n" << QString::fromStdString(show.out);

        // The key is nowhere: store (and its WAL), export, any output.
        std::vector<std::pair<std::string, std::string>> places { { "stdout", r.out }, { "stderr", r.err },
            { "resume", resumed.out + resumed.err }, { "export", readFile(out) },
            { "export --all", readFile(out + ".all") }, { "show", show.out + show.err },
            { "export stdout", ex.out + ex.err } };
        for (const char* suffix : { "", "-wal", "-shm" })
            if (std::filesystem::exists(m_store + suffix))
                places.push_back({ std::string("store") + suffix, readFile(m_store + suffix) });
        for (const auto& [where, text] : places) {
            QVERIFY2(text.find(kKey) == std::string::npos, ("the key leaked into " + where).c_str());
            QVERIFY2(text.find(kKey.substr(12, 12)) == std::string::npos,
                ("part of the key leaked into " + where).c_str());
        }
    }

    // With the seed corpus in the knowledge base, the prompts carry retrieved knowledge, and
    // the hits a model call was built with are recorded against the node it produced.
    void knowledgeFeedsPromptsAndHitsAreRecorded()
    {
        const std::string saved = m_store;
        m_store = m_tmp.path().toStdString() + "/kb-store.db";
        Run added = hone({ "kb", "add", QString(HONE_SOURCE_DIR) + "/resources/knowledge" });
        QVERIFY2(added.exitCode == 0, (added.out + added.err).c_str());

        ScriptedLlmServer server;
        server.requireKey(kKey);
        server.knownModels({ kModel });
        server.push(kernelReply("softmax_fast.cpp"));
        Run r = hone(runArgs(server.url(), 3) << "--json"
                                              << "--llm-log-prompts");
        m_store = saved;
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const int64_t session = nlohmann::json::parse(r.out)["session"].get<int64_t>();
        // The propose prompt's Knowledge section holds corpus text found for a CPU softmax.
        const size_t at = r.err.find("# Knowledge");
        QVERIFY2(at != std::string::npos, r.err.c_str());
        hone::knowledge::KnowledgeBase kb(m_tmp.path().toStdString() + "/kb-store.db");
        const auto hits = kb.hits(session);
        QVERIFY(!hits.empty());
        QVERIFY(hits.size() <= 3);
        QCOMPARE(hits.front().node, int64_t(3)); // the model's first node (seeds are #1 and #2)
        QCOMPARE(hits.front().rank, 1);
        QVERIFY(hits.front().query.find("family=softmax") != std::string::npos);
        const auto chunk = kb.chunk(hits.front().chunkId);
        QVERIFY(chunk.has_value());
        QVERIFY2(r.err.find(chunk->heading) != std::string::npos, chunk->heading.c_str());
    }

    void anthropicProtocolThroughTheCli()
    {
        ScriptedLlmServer server;
        server.requireKey(kKey);
        server.push(kernelReply("softmax_fast.cpp"));
        Run r = hone(runArgs(server.url(), 3) << "--llm-provider"
                                              << "anthropic"
                                              << "--llm-no-stream");
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        auto reqs = server.requests();
        QCOMPARE(reqs.size(), size_t(1));
        QCOMPARE(reqs[0].path, std::string("/v1/messages"));
        QCOMPARE(reqs[0].headers.at("x-api-key"), kKey);
        QCOMPARE(reqs[0].body["stream"].get<bool>(), false);
        QVERIFY(r.out.find("llm        1 calls to anthropic/scripted-coder (1 proposals, 0 repairs")
            != std::string::npos);
    }

    void clearErrors_data()
    {
        QTest::addColumn<QString>("situation");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("expected");
        QTest::addRow("unreachable") << QString(
            "unreachable") << 4 << QString("hone: error: cannot reach openai endpoint http://127.0.0.1:");
        QTest::addRow("wrong key") << QString("wrong key") << 4
                                   << QString("refused the key (HTTP 401: invalid_request_error: Incorrect "
                                              "API key provided: [redacted]");
        QTest::addRow("unknown model")
            << QString("unknown model") << 4
            << QString("answered HTTP 404: invalid_request_error: The model `no-such-model` does not exist");
        QTest::addRow("not a kernel")
            << QString("not a kernel") << 0
            << QString(
                   "REJECTED: the reply has no fenced code block; the contract is exactly one ```cpp block");
        QTest::addRow("no model") << QString("no model") << 2
                                  << QString("hone: error: --synth llm needs --llm-model NAME");
        QTest::addRow("key variable unset")
            << QString("key unset") << 4
            << QString("hone: error: the environment variable HONE_E2E_KEY (named by --llm-key-env");
        QTest::addRow("bad url") << QString("bad url") << 2
                                 << QString("hone: error: --llm-url 'localhost:8000': expected http://");
    }
    void clearErrors()
    {
        QFETCH(QString, situation);
        QFETCH(int, exitCode);
        QFETCH(QString, expected);
        auto server = std::make_unique<ScriptedLlmServer>();
        server->requireKey(kKey);
        server->knownModels({ kModel });
        server->setScript([](const auto&, int) {
            ScriptedReply r;
            r.text = canned("not_a_kernel.txt");
            return r;
        });
        std::string url = server->url();
        QStringList args = runArgs(url, 4) << "--repair"
                                           << "0";
        std::string key = kKey;
        const std::string wrongKey = "sk-wrong-Hh3Kd9Ls0Pq2Mn5Vb8Xc";
        if (situation == "unreachable")
            server.reset(); // the port is closed now
        else if (situation == "wrong key")
            key = wrongKey;
        else if (situation == "unknown model")
            args = runArgs(url, 4, "no-such-model");
        else if (situation == "no model")
            args.removeAt(args.indexOf("--llm-model") + 1), args.removeAll("--llm-model");
        else if (situation == "key unset")
            key.clear();
        else if (situation == "bad url")
            args[args.indexOf("--llm-url") + 1] = "localhost:8000";
        Run r = hone(args, key);
        QVERIFY2(r.exitCode == exitCode, (std::to_string(r.exitCode) + "\n" + r.err).c_str());
        QVERIFY2(QString::fromStdString(r.err).contains(expected), r.err.c_str());
        QVERIFY2(!looksLikeACrash(r.err), r.err.c_str());
        QVERIFY2(r.err.find(wrongKey) == std::string::npos && r.err.find(kKey) == std::string::npos,
            r.err.c_str());
        QVERIFY2(r.out.find(wrongKey) == std::string::npos && r.out.find(kKey) == std::string::npos,
            r.out.c_str());
        // Nor in the store, where the failed call and its error message are recorded.
        for (const char* suffix : { "", "-wal" }) {
            const std::string stored = readFile(m_store + suffix);
            QVERIFY2(stored.find(wrongKey.substr(9, 12)) == std::string::npos
                    && stored.find(kKey.substr(12, 12)) == std::string::npos,
                ("a key leaked into the store" + std::string(suffix)).c_str());
        }
        if (exitCode == 4 && situation != "key unset") // environment errors met by the running search
            QVERIFY2(r.out.find("stopped    ") != std::string::npos, r.out.c_str()); // the report still comes
    }
};

QTEST_GUILESS_MAIN(TestLlmE2e)
#include "tst_llm_e2e.moc"
