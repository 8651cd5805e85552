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
// Shapes outside F <= 32, D % 16 == 0 with 16-byte aligned rows take a one-thread-per-output
// kernel.
//
// hone:knob WPB = 4 | 2 | 8
// hone:knob UNROLL = 2 | 1 | 4 | 8
// hone:knob PERSIST = 0 | 1
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

// Any shape: one thread per output.
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
    float s = 0.0f;
    for (int d = 0; d < D; ++d)
        s = fmaf(xi[d], xj[d], s);
    out[t] = s;
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
    const int64_t total = B * P;
    dot_interaction_plain<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
        static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), B, F, D, P);
    return static_cast<int>(cudaGetLastError());
}
