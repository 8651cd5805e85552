// Embedding bag (sum), first version: one thread; for each bag, zero the output row and add
// the table row of every index in the bag into it.
#include "hone/kernel.h"

#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    const hone_tensor& table = args->inputs[0];
    const int64_t* idx = static_cast<const int64_t*>(args->inputs[1].data);
    const int64_t* off = static_cast<const int64_t*>(args->inputs[2].data);
    const hone_tensor& out = args->outputs[0];
    const int64_t D = table.shape[1];
    const int64_t B = out.shape[0];
    const float* tp = static_cast<const float*>(table.data);
    float* op = static_cast<float*>(out.data);

    for (int64_t b = 0; b < B; ++b) {
        float* o = op + b * D;
        for (int64_t d = 0; d < D; ++d)
            o[d] = 0.0f;
        for (int64_t k = off[b]; k < off[b + 1]; ++k) {
            const float* row = tp + idx[k] * D;
            for (int64_t d = 0; d < D; ++d)
                o[d] += row[d];
        }
    }
    return 0;
}
