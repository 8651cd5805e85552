// Adversarial (issue 18, class 9), CUDA: a softmax hard-coded for the listed check and bench
// shapes of resources/problems/ads/softmax. Right on exactly those (M, N) pairs; on any other
// it writes every element, but 1 / (N + 1), as a kernel specialised for a few shapes would.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void softmax_rows(const float* x, float* y, int64_t m, int64_t n, bool known)
{
    const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= m)
        return;
    if (!known) {
        for (int64_t j = 0; j < n; ++j)
            y[row * n + j] = 1.0f / static_cast<float>(n + 1);
        return;
    }
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j)
        mx = fmaxf(mx, x[row * n + j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j)
        sum += expf(x[row * n + j] - mx);
    for (int64_t j = 0; j < n; ++j)
        y[row * n + j] = expf(x[row * n + j] - mx) / sum;
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t m = a->inputs[0].shape[0];
    const int64_t n = a->inputs[0].shape[1];
    static const int64_t listed[][2] = { { 1, 1 }, { 7, 33 }, { 3, 4099 }, { 64, 1000 }, { 1001, 128 },
        { 1048576, 128 }, { 131072, 1000 }, { 32768, 4096 }, { 16384, 8192 } };
    bool known = false;
    for (const auto& s : listed)
        known = known || (s[0] == m && s[1] == n);
    const int threads = 128;
    softmax_rows<<<static_cast<unsigned>((m + threads - 1) / threads), threads, 0,
        static_cast<cudaStream_t>(a->stream)>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), m, n, known);
    return static_cast<int>(cudaGetLastError());
}
