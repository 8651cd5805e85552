// A hand-written CUDA candidate for the imported 05_layernorm (nn.LayerNorm over the last
// dimension, eps 1e-5, weight and bias as inputs): one block per row, the mean and then the
// variance about it (two block reductions; the second read of the row hits L1/L2), then
// (x - mean) * rstd * weight + bias.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ float blockSum(float v, float* scratch)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    __syncthreads(); // scratch may still be read from the previous reduction
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < kThreads / 32 ? scratch[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v; // every warp has the total
}

__global__ void __launch_bounds__(kThreads) layernorm_rows(const float* __restrict__ x, const float* __restrict__ w,
    const float* __restrict__ b, float* __restrict__ y, int64_t n)
{
    __shared__ float scratch[kThreads / 32];
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
    float* yr = y + static_cast<int64_t>(blockIdx.x) * n;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += kThreads)
        sum += xr[j];
    const float mean = blockSum(sum, scratch) / static_cast<float>(n);
    float sq = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += kThreads) {
        const float d = xr[j] - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(blockSum(sq, scratch) / static_cast<float>(n) + 1e-5f);
    for (int64_t j = threadIdx.x; j < n; j += kThreads)
        yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const int64_t n = a->inputs[0].shape[a->inputs[0].rank - 1];
    const int64_t rows = n > 0 ? hone_numel(&a->inputs[0]) / n : 0;
    if (rows <= 0)
        return 0;
    layernorm_rows<<<static_cast<unsigned>(rows), kThreads, 0, (cudaStream_t)a->stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const float*>(a->inputs[1].data),
        static_cast<const float*>(a->inputs[2].data), static_cast<float*>(a->outputs[0].data), n);
    return (int)cudaGetLastError();
}
