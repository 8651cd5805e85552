// Bucketize, first version: one thread per element, a plain lower-bound binary search over the
// boundaries in global memory.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void bucketize_naive(const float* x, const float* bnd, int64_t* out, int64_t n, int k)
{
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float v = x[i];
    int lo = 0;
    int hi = k; // the answer lies in [lo, hi]
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (bnd[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    out[i] = lo;
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t n = a->inputs[0].shape[0];
    const int64_t k = a->inputs[1].shape[0];
    if (n <= 0)
        return 0;
    if (k > 0x7fffffff)
        return 1;
    cudaStream_t stream = (cudaStream_t)a->stream;
    const int block = 256;
    const int64_t grid = (n + block - 1) / block;
    bucketize_naive<<<static_cast<unsigned>(grid), block, 0, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const float*>(a->inputs[1].data),
        static_cast<int64_t*>(a->outputs[0].data), n, static_cast<int>(k));
    return (int)cudaGetLastError();
}
