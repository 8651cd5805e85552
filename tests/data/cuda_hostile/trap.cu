// A device-side trap: the kernel aborts.
#include <hone/kernel.h>
#include <cuda_runtime.h>
__global__ void boom() { __trap(); }
extern "C" int hone_run(const hone_args* args)
{
    boom<<<1, 1, 0, (cudaStream_t)args->stream>>>();
    return (int)cudaGetLastError();
}
