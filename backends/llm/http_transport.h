#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hone::llm {

struct HttpRequest {
    std::string url;
    std::vector<std::string> headers; // "Name: value"
    std::string body; // POSTed
    std::chrono::milliseconds connectTimeout { 10000 };
    std::chrono::milliseconds firstTokenTimeout { 0 }; // 0 = none; see HttpTransport::post
    std::chrono::milliseconds totalTimeout { 0 }; // 0 = none
};

enum class TransportError {
    None,
    Connect, // refused, unknown host, no route
    ConnectTimeout,
    FirstTokenTimeout,
    TotalTimeout,
    Reset, // reset, empty reply, cut off mid-body
    Cancelled,
    Aborted, // the data callback asked to stop
    Other,
};

struct HttpResponse {
    int status = 0; // 0 when no response came
    std::map<std::string, std::string> headers; // lower-case names
    std::string body; // everything received
    TransportError error = TransportError::None;
    std::string errorText; // libcurl's words, when error != None
    double totalMs = 0;
};

/// POST over libcurl's multi interface, polled every 50 ms so that cancellation and the
/// first-token timeout act promptly. One call per thread at a time; calls on different
/// threads are independent.
class HttpTransport {
public:
    /// Sees each piece of the body as it arrives, with the response status; returns false to
    /// abort the transfer.
    using DataSink = std::function<bool(int status, std::string_view bytes)>;

    /// `firstTokenSeen` tells the first-token timeout when the first useful token came (for a
    /// stream, the first text delta); null means the first body byte.
    static HttpResponse post(const HttpRequest& request, const DataSink& onData,
        const std::function<bool()>& firstTokenSeen, const std::atomic<bool>* cancel);
};

} // namespace hone::llm
