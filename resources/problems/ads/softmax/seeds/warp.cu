// Softmax, tunable, rows per sub-warp. A group of LANES lanes (8, 16 or the whole warp) owns a
// row; a warp takes 32 / LANES * ROWS rows per step (ROWS rows per group, their loads all issued
// before any reduction, so that more bytes are in flight). Loads are VEC-wide (float, float2,
// float4); exponentials use __expf (ex2.approx; relative error ~1e-6 here).
//   Register path (N / VEC <= MAXV * LANES): the row is read once into MAXV vectors per lane,
//   the max and the sum of exponentials are reduced across the group with __shfl_xor_sync, and
//   the normalised values are written from registers: one read, one write.
//   Streaming path (longer rows, one row of the ROWS at a time): an online pass keeps a running
//   max and a rescaled running sum per lane, the group merges them, and a second pass re-reads x
//   and writes y.
//   GRID  0: one step per warp, one block per BLOCK / LANES * ROWS rows; 1: as many blocks as fit
//         on the device at once, each warp walking rows in a grid-stride loop.
// x is read through the read-only path (__ldg); y is written with plain stores. The row loop is
// uniform across the warp (whole-warp shuffles).
// VEC > 1 needs N % VEC == 0 and 4 * VEC-byte aligned pointers, else VEC = 1 code runs.
//
// hone:knob LANES = 8 | 16 | 32  acts=launch_shape
// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access
// hone:knob MAXV = 1 | 2 | 4 | 8  acts=work_per_thread
// hone:knob BLOCK = 128 | 256 | 512  acts=launch_shape
// hone:knob ROWS = 1 | 2 | 4  acts=memory_pipeline
// hone:knob GRID = 0 | 1  acts=launch_shape
// hone:require VEC * MAXV * ROWS <= 16
// Start at the fastest setting of the author's H100 sweep:
// hone:start LANES=32 VEC=2 MAXV=4 ROWS=2
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef LANES
#define LANES 32
#endif
#ifndef VEC
#define VEC 2
#endif
#ifndef MAXV
#define MAXV 4
#endif
#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef ROWS
#define ROWS 2
#endif
#ifndef GRID
#define GRID 0
#endif

#if BLOCK > 256
#define BOUNDS __launch_bounds__(BLOCK, 1)
#else
#define BOUNDS
#endif

namespace {

typedef long long i64;

template <int V> struct Vec {
    float f[V];
};

template <int V> __device__ __forceinline__ Vec<V> load(const float* p)
{
    Vec<V> r;
    if constexpr (V == 4) {
        const float4 t = __ldg(reinterpret_cast<const float4*>(p));
        r.f[0] = t.x;
        r.f[1] = t.y;
        r.f[2] = t.z;
        r.f[3] = t.w;
    } else if constexpr (V == 2) {
        const float2 t = __ldg(reinterpret_cast<const float2*>(p));
        r.f[0] = t.x;
        r.f[1] = t.y;
    } else {
        r.f[0] = __ldg(p);
    }
    return r;
}

template <int V> __device__ __forceinline__ void store(float* p, const Vec<V>& v)
{
    if constexpr (V == 4)
        *reinterpret_cast<float4*>(p) = make_float4(v.f[0], v.f[1], v.f[2], v.f[3]);
    else if constexpr (V == 2)
        *reinterpret_cast<float2*>(p) = make_float2(v.f[0], v.f[1]);
    else
        *p = v.f[0];
}

// Reductions over the LANES lanes of a group, R independent values at once (interleaved
// shuffles); every lane of the warp takes part.
template <int R> __device__ __forceinline__ void group_max(float* v)
{
#pragma unroll
    for (int o = LANES / 2; o > 0; o >>= 1) {
#pragma unroll
        for (int r = 0; r < R; ++r)
            v[r] = fmaxf(v[r], __shfl_xor_sync(0xffffffffu, v[r], o));
    }
}

template <int R> __device__ __forceinline__ void group_sum(float* v)
{
#pragma unroll
    for (int o = LANES / 2; o > 0; o >>= 1) {
#pragma unroll
        for (int r = 0; r < R; ++r)
            v[r] += __shfl_xor_sync(0xffffffffu, v[r], o);
    }
}

template <int V>
__global__ void BOUNDS softmax_warp(const float* __restrict__ x, float* __restrict__ y, i64 m, int n)
{
    constexpr int GPW = 32 / LANES; // groups per warp
    constexpr int RPW = GPW * ROWS; // rows per warp per step
    const int lane = threadIdx.x % LANES;
    const int grp = (threadIdx.x % 32) / LANES;
    const i64 warp = (static_cast<i64>(blockIdx.x) * BLOCK + threadIdx.x) / 32;
    const int nv = n / V; // vectors per row
    const bool in_regs = nv <= MAXV * LANES;

    // Row r of a step is base + r * GPW + grp. The loop is uniform across the warp.
#if GRID == 1
    const i64 step = static_cast<i64>(gridDim.x) * (BLOCK / 32) * RPW;
#else
    const i64 step = m + 1; // one step
#endif
    for (i64 base = warp * RPW; base < m; base += step) {
        if (in_regs) {
            Vec<V> v[ROWS][MAXV];
            float mx[ROWS];
            float s[ROWS];
            bool valid[ROWS];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const i64 row = base + r * GPW + grp;
                valid[r] = row < m;
                mx[r] = -INFINITY;
                const float* xr = x + (valid[r] ? row : 0) * n;
#pragma unroll
                for (int j = 0; j < MAXV; ++j) {
                    const int c = j * LANES + lane;
                    if (valid[r] && c < nv)
                        v[r][j] = load<V>(xr + c * V);
                }
            }
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
#pragma unroll
                for (int j = 0; j < MAXV; ++j) {
                    if (valid[r] && j * LANES + lane < nv) {
#pragma unroll
                        for (int q = 0; q < V; ++q)
                            mx[r] = fmaxf(mx[r], v[r][j].f[q]);
                    }
                }
            }
            group_max<ROWS>(mx);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (!valid[r])
                    mx[r] = 0.0f; // keep an empty group's arithmetic finite
                s[r] = 0.0f;
#pragma unroll
                for (int j = 0; j < MAXV; ++j) {
                    if (valid[r] && j * LANES + lane < nv) {
#pragma unroll
                        for (int q = 0; q < V; ++q) {
                            v[r][j].f[q] = __expf(v[r][j].f[q] - mx[r]);
                            s[r] += v[r][j].f[q];
                        }
                    }
                }
            }
            group_sum<ROWS>(s);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const float inv = 1.0f / s[r];
                float* yr = y + (base + r * GPW + grp) * n;
#pragma unroll
                for (int j = 0; j < MAXV; ++j) {
                    const int c = j * LANES + lane;
                    if (valid[r] && c < nv) {
#pragma unroll
                        for (int q = 0; q < V; ++q)
                            v[r][j].f[q] *= inv;
                        store<V>(yr + c * V, v[r][j]);
                    }
                }
            }
        } else {
            for (int r = 0; r < ROWS; ++r) {
                const i64 row = base + r * GPW + grp;
                const bool valid = row < m;
                const float* xr = x + (valid ? row : 0) * n;
                float* yr = y + row * n;
                // Online pass: running max mx and sum s of exp(x - mx) per lane.
                float mx[1] = { -INFINITY };
                float s[1] = { 0.0f };
                if (valid) {
                    for (int c = lane; c < nv; c += LANES) {
                        const Vec<V> v = load<V>(xr + c * V);
#pragma unroll
                        for (int q = 0; q < V; ++q) {
                            const float t = v.f[q];
                            if (t > mx[0]) {
                                s[0] = s[0] * __expf(mx[0] - t) + 1.0f;
                                mx[0] = t;
                            } else {
                                s[0] += __expf(t - mx[0]);
                            }
                        }
                    }
                }
                float gmx[1] = { mx[0] };
                group_max<1>(gmx);
                const float safe = valid ? gmx[0] : 0.0f;
                s[0] = s[0] > 0.0f ? s[0] * __expf(mx[0] - safe) : 0.0f;
                group_sum<1>(s);
                const float inv = 1.0f / s[0];
                if (valid) {
                    for (int c = lane; c < nv; c += LANES) {
                        Vec<V> v = load<V>(xr + c * V);
#pragma unroll
                        for (int q = 0; q < V; ++q)
                            v.f[q] = __expf(v.f[q] - safe) * inv;
                        store<V>(yr + c * V, v);
                    }
                }
            }
        }
    }
}

template <int V> int launch(const hone_args* a, i64 m, int n)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    constexpr int rows_per_block = (BLOCK / 32) * (32 / LANES) * ROWS;
    i64 grid = (m + rows_per_block - 1) / rows_per_block;
#if GRID == 1
    // Blocks resident at once, asked once per instantiation: the queries would delay every launch.
    static const i64 resident = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, softmax_warp<V>, BLOCK, 0);
        return static_cast<i64>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    }();
    if (grid > resident)
        grid = resident;
#else
    if (grid > 0x7fffffff)
        return 1;
#endif
    softmax_warp<V><<<static_cast<unsigned>(grid), BLOCK, 0, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), m, n);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 m = a->inputs[0].shape[0];
    const i64 n = a->inputs[0].shape[1];
    if (m <= 0 || n <= 0)
        return 0;
    if (n > 0x7fffffff / 4)
        return 1;
    const uintptr_t align = reinterpret_cast<uintptr_t>(a->inputs[0].data)
        | reinterpret_cast<uintptr_t>(a->outputs[0].data);
    if constexpr (VEC >= 4) {
        if (n % 4 == 0 && align % 16 == 0)
            return launch<4>(a, m, static_cast<int>(n));
    }
    if constexpr (VEC >= 2) {
        if (n % 2 == 0 && align % 8 == 0)
            return launch<2>(a, m, static_cast<int>(n));
    }
    return launch<1>(a, m, static_cast<int>(n));
}
