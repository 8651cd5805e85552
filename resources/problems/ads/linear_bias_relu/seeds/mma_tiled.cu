// linear_bias_relu, hand-written tensor-core GEMM with a fused bias + ReLU epilogue.
// y = relu(x W^T + bias): x [M, K] and W [N, K] are both K-contiguous, which is exactly the
// "row.col" operand layout of mma.sync.m16n8k16 (A row-major, B column-major), so no transposes.
//
// A block computes a BM x BN tile of y with WM x WN warps (each a (BM/WM) x (BN/WN) warp tile of
// 16 x 8 mma fragments, fp32 accumulators in registers). The K axis is walked in BK slices
// through a STAGES-deep ring of shared-memory buffers filled with cp.async (16-byte copies,
// zero-filled past M, N and K), so the copies of later slices overlap the mma of the current
// one. Shared rows are padded by 16 bytes so that ldmatrix reads are free of bank conflicts.
// Tiles are rasterised in groups of GROUP tile-rows (the GROUP x (N/BN) tiles of a group share
// their x rows and sweep W together) for L2 reuse.
// When K is not a multiple of 8 or x / W are not 16-byte aligned the same kernel loads the
// slices with guarded scalar loads instead of cp.async (slow, but any shape works).
//
// The requires keep 4 or 8 warps and warp tiles from 32 x 32 to 64 x 64 (at most 128 fp32
// accumulators per thread; the 64 x 64 tiles with BK = 64 only with 8 warps, since the 4-warp
// ones spill), and the STAGES buffers within the 227 KB of shared memory a block may have.
//
// hone:knob BM = 128 | 64 | 256  acts=launch_shape
// hone:knob BN = 256 | 128 | 64  acts=launch_shape
// hone:knob BK = 64 | 32  acts=memory_pipeline
// hone:knob WM = 2 | 1 | 4  acts=launch_shape
// hone:knob WN = 4 | 2 | 1  acts=launch_shape
// hone:knob STAGES = 3 | 2 | 4  acts=memory_pipeline
// hone:knob GROUP = 8 | 1  acts=cache_policy
// hone:require WM * WN >= 4 && WM * WN <= 8
// hone:require BM / WM >= 32 && BM / WM <= 128 && BN / WN >= 32 && BN / WN <= 128
// hone:require (BM / WM) * (BN / WN) <= 2048 || ((BM / WM) * (BN / WN) <= 4096 && (BK == 32 || WM * WN == 8))
// hone:require STAGES * (BM + BN) * (BK + 8) * 2 <= 232448
#include <hone/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64
#endif
#ifndef WM
#define WM 2
#endif
#ifndef WN
#define WN 4
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP
#define GROUP 8
#endif

constexpr int NT = 32 * WM * WN; // threads per block
constexpr int TM = BM / WM; // warp tile rows
constexpr int TN = BN / WN; // warp tile columns
constexpr int MF = TM / 16; // m16 fragments per warp
constexpr int NF = TN / 8; // n8 fragments per warp
constexpr int LDS = BK + 8; // shared row stride in bf16 (16 bytes of padding)
constexpr int CPR = BK / 8; // 16-byte chunks per tile row
constexpr int A_STAGE = BM * LDS; // bf16 per stage of the x tile
constexpr int B_STAGE = BN * LDS; // bf16 per stage of the W tile
constexpr size_t SMEM_BYTES = static_cast<size_t>(STAGES) * (A_STAGE + B_STAGE) * 2;

static_assert(BM % (16 * WM) == 0 && BN % (16 * WN) == 0, "warp tiles must be whole 16 x 16 blocks");
static_assert(BK % 16 == 0, "BK: a multiple of 16");
static_assert(
    (BM * CPR) % NT == 0 && (BN * CPR) % NT == 0, "tile copies must divide evenly over the threads");
static_assert(STAGES >= 2, "STAGES >= 2");

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid)
{
    const int bytes = valid ? 16 : 0; // 0 source bytes: the 16 destination bytes are zero-filled
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Copies the ROWS x BK slice (rows r0.., columns k0..) of a K-contiguous matrix with `rows` rows
// into shared memory (row stride LDS); everything outside the matrix becomes zero.
template <int ROWS, bool ALIGNED>
__device__ __forceinline__ void load_tile(
    unsigned short* dst, const unsigned short* __restrict__ src, int rows, int K, int r0, int k0)
{
    if constexpr (ALIGNED) {
        // K % 8 == 0: a chunk is either wholly inside the row or wholly past its end
#pragma unroll
        for (int i = 0; i < ROWS * CPR / NT; ++i) {
            const int c = threadIdx.x + i * NT;
            const int r = c / CPR;
            const int kc = (c % CPR) * 8;
            const int gr = r0 + r;
            const int gk = k0 + kc;
            const bool valid = gr < rows && gk < K;
            const unsigned short* s = valid ? src + static_cast<int64_t>(gr) * K + gk : src;
            cp_async16(smem_addr(dst + r * LDS + kc), s, valid);
        }
    } else {
        // any K: guarded scalar loads, one chunk at a time
#pragma unroll 1
        for (int i = 0; i < ROWS * CPR / NT; ++i) {
            const int c = threadIdx.x + i * NT;
            const int r = c / CPR;
            const int kc = (c % CPR) * 8;
            const int gr = r0 + r;
            const int gk = k0 + kc;
            unsigned short v[8];
#pragma unroll
            for (int e = 0; e < 8; ++e)
                v[e] = (gr < rows && gk + e < K) ? src[static_cast<int64_t>(gr) * K + gk + e] : 0;
            uint4 q;
            q.x = v[0] | (static_cast<unsigned>(v[1]) << 16);
            q.y = v[2] | (static_cast<unsigned>(v[3]) << 16);
            q.z = v[4] | (static_cast<unsigned>(v[5]) << 16);
            q.w = v[6] | (static_cast<unsigned>(v[7]) << 16);
            *reinterpret_cast<uint4*>(dst + r * LDS + kc) = q;
        }
    }
}

template <bool ALIGNED>
__global__ void __launch_bounds__(NT, 1)
    linear_bias_relu_mma(const unsigned short* __restrict__ x, const unsigned short* __restrict__ W,
        const __nv_bfloat16* __restrict__ bias, __nv_bfloat16* __restrict__ y, int M, int N, int K)
{
    extern __shared__ uint4 smem_raw[];
    unsigned short* As = reinterpret_cast<unsigned short*>(smem_raw);
    unsigned short* Bs = As + STAGES * A_STAGE;

    // grouped rasterisation of the output tiles
    const int tilesM = (M + BM - 1) / BM;
    const int tilesN = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    const int perGroup = GROUP * tilesN;
    const int firstM = (pid / perGroup) * GROUP;
    const int groupRows = min(tilesM - firstM, GROUP);
    const int tm = firstM + (pid % perGroup) % groupRows;
    const int tn = (pid % perGroup) / groupRows;
    const int m0 = tm * BM;
    const int n0 = tn * BN;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int wm = warp / WN;
    const int wn = warp % WN;

    float acc[MF][NF][4];
#pragma unroll
    for (int i = 0; i < MF; ++i)
#pragma unroll
        for (int j = 0; j < NF; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;

    const int KT = (K + BK - 1) / BK;
    auto load_stage = [&](int slot, int kt) {
        load_tile<BM, ALIGNED>(As + slot * A_STAGE, x, M, K, m0, kt * BK);
        load_tile<BN, ALIGNED>(Bs + slot * B_STAGE, W, N, K, n0, kt * BK);
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT)
            load_stage(s, s);
        cp_async_commit();
    }

    // per-lane ldmatrix offsets (bf16 elements) inside a stage
    // A (x4 = rows 0-7 / 8-15 x k 0-7 / 8-15): lane l points at row (l & 15), k (l >> 4) * 8
    const int aOff = (wm * TM + (lane & 15)) * LDS + (lane >> 4) * 8;
    // B (x4 = n 0-7 k 0-7, n 0-7 k 8-15, n 8-15 k 0-7, n 8-15 k 8-15):
    // lane l points at n ((l >> 4) * 8 + (l & 7)), k ((l >> 3) & 1) * 8
    const int bOff = (wn * TN + ((lane >> 4) << 3) + (lane & 7)) * LDS + ((lane >> 3) & 1) * 8;

    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<STAGES - 2>(); // slice kt has landed (for this thread) ...
        __syncthreads(); // ... and for every thread; slot (kt - 1) % STAGES is free
        const int nk = kt + STAGES - 1;
        if (nk < KT)
            load_stage(nk % STAGES, nk);
        cp_async_commit();

        const int slot = kt % STAGES;
        const unsigned aBase = smem_addr(As + slot * A_STAGE + aOff);
        const unsigned bBase = smem_addr(Bs + slot * B_STAGE + bOff);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            unsigned af[MF][4];
            unsigned bf[NF][2];
#pragma unroll
            for (int i = 0; i < MF; ++i)
                ldmatrix_x4(af[i], aBase + (i * 16 * LDS + kk * 16) * 2);
#pragma unroll
            for (int j = 0; j < NF / 2; ++j) {
                unsigned r[4];
                ldmatrix_x4(r, bBase + (j * 16 * LDS + kk * 16) * 2);
                bf[2 * j][0] = r[0];
                bf[2 * j][1] = r[1];
                bf[2 * j + 1][0] = r[2];
                bf[2 * j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int j = 0; j < NF; ++j)
                    mma_bf16(acc[i][j], af[i], bf[j][0], bf[j][1]);
        }
    }
    cp_async_wait<0>();

    // epilogue: c0, c1 at (row g, cols 2q, 2q+1), c2, c3 at row g + 8; + bias, ReLU, bf16
    const int g = lane >> 2;
    const int q = lane & 3;
    const bool evenN = (N % 2) == 0;
#pragma unroll
    for (int j = 0; j < NF; ++j) {
        const int col = n0 + wn * TN + j * 8 + 2 * q;
        const float b0 = col < N ? __bfloat162float(bias[col]) : 0.0f;
        const float b1 = col + 1 < N ? __bfloat162float(bias[col + 1]) : 0.0f;
#pragma unroll
        for (int i = 0; i < MF; ++i) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * TM + i * 16 + g + h * 8;
                if (row >= M)
                    continue;
                const float v0 = fmaxf(acc[i][j][2 * h] + b0, 0.0f);
                const float v1 = fmaxf(acc[i][j][2 * h + 1] + b1, 0.0f);
                __nv_bfloat16* p = y + static_cast<int64_t>(row) * N + col;
                if (evenN && col + 1 < N) {
                    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v0, v1);
                } else {
                    if (col < N)
                        p[0] = __float2bfloat16_rn(v0);
                    if (col + 1 < N)
                        p[1] = __float2bfloat16_rn(v1);
                }
            }
        }
    }
}

template <bool ALIGNED> static int launch(const hone_args* a, int M, int N, int K)
{
    static bool attributeSet = false;
    if (!attributeSet) {
        const cudaError_t err = cudaFuncSetAttribute(linear_bias_relu_mma<ALIGNED>,
            cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(SMEM_BYTES));
        if (err != cudaSuccess)
            return static_cast<int>(err);
        attributeSet = true;
    }
    const int64_t tiles = static_cast<int64_t>((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    linear_bias_relu_mma<ALIGNED>
        <<<static_cast<unsigned>(tiles), NT, SMEM_BYTES, static_cast<cudaStream_t>(a->stream)>>>(
            static_cast<const unsigned short*>(a->inputs[0].data),
            static_cast<const unsigned short*>(a->inputs[1].data),
            static_cast<const __nv_bfloat16*>(a->inputs[2].data),
            static_cast<__nv_bfloat16*>(a->outputs[0].data), M, N, K);
    return static_cast<int>(cudaGetLastError());
}

extern "C" int hone_run(const hone_args* a)
{
    const int M = static_cast<int>(a->inputs[0].shape[0]);
    const int K = static_cast<int>(a->inputs[0].shape[1]);
    const int N = static_cast<int>(a->inputs[1].shape[0]);
    if (M == 0 || N == 0)
        return 0;
    const bool aligned = K % 8 == 0 && reinterpret_cast<uintptr_t>(a->inputs[0].data) % 16 == 0
        && reinterpret_cast<uintptr_t>(a->inputs[1].data) % 16 == 0;
    return aligned ? launch<true>(a, M, N, K) : launch<false>(a, M, N, K);
}
