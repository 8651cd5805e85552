// Jagged to padded for CDNA: one group of LANES lanes per output row (b, l), ROWS rows per group
// walked in a grid-stride loop, VEC floats per lane per access (VEC = 4: 16-byte
// global_load_dwordx4 / global_store_dwordx4 when D % 4 == 0 and the pointers are 16-byte
// aligned, else scalar). Padding rows are stores only; rows past MAXL are never read.
// hone:knob LANES = 16 | 32 | 64  acts=launch_shape
// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access
// hone:knob BLOCK = 128 | 256 | 512  acts=launch_shape
// hone:knob ROWS = 1 | 2 | 4  acts=memory_pipeline
// The bench row (D = 128 floats) is 32 lanes x float4: two rows per wavefront.
// hone:start LANES=32 VEC=4 BLOCK=256 ROWS=2
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

#ifndef LANES
#define LANES 32
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ROWS
#define ROWS 2
#endif

namespace {

typedef long long i64;

template <int V> struct alignas(4 * V) Pack {
    float f[V];
};

template <int V>
__global__ void __launch_bounds__(BLOCK) jagged_rows(const float* __restrict__ values, const int64_t* __restrict__ offsets,
    float* __restrict__ out, i64 b, i64 maxl, int d, float pad)
{
    const i64 groups = static_cast<i64>(gridDim.x) * (BLOCK / LANES);
    const i64 group = static_cast<i64>(blockIdx.x) * (BLOCK / LANES) + threadIdx.x / LANES;
    const int lane = threadIdx.x % LANES;
    const int dv = d / V;
    for (i64 r = group; r < b * maxl; r += groups) {
        const i64 bag = r / maxl;
        const i64 l = r - bag * maxl;
        const i64 start = offsets[bag];
        const i64 len = offsets[bag + 1] - start;
        Pack<V>* dst = reinterpret_cast<Pack<V>*>(out + r * d);
        if (l < len) {
            const Pack<V>* src = reinterpret_cast<const Pack<V>*>(values + (start + l) * d);
            for (int c = lane; c < dv; c += LANES)
                dst[c] = src[c];
        } else {
            Pack<V> p;
#pragma unroll
            for (int q = 0; q < V; ++q)
                p.f[q] = pad;
            for (int c = lane; c < dv; c += LANES)
                dst[c] = p;
        }
    }
}

template <int V> int launch(const hone_args* a, i64 b, i64 maxl, int d, float pad)
{
    const i64 rows = b * maxl;
    const i64 perBlock = static_cast<i64>(BLOCK / LANES) * ROWS;
    i64 grid = (rows + perBlock - 1) / perBlock;
    if (grid > 1 << 20)
        grid = 1 << 20; // the grid-stride loop takes the rest
    jagged_rows<V><<<static_cast<unsigned>(grid > 0 ? grid : 1), BLOCK, 0, static_cast<hipStream_t>(a->stream)>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const int64_t*>(a->inputs[1].data),
        static_cast<float*>(a->outputs[0].data), b, maxl, d, pad);
    return static_cast<int>(hipGetLastError());
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 d = a->inputs[0].shape[1];
    const i64 b = a->outputs[0].shape[0];
    const i64 maxl = a->outputs[0].shape[1];
    if (b <= 0 || maxl <= 0 || d <= 0)
        return 0;
    if (d > 0x7fffffff)
        return 1;
    const float pad = static_cast<float>(hone_param_or(a, "padding_value", -1.0));
    const uintptr_t align = reinterpret_cast<uintptr_t>(a->inputs[0].data) | reinterpret_cast<uintptr_t>(a->outputs[0].data);
    if constexpr (VEC >= 4)
        if (d % 4 == 0 && align % 16 == 0)
            return launch<4>(a, b, maxl, static_cast<int>(d), pad);
    if constexpr (VEC >= 2)
        if (d % 2 == 0 && align % 8 == 0)
            return launch<2>(a, b, maxl, static_cast<int>(d), pad);
    return launch<1>(a, b, maxl, static_cast<int>(d), pad);
}
