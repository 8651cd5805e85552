// y = a * x + b behind HOST_US microseconds of host work in hone_run, standing in for a caller
// whose launch path is slow (argument checks, a heuristic query, Python and guards in a
// framework). Timed as GPU time, the host work is hidden behind the delay queued before the
// start event and costs nothing; timed with a synchronize before the start, it is counted.
#include <hone/kernel.h>
#include <cuda_runtime.h>

#include <chrono>

#ifndef HOST_US
#define HOST_US 0
#endif

__global__ void scale(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y, float a,
    long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = a * x[i] + b[i];
}

extern "C" int hone_run(const hone_args* args)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(HOST_US);
    while (std::chrono::steady_clock::now() < until) {
    }
    const long long n = hone_numel(&args->inputs[0]);
    if (n == 0)
        return 0;
    const long long blocks = (n + 255) / 256;
    scale<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, (cudaStream_t)args->stream>>>(
        (const float*)args->inputs[0].data, (const float*)args->inputs[1].data, (float*)args->outputs[0].data,
        (float)hone_param_or(args, "a", 0.0), n);
    return (int)cudaGetLastError();
}
