/* Convolution ops on the CPU: the 3×3 convolution of the precipitation head with periodic
 * (longitude) and zero (latitude) padding. Signatures and shapes: ops/conv.inc. Compiled twice
 * (float32, and float64 with the _f64 suffix) through ops/wx_real.h.
 *
 * Method: im2col per sample, col(cin·9, H·W), and one GEMM each for y, dwt and dcol; the padding
 * lives entirely in the im2col index map, so the GEMMs see dense matrices (wx_gemm_par: slabs on
 * the op's OpenMP team, OpenBLAS single-threaded inside, as every GEMM of wxcast). Memory: one
 * cin·9·H·W buffer (37 MB in float32 for one channel at 720×1440).
 *
 * Determinism: samples are reduced in order (GEMM with beta = 1 per sample into dwt, dbias summed
 * in double in index order) and col2im gathers (each dx element is written by one thread from a
 * fixed list of terms), so results depend on the thread count only through the GEMMs' slabs. */
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wx_gemm.h"
#include "ops/wx_ops.h"
#include "ops/wx_real.h"
#define WXR wx_real
#define WXF WX_FN

/* Below this many elements a parallel region costs more than it saves. */
#define WX_CONV_PAR_MIN (1 << 15)

static int conv_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

static wx_status conv_check(const char *op, int64_t b, int64_t cin, int64_t h, int64_t wd,
                            int64_t cout) {
    if (b < 0 || h < 0 || wd < 0 || cin < 1 || cout < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: B=%lld cin=%lld H=%lld W=%lld cout=%lld: expected "
                            "B, H, W >= 0 and cin, cout >= 1", op, (long long)b, (long long)cin,
                            (long long)h, (long long)wd, (long long)cout);
    if (h * wd > INT_MAX || cin * 9 > INT_MAX || cout > INT_MAX)
        return wx_error_set(WX_ERR_USAGE, "%s: H·W = %lld, cin·9 = %lld, cout = %lld: each must "
                            "fit BLAS's int", op, (long long)(h * wd), (long long)(cin * 9),
                            (long long)cout);
    return WX_OK;
}

/* col(cin·9, H·W) of one sample xs(cin,H,W): col[(c·9 + i·3 + j), r·W + q] =
 * xs[c, r+i−1, (q+j−1) mod W], 0 for rows r+i−1 outside 0..H−1. */
static void conv_im2col(const wx_ctx *ctx, WXR *col, const WXR *xs, int64_t cin, int64_t h,
                        int64_t wd) {
    const int64_t rows = cin * 9 * h;
#pragma omp parallel for num_threads(conv_threads(ctx)) if (rows * wd > WX_CONV_PAR_MIN) \
    schedule(static)
    for (int64_t t = 0; t < rows; t++) {
        int64_t k = t / h, r = t % h, c = k / 9, i = (k % 9) / 3, j = k % 3;
        int64_t src = r + i - 1;
        WXR *out = col + k * h * wd + r * wd;
        if (src < 0 || src >= h) {
            memset(out, 0, sizeof(WXR) * (size_t)wd);
            continue;
        }
        const WXR *in = xs + (c * h + src) * wd;
        for (int64_t q = 0; q < wd; q++) {
            int64_t s = q + j - 1; /* j − 1 ∈ {−1, 0, 1}: one wrap at most */
            if (s < 0) s += wd;
            else if (s >= wd) s -= wd;
            out[q] = in[s];
        }
    }
}

/* dxs(cin,H,W) = the adjoint of conv_im2col applied to dcol: every x element gathers the (up to 9)
 * col entries that copied it, in (i, j) order. Overwrites dxs. */
static void conv_col2im(const wx_ctx *ctx, WXR *dxs, const WXR *dcol, int64_t cin, int64_t h,
                        int64_t wd) {
    const int64_t rows = cin * h;
#pragma omp parallel for num_threads(conv_threads(ctx)) if (rows * wd * 9 > WX_CONV_PAR_MIN) \
    schedule(static)
    for (int64_t t = 0; t < rows; t++) {
        int64_t c = t / h, s = t % h;
        WXR *out = dxs + t * wd;
        for (int64_t q = 0; q < wd; q++) out[q] = 0;
        for (int64_t i = 0; i < 3; i++) {
            int64_t r = s - i + 1; /* the output row whose tap i reads input row s */
            if (r < 0 || r >= h) continue;
            for (int64_t j = 0; j < 3; j++) {
                const WXR *in = dcol + (c * 9 + i * 3 + j) * h * wd + r * wd;
                for (int64_t q = 0; q < wd; q++) {
                    int64_t p = q - j + 1; /* output column whose tap j reads input column q */
                    if (p < 0) p += wd;
                    else if (p >= wd) p -= wd;
                    out[q] += in[p];
                }
            }
        }
    }
}

wx_status WXF(wx_cpu_conv3x3_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const WXR *wt,
                                      const WXR *bias, int64_t b, int64_t cin, int64_t h,
                                      int64_t wd, int64_t cout) {
    /* y(B,cout,H,W), x(B,cin,H,W), wt(cout,cin,3,3), bias(cout) nullable */
    WX_TRY(conv_check("conv3x3_forward", b, cin, h, wd, cout));
    const int64_t hw = h * wd, k = cin * 9;
    if (b == 0 || hw == 0) return WX_OK;
    WXR *col = malloc(sizeof(WXR) * (size_t)(k * hw));
    if (!col)
        return wx_error_set(WX_ERR_RUN, "conv3x3_forward: cannot allocate %lld x %lld im2col "
                            "buffer", (long long)k, (long long)hw);
    for (int64_t bb = 0; bb < b; bb++) {
        WXR *ys = y + bb * cout * hw;
        conv_im2col(ctx, col, x + bb * cin * hw, cin, h, wd);
        if (bias)
            for (int64_t o = 0; o < cout; o++)
                for (int64_t p = 0; p < hw; p++) ys[o * hw + p] = bias[o];
        /* ys(cout, HW) = wt(cout, K) · col(K, HW) (+ the bias already there) */
        WX_FN(wx_gemm_par)(ctx, CblasNoTrans, CblasNoTrans, cout, hw, k, (WXR)1, wt, k, col, hw,
                           bias ? (WXR)1 : (WXR)0, ys, hw);
    }
    free(col);
    return WX_OK;
}

/* Differentiates y = wt · im2col(x) + bias (per sample):
 *   dbias += Σ_{b,p} dy,  dwt += Σ_b dy_b · col_bᵀ,  dx_b = col2im(wtᵀ · dy_b). */
wx_status WXF(wx_cpu_conv3x3_backward)(wx_ctx *ctx, WXR *dx, WXR *dwt, WXR *dbias, const WXR *dy,
                                       const WXR *x, const WXR *wt, int64_t b, int64_t cin,
                                       int64_t h, int64_t wd, int64_t cout) {
    /* dx(B,cin,H,W) overwrite nullable, dwt(cout,cin,3,3) += nullable, dbias(cout) += nullable,
     * dy(B,cout,H,W), x(B,cin,H,W), wt(cout,cin,3,3) */
    WX_TRY(conv_check("conv3x3_backward", b, cin, h, wd, cout));
    const int64_t hw = h * wd, k = cin * 9;
    if (b == 0 || hw == 0) return WX_OK;
    if (dbias)
        for (int64_t o = 0; o < cout; o++) {
            double s = 0;
            for (int64_t bb = 0; bb < b; bb++) {
                const WXR *row = dy + (bb * cout + o) * hw;
                for (int64_t p = 0; p < hw; p++) s += row[p];
            }
            dbias[o] += (WXR)s;
        }
    if (!dwt && !dx) return WX_OK;
    WXR *col = malloc(sizeof(WXR) * (size_t)(k * hw));
    if (!col)
        return wx_error_set(WX_ERR_RUN, "conv3x3_backward: cannot allocate %lld x %lld im2col "
                            "buffer", (long long)k, (long long)hw);
    for (int64_t bb = 0; bb < b; bb++) {
        const WXR *dys = dy + bb * cout * hw;
        if (dwt) {
            conv_im2col(ctx, col, x + bb * cin * hw, cin, h, wd);
            /* dwt(cout, K) += dy_b(cout, HW) · col(K, HW)ᵀ */
            WX_FN(wx_gemm_par)(ctx, CblasNoTrans, CblasTrans, cout, k, hw, (WXR)1, dys, hw, col, hw,
                               (WXR)1, dwt, k);
        }
        if (dx) {
            /* dcol(K, HW) = wt(cout, K)ᵀ · dy_b(cout, HW) */
            WX_FN(wx_gemm_par)(ctx, CblasTrans, CblasNoTrans, k, hw, cout, (WXR)1, wt, k, dys, hw,
                               (WXR)0, col, hw);
            conv_col2im(ctx, dx + bb * cin * hw, col, cin, h, wd);
        }
    }
    free(col);
    return WX_OK;
}
