// dot_interaction, tunable: one warp per sample, the sample held in registers.
// Lane l keeps elements [l*DPL, (l+1)*DPL) of every row of X[b] (DPL = 4 floats, so D <= 128;
// one 16-byte load per row and lane when rows are aligned, coalesced across the warp), up to
// FMAX rows. The pairs (i, j) are taken 32 at a time in their output order: each lane computes
// its DPL-long partial dot product for all 32 pairs of the chunk (the pair indices are
// compile-time constants, so the row registers are addressed statically), then a 5-step
// reduce-scatter over the warp (31 shuffles) leaves the full sum of pair 32c + l in lane l, which
// writes it: one coalesced 128-byte store per chunk. Chunks past P are skipped, rows past F are
// zero. No shared memory, no barriers.
//   WPB      warps (samples in flight) per block.
//   PERSIST  0: one sample per warp, B / WPB blocks; 1: as many blocks as fit on the GPU at
//            once, each warp loops over samples (grid stride).
//   FMAX     rows held in registers (32 * DPL * FMAX bytes per warp); F <= FMAX is required for
//            this path.
//   PREFETCH with PERSIST = 1, while a warp works on one sample it asks for its next sample to
//            be brought into L2, so memory stays busy while the warp computes: 1: one
//            prefetch.global.L2 per 128-byte line, 2: one cp.async.bulk.prefetch.L2 of the whole
//            sample (Hopper; 16-byte aligned samples only, else as 1).
//   XPOSE    how a chunk's 32 x 32 partial sums are reduced. 0: the shuffle reduce-scatter
//            below (31 shuffles, 31 adds and 62 selects per chunk). 1: through a 4 KiB tile of
//            shared memory per warp: lane t stores its 32 partials as row t (eight 16-byte
//            stores, swizzled so that the warp's stores hit all 32 banks), then lane l adds up
//            column l (32 conflict-free loads, 31 adds): about 70 instructions instead of 124.
//   MINW     0: no register cap (the compiler may use up to 255 registers, fewer warps fit);
//            12: registers capped so that at least 12 warps (whole blocks) fit on a
//            multiprocessor.
// Shapes the register path cannot take (F > FMAX or D > 128) go to a general shared-memory kernel
// (register tiles of 4 x 4 pairs, any F and D).
//
// The requires drop the register cap where it would make the compiler spill (FMAX = 32, or more
// than 4 warps per block) and use PREFETCH only with PERSIST = 1 (one sample per warp has no
// next sample).
//
// hone:knob WPB = 2 | 1 | 4 | 8  acts=launch_shape
// hone:knob PERSIST = 0 | 1  acts=launch_shape
// hone:knob FMAX = 28 | 32
// hone:knob MINW = 12 | 0  acts=parallelism
// hone:knob PREFETCH = 0 | 1 | 2  acts=memory_pipeline
// hone:require MINW == 0 || (FMAX == 28 && WPB <= 4)
// hone:knob XPOSE = 0 | 1  acts=reduction
// hone:require PREFETCH == 0 || PERSIST == 1
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef WPB
#define WPB 2
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
#ifndef FMAX
#define FMAX 28
#endif
#ifndef MINW
#define MINW 12
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef XPOSE
#define XPOSE 0
#endif

constexpr int THREADS = 32 * WPB;
constexpr int MIN_BLOCKS = (MINW + WPB - 1) / WPB > 1 ? (MINW + WPB - 1) / WPB : 1;
constexpr unsigned FULL = 0xffffffffu;

// Largest i with i*(i-1)/2 <= p: the row of pair p in the order (1,0), (2,0), (2,1), (3,0), ...
__host__ __device__ constexpr int pair_row(int p)
{
    int i = 1;
    while (i * (i + 1) / 2 <= p)
        ++i;
    return i;
}

// v[Q] = partial dot product of pair C*32 + Q (0 past the last pair of FMAX rows).
template <int DPL, int C, int Q> struct Fill {
    static __device__ __forceinline__ void run(float (&v)[32], const float (&x)[FMAX][DPL])
    {
        constexpr int p = C * 32 + Q;
        if constexpr (p < FMAX * (FMAX - 1) / 2) {
            constexpr int i = pair_row(p);
            constexpr int j = p - i * (i - 1) / 2;
            float s = x[i][0] * x[j][0];
#pragma unroll
            for (int k = 1; k < DPL; ++k)
                s = fmaf(x[i][k], x[j][k], s);
            v[Q] = s;
        } else {
            v[Q] = 0.0f;
        }
        Fill<DPL, C, Q + 1>::run(v, x);
    }
};
template <int DPL, int C> struct Fill<DPL, C, 32> {
    static __device__ __forceinline__ void run(float (&)[32], const float (&)[FMAX][DPL]) { }
};

// After the call lane l holds in v[0] the warp-wide sum of everyone's v[l].
__device__ __forceinline__ void reduce_scatter32(float (&v)[32], int lane)
{
#pragma unroll
    for (int st = 0; st < 5; ++st) {
        const int half = 16 >> st; // values kept after this step; also the shuffle distance
        const bool upper = (lane & half) != 0;
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            if (k < half) {
                const float send = upper ? v[k] : v[k + half];
                const float keep = upper ? v[k + half] : v[k];
                v[k] = keep + __shfl_xor_sync(FULL, send, half);
            }
        }
    }
}

constexpr int NCHUNK = (FMAX * (FMAX - 1) / 2 + 31) / 32;

// XPOSE = 1: the warp-wide sum of everyone's v[lane], through `tile` (32 x 32 floats, this
// warp's). Row t holds lane t's partials, its 16-byte unit u at position u ^ (t & 7): a store
// instruction then covers eight different units across lanes t..t+7 (every bank), and lane l's
// column read (unit l / 4 of every row) stays within one 128-byte row per load.
__device__ __forceinline__ float reduce_smem32(const float (&v)[32], float4* tile, int lane)
{
#pragma unroll
    for (int u = 0; u < 8; ++u)
        tile[lane * 8 + (u ^ (lane & 7))] = make_float4(v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3]);
    __syncwarp();
    const float* t = reinterpret_cast<const float*>(tile);
    const int unit = lane >> 2;
    const int off = lane & 3;
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 32; ++r)
        s += t[(r * 8 + (unit ^ (r & 7))) * 4 + off];
    __syncwarp(); // the next chunk overwrites the tile
    return s;
}

template <int DPL, int C> struct Chunks {
    static __device__ __forceinline__ void run(
        const float (&x)[FMAX][DPL], float* outb, int P, int lane, float4* tile)
    {
        if (C * 32 < P) { // the same for the whole warp
            float v[32];
            Fill<DPL, C, 0>::run(v, x);
#if XPOSE
            const float sum = reduce_smem32(v, tile, lane);
#else
            reduce_scatter32(v, lane);
            const float sum = v[0];
#endif
            if (C * 32 + lane < P)
                outb[C * 32 + lane] = sum;
            Chunks<DPL, C + 1>::run(x, outb, P, lane, tile);
        }
    }
};
template <int DPL> struct Chunks<DPL, NCHUNK> {
    static __device__ __forceinline__ void run(const float (&)[FMAX][DPL], float*, int, int, float4*) { }
};

// Asks for the bytes [p, p + bytes) to be brought into L2 (a hint: nothing is waited for).
__device__ __forceinline__ void prefetch_l2(const float* p, int bytes, int lane)
{
    const char* c = reinterpret_cast<const char*>(p);
#if PREFETCH == 2
    if (reinterpret_cast<uintptr_t>(c) % 16 == 0 && bytes % 16 == 0) {
        if (lane == 0)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(c), "r"(bytes) : "memory");
        return;
    }
#endif
    for (int off = lane * 128; off < bytes; off += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(c + off));
}

template <int DPL> struct VecOf;
template <> struct VecOf<1> {
    using T = float;
};
template <> struct VecOf<2> {
    using T = float2;
};
template <> struct VecOf<4> {
    using T = float4;
};

// vec: every lane's DPL elements are one aligned vector (D % DPL == 0, X 16-byte aligned). A
// run-time flag, not a template parameter: the kernel is instantiated once, which keeps nvcc's
// time per variant down (the pair unrolling is what costs).
template <int DPL>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) dot_interaction_regs(
    const float* __restrict__ X, float* __restrict__ out, int64_t B, int F, int D, int P, bool vec)
{
    const int lane = threadIdx.x & 31;
    const int64_t warp0 = static_cast<int64_t>(blockIdx.x) * WPB + threadIdx.x / 32;
#if PERSIST
    const int64_t stride = static_cast<int64_t>(gridDim.x) * WPB;
#else
    const int64_t stride = B;
#endif
    for (int64_t b = warp0; b < B; b += stride) {
        const float* xb = X + b * F * D;
        float x[FMAX][DPL];
#pragma unroll
        for (int f = 0; f < FMAX; ++f) {
            const int d0 = lane * DPL;
            if (vec) {
                if (f < F && d0 < D) {
                    const typename VecOf<DPL>::T q
                        = __ldg(reinterpret_cast<const typename VecOf<DPL>::T*>(xb + f * D + d0));
                    const float* qf = reinterpret_cast<const float*>(&q);
#pragma unroll
                    for (int k = 0; k < DPL; ++k)
                        x[f][k] = qf[k];
                } else {
#pragma unroll
                    for (int k = 0; k < DPL; ++k)
                        x[f][k] = 0.0f;
                }
            } else {
#pragma unroll
                for (int k = 0; k < DPL; ++k)
                    x[f][k] = (f < F && d0 + k < D) ? __ldg(xb + f * D + d0 + k) : 0.0f;
            }
        }
#if PREFETCH
        if (b + stride < B)
            prefetch_l2(X + (b + stride) * F * D, F * D * 4, lane);
#endif
#if XPOSE
        __shared__ float4 tiles[WPB][32 * 8];
        float4* tile = tiles[threadIdx.x / 32];
#else
        float4* tile = nullptr;
#endif
        Chunks<DPL, 0>::run(x, out + b * P, P, lane, tile);
    }
}

// Shapes the fast path does not take (any F and D): the sample staged in shared memory, each
// group of `ds` lanes computing a 4 x 4 tile of the Gram matrix's lower triangle in registers
// (its lanes split the D axis; a butterfly sums their partial tiles). `ds` is chosen per shape
// so that the block's tiles keep most lanes busy; V = 4 takes 16-byte loads.
constexpr int ANY_THREADS = 128;

template <int V>
__global__ void __launch_bounds__(ANY_THREADS) dot_interaction_any(
    const float* __restrict__ X, float* __restrict__ out, int64_t B, int F, int D, int P, int DP, int ds)
{
    extern __shared__ float4 any_smem4[];
    float* xs = reinterpret_cast<float*>(any_smem4);
    const int nb = (F + 3) / 4;
    const int ntiles = nb * (nb + 1) / 2;
    const int groups = ANY_THREADS / ds;
    const int gid = threadIdx.x / ds;
    const int s = threadIdx.x % ds;
    const int nv = D / V;
    for (int64_t b = blockIdx.x; b < B; b += gridDim.x) {
        const float* src = X + b * F * D;
        __syncthreads(); // the previous sample's tiles are done with xs
        for (int idx = threadIdx.x; idx < F * nv; idx += ANY_THREADS) {
            const int row = idx / nv;
            const int c = (idx - row * nv) * V;
            if constexpr (V == 4)
                *reinterpret_cast<float4*>(xs + row * DP + c)
                    = __ldg(reinterpret_cast<const float4*>(src + static_cast<int64_t>(row) * D + c));
            else
                xs[row * DP + c] = __ldg(src + static_cast<int64_t>(row) * D + c);
        }
        __syncthreads();
        float* o = out + b * P;
        for (int base = 0; base < ntiles; base += groups) { // uniform trip count per group
            int t = base + gid;
            const bool valid = t < ntiles;
            if (!valid)
                t = 0;
            int bi = static_cast<int>((sqrtf(8.0f * t + 1.0f) - 1.0f) * 0.5f);
            if ((bi + 1) * (bi + 2) / 2 <= t)
                ++bi;
            if (bi * (bi + 1) / 2 > t)
                --bi;
            const int bj = t - bi * (bi + 1) / 2;
            int ra[4], rb[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                ra[k] = min(bi * 4 + k, F - 1) * DP;
                rb[k] = min(bj * 4 + k, F - 1) * DP;
            }
            float v[16];
#pragma unroll
            for (int e = 0; e < 16; ++e)
                v[e] = 0.0f;
            for (int c = s; c < nv; c += ds) {
                if constexpr (V == 4) {
                    float4 A[4];
#pragma unroll
                    for (int k = 0; k < 4; ++k)
                        A[k] = *reinterpret_cast<const float4*>(xs + ra[k] + 4 * c);
#pragma unroll
                    for (int m = 0; m < 4; ++m) {
                        const float4 Bv = *reinterpret_cast<const float4*>(xs + rb[m] + 4 * c);
#pragma unroll
                        for (int k = 0; k < 4; ++k) {
                            float acc = v[k * 4 + m];
                            acc = fmaf(A[k].x, Bv.x, acc);
                            acc = fmaf(A[k].y, Bv.y, acc);
                            acc = fmaf(A[k].z, Bv.z, acc);
                            v[k * 4 + m] = fmaf(A[k].w, Bv.w, acc);
                        }
                    }
                } else {
                    float A[4];
#pragma unroll
                    for (int k = 0; k < 4; ++k)
                        A[k] = xs[ra[k] + c];
#pragma unroll
                    for (int m = 0; m < 4; ++m) {
                        const float Bv = xs[rb[m] + c];
#pragma unroll
                        for (int k = 0; k < 4; ++k)
                            v[k * 4 + m] = fmaf(A[k], Bv, v[k * 4 + m]);
                    }
                }
            }
            for (int w = ds / 2; w > 0; w >>= 1)
#pragma unroll
                for (int e = 0; e < 16; ++e)
                    v[e] += __shfl_xor_sync(0xffffffffu, v[e], w);
#pragma unroll
            for (int e = 0; e < 16; ++e) {
                const int i = bi * 4 + e / 4;
                const int j = bj * 4 + e % 4;
                if (valid && e % ds == s && i < F && j < i)
                    o[i * (i - 1) / 2 + j] = v[e];
            }
        }
    }
}

// One thread per output: only for samples too large for shared memory.
__global__ void dot_interaction_plain(
    const float* __restrict__ X, float* __restrict__ out, int64_t B, int F, int D, int P)
{
    const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= B * P)
        return;
    const int64_t b = t / P;
    const int p = static_cast<int>(t - b * P);
    int i = 1;
    while (i * (i + 1) / 2 <= p)
        ++i;
    const int j = p - i * (i - 1) / 2;
    const float* xi = X + (b * F + i) * D;
    const float* xj = X + (b * F + j) * D;
    float sum = 0.0f;
    for (int d = 0; d < D; ++d)
        sum = fmaf(xi[d], xj[d], sum);
    out[t] = sum;
}

int launch_any(const float* x, float* out, int64_t B, int F, int D, int P, cudaStream_t stream)
{
    const bool vec = D % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const int DP = vec ? D + 4 : (D % 2 ? D : D + 1); // padded rows: rows of a tile in other banks
    const size_t smem = static_cast<size_t>(F) * DP * sizeof(float);
    if (smem > 96 * 1024) {
        const int64_t total = B * P;
        dot_interaction_plain<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(x, out, B, F, D, P);
        return static_cast<int>(cudaGetLastError());
    }
    const int nb = (F + 3) / 4;
    const int ntiles = nb * (nb + 1) / 2;
    int ds = 1; // lanes per tile: as many as keep the tiles of one round within the block
    while (ds < 16 && ntiles * ds * 2 <= ANY_THREADS)
        ds *= 2;
    static size_t raised = 48 * 1024; // opt-in above 48 KB, once per size
    if (smem > raised) {
        cudaError_t e = cudaFuncSetAttribute(dot_interaction_any<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(dot_interaction_any<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);
        if (e != cudaSuccess)
            return static_cast<int>(e);
        raised = 96 * 1024;
    }
    static size_t sized = 0; // blocks resident at once for this much shared memory, once per size
    static int64_t resident = 0;
    if (smem * 2 + vec != sized) {
        int dev = 0, sms = 0, perSM = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        const cudaError_t e = vec ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, dot_interaction_any<4>, ANY_THREADS, smem)
                                  : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, dot_interaction_any<1>, ANY_THREADS, smem);
        if (e != cudaSuccess)
            return static_cast<int>(e);
        sized = smem * 2 + vec;
        resident = static_cast<int64_t>(perSM > 0 ? perSM : 1) * sms;
    }
    const unsigned blocks = static_cast<unsigned>(B < resident ? B : resident);
    if (vec)
        dot_interaction_any<4><<<blocks, ANY_THREADS, smem, stream>>>(x, out, B, F, D, P, DP, ds);
    else
        dot_interaction_any<1><<<blocks, ANY_THREADS, smem, stream>>>(x, out, B, F, D, P, DP, ds);
    return static_cast<int>(cudaGetLastError());
}

template <int DPL> static int launch_regs(const hone_args* a, int64_t B, int F, int D, int P, bool vec)
{
    int64_t blocks = (B + WPB - 1) / WPB;
#if PERSIST
    static int limit = 0; // blocks resident at once on this GPU
    if (limit == 0) {
        int dev = 0, sms = 0, perSM = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &perSM, dot_interaction_regs<DPL>, THREADS, 0);
        if (err != cudaSuccess)
            return static_cast<int>(err);
        limit = (perSM > 0 ? perSM : 1) * sms;
    }
    if (blocks > limit)
        blocks = limit;
#endif
    dot_interaction_regs<DPL>
        <<<static_cast<unsigned>(blocks), THREADS, 0, static_cast<cudaStream_t>(a->stream)>>>(
            static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), B, F, D,
            P, vec);
    return static_cast<int>(cudaGetLastError());
}


extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& X = a->inputs[0];
    const int64_t B = X.shape[0];
    const int F = static_cast<int>(X.shape[1]);
    const int D = static_cast<int>(X.shape[2]);
    const int P = F * (F - 1) / 2;
    if (B == 0 || P == 0)
        return 0;
    // One register layout (4 floats per lane) for every D <= 128: narrower rows leave lanes idle,
    // which costs the bench shape (D = 128) nothing and saves two instantiations.
    if (F <= FMAX && D <= 128)
        return launch_regs<4>(a, B, F, D, P,
            D % 4 == 0 && reinterpret_cast<uintptr_t>(a->inputs[0].data) % 16 == 0);
    return launch_any(static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), B, F, D, P,
        static_cast<cudaStream_t>(a->stream));
}
