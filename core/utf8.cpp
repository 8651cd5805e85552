#include "core/utf8.h"

namespace hone::core {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

/// The length of the well-formed sequence at `i`, or 0 when it is ill-formed; `bad` is then
/// the length of its maximal ill-formed subpart (at least 1).
size_t sequenceAt(std::string_view s, size_t i, size_t& bad)
{
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b = byte(i);
    bad = 1;
    if (b < 0x80)
        return 1;
    size_t need = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF; // the range of the second byte (Unicode Table 3-7)
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    for (size_t k = 1; k <= need; ++k) {
        if (i + k >= s.size())
            return 0;
        const unsigned char c = byte(i + k);
        const bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
        if (!ok)
            return 0;
        bad = k + 1;
    }
    return need + 1;
}

} // namespace

size_t firstInvalidUtf8(std::string_view text)
{
    size_t bad = 0;
    for (size_t i = 0; i < text.size();) {
        const size_t n = sequenceAt(text, i, bad);
        if (n == 0)
            return i;
        i += n;
    }
    return std::string_view::npos;
}

bool isValidUtf8(std::string_view text)
{
    return firstInvalidUtf8(text) == std::string_view::npos;
}

std::string validUtf8(std::string_view text)
{
    if (isValidUtf8(text))
        return std::string(text);
    std::string out;
    out.reserve(text.size() + 16);
    size_t bad = 0;
    for (size_t i = 0; i < text.size();) {
        const size_t n = sequenceAt(text, i, bad);
        if (n == 0) {
            out += kReplacement;
            i += bad;
        } else {
            out.append(text.substr(i, n));
            i += n;
        }
    }
    return out;
}

std::string dumpJson(const nlohmann::json& j, int indent)
{
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace hone::core
