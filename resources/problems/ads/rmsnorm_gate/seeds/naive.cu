// rmsnorm_gate, first version: one thread per row, scalar bf16 loads. The thread sums x^2 over
// its row, then walks the row again and writes x * rstd * w * silu(g), all in float.
#include <hone/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void rmsnorm_gate_naive(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* g,
    __nv_bfloat16* y, int64_t M, int64_t N, float eps)
{
    const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= M)
        return;
    const __nv_bfloat16* xr = x + row * N;
    const __nv_bfloat16* gr = g + row * N;
    __nv_bfloat16* yr = y + row * N;
    float ss = 0.0f;
    for (int64_t j = 0; j < N; ++j) {
        const float v = __bfloat162float(xr[j]);
        ss += v * v;
    }
    const float rstd = 1.0f / sqrtf(ss / static_cast<float>(N) + eps);
    for (int64_t j = 0; j < N; ++j) {
        const float gv = __bfloat162float(gr[j]);
        const float silu = gv / (1.0f + expf(-gv));
        yr[j] = __float2bfloat16(__bfloat162float(xr[j]) * rstd * __bfloat162float(w[j]) * silu);
    }
}

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& x = a->inputs[0];
    const int64_t M = x.shape[0];
    const int64_t N = x.shape[1];
    if (M == 0 || N == 0)
        return 0;
    const float eps = static_cast<float>(hone_param_or(a, "eps", 1e-6));
    cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    const int threads = 128;
    const unsigned blocks = static_cast<unsigned>((M + threads - 1) / threads);
    rmsnorm_gate_naive<<<blocks, threads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x.data),
        static_cast<const __nv_bfloat16*>(a->inputs[1].data),
        static_cast<const __nv_bfloat16*>(a->inputs[2].data), static_cast<__nv_bfloat16*>(a->outputs[0].data),
        M, N, eps);
    return static_cast<int>(cudaGetLastError());
}
