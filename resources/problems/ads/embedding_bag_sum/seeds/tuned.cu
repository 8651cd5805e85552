// Embedding bag (sum), tunable. A group of LANES consecutive threads owns one bag and builds its
// output row, each lane holding one VEC-wide column vector (float, float2 or float4) per pass
// over the bag; D / VEC > LANES takes several passes. UNROLL table rows are loaded before they
// are added, into UNROLL independent accumulators, so that UNROLL row reads per lane are in
// flight (a group reads LANES * VEC * 4 contiguous bytes of each row).
//   IDX   0: every lane loads each index itself (one address per group: a broadcast);
//         1: the group loads LANES indices at once, one per lane, and passes them round with
//         __shfl_sync (masked to the group, so groups of one warp may diverge).
//   GRID  0: one group per bag, one block per BLOCK / LANES bags; 1: as many blocks as fit on the
//         device at once, grid-stride over bags.
// VEC > 1 needs D % VEC == 0 and 4 * VEC-byte aligned table and out, else VEC = 1 code runs.
//
// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access
// hone:knob LANES = 8 | 16 | 32  acts=launch_shape
// hone:knob BLOCK = 128 | 256 | 512  acts=launch_shape
// hone:knob UNROLL = 1 | 2 | 4 | 8  acts=memory_pipeline
// hone:knob IDX = 0 | 1
// hone:knob GRID = 0 | 1  acts=launch_shape
// Start at the fastest setting of the author's H100 sweep:
// hone:start VEC=4 LANES=32 UNROLL=4 IDX=1
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef VEC
#define VEC 4
#endif
#ifndef LANES
#define LANES 32
#endif
#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef IDX
#define IDX 1
#endif
#ifndef GRID
#define GRID 0
#endif

#if UNROLL > LANES
#error "UNROLL must not exceed LANES"
#endif

// Blocks of up to 256 threads get no register cap (ptxas picks one); larger ones are capped so
// that one block always fits on a multiprocessor.
#if BLOCK > 256
#define BOUNDS __launch_bounds__(BLOCK, 1)
#else
#define BOUNDS
#endif

namespace {

typedef long long i64;

template <int V> struct VecOf;
template <> struct VecOf<1> {
    typedef float type;
};
template <> struct VecOf<2> {
    typedef float2 type;
};
template <> struct VecOf<4> {
    typedef float4 type;
};

template <typename T> __device__ __forceinline__ T vzero() { return T {}; }

// a += b for float, float2 or float4.
template <typename T> __device__ __forceinline__ void vadd(T& a, const T& b)
{
    if constexpr (sizeof(T) == 16) {
        a.x += b.x;
        a.y += b.y;
        a.z += b.z;
        a.w += b.w;
    } else if constexpr (sizeof(T) == 8) {
        a.x += b.x;
        a.y += b.y;
    } else {
        a += b;
    }
}

template <int V>
__global__ void BOUNDS embedding_bag_sum_tuned(const float* __restrict__ table,
    const i64* __restrict__ indices, const i64* __restrict__ offsets, float* __restrict__ out,
    i64 nbags, int dv)
{
    typedef typename VecOf<V>::type vec_t;
    constexpr int GPB = BLOCK / LANES; // bags per block step
    const vec_t* tab = reinterpret_cast<const vec_t*>(table);
    vec_t* dst = reinterpret_cast<vec_t*>(out);
    const int lane = threadIdx.x % LANES;
    const int grp = threadIdx.x / LANES;
#if IDX == 1
    const unsigned gmask = LANES == 32 ? 0xffffffffu
                                       : (((1u << LANES) - 1u) << ((threadIdx.x % 32) & ~(LANES - 1)));
#endif
#if GRID == 1
    const i64 step = static_cast<i64>(gridDim.x) * GPB;
#else
    const i64 step = nbags + 1;
#endif
    for (i64 bag = static_cast<i64>(blockIdx.x) * GPB + grp; bag < nbags; bag += step) {
        const i64 beg = __ldg(offsets + bag);
        const i64 end = __ldg(offsets + bag + 1);
        for (int c0 = 0; c0 < dv; c0 += LANES) {
            const int c = c0 + lane;
            const bool active = c < dv;
            vec_t acc[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                acc[u] = vzero<vec_t>();
#if IDX == 1
            for (i64 kb = beg; kb < end; kb += LANES) {
                const i64 mine = kb + lane < end ? __ldg(indices + kb + lane) : 0;
                const int cnt = end - kb < LANES ? static_cast<int>(end - kb) : LANES;
                int t = 0;
                for (; t + UNROLL <= cnt; t += UNROLL) {
                    i64 r[UNROLL];
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
                        r[u] = __shfl_sync(gmask, mine, t + u, LANES);
                    if (active) {
                        vec_t v[UNROLL];
#pragma unroll
                        for (int u = 0; u < UNROLL; ++u)
                            v[u] = __ldg(tab + r[u] * dv + c);
#pragma unroll
                        for (int u = 0; u < UNROLL; ++u)
                            vadd(acc[u], v[u]);
                    }
                }
                for (; t < cnt; ++t) {
                    const i64 r = __shfl_sync(gmask, mine, t, LANES);
                    if (active)
                        vadd(acc[0], __ldg(tab + r * dv + c));
                }
            }
#else
            i64 k = beg;
            for (; k + UNROLL <= end; k += UNROLL) {
                i64 r[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    r[u] = __ldg(indices + k + u);
                if (active) {
                    vec_t v[UNROLL];
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
                        v[u] = __ldg(tab + r[u] * dv + c);
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
                        vadd(acc[u], v[u]);
                }
            }
            for (; k < end; ++k) {
                const i64 r = __ldg(indices + k);
                if (active)
                    vadd(acc[0], __ldg(tab + r * dv + c));
            }
#endif
#pragma unroll
            for (int u = 1; u < UNROLL; ++u)
                vadd(acc[0], acc[u]);
            if (active)
                dst[bag * dv + c] = acc[0];
        }
    }
}

template <int V> int launch(const hone_args* a, i64 nbags, int dv)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    constexpr int GPB = BLOCK / LANES;
    i64 grid = (nbags + GPB - 1) / GPB;
#if GRID == 1
    // Blocks resident at once, asked once per instantiation: the queries would delay every launch.
    static const i64 resident = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, embedding_bag_sum_tuned<V>, BLOCK, 0);
        return static_cast<i64>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    }();
    if (grid > resident)
        grid = resident;
#endif
    embedding_bag_sum_tuned<V><<<static_cast<unsigned>(grid), BLOCK, 0, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const i64*>(a->inputs[1].data),
        static_cast<const i64*>(a->inputs[2].data), static_cast<float*>(a->outputs[0].data), nbags,
        dv);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& out = a->outputs[0];
    const i64 nbags = out.shape[0];
    const i64 d = out.shape[1];
    if (nbags <= 0 || d <= 0)
        return 0;
    if (d > 0x7fffffff)
        return 1;
    const uintptr_t align = reinterpret_cast<uintptr_t>(a->inputs[0].data)
        | reinterpret_cast<uintptr_t>(out.data);
    if constexpr (VEC >= 4) {
        if (d % 4 == 0 && align % 16 == 0)
            return launch<4>(a, nbags, static_cast<int>(d / 4));
    }
    if constexpr (VEC >= 2) {
        if (d % 2 == 0 && align % 8 == 0)
            return launch<2>(a, nbags, static_cast<int>(d / 2));
    }
    return launch<1>(a, nbags, static_cast<int>(d));
}
