/* GraphCast loss (losses.py weighted_mse_per_level through the mse_latw op), normalisation
 * (normalization.py) and the normalised-space rollout step, for the trainer. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "models/graphcast.h"

wx_status wx_gc_latitude_weights(const double *lat, int64_t nlat, double *w) {
    if (nlat < 2) return wx_error_set(WX_ERR_USAGE, "latitude weights: %lld rows (expected >= 2)",
                                      (long long)nlat);
    double d = fabs(lat[1] - lat[0]);
    for (int64_t j = 1; j < nlat; j++)
        if (fabs(fabs(lat[j] - lat[j - 1]) - d) > 1e-6 * (d > 1 ? d : 1))
            return wx_error_set(WX_ERR_USAGE, "latitude weights: rows %lld and %lld are %g degrees "
                                "apart, expected the even spacing %g", (long long)j - 1,
                                (long long)j, fabs(lat[j] - lat[j - 1]), d);
    int poles = 0;
    for (int64_t j = 0; j < nlat; j++) poles |= fabs(fabs(lat[j]) - 90.0) < 1e-9;
    const double dr = d * M_PI / 180.0;
    double sum = 0;
    for (int64_t j = 0; j < nlat; j++) {
        double c = cos(lat[j] * M_PI / 180.0);
        /* with the poles: the cell-area form, pole cells being caps of half a row */
        if (!poles) w[j] = c;
        else if (fabs(fabs(lat[j]) - 90.0) < 1e-9) w[j] = sin(dr / 4) * sin(dr / 4);
        else w[j] = c * sin(dr / 2);
        sum += w[j];
    }
    for (int64_t j = 0; j < nlat; j++) w[j] *= (double)nlat / sum;
    return WX_OK;
}

double wx_gc_variable_weight(const char *name) {
    static const char *const tenth[] = {"10m_u_component_of_wind", "10u", "10m_v_component_of_wind",
                                        "10v", "mean_sea_level_pressure", "msl",
                                        "total_precipitation_6hr", "total_precipitation", "tp"};
    for (size_t i = 0; i < sizeof tenth / sizeof *tenth; i++)
        if (strcasecmp(name, tenth[i]) == 0) return 0.1;
    return 1.0; /* 2m_temperature and every atmospheric variable */
}

wx_status wx_gc_loss_weights(const wx_gc_config *c, const double *lat, float *wlat, float *wch) {
    double *w = wx_malloc(sizeof(double) * (size_t)c->nlat);
    wx_status st = wx_gc_latitude_weights(lat, c->nlat, w);
    for (int64_t j = 0; st == WX_OK && j < c->nlat; j++) wlat[j] = (float)w[j];
    free(w);
    WX_TRY(st);
    const double C = (double)c->out_channels;
    double pmean = 0;
    for (int l = 0; l < c->n_levels; l++) pmean += c->levels[l] / c->n_levels;
    int64_t k = 0;
    for (int v = 0; v < c->n_surface; v++) wch[k++] = (float)(C * wx_gc_variable_weight(c->surface[v]));
    for (int v = 0; v < c->n_atmos; v++)
        for (int l = 0; l < c->n_levels; l++)
            wch[k++] = (float)(C * wx_gc_variable_weight(c->atmos[v]) * (c->levels[l] / pmean) /
                               c->n_levels);
    WX_ASSERT(k == c->out_channels);
    return WX_OK;
}

wx_status wx_gc_loss_forward(wx_ctx *ctx, const wx_backend *be, float *loss, const float *pred,
                             const float *target, const float *wlat, const float *wch, int64_t b,
                             int64_t c, int64_t h, int64_t w, int steps) {
    WX_TRY(be->mse_latw_forward(ctx, loss, pred, target, wlat, wch, b, c, h, w));
    if (steps <= 1) return WX_OK;
    /* loss is backend memory: on a device it is divided there (scale op, last bit may differ) */
    if (be->on_device) return be->scale_forward(ctx, loss, 1, 1.0 / (double)steps);
    *loss /= (float)steps;
    return WX_OK;
}

wx_status wx_gc_loss_backward(wx_ctx *ctx, const wx_backend *be, float *dpred, double dloss,
                              const float *pred, const float *target, const float *wlat,
                              const float *wch, int64_t b, int64_t c, int64_t h, int64_t w,
                              int steps) {
    return be->mse_latw_backward(ctx, dpred, dloss / (steps > 0 ? steps : 1), pred, target, wlat,
                                 wch, b, c, h, w);
}

void wx_gc_normalise(float *x, int64_t b, int64_t c, int64_t hw, const double *mean,
                     const double *std) {
    for (int64_t q = 0; q < b; q++)
        for (int64_t k = 0; k < c; k++) {
            float *p = x + (q * c + k) * hw;
            for (int64_t i = 0; i < hw; i++) p[i] = (float)(((double)p[i] - mean[k]) / std[k]);
        }
}

void wx_gc_residual_target(float *res, const float *target, const float *last, int64_t b,
                           int64_t c, int64_t hw, const double *diff_std) {
    for (int64_t q = 0; q < b; q++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t i = 0; i < hw; i++) {
                int64_t o = (q * c + k) * hw + i;
                res[o] = (float)(((double)target[o] - last[o]) / diff_std[k]);
            }
}

void wx_gc_prediction(float *pred, const float *out, const float *last, int64_t b, int64_t c,
                      int64_t hw, const double *diff_std) {
    for (int64_t q = 0; q < b; q++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t i = 0; i < hw; i++) {
                int64_t o = (q * c + k) * hw + i;
                pred[o] = (float)((double)last[o] + (double)out[o] * diff_std[k]);
            }
}

void wx_gc_rollout_next(const wx_gc_rollout_map *r, float *x1, const float *x0, const float *y0,
                        const float *base, int64_t b, int64_t hw) {
    memcpy(x1, base, sizeof(float) * (size_t)(b * r->cin * hw));
    for (int64_t q = 0; q < b; q++)
        for (int64_t c = 0; c < r->cout; c++) {
            const float *xl = r->last[c] >= 0 ? x0 + (q * r->cin + r->last[c]) * hw : NULL;
            if (!xl) continue;
            if (r->prev[c] >= 0) memcpy(x1 + (q * r->cin + r->prev[c]) * hw, xl, sizeof(float) * (size_t)hw);
            float *dst = x1 + (q * r->cin + r->last[c]) * hw;
            const float *y = y0 + (q * r->cout + c) * hw;
            for (int64_t i = 0; i < hw; i++) dst[i] = xl[i] + r->scale[c] * y[i];
        }
}

void wx_gc_rollout_next_backward(const wx_gc_rollout_map *r, float *dx0, float *dy0,
                                 const float *dx1, int64_t b, int64_t hw) {
    for (int64_t q = 0; q < b; q++)
        for (int64_t c = 0; c < r->cout; c++) {
            if (r->last[c] < 0) continue;
            const float *gl = dx1 + (q * r->cin + r->last[c]) * hw;
            const float *gp = r->prev[c] >= 0 ? dx1 + (q * r->cin + r->prev[c]) * hw : NULL;
            float *d0 = dx0 + (q * r->cin + r->last[c]) * hw;
            float *dy = dy0 + (q * r->cout + c) * hw;
            for (int64_t i = 0; i < hw; i++) {
                /* x1[last] = x0[last] + s·y0, x1[prev] = x0[last] */
                d0[i] += gl[i] + (gp ? gp[i] : 0.0f);
                dy[i] += r->scale[c] * gl[i];
            }
        }
}
