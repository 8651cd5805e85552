#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>

namespace hone::llm {

/// Retries with exponential backoff and jitter on 429, 5xx and connection resets; a server's
/// Retry-After (seconds or an HTTP date) or retry-after-ms wins over the backoff.
struct RetryPolicy {
    int maxAttempts = 4; // the first try included
    std::chrono::milliseconds baseDelay { 1000 }; // before the second attempt, doubled after
    std::chrono::milliseconds maxDelay { 30000 };
    double jitter = 0.5; // the delay is drawn from [d * (1 - jitter), d]
    std::chrono::milliseconds maxRetryAfter { 120000 }; // a longer Retry-After ends the call instead

    /// The wait after failed attempt `attempt` (1-based), before any Retry-After.
    std::chrono::milliseconds backoff(int attempt, std::mt19937_64& rng) const;
};

/// HTTP statuses worth another attempt: 408, 409, 429, 500, 502, 503, 504, 529.
bool retryableStatus(int status);

/// The wait a reply asks for, from `retry-after-ms` or `retry-after` (delta seconds or an
/// HTTP date relative to `now`). Header names are lower case. nullopt when absent or unreadable.
std::optional<std::chrono::milliseconds> retryAfter(const std::map<std::string, std::string>& headers,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

} // namespace hone::llm
