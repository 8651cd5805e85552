// Reference for linear_bias_relu: y[m,n] = max(0, sum_k x[m,k] * W[n,k] + bias[n]); x [M,K],
// W [N,K], bias [N], y [M,N], all bf16.
// Ground truth: the operands are converted to float once (exactly), the products are summed in
// float (16 separate partial sums per dot product, added in a fixed order), bias and ReLU are
// applied in float and y is rounded to bf16 once. A float sum of length K differs from the exact
// one by ~1e-6 relative, far below the bf16 rounding of y.
//
// The loops are tiled only so that the bench shape runs in seconds: 32 x 32 output tiles are
// spread over OpenMP threads, K is walked in slices of 256 so that both operand slices stay in
// cache, and every output keeps a vector of 16 partial sums (GCC vector extension, lane l holds
// the products with k % 16 == l) that is added up once at the end; a 4 x 4 block of outputs is
// updated at a time, 16 vector FMAs on 8 vector loads.
#include "hone/kernel.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t TI = 32; // output tile rows (x rows)
constexpr int64_t TJ = 32; // output tile columns (W rows)
constexpr int64_t TK = 256; // K slice
constexpr int RI = 4; // micro-tile rows
constexpr int RJ = 4; // micro-tile columns
constexpr int L = 16; // partial sums per output (one GCC vector of L floats)
typedef float vf __attribute__((vector_size(4 * L)));

} // namespace

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 3 || args->num_outputs != 1)
        return 1;
    const hone_tensor& x = args->inputs[0];
    const hone_tensor& W = args->inputs[1];
    const hone_tensor& bias = args->inputs[2];
    const hone_tensor& y = args->outputs[0];
    if (x.rank != 2 || W.rank != 2 || bias.rank != 1 || y.rank != 2)
        return 1;
    if (x.dtype != HONE_BF16 || W.dtype != HONE_BF16 || bias.dtype != HONE_BF16 || y.dtype != HONE_BF16)
        return 1;
    const int64_t M = x.shape[0];
    const int64_t K = x.shape[1];
    const int64_t N = W.shape[0];
    if (W.shape[1] != K || bias.shape[0] != N || y.shape[0] != M || y.shape[1] != N)
        return 1;
    const uint16_t* xp = static_cast<const uint16_t*>(x.data);
    const uint16_t* wp = static_cast<const uint16_t*>(W.data);
    const uint16_t* bp = static_cast<const uint16_t*>(bias.data);
    uint16_t* yp = static_cast<uint16_t*>(y.data);

    // Float copies, padded with zero rows to whole tiles.
    const int64_t Mp = (M + TI - 1) / TI * TI;
    const int64_t Np = (N + TJ - 1) / TJ * TJ;
    std::vector<float> xf(static_cast<size_t>(Mp * K), 0.0f);
    std::vector<float> wf(static_cast<size_t>(Np * K), 0.0f);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k)
            xf[i * K + k] = hone_bf16_to_f32(xp[i * K + k]);
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k)
            wf[j * K + k] = hone_bf16_to_f32(wp[j * K + k]);

#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int64_t ib = 0; ib < Mp; ib += TI)
        for (int64_t jb = 0; jb < Np; jb += TJ) {
            std::vector<vf> acc(static_cast<size_t>(TI * TJ)); // partial sums, zero-initialised
            for (int64_t kb = 0; kb < K; kb += TK) {
                const int64_t kl = std::min(TK, K - kb);
                for (int64_t i0 = 0; i0 < TI; i0 += RI)
                    for (int64_t j0 = 0; j0 < TJ; j0 += RJ) {
                        const float* xr[RI];
                        const float* wr[RJ];
                        vf part[RI][RJ];
                        for (int a = 0; a < RI; ++a) {
                            xr[a] = &xf[(ib + i0 + a) * K + kb];
                            for (int b = 0; b < RJ; ++b)
                                part[a][b] = acc[(i0 + a) * TJ + j0 + b];
                        }
                        for (int b = 0; b < RJ; ++b)
                            wr[b] = &wf[(jb + j0 + b) * K + kb];
                        int64_t k = 0;
                        for (; k + L <= kl; k += L) {
                            vf xv[RI], wv[RJ];
                            for (int a = 0; a < RI; ++a)
                                std::memcpy(&xv[a], xr[a] + k, sizeof(vf));
                            for (int b = 0; b < RJ; ++b)
                                std::memcpy(&wv[b], wr[b] + k, sizeof(vf));
                            for (int a = 0; a < RI; ++a)
                                for (int b = 0; b < RJ; ++b)
                                    part[a][b] += xv[a] * wv[b];
                        }
                        for (; k < kl; ++k) // K % L leftovers go to lane 0
                            for (int a = 0; a < RI; ++a)
                                for (int b = 0; b < RJ; ++b)
                                    part[a][b][0] += xr[a][k] * wr[b][k];
                        for (int a = 0; a < RI; ++a)
                            for (int b = 0; b < RJ; ++b)
                                acc[(i0 + a) * TJ + j0 + b] = part[a][b];
                    }
            }
            for (int64_t i = ib; i < std::min(ib + TI, M); ++i)
                for (int64_t j = jb; j < std::min(jb + TJ, N); ++j) {
                    const vf& p = acc[(i - ib) * TJ + (j - jb)];
                    float v = 0.0f;
                    for (int l = 0; l < L; ++l)
                        v += p[l];
                    v += hone_bf16_to_f32(bp[j]);
                    yp[i * N + j] = hone_f32_to_bf16(v > 0.0f ? v : 0.0f);
                }
        }
    return 0;
}
