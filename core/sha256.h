#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hone::core {

/// Lower-case hex SHA-256 of `data` (FIPS 180-4). Used to content-address sources, compiled
/// objects and results.
std::string sha256Hex(std::string_view data);

/// The same hash over data that arrives in pieces (files, tensors): `update` as often as
/// needed, then `hexDigest` once.
class Sha256 {
public:
    void update(const void* data, size_t bytes);
    void update(std::string_view data) { update(data.data(), data.size()); }
    /// Lower-case hex; the object is spent afterwards.
    std::string hexDigest();

private:
    std::array<uint32_t, 8> m_h = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c,
        0x1f83d9ab, 0x5be0cd19 };
    unsigned char m_block[64] = {};
    size_t m_fill = 0;
    uint64_t m_bytes = 0;
};

} // namespace hone::core
