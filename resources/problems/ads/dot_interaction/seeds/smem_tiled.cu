// dot_interaction, tunable: samples staged in shared memory, register-tiled Gram blocks.
// A block takes SPB samples at a time and copies their F x D rows into shared memory (row stride
// DP = D rounded up to 4, plus PAD floats against bank conflicts). The lower triangle of each
// F x F Gram matrix is cut into TILE x TILE tiles (rows past F are clamped and their results
// dropped); a group of DSPLIT consecutive lanes computes one tile: each lane walks every
// DSPLIT-th float4 of the D axis, loads TILE float4 of the tile's row block and TILE of its column
// block and does TILE * TILE * 4 FMAs, then the DSPLIT partial tiles are summed with warp shuffles.
//   RED   0: butterfly all-reduce of the TILE*TILE sums (log2(DSPLIT) * TILE*TILE shuffles per
//         lane); 1: reduce-scatter (each step hands half of the remaining values to the partner
//         lane, about TILE*TILE shuffles in all), each lane ends up owning TILE*TILE/DSPLIT sums.
//   STAGE 1: results go to shared memory and the block writes its SPB * P outputs as one
//         contiguous, coalesced range; 0: each lane writes its results straight to global memory.
//   PIPE  0: one group of SPB samples per block, plain loads; 1: persistent blocks that loop over
//         sample groups with a cp.async double buffer (the next group is in flight while the
//         current one is computed).
// D not a multiple of 4 (or a misaligned X) falls back to scalar accesses.
//
// The require keeps the staged samples per thread bounded (SPB * THREADS <= 512).
//
// hone:knob SPB = 1 | 2 | 4  acts=work_per_thread
// hone:knob TILE = 4 | 8  acts=work_per_thread
// hone:knob DSPLIT = 4 | 8 | 16  acts=reduction
// hone:knob THREADS = 128 | 256  acts=launch_shape
// hone:knob PAD = 4 | 0
// hone:knob RED = 1 | 0  acts=reduction
// hone:knob STAGE = 1 | 0
// hone:knob PIPE = 1 | 0  acts=memory_pipeline
// hone:require SPB * THREADS <= 512
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef SPB
#define SPB 1
#endif
#ifndef TILE
#define TILE 4
#endif
#ifndef DSPLIT
#define DSPLIT 4
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef PAD
#define PAD 4
#endif
#ifndef RED
#define RED 1
#endif
#ifndef STAGE
#define STAGE 1
#endif
#ifndef PIPE
#define PIPE 1
#endif

static_assert(DSPLIT >= 1 && DSPLIT <= 32 && (DSPLIT & (DSPLIT - 1)) == 0, "DSPLIT: a power of two <= 32");
static_assert(THREADS % 32 == 0, "THREADS: whole warps");
static_assert(PAD % 4 == 0, "PAD keeps rows 16-byte aligned");

constexpr int GROUPS = THREADS / DSPLIT; // tiles in flight per block
constexpr int NACC = TILE * TILE;
__host__ __device__ constexpr int ilog2(int n)
{
    return n <= 1 ? 0 : 1 + ilog2(n / 2);
}
constexpr unsigned FULL = 0xffffffffu;

struct Geo {
    int64_t B;
    int F, D, P;
    int nv; // vectors per row (D / V)
    int DP; // shared row stride in floats
    int NTILES; // TILE x TILE tiles in the lower triangle (diagonal tiles included)
    int64_t numGroups;
};

__device__ __forceinline__ void cp_async(float* dst, const float* src, int bytes16)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if (bytes16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Copies samples b0 .. b0+ns-1 (ns*F rows of D floats, contiguous in X) into buf.
template <int V, bool ASYNC>
__device__ __forceinline__ void load_group(
    const float* __restrict__ X, float* buf, int64_t b0, int ns, const Geo& g)
{
    const float* src = X + b0 * g.F * g.D;
    const int total = ns * g.F * g.nv;
    if constexpr (ASYNC) {
        for (int idx = threadIdx.x; idx < total; idx += THREADS) {
            const int row = idx / g.nv;
            const int c = (idx - row * g.nv) * V;
            cp_async(buf + row * g.DP + c, src + static_cast<int64_t>(row) * g.D + c, V == 4);
        }
    } else {
        constexpr int U = 4; // loads in flight per thread before the stores
        for (int base = threadIdx.x; base < total; base += THREADS * U) {
            float r[U][V];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int idx = base + u * THREADS;
                if (idx < total) {
                    const int row = idx / g.nv;
                    const int c = (idx - row * g.nv) * V;
                    const float* p = src + static_cast<int64_t>(row) * g.D + c;
                    if constexpr (V == 4) {
                        const float4 q = __ldg(reinterpret_cast<const float4*>(p));
                        r[u][0] = q.x;
                        r[u][1] = q.y;
                        r[u][2] = q.z;
                        r[u][3] = q.w;
                    } else {
                        r[u][0] = __ldg(p);
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int idx = base + u * THREADS;
                if (idx < total) {
                    const int row = idx / g.nv;
                    const int c = (idx - row * g.nv) * V;
                    float* d = buf + row * g.DP + c;
                    if constexpr (V == 4)
                        *reinterpret_cast<float4*>(d) = make_float4(r[u][0], r[u][1], r[u][2], r[u][3]);
                    else
                        d[0] = r[u][0];
                }
            }
        }
    }
}

// Samples in group grp (SPB, fewer in the last group).
__device__ __forceinline__ int samples_in(int64_t grp, const Geo& g)
{
    const int64_t left = g.B - grp * SPB;
    return left < SPB ? static_cast<int>(left) : SPB;
}

// Row block of tile t in the enumeration (0,0), (1,0), (1,1), (2,0), ...: largest bi with
// bi*(bi+1)/2 <= t.
__device__ __forceinline__ int tile_row(int t)
{
    int bi = static_cast<int>((sqrtf(8.0f * t + 1.0f) - 1.0f) * 0.5f);
    if ((bi + 1) * (bi + 2) / 2 <= t)
        ++bi;
    if (bi * (bi + 1) / 2 > t)
        --bi;
    return bi;
}

// Computes every tile of the ns samples in buf and writes the pairs they own, to `dst` (global
// out + b0*P, or the shared staging area; both laid out [sample][P]).
template <int V>
__device__ __forceinline__ void compute_group(const float* buf, float* dst, int ns, const Geo& g)
{
    const int gid = threadIdx.x / DSPLIT;
    const int s = threadIdx.x % DSPLIT;
    const int ntot = ns * g.NTILES;
    for (int base = 0; base < ntot; base += GROUPS) { // uniform trip count: shuffles stay converged
        int item = base + gid;
        const bool valid = item < ntot;
        if (!valid)
            item = 0;
        const int smp = item / g.NTILES;
        const int tile = item - smp * g.NTILES;
        const int bi = tile_row(tile);
        const int bj = tile - bi * (bi + 1) / 2;
        const float* xs = buf + smp * g.F * g.DP;
        int offa[TILE], offb[TILE];
#pragma unroll
        for (int a = 0; a < TILE; ++a) {
            offa[a] = min(bi * TILE + a, g.F - 1) * g.DP;
            offb[a] = min(bj * TILE + a, g.F - 1) * g.DP;
        }
        float v[NACC];
#pragma unroll
        for (int e = 0; e < NACC; ++e)
            v[e] = 0.0f;
        for (int c = s; c < g.nv; c += DSPLIT) {
            if constexpr (V == 4) {
                float4 A[TILE];
#pragma unroll
                for (int a = 0; a < TILE; ++a)
                    A[a] = *reinterpret_cast<const float4*>(xs + offa[a] + 4 * c);
#pragma unroll
                for (int b = 0; b < TILE; ++b) {
                    const float4 Bv = *reinterpret_cast<const float4*>(xs + offb[b] + 4 * c);
#pragma unroll
                    for (int a = 0; a < TILE; ++a) {
                        float acc = v[a * TILE + b];
                        acc = fmaf(A[a].x, Bv.x, acc);
                        acc = fmaf(A[a].y, Bv.y, acc);
                        acc = fmaf(A[a].z, Bv.z, acc);
                        acc = fmaf(A[a].w, Bv.w, acc);
                        v[a * TILE + b] = acc;
                    }
                }
            } else { // scalar fallback (D % 4 != 0): kept simple, not unrolled over c
                float A[TILE];
#pragma unroll
                for (int a = 0; a < TILE; ++a)
                    A[a] = xs[offa[a] + c];
#pragma unroll
                for (int b = 0; b < TILE; ++b) {
                    const float Bv = xs[offb[b] + c];
#pragma unroll
                    for (int a = 0; a < TILE; ++a)
                        v[a * TILE + b] = fmaf(A[a], Bv, v[a * TILE + b]);
                }
            }
        }

        float* out = dst + static_cast<int64_t>(smp) * g.P;
        auto put = [&](int e, float val) {
            const int i = bi * TILE + e / TILE;
            const int j = bj * TILE + e % TILE;
            if (valid && i < g.F && j < i)
                out[i * (i - 1) / 2 + j] = val;
        };
#if RED == 1
        // reduce-scatter: after the step with offset o, a lane keeps the half of its values
        // selected by bit o of its index; once a single value is left, plain butterfly steps
        constexpr int LOG_DSPLIT = ilog2(DSPLIT);
        int idx0 = 0;
        bool writer = true;
#pragma unroll
        for (int st = 0; st < LOG_DSPLIT; ++st) {
            const int o = DSPLIT >> (st + 1);
            const int n = NACC >> st;
            const bool upper = (s & o) != 0;
            if (n > 1) {
                const int half = n / 2;
#pragma unroll
                for (int k = 0; k < NACC / 2; ++k) { // constant bounds, so v stays in registers
                    if (k < half) {
                        const float send = upper ? v[k] : v[k + half];
                        const float keep = upper ? v[k + half] : v[k];
                        v[k] = keep + __shfl_xor_sync(FULL, send, o);
                    }
                }
                if (upper)
                    idx0 += half;
            } else {
                v[0] += __shfl_xor_sync(FULL, v[0], o);
                writer = writer && !upper;
            }
        }
        constexpr int NOWN = NACC / DSPLIT > 0 ? NACC / DSPLIT : 1;
        if (writer)
#pragma unroll
            for (int k = 0; k < NOWN; ++k)
                put(idx0 + k, v[k]);
#else
#pragma unroll
        for (int o = DSPLIT / 2; o > 0; o >>= 1)
#pragma unroll
            for (int e = 0; e < NACC; ++e)
                v[e] += __shfl_xor_sync(FULL, v[e], o);
#pragma unroll
        for (int e = 0; e < NACC; ++e)
            if (e % DSPLIT == s)
                put(e, v[e]);
#endif
    }
}

template <int V>
__global__ void __launch_bounds__(THREADS, 1)
    dot_interaction_kernel(const float* __restrict__ X, float* __restrict__ out, Geo g)
{
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
#if PIPE || STAGE
    const int bufFloats = SPB * g.F * g.DP;
#endif
#if STAGE
    float* stage = smem + (PIPE ? 2 : 1) * bufFloats;
#endif
#if PIPE
    int64_t grp = blockIdx.x;
    if (grp < g.numGroups)
        load_group<V, true>(X, smem, grp * SPB, samples_in(grp, g), g);
    cp_async_commit();
    for (int it = 0; grp < g.numGroups; ++it, grp += gridDim.x) {
        const int64_t nxt = grp + gridDim.x;
        if (nxt < g.numGroups)
            load_group<V, true>(X, smem + ((it + 1) & 1) * bufFloats, nxt * SPB, samples_in(nxt, g), g);
        cp_async_commit();
        cp_async_wait<1>(); // this group's copies (all but the newest batch) have landed
        __syncthreads();
        const int64_t b0 = grp * SPB;
        const int ns = samples_in(b0 / SPB, g);
        const float* buf = smem + (it & 1) * bufFloats;
#if STAGE
        compute_group<V>(buf, stage, ns, g);
        __syncthreads(); // staging complete; buf free for the copy issued next iteration
        for (int k = threadIdx.x; k < ns * g.P; k += THREADS)
            out[b0 * g.P + k] = stage[k];
#else
        compute_group<V>(buf, out + b0 * g.P, ns, g);
        __syncthreads(); // buf is refilled by the copy issued next iteration
#endif
    }
    cp_async_wait<0>();
#else
    const int64_t b0 = static_cast<int64_t>(blockIdx.x) * SPB;
    const int ns = samples_in(b0 / SPB, g);
    load_group<V, false>(X, smem, b0, ns, g);
    __syncthreads();
#if STAGE
    compute_group<V>(smem, stage, ns, g);
    __syncthreads();
    for (int k = threadIdx.x; k < ns * g.P; k += THREADS)
        out[b0 * g.P + k] = stage[k];
#else
    compute_group<V>(smem, out + b0 * g.P, ns, g);
#endif
#endif
}

template <int V> static int launch(const hone_args* a, Geo g)
{
    g.nv = g.D / V;
    const size_t smem
        = static_cast<size_t>((PIPE ? 2 : 1) * SPB * g.F * g.DP + (STAGE ? SPB * g.P : 0)) * sizeof(float);
    cudaError_t err;
    if (smem > 48 * 1024) {
        err = cudaFuncSetAttribute(
            dot_interaction_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        if (err != cudaSuccess)
            return static_cast<int>(err);
    }
    int64_t grid = g.numGroups;
#if PIPE
    static int numSMs = 0;
    if (numSMs == 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&numSMs, cudaDevAttrMultiProcessorCount, dev);
    }
    int perSM = 0;
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, dot_interaction_kernel<V>, THREADS, smem);
    if (err != cudaSuccess)
        return static_cast<int>(err);
    if (perSM < 1)
        return static_cast<int>(cudaErrorInvalidConfiguration);
    if (grid > static_cast<int64_t>(perSM) * numSMs)
        grid = static_cast<int64_t>(perSM) * numSMs;
#endif
    dot_interaction_kernel<V>
        <<<static_cast<unsigned>(grid), THREADS, smem, static_cast<cudaStream_t>(a->stream)>>>(
            static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), g);
    return static_cast<int>(cudaGetLastError());
}

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& X = a->inputs[0];
    Geo g {};
    g.B = X.shape[0];
    g.F = static_cast<int>(X.shape[1]);
    g.D = static_cast<int>(X.shape[2]);
    g.P = g.F * (g.F - 1) / 2;
    if (g.B == 0 || g.P == 0)
        return 0;
    g.DP = (g.D + 3) / 4 * 4 + PAD;
    const int nb = (g.F + TILE - 1) / TILE;
    g.NTILES = nb * (nb + 1) / 2;
    g.numGroups = (g.B + SPB - 1) / SPB;
    const bool vec4 = g.D % 4 == 0 && reinterpret_cast<uintptr_t>(X.data) % 16 == 0;
    return vec4 ? launch<4>(a, g) : launch<1>(a, g);
}
