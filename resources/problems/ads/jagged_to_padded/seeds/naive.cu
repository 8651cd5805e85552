// Jagged to padded, first version: one thread per output element; each finds its sequence, row
// and column by division and either copies the value or writes the padding.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void jagged_to_padded_naive(const float* values, const int64_t* offsets, float* out,
    int64_t total, int64_t maxl, int64_t d, float pad)
{
    const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= total)
        return;
    const int64_t col = e % d;
    const int64_t row = e / d;
    const int64_t l = row % maxl;
    const int64_t b = row / maxl;
    const int64_t start = offsets[b];
    const int64_t len = offsets[b + 1] - start;
    out[e] = l < len ? values[(start + l) * d + col] : pad;
}

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& out = a->outputs[0];
    const int64_t b = out.shape[0];
    const int64_t maxl = out.shape[1];
    const int64_t d = out.shape[2];
    const float pad = static_cast<float>(hone_param_or(a, "padding_value", -1.0));
    const int64_t total = b * maxl * d;
    if (total <= 0)
        return 0;
    cudaStream_t stream = (cudaStream_t)a->stream;
    const int block = 256;
    const int64_t grid = (total + block - 1) / block;
    jagged_to_padded_naive<<<static_cast<unsigned>(grid), block, 0, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const int64_t*>(a->inputs[1].data),
        static_cast<float*>(out.data), total, maxl, d, pad);
    return (int)cudaGetLastError();
}
