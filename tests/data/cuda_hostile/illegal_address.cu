// Writes far outside every buffer: CUDA_ERROR_ILLEGAL_ADDRESS, a sticky fault.
#include <hone/kernel.h>
#include <cuda_runtime.h>
__global__ void bad(float* y) { y[(1ll << 40) + threadIdx.x] = 1.0f; }
extern "C" int hone_run(const hone_args* args)
{
    bad<<<1, 32, 0, (cudaStream_t)args->stream>>>((float*)args->outputs[0].data);
    return (int)cudaGetLastError();
}
