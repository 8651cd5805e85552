#pragma once

#include <string>

namespace hone::llm {

/// `text` with every trace of `secret` replaced by "[redacted]": the whole secret and any piece
/// of it of 8 characters or more (servers echo keys partly masked, e.g. "sk-abc...wxyz" in a
/// 401 body). Applied to everything that leaves the client: errors, replies, logs.
std::string redact(const std::string& text, const std::string& secret);

} // namespace hone::llm
