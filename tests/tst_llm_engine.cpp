// The engine with the LLM synthesizer and an in-memory model, on the real worker: prompts and
// calls stored per node, rejected replies as failed nodes, bounded repairs recorded as
// children, memory operators, the LLM budget, fatal provider errors, resume.

#include "backends/local_executor.h"
#include "core/engine.h"
#include "core/llm_synth.h"
#include "core/store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <functional>

using namespace hone;

namespace {

std::string workerPath()
{
    const char* w = std::getenv("HONE_WORKER");
    return w ? w : "hone-worker";
}

/// The `scale` test problem with its naive seed only, so that every later node is the model's.
std::filesystem::path makeProblem(const QTemporaryDir& tmp)
{
    auto dir = std::filesystem::path(tmp.path().toStdString()) / "scale";
    std::filesystem::copy(std::filesystem::path(HONE_TEST_DATA) / "problems" / "scale", dir,
        std::filesystem::copy_options::recursive);
    std::filesystem::remove(dir / "seeds" / "tuned.cpp");
    return dir;
}

std::string kernel(const std::string& note, const std::string& expr = "a * x[i] + b[i]")
{
    return "// " + note
        + "\n#include \"hone/kernel.h\"\n"
          "extern \"C\" int hone_run(const hone_args* args)\n{\n"
          "    const float* x = static_cast<const float*>(args->inputs[0].data);\n"
          "    const float* b = static_cast<const float*>(args->inputs[1].data);\n"
          "    float* y = static_cast<float*>(args->outputs[0].data);\n"
          "    const float a = static_cast<float>(hone_param_or(args, \"a\", 0.0));\n"
          "    const int64_t n = hone_numel(&args->inputs[0]);\n"
          "#pragma omp simd\n"
          "    for (int64_t i = 0; i < n; ++i)\n"
          "        y[i] = "
        + expr + ";\n    return 0;\n}\n";
}

std::string fenced(const std::string& code)
{
    return "Here you go.\n```cpp\n" + code + "```\n";
}

core::LlmReply reply(const std::string& text)
{
    core::LlmReply r;
    r.ok = true;
    r.text = text;
    r.finishReason = "stop";
    r.tokensIn = 1000;
    r.tokensOut = 200;
    r.costUsd = 0.01;
    r.latencyMs = 5;
    r.firstTokenMs = 1;
    r.attempts = 1;
    r.httpStatus = 200;
    return r;
}

/// A model that answers from a script and remembers what it was asked.
class FakeModel final : public core::LlmClient {
public:
    using Script = std::function<core::LlmReply(const core::LlmRequest&, int index)>;
    explicit FakeModel(Script s)
        : m_script(std::move(s))
    {
    }
    std::string provider() const override { return "fake"; }
    std::string model() const override { return "fake-1"; }
    core::LlmReply complete(
        const core::LlmRequest& r, core::LlmStreamObserver*, const std::atomic<bool>* cancel) override
    {
        lastCancel = cancel;
        requests.push_back(r);
        return m_script(r, static_cast<int>(requests.size()) - 1);
    }
    std::vector<core::LlmRequest> requests;
    const std::atomic<bool>* lastCancel = nullptr;

private:
    Script m_script;
};

struct Rig {
    QTemporaryDir tmp;
    std::filesystem::path problem;
    std::unique_ptr<core::Store> store;
    std::unique_ptr<backends::LocalExecutor> exec;

    Rig()
    {
        problem = makeProblem(tmp);
        store = std::make_unique<core::Store>(tmp.path().toStdString() + "/hone.db");
        backends::LocalExecutorConfig cfg;
        cfg.workerPath = workerPath();
        cfg.cacheDir = tmp.path().toStdString() + "/cache";
        cfg.parallel = 1;
        cfg.limits.memoryMiB = 768;
        exec = std::make_unique<backends::LocalExecutor>(cfg);
    }

    core::RunOptions options(int budget)
    {
        core::RunOptions o;
        o.problemDir = problem;
        o.budget = budget;
        o.synth = "llm";
        o.samples = 20;
        o.seed = 3;
        return o;
    }

    core::Report run(FakeModel& model, const core::RunOptions& o, core::LlmSynthConfig cfg = {})
    {
        cfg.repairAttempts = o.repair;
        cfg.budgetUsd = o.llmBudgetUsd;
        core::LlmSynthesizer synth(model, core::PromptBuilder(), cfg);
        core::Engine engine(*store, *exec);
        engine.setSynthesizer(&synth);
        core::Report r = engine.run(o);
        session = engine.sessionId();
        return r;
    }
    int64_t session = 0;
};

const core::NodeRecord& nodeOf(const std::vector<core::NodeRecord>& nodes, int64_t id)
{
    return nodes.at(static_cast<size_t>(id));
}

std::map<int64_t, core::EvaluationRecord> evaluationsOf(core::Store& s, int64_t session)
{
    std::map<int64_t, core::EvaluationRecord> out;
    for (auto& e : s.evaluations(session))
        out.emplace(e.nodeId, std::move(e));
    return out;
}

} // namespace

class TestLlmEngine : public QObject {
    Q_OBJECT
private slots:
    void repairsAreBoundedChildrenWithTheError()
    {
        Rig rig;
        FakeModel model([](const core::LlmRequest&, int i) {
            if (i == 0)
                return reply(fenced(kernel("first try", "a * x[i] + bias[i]")));
            if (i == 1)
                return reply(fenced(kernel("second try", "a * x[i] + offset[i]")));
            return reply(fenced(kernel("third try")));
        });
        core::Report r = rig.run(model, rig.options(4));
        QCOMPARE(r.progress.evaluations, 4);
        QVERIFY(r.error.empty());
        auto nodes = rig.store->nodes(rig.session);
        auto evals = evaluationsOf(*rig.store, rig.session);
        QCOMPARE(nodes.size(), size_t(5));
        QCOMPARE(nodeOf(nodes, 2).origin, std::string("llm"));
        QCOMPARE(nodeOf(nodes, 2).parentId, int64_t(1));
        QCOMPARE(evals[2].failureKind, std::string("compile_error"));
        QCOMPARE(nodeOf(nodes, 3).origin, std::string("repair"));
        QCOMPARE(nodeOf(nodes, 3).parentId, int64_t(2)); // each attempt is a child of what it fixes
        QCOMPARE(evals[3].failureKind, std::string("compile_error"));
        QCOMPARE(nodeOf(nodes, 4).origin, std::string("repair"));
        QCOMPARE(nodeOf(nodes, 4).parentId, int64_t(3));
        QCOMPARE(evals[4].status, std::string("ok"));

        // The repair prompts carry the compiler's words and count the attempts.
        QCOMPARE(model.requests.size(), size_t(3));
        const std::string& fix1 = model.requests[1].messages[0].content;
        QVERIFY2(fix1.find("repair attempt 1 of\n2") != std::string::npos, fix1.c_str());
        QVERIFY2(fix1.find("'bias' was not declared in this scope") != std::string::npos, fix1.c_str());
        QVERIFY(fix1.find("// first try") != std::string::npos);
        const std::string& fix2 = model.requests[2].messages[0].content;
        QVERIFY(fix2.find("repair attempt 2 of\n2") != std::string::npos);
        QVERIFY(fix2.find("'offset' was not declared in this scope") != std::string::npos);
        // The first prompt inherits from the seed: its code and result.
        const std::string& first = model.requests[0].messages[0].content;
        QVERIFY2(first.find("## #1 (parent) naive.cpp, seed") != std::string::npos, first.c_str());
        QVERIFY(first.find("y[i] = a * x[i] + b[i];") != std::string::npos);
        QVERIFY(first.find("Result: correct, ") != std::string::npos);

        // Every call is stored with its node: prompt, reply, tokens, cost.
        auto calls = rig.store->llmCalls(rig.session);
        QCOMPARE(calls.size(), size_t(3));
        for (size_t i = 0; i < calls.size(); ++i) {
            QCOMPARE(calls[i].nodeId, int64_t(2 + i));
            QCOMPARE(calls[i].purpose, std::string(i == 0 ? "propose" : "repair"));
            QCOMPARE(calls[i].status, std::string("ok"));
            QCOMPARE(calls[i].provider, std::string("fake"));
            QCOMPARE(calls[i].model, std::string("fake-1"));
            QCOMPARE(calls[i].tokensIn, int64_t(1000));
            QCOMPARE(calls[i].tokensOut, int64_t(200));
            QCOMPARE(calls[i].prompt["messages"][0]["content"].get<std::string>(),
                model.requests[i].messages[0].content);
            QCOMPARE(calls[i].prompt["system"].get<std::string>(), model.requests[i].system);
            QVERIFY(calls[i].response.starts_with("Here you go.\n```cpp\n// "));
        }
        auto totals = rig.store->llmTotals(rig.session);
        QCOMPARE(totals.calls, 3);
        QVERIFY(std::abs(totals.costUsd - 0.03) < 1e-12);
    }

    void repairStopsAtTheLimit_data()
    {
        QTest::addColumn<int>("repair");
        QTest::addRow("no repairs") << 0;
        QTest::addRow("one repair") << 1;
    }
    void repairStopsAtTheLimit()
    {
        QFETCH(int, repair);
        Rig rig;
        FakeModel model([](const core::LlmRequest&, int i) {
            return reply(fenced(kernel("broken " + std::to_string(i), "a * x[i] + missing[i]")));
        });
        core::RunOptions o = rig.options(5);
        o.repair = repair;
        rig.run(model, o);
        auto nodes = rig.store->nodes(rig.session);
        QCOMPARE(nodes.size(), size_t(6));
        int repairs = 0;
        for (const auto& n : nodes) {
            if (n.origin != "repair")
                continue;
            ++repairs;
            int depth = 0;
            for (int64_t cur = n.id; nodeOf(nodes, cur).origin == "repair"; cur = nodeOf(nodes, cur).parentId)
                ++depth;
            QVERIFY2(depth <= repair,
                ("node " + std::to_string(n.id) + " is repair " + std::to_string(depth)).c_str());
        }
        // 4 model nodes: with N repairs per failure, the pattern is (1 + N) per failed proposal.
        QCOMPARE(repairs, repair == 0 ? 0 : 2);
    }

    void rejectedReplyIsAFailedNodeThenRepaired()
    {
        Rig rig;
        const std::string prose = "The kernel is already optimal; I would not change it.";
        FakeModel model([&](const core::LlmRequest&, int i) {
            if (i == 0)
                return reply(prose);
            if (i == 1)
                return reply(fenced(kernel("drops the bias", "a * x[i]")));
            return reply(fenced(kernel("fixed")));
        });
        core::Report r = rig.run(model, rig.options(4));
        QVERIFY(r.error.empty());
        auto nodes = rig.store->nodes(rig.session);
        auto evals = evaluationsOf(*rig.store, rig.session);
        auto calls = rig.store->llmCalls(rig.session);
        QCOMPARE(nodes.size(), size_t(5));
        // #2: the prose, a failed node with the reply and the reason stored.
        QCOMPARE(nodeOf(nodes, 2).origin, std::string("llm"));
        QVERIFY(nodeOf(nodes, 2).sourceHash.empty());
        QCOMPARE(evals[2].status, std::string("failed"));
        QCOMPARE(evals[2].failureKind, std::string("bad_candidate"));
        QVERIFY2(evals[2].failureMessage.starts_with("rejected reply: the reply has no fenced code block"),
            evals[2].failureMessage.c_str());
        QCOMPARE(calls[0].status, std::string("rejected"));
        QCOMPARE(calls[0].response, prose);
        QVERIFY(calls[0].error.starts_with("the reply has no fenced code block"));
        // #3: the repair of the rejection shows the model what it said; it computes the wrong thing.
        QCOMPARE(nodeOf(nodes, 3).origin, std::string("repair"));
        QCOMPARE(nodeOf(nodes, 3).parentId, int64_t(2));
        QVERIFY(model.requests[1].messages[0].content.find(prose) != std::string::npos);
        QCOMPARE(evals[3].failureKind, std::string("wrong_result"));
        // #4: the wrong result goes back with the mismatches.
        const std::string& fix = model.requests[2].messages[0].content;
        QVERIFY2(fix.find("The kernel below failed (wrong_result)") != std::string::npos, fix.c_str());
        QVERIFY2(fix.find("mismatches; first: y[") != std::string::npos, fix.c_str());
        QCOMPARE(nodeOf(nodes, 4).parentId, int64_t(3));
        QCOMPARE(evals[4].status, std::string("ok"));
    }

    void compareShowsSiblingsAndRestartShowsNothing()
    {
        Rig rig;
        FakeModel model([](const core::LlmRequest&, int i) {
            return reply(fenced(kernel("variant " + std::to_string(i))));
        });
        core::RunOptions o = rig.options(3);
        o.memoryOp = "compare";
        // The seed must be expanded twice whatever the timings: progressive widening does that.
        // The default UCT expands the faster of the seed and its first child, and the model's
        // first kernel computes like the seed, so which one wins is timing noise.
        o.uct = core::UctParams::legacy();
        rig.run(model, o);
        QCOMPARE(model.requests.size(), size_t(2));
        // The second child of the seed sees the first one.
        const std::string& second = model.requests[1].messages[0].content;
        QVERIFY2(second.find("## #2 (sibling)") != std::string::npos, second.c_str());
        QVERIFY(second.find("// variant 0") != std::string::npos);
        for (const auto& c : rig.store->llmCalls(rig.session))
            QCOMPARE(c.op, std::string("compare"));
        for (const auto& n : rig.store->nodes(rig.session))
            if (n.origin == "llm")
                QCOMPARE(n.op, std::string("compare"));

        Rig rig2;
        FakeModel model2([](const core::LlmRequest&, int i) {
            return reply(fenced(kernel("fresh " + std::to_string(i))));
        });
        o = rig2.options(2);
        o.memoryOp = "restart";
        rig2.run(model2, o);
        const std::string& fresh = model2.requests[0].messages[0].content;
        QVERIFY(fresh.find("Nothing is shown on purpose") != std::string::npos);
        QVERIFY(fresh.find("y[i] = a * x[i] + b[i];") == std::string::npos); // not even the seed
    }

    void llmBudgetEndsTheSession()
    {
        Rig rig;
        FakeModel model(
            [](const core::LlmRequest&, int i) { return reply(fenced(kernel("v" + std::to_string(i)))); });
        core::RunOptions o = rig.options(20);
        o.llmBudgetUsd = 0.015;
        core::Report r = rig.run(model, o);
        QCOMPARE(model.requests.size(), size_t(2)); // $0.01 each: the second crosses the line
        QCOMPARE(r.stopReason,
            std::string("LLM budget of $0.0150 spent ($0.0200); raise --llm-budget-usd to go on"));
        QVERIFY(r.error.empty());
        QCOMPARE(rig.store->session(rig.session)->status, std::string("finished"));
    }

    void fatalProviderErrorFailsTheSessionClearly()
    {
        Rig rig;
        FakeModel model([](const core::LlmRequest&, int) {
            core::LlmReply r;
            r.error = core::LlmError::Auth;
            r.errorMessage
                = "openai endpoint http://x/v1/chat/completions refused the key (HTTP 401: invalid_api_key)";
            r.attempts = 1;
            r.httpStatus = 401;
            return r;
        });
        core::Report r = rig.run(model, rig.options(5));
        for (const auto& e : rig.store->evaluations(rig.session))
            if (e.status != "ok") // say why, when the seed itself did not pass
                qWarning("evaluation of node %lld: %s: %s", static_cast<long long>(e.nodeId), e.failureKind.c_str(),
                    e.failureMessage.c_str());
        QCOMPARE(r.error,
            std::string(
                "openai endpoint http://x/v1/chat/completions refused the key (HTTP 401: invalid_api_key)"));
        QCOMPARE(r.stopReason, r.error);
        QCOMPARE(r.progress.evaluations, 1); // the seed only
        auto s = rig.store->session(rig.session);
        QCOMPARE(s->status, std::string("failed"));
        auto calls = rig.store->llmCalls(rig.session);
        QCOMPARE(calls.size(), size_t(1));
        QCOMPARE(calls[0].nodeId, int64_t(-1));
        QCOMPARE(calls[0].status, std::string("error"));
        QCOMPARE(calls[0].httpStatus, 401);
        QCOMPARE(rig.store->nodes(rig.session).size(), size_t(2));
    }

    void transientErrorsBecomeFailedNodesUntilTooMany()
    {
        Rig rig;
        FakeModel model([](const core::LlmRequest&, int i) {
            if (i == 1)
                return reply(fenced(kernel("between the errors")));
            core::LlmReply r;
            r.error = core::LlmError::Server;
            r.errorMessage = "HTTP 503 (gave up after 4 attempts)";
            r.attempts = 4;
            return r;
        });
        core::LlmSynthConfig cfg;
        cfg.maxConsecutiveErrors = 2;
        core::Report r = rig.run(model, rig.options(10), cfg);
        auto evals = evaluationsOf(*rig.store, rig.session);
        for (size_t i = 0; i < evals.size(); ++i)
            qInfo("evaluation %zu: %s %s: %s", i, evals[i].status.c_str(), evals[i].failureKind.c_str(),
                evals[i].failureMessage.c_str());
        QCOMPARE(evals[2].failureKind, std::string("llm_error"));
        QCOMPARE(evals[2].failureMessage,
            std::string("the model call failed: HTTP 503 (gave up after 4 attempts)"));
        QCOMPARE(evals[3].status, std::string("ok"));
        QCOMPARE(evals[4].failureKind, std::string("llm_error"));
        QVERIFY2(r.error.find("2 model calls in a row failed") != std::string::npos, r.error.c_str());
        QCOMPARE(model.requests.size(), size_t(4));
    }

    void stopRequestCancelsTheModelCall()
    {
        Rig rig;
        core::Engine engine(*rig.store, *rig.exec);
        bool cancelSeen = false;
        FakeModel* self = nullptr;
        FakeModel model([&](const core::LlmRequest&, int) {
            engine.requestStop(); // Ctrl-C while the model is thinking
            cancelSeen = self->lastCancel && self->lastCancel->load();
            core::LlmReply r;
            r.error = core::LlmError::Cancelled;
            r.errorMessage = "cancelled";
            return r;
        });
        self = &model;
        core::LlmSynthesizer synth(model, core::PromptBuilder(), core::LlmSynthConfig {});
        engine.setSynthesizer(&synth);
        core::Report r = engine.run(rig.options(5));
        QVERIFY2(cancelSeen, "the engine's stop request must reach the model call");
        QCOMPARE(r.stopReason, std::string("stopped by request"));
        QVERIFY(r.error.empty());
        QCOMPARE(rig.store->session(engine.sessionId())->status, std::string("stopped"));
        QCOMPARE(model.requests.size(), size_t(1));
    }

    void resumeGoesOnWithStoredKernels()
    {
        Rig rig;
        FakeModel model(
            [](const core::LlmRequest&, int i) { return reply(fenced(kernel("gen " + std::to_string(i)))); });
        core::Report first = rig.run(model, rig.options(2));
        QCOMPARE(first.progress.evaluations, 2);
        core::LlmSynthConfig cfg;
        core::LlmSynthesizer synth(model, core::PromptBuilder(), cfg);
        core::Engine engine(*rig.store, *rig.exec);
        engine.setSynthesizer(&synth);
        core::Report r = engine.resume(rig.session, nullptr, 1);
        QCOMPARE(r.progress.evaluations, 3);
        QCOMPARE(model.requests.size(), size_t(2));
        auto nodes = rig.store->nodes(rig.session);
        QCOMPARE(nodes.size(), size_t(4));
        QCOMPARE(rig.store->llmCalls(rig.session).size(), size_t(2));
        QCOMPARE(engine.tree().node(2).sourceName.substr(0, 4), std::string("llm_"));
        // The resumed prompt knows the stored results.
        const std::string& again = model.requests[1].messages[0].content;
        QVERIFY2(again.find("Result: correct") != std::string::npos, again.c_str());
    }
};

QTEST_GUILESS_MAIN(TestLlmEngine)
#include "tst_llm_engine.moc"
