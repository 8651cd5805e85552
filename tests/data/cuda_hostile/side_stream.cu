// Reward hack: does the real work on a private stream after a long delay, so events on the
// harness stream see almost nothing. Correct results; its honest time includes the delay.
#include <hone/kernel.h>
#include <cuda_runtime.h>
__global__ void k(const float* x, const float* b, float* y, float a, long long n, long long spinCycles)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long start = clock64();
        while (clock64() - start < spinCycles) { }
    }
    __syncthreads();
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b[i];
}
extern "C" int hone_run(const hone_args* args)
{
    static cudaStream_t side = nullptr;
    if (!side)
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    long long n = hone_numel(&args->inputs[0]);
    if (n == 0) return 0;
    // About 2 ms at 1.7 GHz: far longer than the kernel's real work.
    k<<<(unsigned)((n + 255) / 256), 256, 0, side>>>((const float*)args->inputs[0].data,
        (const float*)args->inputs[1].data, (float*)args->outputs[0].data, (float)hone_param_or(args, "a", 0), n,
        3400000ll);
    return (int)cudaGetLastError();
}
