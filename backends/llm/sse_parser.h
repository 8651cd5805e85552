#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace hone::llm {

/// One server-sent event (the `text/event-stream` format of the WHATWG HTML spec).
struct SseEvent {
    std::string event; // empty when the stream names none ("message")
    std::string data; // data lines joined with '\n'
    std::string id;
};

/// Incremental SSE parser: bytes go in as they arrive, whole events come out. Lines may end
/// in \n or \r\n and may be split anywhere across chunks; comment lines (":") are skipped.
class SseParser {
public:
    using Sink = std::function<void(const SseEvent&)>;

    void feed(std::string_view bytes, const Sink& sink);

    /// End of stream: an event whose closing blank line never came is still delivered
    /// (servers that close right after the last data line are common).
    void finish(const Sink& sink);

    /// Bytes that were not a whole line yet.
    const std::string& pending() const { return m_buffer; }

private:
    void line(std::string_view line, const Sink& sink);
    void dispatch(const Sink& sink);

    std::string m_buffer;
    SseEvent m_event;
    bool m_hasData = false;
};

} // namespace hone::llm
