#pragma once

#include <string>
#include <string_view>

namespace hone::core {

/// Lower-case hex SHA-256 of `data` (FIPS 180-4). Used to content-address sources, compiled
/// objects and results.
std::string sha256Hex(std::string_view data);

} // namespace hone::core
