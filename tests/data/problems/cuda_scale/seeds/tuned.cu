// Grid-stride, vectorised: BLOCK threads, VEC floats per access, WAVES blocks per SM.
#include <hone/kernel.h>
#include <cuda_runtime.h>

// hone:knob BLOCK = 128 | 256 | 512
// hone:knob VEC = 1 | 2 | 4
// hone:knob WAVES = 2 | 4 | 8
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef WAVES
#define WAVES 4
#endif

template <int V> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<2> { using T = float2; };
template <> struct Vec<4> { using T = float4; };

__device__ inline float axpb(float a, float x, float b) { return a * x + b; }
__device__ inline float2 axpb(float a, float2 x, float2 b) { return make_float2(a * x.x + b.x, a * x.y + b.y); }
__device__ inline float4 axpb(float a, float4 x, float4 b)
{
    return make_float4(a * x.x + b.x, a * x.y + b.y, a * x.z + b.z, a * x.w + b.w);
}

__global__ void __launch_bounds__(BLOCK) scaleTuned(const float* __restrict__ x, const float* __restrict__ b,
    float* __restrict__ y, float a, long long n)
{
    using T = typename Vec<VEC>::T;
    const long long nv = n / VEC;
    const long long stride = (long long)gridDim.x * BLOCK;
    for (long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; i < nv; i += stride)
        reinterpret_cast<T*>(y)[i] = axpb(a, reinterpret_cast<const T*>(x)[i], reinterpret_cast<const T*>(b)[i]);
    // The tail that does not fill a vector.
    for (long long i = nv * VEC + blockIdx.x * (long long)BLOCK + threadIdx.x; i < n; i += stride)
        y[i] = a * x[i] + b[i];
}

extern "C" int hone_run(const hone_args* args)
{
    const long long n = hone_numel(&args->inputs[0]);
    if (n == 0)
        return 0;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    long long blocks = (n / VEC + BLOCK - 1) / BLOCK;
    blocks = blocks < 1 ? 1 : blocks;
    const long long cap = (long long)sms * WAVES * (2048 / BLOCK);
    scaleTuned<<<(unsigned)(blocks < cap ? blocks : cap), BLOCK, 0, (cudaStream_t)args->stream>>>(
        (const float*)args->inputs[0].data, (const float*)args->inputs[1].data, (float*)args->outputs[0].data,
        (float)hone_param_or(args, "a", 0.0), n);
    return (int)cudaGetLastError();
}
