// Leaves the last element unwritten.
#include <hone/kernel.h>
#include <cuda_runtime.h>
__global__ void k(const float* x, const float* b, float* y, float a, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i + 1 < n) y[i] = a * x[i] + b[i];
}
extern "C" int hone_run(const hone_args* args)
{
    long long n = hone_numel(&args->inputs[0]);
    if (n == 0) return 0;
    k<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)args->stream>>>((const float*)args->inputs[0].data,
        (const float*)args->inputs[1].data, (float*)args->outputs[0].data, (float)hone_param_or(args, "a", 0), n);
    return (int)cudaGetLastError();
}
