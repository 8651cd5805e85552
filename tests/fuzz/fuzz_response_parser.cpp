// The LLM reply parser: the first byte picks the target language ('c' cpp, 'u' cuda, 'h' hip;
// 'T' a reply cut off at the token limit), the rest is the model's reply. Properties: an
// accepted kernel is within the size limit, defines hone_run and breaks no rule; a rejected
// reply says why.
#include "core/response_parser.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace hone::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    const char mode = static_cast<char>(data[0]);
    const std::string_view reply(reinterpret_cast<const char*>(data + 1), size - 1);
    ReplyRules rules;
    rules.lang = mode == 'u' ? "cuda" : mode == 'h' ? "hip" : "cpp";
    rules.allowedLibraries = { "cublas" };
    rules.maxSourceBytes = 4096; // small, so the fuzzer reaches the limit
    const bool truncated = mode == 'T';
    ParsedReply r = parseReply(reply, truncated, truncated ? "length" : "stop", rules);
    if (r.ok) {
        HONE_FUZZ_CHECK(!truncated, "a cut-off reply is never accepted");
        HONE_FUZZ_CHECK(r.reason.empty(), "an accepted reply has no reason");
        HONE_FUZZ_CHECK(r.source.size() <= rules.maxSourceBytes, "an accepted kernel is within the limit");
        HONE_FUZZ_CHECK(r.source.find("hone_run") != std::string::npos, "an accepted kernel names hone_run");
        HONE_FUZZ_CHECK(forbiddenConstructs(r.source, rules).empty(), "an accepted kernel breaks no rule");
    } else {
        HONE_FUZZ_CHECK(!r.reason.empty(), "a rejected reply says why");
        HONE_FUZZ_CHECK(r.source.empty(), "a rejected reply yields no source");
    }
    return 0;
}
