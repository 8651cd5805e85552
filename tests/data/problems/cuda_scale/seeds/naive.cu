// One thread per element, scalar loads: the baseline.
#include <hone/kernel.h>
#include <cuda_runtime.h>

__global__ void scaleNaive(const float* x, const float* b, float* y, float a, long long n)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + b[i];
}

extern "C" int hone_run(const hone_args* args)
{
    const long long n = hone_numel(&args->inputs[0]);
    if (n == 0)
        return 0;
    const float a = (float)hone_param_or(args, "a", 0.0);
    const int block = 64;
    scaleNaive<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)args->stream>>>(
        (const float*)args->inputs[0].data, (const float*)args->inputs[1].data, (float*)args->outputs[0].data, a, n);
    return (int)cudaGetLastError();
}
