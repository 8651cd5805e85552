// A hand-written candidate for the imported 01_relu.
#include "hone/kernel.h"

#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    const float* x = static_cast<const float*>(args->inputs[0].data);
    float* y = static_cast<float*>(args->outputs[0].data);
    const int64_t n = hone_numel(&args->outputs[0]);
    for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return 0;
}
