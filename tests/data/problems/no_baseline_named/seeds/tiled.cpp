#include "hone/kernel.h"

extern "C" int hone_run(const hone_args* args)
{
    const float* x = static_cast<const float*>(args->inputs[0].data);
    float* y = static_cast<float*>(args->outputs[0].data);
    const float alpha = static_cast<float>(hone_param_or(args, "alpha", 1.0));
    const int64_t n = hone_numel(&args->inputs[0]);
    for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] * alpha;
    return 0;
}
