// The LLM providers against a scripted server speaking the real protocols: streamed chunks,
// retries (429 with Retry-After, 500s, resets), timeouts, malformed replies, keys, the
// concurrency limit and cancellation; and the SSE parser, retry policy, prices and redaction.

#include "backends/llm/chat_client.h"
#include "backends/llm/redact.h"
#include "backends/llm/sse_parser.h"
#include "tst_llm_server.h"

#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace hone;
using hone::testing::ScriptedLlmServer;
using hone::testing::ScriptedReply;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kKey = "sk-hone-test-3f9c2a7e51d04b8c9e6a";

llm::ClientConfig config(
    const ScriptedLlmServer& server, llm::Protocol p, const std::string& model = "scripted-1")
{
    llm::ClientConfig c;
    c.protocol = p;
    c.baseUrl = server.url();
    c.model = model;
    c.apiKey = kKey;
    c.keyEnv = "HONE_TEST_KEY";
    c.retry.baseDelay = std::chrono::milliseconds(20);
    c.retry.maxAttempts = 3;
    c.jitterSeed = 7;
    c.prices.set("scripted-1", llm::Price { 2.0, 10.0 });
    return c;
}

core::LlmRequest request(bool stream = true)
{
    core::LlmRequest r;
    r.system = "You write kernels.";
    r.messages.push_back({ "user", "Write a faster softmax." });
    r.maxTokens = 1000;
    r.stream = stream;
    return r;
}

struct Recorder : core::LlmStreamObserver {
    std::vector<std::string> deltas;
    std::vector<std::pair<int, double>> retries;
    std::vector<std::string> why;
    void delta(std::string_view d) override { deltas.emplace_back(d); }
    void retrying(int next, int, double delay, const std::string& w) override
    {
        retries.push_back({ next, delay });
        why.push_back(w);
    }
};

double msSince(Clock::time_point t)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

} // namespace

class TestLlmClient : public QObject {
    Q_OBJECT
private slots:
    // --- pieces ---

    void sseParserJoinsSplitChunks()
    {
        const std::string stream
            = ": comment\r\nevent: a\r\ndata: one\r\ndata: two\r\n\r\ndata: {\"x\":1}\n\n"
              "id: 7\ndata:tight\n\ndata: last-without-blank-line";
        // Every split point gives the same events.
        for (size_t cut = 0; cut <= stream.size(); ++cut) {
            llm::SseParser p;
            std::vector<llm::SseEvent> got;
            auto sink = [&](const llm::SseEvent& e) { got.push_back(e); };
            p.feed(std::string_view(stream).substr(0, cut), sink);
            p.feed(std::string_view(stream).substr(cut), sink);
            p.finish(sink);
            QCOMPARE(got.size(), size_t(4));
            QCOMPARE(got[0].event, std::string("a"));
            QCOMPARE(got[0].data, std::string("one\ntwo"));
            QCOMPARE(got[1].data, std::string("{\"x\":1}"));
            QCOMPARE(got[2].data, std::string("tight"));
            QCOMPARE(got[2].id, std::string("7"));
            QCOMPARE(got[3].data, std::string("last-without-blank-line"));
        }
    }

    void backoffGrowsWithJitterAndCap()
    {
        llm::RetryPolicy p;
        p.baseDelay = std::chrono::milliseconds(100);
        p.maxDelay = std::chrono::milliseconds(350);
        p.jitter = 0.5;
        std::mt19937_64 rng(1);
        std::set<int64_t> seen;
        for (int i = 0; i < 50; ++i) {
            auto d1 = p.backoff(1, rng).count();
            auto d2 = p.backoff(2, rng).count();
            auto d5 = p.backoff(5, rng).count();
            QVERIFY2(d1 >= 50 && d1 <= 100, std::to_string(d1).c_str());
            QVERIFY2(d2 >= 100 && d2 <= 200, std::to_string(d2).c_str());
            QVERIFY2(d5 >= 175 && d5 <= 350, std::to_string(d5).c_str()); // capped, then jittered
            seen.insert(d1);
        }
        QVERIFY2(seen.size() > 10, "jitter should spread the delays");
        QVERIFY(llm::retryableStatus(429) && llm::retryableStatus(500) && llm::retryableStatus(503)
            && llm::retryableStatus(529));
        QVERIFY(!llm::retryableStatus(400) && !llm::retryableStatus(401) && !llm::retryableStatus(404));
    }

    void retryAfterReadsSecondsDatesAndMilliseconds()
    {
        using std::chrono::milliseconds;
        QCOMPARE(llm::retryAfter({ { "retry-after", "3" } }).value(), milliseconds(3000));
        QCOMPARE(llm::retryAfter({ { "retry-after", "0.5" } }).value(), milliseconds(500));
        QCOMPARE(llm::retryAfter({ { "retry-after-ms", "250" }, { "retry-after", "9" } }).value(),
            milliseconds(250));
        auto now = std::chrono::system_clock::from_time_t(784111777); // Sun, 06 Nov 1994 08:49:37 GMT
        QCOMPARE(llm::retryAfter({ { "retry-after", "Sun, 06 Nov 1994 08:49:47 GMT" } }, now).value(),
            milliseconds(10000));
        QVERIFY(!llm::retryAfter({ { "retry-after", "soon" } }).has_value());
        QVERIFY(!llm::retryAfter({}).has_value());
    }

    void priceTableMatchesExactThenLongestPrefix()
    {
        auto t = llm::PriceTable::fromJson(
            nlohmann::json::parse(R"({"gpt-x": {"input_per_mtok": 1, "output_per_mtok": 2},
            "gpt-*": {"input_per_mtok": 3, "output_per_mtok": 4}, "gpt-x-*": {"input_per_mtok": 5, "output_per_mtok": 6}})"),
            "test");
        QCOMPARE(t.find("gpt-x")->inputPerMTok, 1.0);
        QCOMPARE(t.find("gpt-x-mini")->inputPerMTok, 5.0);
        QCOMPARE(t.find("gpt-y")->outputPerMTok, 4.0);
        QVERIFY(!t.find("claude").has_value());
        try {
            llm::PriceTable::fromJson(
                nlohmann::json::parse(R"({"m": {"input_per_mtok": "cheap"}})"), "llm.json");
            QFAIL("expected an error");
        } catch (const std::runtime_error& e) {
            QVERIFY2(
                QString(e.what()).contains("llm.json: prices.m.input_per_mtok must be a non-negative number"),
                e.what());
        }
    }

    void redactHidesWholeAndPartialKeys()
    {
        QCOMPARE(llm::redact("key " + kKey + " end", kKey), std::string("key [redacted] end"));
        std::string masked = "Incorrect API key provided: sk-hone-****************************9e6a.";
        QVERIFY(llm::redact(masked, kKey).find("sk-hone-") == std::string::npos);
        QVERIFY(llm::redact("tail 3f9c2a7e51d0 here", kKey).find("3f9c2a7e") == std::string::npos);
        QCOMPARE(llm::redact("nothing secret", kKey), std::string("nothing secret"));
        QCOMPARE(llm::redact("x", ""), std::string("x"));
    }

    // --- protocols ---

    void streamsChunksIncrementally_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::addRow("openai") << int(llm::Protocol::OpenAi);
        QTest::addRow("anthropic") << int(llm::Protocol::Anthropic);
    }
    void streamsChunksIncrementally()
    {
        QFETCH(int, protocol);
        const auto p = static_cast<llm::Protocol>(protocol);
        ScriptedLlmServer server;
        ScriptedReply r;
        r.text = ScriptedLlmServer::fenced("extern \"C\" int hone_run(const hone_args*) { return 0; }");
        r.chunkSize = 9;
        r.chunkDelayMs = 5;
        server.push(r);
        auto client = llm::makeClient(config(server, p));
        Recorder rec;
        core::LlmReply reply = client->complete(request(), &rec, nullptr);
        QVERIFY2(reply.ok, reply.errorMessage.c_str());
        QCOMPARE(reply.text, r.text);
        QVERIFY2(rec.deltas.size() >= r.text.size() / 9, "the text must arrive in pieces, as it streams");
        std::string joined;
        for (const auto& d : rec.deltas)
            joined += d;
        QCOMPARE(joined, r.text);
        QCOMPARE(reply.finishReason, std::string(p == llm::Protocol::Anthropic ? "end_turn" : "stop"));
        QVERIFY(!reply.truncated);
        QCOMPARE(reply.attempts, 1);
        QCOMPARE(reply.httpStatus, 200);
        QVERIFY(reply.usageReported);
        const int64_t promptChars = int64_t(request().system.size() + request().messages[0].content.size());
        QCOMPARE(reply.tokensIn, promptChars / 4 + 1);
        QCOMPARE(reply.tokensOut, int64_t(r.text.size() / 4 + 1));
        QVERIFY(reply.priced);
        QCOMPARE(reply.costUsd, (double(reply.tokensIn) * 2.0 + double(reply.tokensOut) * 10.0) / 1e6);
        QVERIFY(reply.latencyMs > 0 && reply.firstTokenMs > 0 && reply.firstTokenMs <= reply.latencyMs);

        auto reqs = server.requests();
        QCOMPARE(reqs.size(), size_t(1));
        const auto& q = reqs[0];
        QCOMPARE(q.body["model"].get<std::string>(), std::string("scripted-1"));
        QCOMPARE(q.body["stream"].get<bool>(), true);
        QCOMPARE(q.body["max_tokens"].get<int>(), 1000);
        QCOMPARE(q.system(), request().system);
        QCOMPARE(q.user(), request().messages[0].content);
        if (p == llm::Protocol::OpenAi) {
            QCOMPARE(q.path, std::string("/v1/chat/completions"));
            QCOMPARE(q.headers.at("Authorization"), "Bearer " + kKey);
            QCOMPARE(q.body["stream_options"]["include_usage"].get<bool>(), true);
        } else {
            QCOMPARE(q.path, std::string("/v1/messages"));
            QCOMPARE(q.headers.at("x-api-key"), kKey);
            QCOMPARE(q.headers.at("anthropic-version"), std::string("2023-06-01"));
        }
    }

    void wholeRepliesAndTruncation_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::addColumn<bool>("stream");
        QTest::addRow("openai whole") << int(llm::Protocol::OpenAi) << false;
        QTest::addRow("anthropic whole") << int(llm::Protocol::Anthropic) << false;
        QTest::addRow("openai streamed") << int(llm::Protocol::OpenAi) << true;
        QTest::addRow("anthropic streamed") << int(llm::Protocol::Anthropic) << true;
    }
    void wholeRepliesAndTruncation()
    {
        QFETCH(int, protocol);
        QFETCH(bool, stream);
        ScriptedLlmServer server;
        ScriptedReply r;
        r.text = "```cpp\nint hone_run(";
        r.finish = "length";
        r.usage = false;
        server.push(r);
        auto client = llm::makeClient(config(server, static_cast<llm::Protocol>(protocol), "unpriced"));
        core::LlmReply reply = client->complete(request(stream), nullptr, nullptr);
        QVERIFY2(reply.ok, reply.errorMessage.c_str());
        QCOMPARE(reply.text, r.text);
        QVERIFY2(reply.truncated, reply.finishReason.c_str());
        QVERIFY(!reply.usageReported);
        QVERIFY(reply.tokensIn > 0 && reply.tokensOut > 0); // estimated
        QVERIFY(!reply.priced);
        QCOMPARE(reply.costUsd, 0.0);
        QCOMPARE(server.requests()[0].body["stream"].get<bool>(), stream);
    }

    void retriesOn429HonouringRetryAfter()
    {
        ScriptedLlmServer server;
        ScriptedReply busy;
        busy.status = 429;
        busy.rawBody
            = R"({"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}})";
        busy.headers = { { "Retry-After", "1" } };
        server.push(busy);
        ScriptedReply ok;
        ok.text = "fine";
        server.push(ok);
        auto client = llm::makeClient(config(server, llm::Protocol::OpenAi));
        Recorder rec;
        auto t0 = Clock::now();
        core::LlmReply reply = client->complete(request(), &rec, nullptr);
        double ms = msSince(t0);
        QVERIFY2(reply.ok, reply.errorMessage.c_str());
        QCOMPARE(reply.text, std::string("fine"));
        QCOMPARE(reply.attempts, 2);
        QCOMPARE(rec.retries.size(), size_t(1));
        QCOMPARE(rec.retries[0].first, 2);
        QCOMPARE(rec.retries[0].second, 1.0); // Retry-After wins over the 20 ms backoff
        QVERIFY2(rec.why[0].find("HTTP 429") != std::string::npos
                && rec.why[0].find("Rate limit reached") != std::string::npos,
            rec.why[0].c_str());
        QVERIFY2(ms >= 950, std::to_string(ms).c_str());
        QCOMPARE(server.requests().size(), size_t(2));
    }

    void retryAfterBeyondTheLimitEndsTheCall()
    {
        ScriptedLlmServer server;
        ScriptedReply busy;
        busy.status = 429;
        busy.rawBody = R"({"error":{"message":"quota","type":"insufficient_quota"}})";
        busy.headers = { { "Retry-After", "3600" } };
        server.push(busy);
        auto cfg = config(server, llm::Protocol::OpenAi);
        cfg.retry.maxRetryAfter = std::chrono::milliseconds(5000);
        auto client = llm::makeClient(cfg);
        auto t0 = Clock::now();
        core::LlmReply reply = client->complete(request(), nullptr, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::RateLimited));
        QVERIFY2(
            reply.errorMessage.find("asks to wait 3600.0 s (Retry-After), longer than the limit of 5.0 s")
                != std::string::npos,
            reply.errorMessage.c_str());
        QVERIFY(msSince(t0) < 2000);
    }

    void retriesOn500ThenGivesUp()
    {
        ScriptedLlmServer server;
        for (int i = 0; i < 3; ++i) {
            ScriptedReply e;
            e.status = i == 1 ? 503 : 500;
            e.rawBody
                = R"({"error":{"message":"The server had an error while processing your request","type":"server_error"}})";
            server.push(e);
        }
        auto cfg = config(server, llm::Protocol::OpenAi);
        cfg.retry.baseDelay = std::chrono::milliseconds(100);
        auto client = llm::makeClient(cfg);
        Recorder rec;
        auto t0 = Clock::now();
        core::LlmReply reply = client->complete(request(), &rec, nullptr);
        double ms = msSince(t0);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::Server));
        QCOMPARE(reply.attempts, 3);
        QCOMPARE(reply.httpStatus, 500);
        QVERIFY2(
            reply.errorMessage.find("HTTP 500: server_error: The server had an error") != std::string::npos
                && reply.errorMessage.find("gave up after 3 attempts") != std::string::npos,
            reply.errorMessage.c_str());
        QCOMPARE(rec.retries.size(), size_t(2));
        // Exponential backoff with jitter 0.5: [50, 100] ms, then [100, 200] ms.
        QVERIFY2(rec.retries[0].second >= 0.05 && rec.retries[0].second <= 0.1,
            std::to_string(rec.retries[0].second).c_str());
        QVERIFY2(rec.retries[1].second >= 0.1 && rec.retries[1].second <= 0.2,
            std::to_string(rec.retries[1].second).c_str());
        QVERIFY2(ms >= 150, std::to_string(ms).c_str());
    }

    void retriesOnConnectionReset()
    {
        ScriptedLlmServer server;
        ScriptedReply cut;
        cut.text = "this reply is cut after its first piece";
        cut.chunkSize = 5;
        cut.cutMidStream = true;
        server.push(cut);
        ScriptedReply ok;
        ok.text = "whole";
        server.push(ok);
        auto client = llm::makeClient(config(server, llm::Protocol::Anthropic));
        Recorder rec;
        core::LlmReply reply = client->complete(request(), &rec, nullptr);
        QVERIFY2(reply.ok, reply.errorMessage.c_str());
        QCOMPARE(reply.text, std::string("whole"));
        QCOMPARE(reply.attempts, 2);
        QCOMPARE(rec.retries.size(), size_t(1));
        QVERIFY2(rec.why[0].find("reset") != std::string::npos, rec.why[0].c_str());
    }

    void slowFirstTokenWithinAndBeyondTheTimeout()
    {
        ScriptedLlmServer server;
        ScriptedReply slow;
        slow.text = "late but fine";
        slow.firstTokenDelayMs = 1200;
        server.push(slow);
        server.push(slow);
        auto cfg = config(server, llm::Protocol::OpenAi);
        cfg.firstTokenTimeout = std::chrono::milliseconds(5000);
        auto patient = llm::makeClient(cfg);
        core::LlmReply reply = patient->complete(request(), nullptr, nullptr);
        QVERIFY2(reply.ok, reply.errorMessage.c_str());
        QVERIFY2(reply.firstTokenMs >= 1100, std::to_string(reply.firstTokenMs).c_str());

        cfg.firstTokenTimeout = std::chrono::milliseconds(300);
        auto impatient = llm::makeClient(cfg);
        auto t0 = Clock::now();
        reply = impatient->complete(request(), nullptr, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::Timeout));
        QVERIFY2(reply.errorMessage.find("no first token") != std::string::npos
                && reply.errorMessage.find("--llm-first-token-timeout") != std::string::npos,
            reply.errorMessage.c_str());
        QVERIFY2(msSince(t0) < 1000, std::to_string(msSince(t0)).c_str());
        QCOMPARE(reply.attempts, 1); // a timeout is not retried
    }

    void totalTimeoutStopsASlowStream()
    {
        ScriptedLlmServer server;
        ScriptedReply drip;
        drip.text = std::string(200, 'x');
        drip.chunkSize = 10;
        drip.chunkDelayMs = 100; // two seconds in all
        server.push(drip);
        auto cfg = config(server, llm::Protocol::OpenAi);
        cfg.totalTimeout = std::chrono::milliseconds(600);
        auto client = llm::makeClient(cfg);
        auto t0 = Clock::now();
        core::LlmReply reply = client->complete(request(), nullptr, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::Timeout));
        QVERIFY2(reply.errorMessage.find("took longer than 0.6 s (--llm-timeout)") != std::string::npos,
            reply.errorMessage.c_str());
        QVERIFY(msSince(t0) < 1500);
    }

    void replyOverTheSizeCapFails_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<bool>("endless");
        QTest::addRow("openai endless stream") << int(llm::Protocol::OpenAi) << true << true;
        QTest::addRow("anthropic endless stream") << int(llm::Protocol::Anthropic) << true << true;
        QTest::addRow("openai long stream") << int(llm::Protocol::OpenAi) << true << false;
        QTest::addRow("openai whole") << int(llm::Protocol::OpenAi) << false << false;
        QTest::addRow("anthropic whole") << int(llm::Protocol::Anthropic) << false << false;
    }
    void replyOverTheSizeCapFails()
    {
        QFETCH(int, protocol);
        QFETCH(bool, stream);
        QFETCH(bool, endless);
        ScriptedLlmServer server;
        ScriptedReply flood;
        flood.text = std::string(endless ? 4096 : 200 * 1024, 'y');
        flood.chunkSize = 1024;
        flood.endless = endless; // without the cap this call would run until the total timeout
        server.push(flood);
        auto cfg = config(server, static_cast<llm::Protocol>(protocol));
        cfg.maxReplyBytes = 64 * 1024;
        cfg.totalTimeout = std::chrono::milliseconds(120000); // a failure of the cap fails the message check
        auto client = llm::makeClient(cfg);
        Recorder rec;
        core::LlmReply reply = client->complete(request(stream), &rec, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::BadReply));
        QVERIFY2(reply.errorMessage.find("passed the cap of 64.0 KiB (65536 bytes) of reply text (--llm-max-reply-kb)")
                != std::string::npos,
            reply.errorMessage.c_str());
        QCOMPARE(reply.attempts, 1); // a runaway reply is not asked for again
        size_t streamed = 0;
        for (const auto& d : rec.deltas)
            streamed += d.size();
        if (stream) // stopped at the cap while streaming, not after the whole flood
            QVERIFY2(streamed <= 64 * 1024 + 1024, std::to_string(streamed).c_str());
        QCOMPARE(server.requests().size(), size_t(1));
    }

    void defaultTotalTimeoutFitsAKernelReply()
    {
        const llm::ClientConfig defaults;
        QVERIFY(defaults.totalTimeout == std::chrono::seconds(180)); // docs/LLM.md: --llm-timeout 180
        QCOMPARE(defaults.maxReplyBytes, size_t(1) << 20);
    }

    void connectTimeout()
    {
        // A listener whose accept queue is full and never drained: SYNs go unanswered.
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr {};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QVERIFY(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        QVERIFY(::listen(fd, 0) == 0);
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        std::vector<int> fillers;
        for (int i = 0; i < 4; ++i) {
            int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
            fillers.push_back(c);
        }
        QTest::qWait(100);
        llm::ClientConfig cfg;
        cfg.baseUrl = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1";
        cfg.model = "m";
        cfg.connectTimeout = std::chrono::milliseconds(400);
        auto client = llm::makeClient(cfg);
        auto t0 = Clock::now();
        core::LlmReply reply = client->complete(request(), nullptr, nullptr);
        for (int c : fillers)
            ::close(c);
        ::close(fd);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::Timeout));
        QVERIFY2(reply.errorMessage.find("--llm-connect-timeout") != std::string::npos,
            reply.errorMessage.c_str());
        QVERIFY(msSince(t0) < 3000);
    }

    void malformedReplies_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("contentType");
        QTest::addColumn<bool>("emptyChoices");
        QTest::addColumn<bool>("noFinish");
        QTest::addColumn<QString>("expected");
        const int oa = int(llm::Protocol::OpenAi);
        const int an = int(llm::Protocol::Anthropic);
        QTest::addRow("openai body not JSON") << oa << false << QString("{\"choices\": [ oops") << QString("")
                                              << false << false << QString("the body is not a JSON object");
        QTest::addRow("anthropic body not JSON")
            << an << false << QString("<html>502 Bad Gateway</html>") << QString("text/html") << false
            << false << QString("the body is not a JSON object");
        QTest::addRow("openai stream event not JSON")
            << oa << true << QString("data: {\"choices\": [\n\ndata: [DONE]\n\n")
            << QString("text/event-stream") << false << false
            << QString("a stream event is not a JSON object");
        QTest::addRow("anthropic stream error event")
            << an << true
            << QString("event: error\ndata: "
                       "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
                       "\"Overloaded\"}}\n\n")
            << QString("text/event-stream") << false << false << QString("overloaded_error: Overloaded");
        QTest::addRow("openai empty choices") << oa << false << QString("") << QString("") << true << false
                                              << QString("the reply has no choices");
        QTest::addRow("openai stream without finish")
            << oa << true << QString("") << QString("") << false << true
            << QString("ended before the reply was complete");
        QTest::addRow("anthropic stream without stop")
            << an << true << QString("") << QString("") << false << true
            << QString("ended before the reply was complete");
    }
    void malformedReplies()
    {
        QFETCH(int, protocol);
        QFETCH(bool, stream);
        QFETCH(QString, body);
        QFETCH(QString, contentType);
        QFETCH(bool, emptyChoices);
        QFETCH(bool, noFinish);
        QFETCH(QString, expected);
        ScriptedLlmServer server;
        ScriptedReply r;
        r.text = "some text";
        r.rawBody = body.toStdString();
        r.contentType = contentType.toStdString();
        r.emptyChoices = emptyChoices;
        r.noFinish = noFinish;
        server.push(r);
        auto client = llm::makeClient(config(server, static_cast<llm::Protocol>(protocol)));
        core::LlmReply reply = client->complete(request(stream), nullptr, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::BadReply));
        QVERIFY2(QString::fromStdString(reply.errorMessage).contains(expected), reply.errorMessage.c_str());
        QVERIFY2(reply.errorMessage.find("sent a reply Hone cannot read") != std::string::npos
                || reply.errorMessage.find("ended before") != std::string::npos,
            reply.errorMessage.c_str());
        QCOMPARE(reply.attempts, 1);
    }

    /// Found by tests/fuzz/fuzz_sse: a field of an unexpected type (an event `type` that is an
    /// object, a choice `index` that is a string) threw out of the stream callback and ended hone.
    /// Such fields are now ignored like unknown ones, and the well-formed rest of the reply counts.
    void fieldsOfAnotherTypeAreIgnored_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::addColumn<QString>("body");
        QTest::addRow("openai choice index as text")
            << int(llm::Protocol::OpenAi)
            << QString("data: {\"choices\":[{\"index\":\"0\",\"delta\":{\"content\":\"zz\"}},"
                       "{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n"
                       "data: {\"choices\":[{\"index\":1e300,\"delta\":{\"content\":\"zz\"}},"
                       "{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        QTest::addRow("anthropic event type as an object")
            << int(llm::Protocol::Anthropic)
            << QString("event: ping\ndata: {\"type\":{\"x\":1}}\n\n"
                       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":"
                       "{\"type\":\"text_delta\",\"text\":[\"zz\"]}}\n\n"
                       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":"
                       "{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"
                       "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":"
                       "{\"stop_reason\":\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    }
    void fieldsOfAnotherTypeAreIgnored()
    {
        QFETCH(int, protocol);
        QFETCH(QString, body);
        ScriptedLlmServer server;
        ScriptedReply r;
        r.rawBody = body.toStdString();
        r.contentType = "text/event-stream";
        server.push(r);
        auto client = llm::makeClient(config(server, static_cast<llm::Protocol>(protocol)));
        core::LlmReply reply = client->complete(request(true), nullptr, nullptr);
        QVERIFY2(reply.ok, reply.errorMessage.c_str());
        QCOMPARE(QString::fromStdString(reply.text), QString("ok"));
    }

    void unreachableEndpoint()
    {
        ScriptedLlmServer* gone = new ScriptedLlmServer;
        const std::string url = gone->url();
        delete gone; // nothing listens on that port any more
        llm::ClientConfig cfg;
        cfg.baseUrl = url;
        cfg.model = "m";
        auto client = llm::makeClient(cfg);
        core::LlmReply reply = client->complete(request(), nullptr, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::Unreachable));
        QVERIFY(core::llmErrorIsFatal(reply.error));
        QVERIFY2(reply.errorMessage.find("cannot reach openai endpoint " + url + "/chat/completions")
                    != std::string::npos
                && reply.errorMessage.find("check --llm-url") != std::string::npos,
            reply.errorMessage.c_str());
        QCOMPARE(reply.attempts, 1);
    }

    void refusedKeyIsNamedButNeverShown_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::addRow("openai") << int(llm::Protocol::OpenAi);
        QTest::addRow("anthropic") << int(llm::Protocol::Anthropic);
    }
    void refusedKeyIsNamedButNeverShown()
    {
        QFETCH(int, protocol);
        ScriptedLlmServer server;
        server.requireKey("sk-the-right-one");
        auto client = llm::makeClient(config(server, static_cast<llm::Protocol>(protocol)));
        Recorder rec;
        core::LlmReply reply = client->complete(request(), &rec, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::Auth));
        QCOMPARE(reply.httpStatus, 401);
        QVERIFY2(reply.errorMessage.find("refused the key (HTTP 401") != std::string::npos
                && reply.errorMessage.find("HONE_TEST_KEY") != std::string::npos,
            reply.errorMessage.c_str());
        // The server echoed the key; the message must not.
        QVERIFY2(reply.errorMessage.find(kKey) == std::string::npos, reply.errorMessage.c_str());
        QVERIFY2(
            reply.errorMessage.find(kKey.substr(10, 10)) == std::string::npos, reply.errorMessage.c_str());
        QVERIFY2(reply.errorMessage.find("[redacted]") != std::string::npos, reply.errorMessage.c_str());
        QCOMPARE(reply.attempts, 1);
    }

    void unknownModelShowsTheProviderError_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::addColumn<QString>("expected");
        QTest::addRow("openai") << int(llm::Protocol::OpenAi)
                                << QString("The model `no-such-model` does not exist");
        QTest::addRow("anthropic") << int(llm::Protocol::Anthropic)
                                   << QString("not_found_error: model: no-such-model");
    }
    void unknownModelShowsTheProviderError()
    {
        QFETCH(int, protocol);
        QFETCH(QString, expected);
        ScriptedLlmServer server;
        server.knownModels({ "scripted-1" });
        auto client = llm::makeClient(config(server, static_cast<llm::Protocol>(protocol), "no-such-model"));
        core::LlmReply reply = client->complete(request(), nullptr, nullptr);
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::NotFound));
        QVERIFY2(QString::fromStdString(reply.errorMessage).contains(expected), reply.errorMessage.c_str());
        QVERIFY2(reply.errorMessage.find("check --llm-model (no-such-model)") != std::string::npos,
            reply.errorMessage.c_str());
    }

    void concurrencyLimitHoldsAcrossThreads()
    {
        ScriptedLlmServer server;
        server.setScript([](const auto&, int) {
            ScriptedReply r;
            r.text = "ok";
            r.firstTokenDelayMs = 250;
            return r;
        });
        auto cfg = config(server, llm::Protocol::OpenAi);
        cfg.maxConcurrency = 2;
        auto client = llm::makeClient(cfg);
        std::vector<std::thread> threads;
        std::atomic<int> ok { 0 };
        auto t0 = Clock::now();
        for (int i = 0; i < 6; ++i)
            threads.emplace_back([&] {
                if (client->complete(request(), nullptr, nullptr).ok)
                    ++ok;
            });
        for (auto& t : threads)
            t.join();
        QCOMPARE(ok.load(), 6);
        QCOMPARE(server.maxConcurrent(), 2);
        QCOMPARE(client->limiter().highWater(), 2);
        QVERIFY2(msSince(t0) >= 3 * 240, "six 250 ms calls, two at a time, take three rounds");
    }

    void cancellationStopsACallPromptly()
    {
        ScriptedLlmServer server;
        ScriptedReply slow;
        slow.text = "never seen";
        slow.firstTokenDelayMs = 5000;
        server.push(slow);
        auto client = llm::makeClient(config(server, llm::Protocol::Anthropic));
        std::atomic<bool> cancel { false };
        std::thread stopper([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            cancel = true;
        });
        auto t0 = Clock::now();
        core::LlmReply reply = client->complete(request(), nullptr, &cancel);
        stopper.join();
        QVERIFY(!reply.ok);
        QCOMPARE(int(reply.error), int(core::LlmError::Cancelled));
        QVERIFY2(msSince(t0) < 1000, std::to_string(msSince(t0)).c_str());

        // Waiting for a slot is cancellable too.
        llm::ConcurrencyLimiter limiter(1);
        QVERIFY(limiter.acquire(nullptr));
        std::atomic<bool> stop { true };
        QVERIFY(!limiter.acquire(&stop));
        limiter.release();
        QCOMPARE(limiter.inUse(), 0);
    }
};

QTEST_GUILESS_MAIN(TestLlmClient)
#include "tst_llm_client.moc"
