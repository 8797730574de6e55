/* Row-major GEMM cut into slabs of C, one single-threaded BLAS call per slab, over the op's OpenMP
 * team (contract: ops/wx_gemm.h). Compiled twice (float32 and float64) through ops/wx_real.h. */
#include <omp.h>

#include "ops/wx_gemm.h"
#include "ops/wx_real.h"

#define WXR wx_real

/* Below this many multiply-adds one call on one thread is cheaper than waking the team. */
#define GEMM_PAR_MIN_MACS (1 << 18)
/* Slab edges on multiples of the kernels' register-block sizes (16 in sgemm's Zen/Haswell
 * kernels), so no slab runs the narrow edge kernels more than one call would. */
#define GEMM_PAR_ALIGN 16

#ifndef WX_REAL_DOUBLE
int wx_blas_serial_begin(void) {
    int saved = openblas_get_num_threads();
    if (saved != 1) openblas_set_num_threads(1);
    return saved;
}

void wx_blas_serial_end(int saved) {
    if (saved != 1) openblas_set_num_threads(saved);
}

int wx_gemm_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}
#endif

void WX_FN(wx_gemm_par)(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                        int64_t n, int64_t k, WXR alpha, const WXR *a, int64_t lda, const WXR *b,
                        int64_t ldb, WXR beta, WXR *c, int64_t ldc) {
    /* c(m,n), a(m,k) or (k,m) when ta, b(k,n) or (n,k) when tb; sizes checked by the caller */
    if (m <= 0 || n <= 0) return;
    int nt = wx_gemm_threads(ctx);
    int split_m = m >= n;
    int64_t dim = split_m ? m : n;
    int64_t chunks = (dim + GEMM_PAR_ALIGN - 1) / GEMM_PAR_ALIGN;
    int64_t slabs = nt < chunks ? nt : chunks;
    if ((double)m * (double)n * (double)k < GEMM_PAR_MIN_MACS) slabs = 1;
    int saved = wx_blas_serial_begin();
    if (slabs <= 1) {
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
                const WXR *as = ta == CblasNoTrans ? a + lo * lda : a + lo;
                WX_GEMM(CblasRowMajor, ta, tb, (blasint)len, (blasint)n, (blasint)k, alpha, as,
                        (blasint)lda, b, (blasint)ldb, beta, c + lo * ldc, (blasint)ldc);
            } else {
                const WXR *bs = tb == CblasNoTrans ? b + lo : b + lo * ldb;
                WX_GEMM(CblasRowMajor, ta, tb, (blasint)m, (blasint)len, (blasint)k, alpha, a,
                        (blasint)lda, bs, (blasint)ldb, beta, c + lo, (blasint)ldc);
            }
        }
    }
    wx_blas_serial_end(saved);
}
