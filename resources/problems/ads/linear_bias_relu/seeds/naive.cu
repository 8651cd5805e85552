// linear_bias_relu, first version: one thread per output y[m, n], a float loop over K with
// scalar bf16 loads of x[m, :] and W[n, :], then bias and ReLU. Threads of a warp take
// consecutive n (consecutive rows of W), so W is read through the L1 cache, not coalesced.
#include <hone/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void linear_bias_relu_naive(const __nv_bfloat16* x, const __nv_bfloat16* W,
    const __nv_bfloat16* bias, __nv_bfloat16* y, int M, int N, int K)
{
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const __nv_bfloat16* xr = x + static_cast<int64_t>(m) * K;
    const __nv_bfloat16* wr = W + static_cast<int64_t>(n) * K;
    float s = 0.0f;
    for (int k = 0; k < K; ++k)
        s += __bfloat162float(xr[k]) * __bfloat162float(wr[k]);
    s += __bfloat162float(bias[n]);
    y[static_cast<int64_t>(m) * N + n] = __float2bfloat16(s > 0.0f ? s : 0.0f);
}

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& x = a->inputs[0];
    const int M = static_cast<int>(x.shape[0]);
    const int K = static_cast<int>(x.shape[1]);
    const int N = static_cast<int>(a->inputs[1].shape[0]);
    if (M == 0 || N == 0)
        return 0;
    cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    const dim3 threads(32, 8);
    const dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    linear_bias_relu_naive<<<blocks, threads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x.data),
        static_cast<const __nv_bfloat16*>(a->inputs[1].data),
        static_cast<const __nv_bfloat16*>(a->inputs[2].data), static_cast<__nv_bfloat16*>(a->outputs[0].data),
        M, N, K);
    return static_cast<int>(cudaGetLastError());
}
