#include <hone/kernel.h>

extern "C" int hone_run(const hone_args* args)
{
    const float* x = static_cast<const float*>(args->inputs[0].data);
    const float* b = static_cast<const float*>(args->inputs[1].data);
    float* y = static_cast<float*>(args->outputs[0].data);
    double a = hone_param_or(args, "a", 0.0);
    int64_t n = hone_numel(&args->inputs[0]);
    for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<float>(a * x[i] + b[i]);
    return 0;
}
