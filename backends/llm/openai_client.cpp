// The OpenAI-compatible chat protocol: POST {base}/chat/completions, also spoken by vLLM,
// llama.cpp's server, Ollama and most gateways.

#include "backends/llm/chat_client.h"

namespace hone::llm {
namespace {

std::string excerpt(const std::string& s)
{
    std::string e = s.substr(0, 120);
    for (char& c : e)
        if (static_cast<unsigned char>(c) < 0x20)
            c = ' ';
    return "'" + e + (s.size() > 120 ? "...'" : "'");
}

/// `content` as a string, or the text parts of a content array.
std::string contentText(const nlohmann::json& content)
{
    if (content.is_string())
        return content.get<std::string>();
    std::string out;
    if (content.is_array())
        for (const auto& part : content)
            if (part.is_object() && stringField(part, "type") == "text")
                out += stringField(part, "text");
    return out;
}

void readUsage(const nlohmann::json& j, AttemptState& st)
{
    auto u = j.find("usage");
    if (u == j.end() || !u->is_object())
        return;
    if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer())
        st.tokensIn = p->get<int64_t>();
    if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer())
        st.tokensOut = c->get<int64_t>();
}

std::string errorText(const nlohmann::json& e)
{
    if (e.is_string())
        return e.get<std::string>();
    if (e.is_object())
        return stringField(e, "message", e.dump());
    return e.dump();
}

} // namespace

std::string OpenAiClient::endpoint() const
{
    const std::string& b = m_config.baseUrl;
    return b.ends_with("/chat/completions") ? b : b + "/chat/completions";
}

std::vector<std::string> OpenAiClient::headers(bool stream) const
{
    std::vector<std::string> h { "Content-Type: application/json" };
    h.push_back(stream ? "Accept: text/event-stream" : "Accept: application/json");
    if (!m_config.apiKey.empty())
        h.push_back("Authorization: Bearer " + m_config.apiKey);
    return h;
}

nlohmann::json OpenAiClient::body(const core::LlmRequest& r) const
{
    nlohmann::json messages = nlohmann::json::array();
    if (!r.system.empty())
        messages.push_back({ { "role", "system" }, { "content", r.system } });
    for (const auto& m : r.messages)
        messages.push_back({ { "role", m.role }, { "content", m.content } });
    nlohmann::json b = { { "model", m_config.model }, { "messages", messages }, { "stream", r.stream } };
    b[m_config.maxTokensField] = r.maxTokens;
    if (r.temperature >= 0)
        b["temperature"] = r.temperature;
    if (r.stream && m_config.streamUsage)
        b["stream_options"] = { { "include_usage", true } };
    return b;
}

std::string OpenAiClient::onEvent(const SseEvent& ev, AttemptState& st) const
{
    if (ev.data == "[DONE]") {
        st.complete = true;
        return {};
    }
    auto j = nlohmann::json::parse(ev.data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        if (st.error.empty())
            st.error = "a stream event is not a JSON object: " + excerpt(ev.data);
        return {};
    }
    if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
        if (st.error.empty())
            st.error = "the stream carried an error: " + errorText(*e);
        return {};
    }
    readUsage(j, st);
    std::string delta;
    if (auto c = j.find("choices"); c != j.end() && c->is_array()) {
        for (const auto& ch : *c) {
            if (!ch.is_object())
                continue;
            // Only the first choice; an index that is not the number 0 is another choice.
            if (auto i = ch.find("index"); i != ch.end() && !(i->is_number() && *i == 0))
                continue;
            if (auto d = ch.find("delta"); d != ch.end() && d->is_object())
                if (auto content = d->find("content"); content != d->end())
                    delta += contentText(*content);
            if (auto f = ch.find("finish_reason"); f != ch.end() && f->is_string()) {
                st.finishReason = f->get<std::string>();
                st.complete = true;
            }
        }
    }
    st.text += delta;
    return delta;
}

void OpenAiClient::onWhole(const std::string& body, AttemptState& st) const
{
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        st.error = "the body is not a JSON object: " + excerpt(body);
        return;
    }
    if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
        st.error = "the reply is an error: " + errorText(*e);
        return;
    }
    auto c = j.find("choices");
    if (c == j.end() || !c->is_array() || c->empty()) {
        st.error = "the reply has no choices";
        return;
    }
    const auto& ch = (*c)[0];
    auto msg = ch.is_object() ? ch.find("message") : ch.end();
    if (!ch.is_object() || msg == ch.end() || !msg->is_object()) {
        st.error = "the first choice has no message";
        return;
    }
    if (auto content = msg->find("content"); content != msg->end())
        st.text = contentText(*content);
    if (auto f = ch.find("finish_reason"); f != ch.end() && f->is_string())
        st.finishReason = f->get<std::string>();
    readUsage(j, st);
    st.complete = true;
}

} // namespace hone::llm
