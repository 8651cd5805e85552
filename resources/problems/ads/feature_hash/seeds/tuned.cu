// Feature hash, tunable. Each thread handles ITEMS vectors of VEC ids (VEC = 2: 16-byte loads and
// stores of ulonglong2), issuing all its loads before any arithmetic so that ITEMS loads are in
// flight per thread. A block's tile is BLOCK * ITEMS vectors, item i of thread t being vector
// tile_start + i * BLOCK + t (coalesced across the block).
//   GRID  0: one block per tile; 1: a grid-stride loop over tiles with as many blocks as fit
//         on the device at once.
//   MOD   0: h % num_buckets (64-bit division by a run-time value, a long instruction sequence);
//         1: Barrett reduction with the reciprocal m = floor((2^64 - 1) / num_buckets) computed
//         on the host: q = umulhi(h, m) is floor(h / nb) or one less, so one conditional
//         subtraction fixes the remainder.
//   HINT  0: plain loads and stores; 1: streaming (evict-first) loads and stores; 2: streaming
//         stores only.
// The vector path needs both base pointers 16-byte aligned; otherwise VEC = 1 code runs. The ids
// past the last full vector (N % VEC) are done one per thread by the first threads of block 0.
//
// hone:knob BLOCK = 128 | 256 | 512  acts=launch_shape
// hone:knob VEC = 1 | 2  acts=bytes_per_access
// hone:knob ITEMS = 1 | 2 | 4 | 8  acts=memory_pipeline
// hone:knob GRID = 0 | 1  acts=launch_shape
// hone:knob MOD = 0 | 1  acts=arithmetic
// hone:knob HINT = 0 | 1 | 2  acts=cache_policy
// Start at the fastest setting of the author's H100 sweep:
// hone:start BLOCK=512 VEC=2 MOD=1 HINT=2
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef VEC
#define VEC 2
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef GRID
#define GRID 0
#endif
#ifndef MOD
#define MOD 1
#endif
#ifndef HINT
#define HINT 2
#endif

// Blocks of up to 256 threads get no register cap (ptxas picks one); larger ones are capped so
// that one block always fits on a multiprocessor.
#if BLOCK > 256
#define BOUNDS __launch_bounds__(BLOCK, 1)
#else
#define BOUNDS
#endif

namespace {

typedef unsigned long long u64;

struct Hasher {
    u64 salt;
    u64 nb;
    u64 recip; // floor((2^64 - 1) / nb), used when MOD == 1

    __device__ __forceinline__ u64 operator()(u64 id) const
    {
        u64 h = id ^ salt;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
#if MOD == 1
        const u64 q = __umul64hi(h, recip);
        u64 r = h - q * nb;
        if (r >= nb)
            r -= nb;
        return r;
#else
        return h % nb;
#endif
    }
};

template <typename T> __device__ __forceinline__ T load(const T* p)
{
#if HINT == 1
    return __ldcs(p);
#else
    return *p;
#endif
}

template <typename T> __device__ __forceinline__ void store(T* p, T v)
{
#if HINT == 1 || HINT == 2
    __stcs(p, v);
#else
    *p = v;
#endif
}

// Hashes each id of a u64 or a ulonglong2.
template <typename T> __device__ __forceinline__ T hash_vec(const Hasher& f, const T& v)
{
    if constexpr (sizeof(T) == 16)
        return make_ulonglong2(f(v.x), f(v.y));
    else
        return f(v);
}

// V: ids per vector (1 or 2). nvec full vectors; the tail ids start at nvec * V.
template <int V>
__global__ void BOUNDS feature_hash_tuned(
    const u64* __restrict__ ids, u64* __restrict__ out, int64_t n, Hasher f)
{
    typedef typename std::conditional<V == 2, ulonglong2, u64>::type vec_t;
    const vec_t* in_v = reinterpret_cast<const vec_t*>(ids);
    vec_t* out_v = reinterpret_cast<vec_t*>(out);
    const int64_t nvec = n / V;
    const int64_t tile = static_cast<int64_t>(BLOCK) * ITEMS;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * tile;
#if GRID == 1
    const int64_t step = static_cast<int64_t>(gridDim.x) * tile;
#else
    const int64_t step = nvec + 1; // one iteration
#endif
    for (int64_t base = first; base < nvec; base += step) {
        vec_t v[ITEMS];
        if (base + tile <= nvec) {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i)
                v[i] = load(in_v + base + i * BLOCK + threadIdx.x);
#pragma unroll
            for (int i = 0; i < ITEMS; ++i)
                store(out_v + base + i * BLOCK + threadIdx.x, hash_vec(f, v[i]));
        } else {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                const int64_t k = base + i * BLOCK + threadIdx.x;
                if (k < nvec)
                    v[i] = load(in_v + k);
            }
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                const int64_t k = base + i * BLOCK + threadIdx.x;
                if (k < nvec)
                    store(out_v + k, hash_vec(f, v[i]));
            }
        }
    }
    if (V > 1 && blockIdx.x == 0) {
        const int64_t k = nvec * V + threadIdx.x; // at most V - 1 tail ids
        if (k < n)
            out[k] = f(ids[k]);
    }
}

template <int V> int launch(const hone_args* a, int64_t n, const Hasher& f)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    const int64_t nvec = n / V;
    const int64_t tile = static_cast<int64_t>(BLOCK) * ITEMS;
    int64_t grid = (nvec + tile - 1) / tile;
#if GRID == 1
    // Blocks resident at once, asked once per instantiation: the queries would delay every launch.
    static const int64_t resident = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, feature_hash_tuned<V>, BLOCK, 0);
        return static_cast<int64_t>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    }();
    if (grid > resident)
        grid = resident;
#endif
    if (grid < 1)
        grid = 1; // block 0 also does the tail
    feature_hash_tuned<V><<<static_cast<unsigned>(grid), BLOCK, 0, stream>>>(
        static_cast<const u64*>(a->inputs[0].data), static_cast<u64*>(a->outputs[0].data), n, f);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const int64_t n = a->inputs[0].shape[0];
    Hasher f;
    f.salt = static_cast<u64>(hone_param_or(a, "salt", 0.0));
    f.nb = static_cast<u64>(hone_param_or(a, "num_buckets", 1.0));
    if (n <= 0)
        return 0;
    if (f.nb == 0)
        return 1;
    f.recip = ~0ull / f.nb;
    const uintptr_t align = reinterpret_cast<uintptr_t>(a->inputs[0].data)
        | reinterpret_cast<uintptr_t>(a->outputs[0].data);
    if constexpr (VEC == 2) {
        if (align % 16 == 0)
            return launch<2>(a, n, f);
    }
    return launch<1>(a, n, f);
}
