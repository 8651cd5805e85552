#include "hone/kernel.h"

// hone:knob BLOCK = 128 | 256
__global__ void scale(const float* x, float* y, float alpha, int64_t n)
{
    const int64_t i = blockIdx.x * static_cast<int64_t>(BLOCK) + threadIdx.x;
    if (i < n)
        y[i] = x[i] * alpha;
}

extern "C" int hone_run(const hone_args* args)
{
    const int64_t n = hone_numel(&args->inputs[0]);
    const float alpha = static_cast<float>(hone_param_or(args, "alpha", 1.0));
    scale<<<(n + BLOCK - 1) / BLOCK, BLOCK, 0, static_cast<cudaStream_t>(args->stream)>>>(
        static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), alpha, n);
    return 0;
}
