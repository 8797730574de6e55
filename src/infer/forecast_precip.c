#include "infer/forecast_precip.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_model.h"

static wx_status hook(wx_rollout *r, void *user) {
    wx_forecast_precip *p = user;
    /* r->y: the predicted state (normalised) before it is fed back */
    return wx_precip_diag_run(p->diag, p->tp, r->y, r->b);
}

wx_status wx_forecast_precip_open(wx_forecast_precip *p, const char *ckpt, wx_rollout *r) {
    memset(p, 0, sizeof *p);
    const char **names = wx_calloc((size_t)r->nout + 1, sizeof(char *));
    double *mean = wx_calloc((size_t)r->nout + 1, sizeof(double));
    double *std = wx_calloc((size_t)r->nout + 1, sizeof(double));
    for (int c = 0; c < r->nout; c++)
        names[c] = r->out[c].name, mean[c] = r->out[c].mean, std[c] = r->out[c].std;
    wx_status st = wx_precip_diag_open(ckpt, r->ctx, r->be, r->max_batch, r->nout,
                                       (const char *const *)names, mean, std, &p->diag);
    free(names), free(mean), free(std);
    WX_TRY(st);
    const char *tp = wx_precip_diag_channel(p->diag);
    for (int c = 0; c < r->nout; c++)
        if (!strcmp(r->out[c].name, tp)) { /* two fields of one name in every output */
            wx_precip_diag_close(p->diag);
            p->diag = NULL;
            return wx_error_set(WX_ERR_USAGE, "--precip %s: the model already predicts %s (its "
                                "output channel %d): --precip adds %s to a model without it",
                                ckpt, tp, c + 1, tp);
        }
    p->hw = r->h * r->w;
    p->tp = wx_calloc((size_t)(r->max_batch * p->hw), sizeof(float));
    r->hook = hook;
    r->hook_user = p;
    return WX_OK;
}

void wx_forecast_precip_close(wx_forecast_precip *p) {
    wx_precip_diag_close(p->diag);
    free(p->tp);
    memset(p, 0, sizeof *p);
}

static int find(const wx_archive_meta *m, const char *name) {
    for (int c = 0; m && c < m->nchan; c++)
        if (!strcmp(m->chan[c].name, name)) return c;
    return -1;
}

wx_archive_channel wx_forecast_precip_channel(const wx_forecast_precip *p, const wx_archive_meta *m,
                                              int64_t step_s) {
    const char *name = wx_precip_diag_channel(p->diag);
    int k = find(m, name);
    if (k >= 0) return m->chan[k];
    wx_archive_channel c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    snprintf(c.param, sizeof c.param, "tp");
    c.kind = WX_LEVEL_SINGLE;
    snprintf(c.units, sizeof c.units, "m");
    c.accum_s = step_s;
    return c;
}

void wx_forecast_precip_append(const wx_forecast_precip *p, float *out, int64_t b, int nout,
                               const float *rec, const wx_archive_meta *m) {
    if (!p->diag) return;
    size_t hw = (size_t)p->hw, n = (size_t)nout;
    for (int64_t s = b - 1; s >= 0; s--) { /* last member first: the blocks only move up */
        memmove(out + (size_t)s * (n + 1) * hw, out + (size_t)s * n * hw, sizeof(float) * n * hw);
        float *dst = out + ((size_t)s * (n + 1) + n) * hw;
        int k = rec ? find(m, wx_precip_diag_channel(p->diag)) : -2;
        if (k >= 0)
            memcpy(dst, rec + (size_t)k * (size_t)wx_archive_points(m), sizeof(float) * hw);
        else if (k == -1)
            for (size_t q = 0; q < hw; q++) dst[q] = NAN;
        else
            memcpy(dst, p->tp + (size_t)s * hw, sizeof(float) * hw);
    }
}
