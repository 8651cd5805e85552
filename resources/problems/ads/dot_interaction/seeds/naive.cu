// dot_interaction, first version: one thread per output element (sample b, pair p). The thread
// recovers (i, j) from p = i*(i-1)/2 + j and walks both rows of X[b] in global memory with
// scalar loads, accumulating in float.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

__global__ void dot_interaction_naive(const float* X, float* out, int64_t B, int F, int D, int P)
{
    const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= B * P)
        return;
    const int64_t b = t / P;
    const int p = static_cast<int>(t - b * P);
    // i is the largest integer with i*(i-1)/2 <= p
    int i = static_cast<int>((1.0 + sqrt(1.0 + 8.0 * p)) * 0.5);
    while (i * (i - 1) / 2 > p)
        --i;
    while ((i + 1) * i / 2 <= p)
        ++i;
    const int j = p - i * (i - 1) / 2;
    const float* xi = X + (b * F + i) * D;
    const float* xj = X + (b * F + j) * D;
    float s = 0.0f;
    for (int d = 0; d < D; ++d)
        s += xi[d] * xj[d];
    out[t] = s;
}

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& X = a->inputs[0];
    const int64_t B = X.shape[0];
    const int F = static_cast<int>(X.shape[1]);
    const int D = static_cast<int>(X.shape[2]);
    const int P = F * (F - 1) / 2;
    const int64_t total = B * P;
    if (total == 0)
        return 0;
    cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    const int threads = 256;
    const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
    dot_interaction_naive<<<blocks, threads, 0, stream>>>(
        static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), B, F, D, P);
    return static_cast<int>(cudaGetLastError());
}
