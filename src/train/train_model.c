/* The training loss and the FourCastNet adapter behind wx_train_model. */
#include "train/train_model.h"

#include <stdlib.h>
#include <string.h>

#include "models/fourcastnet.h"

void wx_train_loss_init(wx_train_loss *l, wx_loss_kind kind, wx_ctx *ctx, const wx_backend *be,
                        int64_t c, int64_t h, int64_t w, const double *wlat_area,
                        const double *weights) {
    memset(l, 0, sizeof *l);
    l->kind = kind, l->ctx = ctx, l->be = be, l->c = c, l->h = h, l->w = w;
    l->wlat = wx_malloc(sizeof(float) * (size_t)h);
    l->wch = wx_malloc(sizeof(float) * (size_t)c);
    for (int64_t j = 0; j < h; j++) l->wlat[j] = (float)wlat_area[j];
    for (int64_t i = 0; i < c; i++) l->wch[i] = weights ? (float)weights[i] : 1.0f;
}

void wx_train_loss_free(wx_train_loss *l) {
    free(l->wlat);
    free(l->wch);
    memset(l, 0, sizeof *l);
}

wx_status wx_train_loss_value(const wx_train_loss *l, double *loss, const float *pred,
                              const float *target, int64_t b) {
    float v = 0;
    if (l->kind == WX_LOSS_REL_L2)
        WX_TRY(l->be->rel_l2_forward(l->ctx, &v, pred, target, b, l->c * l->h * l->w));
    else
        WX_TRY(l->be->mse_latw_forward(l->ctx, &v, pred, target, l->wlat, l->wch, b, l->c, l->h, l->w));
    *loss = v;
    return WX_OK;
}

wx_status wx_train_loss_grad(const wx_train_loss *l, float *dpred, double dloss, const float *pred,
                             const float *target, int64_t b) {
    if (l->kind == WX_LOSS_REL_L2)
        return l->be->rel_l2_backward(l->ctx, dpred, dloss, pred, target, b, l->c * l->h * l->w);
    return l->be->mse_latw_backward(l->ctx, dpred, dloss, pred, target, l->wlat, l->wch, b, l->c,
                                    l->h, l->w);
}

/* FourCastNet --------------------------------------------------------------------------------- */

typedef struct {
    wx_fcn *fcn;
    int64_t max_batch, max_rollout;
    float *y;     /* (K, B, Cout, H, W) step outputs */
    float *dy;    /* (B, Cout, H, W) */
    float *carry; /* (B, Cin, H, W) ∂L/∂(input of step k+1) = ∂L/∂ŷ_k through the later steps */
    char *config_text;
} fcn_impl;

static wx_status fcn_loss_backward(wx_train_model *tm, const wx_train_loss *loss, const float *x,
                                   const float *targets, int64_t k, int64_t b, double *loss_out) {
    fcn_impl *im = tm->impl;
    WX_ASSERT(k >= 1 && k <= im->max_rollout && b >= 1 && b <= im->max_batch);
    WX_ASSERT(k == 1 || tm->in_channels == tm->out_channels);
    int64_t n = b * tm->out_channels * tm->h * tm->w;
    wx_fcn_tapes_clear(im->fcn);
    const float *in = x;
    double total = 0;
    for (int64_t s = 0; s < k; s++) {
        float *ys = im->y + s * n;
        WX_TRY(wx_fcn_forward(im->fcn, ys, in, b));
        double v;
        WX_TRY(wx_train_loss_value(loss, &v, ys, targets + s * n, b));
        total += v;
        in = ys;
    }
    /* Last step first: ŷ_s feeds step s+1, so ∂L/∂ŷ_s = ∂L_s/∂ŷ_s + (dx of step s+1). */
    for (int64_t s = k - 1; s >= 0; s--) {
        const float *ys = im->y + s * n;
        WX_TRY(wx_train_loss_grad(loss, im->dy, 1.0, ys, targets + s * n, b));
        if (s < k - 1)
            for (int64_t i = 0; i < n; i++) im->dy[i] += im->carry[i];
        WX_TRY(wx_fcn_backward(im->fcn, s > 0 ? im->carry : NULL, im->dy));
    }
    *loss_out = total;
    return WX_OK;
}

static wx_status fcn_predict(wx_train_model *tm, float *y, const float *x, int64_t b) {
    fcn_impl *im = tm->impl;
    return wx_fcn_predict(im->fcn, y, x, b);
}

static void fcn_print_config(const wx_train_model *tm, FILE *out) {
    const fcn_impl *im = tm->impl;
    fputs(im->config_text, out);
}

static void fcn_destroy(wx_train_model *tm) {
    fcn_impl *im = tm->impl;
    wx_fcn_destroy(im->fcn);
    free(im->y);
    free(im->dy);
    free(im->carry);
    free(im->config_text);
    free(im);
}

static const wx_train_model_ops fcn_ops = {fcn_loss_backward, fcn_predict, fcn_print_config,
                                           fcn_destroy};

static wx_status fcn_create(const wx_yaml *map, const char *path, wx_ctx *ctx, const wx_backend *be,
                            uint64_t seed, int64_t max_batch, int64_t max_rollout,
                            wx_train_model **out) {
    wx_fcn_config d;
    WX_TRY(wx_fcn_config_parse(map, path, &d));
    WX_TRY(wx_fcn_check(&d));
    if (max_rollout > 1 && d.in_channels != d.out_channels)
        return wx_error_set(WX_ERR_USAGE, "%s: model: %lld input and %lld output channels: an "
                            "autoregressive rollout of %lld steps needs them equal",
                            map && map->file ? map->file : "model", (long long)d.in_channels,
                            (long long)d.out_channels, (long long)max_rollout);
    wx_fcn *f = wx_fcn_create(ctx, be, &d, seed, max_batch, (int)max_rollout);
    if (!f) return wx_error_wrap(WX_ERR_RUN, "model: ");
    fcn_impl *im = wx_calloc(1, sizeof *im);
    im->fcn = f, im->max_batch = max_batch, im->max_rollout = max_rollout;
    int64_t hw = d.img_h * d.img_w;
    im->y = wx_malloc(sizeof(float) * (size_t)(max_rollout * max_batch * d.out_channels * hw));
    im->dy = wx_malloc(sizeof(float) * (size_t)(max_batch * d.out_channels * hw));
    im->carry = wx_malloc(sizeof(float) * (size_t)(max_batch * d.in_channels * hw));
    size_t len = 0;
    FILE *mem = open_memstream(&im->config_text, &len);
    WX_ASSERT(mem != NULL);
    wx_fcn_config_print(mem, map, 0);
    fclose(mem);
    wx_train_model *tm = wx_calloc(1, sizeof *tm);
    tm->ops = &fcn_ops, tm->family = "fourcastnet", tm->params = &f->params;
    tm->in_channels = d.in_channels, tm->out_channels = d.out_channels;
    tm->h = d.img_h, tm->w = d.img_w, tm->impl = im;
    *out = tm;
    return WX_OK;
}

wx_status wx_train_model_create(const wx_yaml *model, const char *path, wx_ctx *ctx,
                                const wx_backend *be, uint64_t seed, int64_t max_batch,
                                int64_t max_rollout, wx_train_model **out) {
    *out = NULL;
    const wx_yaml *t = model && model->kind == WX_YAML_MAP ? wx_yaml_get(model, "type") : NULL;
    const char *type = NULL;
    if (!t || wx_yaml_as_string(t, "model.type", &type) != WX_OK)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: model: missing 'type' (fourcastnet)",
                            model && model->file ? model->file : "config", model ? model->line : 0);
    if (!strcmp(type, "fourcastnet"))
        return fcn_create(model, path, ctx, be, seed, max_batch, max_rollout, out);
    return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'model.type': '%s' cannot be trained yet "
                        "(expected fourcastnet)", t->file, t->line, type);
}

void wx_train_model_destroy(wx_train_model *m) {
    if (!m) return;
    m->ops->destroy(m);
    free(m);
}
