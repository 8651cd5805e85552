// dot_interaction, tunable: samples staged in shared memory by cp.async while the warps compute
// earlier ones, and the Gram matrix computed from there in register tiles, on the FMA units or
// on the tensor cores, with no lane-to-lane reduction.
//
// Pipeline. Warps loop over samples (persistent grid). A group of SPLITK warps shares a sample,
// each warp taking D / SPLITK of its columns; a warp copies and consumes its columns in pieces
// of PIECE 16-byte units of every row, into STAGES piece buffers of its own: while it computes
// one piece, the next STAGES - 1 are being copied (cp.async.cg, optionally with an L2 prefetch
// of 128 or 256 bytes per request). Partial dot products carry over from piece to piece in
// registers; at the end of a sample each warp writes its partial results into its just-used
// buffer, the group meets at a named barrier, and its warps add the partials up and store the
// P outputs with coalesced stores. Splitting a sample across warps halves (quarters) each
// warp's compute per sample, so less of it is left exposed behind the last copy.
//
// MATH = 0, FMA tiles. Rows are taken in groups of four (T = ceil(F / 4) <= 7 groups); lane t
// owns tile t = I (I + 1) / 2 + J, J <= I, of the lower triangle, the dot products of rows
// 4I..4I+3 with rows 4J..4J+3 (28 tiles at F = 27, lanes 28..31 idle). Per 16-byte unit of d it
// loads four units of its I rows and four of its J rows (lanes with the same I or J read the
// same address) and issues 64 FMAs into 16 accumulators. In a row's every 128-byte group, unit
// u of row r is stored at u ^ ((r / 4) & 7), so a load, one unit of one row of each group
// I = 0..6, hits seven different bank quads, and the copy writes whole lines.
//
// MATH = 1, 3xTF32 tensor cores (mma.sync m16n8k8): see LaneWork below. Each float is loaded
// by one lane only (the Gram matrix's B fragments are its A fragments), split into a TF32 head
// and tail, and three products per term keep float32 accuracy. Odd rows swap the 64-byte halves
// of every 128-byte group, so a quarter warp's loads (rows g and g + 1) cover 32 banks.
//
//   WPB     warps per block (WPB / SPLITK sample groups, no block-wide barriers).
//   SPLITK  warps per sample.
//   PIECE   16-byte units per piece and row: 8 (128 bytes), 16 or 32.
//   STAGES  piece buffers per warp.
//   OSTAGE  1: results leave through shared memory as coalesced stores; 0: each lane stores
//           its own entries (only with SPLITK = 1).
//   L2PF    0: plain cp.async.cg; 1, 2: with an L2 prefetch hint of 128 or 256 bytes.
//   STCS    1: the outputs are stored with the streaming (evict-first) hint.
// The tile path needs F <= 28 (MATH = 0) or F <= 32 (MATH = 1), D a multiple of
// SPLITK * 4 * PIECE and X 16-byte aligned; other shapes go to a general shared-memory kernel
// (register tiles of 4 x 4 pairs, any F and D). The requires keep SPLITK * PIECE <= 32, which
// D = 128 (the bench shape) needs.
// Measured on an H100 (hone eval, bench shape): MATH = 1, SPLITK = 2, PIECE = 16, STAGES = 2,
// WPB = 2 took 101-106 us; the same with SPLITK = 1, 106-110 us; MATH = 0, 107-119 us.
//
// hone:knob MATH = 1 | 0  acts=arithmetic
// hone:knob SPLITK = 2 | 1 | 4  acts=work_per_thread
// hone:knob PIECE = 16 | 8 | 32  acts=memory_pipeline
// hone:knob STAGES = 2 | 3  acts=memory_pipeline
// hone:knob WPB = 2 | 4 | 1 | 8  acts=launch_shape
// hone:knob OSTAGE = 1 | 0
// hone:knob L2PF = 2 | 1 | 0  acts=cache_policy
// hone:knob STCS = 1 | 0  acts=cache_policy
// hone:require SPLITK == 1 || OSTAGE == 1
// hone:require SPLITK <= WPB
// hone:require SPLITK * PIECE <= 32
#include <hone/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef WPB
#define WPB 2
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef PIECE
#define PIECE 16
#endif
#ifndef OSTAGE
#define OSTAGE 1
#endif
#ifndef MATH
#define MATH 1
#endif
#ifndef SPLITK
#define SPLITK 2
#endif
#ifndef L2PF
#define L2PF 2
#endif
#ifndef STCS
#define STCS 1
#endif

constexpr int THREADS = 32 * WPB;
constexpr int GROUPS = WPB / SPLITK; // samples a block works on at once
constexpr int ROWB = PIECE * 16; // bytes of one row of a piece
constexpr int FMAXT = MATH ? 32 : 28; // rows the fast path takes

// The swizzle of row r: its unit u (within a 128-byte group) is stored at u ^ swz(r).
__device__ __forceinline__ int swz(int r) { return MATH ? (r & 1) << 2 : (r >> 2) & 7; }

struct Shape {
    int64_t B;
    int F, D, P;
    int pieces;    // pieces per warp and sample: D / SPLITK / (4 * PIECE)
    int bufBytes;  // one piece buffer: F rows of ROWB bytes
};

__device__ __forceinline__ void copy16(unsigned dst, const float* src)
{
#if L2PF == 2
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
#elif L2PF == 1
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
#endif
}

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N> __device__ __forceinline__ void wait_groups()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Starts the copy of piece pc of sample b into the buffer at shared address dst. A warp
// instruction copies 32 / PIECE rows; lane l always takes unit l % PIECE of its rows.
__device__ __forceinline__ void fill(const Shape& s, const float* __restrict__ X, int64_t b, int pc, unsigned dst, int lane)
{
    constexpr int rowsPerStep = 32 / PIECE;
    const int u = lane % PIECE;
    const float* src = X + b * s.F * s.D + pc * (4 * PIECE) + u * 4;
    for (int r = lane / PIECE; r < s.F; r += rowsPerStep)
        copy16(dst + r * ROWB + (u ^ swz(r)) * 16, src + r * s.D); // u ^ swz(r) stays in u's 8-unit group
}

#if MATH == 0

// One lane's share of a sample: tile (I, J) of the lower triangle, 16 accumulators.
struct LaneWork {
    int I = 0, J = 0;
    bool active = false;
    int offI[8], offJ[8]; // byte offset of unit w of row 4I (4J) after the swizzle
    float acc[4][4];

    __device__ __forceinline__ void setup(int F, int lane)
    {
        const int T = (F + 3) / 4;
        active = lane < T * (T + 1) / 2;
        if (active) {
            while ((I + 1) * (I + 2) / 2 <= lane)
                ++I;
            J = lane - I * (I + 1) / 2;
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            offI[u] = 4 * I * ROWB + ((u ^ (I & 7)) * 16);
            offJ[u] = 4 * J * ROWB + ((u ^ (J & 7)) * 16);
        }
        reset();
    }

    __device__ __forceinline__ void reset()
    {
#pragma unroll
        for (int k = 0; k < 4; ++k)
#pragma unroll
            for (int m = 0; m < 4; ++m)
                acc[k][m] = 0.0f;
    }

    // acc += the tile over the piece in buf; rows 4I + k are k * ROWB after row 4I.
    __device__ __forceinline__ void piece(const char* buf)
    {
        if (!active)
            return;
#pragma unroll
        for (int u = 0; u < PIECE; ++u) {
            const int w = u & 7;
            const int g = (u >> 3) * 128;
            float4 a[4], c[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                a[k] = *reinterpret_cast<const float4*>(buf + offI[w] + k * ROWB + g);
                c[k] = *reinterpret_cast<const float4*>(buf + offJ[w] + k * ROWB + g);
            }
#pragma unroll
            for (int k = 0; k < 4; ++k)
#pragma unroll
                for (int m = 0; m < 4; ++m) {
                    acc[k][m] = fmaf(a[k].x, c[m].x, acc[k][m]);
                    acc[k][m] = fmaf(a[k].y, c[m].y, acc[k][m]);
                    acc[k][m] = fmaf(a[k].z, c[m].z, acc[k][m]);
                    acc[k][m] = fmaf(a[k].w, c[m].w, acc[k][m]);
                }
        }
    }

    // Writes the entries with j < i < F to dst at their output positions.
    __device__ __forceinline__ void store(int F, float* dst) const
    {
        if (!active)
            return;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int i = 4 * I + k;
#pragma unroll
            for (int m = 0; m < 4; ++m) {
                const int j = 4 * J + m;
                if (i < F && j < i)
                    dst[i * (i - 1) / 2 + j] = acc[k][m];
            }
        }
    }
};

constexpr int rowsRead(int F) { return (F + 3) / 4 * 4; }

#else // MATH == 1

// x rounded to TF32 (nearest, ties away from zero, as cvt.rna.tf32.f32 does) in two integer
// operations: add half an ulp of the 13 dropped bits, clear them.
__device__ __forceinline__ unsigned tf32_rna(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

// The tail goes in unrounded: the tensor core reads the top 19 bits of a TF32 operand, which
// truncates it, an error below 2^-10 |lo| <= 2^-21 |x| (on N(0, 1) inputs at D = 128 the worst
// output error measured 3% of the tolerance either way, against 11% with a truncated head).
__device__ __forceinline__ void split(float x, unsigned& hi, unsigned& lo)
{
    hi = tf32_rna(x);
    lo = __float_as_uint(x - __uint_as_float(hi));
}

__device__ __forceinline__ void mma(
    float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The six 16 x 8 tiles of the 32 x 32 Gram matrix that reach below the diagonal:
// (mi, nj) = (0, 0), (0, 1), then (1, 0) .. (1, 3).
__device__ constexpr int tileMi(int i) { return i < 2 ? 0 : 1; }
__device__ constexpr int tileNj(int i) { return i < 2 ? i : i - 2; }

// One lane's share of a sample on the tensor cores (mma.sync m16n8k8 TF32, 3xTF32: every
// operand split into a TF32 head and tail, products hi*hi + hi*lo + lo*hi, so the error stays
// near float32 rounding). Lane (g, t) = (lane / 4, lane % 4) holds, for the A fragments of row
// blocks 0 and 1 and, the Gram matrix being X X^T, the B fragments of all four column blocks,
// rows g, g + 8, g + 16, g + 24. K is taken in a free order: k-step 2v + h uses columns
// 16v + 4t + 2h (k = t) and + 1 (k = t + 4), A and B alike, so each row is one 16-byte load
// per 16 columns; with the swizzle (odd rows swap the 64-byte halves of every 128-byte group)
// a quarter warp's loads cover 32 different banks.
struct LaneWork {
    int g = 0, t = 0;
    int off[4][2]; // byte offset of row g + 8m's columns 4t.. of an even (odd) 16-column group
    float acc[6][4];

    __device__ __forceinline__ void setup(int F, int lane)
    {
        g = lane >> 2;
        t = lane & 3;
        const int p = swz(g) >> 2; // rows g + 8m share row g's swizzle
        // Rows past F read row F - 1 instead (with the wrong swizzle: those results are never
        // stored), so nothing is read outside the buffer.
#pragma unroll
        for (int m = 0; m < 4; ++m)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                off[m][e] = min(g + 8 * m, F - 1) * ROWB + 64 * (e ^ p) + 16 * t;
        reset();
    }

    __device__ __forceinline__ void reset()
    {
#pragma unroll
        for (int i = 0; i < 6; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][e] = 0.0f;
    }

    __device__ __forceinline__ void piece(const char* buf)
    {
        // Two 16-column groups per step: all of a piece's loads in flight at once would take
        // every register.
#pragma unroll 2
        for (int v = 0; v < PIECE / 4; ++v) {
            float4 x[4]; // rows g + 8m, columns 16v + 4t .. + 3
#pragma unroll
            for (int m = 0; m < 4; ++m)
                x[m] = *reinterpret_cast<const float4*>(buf + off[m][v & 1] + (v >> 1) * 128);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                unsigned hi0[4], lo0[4], hi1[4], lo1[4]; // k = t and k = t + 4, per row m
#pragma unroll
                for (int m = 0; m < 4; ++m) {
                    split(h ? x[m].z : x[m].x, hi0[m], lo0[m]);
                    split(h ? x[m].w : x[m].y, hi1[m], lo1[m]);
                }
#pragma unroll
                for (int i = 0; i < 6; ++i) {
                    const int qa = 2 * tileMi(i); // A rows 16 mi + g (m = qa) and + 8 (m = qa + 1)
                    const int qb = tileNj(i);     // B row (an output column) 8 nj + g
                    // The small terms first, so they meet the accumulator before the large one.
                    mma(acc[i], lo0[qa], lo0[qa + 1], lo1[qa], lo1[qa + 1], hi0[qb], hi1[qb]);
                    mma(acc[i], hi0[qa], hi0[qa + 1], hi1[qa], hi1[qa + 1], lo0[qb], lo1[qb]);
                    mma(acc[i], hi0[qa], hi0[qa + 1], hi1[qa], hi1[qa + 1], hi0[qb], hi1[qb]);
                }
            }
        }
    }

    // c0, c1: row 16 mi + g, columns 8 nj + 2t and + 1; c2, c3: the same, row + 8.
    __device__ __forceinline__ void store(int F, float* dst) const
    {
#pragma unroll
        for (int i = 0; i < 6; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = 16 * tileMi(i) + g + (e >= 2 ? 8 : 0);
                const int col = 8 * tileNj(i) + 2 * t + (e & 1);
                if (col < row && row < F)
                    dst[row * (row - 1) / 2 + col] = acc[i][e];
            }
    }
};

constexpr int rowsRead(int F) { return F; }

#endif

// Waits for the SPLITK warps of group `group` (named barrier 1 + group; 0 is __syncthreads).
__device__ __forceinline__ void group_sync(int group)
{
    if (SPLITK == 1)
        __syncwarp();
    else
        asm volatile("bar.sync %0, %1;\n" ::"r"(1 + group), "n"(32 * SPLITK) : "memory");
}

__global__ void __launch_bounds__(THREADS) dot_interaction_tiles(
    const float* __restrict__ X, float* __restrict__ out, Shape s)
{
    extern __shared__ float4 smem4[];
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const int group = w / SPLITK; // the warps of a group share samples, each its D / SPLITK columns
    const int rank = w % SPLITK;
    char* smem = reinterpret_cast<char*>(smem4);
    char* bufs = smem + static_cast<size_t>(w) * STAGES * s.bufBytes;
    const unsigned sbufs = static_cast<unsigned>(__cvta_generic_to_shared(bufs));
    const int64_t stride = static_cast<int64_t>(gridDim.x) * GROUPS;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * GROUPS + group;
    const float* Xw = X + rank * (s.D / SPLITK); // this warp's columns

    LaneWork work;
    work.setup(s.F, lane);

    // Work items are (sample, piece) pairs in order; item n of this warp is piece n % pieces
    // of sample first + (n / pieces) * stride.
    int64_t fb = first; // sample and piece of the next item to copy
    int fp = 0;
    auto issue = [&](int slot) {
        if (fb < s.B)
            fill(s, Xw, fb, fp, sbufs + slot * s.bufBytes, lane);
        commit();
        if (++fp == s.pieces) {
            fp = 0;
            fb += stride;
        }
    };
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st)
        issue(st);

    int slot = 0;
    int pc = 0;
    for (int64_t b = first; b < s.B;) {
        issue(slot == 0 ? STAGES - 1 : slot - 1); // the buffer freed by the previous item
        wait_groups<STAGES - 1>();
        __syncwarp();
        char* buf = bufs + slot * s.bufBytes;
        work.piece(buf);
        if (++pc == s.pieces) {
            float* outb = out + b * s.P;
            if (OSTAGE) {
                // Every warp of the group puts its partial results in its just-used buffer;
                // the group then adds them up and stores them, coalesced.
                __syncwarp(); // every lane is done reading the buffer
                work.store(s.F, reinterpret_cast<float*>(buf));
                group_sync(group);
                const char* first_buf = smem + static_cast<size_t>(group * SPLITK) * STAGES * s.bufBytes
                    + slot * s.bufBytes;
                for (int p = rank * 32 + lane; p < s.P; p += 32 * SPLITK) {
                    float sum = 0.0f;
#pragma unroll
                    for (int r = 0; r < SPLITK; ++r)
                        sum += reinterpret_cast<const float*>(
                            first_buf + static_cast<size_t>(r) * STAGES * s.bufBytes)[p];
#if STCS
                    __stcs(outb + p, sum);
#else
                    outb[p] = sum;
#endif
                }
            } else {
                work.store(s.F, outb);
            }
            work.reset();
            pc = 0;
            b += stride;
        }
        group_sync(group); // the buffers are refilled by the next item's copy
        if (++slot == STAGES)
            slot = 0;
    }
    wait_groups<0>();
}

// Shapes the fast path does not take (any F and D): the sample staged in shared memory, each
// group of `ds` lanes computing a 4 x 4 tile of the Gram matrix's lower triangle in registers
// (its lanes split the D axis; a butterfly sums their partial tiles). `ds` is chosen per shape
// so that the block's tiles keep most lanes busy; V = 4 takes 16-byte loads.
constexpr int ANY_THREADS = 128;

template <int V>
__global__ void __launch_bounds__(ANY_THREADS) dot_interaction_any(
    const float* __restrict__ X, float* __restrict__ out, int64_t B, int F, int D, int P, int DP, int ds)
{
    extern __shared__ float4 any_smem4[];
    float* xs = reinterpret_cast<float*>(any_smem4);
    const int nb = (F + 3) / 4;
    const int ntiles = nb * (nb + 1) / 2;
    const int groups = ANY_THREADS / ds;
    const int gid = threadIdx.x / ds;
    const int s = threadIdx.x % ds;
    const int nv = D / V;
    for (int64_t b = blockIdx.x; b < B; b += gridDim.x) {
        const float* src = X + b * F * D;
        __syncthreads(); // the previous sample's tiles are done with xs
        for (int idx = threadIdx.x; idx < F * nv; idx += ANY_THREADS) {
            const int row = idx / nv;
            const int c = (idx - row * nv) * V;
            if constexpr (V == 4)
                *reinterpret_cast<float4*>(xs + row * DP + c)
                    = __ldg(reinterpret_cast<const float4*>(src + static_cast<int64_t>(row) * D + c));
            else
                xs[row * DP + c] = __ldg(src + static_cast<int64_t>(row) * D + c);
        }
        __syncthreads();
        float* o = out + b * P;
        for (int base = 0; base < ntiles; base += groups) { // uniform trip count per group
            int t = base + gid;
            const bool valid = t < ntiles;
            if (!valid)
                t = 0;
            int bi = static_cast<int>((sqrtf(8.0f * t + 1.0f) - 1.0f) * 0.5f);
            if ((bi + 1) * (bi + 2) / 2 <= t)
                ++bi;
            if (bi * (bi + 1) / 2 > t)
                --bi;
            const int bj = t - bi * (bi + 1) / 2;
            int ra[4], rb[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                ra[k] = min(bi * 4 + k, F - 1) * DP;
                rb[k] = min(bj * 4 + k, F - 1) * DP;
            }
            float v[16];
#pragma unroll
            for (int e = 0; e < 16; ++e)
                v[e] = 0.0f;
            for (int c = s; c < nv; c += ds) {
                if constexpr (V == 4) {
                    float4 A[4];
#pragma unroll
                    for (int k = 0; k < 4; ++k)
                        A[k] = *reinterpret_cast<const float4*>(xs + ra[k] + 4 * c);
#pragma unroll
                    for (int m = 0; m < 4; ++m) {
                        const float4 Bv = *reinterpret_cast<const float4*>(xs + rb[m] + 4 * c);
#pragma unroll
                        for (int k = 0; k < 4; ++k) {
                            float acc = v[k * 4 + m];
                            acc = fmaf(A[k].x, Bv.x, acc);
                            acc = fmaf(A[k].y, Bv.y, acc);
                            acc = fmaf(A[k].z, Bv.z, acc);
                            v[k * 4 + m] = fmaf(A[k].w, Bv.w, acc);
                        }
                    }
                } else {
                    float A[4];
#pragma unroll
                    for (int k = 0; k < 4; ++k)
                        A[k] = xs[ra[k] + c];
#pragma unroll
                    for (int m = 0; m < 4; ++m) {
                        const float Bv = xs[rb[m] + c];
#pragma unroll
                        for (int k = 0; k < 4; ++k)
                            v[k * 4 + m] = fmaf(A[k], Bv, v[k * 4 + m]);
                    }
                }
            }
            for (int w = ds / 2; w > 0; w >>= 1)
#pragma unroll
                for (int e = 0; e < 16; ++e)
                    v[e] += __shfl_xor_sync(0xffffffffu, v[e], w);
#pragma unroll
            for (int e = 0; e < 16; ++e) {
                const int i = bi * 4 + e / 4;
                const int j = bj * 4 + e % 4;
                if (valid && e % ds == s && i < F && j < i)
                    o[i * (i - 1) / 2 + j] = v[e];
            }
        }
    }
}

// One thread per output: only for samples too large for shared memory.
__global__ void dot_interaction_plain(
    const float* __restrict__ X, float* __restrict__ out, int64_t B, int F, int D, int P)
{
    const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= B * P)
        return;
    const int64_t b = t / P;
    const int p = static_cast<int>(t - b * P);
    int i = 1;
    while (i * (i + 1) / 2 <= p)
        ++i;
    const int j = p - i * (i - 1) / 2;
    const float* xi = X + (b * F + i) * D;
    const float* xj = X + (b * F + j) * D;
    float sum = 0.0f;
    for (int d = 0; d < D; ++d)
        sum = fmaf(xi[d], xj[d], sum);
    out[t] = sum;
}

int launch_any(const float* x, float* out, int64_t B, int F, int D, int P, cudaStream_t stream)
{
    const bool vec = D % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const int DP = vec ? D + 4 : (D % 2 ? D : D + 1); // padded rows: rows of a tile in other banks
    const size_t smem = static_cast<size_t>(F) * DP * sizeof(float);
    if (smem > 96 * 1024) {
        const int64_t total = B * P;
        dot_interaction_plain<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(x, out, B, F, D, P);
        return static_cast<int>(cudaGetLastError());
    }
    const int nb = (F + 3) / 4;
    const int ntiles = nb * (nb + 1) / 2;
    int ds = 1; // lanes per tile: as many as keep the tiles of one round within the block
    while (ds < 16 && ntiles * ds * 2 <= ANY_THREADS)
        ds *= 2;
    static size_t raised = 48 * 1024; // opt-in above 48 KB, once per size
    if (smem > raised) {
        cudaError_t e = cudaFuncSetAttribute(dot_interaction_any<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(dot_interaction_any<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);
        if (e != cudaSuccess)
            return static_cast<int>(e);
        raised = 96 * 1024;
    }
    static size_t sized = 0; // blocks resident at once for this much shared memory, once per size
    static int64_t resident = 0;
    if (smem * 2 + vec != sized) {
        int dev = 0, sms = 0, perSM = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        const cudaError_t e = vec ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, dot_interaction_any<4>, ANY_THREADS, smem)
                                  : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, dot_interaction_any<1>, ANY_THREADS, smem);
        if (e != cudaSuccess)
            return static_cast<int>(e);
        sized = smem * 2 + vec;
        resident = static_cast<int64_t>(perSM > 0 ? perSM : 1) * sms;
    }
    const unsigned blocks = static_cast<unsigned>(B < resident ? B : resident);
    if (vec)
        dot_interaction_any<4><<<blocks, ANY_THREADS, smem, stream>>>(x, out, B, F, D, P, DP, ds);
    else
        dot_interaction_any<1><<<blocks, ANY_THREADS, smem, stream>>>(x, out, B, F, D, P, DP, ds);
    return static_cast<int>(cudaGetLastError());
}

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& X = a->inputs[0];
    Shape s{};
    s.B = X.shape[0];
    s.F = static_cast<int>(X.shape[1]);
    s.D = static_cast<int>(X.shape[2]);
    s.P = s.F * (s.F - 1) / 2;
    if (s.B == 0 || s.P == 0)
        return 0;
    const auto stream = static_cast<cudaStream_t>(a->stream);
    const float* x = static_cast<const float*>(X.data);
    float* out = static_cast<float*>(a->outputs[0].data);
    if (s.F > FMAXT || s.D % (SPLITK * 4 * PIECE) != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0
        || (OSTAGE && s.F * ROWB < s.P * 4)) {
        return launch_any(static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), s.B, s.F, s.D, s.P,
            static_cast<cudaStream_t>(a->stream));
    }
    s.pieces = s.D / SPLITK / (4 * PIECE);
    s.bufBytes = s.F * ROWB;
    // The compute may read rows up to rowsRead(F) - 1 >= F (never stored): for the last warp's
    // last buffer those lie past the buffers, hence the pad.
    const size_t smem = static_cast<size_t>(WPB) * STAGES * s.bufBytes + (rowsRead(s.F) - s.F) * ROWB;

    // Blocks resident at once for this much shared memory, worked out once per size: the
    // attribute and occupancy calls would otherwise delay every launch.
    static size_t cachedSmem = 0;
    static int64_t cachedLimit = 0;
    if (smem != cachedSmem) {
        int dev = 0, sms = 0, perSM = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaError_t err = cudaFuncSetAttribute(
            dot_interaction_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        if (err != cudaSuccess)
            return static_cast<int>(err);
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, dot_interaction_tiles, THREADS, smem);
        if (err != cudaSuccess)
            return static_cast<int>(err);
        cachedSmem = smem;
        cachedLimit = static_cast<int64_t>(perSM > 0 ? perSM : 1) * sms;
    }
    int64_t blocks = (s.B + GROUPS - 1) / GROUPS;
    if (blocks > cachedLimit)
        blocks = cachedLimit;
    dot_interaction_tiles<<<static_cast<unsigned>(blocks), THREADS, smem, stream>>>(x, out, s);
    return static_cast<int>(cudaGetLastError());
}
