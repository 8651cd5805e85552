// HIP softmax, the baseline of tst_hip_nvidia: one thread per row, three passes over the row
// in global memory (max, sum of exponentials, normalise); no wave-level code at all.
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

__global__ void softmax_naive(const float* x, float* y, int64_t m, int64_t n)
{
    const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= m)
        return;
    const float* xr = x + row * n;
    float* yr = y + row * n;
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j)
        mx = fmaxf(mx, xr[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j)
        sum += expf(xr[j] - mx);
    for (int64_t j = 0; j < n; ++j)
        yr[j] = expf(xr[j] - mx) / sum;
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t m = a->inputs[0].shape[0];
    const int64_t n = a->inputs[0].shape[1];
    if (m <= 0 || n <= 0)
        return 0;
    const int block = 128;
    hipLaunchKernelGGL(softmax_naive, dim3(static_cast<unsigned>((m + block - 1) / block)), dim3(block), 0,
        static_cast<hipStream_t>(a->stream), static_cast<const float*>(a->inputs[0].data),
        static_cast<float*>(a->outputs[0].data), m, n);
    return static_cast<int>(hipGetLastError());
}
