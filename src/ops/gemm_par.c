/* Row-major GEMM cut into slabs of C, one single-threaded BLAS call per slab, over the op's OpenMP
 * team (contract: ops/wx_gemm.h). Compiled twice (float32 and float64) through ops/wx_real.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <omp.h>
#include <string.h>

#include "ops/wx_gemm.h"
#include "ops/wx_real.h"

#define WXR wx_real

/* Below this many multiply-adds one call on one thread is cheaper than waking the team. */
#define GEMM_PAR_MIN_MACS (1 << 18)
/* Slab edges on multiples of the kernels' register-block sizes (16 in sgemm's Zen/Haswell
 * kernels), so no slab runs the narrow edge kernels more than one call would. */
#define GEMM_PAR_ALIGN 16
/* Tall activation GEMMs (C = A·op(B), A not transposed, many rows) are cut into row slabs of
 * SLAB_MIN..SLAB_MAX rows (about 8 per thread), handed out one at a time: on a shared machine the
 * OS preempts one of our threads now and then, and with one static slab per thread the others
 * then sleep at the end of the GEMM; with small slabs they take over its share. Each slab
 * re-packs op(B) (1 MiB for a 512 × 512 weight, against 0.5–4 MiB of A per slab). */
#define GEMM_PAR_SLAB_MIN 256
#define GEMM_PAR_SLAB_MAX 2048

#ifndef WX_REAL_DOUBLE
int wx_blas_serial_begin(void) {
    int saved = openblas_get_num_threads();
    if (saved != 1) openblas_set_num_threads(1);
    return saved;
}

void wx_blas_serial_end(int saved) {
    if (saved != 1) openblas_set_num_threads(saved);
}

void wx_blas_one_thread(int stop_pool) {
    if (openblas_get_parallel() != 1) return; /* 0 sequential, 1 pthreads, 2 OpenMP */
    /* The count first: setting it starts a stopped pool again. */
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    if (!stop_pool) return;
    /* The call OpenBLAS itself makes before fork and at exit; looked up, not linked: it is not
     * part of the API. */
    int (*shutdown)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
    if (shutdown) shutdown();
}

int wx_gemm_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}
#endif

/* Rows [r0, r1), columns [j0, j1) of c ← bias[j]. */
static void fill_bias(WXR *c, int64_t ldc, const WXR *bias, int64_t r0, int64_t r1, int64_t j0,
                      int64_t j1) {
    for (int64_t r = r0; r < r1; r++) memcpy(c + r * ldc + j0, bias + j0, sizeof(WXR) * (j1 - j0));
}

/* c = alpha·op(a)·op(b) + beta·c, where c is first set to the bias rows when bias is not NULL
 * (each thread fills its own slab, just before its GEMM reads it). */
static void gemm_par(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                     int64_t n, int64_t k, WXR alpha, const WXR *a, int64_t lda, const WXR *b,
                     int64_t ldb, WXR beta, const WXR *bias, WXR *c, int64_t ldc) {
    /* c(m,n), a(m,k) or (k,m) when ta, b(k,n) or (n,k) when tb, bias(n) nullable */
    if (m <= 0 || n <= 0) return;
    int nt = wx_gemm_threads(ctx);
    /* The longer side of C, except that the weight-gradient GEMMs (AᵀB) are cut by rows
     * whenever the slabs keep 64 rows: measured on FourCastNet's shapes with one thread per slab
     * (OpenBLAS 0.3.21, Zen), the row slabs of Aᵀ·B ran at 60 GFLOP/s, the column slabs at 53. */
    int split_m = m >= n || (ta != CblasNoTrans && m >= (int64_t)nt * 64);
    int64_t dim = split_m ? m : n;
    int64_t chunks = (dim + GEMM_PAR_ALIGN - 1) / GEMM_PAR_ALIGN;
    int64_t slabs = nt < chunks ? nt : chunks;
    if ((double)m * (double)n * (double)k < GEMM_PAR_MIN_MACS) slabs = 1;
    if (omp_in_parallel()) {
        /* Called from a thread of an enclosing team: one call here, and OpenBLAS's thread count
         * is left to that caller (setting it from several threads at once would race). */
        if (bias) fill_bias(c, ldc, bias, 0, m, 0, n);
        WX_GEMM(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda,
                b, (blasint)ldb, beta, c, (blasint)ldc);
        return;
    }
    int saved = wx_blas_serial_begin();
    int64_t rows = (m / (8 * (int64_t)nt) + GEMM_PAR_ALIGN - 1) / GEMM_PAR_ALIGN * GEMM_PAR_ALIGN;
    if (rows < GEMM_PAR_SLAB_MIN) rows = GEMM_PAR_SLAB_MIN;
    if (rows > GEMM_PAR_SLAB_MAX) rows = GEMM_PAR_SLAB_MAX;
    if (slabs > 1 && split_m && ta == CblasNoTrans && m >= 4 * (int64_t)nt * rows) {
        /* Slab bounds depend on m and nt only, so the result does not depend on the schedule:
         * every row of C is one single-threaded call's, whichever thread makes it. */
        const int64_t ns = (m + rows - 1) / rows;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
        for (int64_t s = 0; s < ns; s++) {
            int64_t lo = s * rows;
            int64_t len = lo + rows < m ? rows : m - lo;
            if (bias) fill_bias(c, ldc, bias, lo, lo + len, 0, n);
            WX_GEMM(CblasRowMajor, ta, tb, (blasint)len, (blasint)n, (blasint)k, alpha,
                    a + lo * lda, (blasint)lda, b, (blasint)ldb, beta, c + lo * ldc, (blasint)ldc);
        }
    } else if (slabs <= 1) {
        if (bias) fill_bias(c, ldc, bias, 0, m, 0, n);
        WX_GEMM(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda,
                b, (blasint)ldb, beta, c, (blasint)ldc);
    } else {
#pragma omp parallel for num_threads((int)slabs) schedule(static)
        for (int64_t s = 0; s < slabs; s++) {
            /* Slab s covers chunks [s·chunks/slabs, (s+1)·chunks/slabs) of the split dimension. */
            int64_t lo = s * chunks / slabs * GEMM_PAR_ALIGN;
            int64_t hi = (s + 1) * chunks / slabs * GEMM_PAR_ALIGN;
            if (hi > dim) hi = dim;
            int64_t len = hi - lo;
            if (len <= 0) continue;
            if (split_m) {
                if (bias) fill_bias(c, ldc, bias, lo, hi, 0, n);
                const WXR *as = ta == CblasNoTrans ? a + lo * lda : a + lo;
                WX_GEMM(CblasRowMajor, ta, tb, (blasint)len, (blasint)n, (blasint)k, alpha, as,
                        (blasint)lda, b, (blasint)ldb, beta, c + lo * ldc, (blasint)ldc);
            } else {
                if (bias) fill_bias(c, ldc, bias, 0, m, lo, hi);
                const WXR *bs = tb == CblasNoTrans ? b + lo : b + lo * ldb;
                WX_GEMM(CblasRowMajor, ta, tb, (blasint)m, (blasint)len, (blasint)k, alpha, a,
                        (blasint)lda, bs, (blasint)ldb, beta, c + lo, (blasint)ldc);
            }
        }
    }
    wx_blas_serial_end(saved);
}

void WX_FN(wx_gemm_par)(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                        int64_t n, int64_t k, WXR alpha, const WXR *a, int64_t lda, const WXR *b,
                        int64_t ldb, WXR beta, WXR *c, int64_t ldc) {
    gemm_par(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, NULL, c, ldc);
}

void WX_FN(wx_gemm_par_bias)(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                             int64_t n, int64_t k, const WXR *a, int64_t lda, const WXR *b,
                             int64_t ldb, const WXR *bias, WXR *c, int64_t ldc) {
    gemm_par(ctx, ta, tb, m, n, k, 1, a, lda, b, ldb, 1, bias, c, ldc);
}
