// The Anthropic Messages protocol: POST {base}/messages with x-api-key and anthropic-version.

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

void readUsage(const nlohmann::json& u, AttemptState& st)
{
    if (!u.is_object())
        return;
    if (auto p = u.find("input_tokens"); p != u.end() && p->is_number_integer())
        st.tokensIn = p->get<int64_t>();
    if (auto c = u.find("output_tokens"); c != u.end() && c->is_number_integer())
        st.tokensOut = c->get<int64_t>();
}

std::string errorText(const nlohmann::json& j)
{
    auto e = j.find("error");
    if (e != j.end() && e->is_object()) {
        std::string type = stringField(*e, "type");
        std::string msg = stringField(*e, "message");
        return type.empty() ? msg : type + ": " + msg;
    }
    return j.dump();
}

} // namespace

std::string AnthropicClient::endpoint() const
{
    const std::string& b = m_config.baseUrl;
    return b.ends_with("/messages") ? b : b + "/messages";
}

std::vector<std::string> AnthropicClient::headers(bool stream) const
{
    std::vector<std::string> h { "Content-Type: application/json",
        "anthropic-version: " + m_config.anthropicVersion };
    h.push_back(stream ? "Accept: text/event-stream" : "Accept: application/json");
    if (!m_config.apiKey.empty())
        h.push_back("x-api-key: " + m_config.apiKey);
    return h;
}

nlohmann::json AnthropicClient::body(const core::LlmRequest& r) const
{
    nlohmann::json messages = nlohmann::json::array();
    for (const auto& m : r.messages)
        messages.push_back({ { "role", m.role }, { "content", m.content } });
    nlohmann::json b = { { "model", m_config.model }, { "max_tokens", r.maxTokens }, { "messages", messages },
        { "stream", r.stream } };
    if (!r.system.empty())
        b["system"] = r.system;
    if (r.temperature >= 0)
        b["temperature"] = r.temperature;
    return b;
}

std::string AnthropicClient::onEvent(const SseEvent& ev, AttemptState& st) const
{
    auto j = nlohmann::json::parse(ev.data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        if (st.error.empty())
            st.error = "a stream event is not a JSON object: " + excerpt(ev.data);
        return {};
    }
    const std::string type = stringField(j, "type", ev.event);
    if (type == "message_start") {
        if (auto m = j.find("message"); m != j.end() && m->is_object())
            if (auto u = m->find("usage"); u != m->end())
                readUsage(*u, st);
    } else if (type == "content_block_delta") {
        auto d = j.find("delta");
        if (d != j.end() && d->is_object() && stringField(*d, "type") == "text_delta") {
            std::string text = stringField(*d, "text");
            st.text += text;
            return text;
        }
    } else if (type == "message_delta") {
        if (auto d = j.find("delta"); d != j.end() && d->is_object())
            if (auto s = d->find("stop_reason"); s != d->end() && s->is_string())
                st.finishReason = s->get<std::string>();
        // message_delta's usage counts output tokens so far; input tokens came with message_start.
        if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
            if (auto c = u->find("output_tokens"); c != u->end() && c->is_number_integer())
                st.tokensOut = c->get<int64_t>();
            if (auto p = u->find("input_tokens"); p != u->end() && p->is_number_integer())
                st.tokensIn = p->get<int64_t>();
        }
    } else if (type == "message_stop") {
        st.complete = true;
    } else if (type == "error") {
        if (st.error.empty())
            st.error = "the stream carried an error: " + errorText(j);
    }
    return {};
}

void AnthropicClient::onWhole(const std::string& body, AttemptState& st) const
{
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        st.error = "the body is not a JSON object: " + excerpt(body);
        return;
    }
    if (stringField(j, "type") == "error") {
        st.error = "the reply is an error: " + errorText(j);
        return;
    }
    auto c = j.find("content");
    if (c == j.end() || !c->is_array()) {
        st.error = "the reply has no content";
        return;
    }
    for (const auto& part : *c)
        if (part.is_object() && stringField(part, "type") == "text")
            st.text += stringField(part, "text");
    if (auto s = j.find("stop_reason"); s != j.end() && s->is_string())
        st.finishReason = s->get<std::string>();
    if (auto u = j.find("usage"); u != j.end())
        readUsage(*u, st);
    st.complete = true;
}

} // namespace hone::llm
