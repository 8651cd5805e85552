// linear_bias_relu through cuBLASLt: one matmul with the RELU_BIAS epilogue (bias add and ReLU
// fused into the GEMM), bf16 A/B/D, fp32 accumulation (CUBLAS_COMPUTE_32F).
//
// cuBLASLt is column-major. The row-major y [M, N] is the column-major N x M matrix y^T, and
// y^T = W x^T: A = W (row-major [N, K] = column-major K x N, ld K, used transposed), B = x
// (row-major [M, K] = column-major K x M, ld K, not transposed), D = y^T (N x M, ld N). The bias
// is then indexed by the rows of D, which is what the epilogue expects.
//
// The handle is created once; the descriptors, the layouts and the heuristic's answer are kept
// for the last (M, N, K, workspace, pointer alignments) seen and rebuilt when any of them
// changes. ALGO picks which of the heuristic's first 8 candidates runs (the first when fewer
// came back).
//
// hone:knob ALGO = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7
#include <hone/kernel.h>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#ifndef ALGO
#define ALGO 0
#endif

namespace {

struct Plan {
    bool valid = false;
    int64_t M = 0, N = 0, K = 0;
    size_t workspace = 0;
    int align[5] = {}; // x, W, bias, y, workspace
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulAlgo_t algo {};

    void release()
    {
        if (op)
            cublasLtMatmulDescDestroy(op);
        if (la)
            cublasLtMatrixLayoutDestroy(la);
        if (lb)
            cublasLtMatrixLayoutDestroy(lb);
        if (ld)
            cublasLtMatrixLayoutDestroy(ld);
        op = nullptr;
        la = lb = ld = nullptr;
        valid = false;
    }
};

cublasLtHandle_t g_handle = nullptr;
Plan g_plan;

// Largest power of two (up to 256) that divides the address.
int alignment(const void* p)
{
    const uintptr_t v = reinterpret_cast<uintptr_t>(p);
    int a = 1;
    while (a < 256 && v % (2 * a) == 0)
        a *= 2;
    return a;
}

// K == 0: y = relu(bias) broadcast over the rows (cuBLASLt does not take k = 0).
__global__ void relu_bias_only(const __nv_bfloat16* bias, __nv_bfloat16* y, int64_t M, int64_t N)
{
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < M * N) {
        const float b = __bfloat162float(bias[i % N]);
        y[i] = __float2bfloat16(b > 0.0f ? b : 0.0f);
    }
}

#define LT_CHECK(call)                                                                                       \
    do {                                                                                                     \
        const cublasStatus_t st_ = (call);                                                                   \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                                    \
            return 1000 + static_cast<int>(st_);                                                             \
    } while (0)

int build_plan(int64_t M, int64_t N, int64_t K, const void* bias, size_t workspace, const int (&align)[5])
{
    g_plan.release();
    Plan& p = g_plan;
    LT_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    const cudaDataType_t biasType = CUDA_R_16BF;
    LT_CHECK(cublasLtMatmulDescSetAttribute(
        p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof biasType));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));

    LT_CHECK(cublasLtMatrixLayoutCreate(
        &p.la, CUDA_R_16BF, static_cast<uint64_t>(K), static_cast<uint64_t>(N), K));
    LT_CHECK(cublasLtMatrixLayoutCreate(
        &p.lb, CUDA_R_16BF, static_cast<uint64_t>(K), static_cast<uint64_t>(M), K));
    LT_CHECK(cublasLtMatrixLayoutCreate(
        &p.ld, CUDA_R_16BF, static_cast<uint64_t>(N), static_cast<uint64_t>(M), N));

    cublasLtMatmulPreference_t pref = nullptr;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint32_t alignA = static_cast<uint32_t>(align[1]), alignB = static_cast<uint32_t>(align[0]),
                   alignD = static_cast<uint32_t>(align[3]);
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA, sizeof alignA);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB, sizeof alignB);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignD, sizeof alignD);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignD, sizeof alignD);
    cublasLtMatmulHeuristicResult_t results[8] = {};
    int returned = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(
            g_handle, p.op, p.la, p.lb, p.ld, p.ld, pref, 8, results, &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    LT_CHECK(st);
    if (returned <= 0)
        return 1000 + static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED);
    p.algo = results[ALGO < returned ? ALGO : 0].algo;
    p.M = M;
    p.N = N;
    p.K = K;
    p.workspace = workspace;
    for (int i = 0; i < 5; ++i)
        p.align[i] = align[i];
    p.valid = true;
    return 0;
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const hone_tensor& x = a->inputs[0];
    const hone_tensor& W = a->inputs[1];
    const int64_t M = x.shape[0];
    const int64_t K = x.shape[1];
    const int64_t N = W.shape[0];
    const void* bias = a->inputs[2].data;
    void* y = a->outputs[0].data;
    cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    if (M == 0 || N == 0)
        return 0;
    if (K == 0) {
        const int64_t total = M * N;
        relu_bias_only<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
            static_cast<const __nv_bfloat16*>(bias), static_cast<__nv_bfloat16*>(y), M, N);
        return static_cast<int>(cudaGetLastError());
    }
    if (!g_handle)
        LT_CHECK(cublasLtCreate(&g_handle));

    const size_t workspace = a->workspace ? a->workspace_bytes : 0;
    const int align[5] = { alignment(x.data), alignment(W.data), alignment(bias), alignment(y),
        a->workspace ? alignment(a->workspace) : 256 };
    bool same
        = g_plan.valid && g_plan.M == M && g_plan.N == N && g_plan.K == K && g_plan.workspace == workspace;
    for (int i = 0; i < 5 && same; ++i)
        same = g_plan.align[i] == align[i];
    if (!same) {
        const int rc = build_plan(M, N, K, bias, workspace, align);
        if (rc != 0) {
            g_plan.release();
            return rc;
        }
    }
    // the bias pointer may move between calls (with the same alignment)
    LT_CHECK(
        cublasLtMatmulDescSetAttribute(g_plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    const float alpha = 1.0f, beta = 0.0f;
    LT_CHECK(cublasLtMatmul(g_handle, g_plan.op, &alpha, W.data, g_plan.la, x.data, g_plan.lb, &beta, y,
        g_plan.ld, y, g_plan.ld, &g_plan.algo, a->workspace, workspace, stream));
    return static_cast<int>(cudaGetLastError());
}
