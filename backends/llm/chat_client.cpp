#include "backends/llm/chat_client.h"

#include "backends/llm/http_transport.h"
#include "backends/llm/redact.h"
#include "core/utf8.h"

#include <cstdint>
#include <cstdio>
#include <thread>

namespace hone::llm {
namespace {

using Clock = std::chrono::steady_clock;
using core::LlmError;

std::string sizeText(size_t bytes)
{
    char buf[64];
    if (bytes >= (size_t(1) << 20))
        std::snprintf(buf, sizeof buf, "%.1f MiB (%zu bytes)", static_cast<double>(bytes) / (1 << 20), bytes);
    else
        std::snprintf(buf, sizeof buf, "%.1f KiB (%zu bytes)", static_cast<double>(bytes) / 1024, bytes);
    return buf;
}

std::string seconds(std::chrono::milliseconds ms)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ms.count()) / 1000.0);
    return buf;
}

} // namespace

std::string defaultBaseUrl(Protocol p)
{
    return p == Protocol::Anthropic ? "https://api.anthropic.com/v1" : "https://api.openai.com/v1";
}

const char* protocolName(Protocol p)
{
    return p == Protocol::Anthropic ? "anthropic" : "openai";
}

std::unique_ptr<ChatClient> makeClient(ClientConfig config)
{
    if (config.protocol == Protocol::Anthropic)
        return std::make_unique<AnthropicClient>(std::move(config));
    return std::make_unique<OpenAiClient>(std::move(config));
}

ChatClient::ChatClient(ClientConfig config)
    : m_config(std::move(config))
    , m_limiter(m_config.maxConcurrency)
    , m_rng(m_config.jitterSeed ? m_config.jitterSeed : std::random_device {}())
{
    while (!m_config.baseUrl.empty() && m_config.baseUrl.back() == '/')
        m_config.baseUrl.pop_back();
}

std::string stringField(const nlohmann::json& object, const char* key, std::string fallback)
{
    if (!object.is_object())
        return fallback;
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::chrono::milliseconds ChatClient::nextDelay(int attempt)
{
    std::lock_guard lock(m_rngMutex);
    return m_config.retry.backoff(attempt, m_rng);
}

std::string ChatClient::providerMessage(const std::string& body)
{
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
        auto str = [](const nlohmann::json& o, const char* key) {
            auto it = o.find(key);
            return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
        };
        if (auto e = j.find("error"); e != j.end()) {
            if (e->is_string())
                return e->get<std::string>();
            if (e->is_object()) {
                std::string m = str(*e, "message");
                std::string type = str(*e, "type");
                if (type.empty())
                    type = str(*e, "code");
                return type.empty() ? m : (m.empty() ? type : type + ": " + m);
            }
        }
        if (auto d = j.find("detail"); d != j.end())
            return d->is_string() ? d->get<std::string>() : d->dump();
        if (std::string m = str(j, "message"); !m.empty())
            return m;
    }
    std::string s = body.substr(0, 300);
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20)
            c = ' ';
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    return s + (body.size() > 300 ? "..." : "");
}

core::LlmReply ChatClient::complete(
    const core::LlmRequest& request, core::LlmStreamObserver* observer, const std::atomic<bool>* cancel)
{
    core::LlmReply reply;
    const auto started = Clock::now();
    const std::string& key = m_config.apiKey;
    auto fail = [&](LlmError e, const std::string& message) {
        reply.ok = false;
        reply.error = e;
        reply.errorMessage = core::validUtf8(redact(message, key));
        reply.text = core::validUtf8(redact(reply.text, key));
        reply.latencyMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
        return reply;
    };

    Permit permit(m_limiter, cancel);
    if (!permit.held())
        return fail(LlmError::Cancelled,
            "cancelled while waiting for a free slot (at most " + std::to_string(m_limiter.limit())
                + " calls at once)");

    HttpRequest http;
    http.url = endpoint();
    http.headers = headers(request.stream);
    http.body = core::dumpJson(body(request)); // prompts quote logs cut at byte offsets
    http.connectTimeout = m_config.connectTimeout;
    http.firstTokenTimeout = m_config.firstTokenTimeout;
    http.totalTimeout = m_config.totalTimeout;
    const std::string where = std::string(protocolName(m_config.protocol)) + " endpoint " + http.url;
    const int maxAttempts = std::max(1, m_config.retry.maxAttempts);
    const size_t maxText = std::max<size_t>(1, m_config.maxReplyBytes);
    const size_t maxBody = maxText > (SIZE_MAX / 64) ? SIZE_MAX : maxText * 64;
    auto tooLong = [&] {
        return fail(LlmError::BadReply,
            "the reply from " + where + " passed the cap of " + sizeText(maxText)
                + " of reply text (--llm-max-reply-kb); the model did not stop or the stream never ends");
    };

    for (int attempt = 1;; ++attempt) {
        reply.attempts = attempt;
        AttemptState st;
        SseParser sse;
        const auto attemptStarted = Clock::now();
        double firstTokenMs = 0;
        size_t received = 0;
        bool overCap = false;
        auto deliver = [&](const SseEvent& ev) {
            if (overCap)
                return;
            std::string d = onEvent(ev, st);
            if (d.empty())
                return;
            if (st.text.size() > maxText) {
                overCap = true; // nothing past the cap reaches the observer
                return;
            }
            if (!st.firstToken) {
                st.firstToken = true;
                firstTokenMs
                    = std::chrono::duration<double, std::milli>(Clock::now() - attemptStarted).count();
            }
            if (observer)
                observer->delta(redact(d, key));
        };
        auto sink = [&](int status, std::string_view bytes) {
            received += bytes.size();
            if (request.stream && status >= 200 && status < 300)
                sse.feed(bytes, deliver);
            // Stops a runaway reply while it streams, not after it was received whole.
            overCap = overCap || received > maxBody;
            return !overCap;
        };
        HttpResponse r = HttpTransport::post(
            http, sink, [&] { return st.firstToken; }, cancel);
        reply.httpStatus = r.status;

        LlmError kind = LlmError::None;
        std::string why;
        std::optional<std::chrono::milliseconds> wait;
        switch (r.error) {
        case TransportError::None:
            break;
        case TransportError::Cancelled:
            return fail(LlmError::Cancelled, "cancelled");
        case TransportError::Aborted:
            if (overCap)
                return tooLong();
            [[fallthrough]];
        case TransportError::Connect:
        case TransportError::Other:
            return fail(LlmError::Unreachable,
                "cannot reach " + where + ": " + r.errorText
                    + "; check --llm-url and that the server is running");
        case TransportError::ConnectTimeout:
            return fail(LlmError::Timeout,
                "connecting to " + where + " took longer than " + seconds(m_config.connectTimeout)
                    + " s (--llm-connect-timeout); check --llm-url and the network");
        case TransportError::FirstTokenTimeout:
            return fail(LlmError::Timeout,
                "no first token from " + where + " within " + seconds(m_config.firstTokenTimeout)
                    + " s (--llm-first-token-timeout); the model may be overloaded: try again later or raise "
                      "the "
                      "timeout");
        case TransportError::TotalTimeout:
            return fail(LlmError::Timeout,
                "the reply from " + where + " took longer than " + seconds(m_config.totalTimeout)
                    + " s (--llm-timeout)");
        case TransportError::Reset:
            kind = LlmError::Reset;
            why = "connection to " + where + " reset (" + r.errorText + ")";
            break;
        }

        if (r.error == TransportError::None && r.status >= 200 && r.status < 300) {
            auto ct = r.headers.find("content-type");
            const bool eventStream = ct != r.headers.end()
                ? ct->second.find("event-stream") != std::string::npos
                : r.body.find_first_not_of(" \r\n\t") != std::string::npos
                    && r.body[r.body.find_first_not_of(" \r\n\t")] != '{';
            if (request.stream && eventStream) {
                sse.finish(deliver);
            } else {
                // Not streamed (or the server ignored "stream"): one JSON body.
                st = AttemptState {};
                onWhole(r.body, st);
                if (st.text.size() > maxText)
                    return tooLong();
                firstTokenMs
                    = std::chrono::duration<double, std::milli>(Clock::now() - attemptStarted).count();
                if (observer && !st.text.empty())
                    observer->delta(redact(st.text, key));
            }
            if (overCap)
                return tooLong();
            reply.text = st.text;
            if (!st.error.empty())
                return fail(LlmError::BadReply, where + " sent a reply Hone cannot read: " + st.error);
            if (!st.complete)
                return fail(LlmError::BadReply,
                    "the stream from " + where
                        + " ended before the reply was complete (no finish reason or end marker)");
            reply.ok = true;
            reply.text = core::validUtf8(redact(st.text, key));
            reply.finishReason = st.finishReason;
            reply.truncated = truncatedBy(st.finishReason);
            reply.usageReported = st.tokensIn >= 0 && st.tokensOut >= 0;
            size_t promptChars = request.system.size();
            for (const auto& m : request.messages)
                promptChars += m.content.size();
            // Without usage, about four characters per token: good enough for a budget.
            reply.tokensIn = st.tokensIn >= 0 ? st.tokensIn : static_cast<int64_t>(promptChars / 4);
            reply.tokensOut = st.tokensOut >= 0 ? st.tokensOut : static_cast<int64_t>(st.text.size() / 4);
            auto price = m_config.prices.find(m_config.model);
            reply.priced = price.has_value();
            if (price)
                reply.costUsd = (static_cast<double>(reply.tokensIn) * price->inputPerMTok
                                    + static_cast<double>(reply.tokensOut) * price->outputPerMTok)
                    / 1e6;
            reply.firstTokenMs = firstTokenMs;
            reply.latencyMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
            return reply;
        }

        if (r.error == TransportError::None) {
            const std::string pm = providerMessage(r.body);
            const std::string status = "HTTP " + std::to_string(r.status) + (pm.empty() ? "" : ": " + pm);
            if (retryableStatus(r.status)) {
                kind = r.status == 429 ? LlmError::RateLimited : LlmError::Server;
                why = where + " answered " + status;
                wait = retryAfter(r.headers);
            } else if (r.status == 401 || r.status == 403) {
                std::string advice = key.empty()
                    ? "no key was sent: set the environment variable " + m_config.keyEnv
                        + " or name another with --llm-key-env"
                    : "check the key in the environment variable " + m_config.keyEnv;
                return fail(LlmError::Auth, where + " refused the key (" + status + "); " + advice);
            } else if (r.status == 404) {
                return fail(LlmError::NotFound,
                    where + " answered " + status + "; check --llm-model (" + m_config.model
                        + ") and --llm-url");
            } else {
                return fail(LlmError::BadRequest, where + " refused the request (" + status + ")");
            }
        }

        if (attempt >= maxAttempts)
            return fail(kind, why + " (gave up after " + std::to_string(attempt) + " attempts)");
        if (wait && *wait > m_config.retry.maxRetryAfter)
            return fail(kind,
                why + "; it asks to wait " + seconds(*wait) + " s (Retry-After), longer than the limit of "
                    + seconds(m_config.retry.maxRetryAfter) + " s");
        std::chrono::milliseconds delay = wait ? *wait : nextDelay(attempt);
        if (observer)
            observer->retrying(attempt + 1, maxAttempts, static_cast<double>(delay.count()) / 1000.0,
                redact(why, key) + (wait ? " (Retry-After)" : ""));
        const auto until = Clock::now() + delay;
        while (Clock::now() < until) {
            if (cancel && cancel->load())
                return fail(LlmError::Cancelled, "cancelled while waiting to retry");
            std::this_thread::sleep_for(
                std::min<Clock::duration>(std::chrono::milliseconds(50), until - Clock::now()));
        }
    }
}

} // namespace hone::llm
