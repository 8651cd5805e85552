// Bucketize, tunable. Each block first copies the boundaries into a shared-memory table padded
// with +inf to P = 2^h - 1 entries (h = ceil(log2(K + 1))), then every element takes exactly h
// branch-free steps. Each thread handles ITEMS vectors of VEC floats and runs their ITEMS * VEC
// searches interleaved, so that many independent shared-memory loads are in flight.
//   LAYOUT 0: the sorted order: pos += step if tab[pos + step - 1] < x, step = 2^(h-1) .. 1.
//             Early steps of a warp hit few distinct words, all in one bank (conflicts).
//          1: Eytzinger (breadth-first) order of the perfect search tree, 1-based:
//             i = 2 i + (tab[i] < x), h times, answer i - 2^h. Each level is contiguous, so the
//             top levels are broadcasts or conflict-free.
//   GRID   0: one block per tile of BLOCK * ITEMS vectors (each block rebuilds the table);
//          1: as many blocks as fit on the device at once, grid-stride over tiles.
//   STORE  0: plain stores; 1: streaming (evict-first) stores of the int64 results.
// VEC 2 and 4 load float2 / float4 and store 16-byte pairs of results; they need 16-byte
// aligned pointers, otherwise VEC = 1 code runs. The last N % VEC elements are done by the first
// threads of block 0. A table over the 48 KB shared-memory limit (K > 8191) falls back to a
// plain binary search in global memory.
//
// hone:knob LAYOUT = 0 | 1
// hone:knob BLOCK = 128 | 256 | 512 | 1024  acts=launch_shape
// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access
// hone:knob ITEMS = 1 | 2 | 4 | 8  acts=memory_pipeline
// hone:knob GRID = 0 | 1  acts=launch_shape
// hone:knob STORE = 0 | 1  acts=cache_policy
// hone:require VEC * ITEMS <= 16
// Start at the fastest setting of the author's H100 sweep:
// hone:start LAYOUT=1 BLOCK=256 VEC=2 ITEMS=8
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef LAYOUT
#define LAYOUT 1
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 2
#endif
#ifndef ITEMS
#define ITEMS 8
#endif
#ifndef GRID
#define GRID 0
#endif
#ifndef STORE
#define STORE 0
#endif

// Blocks of up to 256 threads get no register cap (ptxas picks one); larger ones are capped so
// that one block always fits on a multiprocessor.
#if BLOCK > 256
#define BOUNDS __launch_bounds__(BLOCK, 1)
#else
#define BOUNDS
#endif

namespace {

typedef long long i64;

constexpr int kMaxTableBytes = 48 * 1024;

template <int V> struct FloatVec;
template <> struct FloatVec<1> {
    typedef float type;
};
template <> struct FloatVec<2> {
    typedef float2 type;
};
template <> struct FloatVec<4> {
    typedef float4 type;
};

// Unpacks a float, float2 or float4 into f[0 .. V-1].
template <typename T> __device__ __forceinline__ void split(const T& v, float* f)
{
    if constexpr (sizeof(T) == 16) {
        f[0] = v.x;
        f[1] = v.y;
        f[2] = v.z;
        f[3] = v.w;
    } else if constexpr (sizeof(T) == 8) {
        f[0] = v.x;
        f[1] = v.y;
    } else {
        f[0] = v;
    }
}

__device__ __forceinline__ void put(i64* p, i64 v)
{
#if STORE == 1
    __stcs(p, v);
#else
    *p = v;
#endif
}

template <typename T> __device__ __forceinline__ void put2(T* p, T a, T b)
{
    const longlong2 v = make_longlong2(a, b);
#if STORE == 1
    __stcs(reinterpret_cast<longlong2*>(p), v);
#else
    *reinterpret_cast<longlong2*>(p) = v;
#endif
}

// The value at table slot i: LAYOUT 0 uses slots [0, P), LAYOUT 1 slots [1, P].
__device__ __forceinline__ float table_value(const float* bnd, int k, int h, int i)
{
#if LAYOUT == 1
    const int d = 31 - __clz(i);                    // depth of node i
    const int p = i - (1 << d);                     // position within its level
    const int r = ((2 * p + 1) << (h - 1 - d)) - 1; // in-order rank
#else
    const int r = i;
#endif
    return r < k ? bnd[r] : __int_as_float(0x7f800000); // +inf pads
}

template <int M> __device__ __forceinline__ void search(const float* tab, int h, const float* xs, int* res)
{
    int pos[M];
#pragma unroll
    for (int j = 0; j < M; ++j)
        pos[j] = LAYOUT == 1 ? 1 : 0;
#if LAYOUT == 1
    for (int s = 0; s < h; ++s) {
#pragma unroll
        for (int j = 0; j < M; ++j)
            pos[j] = 2 * pos[j] + (tab[pos[j]] < xs[j] ? 1 : 0);
    }
#pragma unroll
    for (int j = 0; j < M; ++j)
        res[j] = pos[j] - (1 << h);
#else
    for (int step = 1 << (h - 1); step > 0; step >>= 1) {
#pragma unroll
        for (int j = 0; j < M; ++j)
            pos[j] += tab[pos[j] + step - 1] < xs[j] ? step : 0;
    }
#pragma unroll
    for (int j = 0; j < M; ++j)
        res[j] = pos[j];
#endif
}

template <int V>
__global__ void BOUNDS bucketize_smem(const float* __restrict__ x,
    const float* __restrict__ bnd, i64* __restrict__ out, int64_t n, int k, int h)
{
    extern __shared__ float tab[];
    const int slots = 1 << h; // P + 1
    for (int i = threadIdx.x; i < slots; i += BLOCK)
        tab[i] = (LAYOUT == 1 && i == 0) ? 0.0f : table_value(bnd, k, h, i);
    __syncthreads();

    typedef typename FloatVec<V>::type vec_t;
    const vec_t* xv = reinterpret_cast<const vec_t*>(x);
    const int64_t nvec = n / V;
    const int64_t tile = static_cast<int64_t>(BLOCK) * ITEMS;
#if GRID == 1
    const int64_t step = static_cast<int64_t>(gridDim.x) * tile;
#else
    const int64_t step = nvec + 1;
#endif
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * tile; base < nvec; base += step) {
        float xs[ITEMS * V];
        int res[ITEMS * V];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const int64_t kv = base + it * BLOCK + threadIdx.x;
            vec_t v;
            if (kv < nvec)
                v = __ldcs(xv + kv);
            else
                v = vec_t {}; // searched but never stored
            split(v, xs + it * V);
        }
        search<ITEMS * V>(tab, h, xs, res);
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const int64_t kv = base + it * BLOCK + threadIdx.x;
            if (kv < nvec) {
                i64* o = out + kv * V;
                if constexpr (V == 1) {
                    put(o, res[it]);
                } else {
#pragma unroll
                    for (int q = 0; q < V; q += 2)
                        put2<i64>(o + q, res[it * V + q], res[it * V + q + 1]);
                }
            }
        }
    }
    if (V > 1 && blockIdx.x == 0) {
        const int64_t i = nvec * V + threadIdx.x; // at most V - 1 tail elements
        if (i < n) {
            float xs[1] = { x[i] };
            int res[1];
            search<1>(tab, h, xs, res);
            out[i] = res[0];
        }
    }
}

// Fallback for tables that do not fit in shared memory: lower bound in global memory.
__global__ void bucketize_global(const float* __restrict__ x, const float* __restrict__ bnd,
    i64* __restrict__ out, int64_t n, int k)
{
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const float v = x[i];
        int lo = 0, hi = k;
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            if (__ldg(bnd + mid) < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        out[i] = lo;
    }
}

template <int V> int launch(const hone_args* a, int64_t n, int k, int h, size_t smem)
{
    cudaStream_t stream = (cudaStream_t)a->stream;
    const int64_t tile = static_cast<int64_t>(BLOCK) * ITEMS;
    int64_t grid = (n / V + tile - 1) / tile;
#if GRID == 1
    // Blocks resident at once, asked once per shared-memory size: the queries would delay
    // every launch.
    static size_t resident_smem = 0;
    static int64_t resident = 0;
    if (resident == 0 || smem != resident_smem) {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bucketize_smem<V>, BLOCK, smem);
        resident = static_cast<int64_t>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
        resident_smem = smem;
    }
    if (grid > resident)
        grid = resident;
#endif
    if (grid < 1)
        grid = 1; // block 0 also does the tail
    bucketize_smem<V><<<static_cast<unsigned>(grid), BLOCK, smem, stream>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<const float*>(a->inputs[1].data),
        static_cast<i64*>(a->outputs[0].data), n, k, h);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const int64_t n = a->inputs[0].shape[0];
    const int64_t k64 = a->inputs[1].shape[0];
    if (n <= 0)
        return 0;
    if (k64 < 1 || k64 > (1 << 29))
        return 1;
    const int k = static_cast<int>(k64);
    int h = 0;
    while ((1ll << h) - 1 < k64)
        ++h; // smallest h with 2^h - 1 >= K
    const size_t smem = sizeof(float) << h;
    if (smem > static_cast<size_t>(kMaxTableBytes)) {
        cudaStream_t stream = (cudaStream_t)a->stream;
        int64_t grid = (n + 255) / 256;
        if (grid > 65535)
            grid = 65535;
        bucketize_global<<<static_cast<unsigned>(grid), 256, 0, stream>>>(
            static_cast<const float*>(a->inputs[0].data), static_cast<const float*>(a->inputs[1].data),
            static_cast<i64*>(a->outputs[0].data), n, k);
        return (int)cudaGetLastError();
    }
    const uintptr_t xa = reinterpret_cast<uintptr_t>(a->inputs[0].data);
    const uintptr_t oa = reinterpret_cast<uintptr_t>(a->outputs[0].data);
    if constexpr (VEC >= 4) {
        if (xa % 16 == 0 && oa % 16 == 0)
            return launch<4>(a, n, k, h, smem);
    }
    if constexpr (VEC >= 2) {
        if (xa % 8 == 0 && oa % 16 == 0)
            return launch<2>(a, n, k, h, smem);
    }
    return launch<1>(a, n, k, h, smem);
}
