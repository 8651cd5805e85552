// DLRM dot interaction for CDNA: one workgroup per sample; the sample's F x D block is staged in
// LDS (row stride D + PAD floats: PAD = 1 spreads the rows a thread pair reads over LDS banks)
// with coalesced loads, then each thread computes pairs p = tid, tid + BLOCK, ... of the strict
// lower triangle, unpacked as i = floor((1 + sqrt(1 + 8p)) / 2), j = p - i(i-1)/2, with UNROLL
// partial sums over d. Blocks larger than LDS_KIB read X from global memory (L2) instead.
// hone:knob BLOCK = 64 | 128 | 256 | 512  acts=launch_shape
// hone:knob PAD = 0 | 1
// hone:knob UNROLL = 1 | 2 | 4  acts=work_per_thread
// hone:knob LDS_KIB = 16 | 32 | 64
// 27 x 129 floats is 13.9 KiB: four workgroups per CU at LDS_KIB = 16.
// hone:start BLOCK=256 PAD=1 UNROLL=4 LDS_KIB=16
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef PAD
#define PAD 1
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef LDS_KIB
#define LDS_KIB 16
#endif

namespace {

typedef long long i64;

__device__ inline void unpair(int p, int& i, int& j)
{
    i = static_cast<int>((1.0f + sqrtf(1.0f + 8.0f * static_cast<float>(p))) * 0.5f);
    while (i * (i - 1) / 2 > p)
        --i;
    while ((i + 1) * i / 2 <= p)
        ++i;
    j = p - i * (i - 1) / 2;
}

template <bool Lds>
__global__ void __launch_bounds__(BLOCK) dot_pairs(const float* __restrict__ x, float* __restrict__ out, int f, int d, int pairs)
{
    extern __shared__ float tile[];
    const i64 b = blockIdx.x;
    const float* xb = x + b * f * d;
    const float* src = xb;
    int stride = d;
    if constexpr (Lds) {
        stride = d + PAD;
        for (int e = threadIdx.x; e < f * d; e += BLOCK)
            tile[(e / d) * stride + e % d] = xb[e];
        __syncthreads();
        src = tile;
    }
    for (int p = threadIdx.x; p < pairs; p += BLOCK) {
        int i, j;
        unpair(p, i, j);
        const float* ri = src + i * stride;
        const float* rj = src + j * stride;
        float acc[UNROLL] = {};
        int k = 0;
        for (; k + UNROLL <= d; k += UNROLL)
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                acc[u] = fmaf(ri[k + u], rj[k + u], acc[u]);
        for (; k < d; ++k)
            acc[0] = fmaf(ri[k], rj[k], acc[0]);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            s += acc[u];
        out[b * pairs + p] = s;
    }
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 b = a->inputs[0].shape[0];
    const i64 f = a->inputs[0].shape[1];
    const i64 d = a->inputs[0].shape[2];
    const i64 pairs = a->outputs[0].shape[1];
    if (b <= 0 || pairs <= 0)
        return 0;
    if (f > 4096 || d > (1 << 20) || b > 0x7fffffff)
        return 1;
    hipStream_t s = static_cast<hipStream_t>(a->stream);
    const float* x = static_cast<const float*>(a->inputs[0].data);
    float* out = static_cast<float*>(a->outputs[0].data);
    const size_t lds = static_cast<size_t>(f) * static_cast<size_t>(d + PAD) * sizeof(float);
    if (lds <= static_cast<size_t>(LDS_KIB) * 1024)
        dot_pairs<true><<<static_cast<unsigned>(b), BLOCK, lds, s>>>(x, out, static_cast<int>(f), static_cast<int>(d),
            static_cast<int>(pairs));
    else
        dot_pairs<false><<<static_cast<unsigned>(b), BLOCK, 0, s>>>(x, out, static_cast<int>(f), static_cast<int>(d),
            static_cast<int>(pairs));
    return static_cast<int>(hipGetLastError());
}
