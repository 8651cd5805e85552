// Never finishes: the executor's stage limit must kill the worker and free the GPU.
#include <hone/kernel.h>
#include <cuda_runtime.h>
__global__ void spin(volatile int* flag) { while (*flag == 0) { } }
extern "C" int hone_run(const hone_args* args)
{
    // The poisoned output is never zero-free of this pattern: spin on a word that stays 0.
    cudaMemsetAsync(args->workspace, 0, 4, (cudaStream_t)args->stream);
    spin<<<1, 1, 0, (cudaStream_t)args->stream>>>((volatile int*)args->workspace);
    return (int)cudaGetLastError();
}
