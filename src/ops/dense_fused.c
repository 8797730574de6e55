/* Fused dense ops (contract: ops/dense_fused.inc): residual add + LayerNorm, and linear + bias +
 * GELU, each one parallel region over fixed row blocks. Compiled twice (float32, float64) through
 * ops/wx_real.h.
 *
 * Why: in a FourCastNet training step every element-wise pass over the (B·N, D) tokens or the
 * (B·N, 4D) MLP hidden layer is a trip through memory, and the backward ran eight of them per
 * block besides the GEMMs (perf on tests/bench/bench_fcn.c, docs/benchmarks.md). The fused ops do
 * the add, the normalisation and the AFNO skip on a row block while it is in cache, and the GELU
 * right after its GEMM slab.
 *
 * Determinism: row blocks and parameter-gradient partials (fixed chunks of rows, summed in chunk
 * order in double) depend only on the shapes, never on the thread count. */
#include <limits.h>
#include <omp.h>
#include <string.h>

#include "ops/wx_dense_act.h"
#include "ops/wx_gemm.h"
#include "ops/wx_ln_rows.h"
#include "ops/wx_ops.h"
#include "ops/wx_real.h"

#define WXR wx_real
#define WXF WX_FN

/* Below this many elements a parallel region costs more than it saves (as ops/dense.c). */
#define FUSED_PAR_MIN (1 << 15)
/* LayerNorm rows per block (16 rows of 256 floats: 16 KB per buffer, in L1/L2). */
#define FUSED_LN_ROWS 16
/* Rows per parameter-gradient partial: one partial row of sums per chunk, chunks summed in order. */
#define FUSED_CHUNK_ROWS 64
/* GEMM slab edges on multiples of sgemm's register block (as ops/gemm_par.c). */
#define FUSED_GEMM_ALIGN 16
#define FUSED_GEMM_PAR_MIN_MACS (1 << 18)

static int fused_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

static wx_status fused_ln_check(const char *op, int64_t n, int64_t c) {
    if (c <= 0 || n < 0)
        return wx_error_set(WX_ERR_USAGE, "%s: N = %lld, C = %lld, expected N >= 0 and C > 0", op,
                            (long long)n, (long long)c);
    return WX_OK;
}

/* ---- layernorm_residual ------------------------------------------------------------------ */

wx_status WXF(wx_cpu_layernorm_residual_forward)(wx_ctx *ctx, WXR *s, WXR *y, WXR *z, WXR *mean,
                                                 WXR *rstd, const WXR *a, const WXR *r,
                                                 const WXR *gamma, const WXR *beta, int64_t n,
                                                 int64_t c, double eps) {
    /* s(N,C) (may alias a, r), y(N,C), z(N,C) nullable, mean(N), rstd(N) saved, a(N,C),
     * r(N,C) nullable, gamma(C), beta(C) */
    WX_TRY(fused_ln_check("layernorm_residual_forward", n, c));
    int64_t nblk = (n + FUSED_LN_ROWS - 1) / FUSED_LN_ROWS;
#pragma omp parallel for num_threads(fused_threads(ctx)) if (n * c > FUSED_PAR_MIN) \
    schedule(static)
    for (int64_t k = 0; k < nblk; k++) {
        int64_t r0 = k * FUSED_LN_ROWS, r1 = r0 + FUSED_LN_ROWS < n ? r0 + FUSED_LN_ROWS : n;
        int64_t i0 = r0 * c, i1 = r1 * c;
        if (r) {
#pragma omp simd
            for (int64_t i = i0; i < i1; i++) s[i] = a[i] + r[i];
        } else if (s != a) {
            memcpy(s + i0, a + i0, sizeof(WXR) * (size_t)(i1 - i0));
        }
        WX_FN(wx_ln_rows_forward)(y, mean, rstd, s, gamma, beta, r0, r1, c, eps);
        if (z) {
#pragma omp simd
            for (int64_t i = i0; i < i1; i++) z[i] = s[i] + y[i];
        }
    }
    return WX_OK;
}

/* Differentiates s = a + r, y = LN(s), z = s + y: ∂L/∂s = dres + dz + LN_bwd(dy + dz). */
wx_status WXF(wx_cpu_layernorm_residual_backward)(wx_ctx *ctx, WXR *ds, WXR *dgamma, WXR *dbeta,
                                                  const WXR *dy, const WXR *dz, const WXR *dres,
                                                  const WXR *s, const WXR *mean, const WXR *rstd,
                                                  const WXR *gamma, int64_t n, int64_t c) {
    /* ds(N,C) overwrite (may alias dy, dz, dres), dgamma(C) +=, dbeta(C) += (nullable), dy(N,C),
     * dz(N,C) nullable, dres(N,C) nullable, s(N,C), mean(N), rstd(N), gamma(C) */
    WX_TRY(fused_ln_check("layernorm_residual_backward", n, c));
    if (n == 0) return WX_OK;
    int params = dgamma || dbeta;
    int64_t nchunk = (n + FUSED_CHUNK_ROWS - 1) / FUSED_CHUNK_ROWS;
    double *part = params ? wx_calloc(2 * (size_t)(nchunk * c), sizeof *part) : NULL;
#pragma omp parallel num_threads(fused_threads(ctx)) if (n * c > FUSED_PAR_MIN)
    {
        /* t = dy + dz and the LayerNorm's own dx, one row block at a time. */
        WXR *t = wx_malloc(sizeof(WXR) * (size_t)(2 * FUSED_LN_ROWS * c)), *dx = t + FUSED_LN_ROWS * c;
#pragma omp for schedule(static)
        for (int64_t kc = 0; kc < nchunk; kc++) {
            int64_t end = (kc + 1) * FUSED_CHUNK_ROWS < n ? (kc + 1) * FUSED_CHUNK_ROWS : n;
            double *pg = params ? part + 2 * kc * c : NULL, *pb = pg ? pg + c : NULL;
            for (int64_t r0 = kc * FUSED_CHUNK_ROWS; r0 < end; r0 += FUSED_LN_ROWS) {
                int64_t len = end - r0 < FUSED_LN_ROWS ? end - r0 : FUSED_LN_ROWS, i0 = r0 * c;
                const WXR *g = dy + i0;
                if (dz) {
#pragma omp simd
                    for (int64_t i = 0; i < len * c; i++) t[i] = dy[i0 + i] + dz[i0 + i];
                    g = t;
                }
                WX_FN(wx_ln_rows_backward)(dx, g, s + i0, mean + r0, rstd + r0, gamma, 0, len, c);
                if (params)
                    for (int64_t rr = 0; rr < len; rr++) {
                        const WXR *gr = g + rr * c, *sr = s + i0 + rr * c;
                        double mu = mean[r0 + rr], rs = rstd[r0 + rr];
#pragma omp simd
                        for (int64_t j = 0; j < c; j++) {
                            pg[j] += (double)gr[j] * ((sr[j] - mu) * rs);
                            pb[j] += gr[j];
                        }
                    }
                /* Written last: ds may alias dy, dz or dres, all read above or in this loop. */
                if (dres && dz) {
#pragma omp simd
                    for (int64_t i = 0; i < len * c; i++) ds[i0 + i] = dres[i0 + i] + dz[i0 + i] + dx[i];
                } else if (dres || dz) {
                    const WXR *o = dres ? dres : dz;
#pragma omp simd
                    for (int64_t i = 0; i < len * c; i++) ds[i0 + i] = o[i0 + i] + dx[i];
                } else {
                    memcpy(ds + i0, dx, sizeof(WXR) * (size_t)(len * c));
                }
            }
        }
        free(t);
    }
    if (params) {
#pragma omp parallel for num_threads(fused_threads(ctx)) if (nchunk * c > FUSED_PAR_MIN) \
    schedule(static)
        for (int64_t j = 0; j < c; j++) {
            double sg = 0, sb = 0;
            for (int64_t kc = 0; kc < nchunk; kc++) {
                sg += part[2 * kc * c + j];
                sb += part[2 * kc * c + c + j];
            }
            if (dgamma) dgamma[j] += (WXR)sg;
            if (dbeta) dbeta[j] += (WXR)sb;
        }
        free(part);
    }
    return WX_OK;
}

/* ---- linear_gelu ------------------------------------------------------------------------- */

static wx_status fused_blas_dims(const char *op, int64_t n, int64_t in, int64_t out) {
    if (n < 0 || in < 0 || out < 0 || n > INT_MAX || in > INT_MAX || out > INT_MAX)
        return wx_error_set(WX_ERR_USAGE,
                            "%s: dimensions (%lld, %lld, %lld) must be in 0..%d for BLAS", op,
                            (long long)n, (long long)in, (long long)out, INT_MAX);
    return WX_OK;
}

/* Rows [lo, hi) of h = x·wᵀ + b, then g = GELU(h) on them while they are in cache. */
static void fused_linear_gelu_rows(WXR *h, WXR *g, const WXR *x, const WXR *w, const WXR *b,
                                   int64_t lo, int64_t hi, int64_t in, int64_t out) {
    int64_t len = hi - lo;
    if (len <= 0) return;
    WXR *hs = h + lo * out;
    if (b)
        for (int64_t r = 0; r < len; r++) memcpy(hs + r * out, b, sizeof(WXR) * (size_t)out);
    if (in > 0)
        WX_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)len, (blasint)out, (blasint)in, 1,
                x + lo * in, (blasint)in, w, (blasint)in, b ? 1 : 0, hs, (blasint)out);
    else if (!b)
        memset(hs, 0, sizeof(WXR) * (size_t)(len * out));
    WX_FN(wx_dense_gelu_range)(g + lo * out, hs, len * out);
}

wx_status WXF(wx_cpu_linear_gelu_forward)(wx_ctx *ctx, WXR *h, WXR *g, const WXR *x, const WXR *w,
                                          const WXR *b, int64_t n, int64_t in, int64_t out) {
    /* h(N,out), g(N,out), x(N,in), w(out,in), b(out) nullable */
    WX_TRY(fused_blas_dims("linear_gelu_forward", n, in, out));
    if (n == 0 || out == 0) return WX_OK;
    /* Row slabs as ops/gemm_par.c cuts this shape when N >= out (FourCastNet's fc1), one
     * single-threaded GEMM each, so h has the bits linear_forward gives it there. */
    int nt = fused_threads(ctx);
    int64_t chunks = (n + FUSED_GEMM_ALIGN - 1) / FUSED_GEMM_ALIGN;
    int64_t slabs = nt < chunks ? nt : chunks;
    if ((double)n * (double)in * (double)out < FUSED_GEMM_PAR_MIN_MACS || omp_in_parallel())
        slabs = 1;
    if (slabs <= 1 && omp_in_parallel()) {
        /* Inside a caller's team: OpenBLAS's thread count is the caller's business. */
        fused_linear_gelu_rows(h, g, x, w, b, 0, n, in, out);
        return WX_OK;
    }
    int saved = wx_blas_serial_begin();
#pragma omp parallel for num_threads((int)slabs) schedule(static) if (slabs > 1)
    for (int64_t sl = 0; sl < slabs; sl++) {
        int64_t lo = sl * chunks / slabs * FUSED_GEMM_ALIGN;
        int64_t hi = (sl + 1) * chunks / slabs * FUSED_GEMM_ALIGN;
        fused_linear_gelu_rows(h, g, x, w, b, lo, hi < n ? hi : n, in, out);
    }
    wx_blas_serial_end(saved);
    return WX_OK;
}

/* Chunk kc of rows: dh = dg·GELU'(h) (g = GELU(h) too when g is not NULL), and the chunk's
 * partial column sums of dh into part(nchunk, out) when part is not NULL. */
static void fused_gelu_grad_chunk(WXR *dh, WXR *g, double *part, const WXR *dg, const WXR *h,
                                  int64_t kc, int64_t n, int64_t out) {
    int64_t r0 = kc * FUSED_CHUNK_ROWS;
    int64_t r1 = r0 + FUSED_CHUNK_ROWS < n ? r0 + FUSED_CHUNK_ROWS : n;
    int64_t o = r0 * out;
    if (g)
        WX_FN(wx_dense_gelu_both_range)(dh + o, g + o, dg + o, h + o, (r1 - r0) * out);
    else
        WX_FN(wx_dense_gelu_grad_range)(dh + o, dg + o, h + o, (r1 - r0) * out);
    if (!part) return;
    double *p = part + kc * out;
    for (int64_t r = r0; r < r1; r++) {
        const WXR *row = dh + r * out;
#pragma omp simd
        for (int64_t j = 0; j < out; j++) p[j] += row[j];
    }
}

/* Differentiates h = x·wᵀ + b, g = GELU(h). */
wx_status WXF(wx_cpu_linear_gelu_backward)(wx_ctx *ctx, WXR *dx, WXR *dw, WXR *db, WXR *dh,
                                           WXR *g, const WXR *dg, const WXR *h, const WXR *x, const WXR *w,
                                           int64_t n, int64_t in, int64_t out) {
    /* dx(N,in) overwrite nullable, dw(out,in) +=, db(out) += nullable, dh(N,out) overwrite (may
     * alias dg), g(N,out) overwrite nullable, dg(N,out), h(N,out), x(N,in), w(out,in) */
    WX_TRY(fused_blas_dims("linear_gelu_backward", n, in, out));
    if (n == 0) return WX_OK;
    /* dh = dg·GELU'(h) (and g = GELU(h) sharing Φ(h)), and the bias gradient's partial column
     * sums on the same rows. */
    int64_t nchunk = (n + FUSED_CHUNK_ROWS - 1) / FUSED_CHUNK_ROWS;
    double *part = db && out > 0 ? wx_calloc((size_t)(nchunk * out), sizeof *part) : NULL;
    int nt = fused_threads(ctx);
    /* Each thread takes a contiguous run of chunks and, when dx is wanted, multiplies its own dh
     * rows by w right away (dx's rows depend on dh's same rows only): the GELU' pass is the GEMM's
     * prologue, dh still in cache, one region instead of two. */
    int dx_here = dx && in > 0 && out > 0 && !omp_in_parallel();
    int saved = dx_here ? wx_blas_serial_begin() : 1;
#pragma omp parallel num_threads(nt) if (n * out > FUSED_PAR_MIN)
    {
        int t = omp_get_thread_num(), tn = omp_get_num_threads();
        int64_t k0 = t * nchunk / tn, k1 = (t + 1) * nchunk / tn;
        for (int64_t kc = k0; kc < k1; kc++)
            fused_gelu_grad_chunk(dh, g, part, dg, h, kc, n, out);
        int64_t r0 = k0 * FUSED_CHUNK_ROWS, r1 = k1 * FUSED_CHUNK_ROWS;
        if (r1 > n) r1 = n;
        if (dx_here && r1 > r0) /* dx = dh·w on these rows */
            WX_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(r1 - r0), (blasint)in,
                    (blasint)out, 1, dh + r0 * out, (blasint)out, w, (blasint)in, 0, dx + r0 * in,
                    (blasint)in);
    }
    if (dx_here) wx_blas_serial_end(saved);
    if (part) {
#pragma omp parallel for num_threads(nt) if (nchunk * out > FUSED_PAR_MIN) schedule(static)
        for (int64_t j = 0; j < out; j++) {
            double sum = 0;
            for (int64_t kc = 0; kc < nchunk; kc++) sum += part[kc * out + j];
            db[j] += (WXR)sum;
        }
        free(part);
    }
    if (dx && in > 0 && !dx_here) {
        if (out == 0)
            memset(dx, 0, sizeof(WXR) * (size_t)(n * in));
        else /* dx = dh·w, from inside a caller's team */
            WX_FN(wx_gemm_par)(ctx, CblasNoTrans, CblasNoTrans, n, in, out, 1, dh, out, w, in, 0,
                               dx, in);
    }
    if (dw && out > 0 && in > 0) /* dw += dhᵀ·x */
        WX_FN(wx_gemm_par)(ctx, CblasTrans, CblasNoTrans, out, in, n, 1, dh, out, x, in, 1, dw, in);
    return WX_OK;
}
