// Softmax, tunable, one block per row (for long rows; a short row leaves threads idle). The
// BLOCK threads read the row VEC-wide into MAXV vectors each (the register path, when
// N / VEC <= MAXV * BLOCK), reduce the max and then the sum of exponentials across the block
// (warp shuffles, then one partial per warp through shared memory), and write the normalised
// row from registers. Longer rows take an online pass (running max and rescaled sum per thread,
// merged across the block) and a second pass that re-reads x. Exponentials use __expf.
//   GRID  0: one block per row; 1: as many blocks as fit on the device at once, grid-stride over
//         rows.
//   STORE 0: plain loads and stores; 1: streaming (evict-first) loads of x and stores of y.
// VEC > 1 needs N % VEC == 0 and 4 * VEC-byte aligned pointers, else VEC = 1 code runs.
//
// hone:knob BLOCK = 32 | 64 | 128 | 256 | 512 | 1024  acts=launch_shape
// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access
// hone:knob MAXV = 1 | 2 | 4 | 8  acts=work_per_thread
// hone:knob GRID = 0 | 1  acts=launch_shape
// hone:knob STORE = 0 | 1  acts=cache_policy
// hone:require VEC * MAXV <= 16
// Start at the fastest setting of the author's H100 sweep:
// hone:start VEC=4 GRID=1
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef BLOCK
#define BLOCK 32
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef MAXV
#define MAXV 1
#endif
#ifndef GRID
#define GRID 1
#endif
#ifndef STORE
#define STORE 0
#endif

#if BLOCK > 256
#define BOUNDS __launch_bounds__(BLOCK, 1)
#else
#define BOUNDS
#endif

namespace {

typedef long long i64;

constexpr int WARPS = BLOCK / 32;

template <int V> struct Vec {
    float f[V];
};

template <int V> __device__ __forceinline__ Vec<V> load(const float* p)
{
    Vec<V> r;
    if constexpr (V == 4) {
#if STORE == 1
        const float4 t = __ldcs(reinterpret_cast<const float4*>(p));
#else
        const float4 t = __ldg(reinterpret_cast<const float4*>(p));
#endif
        r.f[0] = t.x;
        r.f[1] = t.y;
        r.f[2] = t.z;
        r.f[3] = t.w;
    } else if constexpr (V == 2) {
#if STORE == 1
        const float2 t = __ldcs(reinterpret_cast<const float2*>(p));
#else
        const float2 t = __ldg(reinterpret_cast<const float2*>(p));
#endif
        r.f[0] = t.x;
        r.f[1] = t.y;
    } else {
#if STORE == 1
        r.f[0] = __ldcs(p);
#else
        r.f[0] = __ldg(p);
#endif
    }
    return r;
}

template <int V> __device__ __forceinline__ void store(float* p, const Vec<V>& v)
{
    if constexpr (V == 4) {
        const float4 t = make_float4(v.f[0], v.f[1], v.f[2], v.f[3]);
#if STORE == 1
        __stcs(reinterpret_cast<float4*>(p), t);
#else
        *reinterpret_cast<float4*>(p) = t;
#endif
    } else if constexpr (V == 2) {
        const float2 t = make_float2(v.f[0], v.f[1]);
#if STORE == 1
        __stcs(reinterpret_cast<float2*>(p), t);
#else
        *reinterpret_cast<float2*>(p) = t;
#endif
    } else {
#if STORE == 1
        __stcs(p, v.f[0]);
#else
        *p = v.f[0];
#endif
    }
}

// Block-wide reductions. `red` holds one partial per warp; the trailing barrier lets the caller
// reuse `red` for the next reduction.
__device__ __forceinline__ float block_max(float v, float* red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (WARPS == 1)
        return v;
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = v;
    __syncthreads();
    float r = red[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w)
        r = fmaxf(r, red[w]);
    __syncthreads();
    return r;
}

__device__ __forceinline__ float block_sum(float v, float* red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (WARPS == 1)
        return v;
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = v;
    __syncthreads();
    float r = red[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w)
        r += red[w];
    __syncthreads();
    return r;
}

template <int V>
__global__ void BOUNDS softmax_block(const float* __restrict__ x, float* __restrict__ y, i64 m, int n)
{
    __shared__ float red[WARPS];
    const int nv = n / V;
    const bool in_regs = nv <= MAXV * BLOCK;
#if GRID == 1
    const i64 step = gridDim.x;
#else
    const i64 step = m + 1;
#endif
    for (i64 row = blockIdx.x; row < m; row += step) { // uniform across the block
        const float* xr = x + row * n;
        float* yr = y + row * n;
        if (in_regs) {
            Vec<V> v[MAXV];
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < MAXV; ++j) {
                const int c = j * BLOCK + threadIdx.x;
                if (c < nv) {
                    v[j] = load<V>(xr + c * V);
#pragma unroll
                    for (int q = 0; q < V; ++q)
                        mx = fmaxf(mx, v[j].f[q]);
                }
            }
            mx = block_max(mx, red);
            float s = 0.0f;
#pragma unroll
            for (int j = 0; j < MAXV; ++j) {
                const int c = j * BLOCK + threadIdx.x;
                if (c < nv) {
#pragma unroll
                    for (int q = 0; q < V; ++q) {
                        v[j].f[q] = __expf(v[j].f[q] - mx);
                        s += v[j].f[q];
                    }
                }
            }
            s = block_sum(s, red);
            const float inv = 1.0f / s;
#pragma unroll
            for (int j = 0; j < MAXV; ++j) {
                const int c = j * BLOCK + threadIdx.x;
                if (c < nv) {
#pragma unroll
                    for (int q = 0; q < V; ++q)
                        v[j].f[q] *= inv;
                    store<V>(yr + c * V, v[j]);
                }
            }
        } else {
            float mx = -INFINITY;
            float s = 0.0f;
            for (int c = threadIdx.x; c < nv; c += BLOCK) {
                const Vec<V> v = load<V>(xr + c * V);
#pragma unroll
                for (int q = 0; q < V; ++q) {
                    const float t = v.f[q];
                    if (t > mx) {
                        s = s * __expf(mx - t) + 1.0f;
                        mx = t;
                    } else {
                        s += __expf(t - mx);
                    }
                }
            }
            const float gmx = block_max(mx, red);
            s = block_sum(s > 0.0f ? s * __expf(mx - gmx) : 0.0f, red);
            const float inv = 1.0f / s;
            for (int c = threadIdx.x; c < nv; c += BLOCK) {
                Vec<V> v = load<V>(xr + c * V);
#pragma unroll
                for (int q = 0; q < V; ++q)
                    v.f[q] = __expf(v.f[q] - gmx) * inv;
                store<V>(yr + c * V, v);
            }
        }
    }
}

template <int V> int launch(const hone_args* a, i64 m, int n)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    i64 grid = m;
#if GRID == 1
    // Blocks resident at once, asked once per instantiation: the queries would delay every launch.
    static const i64 resident = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, softmax_block<V>, BLOCK, 0);
        return static_cast<i64>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    }();
    if (grid > resident)
        grid = resident;
#else
    if (grid > 0x7fffffff)
        return 1;
#endif
    softmax_block<V><<<static_cast<unsigned>(grid), BLOCK, 0, stream>>>(
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
