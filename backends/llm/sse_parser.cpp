#include "backends/llm/sse_parser.h"

namespace hone::llm {

void SseParser::feed(std::string_view bytes, const Sink& sink)
{
    m_buffer.append(bytes);
    size_t start = 0;
    while (true) {
        size_t nl = m_buffer.find('\n', start);
        if (nl == std::string::npos)
            break;
        std::string_view l(m_buffer.data() + start, nl - start);
        if (!l.empty() && l.back() == '\r')
            l.remove_suffix(1);
        line(l, sink);
        start = nl + 1;
    }
    m_buffer.erase(0, start);
}

void SseParser::finish(const Sink& sink)
{
    if (!m_buffer.empty()) {
        std::string rest = std::move(m_buffer);
        m_buffer.clear();
        if (!rest.empty() && rest.back() == '\r')
            rest.pop_back();
        line(rest, sink);
    }
    dispatch(sink);
}

void SseParser::line(std::string_view l, const Sink& sink)
{
    if (l.empty()) {
        dispatch(sink);
        return;
    }
    if (l.front() == ':')
        return;
    size_t colon = l.find(':');
    std::string_view field = l.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ')
        value.remove_prefix(1);
    if (field == "data") {
        if (m_hasData)
            m_event.data += '\n';
        m_event.data.append(value);
        m_hasData = true;
    } else if (field == "event") {
        m_event.event = std::string(value);
    } else if (field == "id") {
        m_event.id = std::string(value);
    }
    // "retry" and unknown fields are ignored, as the spec says.
}

void SseParser::dispatch(const Sink& sink)
{
    if (m_hasData || !m_event.event.empty())
        sink(m_event);
    m_event = SseEvent {};
    m_hasData = false;
}

} // namespace hone::llm
