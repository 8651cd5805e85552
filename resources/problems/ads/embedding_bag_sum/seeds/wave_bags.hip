// Embedding bag (sum) for CDNA: a group of LANES lanes per bag, each lane owning VEC columns of
// the D-wide rows (VEC = 4: one 16-byte load per row and lane), UNROLL table rows gathered
// before any add so that UNROLL independent loads per lane are in flight (the HBM latency of a
// random 512-byte row is what the wave waits on). An empty bag writes zeros.
// hone:knob LANES = 16 | 32 | 64  acts=launch_shape
// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access
// hone:knob UNROLL = 1 | 2 | 4 | 8  acts=memory_pipeline
// hone:knob BLOCK = 128 | 256 | 512  acts=launch_shape
// The bench row (D = 128) is 32 lanes x float4: two bags per wavefront.
// hone:start LANES=32 VEC=4 UNROLL=4 BLOCK=256
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

#ifndef LANES
#define LANES 32
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef BLOCK
#define BLOCK 256
#endif

namespace {

typedef long long i64;

template <int V> struct alignas(4 * V) Pack {
    float f[V];
};

template <int V>
__global__ void __launch_bounds__(BLOCK) bag_sum(const float* __restrict__ table, const int64_t* __restrict__ indices,
    const int64_t* __restrict__ offsets, float* __restrict__ out, i64 bags, int d)
{
    const i64 bag = static_cast<i64>(blockIdx.x) * (BLOCK / LANES) + threadIdx.x / LANES;
    const int lane = threadIdx.x % LANES;
    if (bag >= bags)
        return;
    const i64 begin = offsets[bag];
    const i64 end = offsets[bag + 1];
    const int dv = d / V;
    for (int c = lane; c < dv; c += LANES) {
        float acc[V] = {};
        i64 k = begin;
        for (; k + UNROLL <= end; k += UNROLL) {
            Pack<V> p[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                p[u] = reinterpret_cast<const Pack<V>*>(table + indices[k + u] * d)[c];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                for (int q = 0; q < V; ++q)
                    acc[q] += p[u].f[q];
        }
        for (; k < end; ++k) {
            const Pack<V> p = reinterpret_cast<const Pack<V>*>(table + indices[k] * d)[c];
#pragma unroll
            for (int q = 0; q < V; ++q)
                acc[q] += p.f[q];
        }
        Pack<V> r;
#pragma unroll
        for (int q = 0; q < V; ++q)
            r.f[q] = acc[q];
        reinterpret_cast<Pack<V>*>(out + bag * d)[c] = r;
    }
}

template <int V> int launch(const hone_args* a, i64 bags, int d)
{
    constexpr int bagsPerBlock = BLOCK / LANES;
    const i64 grid = (bags + bagsPerBlock - 1) / bagsPerBlock;
    bag_sum<V><<<static_cast<unsigned>(grid), BLOCK, 0, static_cast<hipStream_t>(a->stream)>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const int64_t*>(a->inputs[1].data),
        static_cast<const int64_t*>(a->inputs[2].data), static_cast<float*>(a->outputs[0].data), bags, d);
    return static_cast<int>(hipGetLastError());
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 d = a->inputs[0].shape[1];
    const i64 bags = a->outputs[0].shape[0];
    if (bags <= 0 || d <= 0)
        return 0;
    if (d > 0x7fffffff || bags > (i64(1) << 40))
        return 1;
    const uintptr_t align = reinterpret_cast<uintptr_t>(a->inputs[0].data) | reinterpret_cast<uintptr_t>(a->outputs[0].data);
    if constexpr (VEC >= 4)
        if (d % 4 == 0 && align % 16 == 0)
            return launch<4>(a, bags, static_cast<int>(d));
    if constexpr (VEC >= 2)
        if (d % 2 == 0 && align % 8 == 0)
            return launch<2>(a, bags, static_cast<int>(d));
    return launch<1>(a, bags, static_cast<int>(d));
}
