// Embedding bag (sum), first version: one thread per bag, like a loop over bags on the CPU. The
// thread walks the output columns one at a time and, for each, adds that column of every table
// row in the bag. Neighbouring threads read unrelated rows, so nothing is coalesced.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void embedding_bag_sum_naive(const float* table, const int64_t* indices,
    const int64_t* offsets, float* out, int64_t nbags, int64_t d)
{
    const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (b >= nbags)
        return;
    const int64_t beg = offsets[b];
    const int64_t end = offsets[b + 1];
    for (int64_t col = 0; col < d; ++col) {
        float acc = 0.0f;
        for (int64_t k = beg; k < end; ++k)
            acc += table[indices[k] * d + col];
        out[b * d + col] = acc;
    }
}

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& out = a->outputs[0];
    const int64_t nbags = out.shape[0];
    const int64_t d = out.shape[1];
    if (nbags <= 0 || d <= 0)
        return 0;
    cudaStream_t stream = (cudaStream_t)a->stream;
    const int block = 128;
    const int64_t grid = (nbags + block - 1) / block;
    embedding_bag_sum_naive<<<static_cast<unsigned>(grid), block, 0, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const int64_t*>(a->inputs[1].data),
        static_cast<const int64_t*>(a->inputs[2].data), static_cast<float*>(out.data), nbags, d);
    return (int)cudaGetLastError();
}
