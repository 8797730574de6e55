/* Spectral ops, AFNO half: the block-diagonal complex two-layer MLP on the kept Fourier modes
 * (NVlabs AFNO2D steps 4-8; contract in spectral.inc).
 *
 * Each complex layer h = X·(w[0] + i·w[1]) + (b[0] + i·b[1]) is a complex matrix product, so it is
 * done as one complex GEMM per block (cblas_cgemm / zgemm) over all kept modes of all batch items:
 * the interleaved (re,im) layout of the spectrum is already what complex BLAS reads, the saved
 * buffers are exactly the GEMM outputs, and no re/im splitting copies are needed. The flop count is
 * that of the four real GEMMs (or the stacked [Xr|Xi] form). The blocks are independent, so the
 * OpenMP team takes whole blocks, each a single-threaded BLAS call (ops/wx_gemm.h: one thread pool;
 * the per-block GEMMs are too small for OpenBLAS's own threading to pay). Element-wise passes
 * (gather, activations, bias sums) use OpenMP; the bias sums give each column to one thread,
 * summed in row order (deterministic). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "ops/wx_gemm.h"
#include "ops/wx_ops.h"
#include "ops/wx_real.h"

#define WXR wx_real
#define WXF WX_FN

#ifdef WX_REAL_DOUBLE
#define WX_CGEMM cblas_zgemm
#else
#define WX_CGEMM cblas_cgemm
#endif

static int afno_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

static wx_status afno_check(const char *op, int64_t b, int64_t h, int64_t wf, int64_t c,
                            int64_t nb, int64_t factor, double lambda) {
    if (b < 1 || h < 1 || wf < 1 || c < 1 || nb < 1 || factor < 1 || c % nb != 0 || lambda < 0)
        return wx_error_set(WX_ERR_USAGE, "%s: B=%lld H=%lld Wf=%lld C=%lld blocks=%lld "
                            "factor=%lld lambda=%g; expected sizes >= 1, C divisible by the "
                            "block count, lambda >= 0", op, (long long)b, (long long)h,
                            (long long)wf, (long long)c, (long long)nb, (long long)factor, lambda);
    return WX_OK;
}

/* idx[0..M): the modes ky·Wf + kx kept, in row-major order; idx[M + mode] = the mode's position
 * in that list, or −1 when dropped. Returns M. */
static int64_t kept_modes(const uint8_t *mask, int64_t h, int64_t wf, int64_t **out) {
    int64_t m = 0;
    for (int64_t i = 0; i < h * wf; i++) m += mask[i] != 0;
    int64_t *idx = wx_malloc(sizeof *idx * (size_t)(m + h * wf)), *slot = idx + m;
    m = 0;
    for (int64_t i = 0; i < h * wf; i++) {
        slot[i] = mask[i] ? m : -1;
        if (mask[i]) idx[m++] = i;
    }
    *out = idx;
    return m;
}

/* Complex weights (nb, rows, cols, 2) interleaved from the split (2, nb, rows, cols). */
static WXR *weights_interleave(const WXR *w, int64_t n) {
    WXR *z = wx_malloc(sizeof *z * 2 * (size_t)n);
    for (int64_t i = 0; i < n; i++) z[2 * i] = w[i], z[2 * i + 1] = w[n + i];
    return z;
}

/* Rows of g (B·M, C, 2) ← the kept modes of spec (B,H,Wf,C,2). */
static void modes_gather(wx_ctx *ctx, WXR *g, const WXR *spec, const int64_t *idx, int64_t b,
                         int64_t m, int64_t hwf, int64_t c) {
    size_t row = sizeof(WXR) * 2 * (size_t)c;
#pragma omp parallel for num_threads(afno_threads(ctx)) schedule(static)
    for (int64_t r = 0; r < b * m; r++)
        memcpy(g + r * 2 * c, spec + ((r / m) * hwf + idx[r % m]) * 2 * c, row);
}

/* spec (B,H,Wf,C,2) ← rows of g on kept modes (slot[mode] = row within the batch item), zero on
 * the others; every element written once. */
static void modes_scatter(wx_ctx *ctx, WXR *spec, const WXR *g, const int64_t *slot, int64_t b,
                          int64_t m, int64_t hwf, int64_t c) {
    size_t row = sizeof(WXR) * 2 * (size_t)c;
#pragma omp parallel for num_threads(afno_threads(ctx)) schedule(static)
    for (int64_t r = 0; r < b * hwf; r++) {
        int64_t k = slot[r % hwf];
        if (k < 0) memset(spec + r * 2 * c, 0, row);
        else memcpy(spec + r * 2 * c, g + ((r / hwf) * m + k) * 2 * c, row);
    }
}

/* Columns [j0, j0 + w) of out (rows × n complex) = the bias as complex (re at bias[j], im at
 * bias[n + j]): one block's columns, filled by the thread that then runs the block's GEMM. */
static void block_fill_bias(WXR *out, const WXR *bias, int64_t rows, int64_t n, int64_t j0,
                            int64_t w) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = j0; j < j0 + w; j++) {
            out[(r * n + j) * 2] = bias[j];
            out[(r * n + j) * 2 + 1] = bias[n + j];
        }
}

/* db[j] += Σ_r d[r, j].re, db[n + j] += Σ_r d[r, j].im (split layout (2, n)) for the complex
 * columns [j0, j0 + w): each column summed in double over the rows in order, by one thread (the
 * block's), so the bits do not depend on the thread count. */
#define SUM_CHUNK 64
static void block_sum_into(WXR *db, const WXR *d, int64_t rows, int64_t n, int64_t j0, int64_t w) {
    for (int64_t c0 = 2 * j0; c0 < 2 * (j0 + w); c0 += SUM_CHUNK) {
        int64_t len = 2 * (j0 + w) - c0 < SUM_CHUNK ? 2 * (j0 + w) - c0 : SUM_CHUNK;
        double s[SUM_CHUNK] = {0};
        for (int64_t r = 0; r < rows; r++)
#pragma omp simd
            for (int64_t j = 0; j < len; j++) s[j] += d[r * 2 * n + c0 + j];
        for (int64_t j = 0; j < len; j++) db[((c0 + j) & 1) * n + (c0 + j) / 2] += (WXR)s[j];
    }
}

/* ReLU of re and im separately on the complex columns [j0, j0 + w) of rows × n: dst = max(src, 0),
 * or, with gate, dst = src > 0 ? dst : 0 (the backward's gate on dst). */
static void block_relu(WXR *dst, const WXR *src, int64_t rows, int64_t n, int64_t j0, int64_t w,
                       int gate) {
    for (int64_t r = 0; r < rows; r++) {
        const WXR *sr = src + (r * n + j0) * 2;
        WXR *dr = dst + (r * n + j0) * 2;
        if (gate) {
#pragma omp simd
            for (int64_t j = 0; j < 2 * w; j++) dr[j] = sr[j] > 0 ? dr[j] : 0;
        } else {
#pragma omp simd
            for (int64_t j = 0; j < 2 * w; j++) dr[j] = sr[j] > 0 ? sr[j] : 0;
        }
    }
}

static void cgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k,
                  const WXR *a, int64_t lda, const WXR *bm, int64_t ldb, int accumulate, WXR *cm,
                  int64_t ldc) {
    const WXR one[2] = {1, 0}, beta[2] = {accumulate ? 1 : 0, 0};
    WX_CGEMM(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, one, a, (blasint)lda, bm,
             (blasint)ldb, beta, cm, (blasint)ldc);
}

wx_status WXF(wx_cpu_afno_filter_forward)(
    wx_ctx *ctx, WXR *Y /* (B,H,Wf,C,2) */, WXR *saved /* see spectral.inc */,
    const WXR *X /* (B,H,Wf,C,2) */, const WXR *w1 /* (2,nb,bs,hid) */, const WXR *b1 /* (2,nb,hid) */,
    const WXR *w2 /* (2,nb,hid,bs) */, const WXR *b2 /* (2,nb,bs) */, const uint8_t *mask /* (H,Wf) */,
    int64_t b, int64_t h, int64_t wf, int64_t c, int64_t nb, int64_t factor, double lambda) {
    WX_TRY(afno_check("afno_filter", b, h, wf, c, nb, factor, lambda));
    int64_t bs = c / nb, hid = bs * factor, ch = nb * hid, *idx;
    int64_t m = kept_modes(mask, h, wf, &idx), rows = b * m;
    WXR *hpre = saved, *opre = saved + rows * ch * 2;
    if (rows == 0) {
        memset(Y, 0, sizeof(WXR) * 2 * (size_t)(b * h * wf * c));
        free(idx);
        return WX_OK;
    }
    WXR *xg = wx_malloc(sizeof(WXR) * 2 * (size_t)(rows * c));
    WXR *act = wx_malloc(sizeof(WXR) * 2 * (size_t)(rows * ch));
    WXR *w1c = weights_interleave(w1, nb * bs * hid), *w2c = weights_interleave(w2, nb * hid * bs);
    modes_gather(ctx, xg, X, idx, b, m, h * wf, c);

    /* Per block, on one thread (the layers are block-diagonal, so a block's layer 2 needs only
     * its own layer-1 columns: one parallel region for both):
     *   hpre = X·W1 + b1; A = ReLU(hpre.re) + i·ReLU(hpre.im); opre = A·W2 + b2. */
    int saved_threads = wx_blas_serial_begin();
#pragma omp parallel for num_threads(afno_threads(ctx)) schedule(static)
    for (int64_t k = 0; k < nb; k++) {
        block_fill_bias(hpre, b1, rows, ch, k * hid, hid);
        cgemm(CblasNoTrans, CblasNoTrans, rows, hid, bs, xg + 2 * k * bs, c, w1c + 2 * k * bs * hid,
              hid, 1, hpre + 2 * k * hid, ch);
        block_relu(act, hpre, rows, ch, k * hid, hid, 0);
        block_fill_bias(opre, b2, rows, c, k * bs, bs);
        cgemm(CblasNoTrans, CblasNoTrans, rows, bs, hid, act + 2 * k * hid, ch,
              w2c + 2 * k * hid * bs, bs, 1, opre + 2 * k * bs, c);
    }
    wx_blas_serial_end(saved_threads);

    /* Y = softshrink of re and im separately on kept modes, 0 elsewhere; one write pass. */
    const WXR lam = (WXR)lambda;
    const int64_t *slot = idx + m, hwf = h * wf;
#pragma omp parallel for num_threads(afno_threads(ctx)) schedule(static)
    for (int64_t r = 0; r < b * hwf; r++) {
        WXR *dst = Y + r * 2 * c;
        if (slot[r % hwf] < 0) {
            memset(dst, 0, sizeof(WXR) * 2 * (size_t)c);
            continue;
        }
        const WXR *o = opre + ((r / hwf) * m + slot[r % hwf]) * 2 * c;
#pragma omp simd
        for (int64_t j = 0; j < 2 * c; j++) { /* o − clamp(o, ±λ): branch-free, vectorizes */
            WXR cl = o[j] < -lam ? -lam : o[j];
            dst[j] = o[j] - (cl > lam ? lam : cl);
        }
    }
    free(xg), free(act), free(w1c), free(w2c), free(idx);
    return WX_OK;
}

/* Differentiates, per kept mode and block (complex rows, W = w[0] + i·w[1]):
 *   hpre = X·W1 + b1;  A = ReLU(hpre.re) + i·ReLU(hpre.im);  opre = A·W2 + b2;
 *   Y = softshrink(opre.re) + i·softshrink(opre.im).
 * For a complex product P = U·V with a real loss, writing gradients as d(re) + i·d(im):
 *   dU = dP·V^H and dV = U^H·dP (expand the real and imaginary parts to check). */
wx_status WXF(wx_cpu_afno_filter_backward)(
    wx_ctx *ctx, WXR *dX /* (B,H,Wf,C,2), nullable */, WXR *dw1 /* (2,nb,bs,hid) */,
    WXR *db1 /* (2,nb,hid) */, WXR *dw2 /* (2,nb,hid,bs) */, WXR *db2 /* (2,nb,bs) */,
    const WXR *dY /* (B,H,Wf,C,2) */, const WXR *saved, const WXR *X /* (B,H,Wf,C,2) */,
    const WXR *w1 /* (2,nb,bs,hid) */, const WXR *w2 /* (2,nb,hid,bs) */,
    const uint8_t *mask /* (H,Wf) */, int64_t b, int64_t h, int64_t wf, int64_t c, int64_t nb,
    int64_t factor, double lambda) {
    WX_TRY(afno_check("afno_filter_backward", b, h, wf, c, nb, factor, lambda));
    int64_t bs = c / nb, hid = bs * factor, ch = nb * hid, *idx;
    int64_t m = kept_modes(mask, h, wf, &idx), rows = b * m;
    const WXR *hpre = saved, *opre = saved + rows * ch * 2;
    if (rows == 0) {
        if (dX) memset(dX, 0, sizeof(WXR) * 2 * (size_t)(b * h * wf * c));
        free(idx);
        return WX_OK;
    }
    WXR *d_o = wx_malloc(sizeof(WXR) * 2 * (size_t)(rows * c));   /* d opre, then dXg */
    WXR *xg = wx_malloc(sizeof(WXR) * 2 * (size_t)(rows * c));
    WXR *act = wx_malloc(sizeof(WXR) * 2 * (size_t)(rows * ch));
    WXR *d_h = wx_malloc(sizeof(WXR) * 2 * (size_t)(rows * ch));  /* d A, then d hpre */
    int64_t wn = nb * bs * hid;
    WXR *w1c = weights_interleave(w1, wn), *w2c = weights_interleave(w2, wn);
    WXR *dwc = wx_malloc(sizeof(WXR) * 2 * (size_t)wn);

    /* d opre = dY ⊙ [|opre| > λ] (torch's softshrink backward; 0 at the kinks). */
    const WXR lam = (WXR)lambda;
#pragma omp parallel for num_threads(afno_threads(ctx)) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const WXR *src = dY + ((r / m) * h * wf + idx[r % m]) * 2 * c, *o = opre + r * 2 * c;
        WXR *dst = d_o + r * 2 * c;
#pragma omp simd
        for (int64_t j = 0; j < 2 * c; j++) {
            WXR v = src[j]; /* loaded unconditionally so the select vectorizes */
            dst[j] = WX_FABS(o[j]) > lam ? v : 0;
        }
    }
    modes_gather(ctx, xg, X, idx, b, m, h * wf, c);

    /* Per block, on one thread (block-diagonal: every step below reads and writes only the
     * block's columns, and each bias column is summed by one thread in row order):
     *   layer 2: db2 += Σ d opre; dW2 = A^H·d opre; dA = d opre·W2^H;
     *   ReLU: d hpre = dA ⊙ [hpre > 0];
     *   layer 1: db1 += Σ d hpre; dW1 = X^H·d hpre; dX = d hpre·W1^H on kept modes. */
    WXR *dwc1 = wx_malloc(sizeof(WXR) * 2 * (size_t)wn);
    int saved_threads = wx_blas_serial_begin();
#pragma omp parallel for num_threads(afno_threads(ctx)) schedule(static)
    for (int64_t k = 0; k < nb; k++) {
        block_relu(act, hpre, rows, ch, k * hid, hid, 0);
        block_sum_into(db2, d_o, rows, c, k * bs, bs);
        cgemm(CblasConjTrans, CblasNoTrans, hid, bs, rows, act + 2 * k * hid, ch, d_o + 2 * k * bs,
              c, 0, dwc + 2 * k * hid * bs, bs);
        cgemm(CblasNoTrans, CblasConjTrans, rows, hid, bs, d_o + 2 * k * bs, c,
              w2c + 2 * k * hid * bs, bs, 0, d_h + 2 * k * hid, ch);
        block_relu(d_h, hpre, rows, ch, k * hid, hid, 1);
        block_sum_into(db1, d_h, rows, ch, k * hid, hid);
        cgemm(CblasConjTrans, CblasNoTrans, bs, hid, rows, xg + 2 * k * bs, c, d_h + 2 * k * hid,
              ch, 0, dwc1 + 2 * k * bs * hid, hid);
        if (dX)
            cgemm(CblasNoTrans, CblasConjTrans, rows, bs, hid, d_h + 2 * k * hid, ch,
                  w1c + 2 * k * bs * hid, hid, 0, d_o + 2 * k * bs, c);
    }
    wx_blas_serial_end(saved_threads);
    for (int64_t i = 0; i < wn; i++) dw2[i] += dwc[2 * i], dw2[wn + i] += dwc[2 * i + 1];
    for (int64_t i = 0; i < wn; i++) dw1[i] += dwc1[2 * i], dw1[wn + i] += dwc1[2 * i + 1];
    free(dwc1);
    if (dX) modes_scatter(ctx, dX, d_o, idx + m, b, m, h * wf, c);

    free(d_o), free(xg), free(act), free(d_h), free(w1c), free(w2c), free(dwc), free(idx);
    return WX_OK;
}
