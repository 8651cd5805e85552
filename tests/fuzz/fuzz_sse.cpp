// The LLM stream: the SSE parser (backends/llm/sse_parser.h) and the providers' event and
// whole-body decoders behind it. The first byte picks the provider ('o' OpenAI, 'a' Anthropic)
// and, by its low bits, where the stream is cut into network chunks; the rest is the body.
// Properties: the events do not depend on how the bytes were chunked; decoding never throws
// (an exception there would cross libcurl's C callback).
#include "backends/llm/chat_client.h"
#include "backends/llm/sse_parser.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

using namespace hone::llm;

namespace {

std::vector<SseEvent> parseAll(std::string_view body, size_t chunk)
{
    std::vector<SseEvent> events;
    SseParser p;
    auto sink = [&](const SseEvent& e) { events.push_back(e); };
    for (size_t at = 0; at < body.size(); at += chunk)
        p.feed(body.substr(at, chunk), sink);
    p.finish(sink);
    return events;
}

bool same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].event != b[i].event || a[i].data != b[i].data || a[i].id != b[i].id)
            return false;
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t mode = data[0];
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::vector<SseEvent> whole = parseAll(body, body.size() + 1);
    const std::vector<SseEvent> chunked = parseAll(body, 1 + (mode & 0x7));
    HONE_FUZZ_CHECK(same(whole, chunked), "events do not depend on chunking");

    ClientConfig config;
    config.protocol = (mode | 0x20) == 'a' ? Protocol::Anthropic : Protocol::OpenAi;
    config.baseUrl = "http://127.0.0.1:9/v1"; // never contacted
    config.model = "fuzz";
    config.jitterSeed = 1;
    auto client = makeClient(config);
    AttemptState st;
    for (const SseEvent& e : whole) {
        const size_t before = st.text.size();
        const std::string delta = client->decodeEvent(e, st);
        HONE_FUZZ_CHECK(st.text.size() == before + delta.size(), "a delta is what the text grew by");
    }
    AttemptState wholeState;
    client->decodeWhole(std::string(body), wholeState);
    return 0;
}
