// Adversarial (issue 18, class 9), CUDA: softmax without the max subtraction, for
// resources/problems/ads/softmax. Right on the listed inputs (normal, std 3), NaN when |x| is
// large (exp overflows: inf / inf) or very negative (exp underflows: 0 / 0).
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void softmax_no_max(const float* x, float* y, int64_t m, int64_t n)
{
    const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= m)
        return;
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j)
        sum += expf(x[row * n + j]);
    for (int64_t j = 0; j < n; ++j)
        y[row * n + j] = expf(x[row * n + j]) / sum;
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t m = a->inputs[0].shape[0];
    const int64_t n = a->inputs[0].shape[1];
    const int threads = 128;
    softmax_no_max<<<static_cast<unsigned>((m + threads - 1) / threads), threads, 0,
        static_cast<cudaStream_t>(a->stream)>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), m, n);
    return static_cast<int>(cudaGetLastError());
}
