// Writes zeros to every output, whatever the problem: must fail wherever the reference's
// output is not all zeros.
#include "hone/kernel.h"

#include <cstring>

extern "C" int hone_run(const hone_args* args)
{
    static const int kSize[] = { 4, 2, 2, 8, 4, 8, 1 };
    for (int32_t i = 0; i < args->num_outputs; ++i) {
        const hone_tensor& t = args->outputs[i];
        std::memset(t.data, 0, static_cast<size_t>(hone_numel(&t)) * kSize[t.dtype]);
    }
    return 0;
}
