// Feature hashing for CDNA: ITEMS ids per thread (coalesced, BLOCK apart), fmix64 in 64-bit
// integer ops, and the remainder by the run-time bucket count without a 64-bit divide: CDNA has
// no integer divider, so h % d (d < 2^31) is done as two 32-bit-divisor steps on the high and
// low halves with a precomputed float reciprocal (FASTMOD = 1), or with the compiler's generic
// 64-bit remainder (FASTMOD = 0).
// hone:knob BLOCK = 256 | 512 | 1024  acts=launch_shape
// hone:knob ITEMS = 1 | 2 | 4 | 8  acts=memory_pipeline
// hone:knob FASTMOD = 0 | 1  acts=arithmetic
// hone:start BLOCK=256 ITEMS=4 FASTMOD=1
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef FASTMOD
#define FASTMOD 1
#endif

namespace {

typedef long long i64;

__device__ inline uint64_t fmix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/// r < d < 2^31 and x < 2^32: (r * 2^32 + x) mod d, exact, through a double quotient estimate
/// corrected by at most one step each way.
__device__ inline uint32_t modStep(uint32_t r, uint32_t x, uint32_t d, double inv)
{
    const uint64_t v = (static_cast<uint64_t>(r) << 32) | x;
    uint64_t q = static_cast<uint64_t>(static_cast<double>(v) * inv);
    int64_t rem = static_cast<int64_t>(v - q * d);
    while (rem < 0)
        rem += d;
    while (rem >= static_cast<int64_t>(d))
        rem -= d;
    return static_cast<uint32_t>(rem);
}

__global__ void __launch_bounds__(BLOCK) feature_hash_grid(const int64_t* __restrict__ ids, int64_t* __restrict__ out,
    i64 n, uint64_t salt, uint32_t buckets, double inv)
{
    const i64 base = static_cast<i64>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const i64 at = base + static_cast<i64>(i) * BLOCK;
        if (at >= n)
            break;
        const uint64_t h = fmix(static_cast<uint64_t>(ids[at]) ^ salt);
#if FASTMOD
        const uint32_t hi = modStep(0, static_cast<uint32_t>(h >> 32), buckets, inv);
        out[at] = modStep(hi, static_cast<uint32_t>(h), buckets, inv);
#else
        (void)inv;
        out[at] = static_cast<int64_t>(h % buckets);
#endif
    }
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 n = a->inputs[0].shape[0];
    if (n <= 0)
        return 0;
    const uint64_t salt = static_cast<uint64_t>(hone_param_or(a, "salt", 0.0));
    const double nb = hone_param_or(a, "num_buckets", 1.0);
    if (nb < 1 || nb >= 2147483648.0)
        return 1;
    const uint32_t buckets = static_cast<uint32_t>(nb);
    const i64 grid = (n + static_cast<i64>(BLOCK) * ITEMS - 1) / (static_cast<i64>(BLOCK) * ITEMS);
    feature_hash_grid<<<static_cast<unsigned>(grid), BLOCK, 0, static_cast<hipStream_t>(a->stream)>>>(
        static_cast<const int64_t*>(a->inputs[0].data), static_cast<int64_t*>(a->outputs[0].data), n, salt, buckets,
        1.0 / static_cast<double>(buckets));
    return static_cast<int>(hipGetLastError());
}
