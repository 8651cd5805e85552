#pragma once

// How Hone draws input values: shared by hone-worker (backends/worker/tensors.cpp) and the
// standalone test that `hone export` writes (resources/harness/test_candidate.cpp), so that the
// exported test checks the very inputs the search checked. Plain C++17, no dependencies.
//
// Element i of a tensor depends only on (stream key, i) (counter-based draws), so any chunk can
// be generated on its own thread and the values never depend on the split. Sequential choices
// (offsets, sorted draws) use xoshiro256** seeded through splitmix64.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace hone_draws {

inline uint64_t splitmix64(uint64_t& state)
{
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// FNV-1a over `n` bytes, continuing from `h`.
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xCBF29CE484222325ull)
{
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

inline uint64_t hashAt(uint64_t key, uint64_t i)
{
    uint64_t s = key ^ (i * 0x9E3779B97F4A7C15ull);
    return splitmix64(s);
}

/// [0, 1), 53 bits.
inline double uniformAt(uint64_t key, uint64_t i)
{
    return static_cast<double>(hashAt(key, i) >> 11) * 0x1.0p-53;
}

/// Standard normal: Box-Muller on two independent counter draws; u1 in (0, 1].
inline double normalAt(uint64_t key, uint64_t i)
{
    const double u1 = 1.0 - uniformAt(key, 2 * i);
    const double u2 = uniformAt(key, 2 * i + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

__extension__ typedef unsigned __int128 Wide;

/// [0, n): 128-bit multiply-shift, bias below 2^-64 * n, far under anything a check can see.
inline int64_t belowAt(uint64_t key, uint64_t i, int64_t n)
{
    if (n <= 1)
        return 0;
    const Wide wide = static_cast<Wide>(hashAt(key, i)) * static_cast<uint64_t>(n);
    return static_cast<int64_t>(wide >> 64);
}

/// xoshiro256** seeded through splitmix64.
struct Xoshiro256 {
    uint64_t s[4];

    explicit Xoshiro256(uint64_t seed)
    {
        for (auto& v : s)
            v = splitmix64(seed);
    }

    uint64_t next()
    {
        auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
        const uint64_t result = rotl(s[1] * 5, 7) * 9;
        const uint64_t t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
    }

    /// [0, n), unbiased (rejection).
    int64_t below(int64_t n)
    {
        if (n <= 1)
            return 0;
        const auto un = static_cast<uint64_t>(n);
        const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % un;
        uint64_t x = next();
        while (x >= limit)
            x = next();
        return static_cast<int64_t>(x % un);
    }
};

/// The stream key of input `index` of a shape (`label`, "small[0]") for `seed`: every tensor of
/// every shape draws from its own stream.
inline uint64_t streamKey(uint64_t seed, const char* label, size_t labelSize, size_t index)
{
    uint64_t mix = seed ^ fnv1a(label, labelSize) ^ (0xD1B54A32D192ED03ull * (index + 1));
    return splitmix64(mix);
}

/// The `offsets` init: `n` boundaries, sorted, first 0, last `total`; random cut points give
/// random segment lengths.
inline std::vector<int64_t> offsetCuts(uint64_t key, size_t n, int64_t total)
{
    Xoshiro256 rng(key);
    std::vector<int64_t> cuts(n, 0);
    if (n >= 2) {
        cuts[n - 1] = total;
        for (size_t i = 1; i + 1 < n; ++i)
            cuts[i] = rng.below(total + 1);
        std::sort(cuts.begin() + 1, cuts.end() - 1);
    }
    return cuts;
}

} // namespace hone_draws
