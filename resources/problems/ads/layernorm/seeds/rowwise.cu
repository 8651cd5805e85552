// layernorm (bf16), tunable row kernel. A row is handled by TPR threads (TPR = 32: one warp per
// row; more: a slice of a block), a block holds RPB rows. Each thread loads VEC bf16 at a time
// (VEC = 8: 16-byte loads, VEC = 4: 8-byte loads) and keeps up to CACHE of those vectors of x in
// registers, so x is read from memory once. Rows longer than TPR * VEC * CACHE take a path that
// re-reads x (mostly from L2). Rows whose length or pointers do not allow VEC-wide accesses use
// 2- or 1-element accesses (same code, narrower vectors). TPR = 8 or 16 puts several rows in one
// warp (short rows such as 320 elements: 40 16-byte vectors fill 8 lanes exactly five times,
// where a whole warp would leave 24 of 32 lanes idle on the second pass).
//   MINB    the blocks per SM the compiler must leave registers for (__launch_bounds__): 1 lets
//           a thread keep its whole row slice in registers; 2 or 4 let a second block load
//           while another reduces and writes.
//   STATS   0: exact two-pass statistics (sum -> mean, then sum of (x - mean)^2), two row
//           reductions; 1: one pass over x - x[row, 0] (sum and sum of squares of the shifted
//           values, one reduction of two numbers); 2: each thread computes the count, mean and
//           M2 of its own elements (two passes over its registers) and the partial results are
//           merged with Chan's formula (Welford-style, one reduction of three numbers).
//   CACHEOP 0: plain loads and stores; 1: x through the read-only path (ld.global.nc);
//           2: x with evict-first loads (ld.global.cs) and y with streaming stores.
//
// The requires keep blocks within 1024 threads and size the register cache for rows of 256 to
// 8192 elements (the bench set's rows run from 320 to 4096; the knob values bound the registers
// a thread caches, at most CACHE * VEC = 64 bf16).
//
// hone:knob VEC = 8 | 4  acts=bytes_per_access
// hone:knob TPR = 64 | 32 | 128 | 256 | 16 | 8  acts=launch_shape
// hone:knob RPB = 4 | 1 | 2 | 8  acts=launch_shape
// hone:knob CACHE = 2 | 1 | 4 | 8  acts=work_per_thread
// hone:knob STATS = 1 | 0 | 2  acts=reduction
// hone:knob CACHEOP = 0 | 1 | 2  acts=cache_policy
// hone:knob MINB = 1 | 2 | 4  acts=parallelism
// hone:require TPR * RPB <= 1024 && TPR * RPB >= 32
// hone:require TPR * RPB * MINB <= 2048
// hone:require TPR * VEC * CACHE >= 256 && TPR * VEC * CACHE <= 8192
#include <hone/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#ifndef VEC
#define VEC 8
#endif
#ifndef TPR
#define TPR 64
#endif
#ifndef RPB
#define RPB 4
#endif
#ifndef CACHE
#define CACHE 2
#endif
#ifndef STATS
#define STATS 1
#endif
#ifndef CACHEOP
#define CACHEOP 0
#endif
#ifndef MINB
#define MINB 1
#endif

static_assert(VEC == 4 || VEC == 8, "VEC must be 4 or 8");
static_assert(TPR == 8 || TPR == 16 || TPR == 32 || TPR == 64 || TPR == 128 || TPR == 256 || TPR == 512
        || TPR == 1024,
    "TPR");
static_assert(TPR * RPB <= 1024, "block too large");
static_assert((TPR * RPB) % 32 == 0, "a block is whole warps");

constexpr int THREADS = TPR * RPB;
constexpr int WARPS_PER_ROW = TPR / 32; // 0 when several rows share a warp
constexpr int LANES = TPR < 32 ? TPR : 32; // the lanes of one row inside a warp
constexpr int RED_WARPS = WARPS_PER_ROW > 0 ? WARPS_PER_ROW : 1; // shared reduction slots per row

// Raw storage of V bf16 values.
template <int V> struct Vec;
template <> struct Vec<8> {
    using T = uint4;
};
template <> struct Vec<4> {
    using T = uint2;
};
template <> struct Vec<2> {
    using T = unsigned int;
};
template <> struct Vec<1> {
    using T = unsigned short;
};

__device__ __forceinline__ void unpack(uint4 v, float (&f)[8])
{
    const unsigned w[4] = { v.x, v.y, v.z, v.w };
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
__device__ __forceinline__ void unpack(uint2 v, float (&f)[4])
{
    f[0] = __uint_as_float(v.x << 16);
    f[1] = __uint_as_float(v.x & 0xffff0000u);
    f[2] = __uint_as_float(v.y << 16);
    f[3] = __uint_as_float(v.y & 0xffff0000u);
}
__device__ __forceinline__ void unpack(unsigned int v, float (&f)[2])
{
    f[0] = __uint_as_float(v << 16);
    f[1] = __uint_as_float(v & 0xffff0000u);
}
__device__ __forceinline__ void unpack(unsigned short v, float (&f)[1])
{
    f[0] = __uint_as_float(static_cast<unsigned>(v) << 16);
}

__device__ __forceinline__ unsigned pack2(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi); // .x = lo (low half), .y = hi
    return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ void pack(const float (&f)[8], uint4& v)
{
    v.x = pack2(f[0], f[1]);
    v.y = pack2(f[2], f[3]);
    v.z = pack2(f[4], f[5]);
    v.w = pack2(f[6], f[7]);
}
__device__ __forceinline__ void pack(const float (&f)[4], uint2& v)
{
    v.x = pack2(f[0], f[1]);
    v.y = pack2(f[2], f[3]);
}
__device__ __forceinline__ void pack(const float (&f)[2], unsigned int& v)
{
    v = pack2(f[0], f[1]);
}
__device__ __forceinline__ void pack(const float (&f)[1], unsigned short& v)
{
    __nv_bfloat16 h = __float2bfloat16_rn(f[0]);
    v = *reinterpret_cast<unsigned short*>(&h);
}

template <class T> __device__ __forceinline__ T load_stream(const T* p)
{
#if CACHEOP == 1
    return __ldg(p);
#elif CACHEOP == 2
    return __ldcs(p);
#else
    return *p;
#endif
}
template <class T> __device__ __forceinline__ void store_stream(T* p, T v)
{
#if CACHEOP == 2
    __stcs(p, v);
#else
    *p = v;
#endif
}

// Sums of NV numbers over the TPR threads of a row; every thread of the row gets the same
// results. `red` holds RPB * WARPS_PER_ROW * NV floats and is used by one call only (a second
// reduction needs another array). All threads of the block must call it.
template <int NV> __device__ __forceinline__ void row_sum(float (&v)[NV], float* red)
{
#pragma unroll
    for (int o = LANES / 2; o > 0; o >>= 1)
#pragma unroll
        for (int i = 0; i < NV; ++i)
            v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
    if constexpr (WARPS_PER_ROW > 1) {
        const int sub = threadIdx.x / TPR;
        const int warp = (threadIdx.x % TPR) / 32;
        if ((threadIdx.x & 31) == 0)
#pragma unroll
            for (int i = 0; i < NV; ++i)
                red[(sub * WARPS_PER_ROW + warp) * NV + i] = v[i];
        __syncthreads();
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            v[i] = 0.0f;
#pragma unroll
            for (int k = 0; k < WARPS_PER_ROW; ++k)
                v[i] += red[(sub * WARPS_PER_ROW + k) * NV + i];
        }
    }
}

// (count, mean, M2) partial statistics and Chan's merge.
struct Stats {
    float n, mean, m2;
};
__device__ __forceinline__ Stats merge(Stats a, Stats b)
{
    const float n = a.n + b.n;
    if (n == 0.0f)
        return a;
    const float delta = b.mean - a.mean;
    const float fb = b.n / n;
    Stats r;
    r.n = n;
    r.mean = a.mean + delta * fb;
    r.m2 = a.m2 + b.m2 + delta * delta * a.n * fb;
    return r;
}

// Merges the Stats of the TPR threads of a row; every thread of the row gets the same result.
// `red` holds RPB * WARPS_PER_ROW * 3 floats.
__device__ __forceinline__ Stats row_merge(Stats s, float* red)
{
#pragma unroll
    for (int o = LANES / 2; o > 0; o >>= 1) {
        Stats b;
        b.n = __shfl_xor_sync(0xffffffffu, s.n, o);
        b.mean = __shfl_xor_sync(0xffffffffu, s.mean, o);
        b.m2 = __shfl_xor_sync(0xffffffffu, s.m2, o);
        s = merge(s, b);
    }
    // the merge is not exactly symmetric in its arguments: take the row's first lane's result
    s.n = __shfl_sync(0xffffffffu, s.n, 0, LANES);
    s.mean = __shfl_sync(0xffffffffu, s.mean, 0, LANES);
    s.m2 = __shfl_sync(0xffffffffu, s.m2, 0, LANES);
    if constexpr (WARPS_PER_ROW > 1) {
        const int sub = threadIdx.x / TPR;
        const int warp = (threadIdx.x % TPR) / 32;
        if ((threadIdx.x & 31) == 0) {
            red[(sub * WARPS_PER_ROW + warp) * 3 + 0] = s.n;
            red[(sub * WARPS_PER_ROW + warp) * 3 + 1] = s.mean;
            red[(sub * WARPS_PER_ROW + warp) * 3 + 2] = s.m2;
        }
        __syncthreads();
        Stats r { 0.0f, 0.0f, 0.0f };
#pragma unroll
        for (int k = 0; k < WARPS_PER_ROW; ++k) {
            const Stats b { red[(sub * WARPS_PER_ROW + k) * 3 + 0], red[(sub * WARPS_PER_ROW + k) * 3 + 1],
                red[(sub * WARPS_PER_ROW + k) * 3 + 2] };
            r = merge(r, b);
        }
        s = r;
    }
    return s;
}

template <int V>
__device__ __forceinline__ void write_out(typename Vec<V>::T xv, float mean, float rstd,
    const typename Vec<V>::T* gp, const typename Vec<V>::T* bp, typename Vec<V>::T* yp, int k)
{
    float fx[V], fg[V], fb[V], fy[V];
    unpack(xv, fx);
    unpack(__ldg(gp + k), fg);
    unpack(__ldg(bp + k), fb);
#pragma unroll
    for (int e = 0; e < V; ++e)
        fy[e] = fmaf((fx[e] - mean) * rstd, fg[e], fb[e]);
    typename Vec<V>::T out;
    pack(fy, out);
    store_stream(yp + k, out);
}

template <int V>
__global__ void __launch_bounds__(THREADS, MINB)
    layernorm_kernel(const unsigned short* __restrict__ x, const unsigned short* __restrict__ gamma,
        const unsigned short* __restrict__ beta, unsigned short* __restrict__ y, int64_t M, int N, float eps)
{
    using T = typename Vec<V>::T;
    __shared__ float red0[RPB * RED_WARPS * 3];
#if STATS == 0
    __shared__ float red1[RPB * RED_WARPS];
#endif

    const int t = threadIdx.x % TPR;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * RPB + threadIdx.x / TPR;
    const bool active = row < M;
    const int nv = N / V; // N is a multiple of V here
    const unsigned short* xrow = x + (active ? row : 0) * N;
    const T* xr = reinterpret_cast<const T*>(xrow);
    const T* gp = reinterpret_cast<const T*>(gamma);
    const T* bp = reinterpret_cast<const T*>(beta);
    T* yr = reinterpret_cast<T*>(y + (active ? row : 0) * N);
    const float invN = 1.0f / static_cast<float>(N);
    float mean, var;

    if (nv <= TPR * CACHE) {
        // The row fits in registers: x is read once.
        T xv[CACHE];
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            const int k = t + c * TPR;
            xv[c] = (active && k < nv) ? load_stream(xr + k) : T {};
        }
#if STATS == 0
        float s[1] = { 0.0f };
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            float f[V];
            unpack(xv[c], f);
#pragma unroll
            for (int e = 0; e < V; ++e)
                s[0] += f[e];
        }
        row_sum(s, red0);
        mean = s[0] * invN;
        float q[1] = { 0.0f };
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            if (t + c * TPR < nv) { // padding zeros must not count as x - mean = -mean
                float f[V];
                unpack(xv[c], f);
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float d = f[e] - mean;
                    q[0] = fmaf(d, d, q[0]);
                }
            }
        }
        row_sum(q, red1);
        var = q[0] * invN;
#elif STATS == 1
        const float shift = active ? __uint_as_float(static_cast<unsigned>(__ldg(xrow)) << 16) : 0.0f;
        float s[2] = { 0.0f, 0.0f };
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            if (t + c * TPR < nv) {
                float f[V];
                unpack(xv[c], f);
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float d = f[e] - shift;
                    s[0] += d;
                    s[1] = fmaf(d, d, s[1]);
                }
            }
        }
        row_sum(s, red0);
        const float m1 = s[0] * invN;
        mean = shift + m1;
        var = fmaxf(s[1] * invN - m1 * m1, 0.0f);
#else
        // this thread's own count, mean and M2 (exact two passes over its registers)
        int cnt = 0;
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            if (t + c * TPR < nv) {
                float f[V];
                unpack(xv[c], f);
                cnt += V;
#pragma unroll
                for (int e = 0; e < V; ++e)
                    s += f[e];
            }
        }
        Stats st;
        st.n = static_cast<float>(cnt);
        st.mean = cnt > 0 ? s / st.n : 0.0f;
        st.m2 = 0.0f;
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            if (t + c * TPR < nv) {
                float f[V];
                unpack(xv[c], f);
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float d = f[e] - st.mean;
                    st.m2 = fmaf(d, d, st.m2);
                }
            }
        }
        st = row_merge(st, red0);
        mean = st.mean;
        var = st.m2 * invN;
#endif
        const float rstd = rsqrtf(var + eps);
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            const int k = t + c * TPR;
            if (active && k < nv)
                write_out<V>(xv[c], mean, rstd, gp, bp, yr, k);
        }
    } else {
        // Long rows: statistics from passes over x, then the output pass (x again, mostly L2).
#if STATS == 0
        float s[1] = { 0.0f };
        if (active)
            for (int k = t; k < nv; k += TPR) {
                float f[V];
                unpack(xr[k], f);
#pragma unroll
                for (int e = 0; e < V; ++e)
                    s[0] += f[e];
            }
        row_sum(s, red0);
        mean = s[0] * invN;
        float q[1] = { 0.0f };
        if (active)
            for (int k = t; k < nv; k += TPR) {
                float f[V];
                unpack(xr[k], f);
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float d = f[e] - mean;
                    q[0] = fmaf(d, d, q[0]);
                }
            }
        row_sum(q, red1);
        var = q[0] * invN;
#elif STATS == 1
        const float shift = active ? __uint_as_float(static_cast<unsigned>(__ldg(xrow)) << 16) : 0.0f;
        float s[2] = { 0.0f, 0.0f };
        if (active)
            for (int k = t; k < nv; k += TPR) {
                float f[V];
                unpack(xr[k], f);
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float d = f[e] - shift;
                    s[0] += d;
                    s[1] = fmaf(d, d, s[1]);
                }
            }
        row_sum(s, red0);
        const float m1 = s[0] * invN;
        mean = shift + m1;
        var = fmaxf(s[1] * invN - m1 * m1, 0.0f);
#else
        // streaming Welford over this thread's elements, then Chan's merge
        Stats st { 0.0f, 0.0f, 0.0f };
        if (active)
            for (int k = t; k < nv; k += TPR) {
                float f[V];
                unpack(xr[k], f);
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    st.n += 1.0f;
                    const float d = f[e] - st.mean;
                    st.mean += d / st.n;
                    st.m2 = fmaf(d, f[e] - st.mean, st.m2);
                }
            }
        st = row_merge(st, red0);
        mean = st.mean;
        var = st.m2 * invN;
#endif
        const float rstd = rsqrtf(var + eps);
        if (active)
#pragma unroll 2
            for (int k = t; k < nv; k += TPR)
                write_out<V>(load_stream(xr + k), mean, rstd, gp, bp, yr, k);
    }
}

template <int V> static cudaError_t launch(const hone_args* a, int64_t M, int N, float eps)
{
    const unsigned blocks = static_cast<unsigned>((M + RPB - 1) / RPB);
    layernorm_kernel<V><<<blocks, THREADS, 0, static_cast<cudaStream_t>(a->stream)>>>(
        static_cast<const unsigned short*>(a->inputs[0].data),
        static_cast<const unsigned short*>(a->inputs[1].data),
        static_cast<const unsigned short*>(a->inputs[2].data),
        static_cast<unsigned short*>(a->outputs[0].data), M, N, eps);
    return cudaGetLastError();
}

static bool aligned(const void* p, int bytes)
{
    return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t M = a->inputs[0].shape[0];
    const int N = static_cast<int>(a->inputs[0].shape[1]);
    if (M == 0 || N == 0)
        return 0;
    const float eps = static_cast<float>(hone_param_or(a, "eps", 1e-5));
    const void* ptrs[4] = { a->inputs[0].data, a->inputs[1].data, a->inputs[2].data, a->outputs[0].data };
    auto fits = [&](int v) {
        if (N % v != 0)
            return false;
        for (const void* p : ptrs)
            if (!aligned(p, 2 * v))
                return false;
        return true;
    };
    cudaError_t err;
    if (fits(VEC))
        err = launch<VEC>(a, M, N, eps);
    else if (fits(2))
        err = launch<2>(a, M, N, eps);
    else
        err = launch<1>(a, M, N, eps);
    return static_cast<int>(err);
}
