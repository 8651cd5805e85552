#pragma once
// A scripted model server for the LLM tests: cpp-httplib on 127.0.0.1 with an ephemeral port,
// speaking the OpenAI chat-completions and Anthropic messages protocols (streamed and whole),
// replaying canned replies in order and recording every request it gets.

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace hone::testing {

struct ScriptedReply {
    int status = 200;
    std::string text; // the reply text of a 200
    std::string finish
        = "stop"; // openai finish_reason ("stop", "length"); anthropic gets end_turn / max_tokens
    std::string rawBody; // sent verbatim instead of a generated reply (errors, malformed JSON)
    std::string contentType; // of rawBody; default application/json
    std::vector<std::pair<std::string, std::string>> headers; // e.g. {"Retry-After", "1"}
    int firstTokenDelayMs = 0; // after the headers, before the first text
    int chunkDelayMs = 0;
    size_t chunkSize = 24; // streamed text pieces
    bool cutMidStream = false; // close the connection after the first piece
    bool usage = true;
    bool emptyChoices = false; // openai: a 200 whose "choices" is empty
    bool noFinish = false; // the stream ends without a finish reason or end marker
    bool endless = false; // the stream repeats the text until the client hangs up
};

struct RecordedRequest {
    std::string path;
    std::map<std::string, std::string> headers;
    nlohmann::json body;
    std::string rawBody;

    /// The user message (last message's content) of the request.
    std::string user() const
    {
        if (!body.is_object() || !body.contains("messages") || body["messages"].empty())
            return {};
        return body["messages"].back().value("content", std::string());
    }
    std::string system() const
    {
        if (body.contains("system"))
            return body["system"].get<std::string>();
        for (const auto& m : body.value("messages", nlohmann::json::array()))
            if (m.value("role", std::string()) == "system")
                return m.value("content", std::string());
        return {};
    }
};

class ScriptedLlmServer {
public:
    /// Chooses the reply when the queue is empty; `index` counts requests from 0.
    using Script = std::function<ScriptedReply(const RecordedRequest&, int index)>;

    ScriptedLlmServer()
    {
        m_server.Post("/v1/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res) { handle(req, res, false); });
        m_server.Post("/v1/messages",
            [this](const httplib::Request& req, httplib::Response& res) { handle(req, res, true); });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        if (m_port <= 0)
            throw std::runtime_error("scripted LLM server: cannot bind 127.0.0.1");
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        // The socket already listens after bind; wait until it is also served.
        for (int i = 0; i < 500 && !m_server.is_running(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ~ScriptedLlmServer()
    {
        m_stopping = true;
        m_server.stop();
        if (m_thread.joinable())
            m_thread.join();
    }
    ScriptedLlmServer(const ScriptedLlmServer&) = delete;
    ScriptedLlmServer& operator=(const ScriptedLlmServer&) = delete;

    int port() const { return m_port; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/v1"; }

    void push(ScriptedReply r)
    {
        std::lock_guard lock(m_mutex);
        m_queue.push_back(std::move(r));
    }
    void setScript(Script s)
    {
        std::lock_guard lock(m_mutex);
        m_script = std::move(s);
    }
    /// Requests whose key differs get a 401 that echoes the key they sent (as careless servers do).
    void requireKey(std::string key)
    {
        std::lock_guard lock(m_mutex);
        m_key = std::move(key);
    }
    /// Requests for other models get a 404 with the provider's error body.
    void knownModels(std::set<std::string> models)
    {
        std::lock_guard lock(m_mutex);
        m_models = std::move(models);
    }
    std::vector<RecordedRequest> requests() const
    {
        std::lock_guard lock(m_mutex);
        return m_requests;
    }
    int maxConcurrent() const { return m_maxConcurrent.load(); }

    /// Replies as a model would write them.
    static std::string fenced(const std::string& code, const std::string& lang = "cpp")
    {
        return "Here is a faster kernel.\n\n```" + lang + "\n" + code + (code.ends_with("\n") ? "" : "\n")
            + "```\n\nIt keeps every element's result exact within the tolerance.";
    }

private:
    static std::vector<std::string> pieces(const std::string& text, size_t size)
    {
        std::vector<std::string> out;
        for (size_t i = 0; i < text.size(); i += std::max<size_t>(1, size))
            out.push_back(text.substr(i, size));
        return out;
    }

    void handle(const httplib::Request& req, httplib::Response& res, bool anthropic)
    {
        RecordedRequest rec;
        rec.path = req.path;
        for (const auto& [k, v] : req.headers)
            rec.headers[k] = v;
        rec.rawBody = req.body;
        rec.body = nlohmann::json::parse(req.body, nullptr, false);
        const std::string model
            = rec.body.is_object() ? rec.body.value("model", std::string()) : std::string();
        ScriptedReply reply;
        {
            std::lock_guard lock(m_mutex);
            m_requests.push_back(rec);
            const int index = static_cast<int>(m_requests.size()) - 1;
            std::string sent = anthropic ? header(req, "x-api-key") : header(req, "Authorization");
            if (!anthropic && sent.rfind("Bearer ", 0) == 0)
                sent = sent.substr(7);
            if (!m_key.empty() && sent != m_key) {
                reply.status = 401;
                reply.rawBody = anthropic
                    ? nlohmann::json { { "type", "error" },
                          { "error",
                              { { "type", "authentication_error" },
                                  { "message", "invalid x-api-key: " + sent } } } }
                          .dump()
                    : nlohmann::json {
                          { "error",
                              { { "message",
                                    "Incorrect API key provided: " + sent
                                        + ". You can find your API key at the dashboard." },
                                  { "type", "invalid_request_error" }, { "code", "invalid_api_key" } } }
                      }.dump();
            } else if (!m_models.empty() && !m_models.count(model)) {
                reply.status = 404;
                reply.rawBody = anthropic
                    ? nlohmann::json { { "type", "error" },
                          { "error", { { "type", "not_found_error" }, { "message", "model: " + model } } } }
                          .dump()
                    : nlohmann::json {
                          { "error",
                              { { "message",
                                    "The model `" + model
                                        + "` does not exist or you do not have access to it." },
                                  { "type", "invalid_request_error" }, { "code", "model_not_found" } } }
                      }.dump();
            } else if (!m_queue.empty()) {
                reply = std::move(m_queue.front());
                m_queue.pop_front();
            } else if (m_script) {
                reply = m_script(rec, index);
            } else {
                reply.status = 500;
                reply.rawBody
                    = R"({"error":{"message":"the scripted server has no reply left","type":"server_error"}})";
            }
        }
        const int now = ++m_inFlight;
        for (int seen = m_maxConcurrent.load();
             now > seen && !m_maxConcurrent.compare_exchange_weak(seen, now);) { }
        auto leave = std::make_shared<bool>(false);
        auto release = [this, leave](bool) {
            if (!*leave) {
                *leave = true;
                --m_inFlight;
            }
        };

        for (const auto& [k, v] : reply.headers)
            res.set_header(k, v);
        res.status = reply.status;
        if (!reply.rawBody.empty() || reply.status != 200) {
            if (reply.firstTokenDelayMs > 0)
                sleep(reply.firstTokenDelayMs);
            res.set_content(
                reply.rawBody, reply.contentType.empty() ? "application/json" : reply.contentType);
            release(true);
            return;
        }

        size_t promptChars = 0;
        if (rec.body.is_object()) {
            if (rec.body.contains("system") && rec.body["system"].is_string())
                promptChars += rec.body["system"].get<std::string>().size();
            for (const auto& m : rec.body.value("messages", nlohmann::json::array()))
                promptChars += m.value("content", std::string()).size();
        }
        const int64_t tokensIn = static_cast<int64_t>(promptChars / 4 + 1);
        const int64_t tokensOut = static_cast<int64_t>(reply.text.size() / 4 + 1);
        const bool stream = rec.body.is_object() && rec.body.value("stream", false);
        const std::string finish
            = anthropic ? (reply.finish == "length" ? "max_tokens" : "end_turn") : reply.finish;

        if (!stream) {
            if (reply.firstTokenDelayMs > 0)
                sleep(reply.firstTokenDelayMs);
            nlohmann::json body;
            if (anthropic) {
                body = { { "id", "msg_scripted" }, { "type", "message" }, { "role", "assistant" },
                    { "model", model }, { "content", { { { "type", "text" }, { "text", reply.text } } } },
                    { "stop_reason", finish } };
                if (reply.usage)
                    body["usage"] = { { "input_tokens", tokensIn }, { "output_tokens", tokensOut } };
            } else {
                nlohmann::json choices = nlohmann::json::array();
                if (!reply.emptyChoices)
                    choices.push_back({ { "index", 0 },
                        { "message", { { "role", "assistant" }, { "content", reply.text } } },
                        { "finish_reason", finish } });
                body = { { "id", "chatcmpl-scripted" }, { "object", "chat.completion" }, { "model", model },
                    { "choices", choices } };
                if (reply.usage)
                    body["usage"] = { { "prompt_tokens", tokensIn }, { "completion_tokens", tokensOut },
                        { "total_tokens", tokensIn + tokensOut } };
            }
            res.set_content(body.dump(), "application/json");
            release(true);
            return;
        }

        auto parts = pieces(reply.text, reply.chunkSize);
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, reply, parts, anthropic, model, finish, tokensIn, tokensOut, release](
                size_t, httplib::DataSink& sink) {
                auto send = [&](const std::string& s) {
                    return m_stopping ? false : sink.write(s.data(), s.size());
                };
                auto event = [&](const std::string& name, const nlohmann::json& data) {
                    return send(
                        (name.empty() ? "" : "event: " + name + "\n") + "data: " + data.dump() + "\n\n");
                };
                if (anthropic) {
                    event("message_start",
                        { { "type", "message_start" },
                            { "message",
                                { { "id", "msg_scripted" }, { "type", "message" }, { "role", "assistant" },
                                    { "model", model }, { "content", nlohmann::json::array() },
                                    { "usage",
                                        reply.usage ? nlohmann::json { { "input_tokens", tokensIn },
                                            { "output_tokens", 1 } }
                                                    : nlohmann::json(nullptr) } } } });
                    event("content_block_start",
                        { { "type", "content_block_start" }, { "index", 0 },
                            { "content_block", { { "type", "text" }, { "text", "" } } } });
                    event("ping", { { "type", "ping" } });
                } else {
                    send(": keep-alive comment\n\n");
                }
                if (reply.firstTokenDelayMs > 0)
                    sleep(reply.firstTokenDelayMs);
                for (size_t i = 0; i < parts.size(); i = reply.endless && i + 1 == parts.size() ? 0 : i + 1) {
                    bool ok = anthropic
                        ? event("content_block_delta",
                            { { "type", "content_block_delta" }, { "index", 0 },
                                { "delta", { { "type", "text_delta" }, { "text", parts[i] } } } })
                        : event("",
                            { { "id", "chatcmpl-scripted" }, { "object", "chat.completion.chunk" },
                                { "choices",
                                    { { { "index", 0 }, { "delta", { { "content", parts[i] } } },
                                        { "finish_reason", nullptr } } } } });
                    if (!ok)
                        return false;
                    if (reply.cutMidStream)
                        return false; // the connection drops before the chunked body ends
                    if (reply.chunkDelayMs > 0)
                        sleep(reply.chunkDelayMs);
                }
                // Out of flight before the last event leaves: a client that has read it may send its
                // next request at once, and it must not find this one still counted (httplib calls
                // the releaser only after the body is flushed, which can come later under load).
                release(true);
                if (!reply.noFinish) {
                    if (anthropic) {
                        event("content_block_stop", { { "type", "content_block_stop" }, { "index", 0 } });
                        nlohmann::json delta
                            = { { "type", "message_delta" }, { "delta", { { "stop_reason", finish } } } };
                        if (reply.usage)
                            delta["usage"] = { { "output_tokens", tokensOut } };
                        event("message_delta", delta);
                        event("message_stop", { { "type", "message_stop" } });
                    } else {
                        event("",
                            { { "id", "chatcmpl-scripted" }, { "object", "chat.completion.chunk" },
                                { "choices",
                                    { { { "index", 0 }, { "delta", nlohmann::json::object() },
                                        { "finish_reason", finish } } } } });
                        if (reply.usage)
                            event("",
                                { { "id", "chatcmpl-scripted" }, { "choices", nlohmann::json::array() },
                                    { "usage",
                                        { { "prompt_tokens", tokensIn }, { "completion_tokens", tokensOut },
                                            { "total_tokens", tokensIn + tokensOut } } } });
                        send("data: [DONE]\n\n");
                    }
                }
                sink.done();
                return true;
            },
            release);
    }

    static std::string header(const httplib::Request& req, const char* name)
    {
        return req.has_header(name) ? req.get_header_value(name) : std::string();
    }

    void sleep(int ms)
    {
        // In slices, so that a stopping server does not hold a test for a long scripted delay.
        for (int waited = 0; waited < ms && !m_stopping; waited += 20)
            std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20, ms - waited)));
    }

    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    mutable std::mutex m_mutex;
    std::deque<ScriptedReply> m_queue; // guarded by m_mutex
    Script m_script; // guarded by m_mutex
    std::vector<RecordedRequest> m_requests; // guarded by m_mutex
    std::string m_key; // guarded by m_mutex
    std::set<std::string> m_models; // guarded by m_mutex
    std::atomic<int> m_inFlight { 0 };
    std::atomic<int> m_maxConcurrent { 0 };
    std::atomic<bool> m_stopping { false };
};

} // namespace hone::testing
