// A knob-rich variant for the engine tests: unrolling, thread count and chunking.
// hone:knob UNROLL = 1 | 2 | 4 | 8
// hone:knob THREADS = 1 | 2
// hone:knob CHUNK = 1024 | 4096 | 16384
// hone:require UNROLL * THREADS <= 8
#include <hone/kernel.h>
#include <omp.h>

#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef THREADS
#define THREADS 1
#endif
#ifndef CHUNK
#define CHUNK 4096
#endif

extern "C" int hone_run(const hone_args* args)
{
    const float* x = static_cast<const float*>(args->inputs[0].data);
    const float* b = static_cast<const float*>(args->inputs[1].data);
    float* y = static_cast<float*>(args->outputs[0].data);
    const float a = static_cast<float>(hone_param_or(args, "a", 0.0));
    const int64_t n = hone_numel(&args->inputs[0]);
#pragma omp parallel for num_threads(THREADS) schedule(static)
    for (int64_t start = 0; start < n; start += CHUNK) {
        int64_t end = start + CHUNK < n ? start + CHUNK : n;
        int64_t i = start;
        for (; i + UNROLL <= end; i += UNROLL)
#pragma GCC unroll 8
            for (int u = 0; u < UNROLL; ++u)
                y[i + u] = a * x[i + u] + b[i + u];
        for (; i < end; ++i)
            y[i] = a * x[i] + b[i];
    }
    return 0;
}
