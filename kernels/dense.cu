// Dense ops on the GPU: linear (cuBLAS), layernorm, element-wise activations, add, concat.
// Semantics are those of src/ops/dense.inc, which the CPU implementation (src/ops/dense.c) defines;
// shapes are repeated at each function. Patch embedding, unpatchify and positional embedding are
// in dense_patch.cu. Every parameter-gradient reduction is a fixed-order column sum in double
// (wx_cuda_col_sum_acc): no atomics, same bits every run.
#include <cuda_bf16.h>
#include <limits.h>

#include "wx_cuda_state.h"

// 1/sqrt(2) and 1/sqrt(2π), as the CPU's M_SQRT1_2 and 0.5·M_2_SQRTPI·M_SQRT1_2.
#define WX_SQRT1_2 0.70710678118654752440
#define WX_INV_SQRT_2PI 0.39894228040143267794

// cuBLAS takes int sizes; a dimension beyond that is a config the op cannot run.
static wx_status dims_check(const char *op, int64_t a, int64_t b, int64_t c) {
    if (a < 0 || b < 0 || c < 0 || a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return wx_error_set(WX_ERR_USAGE,
                            "%s: dimensions (%lld, %lld, %lld) must be in 0..%d for cuBLAS", op,
                            (long long)a, (long long)b, (long long)c, INT_MAX);
    return WX_OK;
}

static wx_status n_check(const char *op, int64_t n) {
    if (n < 0) return wx_error_set(WX_ERR_USAGE, "%s: n = %lld, expected >= 0", op, (long long)n);
    return WX_OK;
}

// ---- GEMM ----------------------------------------------------------------------------------

__global__ static void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, int64_t n) {
    WX_CUDA_FOR(i, n) dst[i] = __float2bfloat16(src[i]);
}
// Four at a time: src 16-byte and dst 8-byte aligned, n4 = n / 4 (the tail goes to the above).
__global__ static void to_bf16_x4_kernel(__nv_bfloat162 *dst, const float4 *src, int64_t n4) {
    WX_CUDA_FOR(i, n4) {
        float4 v = src[i];
        dst[2 * i] = __floats2bfloat162_rn(v.x, v.y);
        dst[2 * i + 1] = __floats2bfloat162_rn(v.z, v.w);
    }
}

// dst(n) = bf16(src(n)). The conversions are a memory-bound pass over every GEMM input, so the
// aligned bulk moves 16 bytes per load.
static wx_status to_bf16(wx_cuda_state *st, __nv_bfloat16 *dst, const float *src, int64_t n) {
    int64_t n4 = ((uintptr_t)src % 16 == 0 && (uintptr_t)dst % 8 == 0) ? n / 4 : 0;
    if (n4 > 0) {
        to_bf16_x4_kernel<<<wx_cuda_blocks(n4), WX_CUDA_THREADS, 0, st->stream>>>(
            (__nv_bfloat162 *)dst, (const float4 *)src, n4);
        WX_CUDA_LAUNCHED("to_bf16_x4_kernel");
    }
    if (n > 4 * n4) {
        to_bf16_kernel<<<wx_cuda_blocks(n - 4 * n4), WX_CUDA_THREADS, 0, st->stream>>>(
            dst + 4 * n4, src + 4 * n4, n - 4 * n4);
        WX_CUDA_LAUNCHED("to_bf16_kernel");
    }
    return WX_OK;
}

// Elements a row-major matrix with `rows` rows of `cols` used columns and leading dimension ld
// spans in memory.
static int64_t span(int64_t rows, int64_t cols, int64_t ld) { return (rows - 1) * ld + cols; }

// Bf16 copies of a linear op's operands, carved from one BF16 scratch request (each operand
// 256-byte aligned): converted once per op even when two GEMMs read the same operand (backward).
typedef struct {
    __nv_bfloat16 *p[3];
} bf16_operands;

static int64_t pad128(int64_t n) { return (n + 127) / 128 * 128; }

// ops[i] = bf16(src[i]) for the n[i] > 0 (src[i] non-NULL) of three operands.
static wx_status bf16_convert(wx_cuda_state *st, bf16_operands *o, const float *const src[3],
                              const int64_t n[3]) {
    int64_t total = 0;
    for (int i = 0; i < 3; i++) total += src[i] ? pad128(n[i]) : 0;
    __nv_bfloat16 *base;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_BF16, sizeof(__nv_bfloat16) * (size_t)(total ? total : 1),
                           (void **)&base));
    for (int i = 0; i < 3; i++) {
        o->p[i] = NULL;
        if (!src[i]) continue;
        o->p[i] = base;
        WX_TRY(to_bf16(st, base, src[i], n[i]));
        base += pad128(n[i]);
    }
    return WX_OK;
}

// Row-major C(m,n) = op(A)·op(B) + beta·C with op = transpose when ta / tb. cuBLAS is column-major,
// and a row-major matrix is its transpose in column-major, so this is Cᵀ = op(B)ᵀ·op(A)ᵀ: the
// operands swap places and keep their transpose flags. m, n, k ≥ 1 and all ≤ INT_MAX (checked by
// the callers). a16 / b16: the operands already in bf16 (bf16 mode), else a / b in fp32.
static wx_status gemm_rm_any(wx_cuda_state *st, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             const float *a, const __nv_bfloat16 *a16, int64_t lda, const float *b,
                             const __nv_bfloat16 *b16, int64_t ldb, float beta, float *c,
                             int64_t ldc) {
    const float alpha = 1.0f;
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (st->precision == WX_CUDA_FP32) {
        WX_CUBLAS_CHECK(cublasSgemm(st->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, b, (int)ldb,
                                    a, (int)lda, &beta, c, (int)ldc));
        return WX_OK;
    }
    WX_CUBLAS_CHECK(cublasGemmEx(st->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, b16,
                                 CUDA_R_16BF, (int)ldb, a16, CUDA_R_16BF, (int)lda, &beta, c,
                                 CUDA_R_32F, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return WX_OK;
}

// The same from fp32 operands: in bf16 mode both are rounded to bf16 first (fp32 accumulation).
static wx_status gemm_rm(wx_cuda_state *st, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                         float *c, int64_t ldc) {
    if (st->precision == WX_CUDA_FP32)
        return gemm_rm_any(st, ta, tb, m, n, k, a, NULL, lda, b, NULL, ldb, beta, c, ldc);
    const float *src[3] = {a, b, NULL};
    const int64_t len[3] = {ta ? span(k, m, lda) : span(m, k, lda),
                            tb ? span(n, k, ldb) : span(k, n, ldb), 0};
    bf16_operands o;
    WX_TRY(bf16_convert(st, &o, src, len));
    return gemm_rm_any(st, ta, tb, m, n, k, NULL, o.p[0], lda, NULL, o.p[1], ldb, beta, c, ldc);
}

// ---- linear ------------------------------------------------------------------------------

// y(rows, cols)[r, :] = b(cols): one block per row (grid-stride), so no per-element division.
__global__ static void bias_rows_kernel(float *y, const float *b, int64_t rows, int64_t cols) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) y[r * cols + j] = b[j];
}

extern "C" wx_status wx_cuda_linear_forward(wx_ctx *ctx, float *y, const float *x, const float *w,
                                            const float *b, int64_t n, int64_t in, int64_t out) {
    // y(N,out), x(N,in), w(out,in), b(out) nullable
    WX_TRY(dims_check("linear_forward", n, in, out));
    if (n == 0 || out == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    if (b) {
        // Bias rows first, then the GEMM with beta = 1: no second pass over y.
        bias_rows_kernel<<<wx_cuda_blocks(n * WX_CUDA_THREADS), WX_CUDA_THREADS, 0, st->stream>>>(
            y, b, n, out);
        WX_CUDA_LAUNCHED("bias_rows_kernel");
    }
    if (in == 0) {
        if (!b) WX_CUDA_CHECK(cudaMemsetAsync(y, 0, sizeof(float) * (size_t)(n * out), st->stream));
        return WX_OK;
    }
    // y = x·wᵀ (+ y)
    return gemm_rm(st, false, true, n, out, in, x, in, w, in, b ? 1.0f : 0.0f, y, out);
}

// Differentiates y = x·wᵀ + b.
extern "C" wx_status wx_cuda_linear_backward(wx_ctx *ctx, float *dx, float *dw, float *db,
                                             const float *dy, const float *x, const float *w,
                                             int64_t n, int64_t in, int64_t out) {
    // dx(N,in) overwrite nullable, dw(out,in) +=, db(out) += nullable, dy(N,out), x(N,in),
    // w(out,in)
    WX_TRY(dims_check("linear_backward", n, in, out));
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    const bool want_dx = dx && in > 0 && out > 0, want_dw = dw && out > 0 && in > 0;
    if (dx && in > 0 && out == 0)
        WX_CUDA_CHECK(cudaMemsetAsync(dx, 0, sizeof(float) * (size_t)(n * in), st->stream));
    // In bf16 mode dy, w and x are converted once for both GEMMs (dy is as large as the output).
    bf16_operands o = {{NULL, NULL, NULL}};
    if (st->precision != WX_CUDA_FP32 && (want_dx || want_dw)) {
        const float *src[3] = {dy, want_dx ? w : NULL, want_dw ? x : NULL};
        const int64_t len[3] = {n * out, out * in, n * in};
        WX_TRY(bf16_convert(st, &o, src, len));
    }
    if (want_dx) // dx = dy·w
        WX_TRY(gemm_rm_any(st, false, false, n, in, out, dy, o.p[0], out, w, o.p[1], in, 0.0f, dx,
                           in));
    if (want_dw) // dw += dyᵀ·x
        WX_TRY(gemm_rm_any(st, true, false, out, in, n, dy, o.p[0], out, x, o.p[2], in, 1.0f, dw,
                           in));
    if (db) WX_TRY(wx_cuda_col_sum_acc(st, db, dy, n, out, 0));
    return WX_OK;
}

// ---- layernorm ---------------------------------------------------------------------------

// One block per row (grid-stride over rows; the row loop is uniform across the block, so the
// barriers inside wx_block_sum are reached by every thread). Two passes in double, as the CPU:
// the one-pass E[x²]−E[x]² loses digits when |mean| ≫ std.
__global__ static void layernorm_fwd_kernel(float *y, float *mean, float *rstd, const float *x,
                                            const float *gamma, const float *beta, int64_t n,
                                            int64_t c, double eps) {
    __shared__ double sh[WX_CUDA_THREADS];
    for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
        const float *xr = x + r * c;
        double s = 0;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += xr[j];
        double mu = wx_block_sum(s, sh) / (double)c;
        double v = 0;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) v += (xr[j] - mu) * (xr[j] - mu);
        double rs = 1.0 / sqrt(wx_block_sum(v, sh) / (double)c + eps);
        float *yr = y + r * c;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
            yr[j] = (float)((xr[j] - mu) * rs * gamma[j] + beta[j]);
        if (threadIdx.x == 0) {
            mean[r] = (float)mu;
            rstd[r] = (float)rs;
        }
    }
}

// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·gamma, x̂ = (x − mean)·rstd; one block per row.
__global__ static void layernorm_bwd_dx_kernel(float *dx, const float *dy, const float *x,
                                               const float *mean, const float *rstd,
                                               const float *gamma, int64_t n, int64_t c) {
    __shared__ double sh[WX_CUDA_THREADS];
    for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
        const float *xr = x + r * c, *dyr = dy + r * c;
        double mu = mean[r], rs = rstd[r], sg = 0, sgx = 0;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
            double g = (double)dyr[j] * gamma[j];
            sg += g;
            sgx += g * (xr[j] - mu) * rs;
        }
        sg = wx_block_sum(sg, sh) / (double)c;
        sgx = wx_block_sum(sgx, sh) / (double)c;
        float *dxr = dx + r * c;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
            double g = (double)dyr[j] * gamma[j];
            dxr[j] = (float)(rs * (g - sg - (xr[j] - mu) * rs * sgx));
        }
    }
}

// Partials of dgamma = Σ_r dy·x̂ and dbeta = Σ_r dy over fixed row chunks (pg, pb: (nchunks, C)).
__global__ static void layernorm_bwd_param_kernel(double *pg, double *pb, const float *dy,
                                                  const float *x, const float *mean,
                                                  const float *rstd, int64_t n, int64_t c,
                                                  int64_t nchunks) {
    WX_CUDA_FOR(i, nchunks * c) {
        int64_t k = i / c, j = i % c;
        int64_t r0 = k * WX_COL_CHUNK, r1 = r0 + WX_COL_CHUNK < n ? r0 + WX_COL_CHUNK : n;
        double sg = 0, sb = 0;
        for (int64_t r = r0; r < r1; r++) {
            double d = dy[r * c + j];
            sg += d * ((x[r * c + j] - (double)mean[r]) * (double)rstd[r]);
            sb += d;
        }
        pg[i] = sg;
        pb[i] = sb;
    }
}

static unsigned row_blocks(int64_t n) { return (unsigned)(n < (1 << 20) ? n : (1 << 20)); }

extern "C" wx_status wx_cuda_layernorm_forward(wx_ctx *ctx, float *y, float *mean, float *rstd,
                                               const float *x, const float *gamma,
                                               const float *beta, int64_t n, int64_t c,
                                               double eps) {
    // y(N,C), mean(N), rstd(N) saved, x(N,C), gamma(C), beta(C)
    if (c <= 0 || n < 0)
        return wx_error_set(WX_ERR_USAGE, "layernorm_forward: N = %lld, C = %lld, expected N >= 0 "
                            "and C > 0", (long long)n, (long long)c);
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    layernorm_fwd_kernel<<<row_blocks(n), WX_CUDA_THREADS, 0, st->stream>>>(y, mean, rstd, x, gamma,
                                                                             beta, n, c, eps);
    WX_CUDA_LAUNCHED("layernorm_fwd_kernel");
    return WX_OK;
}

// Differentiates y = (x − mean)·rstd·gamma + beta (mean, rstd functions of the row x).
extern "C" wx_status wx_cuda_layernorm_backward(wx_ctx *ctx, float *dx, float *dgamma,
                                                float *dbeta, const float *dy, const float *x,
                                                const float *mean, const float *rstd,
                                                const float *gamma, int64_t n, int64_t c) {
    // dx(N,C) overwrite nullable, dgamma(C) +=, dbeta(C) +=, dy(N,C), x(N,C), mean(N), rstd(N),
    // gamma(C)
    if (c <= 0 || n < 0)
        return wx_error_set(WX_ERR_USAGE, "layernorm_backward: N = %lld, C = %lld, expected N >= 0 "
                            "and C > 0", (long long)n, (long long)c);
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    if (dx) {
        layernorm_bwd_dx_kernel<<<row_blocks(n), WX_CUDA_THREADS, 0, st->stream>>>(
            dx, dy, x, mean, rstd, gamma, n, c);
        WX_CUDA_LAUNCHED("layernorm_bwd_dx_kernel");
    }
    if (!dgamma && !dbeta) return WX_OK;
    int64_t nchunks = (n + WX_COL_CHUNK - 1) / WX_COL_CHUNK;
    double *pg;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * 2 * (size_t)(nchunks * c),
                           (void **)&pg));
    double *pb = pg + nchunks * c;
    layernorm_bwd_param_kernel<<<wx_cuda_blocks(nchunks * c), WX_CUDA_THREADS, 0, st->stream>>>(
        pg, pb, dy, x, mean, rstd, n, c, nchunks);
    WX_CUDA_LAUNCHED("layernorm_bwd_param_kernel");
    if (dgamma) WX_TRY(wx_cuda_col_sum_finish(st, dgamma, pg, nchunks, c, 0));
    if (dbeta) WX_TRY(wx_cuda_col_sum_finish(st, dbeta, pb, nchunks, c, 0));
    return WX_OK;
}

// ---- element-wise activations ------------------------------------------------------------
// Same float formulas as the CPU (erff, expf at full precision: no fast-math).

__device__ __forceinline__ float phi_cdf(float v) {
    return 0.5f * (1.0f + erff(v * (float)WX_SQRT1_2));
}
__device__ __forceinline__ float phi_pdf(float v) {
    return expf(-0.5f * v * v) * (float)WX_INV_SQRT_2PI;
}

__global__ static void gelu_fwd_kernel(float *y, const float *x, int64_t n) {
    WX_CUDA_FOR(i, n) { float v = x[i]; y[i] = v * phi_cdf(v); }
}
__global__ static void gelu_bwd_kernel(float *dx, const float *dy, const float *x, int64_t n) {
    WX_CUDA_FOR(i, n) { float v = x[i]; dx[i] = dy[i] * (phi_cdf(v) + v * phi_pdf(v)); }
}
__global__ static void silu_fwd_kernel(float *y, const float *x, int64_t n) {
    WX_CUDA_FOR(i, n) { float v = x[i]; y[i] = v / (1.0f + expf(-v)); }
}
__global__ static void silu_bwd_kernel(float *dx, const float *dy, const float *x, int64_t n) {
    WX_CUDA_FOR(i, n) {
        float v = x[i], s = 1.0f / (1.0f + expf(-v));
        dx[i] = dy[i] * s * (1.0f + v * (1.0f - s));
    }
}
__global__ static void relu_fwd_kernel(float *y, const float *x, int64_t n) {
    WX_CUDA_FOR(i, n) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
__global__ static void relu_bwd_kernel(float *dx, const float *dy, const float *x, int64_t n) {
    WX_CUDA_FOR(i, n) dx[i] = x[i] > 0 ? dy[i] : 0.0f;
}
__global__ static void softshrink_fwd_kernel(float *y, const float *x, int64_t n, float l) {
    WX_CUDA_FOR(i, n) { float v = x[i]; y[i] = v > l ? v - l : (v < -l ? v + l : 0.0f); }
}
__global__ static void softshrink_bwd_kernel(float *dx, const float *dy, const float *x, int64_t n,
                                             float l) {
    WX_CUDA_FOR(i, n) { float v = x[i]; dx[i] = (v > l || v < -l) ? dy[i] : 0.0f; }
}
__global__ static void add_fwd_kernel(float *y, const float *a, const float *b, int64_t n) {
    WX_CUDA_FOR(i, n) y[i] = a[i] + b[i];
}

// Launches an element-wise kernel over n items on the context's stream (n = 0: nothing to do).
#define ELEMENTWISE(opname, kernel, n, ...)                                                  \
    do {                                                                                     \
        WX_TRY(n_check(opname, n));                                                          \
        if ((n) == 0) return WX_OK;                                                          \
        wx_cuda_state *st_;                                                                  \
        WX_TRY(wx_cuda_state_get(ctx, &st_));                                                \
        kernel<<<wx_cuda_blocks(n), WX_CUDA_THREADS, 0, st_->stream>>>(__VA_ARGS__);         \
        WX_CUDA_LAUNCHED(#kernel);                                                           \
        return WX_OK;                                                                        \
    } while (0)

// y(n), x(n): y = x·Φ(x)
extern "C" wx_status wx_cuda_gelu_forward(wx_ctx *ctx, float *y, const float *x, int64_t n) {
    ELEMENTWISE("gelu_forward", gelu_fwd_kernel, n, y, x, n);
}
// Differentiates y = x·Φ(x): y' = Φ(x) + x·φ(x). dx(n) overwrite, dy(n), x(n)
extern "C" wx_status wx_cuda_gelu_backward(wx_ctx *ctx, float *dx, const float *dy, const float *x,
                                           int64_t n) {
    ELEMENTWISE("gelu_backward", gelu_bwd_kernel, n, dx, dy, x, n);
}
// y(n), x(n): y = x·σ(x)
extern "C" wx_status wx_cuda_silu_forward(wx_ctx *ctx, float *y, const float *x, int64_t n) {
    ELEMENTWISE("silu_forward", silu_fwd_kernel, n, y, x, n);
}
// Differentiates y = x·σ(x): y' = σ(x)·(1 + x·(1 − σ(x))). dx(n) overwrite, dy(n), x(n)
extern "C" wx_status wx_cuda_silu_backward(wx_ctx *ctx, float *dx, const float *dy, const float *x,
                                           int64_t n) {
    ELEMENTWISE("silu_backward", silu_bwd_kernel, n, dx, dy, x, n);
}
// y(n), x(n)
extern "C" wx_status wx_cuda_relu_forward(wx_ctx *ctx, float *y, const float *x, int64_t n) {
    ELEMENTWISE("relu_forward", relu_fwd_kernel, n, y, x, n);
}
// Differentiates y = max(x, 0) (gradient 0 at x = 0, as torch). dx(n) overwrite, dy(n), x(n)
extern "C" wx_status wx_cuda_relu_backward(wx_ctx *ctx, float *dx, const float *dy, const float *x,
                                           int64_t n) {
    ELEMENTWISE("relu_backward", relu_bwd_kernel, n, dx, dy, x, n);
}
// y(n), x(n): y = sign(x)·max(|x| − λ, 0)
extern "C" wx_status wx_cuda_softshrink_forward(wx_ctx *ctx, float *y, const float *x, int64_t n,
                                                double lambda) {
    ELEMENTWISE("softshrink_forward", softshrink_fwd_kernel, n, y, x, n, (float)lambda);
}
// Differentiates y = sign(x)·max(|x| − λ, 0): y' = [|x| > λ]. dx(n) overwrite, dy(n), x(n)
extern "C" wx_status wx_cuda_softshrink_backward(wx_ctx *ctx, float *dx, const float *dy,
                                                 const float *x, int64_t n, double lambda) {
    ELEMENTWISE("softshrink_backward", softshrink_bwd_kernel, n, dx, dy, x, n, (float)lambda);
}

// ---- add, concat -------------------------------------------------------------------------

// y(n) (may alias a or b), a(n), b(n)
extern "C" wx_status wx_cuda_add_forward(wx_ctx *ctx, float *y, const float *a, const float *b,
                                         int64_t n) {
    ELEMENTWISE("add_forward", add_fwd_kernel, n, y, a, b, n);
}

// Differentiates y = a + b. da(n), db(n) overwrite nullable (either may be dy itself), dy(n)
extern "C" wx_status wx_cuda_add_backward(wx_ctx *ctx, float *da, float *db, const float *dy,
                                          int64_t n) {
    WX_TRY(n_check("add_backward", n));
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    size_t bytes = sizeof(float) * (size_t)n;
    if (da && da != dy)
        WX_CUDA_CHECK(cudaMemcpyAsync(da, dy, bytes, cudaMemcpyDeviceToDevice, st->stream));
    if (db && db != dy)
        WX_CUDA_CHECK(cudaMemcpyAsync(db, dy, bytes, cudaMemcpyDeviceToDevice, st->stream));
    return WX_OK;
}

static wx_status concat_total(const char *op, const int64_t *cs, int k, int64_t n, int64_t *ctot) {
    *ctot = 0;
    if (k < 0 || n < 0)
        return wx_error_set(WX_ERR_USAGE, "%s: k = %d, n = %lld, expected both >= 0", op, k,
                            (long long)n);
    for (int i = 0; i < k; i++) {
        if (cs[i] < 0)
            return wx_error_set(WX_ERR_USAGE, "%s: c[%d] = %lld < 0", op, i, (long long)cs[i]);
        *ctot += cs[i];
    }
    return WX_OK;
}

// Each input is a (N, c_i) block of columns of y: one strided 2-D copy per input.
extern "C" wx_status wx_cuda_concat_forward(wx_ctx *ctx, float *y, const float *const *xs,
                                            const int64_t *cs, int k, int64_t n) {
    // y(N, Σc) device, xs[i](N, c_i) device pointers in a host array, cs(k) host
    int64_t ctot;
    WX_TRY(concat_total("concat_forward", cs, k, n, &ctot));
    if (n == 0 || ctot == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        if (cs[i] > 0)
            WX_CUDA_CHECK(cudaMemcpy2DAsync(y + off, sizeof(float) * (size_t)ctot, xs[i],
                                            sizeof(float) * (size_t)cs[i],
                                            sizeof(float) * (size_t)cs[i], (size_t)n,
                                            cudaMemcpyDeviceToDevice, st->stream));
        off += cs[i];
    }
    return WX_OK;
}

// Differentiates y = [x_0 | ... | x_{k−1}] along the last axis.
extern "C" wx_status wx_cuda_concat_backward(wx_ctx *ctx, float *const *dxs, const float *dy,
                                             const int64_t *cs, int k, int64_t n) {
    // dxs[i](N, c_i) overwrite (entry nullable; host array of device pointers), dy(N, Σc), cs(k)
    int64_t ctot;
    WX_TRY(concat_total("concat_backward", cs, k, n, &ctot));
    if (n == 0 || ctot == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        if (cs[i] > 0 && dxs[i])
            WX_CUDA_CHECK(cudaMemcpy2DAsync(dxs[i], sizeof(float) * (size_t)cs[i], dy + off,
                                            sizeof(float) * (size_t)ctot,
                                            sizeof(float) * (size_t)cs[i], (size_t)n,
                                            cudaMemcpyDeviceToDevice, st->stream));
        off += cs[i];
    }
    return WX_OK;
}
