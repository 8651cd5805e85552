#include "backends/llm/retry_policy.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace hone::llm {

std::chrono::milliseconds RetryPolicy::backoff(int attempt, std::mt19937_64& rng) const
{
    double d = static_cast<double>(baseDelay.count()) * std::pow(2.0, std::max(0, attempt - 1));
    d = std::min(d, static_cast<double>(maxDelay.count()));
    double j = std::clamp(jitter, 0.0, 1.0);
    // Portable draw in [0, 1): the same seed gives the same delays with any standard library.
    double u = static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
    d *= (1.0 - j) + j * u;
    return std::chrono::milliseconds(static_cast<int64_t>(d));
}

bool retryableStatus(int status)
{
    return status == 408 || status == 409 || status == 429 || status == 500 || status == 502 || status == 503
        || status == 504 || status == 529;
}

std::optional<std::chrono::milliseconds> retryAfter(
    const std::map<std::string, std::string>& headers, std::chrono::system_clock::time_point now)
{
    auto number = [](const std::string& s) -> std::optional<double> {
        char* end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end == s.c_str() || *end != '\0' || !(v >= 0) || !std::isfinite(v))
            return std::nullopt;
        return v;
    };
    if (auto it = headers.find("retry-after-ms"); it != headers.end())
        if (auto v = number(it->second))
            return std::chrono::milliseconds(static_cast<int64_t>(*v));
    auto it = headers.find("retry-after");
    if (it == headers.end())
        return std::nullopt;
    if (auto v = number(it->second))
        return std::chrono::milliseconds(static_cast<int64_t>(*v * 1000));
    time_t when = curl_getdate(it->second.c_str(), nullptr);
    if (when < 0)
        return std::nullopt;
    auto delta = std::chrono::system_clock::from_time_t(when) - now;
    return std::max(
        std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(delta));
}

} // namespace hone::llm
