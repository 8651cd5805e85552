#pragma once

#include "backends/llm/concurrency_limiter.h"
#include "backends/llm/price_table.h"
#include "backends/llm/retry_policy.h"
#include "backends/llm/sse_parser.h"
#include "core/llm_client.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace hone::llm {

enum class Protocol { OpenAi, Anthropic };

/// Everything a client needs. The key lives only here, in memory: it is read from the
/// environment by the front end and never stored, logged or printed.
struct ClientConfig {
    Protocol protocol = Protocol::OpenAi;
    std::string baseUrl; // ".../v1"; the endpoint path is appended
    std::string model;
    std::string apiKey;
    std::string keyEnv; // the variable it came from, for messages
    std::chrono::milliseconds connectTimeout { 10000 };
    std::chrono::milliseconds firstTokenTimeout { 120000 };
    std::chrono::milliseconds totalTimeout { 180000 }; // a kernel reply, not an essay
    /// The most reply text one call may bring; a longer reply (or a stream that never ends)
    /// fails with a message naming the cap. The raw body may be up to 64 times this (framing).
    size_t maxReplyBytes = size_t(1) << 20;
    RetryPolicy retry;
    int maxConcurrency = 4;
    PriceTable prices;
    std::string maxTokensField = "max_tokens"; // OpenAI: some models want max_completion_tokens
    bool streamUsage = true; // OpenAI: ask for usage in the stream (stream_options)
    std::string anthropicVersion = "2023-06-01";
    uint64_t jitterSeed = 0; // 0: from std::random_device
};

/// "https://api.openai.com/v1" for openai, "https://api.anthropic.com/v1" for anthropic.
std::string defaultBaseUrl(Protocol p);
const char* protocolName(Protocol p);

/// What one attempt gathered from the reply.
struct AttemptState {
    std::string text;
    std::string finishReason;
    int64_t tokensIn = -1; // -1: not reported
    int64_t tokensOut = -1;
    bool complete = false; // a finish reason or end-of-stream marker arrived
    std::string error; // malformed reply or an error event
    bool firstToken = false;
};

/// An LLM provider over HTTP: retries with backoff and jitter honouring Retry-After, connect /
/// first-token / total timeouts, a concurrency limit shared by every call on this client,
/// cancellation, token counts and cost. Subclasses speak one wire protocol.
class ChatClient : public core::LlmClient {
public:
    explicit ChatClient(ClientConfig config);

    std::string model() const override { return m_config.model; }
    core::LlmReply complete(const core::LlmRequest& request, core::LlmStreamObserver* observer,
        const std::atomic<bool>* cancel) override;

    const ClientConfig& config() const { return m_config; }
    const ConcurrencyLimiter& limiter() const { return m_limiter; }

    /// One streamed event, or a whole body, decoded as complete() decodes it; public for the
    /// fuzzer (tests/fuzz/fuzz_sse.cpp).
    std::string decodeEvent(const SseEvent& event, AttemptState& state) const { return onEvent(event, state); }
    void decodeWhole(const std::string& body, AttemptState& state) const { onWhole(body, state); }

protected:
    virtual std::string endpoint() const = 0;
    virtual std::vector<std::string> headers(bool stream) const = 0;
    virtual nlohmann::json body(const core::LlmRequest& request) const = 0;
    /// One streamed event; text deltas are appended to `state.text` and returned.
    virtual std::string onEvent(const SseEvent& event, AttemptState& state) const = 0;
    /// A whole (non-streamed) reply body.
    virtual void onWhole(const std::string& body, AttemptState& state) const = 0;
    /// Whether the finish reason means the token limit cut the reply.
    virtual bool truncatedBy(const std::string& finishReason) const = 0;

    /// The provider's own error text in a body (`error.message`, `detail`, `message`), or a
    /// short sanitized excerpt of the body.
    static std::string providerMessage(const std::string& body);

    ClientConfig m_config;

private:
    std::chrono::milliseconds nextDelay(int attempt);

    ConcurrencyLimiter m_limiter;
    std::mutex m_rngMutex;
    std::mt19937_64 m_rng; // guarded by m_rngMutex
};

class OpenAiClient final : public ChatClient {
public:
    explicit OpenAiClient(ClientConfig config)
        : ChatClient(std::move(config))
    {
    }
    std::string provider() const override { return "openai"; }

protected:
    std::string endpoint() const override;
    std::vector<std::string> headers(bool stream) const override;
    nlohmann::json body(const core::LlmRequest& request) const override;
    std::string onEvent(const SseEvent& event, AttemptState& state) const override;
    void onWhole(const std::string& body, AttemptState& state) const override;
    bool truncatedBy(const std::string& finishReason) const override { return finishReason == "length"; }
};

class AnthropicClient final : public ChatClient {
public:
    explicit AnthropicClient(ClientConfig config)
        : ChatClient(std::move(config))
    {
    }
    std::string provider() const override { return "anthropic"; }

protected:
    std::string endpoint() const override;
    std::vector<std::string> headers(bool stream) const override;
    nlohmann::json body(const core::LlmRequest& request) const override;
    std::string onEvent(const SseEvent& event, AttemptState& state) const override;
    void onWhole(const std::string& body, AttemptState& state) const override;
    bool truncatedBy(const std::string& finishReason) const override { return finishReason == "max_tokens"; }
};

/// `object[key]` when it is a string, else `fallback`. Providers' replies are read with this (not
/// json::value, which throws on a field of another type): a malformed reply is an error in the
/// attempt, never an exception thrown through libcurl's callback.
std::string stringField(const nlohmann::json& object, const char* key, std::string fallback = {});

/// The client for `config.protocol`.
std::unique_ptr<ChatClient> makeClient(ClientConfig config);

} // namespace hone::llm
