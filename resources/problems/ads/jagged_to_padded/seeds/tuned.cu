// Jagged to padded, tunable. The output is B * MAXL rows of D floats; row r belongs to sequence
// b = r / MAXL at position l = r % MAXL and is a copy of values row offsets[b] + l when
// l < len_b, else padding. A group of TPR threads owns a row and walks its D / VEC vectors
// (float, float2 or float4) with stride TPR. Each group takes ROWS rows per step (rows
// grp, grp + BLOCK / TPR, ...), and for each column issues the ROWS loads before the stores, so
// that up to ROWS loads per thread are in flight. Padded rows are stores only; rows past MAXL of
// a long sequence are never read.
//   GRID  0: one block per BLOCK / TPR * ROWS rows; 1: a grid-stride loop over such tiles with
//         as many blocks as fit on the device at once.
//   STORE 0: plain stores; 1: streaming (evict-first) stores.
// VEC > 1 needs D % VEC == 0 and 4 * VEC-byte aligned base pointers, else VEC = 1 code runs.
//
// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access
// hone:knob TPR = 8 | 16 | 32  acts=launch_shape
// hone:knob BLOCK = 128 | 256 | 512  acts=launch_shape
// hone:knob ROWS = 1 | 2 | 4 | 8  acts=memory_pipeline
// hone:knob GRID = 0 | 1  acts=launch_shape
// hone:knob STORE = 0 | 1  acts=cache_policy
// Start at the fastest setting of the author's H100 sweep:
// hone:start VEC=4 TPR=32 BLOCK=256 ROWS=8
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef VEC
#define VEC 4
#endif
#ifndef TPR
#define TPR 32
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ROWS
#define ROWS 8
#endif
#ifndef GRID
#define GRID 0
#endif
#ifndef STORE
#define STORE 0
#endif

#if BLOCK % TPR != 0
#error "BLOCK must be a multiple of TPR"
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

// A float, float2 or float4 with every component p.
template <typename T> __device__ __forceinline__ T splat(float p)
{
    if constexpr (sizeof(T) == 16)
        return make_float4(p, p, p, p);
    else if constexpr (sizeof(T) == 8)
        return make_float2(p, p);
    else
        return p;
}

template <typename T> __device__ __forceinline__ void put(T* p, T v)
{
#if STORE == 1
    __stcs(p, v);
#else
    *p = v;
#endif
}

template <int V>
__global__ void BOUNDS jagged_to_padded_tuned(const float* __restrict__ values,
    const i64* __restrict__ offsets, float* __restrict__ out, i64 nrows, i64 maxl, int dv, float pad)
{
    typedef typename VecOf<V>::type vec_t;
    constexpr int GPB = BLOCK / TPR; // row groups per block
    const vec_t* src = reinterpret_cast<const vec_t*>(values);
    vec_t* dst = reinterpret_cast<vec_t*>(out);
    const vec_t padv = splat<vec_t>(pad);
    const int lane = threadIdx.x % TPR;
    const int grp = threadIdx.x / TPR;
    const i64 tile = static_cast<i64>(GPB) * ROWS;
#if GRID == 1
    const i64 step = static_cast<i64>(gridDim.x) * tile;
#else
    const i64 step = nrows + 1;
#endif
    for (i64 base = static_cast<i64>(blockIdx.x) * tile; base < nrows; base += step) {
        i64 in_row[ROWS];  // values row (vector units), or -1 for a padded or absent row
        i64 out_row[ROWS]; // output row (vector units), or -1 for a row past the end
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            const i64 r = base + i * GPB + grp;
            in_row[i] = -1;
            out_row[i] = -1;
            if (r < nrows) {
                const i64 b = r / maxl;
                const i64 l = r - b * maxl;
                const i64 start = __ldg(offsets + b);
                const i64 len = __ldg(offsets + b + 1) - start;
                out_row[i] = r * dv;
                if (l < len)
                    in_row[i] = (start + l) * dv;
            }
        }
        for (int c = lane; c < dv; c += TPR) {
            vec_t v[ROWS];
#pragma unroll
            for (int i = 0; i < ROWS; ++i)
                v[i] = in_row[i] >= 0 ? __ldcs(src + in_row[i] + c) : padv;
#pragma unroll
            for (int i = 0; i < ROWS; ++i)
                if (out_row[i] >= 0)
                    put(dst + out_row[i] + c, v[i]);
        }
    }
}

template <int V> int launch(const hone_args* a, i64 nrows, i64 maxl, int dv, float pad)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    const i64 tile = static_cast<i64>(BLOCK / TPR) * ROWS;
    i64 grid = (nrows + tile - 1) / tile;
#if GRID == 1
    // Blocks resident at once, asked once per instantiation: the queries would delay every launch.
    static const i64 resident = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, jagged_to_padded_tuned<V>, BLOCK, 0);
        return static_cast<i64>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    }();
    if (grid > resident)
        grid = resident;
#endif
    jagged_to_padded_tuned<V><<<static_cast<unsigned>(grid), BLOCK, 0, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const i64*>(a->inputs[1].data),
        static_cast<float*>(a->outputs[0].data), nrows, maxl, dv, pad);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& out = a->outputs[0];
    const i64 b = out.shape[0];
    const i64 maxl = out.shape[1];
    const i64 d = out.shape[2];
    const float pad = static_cast<float>(hone_param_or(a, "padding_value", -1.0));
    const i64 nrows = b * maxl;
    if (nrows <= 0 || d <= 0)
        return 0;
    if (d > 0x7fffffff)
        return 1;
    const uintptr_t align = reinterpret_cast<uintptr_t>(a->inputs[0].data)
        | reinterpret_cast<uintptr_t>(out.data);
    if constexpr (VEC >= 4) {
        if (d % 4 == 0 && align % 16 == 0)
            return launch<4>(a, nrows, maxl, static_cast<int>(d / 4), pad);
    }
    if constexpr (VEC >= 2) {
        if (d % 2 == 0 && align % 8 == 0)
            return launch<2>(a, nrows, maxl, static_cast<int>(d / 2), pad);
    }
    return launch<1>(a, nrows, maxl, static_cast<int>(d), pad);
}
