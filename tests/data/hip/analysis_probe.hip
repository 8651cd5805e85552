// A fixed kernel whose code-object figures tst_hip compares with numbers read by hand from
// llvm-readelf-15 --notes (see the test): 4 KiB of static LDS, an MFMA that puts its
// accumulators in AGPRs on gfx90a, and a private array indexed at run time, which lives in
// scratch.
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

typedef float f32x4 __attribute__((ext_vector_type(4)));

__global__ void __launch_bounds__(256) probe(const float* __restrict__ x, float* __restrict__ y, int pick)
{
    __shared__ float tile[1024];
    float priv[64];
    const int t = threadIdx.x;
    for (int i = 0; i < 4; ++i)
        tile[t + 256 * i] = x[blockIdx.x * 1024 + t + 256 * i];
    for (int i = 0; i < 64; ++i)
        priv[i] = x[i * 7 + t];
    __syncthreads();
    f32x4 acc = { 0, 0, 0, 0 };
    for (int k = 0; k < 16; ++k)
        acc = __builtin_amdgcn_mfma_f32_4x4x1f32(tile[(t + k) & 1023], tile[(t * 3 + k) & 1023], acc, 0, 0, 0);
    y[blockIdx.x * 256 + t] = acc[0] + acc[1] + acc[2] + acc[3] + priv[(pick + t) & 63];
}

extern "C" int hone_run(const hone_args* a)
{
    const int n = static_cast<int>(a->outputs[0].shape[0]);
    probe<<<(n + 255) / 256, 256, 0, static_cast<hipStream_t>(a->stream)>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), 3);
    return static_cast<int>(hipGetLastError());
}
