#include "core/sha256.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(HONE_SHA256_PORTABLE)
#include <cpuid.h>
#include <immintrin.h>
#define HONE_SHA256_SHANI 1
#endif

namespace hone::core {
namespace {

constexpr std::array<uint32_t, 64> kRound = {0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b,
    0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
    0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3,
    0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354,
    0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3,
    0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa,
    0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(std::array<uint32_t, 8>& h, const unsigned char* block)
{
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
        w[i] = (uint32_t(block[4 * i]) << 24) | (uint32_t(block[4 * i + 1]) << 16)
            | (uint32_t(block[4 * i + 2]) << 8) | uint32_t(block[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; ++i) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

#ifdef HONE_SHA256_SHANI
/// The x86 SHA extensions (Intel since Goldmont and Ice Lake, AMD since Zen): about ten times
/// the portable loop, which matters for the gigabytes of cached tensors the worker hashes.
/// The message schedule follows Intel's reference ("Intel SHA Extensions", 2013).
__attribute__((target("sha,sse4.1,ssse3"))) void compressShaNi(
    std::array<uint32_t, 8>& h, const unsigned char* data, size_t blocks)
{
    const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
    __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[0]));
    __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[4]));
    tmp = _mm_shuffle_epi32(tmp, 0xB1); // CDAB
    state1 = _mm_shuffle_epi32(state1, 0x1B); // EFGH
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8); // ABEF
    state1 = _mm_blend_epi16(state1, tmp, 0xF0); // CDGH
    for (; blocks > 0; --blocks, data += 64) {
        const __m128i abefSave = state0;
        const __m128i cdghSave = state1;
        __m128i m[4];
#pragma GCC unroll 16
        for (int g = 0; g < 16; ++g) {
            if (g < 4)
                m[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * g)), byteSwap);
            __m128i msg
                = _mm_add_epi32(m[g % 4], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRound.data() + 4 * g)));
            state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
            if (g >= 3 && g <= 14) {
                const __m128i t = _mm_alignr_epi8(m[g % 4], m[(g + 3) % 4], 4);
                m[(g + 1) % 4] = _mm_sha256msg2_epu32(_mm_add_epi32(m[(g + 1) % 4], t), m[g % 4]);
            }
            msg = _mm_shuffle_epi32(msg, 0x0E);
            state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
            if (g >= 1 && g <= 12)
                m[(g + 3) % 4] = _mm_sha256msg1_epu32(m[(g + 3) % 4], m[g % 4]);
        }
        state0 = _mm_add_epi32(state0, abefSave);
        state1 = _mm_add_epi32(state1, cdghSave);
    }
    tmp = _mm_shuffle_epi32(state0, 0x1B); // FEBA
    state1 = _mm_shuffle_epi32(state1, 0xB1); // DCHG
    state0 = _mm_blend_epi16(tmp, state1, 0xF0); // DCBA
    state1 = _mm_alignr_epi8(state1, tmp, 8); // ABEF
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[0]), state0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[4]), state1);
}

bool haveShaNi()
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return false;
    const bool sse41 = (c & bit_SSE4_1) != 0;
    const bool ssse3 = (c & bit_SSSE3) != 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    return sse41 && ssse3 && (b & (1u << 29)) != 0; // CPUID.7.0:EBX.SHA[bit 29]
}
#endif

/// `blocks` whole 64-byte blocks, on the SHA extensions where the CPU has them.
void compressBlocks(std::array<uint32_t, 8>& h, const unsigned char* data, size_t blocks)
{
#ifdef HONE_SHA256_SHANI
    static const bool shaNi = haveShaNi();
    if (shaNi) {
        compressShaNi(h, data, blocks);
        return;
    }
#endif
    for (; blocks > 0; --blocks, data += 64)
        compress(h, data);
}

} // namespace

void Sha256::update(const void* data, size_t bytes)
{
    const auto* p = static_cast<const unsigned char*>(data);
    m_bytes += bytes;
    if (m_fill > 0) {
        const size_t take = std::min(bytes, sizeof m_block - m_fill);
        std::memcpy(m_block + m_fill, p, take);
        m_fill += take;
        p += take;
        bytes -= take;
        if (m_fill < sizeof m_block)
            return;
        compressBlocks(m_h, m_block, 1);
        m_fill = 0;
    }
    compressBlocks(m_h, p, bytes / 64);
    p += bytes / 64 * 64;
    bytes %= 64;
    std::memcpy(m_block, p, bytes);
    m_fill = bytes;
}

std::string Sha256::hexDigest()
{
    unsigned char tail[128] = {};
    std::memcpy(tail, m_block, m_fill);
    tail[m_fill] = 0x80;
    const size_t tailLen = m_fill + 1 + 8 <= 64 ? 64 : 128;
    const uint64_t bits = m_bytes * 8;
    for (int i = 0; i < 8; ++i)
        tail[tailLen - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
    compressBlocks(m_h, tail, tailLen / 64);
    static const char* hex = "0123456789abcdef";
    std::string out(64, '0');
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j)
            out[8 * i + j] = hex[(m_h[i] >> (28 - 4 * j)) & 0xf];
    return out;
}

std::string sha256Hex(std::string_view data)
{
    Sha256 h;
    h.update(data);
    return h.hexDigest();
}

} // namespace hone::core
