/* Training losses: latitude-weighted MSE (GraphCast/FourCastNet training objective) and relative
 * L2 (NVlabs FourCastNet LpLoss, p = 2).
 *
 * Reductions accumulate in double. To stay deterministic without atomics and independent of the
 * thread count, each thread writes partial sums of fixed slices (rows or fixed-size chunks) into
 * an array that one thread then adds up in index order. */
#include <math.h>

#include <omp.h>

#include "ops/wx_ops.h"
#include "ops/wx_real.h"

#define WXR wx_real
#define WXF WX_FN

/* Fixed chunk length for the relative L2 partial sums: independent of the thread count. */
#define WX_LOSS_CHUNK 8192

static int loss_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

static wx_status check_mse_sizes(const char *op, const WXR *wlat, int64_t b, int64_t c, int64_t h,
                                 int64_t w) {
    if (b <= 0 || c <= 0 || h <= 0 || w <= 0)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes B=%lld C=%lld H=%lld W=%lld, expected all > 0",
                            op, (long long)b, (long long)c, (long long)h, (long long)w);
    if (!wlat) return wx_error_set(WX_ERR_USAGE, "%s: latitude weights (H) missing", op);
    return WX_OK;
}

/* pred, target (B,C,H,W); wlat (H); wch (C) or NULL; loss (1). */
wx_status WXF(wx_cpu_mse_latw_forward)(wx_ctx *ctx, WXR *loss, const WXR *pred, const WXR *target,
                                       const WXR *wlat, const WXR *wch, int64_t b, int64_t c,
                                       int64_t h, int64_t w) {
    WX_TRY(check_mse_sizes("mse_latw", wlat, b, c, h, w));
    int64_t rows = b * c * h; /* one partial per (b, c, h) row of W values */
    double *part = wx_malloc(sizeof(double) * rows);
    int nt = loss_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t row = 0; row < rows; row++) {
        int64_t hh = row % h, cc = (row / h) % c;
        const WXR *p = pred + row * w, *t = target + row * w;
        double s = 0;
        for (int64_t i = 0; i < w; i++) {
            double diff = (double)p[i] - (double)t[i];
            s += diff * diff;
        }
        part[row] = s * (double)wlat[hh] * (wch ? (double)wch[cc] : 1.0);
    }
    double total = 0;
    for (int64_t row = 0; row < rows; row++) total += part[row];
    free(part);
    *loss = (WXR)(total / ((double)rows * (double)w));
    return WX_OK;
}

/* Differentiates loss = Σ wlat[h]·wch[c]·(pred − target)² / (B·C·H·W):
 * dpred (B,C,H,W) = dloss · 2·wlat[h]·wch[c]·(pred − target) / (B·C·H·W), overwritten. */
wx_status WXF(wx_cpu_mse_latw_backward)(wx_ctx *ctx, WXR *dpred, double dloss, const WXR *pred,
                                        const WXR *target, const WXR *wlat, const WXR *wch,
                                        int64_t b, int64_t c, int64_t h, int64_t w) {
    WX_TRY(check_mse_sizes("mse_latw backward", wlat, b, c, h, w));
    int64_t rows = b * c * h;
    double k = 2.0 * dloss / ((double)rows * (double)w);
    int nt = loss_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t row = 0; row < rows; row++) {
        int64_t hh = row % h, cc = (row / h) % c;
        double f = k * (double)wlat[hh] * (wch ? (double)wch[cc] : 1.0);
        const WXR *p = pred + row * w, *t = target + row * w;
        WXR *dp = dpred + row * w;
        for (int64_t i = 0; i < w; i++) dp[i] = (WXR)(f * ((double)p[i] - (double)t[i]));
    }
    return WX_OK;
}

/* Per-sample ‖pred_b − target_b‖² and ‖target_b‖² (B each), summed over fixed chunks in order. */
static void rel_l2_sums(int nt, const WXR *pred, const WXR *target, int64_t b, int64_t n,
                        double *diff2, double *targ2) {
    int64_t chunks = (n + WX_LOSS_CHUNK - 1) / WX_LOSS_CHUNK;
    double *part = wx_malloc(sizeof(double) * 2 * (b * chunks > 0 ? b * chunks : 1));
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t bc = 0; bc < b * chunks; bc++) {
        int64_t s = bc / chunks, i0 = (bc % chunks) * WX_LOSS_CHUNK;
        int64_t i1 = i0 + WX_LOSS_CHUNK < n ? i0 + WX_LOSS_CHUNK : n;
        const WXR *p = pred + s * n, *t = target + s * n;
        double sd = 0, st = 0;
        for (int64_t i = i0; i < i1; i++) {
            double diff = (double)p[i] - (double)t[i];
            sd += diff * diff;
            st += (double)t[i] * (double)t[i];
        }
        part[2 * bc] = sd;
        part[2 * bc + 1] = st;
    }
    for (int64_t s = 0; s < b; s++) {
        diff2[s] = targ2[s] = 0;
        for (int64_t k = 0; k < chunks; k++) {
            diff2[s] += part[2 * (s * chunks + k)];
            targ2[s] += part[2 * (s * chunks + k) + 1];
        }
    }
    free(part);
}

static wx_status check_rel_l2(const char *op, const double *targ2, int64_t b, int64_t n) {
    if (b <= 0 || n <= 0)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes B=%lld n=%lld, expected both > 0", op,
                            (long long)b, (long long)n);
    if (!targ2) return WX_OK;
    for (int64_t s = 0; s < b; s++)
        if (!(targ2[s] > 0))
            return wx_error_set(WX_ERR_RUN, "%s: target sample %lld has norm %g, expected > 0", op,
                                (long long)s, sqrt(targ2[s]));
    return WX_OK;
}

/* pred, target (B,n); loss (1) = mean_b ‖pred_b − target_b‖ / ‖target_b‖. */
wx_status WXF(wx_cpu_rel_l2_forward)(wx_ctx *ctx, WXR *loss, const WXR *pred, const WXR *target,
                                     int64_t b, int64_t n) {
    WX_TRY(check_rel_l2("rel_l2", NULL, b, n));
    double *sums = wx_malloc(sizeof(double) * 2 * b);
    rel_l2_sums(loss_threads(ctx), pred, target, b, n, sums, sums + b);
    wx_status st = check_rel_l2("rel_l2", sums + b, b, n);
    if (st == WX_OK) {
        double total = 0;
        for (int64_t s = 0; s < b; s++) total += sqrt(sums[s]) / sqrt(sums[b + s]);
        *loss = (WXR)(total / (double)b);
    }
    free(sums);
    return st;
}

/* Differentiates loss = (1/B) Σ_b ‖d_b‖/‖t_b‖ with d_b = pred_b − target_b:
 * dpred (B,n)[b] = dloss · d_b / (B·‖d_b‖·‖t_b‖), overwritten; zero where d_b = 0 (the
 * subgradient torch's norm backward also takes there). */
wx_status WXF(wx_cpu_rel_l2_backward)(wx_ctx *ctx, WXR *dpred, double dloss, const WXR *pred,
                                      const WXR *target, int64_t b, int64_t n) {
    WX_TRY(check_rel_l2("rel_l2 backward", NULL, b, n));
    int nt = loss_threads(ctx);
    double *sums = wx_malloc(sizeof(double) * 2 * b);
    rel_l2_sums(nt, pred, target, b, n, sums, sums + b);
    wx_status st = check_rel_l2("rel_l2 backward", sums + b, b, n);
    if (st == WX_OK) {
        for (int64_t s = 0; s < b; s++) {
            double dn = sqrt(sums[s]);
            /* Reuse the slot for the per-sample factor. */
            sums[s] = dn > 0 ? dloss / ((double)b * dn * sqrt(sums[b + s])) : 0.0;
        }
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t i = 0; i < b * n; i++)
            dpred[i] = (WXR)(sums[i / n] * ((double)pred[i] - (double)target[i]));
    }
    free(sums);
    return st;
}
