// Reference for feature_hash: buckets[i] = fmix64(ids[i] ^ salt) % num_buckets, all in uint64_t.
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>

static uint64_t fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 1 || args->num_outputs != 1)
        return 1;
    const hone_tensor& ids = args->inputs[0];
    const hone_tensor& out = args->outputs[0];
    if (ids.dtype != HONE_I64 || out.dtype != HONE_I64 || ids.rank != 1 || out.rank != 1)
        return 1;
    const int64_t N = ids.shape[0];
    if (out.shape[0] != N)
        return 1;
    const double salt_d = hone_param_or(args, "salt", NAN);
    const double nb_d = hone_param_or(args, "num_buckets", NAN);
    // Both must be exact non-negative integers; num_buckets in [1, 2^31).
    if (!(salt_d >= 0 && salt_d < 9007199254740992.0 && salt_d == std::floor(salt_d)))
        return 1;
    if (!(nb_d >= 1 && nb_d < 2147483648.0 && nb_d == std::floor(nb_d)))
        return 1;
    const uint64_t salt = static_cast<uint64_t>(salt_d);
    const uint64_t nb = static_cast<uint64_t>(nb_d);
    const int64_t* in = static_cast<const int64_t*>(ids.data);
    int64_t* o = static_cast<int64_t*>(out.data);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < N; ++i)
        o[i] = static_cast<int64_t>(fmix64(static_cast<uint64_t>(in[i]) ^ salt) % nb);
    return 0;
}
