// A hand-written CUDA candidate for the imported 06_softmax (softmax over dim 1 of a 2-D tensor):
// one block per row; each thread keeps an online (max, sum of exponentials) pair over its
// strided part of the row, the block combines the pairs, and a second pass writes
// exp(x - max) / sum. The second read of the row hits L2.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ void combine(float& m, float& s, float om, float os)
{
    const float nm = fmaxf(m, om);
    s = (m == -INFINITY ? 0.0f : s * __expf(m - nm)) + (om == -INFINITY ? 0.0f : os * __expf(om - nm));
    m = nm;
}

__global__ void __launch_bounds__(kThreads) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t n)
{
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
    float* yr = y + static_cast<int64_t>(blockIdx.x) * n;
    float m = -INFINITY;
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += kThreads) {
        const float v = xr[j];
        combine(m, s, v, 1.0f);
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float om = __shfl_xor_sync(0xffffffffu, m, off);
        const float os = __shfl_xor_sync(0xffffffffu, s, off);
        combine(m, s, om, os);
    }
    __shared__ float sm[kThreads / 32];
    __shared__ float ss[kThreads / 32];
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < kThreads / 32 ? sm[lane] : -INFINITY;
        s = lane < kThreads / 32 ? ss[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) {
            const float om = __shfl_xor_sync(0xffffffffu, m, off);
            const float os = __shfl_xor_sync(0xffffffffu, s, off);
            combine(m, s, om, os);
        }
        if (lane == 0) {
            sm[0] = m;
            ss[0] = s;
        }
    }
    __syncthreads();
    const float rowMax = sm[0];
    const float inv = 1.0f / ss[0];
    for (int64_t j = threadIdx.x; j < n; j += kThreads)
        yr[j] = __expf(xr[j] - rowMax) * inv;
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const int64_t m = a->inputs[0].shape[0];
    const int64_t n = a->inputs[0].shape[1];
    if (m <= 0 || n <= 0)
        return 0;
    softmax_rows<<<static_cast<unsigned>(m), kThreads, 0, (cudaStream_t)a->stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), n);
    return (int)cudaGetLastError();
}
