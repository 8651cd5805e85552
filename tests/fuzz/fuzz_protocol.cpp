// The worker protocol as the engine reads it: one line from the worker through parseMessage,
// then a `result` through EvalResult::fromJson and requestId. Both may only throw ProtocolError.
#include "core/eval_result.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace hone::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    nlohmann::json msg;
    try {
        msg = protocol::parseMessage(line);
    } catch (const protocol::ProtocolError& e) {
        HONE_FUZZ_CHECK(e.what()[0] != '\0', "a ProtocolError says what is wrong");
        return 0;
    }
    HONE_FUZZ_CHECK(msg.is_object() && msg.at("type").is_string(), "an accepted message is typed");
    (void)protocol::requestId(msg);
    try {
        const protocol::EvalResult s = protocol::EvalResult::fromJson(msg);
        HONE_FUZZ_CHECK(s.ok() || s.failure.has_value(), "a failed result names a failure kind");
        if (s.ok())
            for (const auto& shape : s.shapeResults())
                HONE_FUZZ_CHECK(shape.medianNs() > 0, "an ok result times every shape");
        // What the store writes back must serialise, and decode to the same value.
        const nlohmann::json back = s.toJson();
        (void)back.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        HONE_FUZZ_CHECK(protocol::EvalResult::fromJson(back) == s, "a result round-trips");
    } catch (const protocol::ProtocolError& e) {
        HONE_FUZZ_CHECK(e.what()[0] != '\0', "a ProtocolError says what is wrong");
    }
    return 0;
}
