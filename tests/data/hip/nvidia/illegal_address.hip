// Faults on purpose (tst_hip_nvidia): writes far outside every buffer, a sticky GPU fault
// (hipErrorIllegalAddress) that must fail the candidate as runtime_error.
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

__global__ void bad(float* y)
{
    y[(1ll << 40) + threadIdx.x] = 1.0f;
}

extern "C" int hone_run(const hone_args* a)
{
    hipLaunchKernelGGL(bad, dim3(1), dim3(64), 0, static_cast<hipStream_t>(a->stream), static_cast<float*>(a->outputs[0].data));
    return static_cast<int>(hipGetLastError());
}
