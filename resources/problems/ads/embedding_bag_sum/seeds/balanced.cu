// Embedding bag (sum), load-balanced over the indices rather than the bags. Bag lengths are
// skewed (exponential-like): with one group per bag the longest bags, hundreds of rows walked
// UNROLL at a time, finish long after the rest of the grid and set the kernel's time. Here every
// warp takes a fixed CHUNK of consecutive indices, whatever bags they belong to, so all warps do
// the same work:
//   - a warp finds the bag of its first index by a 32-way search in offsets (see bag_of);
//   - it walks its indices UNROLL rows at a time (one table row per warp and pass: lane l holds
//     columns [l * VEC, l * VEC + VEC) of the pass), adding each row into the running bag;
//   - a bag that lies wholly inside the chunk is stored; a bag cut by a chunk boundary is added
//     with atomicAdd (a float4 atomic on sm_90) into the output, which a memset cleared first.
// Empty bags are the memset's zeros. The sum order of cut bags varies from run to run by a few
// ulps, well inside the tolerance.
//   CHUNK  indices per warp.
//   UNROLL rows loaded before they are added (rows in flight per lane).
//   WPB    warps per block.
//   IDXS   1: the indices of a chunk are read 32 at a time, one per lane, and passed round with
//          __shfl_sync (float4 path only); 0: every lane reads each index (a broadcast load).
// VEC = 4 (float4) needs D % 4 == 0 and 16-byte aligned table and out, else a float path runs.
//
// hone:knob CHUNK = 32 | 64 | 128 | 256  acts=work_per_thread
// hone:knob UNROLL = 4 | 8 | 2  acts=memory_pipeline
// hone:knob WPB = 4 | 8 | 2  acts=launch_shape
// hone:knob IDXS = 1 | 0
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef CHUNK
#define CHUNK 32
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef WPB
#define WPB 4
#endif
#ifndef IDXS
#define IDXS 1
#endif

namespace {

typedef long long i64;
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ void vadd(float4& a, const float4& b)
{
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
}
__device__ __forceinline__ void vadd(float& a, const float& b) { a += b; }

__device__ __forceinline__ void atomic_add(float4* p, const float4& v)
{
#if __CUDA_ARCH__ >= 900
    atomicAdd(p, v);
#else
    atomicAdd(&p->x, v.x);
    atomicAdd(&p->y, v.y);
    atomicAdd(&p->z, v.z);
    atomicAdd(&p->w, v.w);
#endif
}
__device__ __forceinline__ void atomic_add(float* p, const float& v) { atomicAdd(p, v); }

// The bag that holds index k: the last b with offsets[b] <= k (offsets has nbags + 1 entries,
// offsets[0] = 0 <= k < offsets[nbags]). A 32-way search by the whole warp: each round every
// lane tests one of 32 evenly spaced entries and a ballot keeps the span between the last that
// is <= k and the next, so 16 K bags take 3 dependent loads instead of 14.
__device__ __forceinline__ i64 bag_of(const i64* __restrict__ offsets, i64 nbags, i64 k, int lane)
{
    i64 lo = 0;
    i64 hi = nbags; // offsets[lo] <= k < offsets[hi]
    while (hi - lo > 1) {
        const i64 step = (hi - lo + 31) / 32;
        const i64 p = lo + lane * step;
        const bool le = p < hi && __ldg(offsets + p) <= k; // a prefix of the lanes: offsets ascend
        const unsigned m = __ballot_sync(FULL, le);
        const i64 next = lo + static_cast<i64>(31 - __clz(m)) * step;
        hi = next + step < hi ? next + step : hi;
        lo = next;
    }
    return lo;
}

// A finished bag: stored when the chunk holds all of it, else added to what other chunks add.
template <typename T>
__device__ __forceinline__ void store_bag(T* dst, i64 bag, int dv, int c, bool active, bool whole, const T& acc)
{
    if (!active)
        return;
    if (whole)
        dst[bag * dv + c] = acc;
    else
        atomic_add(dst + bag * dv + c, acc);
}

template <typename T>
__global__ void __launch_bounds__(32 * WPB) embedding_bag_sum_balanced(const float* __restrict__ table,
    const i64* __restrict__ indices, const i64* __restrict__ offsets, float* __restrict__ out, i64 nbags, i64 nidx,
    int dv)
{
    const T* tab = reinterpret_cast<const T*>(table);
    T* dst = reinterpret_cast<T*>(out);
    // Only the float4 path passes indices round by shuffles: in the scalar path (D % 4 != 0,
    // small odd widths) ptxas spilled the loop state with them (sm_90a, nvcc 13.0).
    constexpr bool shuffle = IDXS && sizeof(T) == sizeof(float4);
    const int lane = threadIdx.x & 31;
    const i64 k0 = (static_cast<i64>(blockIdx.x) * WPB + threadIdx.x / 32) * CHUNK;
    if (k0 >= nidx)
        return;
    const i64 k1 = k0 + CHUNK < nidx ? k0 + CHUNK : nidx;
    const i64 first = bag_of(offsets, nbags, k0, lane);
    for (int c0 = 0; c0 < dv; c0 += 32) {
        const int c = c0 + lane;
        const bool active = c < dv;
        i64 bag = first;
        i64 bagBeg = __ldg(offsets + bag);
        i64 bagEnd = __ldg(offsets + bag + 1);
        T acc {};
        for (i64 kb = k0; kb < k1; kb += 32) {
            const int cnt = k1 - kb < 32 ? static_cast<int>(k1 - kb) : 32;
            i64 mine = 0;
            if constexpr (shuffle)
                mine = lane < cnt ? __ldg(indices + kb + lane) : 0;
            for (int t = 0; t < cnt; t += UNROLL) {
                T v[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    i64 r;
                    if constexpr (shuffle)
                        r = __shfl_sync(FULL, mine, (t + u) & 31);
                    else
                        r = t + u < cnt ? __ldg(indices + kb + t + u) : 0;
                    v[u] = active && t + u < cnt ? __ldg(tab + r * dv + c) : T {};
                }
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    if (t + u < cnt) {
                        while (kb + t + u >= bagEnd) { // the same for the whole warp
                            store_bag(dst, bag, dv, c, active, bagBeg >= k0 && bagEnd <= k1, acc);
                            acc = T {};
                            ++bag;
                            bagBeg = bagEnd;
                            bagEnd = __ldg(offsets + bag + 1);
                        }
                        vadd(acc, v[u]);
                    }
                }
            }
        }
        // The last bag the chunk touched (cut at k1, or ending exactly there).
        store_bag(dst, bag, dv, c, active, bagBeg >= k0 && bagEnd <= k1, acc);
    }
}

template <typename T> int launch(const hone_args* a, i64 nbags, i64 nidx, int dv)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    const i64 warps = (nidx + CHUNK - 1) / CHUNK;
    const i64 blocks = (warps + WPB - 1) / WPB;
    embedding_bag_sum_balanced<T><<<static_cast<unsigned>(blocks), 32 * WPB, 0, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const i64*>(a->inputs[1].data),
        static_cast<const i64*>(a->inputs[2].data), static_cast<float*>(a->outputs[0].data), nbags, nidx, dv);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& out = a->outputs[0];
    const i64 nbags = out.shape[0];
    const i64 d = out.shape[1];
    const i64 nidx = a->inputs[1].shape[0];
    if (nbags <= 0 || d <= 0)
        return 0;
    if (d > 0x7fffffff)
        return 1;
    cudaError_t err = cudaMemsetAsync(out.data, 0, static_cast<size_t>(nbags * d) * sizeof(float),
        (cudaStream_t)a->stream);
    if (err != cudaSuccess)
        return (int)err;
    if (nidx <= 0)
        return 0;
    const uintptr_t align = reinterpret_cast<uintptr_t>(a->inputs[0].data) | reinterpret_cast<uintptr_t>(out.data);
    if (d % 4 == 0 && align % 16 == 0)
        return launch<float4>(a, nbags, nidx, static_cast<int>(d / 4));
    return launch<float>(a, nbags, nidx, static_cast<int>(d));
}
