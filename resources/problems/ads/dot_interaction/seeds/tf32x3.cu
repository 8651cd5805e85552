// dot_interaction on the tensor cores at float32 accuracy: one warp per sample computes the
// strict lower triangle of X[b] X[b]^T with mma.sync m16n8k8 TF32, each operand split into a
// TF32 head and a TF32 tail (x = hi + lo, |lo| <= 2^-11 |x|) and each product taken as
// hi*hi + hi*lo + lo*hi ("3xTF32"): the dropped lo*lo term is below 2^-22 |a||b|, about float32
// rounding, so the problem's float32 tolerance holds (one plain TF32 product would not).
//
// The sample's rows are padded to 32 (F <= 32): M tiles of 16 rows (mi = 0, 1) by N tiles of
// 8 rows (nj = 0..3), of which the six that reach below the diagonal are computed. Lane
// (g = lane / 4, t = lane % 4) needs rows g, g + 8, g + 16 and g + 24 in every fragment, A's and
// B's alike, so it loads exactly those rows, 16 bytes at a time (columns 16u + 4t .. + 3), and
// nothing is loaded twice or staged in shared memory. The order of the K dimension is free in a
// dot product: k-step 2u + h takes columns 16u + 4t + 2h (k = t) and + 1 (k = t + 4), the same
// for A and B, so every load is a full 16-byte vector and a row's four lanes read 64
// contiguous bytes. The 24 results per lane go through a 1.4 KB shared buffer so that the warp
// writes its 351 outputs with coalesced stores.
//   WPB     warps (samples in flight) per block.
//   UNROLL  16-column groups whose loads are issued before the first is used.
//   PERSIST 0: one sample per warp; 1: as many blocks as fit at once, warps loop (grid stride).
// Shapes outside F <= 32, D % 16 == 0 with 16-byte aligned rows take a general shared-memory
// kernel (register tiles of 4 x 4 pairs, any F and D).
//
// hone:knob WPB = 4 | 2 | 8  acts=launch_shape
// hone:knob UNROLL = 2 | 1 | 4 | 8  acts=memory_pipeline
// hone:knob PERSIST = 0 | 1  acts=launch_shape
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef WPB
#define WPB 4
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef PERSIST
#define PERSIST 0
#endif

namespace {

constexpr int PMAX = 32 * 31 / 2; // outputs per sample at F = 32
constexpr int kUnroll = UNROLL;   // #pragma unroll takes a constant expression, not a macro

__device__ __forceinline__ void split(float x, unsigned& hi, unsigned& lo)
{
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(hi) : "f"(x));
    const float rest = x - __uint_as_float(hi);
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(lo) : "f"(rest));
}

__device__ __forceinline__ void mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
    unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The six tiles below the diagonal, (mi, nj) with 16 * mi + 15 > 8 * nj: (0, 0), (0, 1), then
// (1, 0) .. (1, 3).
__device__ constexpr int tileMi(int i) { return i < 2 ? 0 : 1; }
__device__ constexpr int tileNj(int i) { return i < 2 ? i : i - 2; }

__global__ void __launch_bounds__(32 * WPB) dot_interaction_tf32x3(
    const float* __restrict__ X, float* __restrict__ out, int64_t B, int F, int D, int P)
{
    __shared__ float staged[WPB][PMAX];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x / 32;
    const int g = lane >> 2;
    const int t = lane & 3;
    float* mine = staged[warp];
#if PERSIST
    const int64_t stride = static_cast<int64_t>(gridDim.x) * WPB;
#else
    const int64_t stride = B;
#endif
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * WPB + warp; b < B; b += stride) {
        const float* xb = X + b * F * D;
        float acc[6][4];
#pragma unroll
        for (int i = 0; i < 6; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][e] = 0.0f;
        const int groups = D / 16;
#pragma unroll kUnroll
        for (int u = 0; u < groups; ++u) {
            float4 v[4]; // rows g + 8q, columns 16u + 4t .. + 3
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int r = g + 8 * q;
                v[q] = r < F ? __ldg(reinterpret_cast<const float4*>(xb + r * D + 16 * u + 4 * t))
                             : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                unsigned hi0[4], lo0[4], hi1[4], lo1[4]; // k = t and k = t + 4, per row q
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    split(h ? v[q].z : v[q].x, hi0[q], lo0[q]);
                    split(h ? v[q].w : v[q].y, hi1[q], lo1[q]);
                }
#pragma unroll
                for (int i = 0; i < 6; ++i) {
                    const int qa = 2 * tileMi(i); // A rows 16 mi + g (q = qa) and + 8 (q = qa + 1)
                    const int qb = tileNj(i);     // B row (an output column) 8 nj + g
                    // Small terms first, so the accumulator meets them before the large one.
                    mma(acc[i], lo0[qa], lo0[qa + 1], lo1[qa], lo1[qa + 1], hi0[qb], hi1[qb]);
                    mma(acc[i], hi0[qa], hi0[qa + 1], hi1[qa], hi1[qa + 1], lo0[qb], lo1[qb]);
                    mma(acc[i], hi0[qa], hi0[qa + 1], hi1[qa], hi1[qa + 1], hi0[qb], hi1[qb]);
                }
            }
        }
        // c0, c1: row 16 mi + g, columns 8 nj + 2t and + 1; c2, c3: the same, row + 8.
#pragma unroll
        for (int i = 0; i < 6; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = 16 * tileMi(i) + g + (e >= 2 ? 8 : 0);
                const int col = 8 * tileNj(i) + 2 * t + (e & 1);
                if (col < row && row < F)
                    mine[row * (row - 1) / 2 + col] = acc[i][e];
            }
        __syncwarp();
        for (int p = lane; p < P; p += 32)
            out[b * P + p] = mine[p];
        __syncwarp(); // the next sample overwrites the buffer
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

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& X = a->inputs[0];
    const int64_t B = X.shape[0];
    const int F = static_cast<int>(X.shape[1]);
    const int D = static_cast<int>(X.shape[2]);
    const int P = F * (F - 1) / 2;
    cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    if (B == 0 || P == 0)
        return 0;
    if (F <= 32 && D % 16 == 0 && reinterpret_cast<uintptr_t>(X.data) % 16 == 0) {
        int64_t blocks = (B + WPB - 1) / WPB;
#if PERSIST
        static int limit = 0; // blocks resident at once on this GPU
        if (limit == 0) {
            int dev = 0, sms = 0, perSM = 0;
            cudaGetDevice(&dev);
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
            const cudaError_t err
                = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, dot_interaction_tf32x3, 32 * WPB, 0);
            if (err != cudaSuccess)
                return static_cast<int>(err);
            limit = (perSM > 0 ? perSM : 1) * sms;
        }
        if (blocks > limit)
            blocks = limit;
#endif
        dot_interaction_tf32x3<<<static_cast<unsigned>(blocks), 32 * WPB, 0, stream>>>(
            static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), B, F, D, P);
        return static_cast<int>(cudaGetLastError());
    }
    return launch_any(static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), B, F, D, P,
        static_cast<cudaStream_t>(a->stream));
}
