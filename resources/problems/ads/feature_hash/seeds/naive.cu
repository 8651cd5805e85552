// Feature hash, first version: one thread per id, plain 64-bit loads and stores, the remainder
// with the '%' operator (a 64-bit division by a run-time divisor).
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void feature_hash_naive(const int64_t* ids, int64_t* buckets, int64_t n, uint64_t salt,
    uint64_t nb)
{
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint64_t h = static_cast<uint64_t>(ids[i]) ^ salt;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    buckets[i] = static_cast<int64_t>(h % nb);
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t n = a->inputs[0].shape[0];
    const uint64_t salt = static_cast<uint64_t>(hone_param_or(a, "salt", 0.0));
    const uint64_t nb = static_cast<uint64_t>(hone_param_or(a, "num_buckets", 1.0));
    if (n <= 0)
        return 0;
    if (nb == 0)
        return 1;
    cudaStream_t stream = (cudaStream_t)a->stream;
    const int block = 256;
    const int64_t grid = (n + block - 1) / block;
    feature_hash_naive<<<static_cast<unsigned>(grid), block, 0, stream>>>(
        static_cast<const int64_t*>(a->inputs[0].data), static_cast<int64_t*>(a->outputs[0].data), n,
        salt, nb);
    return (int)cudaGetLastError();
}
