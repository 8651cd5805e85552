// A hand-written CUDA candidate for the imported 01_relu: a grid-stride loop, 16-byte loads and
// stores where the tensor allows them (a multiple of 4 floats, aligned), else one float a thread.
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4)
{
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const float4 v = x[i];
        y[i] = make_float4(fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f), fmaxf(v.z, 0.0f), fmaxf(v.w, 0.0f));
    }
}

__global__ void relu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t n)
{
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        y[i] = fmaxf(x[i], 0.0f);
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t n = hone_numel(&a->outputs[0]);
    if (n <= 0)
        return 0;
    const float* x = static_cast<const float*>(a->inputs[0].data);
    float* y = static_cast<float*>(a->outputs[0].data);
    cudaStream_t stream = (cudaStream_t)a->stream;
    const int block = 256;
    const bool vec = n % 4 == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
    const int64_t work = vec ? n / 4 : n;
    int64_t grid = (work + block - 1) / block;
    if (grid > 65535)
        grid = 65535;
    if (vec)
        relu_vec4<<<static_cast<unsigned>(grid), block, 0, stream>>>(
            reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), work);
    else
        relu_scalar<<<static_cast<unsigned>(grid), block, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}
