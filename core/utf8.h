#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace hone::core {

/// `text` as valid UTF-8: each maximal ill-formed subsequence (a stray continuation byte, a
/// truncated or overlong sequence, a surrogate, a code point past U+10FFFF) becomes U+FFFD, as
/// the Unicode standard recommends. Text from compilers, candidates and models goes through
/// this before it reaches JSON or the store, where one bad byte would otherwise throw.
std::string validUtf8(std::string_view text);

/// Whether `text` is valid UTF-8 already.
bool isValidUtf8(std::string_view text);

/// The byte offset of the first ill-formed sequence in `text`, or std::string_view::npos.
size_t firstInvalidUtf8(std::string_view text);

/// `j.dump(indent)` that replaces invalid UTF-8 in strings with U+FFFD instead of throwing.
std::string dumpJson(const nlohmann::json& j, int indent = -1);

} // namespace hone::core
