// Linear + bias + ReLU (bf16 in and out, fp32 accumulate) for CDNA without libraries: a tiled
// FP32 GEMM. A workgroup computes a BM x BN tile of y, stepping through K in BK slices staged
// in LDS as fp32, transposed to [BK][BM + 1] and [BK][BN + 1] (the + 1 keeps the transposing
// stores off one bank); each thread holds a TM x TN block of accumulators in VGPRs and does
// TM * TN FMAs per TM + TN LDS reads. Threads = (BM / TM) * (BN / TN), a multiple of the
// 64-lane wavefront. The epilogue adds the bias, clamps at 0 and rounds to bf16 once.
// (The next step on MI200/MI300 is the matrix cores, v_mfma_f32_32x32x8bf16_1k: this seed is
// the FMA baseline the search starts from.)
// hone:knob BM = 32 | 64 | 128
// hone:knob BN = 32 | 64 | 128
// hone:knob BK = 8 | 16 | 32
// hone:knob TM = 2 | 4 | 8
// hone:knob TN = 2 | 4 | 8
// hone:require (BM / TM) * (BN / TN) % 64 == 0
// hone:require (BM / TM) * (BN / TN) <= 1024
// hone:require (BM + BN) * BK <= 8192
// hone:start BM=64 BN=64 BK=16 TM=4 TN=4
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif

namespace {

typedef long long i64;
constexpr int kThreads = (BM / TM) * (BN / TN);

__device__ inline float bf2f(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

__device__ inline uint16_t f2bf(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

__global__ void __launch_bounds__(kThreads) linear_tiled(const uint16_t* __restrict__ x, const uint16_t* __restrict__ w,
    const uint16_t* __restrict__ bias, uint16_t* __restrict__ y, int m, int n, int k)
{
    __shared__ float xs[BK][BM + 1];
    __shared__ float ws[BK][BN + 1];
    const int tx = threadIdx.x % (BN / TN); // column block of the thread
    const int ty = threadIdx.x / (BN / TN); // row block
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < k; k0 += BK) {
        // Coalesced along K (both operands are K-contiguous), transposed into LDS.
        for (int e = threadIdx.x; e < BM * BK; e += kThreads) {
            const int r = e / BK, c = e % BK;
            const int gr = row0 + r, gc = k0 + c;
            xs[c][r] = gr < m && gc < k ? bf2f(x[static_cast<i64>(gr) * k + gc]) : 0.0f;
        }
        for (int e = threadIdx.x; e < BN * BK; e += kThreads) {
            const int r = e / BK, c = e % BK;
            const int gr = col0 + r, gc = k0 + c;
            ws[c][r] = gr < n && gc < k ? bf2f(w[static_cast<i64>(gr) * k + gc]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = xs[kk][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = ws[kk][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + ty * TM + i;
        if (r >= m)
            continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tx * TN + j;
            if (c < n)
                y[static_cast<i64>(r) * n + c] = f2bf(fmaxf(acc[i][j] + bf2f(bias[c]), 0.0f));
        }
    }
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 m = a->inputs[0].shape[0];
    const i64 k = a->inputs[0].shape[1];
    const i64 n = a->inputs[1].shape[0];
    if (m <= 0 || n <= 0)
        return 0;
    if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff)
        return 1;
    const dim3 grid(static_cast<unsigned>((n + BN - 1) / BN), static_cast<unsigned>((m + BM - 1) / BM));
    linear_tiled<<<grid, kThreads, 0, static_cast<hipStream_t>(a->stream)>>>(
        static_cast<const uint16_t*>(a->inputs[0].data), static_cast<const uint16_t*>(a->inputs[1].data),
        static_cast<const uint16_t*>(a->inputs[2].data), static_cast<uint16_t*>(a->outputs[0].data),
        static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    return static_cast<int>(hipGetLastError());
}
