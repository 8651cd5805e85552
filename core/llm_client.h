#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

/// The engine's view of a language model. `hone_core` never talks HTTP: backends/llm implements
/// this over libcurl (OpenAI-compatible and Anthropic), tests implement it in memory.
namespace hone::core {

struct LlmMessage {
    std::string role; // user | assistant
    std::string content;
};

struct LlmRequest {
    std::string system;
    std::vector<LlmMessage> messages;
    int maxTokens = 8192;
    double temperature = -1; // < 0: the provider's default
    bool stream = true;
};

/// Why a call produced no usable reply. The first group stops a session (the configuration is
/// wrong and retrying cannot help); the second is transient and already retried.
enum class LlmError {
    None,
    Unreachable, // connection refused, unknown host: --llm-url is wrong or the server is down
    Auth, // 401 / 403: the key is missing or refused
    NotFound, // 404: unknown model or wrong endpoint path
    BadRequest, // 400 / 422: the provider refused the request (context too long, bad option)
    RateLimited, // 429 after every retry
    Server, // 5xx after every retry
    Reset, // connection reset / empty reply after every retry
    Timeout, // connect, first-token or total timeout
    BadReply, // malformed JSON, no choices, an error event in the stream
    Cancelled,
};

const char* llmErrorName(LlmError e);

/// True for errors after which further calls with the same settings will fail too.
bool llmErrorIsFatal(LlmError e);

struct LlmReply {
    bool ok = false;
    std::string text;
    std::string finishReason; // as the provider said it: stop, length, end_turn, max_tokens...
    bool truncated = false; // stopped at the token limit
    int64_t tokensIn = 0;
    int64_t tokensOut = 0;
    bool usageReported = true; // false: the provider sent no usage; tokens are estimated
    double costUsd = 0;
    bool priced = true; // false: the model is not in the price table; cost is 0
    double latencyMs = 0; // the whole call, retries and waits included
    double firstTokenMs = 0; // of the attempt that succeeded
    int attempts = 0;
    int httpStatus = 0; // of the last attempt
    LlmError error = LlmError::None;
    std::string errorMessage; // what went wrong and what to do; never holds a key
};

/// Receives a call's progress while it runs (on the calling thread).
class LlmStreamObserver {
public:
    virtual ~LlmStreamObserver() = default;
    /// A piece of the reply text as it streams in.
    virtual void delta(std::string_view) { }
    /// An attempt failed and the call will try again after `delaySeconds`; text streamed so far
    /// is void.
    virtual void retrying(
        int /*nextAttempt*/, int /*maxAttempts*/, double /*delaySeconds*/, const std::string& /*why*/)
    {
    }
};

class LlmClient {
public:
    virtual ~LlmClient() = default;
    virtual std::string provider() const = 0; // openai | anthropic | ...
    virtual std::string model() const = 0;

    /// One completion: retries, backoff, timeouts and the concurrency limit are the client's.
    /// Thread-safe. Returns a reply with ok = false rather than throwing. `cancel` may be null.
    virtual LlmReply complete(
        const LlmRequest& request, LlmStreamObserver* observer, const std::atomic<bool>* cancel)
        = 0;
};

} // namespace hone::core
