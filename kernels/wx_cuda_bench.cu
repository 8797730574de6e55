// Measured GEMM rate of the GPU (for the benchmarks' "achieved vs attainable" figure): n×n×n
// products with cuBLAS on the context's handle, bf16 inputs with fp32 accumulation (tensor cores)
// or plain fp32, timed with CUDA events after one warm-up.
#include <cuda_bf16.h>

#include "wx_cuda_state.h"

extern "C" wx_status wx_cuda_gemm_rate(wx_ctx *ctx, int n, int bf16, int reps, double *tflops) {
    *tflops = 0;
    if (n < 1 || reps < 1)
        return wx_error_set(WX_ERR_USAGE, "gemm rate: n %d, reps %d: expected >= 1", n, reps);
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    const size_t el = bf16 ? sizeof(__nv_bfloat16) : sizeof(float), nn = (size_t)n * (size_t)n;
    void *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    wx_status s = WX_OK;
    float alpha = 1.0f, beta = 0.0f, ms = 0.0f;
    cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
#define GR_CUDA(call)                                                                         \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess && s == WX_OK)                                                  \
            s = wx_error_set(WX_ERR_RUN, "CUDA: %s failed: %s", #call, cudaGetErrorString(e_)); \
    } while (0)
#define GR_BLAS(call)                                                                         \
    do {                                                                                      \
        cublasStatus_t b_ = (call);                                                           \
        if (b_ != CUBLAS_STATUS_SUCCESS && s == WX_OK)                                        \
            s = wx_error_set(WX_ERR_RUN, "cuBLAS: %s failed: %s", #call,                      \
                             cublasGetStatusString(b_));                                      \
    } while (0)
    GR_CUDA(cudaMalloc(&a, nn * el));
    GR_CUDA(cudaMalloc(&b, nn * el));
    GR_CUDA(cudaMalloc(&c, nn * sizeof(float)));
    // Zero inputs: the rate of a dense GEMM does not depend on the values.
    if (s == WX_OK) GR_CUDA(cudaMemsetAsync(a, 0, nn * el, st->stream));
    if (s == WX_OK) GR_CUDA(cudaMemsetAsync(b, 0, nn * el, st->stream));
    GR_CUDA(cudaEventCreate(&e0));
    GR_CUDA(cudaEventCreate(&e1));
    for (int r = -1; r < reps && s == WX_OK; r++) {
        if (r == 0) GR_CUDA(cudaEventRecord(e0, st->stream));
        GR_BLAS(cublasGemmEx(st->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, t, n, b, t, n,
                             &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (s == WX_OK) GR_CUDA(cudaEventRecord(e1, st->stream));
    if (s == WX_OK) GR_CUDA(cudaEventSynchronize(e1));
    if (s == WX_OK) GR_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (s == WX_OK && ms > 0) *tflops = 2.0 * n * (double)n * n * reps / (ms * 1e-3) / 1e12;
#undef GR_CUDA
#undef GR_BLAS
    if (e0) (void)cudaEventDestroy(e0);
    if (e1) (void)cudaEventDestroy(e1);
    if (a) (void)cudaFree(a);
    if (b) (void)cudaFree(b);
    if (c) (void)cudaFree(c);
    return s;
}

extern "C" wx_status wx_cuda_mem_info(wx_ctx *ctx, size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = 0;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return WX_OK;
}
