/* Dense ops on the CPU: linear, layernorm, element-wise activations, add, concat, patch embedding,
 * unpatchify and positional embedding. Signatures and shapes: ops/dense.inc. Compiled twice
 * (float32, and float64 with the _f64 suffix) through ops/wx_real.h.
 *
 * Determinism: every reduction over rows (bias, gamma/beta, pos grads) is done per column in row
 * order, so results do not depend on the thread count either. GEMMs go to OpenBLAS through
 * wx_gemm_par (ops/wx_gemm.h): one slab of the output per OpenMP thread, one thread pool. */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "ops/wx_dense_act.h"
#include "ops/wx_gemm.h"
#include "ops/wx_ln_rows.h"
#include "ops/wx_ops.h"
#include "ops/wx_real.h"
#define WXR wx_real
#define WXF WX_FN

/* Below this many elements a parallel region costs more than it saves. */
#define WX_DENSE_PAR_MIN (1 << 15)
/* Column reductions (bias and LayerNorm parameter gradients): each thread owns a block of
 * columns and walks the rows in order, so every column's sum is one chain in row order whatever
 * the block widths (results independent of the thread count). Blocks are as wide as the thread
 * count allows, up to 2048 columns (16 KB of double accumulators, in L1): each row is then read as
 * one long contiguous run; 64-column blocks read 256-byte pieces 4 KB apart and stalled on them. */
#define WX_DENSE_COL_MAX 2048
/* LayerNorm rows per task. */
#define DENSE_LN_ROWS 16

static int dense_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

/* cblas takes int sizes; a dimension beyond that is a config the op cannot run. */
static wx_status dense_check_blas_dims(const char *op, int64_t a, int64_t b, int64_t c) {
    if (a < 0 || b < 0 || c < 0 || a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return wx_error_set(WX_ERR_USAGE,
                            "%s: dimensions (%lld, %lld, %lld) must be in 0..%d for BLAS", op,
                            (long long)a, (long long)b, (long long)c, INT_MAX);
    return WX_OK;
}

/* Width of the column blocks for `cols` columns (a multiple of 8). */
static int64_t dense_col_width(const wx_ctx *ctx, int64_t cols) {
    int64_t nt = dense_threads(ctx), w = (cols + nt - 1) / nt;
    w = (w + 7) / 8 * 8;
    return w > WX_DENSE_COL_MAX ? WX_DENSE_COL_MAX : w < 8 ? 8 : w;
}

/* acc(cols) += Σ_r m(rows, cols)[r, :], summed in double in row order. */
static void dense_col_sum_acc(const wx_ctx *ctx, WXR *acc, const WXR *m, int64_t rows,
                              int64_t cols) {
    int64_t width = dense_col_width(ctx, cols), nblk = (cols + width - 1) / width;
#pragma omp parallel for num_threads(dense_threads(ctx)) if (rows * cols > WX_DENSE_PAR_MIN) \
    schedule(static)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * width, c1 = c0 + width < cols ? c0 + width : cols;
        double *s = wx_calloc((size_t)width, sizeof *s);
        /* Vectorised across columns: each column stays its own chain, no result changes. */
        for (int64_t r = 0; r < rows; r++) {
            const WXR *row = m + r * cols + c0;
#pragma omp simd
            for (int64_t j = 0; j < c1 - c0; j++) s[j] += row[j];
        }
        for (int64_t j = c0; j < c1; j++) acc[j] += (WXR)s[j - c0];
        free(s);
    }
}

/* ---- linear ------------------------------------------------------------------------------ */

wx_status WXF(wx_cpu_linear_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const WXR *w, const WXR *b,
                                     int64_t n, int64_t in, int64_t out) {
    /* y(N,out), x(N,in), w(out,in), b(out) nullable */
    WX_TRY(dense_check_blas_dims("linear_forward", n, in, out));
    if (n == 0 || out == 0) return WX_OK;
    if (in == 0) {
        if (b) {
            for (int64_t r = 0; r < n; r++) memcpy(y + r * out, b, sizeof(WXR) * out);
        } else {
            memset(y, 0, sizeof(WXR) * n * out);
        }
        return WX_OK;
    }
    /* With a bias: bias rows first, then GEMM with beta = 1, slab by slab (no second pass). */
    if (b)
        WX_FN(wx_gemm_par_bias)(ctx, CblasNoTrans, CblasTrans, n, out, in, x, in, w, in, b, y, out);
    else
        WX_FN(wx_gemm_par)(ctx, CblasNoTrans, CblasTrans, n, out, in, 1, x, in, w, in, 0, y, out);
    return WX_OK;
}

/* Differentiates y = x·wᵀ + b. */
wx_status WXF(wx_cpu_linear_backward)(wx_ctx *ctx, WXR *dx, WXR *dw, WXR *db, const WXR *dy,
                                      const WXR *x, const WXR *w, int64_t n, int64_t in, int64_t out) {
    /* dx(N,in) overwrite nullable, dw(out,in) +=, db(out) += nullable, dy(N,out), x(N,in),
     * w(out,in) */
    WX_TRY(dense_check_blas_dims("linear_backward", n, in, out));
    if (dx && n > 0 && in > 0) {
        if (out == 0)
            memset(dx, 0, sizeof(WXR) * n * in);
        else
            WX_FN(wx_gemm_par)(ctx, CblasNoTrans, CblasNoTrans, n, in, out, 1, dy, out, w, in, 0,
                               dx, in);
    }
    if (n == 0) return WX_OK;
    if (dw && out > 0 && in > 0)
        WX_FN(wx_gemm_par)(ctx, CblasTrans, CblasNoTrans, out, in, n, 1, dy, out, x, in, 1, dw, in);
    if (db) dense_col_sum_acc(ctx, db, dy, n, out);
    return WX_OK;
}

/* ---- layernorm --------------------------------------------------------------------------- */

wx_status WXF(wx_cpu_layernorm_forward)(wx_ctx *ctx, WXR *y, WXR *mean, WXR *rstd, const WXR *x,
                                        const WXR *gamma, const WXR *beta, int64_t n, int64_t c,
                                        double eps) {
    /* y(N,C), mean(N), rstd(N) saved, x(N,C), gamma(C), beta(C) */
    if (c <= 0) return wx_error_set(WX_ERR_USAGE, "layernorm_forward: C = %lld, expected > 0",
                                    (long long)c);
    /* Rows in fixed blocks shared by the team; the row kernels are in layernorm_rows.c. */
    int64_t nblk = (n + DENSE_LN_ROWS - 1) / DENSE_LN_ROWS;
#pragma omp parallel for num_threads(dense_threads(ctx)) if (n * c > WX_DENSE_PAR_MIN) \
    schedule(static)
    for (int64_t k = 0; k < nblk; k++) {
        int64_t r1 = (k + 1) * DENSE_LN_ROWS < n ? (k + 1) * DENSE_LN_ROWS : n;
        WX_FN(wx_ln_rows_forward)(y, mean, rstd, x, gamma, beta, k * DENSE_LN_ROWS, r1, c, eps);
    }
    return WX_OK;
}

/* Differentiates y = (x − mean)·rstd·gamma + beta, with mean and rstd functions of the row x:
 * with g = dy·gamma and x̂ = (x − mean)·rstd, dx = rstd·(g − mean(g) − x̂·mean(g·x̂)). */
wx_status WXF(wx_cpu_layernorm_backward)(wx_ctx *ctx, WXR *dx, WXR *dgamma, WXR *dbeta,
                                         const WXR *dy, const WXR *x, const WXR *mean,
                                         const WXR *rstd, const WXR *gamma, int64_t n, int64_t c) {
    /* dx(N,C) overwrite nullable, dgamma(C) +=, dbeta(C) +=, dy(N,C), x(N,C), mean(N), rstd(N),
     * gamma(C) */
    if (c <= 0) return wx_error_set(WX_ERR_USAGE, "layernorm_backward: C = %lld, expected > 0",
                                    (long long)c);
    int nt = dense_threads(ctx);
    int par = n * c > WX_DENSE_PAR_MIN;
    if (dx) {
        int64_t nblk = (n + DENSE_LN_ROWS - 1) / DENSE_LN_ROWS;
#pragma omp parallel for num_threads(nt) if (par) schedule(static)
        for (int64_t k = 0; k < nblk; k++) {
            int64_t r1 = (k + 1) * DENSE_LN_ROWS < n ? (k + 1) * DENSE_LN_ROWS : n;
            WX_FN(wx_ln_rows_backward)(dx, dy, x, mean, rstd, gamma, k * DENSE_LN_ROWS, r1, c);
        }
    }
    if (!dgamma && !dbeta) return WX_OK;
    int64_t width = dense_col_width(ctx, c), nblk = (c + width - 1) / width;
#pragma omp parallel for num_threads(nt) if (par) schedule(static)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * width, c1 = c0 + width < c ? c0 + width : c;
        double *sgam = wx_calloc(2 * (size_t)width, sizeof *sgam), *sbet = sgam + width;
        for (int64_t r = 0; r < n; r++) {
            const WXR *xr = x + r * c + c0, *dyr = dy + r * c + c0;
            double mu = mean[r], rs = rstd[r];
#pragma omp simd
            for (int64_t j = 0; j < c1 - c0; j++) {
                sgam[j] += (double)dyr[j] * ((xr[j] - mu) * rs);
                sbet[j] += dyr[j];
            }
        }
        for (int64_t j = c0; j < c1; j++) {
            if (dgamma) dgamma[j] += (WXR)sgam[j - c0];
            if (dbeta) dbeta[j] += (WXR)sbet[j - c0];
        }
        free(sgam);
    }
    return WX_OK;
}

/* ---- element-wise activations ------------------------------------------------------------ */

/* One loop shape for every element-wise op: `stmt` for each i in 0..n−1, with `n` and `ctx` taken
 * from the calling function. */
#define DENSE_MAP(stmt)                                                                        \
    do {                                                                                       \
        _Pragma("omp parallel for num_threads(dense_threads(ctx)) if (n > WX_DENSE_PAR_MIN)") \
        for (int64_t i = 0; i < n; i++) { stmt; }                                              \
    } while (0)

/* GCC will not if-convert (so not vectorise) the clamps below under -ftrapping-math. Allowing
 * no traps changes no result (no reassociation): only which code may run. fp-contract=off: gnu11
 * lets GCC fuse a·b + c into an FMA wherever the target has one, which would make the AVX2+FMA
 * loops below round differently from the baseline ones; the float GELU's FMAs are written out
 * (DENSE_FMA) instead, the same in every variant. */
#define DENSE_NO_TRAP __attribute__((optimize("no-trapping-math", "fp-contract=off")))

#ifdef WX_REAL_DOUBLE
#define DENSE_ERF(v) WX_ERF(v)
#else
/* Fused multiply-add, rounded once: one instruction in the AVX2+FMA loops, libm's fmaf (exact,
 * slow) in the baseline ones, so both give the same bits. */
#define DENSE_FMA(a, b, c) __builtin_fmaf((a), (b), (c))
/* erf in float as a branch-free rational function of x (Eigen's generic_fast_erf_float):
 * |error| < 5e-7 everywhere (checked against double erf on a 1e-5 grid over [-10, 10]), and it
 * vectorises, where libm's erff is a scalar call: erff was the largest cost outside the GEMMs of
 * a FourCastNet training step (perf on tests/bench/bench_fcn.c, three GELU passes per block). */
DENSE_NO_TRAP static inline float dense_erf(float x) {
    /* erf(±4) is ±1 in float. A NaN x maps to ±1 here; GELU's factor x keeps it NaN. */
    x = x < 4.0f ? x : 4.0f;
    x = x > -4.0f ? x : -4.0f;
    float x2 = x * x;
    float p = DENSE_FMA(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
    p = DENSE_FMA(x2, p, -2.10102402082508e-06f);
    p = DENSE_FMA(x2, p, -5.69250639462346e-05f);
    p = DENSE_FMA(x2, p, -7.34990630326855e-04f);
    p = DENSE_FMA(x2, p, -2.95459980854025e-03f);
    p = DENSE_FMA(x2, p, -1.60960333262415e-02f);
    float q = DENSE_FMA(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
    q = DENSE_FMA(x2, q, -1.68282697438203e-03f);
    q = DENSE_FMA(x2, q, -7.37332916720468e-03f);
    q = DENSE_FMA(x2, q, -1.42647390514189e-02f);
    return x * p / q;
}
#define DENSE_ERF(v) dense_erf(v)

/* exp in float, branch-free so it vectorises (libm's expf is a scalar call): Cody-Waite
 * reduction x = n·ln2 + r, Cephes' degree-6 polynomial for exp(r), 2^n by the exponent bits.
 * Relative error < 1e-7 on [−87, 88] (checked against double exp on a 1e-4 grid); arguments are
 * clamped to that range (GELU's backward only needs x ≤ 0). */
DENSE_NO_TRAP static inline float dense_exp(float x) {
    x = x > -87.0f ? x : -87.0f;
    x = x < 88.0f ? x : 88.0f;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = DENSE_FMA(-n, 0.693359375f, x);
    r = DENSE_FMA(-n, -2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = DENSE_FMA(p, r, 1.3981999507e-3f);
    p = DENSE_FMA(p, r, 8.3334519073e-3f);
    p = DENSE_FMA(p, r, 4.1665795894e-2f);
    p = DENSE_FMA(p, r, 1.6666665459e-1f);
    p = DENSE_FMA(p, r, 5.0000001201e-1f);
    p = DENSE_FMA(p * r, r, r) + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}
#endif

/* Φ(x) and φ(x) of the standard normal, in the working precision. */
#define DENSE_PHI_CDF(v) ((WXR)0.5 * ((WXR)1 + DENSE_ERF((v) * (WXR)M_SQRT1_2)))
#ifdef WX_REAL_DOUBLE
#define DENSE_PHI_PDF(v) (WX_EXP((WXR)-0.5 * (v) * (v)) * (WXR)(0.5 * M_2_SQRTPI * M_SQRT1_2))
#else
#define DENSE_PHI_PDF(v) (dense_exp(-0.5f * (v) * (v)) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2))
#endif

#ifndef WX_REAL_DOUBLE
/* The float GELU loops exist twice: for the build's baseline ISA and for AVX2 + FMA, picked at run
 * time. Both are the same element-wise source with the same explicit FMAs and no other
 * contraction, so they give identical bits; AVX2 + FMA doubles the vector width of these
 * compute-bound loops and makes each polynomial step one instruction (the baseline pays a libm
 * fmaf call per FMA: CPUs without AVX2 are rare, and they stay correct). In cache the FMA form ran
 * the backward's combined pass at 1.49 against 1.96 ns per element (one core). */
#define DENSE_AVX2 __attribute__((target("avx2,fma")))
/* The AVX2 + FMA variants run only where the CPU has both. */
static int dense_avx2_fma(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#define DENSE_MAP_CHUNK (1 << 14)

typedef void (*dense_map2_fn)(float *out, const float *a, const float *b, int64_t n);

#define DENSE_GELU_FWD_LOOP                                                  \
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                    \
        float v = a[i];                                                      \
        out[i] = v * DENSE_PHI_CDF(v);                                       \
    }
#define DENSE_GELU_BWD_LOOP                                                  \
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                    \
        float v = b[i];                                                      \
        out[i] = a[i] * DENSE_FMA(v, DENSE_PHI_PDF(v), DENSE_PHI_CDF(v));    \
    }
/* out = GELU(a) */
DENSE_NO_TRAP static void dense_gelu_fwd_base(float *out, const float *a, const float *b, int64_t n) {
    (void)b;
    DENSE_GELU_FWD_LOOP
}
DENSE_NO_TRAP DENSE_AVX2 static void dense_gelu_fwd_avx2(float *out, const float *a, const float *b,
                                                         int64_t n) {
    (void)b;
    DENSE_GELU_FWD_LOOP
}
/* out = a·GELU'(b) */
DENSE_NO_TRAP static void dense_gelu_bwd_base(float *out, const float *a, const float *b, int64_t n) {
    DENSE_GELU_BWD_LOOP
}
DENSE_NO_TRAP DENSE_AVX2 static void dense_gelu_bwd_avx2(float *out, const float *a, const float *b,
                                                         int64_t n) {
    DENSE_GELU_BWD_LOOP
}

/* out = a·GELU'(b) and g = GELU(b), sharing Φ(b): the fused backward recomputes the activation
 * for the next layer's weight gradient in the same pass (ops/dense_fused.c). */
#define DENSE_GELU_BOTH_LOOP                                                 \
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                    \
        float v = b[i], cdf = DENSE_PHI_CDF(v);                              \
        g[i] = v * cdf;                                                      \
        out[i] = a[i] * DENSE_FMA(v, DENSE_PHI_PDF(v), cdf);                 \
    }
DENSE_NO_TRAP static void dense_gelu_both_base(float *out, float *g, const float *a, const float *b,
                                               int64_t n) {
    DENSE_GELU_BOTH_LOOP
}
DENSE_NO_TRAP DENSE_AVX2 static void dense_gelu_both_avx2(float *out, float *g, const float *a,
                                                          const float *b, int64_t n) {
    DENSE_GELU_BOTH_LOOP
}

/* f over n elements in fixed chunks shared by the team (b may be NULL). */
static void dense_map2(const wx_ctx *ctx, dense_map2_fn f, float *out, const float *a,
                       const float *b, int64_t n) {
    int64_t nchunk = (n + DENSE_MAP_CHUNK - 1) / DENSE_MAP_CHUNK;
#pragma omp parallel for num_threads(dense_threads(ctx)) if (n > WX_DENSE_PAR_MIN) schedule(static)
    for (int64_t k = 0; k < nchunk; k++) {
        int64_t i0 = k * DENSE_MAP_CHUNK, len = n - i0 < DENSE_MAP_CHUNK ? n - i0 : DENSE_MAP_CHUNK;
        f(out + i0, a + i0, b ? b + i0 : NULL, len);
    }
}
#endif

/* Serial ranges for the fused ops (ops/wx_dense_act.h): the same loops as the ops below. */
DENSE_NO_TRAP void WX_FN(wx_dense_gelu_range)(WXR *y, const WXR *x, int64_t n) {
#ifdef WX_REAL_DOUBLE
    for (int64_t i = 0; i < n; i++) { WXR v = x[i]; y[i] = v * DENSE_PHI_CDF(v); }
#else
    (dense_avx2_fma() ? dense_gelu_fwd_avx2 : dense_gelu_fwd_base)(y, x, NULL, n);
#endif
}

DENSE_NO_TRAP void WX_FN(wx_dense_gelu_grad_range)(WXR *dx, const WXR *dy, const WXR *x, int64_t n) {
#ifdef WX_REAL_DOUBLE
    for (int64_t i = 0; i < n; i++) {
        WXR v = x[i];
        dx[i] = dy[i] * (DENSE_PHI_CDF(v) + v * DENSE_PHI_PDF(v));
    }
#else
    (dense_avx2_fma() ? dense_gelu_bwd_avx2 : dense_gelu_bwd_base)(dx, dy, x, n);
#endif
}

DENSE_NO_TRAP void WX_FN(wx_dense_gelu_both_range)(WXR *dx, WXR *y, const WXR *dy, const WXR *x,
                                                   int64_t n) {
#ifdef WX_REAL_DOUBLE
    for (int64_t i = 0; i < n; i++) {
        WXR v = x[i], cdf = DENSE_PHI_CDF(v);
        y[i] = v * cdf;
        dx[i] = dy[i] * (cdf + v * DENSE_PHI_PDF(v));
    }
#else
    (dense_avx2_fma() ? dense_gelu_both_avx2 : dense_gelu_both_base)(dx, y, dy, x, n);
#endif
}

DENSE_NO_TRAP wx_status WXF(wx_cpu_gelu_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n) {
    /* y(n), x(n): y = x·Φ(x) */
#ifdef WX_REAL_DOUBLE
    DENSE_MAP(WXR v = x[i]; y[i] = v * DENSE_PHI_CDF(v));
#else
    dense_map2(ctx, dense_avx2_fma() ? dense_gelu_fwd_avx2 : dense_gelu_fwd_base, y,
               x, NULL, n);
#endif
    return WX_OK;
}

/* Differentiates y = x·Φ(x): y' = Φ(x) + x·φ(x). */
DENSE_NO_TRAP wx_status WXF(wx_cpu_gelu_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy,
                                                 const WXR *x, int64_t n) {
    /* dx(n) overwrite, dy(n), x(n) */
#ifdef WX_REAL_DOUBLE
    DENSE_MAP(WXR v = x[i]; dx[i] = dy[i] * (DENSE_PHI_CDF(v) + v * DENSE_PHI_PDF(v)));
#else
    dense_map2(ctx, dense_avx2_fma() ? dense_gelu_bwd_avx2 : dense_gelu_bwd_base, dx,
               dy, x, n);
#endif
    return WX_OK;
}

wx_status WXF(wx_cpu_silu_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n) {
    /* y(n), x(n): y = x·σ(x); exp(−x) overflowing to inf for x ≪ 0 gives σ = 0, as wanted */
    DENSE_MAP(WXR v = x[i]; y[i] = v / ((WXR)1 + WX_EXP(-v)));
    return WX_OK;
}

/* Differentiates y = x·σ(x): y' = σ(x)·(1 + x·(1 − σ(x))). */
wx_status WXF(wx_cpu_silu_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const WXR *x, int64_t n) {
    /* dx(n) overwrite, dy(n), x(n) */
    DENSE_MAP(WXR v = x[i]; WXR s = (WXR)1 / ((WXR)1 + WX_EXP(-v));
              dx[i] = dy[i] * s * ((WXR)1 + v * ((WXR)1 - s)));
    return WX_OK;
}

wx_status WXF(wx_cpu_relu_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n) {
    /* y(n), x(n) */
    DENSE_MAP(y[i] = x[i] > 0 ? x[i] : 0);
    return WX_OK;
}

/* Differentiates y = max(x, 0); the gradient at x = 0 is 0, as in torch. */
wx_status WXF(wx_cpu_relu_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const WXR *x, int64_t n) {
    /* dx(n) overwrite, dy(n), x(n) */
    DENSE_MAP(dx[i] = x[i] > 0 ? dy[i] : 0);
    return WX_OK;
}

wx_status WXF(wx_cpu_softshrink_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n,
                                         double lambda) {
    /* y(n), x(n): y = sign(x)·max(|x| − λ, 0) */
    WXR l = (WXR)lambda;
    DENSE_MAP(WXR v = x[i]; y[i] = v > l ? v - l : (v < -l ? v + l : 0));
    return WX_OK;
}

/* Differentiates y = sign(x)·max(|x| − λ, 0): y' = 1 where |x| > λ, else 0. */
wx_status WXF(wx_cpu_softshrink_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const WXR *x,
                                          int64_t n, double lambda) {
    /* dx(n) overwrite, dy(n), x(n) */
    WXR l = (WXR)lambda;
    DENSE_MAP(WXR v = x[i]; dx[i] = (v > l || v < -l) ? dy[i] : 0);
    return WX_OK;
}

/* ---- add, concat ------------------------------------------------------------------------- */

wx_status WXF(wx_cpu_add_forward)(wx_ctx *ctx, WXR *y, const WXR *a, const WXR *b, int64_t n) {
    /* y(n) (may alias a or b), a(n), b(n) */
    DENSE_MAP(y[i] = a[i] + b[i]);
    return WX_OK;
}

/* Differentiates y = a + b. */
wx_status WXF(wx_cpu_add_backward)(wx_ctx *ctx, WXR *da, WXR *db, const WXR *dy, int64_t n) {
    /* da(n), db(n) overwrite nullable (either may be dy itself), dy(n) */
    if (da && da != dy) memcpy(da, dy, sizeof(WXR) * n);
    if (db && db != dy) memcpy(db, dy, sizeof(WXR) * n);
    return WX_OK;
}

wx_status WXF(wx_cpu_concat_forward)(wx_ctx *ctx, WXR *y, const WXR *const *xs, const int64_t *cs,
                                     int k, int64_t n) {
    /* y(N, Σc), xs[i](N, c_i), cs(k) */
    int64_t ctot = 0;
    for (int i = 0; i < k; i++) {
        if (cs[i] < 0) return wx_error_set(WX_ERR_USAGE, "concat_forward: c[%d] = %lld < 0", i,
                                           (long long)cs[i]);
        ctot += cs[i];
    }
#pragma omp parallel for num_threads(dense_threads(ctx)) if (n * ctot > WX_DENSE_PAR_MIN) \
    schedule(static)
    for (int64_t r = 0; r < n; r++) {
        WXR *yr = y + r * ctot;
        for (int i = 0; i < k; i++) {
            memcpy(yr, xs[i] + r * cs[i], sizeof(WXR) * cs[i]);
            yr += cs[i];
        }
    }
    return WX_OK;
}

/* Differentiates y = [x_0 | ... | x_{k−1}] along the last axis. */
wx_status WXF(wx_cpu_concat_backward)(wx_ctx *ctx, WXR *const *dxs, const WXR *dy,
                                      const int64_t *cs, int k, int64_t n) {
    /* dxs[i](N, c_i) overwrite (entry nullable), dy(N, Σc), cs(k) */
    int64_t ctot = 0;
    for (int i = 0; i < k; i++) {
        if (cs[i] < 0) return wx_error_set(WX_ERR_USAGE, "concat_backward: c[%d] = %lld < 0", i,
                                           (long long)cs[i]);
        ctot += cs[i];
    }
#pragma omp parallel for num_threads(dense_threads(ctx)) if (n * ctot > WX_DENSE_PAR_MIN) \
    schedule(static)
    for (int64_t r = 0; r < n; r++) {
        const WXR *dyr = dy + r * ctot;
        for (int i = 0; i < k; i++) {
            if (dxs[i]) memcpy(dxs[i] + r * cs[i], dyr, sizeof(WXR) * cs[i]);
            dyr += cs[i];
        }
    }
    return WX_OK;
}

/* ---- patch embedding --------------------------------------------------------------------- */

static wx_status dense_patch_check(const char *op, int64_t b, int64_t cin, int64_t h, int64_t wd,
                                   int64_t p, int64_t d) {
    if (p <= 0 || h % p || wd % p)
        return wx_error_set(WX_ERR_USAGE,
                            "%s: image %lldx%lld is not a whole number of %lldx%lld patches", op,
                            (long long)h, (long long)wd, (long long)p, (long long)p);
    return dense_check_blas_dims(op, b * (h / p) * (wd / p), cin * p * p, d);
}

/* Patch matrix and its inverse: P(B·Hp·Wp, cin·p·p) with column (ci·p + i)·p + j, the flattening
 * of a torch Conv2d weight (d, cin, p, p), so the convolution is P·wᵀ. Every pixel sits in exactly
 * one patch, so to_x is an exact permutation (no sums, deterministic). */
static void dense_patches(const wx_ctx *ctx, WXR *pm, WXR *x, int to_x, int64_t b, int64_t cin,
                          int64_t h, int64_t wd, int64_t p) {
    int64_t hp = h / p, wp = wd / p, k = cin * p * p;
#pragma omp parallel for collapse(2) num_threads(dense_threads(ctx)) \
    if (b * cin * h * wd > WX_DENSE_PAR_MIN) schedule(static)
    for (int64_t bb = 0; bb < b; bb++)
        for (int64_t ph = 0; ph < hp; ph++)
            for (int64_t ci = 0; ci < cin; ci++)
                for (int64_t i = 0; i < p; i++) {
                    WXR *xrow = x + ((bb * cin + ci) * h + ph * p + i) * wd;
                    for (int64_t pw = 0; pw < wp; pw++) {
                        WXR *prow = pm + ((bb * hp + ph) * wp + pw) * k + (ci * p + i) * p;
                        /* Runs of p (a few) elements: a plain loop, not a memcpy call each. */
                        if (to_x)
                            for (int64_t q = 0; q < p; q++) xrow[pw * p + q] = prow[q];
                        else
                            for (int64_t q = 0; q < p; q++) prow[q] = xrow[pw * p + q];
                    }
                }
}

wx_status WXF(wx_cpu_patch_embed_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const WXR *w,
                                          const WXR *bias, int64_t b, int64_t cin, int64_t h,
                                          int64_t wd, int64_t p, int64_t d) {
    /* y(B, Hp·Wp, d), x(B,cin,H,W), w(d,cin,p,p), bias(d) nullable */
    WX_TRY(dense_patch_check("patch_embed_forward", b, cin, h, wd, p, d));
    int64_t rows = b * (h / p) * (wd / p), k = cin * p * p;
    if (rows == 0 || d == 0) return WX_OK;
    WXR *pm = wx_malloc(sizeof(WXR) * (size_t)(rows * k > 0 ? rows * k : 1));
    dense_patches(ctx, pm, (WXR *)x, 0, b, cin, h, wd, p); /* reads x only */
    wx_status st = WXF(wx_cpu_linear_forward)(ctx, y, pm, w, bias, rows, k, d);
    free(pm);
    return st;
}

/* Differentiates y = P(x)·wᵀ + bias: dw += dyᵀ·P, dbias += Σ dy, dx = scatter(dy·w). */
wx_status WXF(wx_cpu_patch_embed_backward)(wx_ctx *ctx, WXR *dx, WXR *dw, WXR *dbias, const WXR *dy,
                                           const WXR *x, const WXR *w, int64_t b, int64_t cin,
                                           int64_t h, int64_t wd, int64_t p, int64_t d) {
    /* dx(B,cin,H,W) overwrite nullable, dw(d,cin,p,p) +=, dbias(d) += nullable, dy(B,Hp·Wp,d),
     * x(B,cin,H,W), w(d,cin,p,p) */
    WX_TRY(dense_patch_check("patch_embed_backward", b, cin, h, wd, p, d));
    int64_t rows = b * (h / p) * (wd / p), k = cin * p * p;
    if (rows == 0) return WX_OK;
    WXR *pm = wx_malloc(sizeof(WXR) * (size_t)(rows * k > 0 ? rows * k : 1));
    wx_status st = WX_OK;
    if (dw || dbias) {
        dense_patches(ctx, pm, (WXR *)x, 0, b, cin, h, wd, p);
        st = WXF(wx_cpu_linear_backward)(ctx, NULL, dw, dbias, dy, pm, w, rows, k, d);
    }
    if (st == WX_OK && dx) {
        st = WXF(wx_cpu_linear_backward)(ctx, pm, NULL, NULL, dy, NULL, w, rows, k, d);
        if (st == WX_OK) dense_patches(ctx, pm, dx, 1, b, cin, h, wd, p);
    }
    free(pm);
    return st;
}

/* ---- unpatchify -------------------------------------------------------------------------- */

/* out[b,c,p·h+i,p·w+j] ↔ y[b,h,w,(i·p+j)·C+c]; to_y selects the direction. */
static void dense_unpatchify_map(const wx_ctx *ctx, WXR *out, WXR *y, int to_y, int64_t b,
                                 int64_t c, int64_t hp, int64_t wp, int64_t p) {
    int64_t hh = hp * p, ww = wp * p, k = p * p * c;
#pragma omp parallel for collapse(3) num_threads(dense_threads(ctx)) \
    if (b * c * hh * ww > WX_DENSE_PAR_MIN) schedule(static)
    for (int64_t bb = 0; bb < b; bb++)
        for (int64_t cc = 0; cc < c; cc++)
            for (int64_t row = 0; row < hh; row++) {
                int64_t h = row / p, i = row % p;
                WXR *orow = out + ((bb * c + cc) * hh + row) * ww;
                const int64_t ybase = (bb * hp + h) * wp * k + i * p * c + cc;
                for (int64_t w = 0; w < wp; w++)
                    for (int64_t j = 0; j < p; j++) {
                        int64_t yi = ybase + w * k + j * c;
                        if (to_y)
                            y[yi] = orow[w * p + j];
                        else
                            orow[w * p + j] = y[yi];
                    }
            }
}

wx_status WXF(wx_cpu_unpatchify_forward)(wx_ctx *ctx, WXR *out, const WXR *y, int64_t b, int64_t c,
                                         int64_t hp, int64_t wp, int64_t p) {
    /* out(B, C, Hp·p, Wp·p), y(B, Hp, Wp, p·p·C) */
    dense_unpatchify_map(ctx, out, (WXR *)y, 0, b, c, hp, wp, p); /* reads y only */
    return WX_OK;
}

/* Differentiates out = unpatchify(y): a permutation, so dy is dout permuted back. */
wx_status WXF(wx_cpu_unpatchify_backward)(wx_ctx *ctx, WXR *dy, const WXR *dout, int64_t b,
                                          int64_t c, int64_t hp, int64_t wp, int64_t p) {
    /* dy(B, Hp, Wp, p·p·C) overwrite, dout(B, C, Hp·p, Wp·p) */
    dense_unpatchify_map(ctx, (WXR *)dout, dy, 1, b, c, hp, wp, p); /* reads dout only */
    return WX_OK;
}

/* ---- positional embedding ---------------------------------------------------------------- */

wx_status WXF(wx_cpu_pos_embed_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const WXR *pos,
                                        int64_t b, int64_t n, int64_t d) {
    /* y(B,N,D) (may alias x), x(B,N,D), pos(N,D) */
    int64_t nd = n * d;
#pragma omp parallel for collapse(2) num_threads(dense_threads(ctx)) \
    if (b * nd > WX_DENSE_PAR_MIN) schedule(static)
    for (int64_t bb = 0; bb < b; bb++)
        for (int64_t i = 0; i < nd; i++) y[bb * nd + i] = x[bb * nd + i] + pos[i];
    return WX_OK;
}

/* Differentiates y = x + pos (pos broadcast over the batch). */
wx_status WXF(wx_cpu_pos_embed_backward)(wx_ctx *ctx, WXR *dx, WXR *dpos, const WXR *dy, int64_t b,
                                         int64_t n, int64_t d) {
    /* dx(B,N,D) overwrite nullable (may be dy), dpos(N,D) +=, dy(B,N,D) */
    int64_t nd = n * d;
    if (dx && dx != dy) memcpy(dx, dy, sizeof(WXR) * b * nd);
    if (dpos) {
        /* Batch summed in order per element, so the result is independent of threads. */
#pragma omp parallel for num_threads(dense_threads(ctx)) if (b * nd > WX_DENSE_PAR_MIN) \
    schedule(static)
        for (int64_t i = 0; i < nd; i++) {
            double s = 0;
            for (int64_t bb = 0; bb < b; bb++) s += dy[bb * nd + i];
            dpos[i] += (WXR)s;
        }
    }
    return WX_OK;
}
