/* The training loss, the family-independent parts of wx_train_model (data attachment, input
 * construction, loading from a checkpoint) and the FourCastNet adapter. GraphCast's adapter is
 * train_model_gc.c. */
#include "train/train_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meteo/wx_catalogue.h"
#include "models/forcings.h"
#include "models/fourcastnet.h"
#include "train/checkpoint.h"

wx_status wx_train_model_gc_create(const wx_yaml *map, const char *path, wx_ctx *ctx,
                                   const wx_backend *be, uint64_t seed, int64_t max_batch,
                                   int64_t max_rollout, int act_checkpoint, wx_train_model **out);

void wx_train_loss_init(wx_train_loss *l, wx_loss_kind kind, wx_ctx *ctx, const wx_backend *be,
                        int64_t c, int64_t h, int64_t w, const double *wlat_area,
                        const double *weights) {
    memset(l, 0, sizeof *l);
    l->kind = kind, l->ctx = ctx, l->be = be, l->c = c, l->h = h, l->w = w;
    l->wlat = wx_malloc(sizeof(float) * (size_t)h);
    l->wch = wx_malloc(sizeof(float) * (size_t)c);
    for (int64_t j = 0; j < h; j++) l->wlat[j] = (float)wlat_area[j];
    for (int64_t i = 0; i < c; i++) l->wch[i] = weights ? (float)weights[i] : 1.0f;
    /* A failed allocation leaves NULL: loss_dev / queue report it (the message is set). */
    l->slots = wx_backend_alloc(be, ctx, sizeof(float) * WX_TRAIN_LOSS_SLOTS, "loss values");
    if (be->on_device) {
        l->dwlat = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)h, "loss latitude weights");
        l->dwch = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)c, "loss channel weights");
        l->shadow = wx_calloc((size_t)(h + c), sizeof(float)); /* uploaded at the first use */
        l->shadow[0] = NAN;                                  /* never equal: forces it */
    }
}

void wx_train_loss_free(wx_train_loss *l) {
    if (l->be) {
        l->be->mem_free(l->ctx, l->slots);
        if (l->be->on_device) {
            l->be->mem_free(l->ctx, l->dwlat);
            l->be->mem_free(l->ctx, l->dwch);
        }
    }
    free(l->shadow);
    free(l->wlat);
    free(l->wch);
    memset(l, 0, sizeof *l);
}

/* The weights the ops read: the host arrays, or their device copies, uploaded again only when the
 * host arrays changed since the last upload (a blocking copy per loss call would stall the
 * device's queue twice per rollout step). */
static wx_status loss_dev(const wx_train_loss *l, const float **wl, const float **wc) {
    *wl = l->wlat, *wc = l->wch;
    if (!l->slots) return WX_ERR_RUN; /* message set at init */
    if (!l->be->on_device) return WX_OK;
    if (!l->dwlat || !l->dwch) return WX_ERR_RUN;
    const size_t bh = sizeof(float) * (size_t)l->h, bc = sizeof(float) * (size_t)l->c;
    if (memcmp(l->shadow, l->wlat, bh) || memcmp(l->shadow + l->h, l->wch, bc)) {
        WX_TRY(l->be->copy_h2d(l->ctx, l->dwlat, l->wlat, bh));
        WX_TRY(l->be->copy_h2d(l->ctx, l->dwch, l->wch, bc));
        memcpy(l->shadow, l->wlat, bh);
        memcpy(l->shadow + l->h, l->wch, bc);
    }
    *wl = l->dwlat, *wc = l->dwch;
    return WX_OK;
}

wx_status wx_train_loss_queue(const wx_train_loss *l, int64_t slot, const float *pred,
                              const float *target, int64_t b) {
    WX_ASSERT(slot >= 0 && slot < WX_TRAIN_LOSS_SLOTS);
    const float *wl, *wc;
    WX_TRY(loss_dev(l, &wl, &wc));
    float *out = l->slots + slot;
    if (l->kind == WX_LOSS_REL_L2)
        return l->be->rel_l2_forward(l->ctx, out, pred, target, b, l->c * l->h * l->w);
    return l->be->mse_latw_forward(l->ctx, out, pred, target, wl, wc, b, l->c, l->h, l->w);
}

wx_status wx_train_loss_fetch(const wx_train_loss *l, int64_t n, double *sum) {
    WX_ASSERT(n >= 0 && n <= WX_TRAIN_LOSS_SLOTS);
    float v[WX_TRAIN_LOSS_SLOTS];
    const float *src = l->slots;
    if (l->be->on_device && n > 0) {
        WX_TRY(l->be->copy_d2h(l->ctx, v, l->slots, sizeof(float) * (size_t)n));
        src = v;
    }
    double total = 0; /* in step order, as the per-step sum it replaces */
    for (int64_t i = 0; i < n; i++) total += src[i];
    *sum = total;
    return WX_OK;
}

wx_status wx_train_loss_value(const wx_train_loss *l, double *loss, const float *pred,
                              const float *target, int64_t b) {
    WX_TRY(wx_train_loss_queue(l, 0, pred, target, b));
    return wx_train_loss_fetch(l, 1, loss);
}

wx_status wx_train_loss_grad(const wx_train_loss *l, float *dpred, double dloss, const float *pred,
                             const float *target, int64_t b) {
    if (l->kind == WX_LOSS_REL_L2)
        return l->be->rel_l2_backward(l->ctx, dpred, dloss, pred, target, b, l->c * l->h * l->w);
    const float *wl, *wc;
    WX_TRY(loss_dev(l, &wl, &wc));
    return l->be->mse_latw_backward(l->ctx, dpred, dloss, pred, target, wl, wc, b, l->c, l->h,
                                    l->w);
}

/* FourCastNet --------------------------------------------------------------------------------- */

typedef struct {
    wx_fcn *fcn;
    int64_t max_batch, max_rollout;
    float *y;     /* (K, B, Cout, H, W) step outputs */
    float *dy;    /* (B, Cout, H, W) */
    float *carry; /* (B, Cin, H, W) ∂L/∂(input of step k+1) = ∂L/∂ŷ_k through the later steps */
    float *xin;   /* (2, B, Cin, H, W) FourCastNet+ inputs of steps 2..K (state + extras) */
    float *ext;   /* (Cin − Cout, H, W) host: one sample's extras before their upload (devices) */
    wx_time *t;   /* (B) their times */
    char *config_text;
} fcn_impl;

static wx_status fcn_next_input(wx_train_model *tm, float *x1, const float *x0, const float *y0,
                                const wx_time *t2, int64_t b);

static wx_status fcn_loss_backward(wx_train_model *tm, const wx_train_loss *loss, const float *x,
                                   const float *targets, const wx_time *t1, int64_t k, int64_t b,
                                   double *loss_out) {
    fcn_impl *im = tm->impl;
    WX_ASSERT(k >= 1 && k <= im->max_rollout && b >= 1 && b <= im->max_batch);
    WX_ASSERT(k == 1 || tm->in_channels == tm->out_channels || tm->ops->next_input);
    int64_t n = b * tm->out_channels * tm->h * tm->w;
    wx_fcn_tapes_clear(im->fcn);
    const float *in = x;
    double total = 0;
    for (int64_t s = 0; s < k; s++) {
        float *ys = im->y + s * n;
        WX_TRY(wx_fcn_forward(im->fcn, ys, in, b));
        /* step losses stay in backend memory; copied back together (one transfer per step of
         * training up to WX_TRAIN_LOSS_SLOTS rollout steps) */
        WX_TRY(wx_train_loss_queue(loss, s % WX_TRAIN_LOSS_SLOTS, ys, targets + s * n, b));
        if ((s + 1) % WX_TRAIN_LOSS_SLOTS == 0 || s + 1 == k) {
            double part;
            WX_TRY(wx_train_loss_fetch(loss, s % WX_TRAIN_LOSS_SLOTS + 1, &part));
            total += part;
        }
        if (s + 1 < k && tm->ops->next_input) { /* FourCastNet+: the extras of step s + 1 */
            float *xs = im->xin + (s % 2) * b * tm->in_channels * tm->h * tm->w;
            for (int64_t i = 0; i < b; i++) im->t[i] = t1[i] + (s + 1) * tm->data.dt_s;
            WX_TRY(fcn_next_input(tm, xs, in, ys, im->t, b));
            in = xs;
        } else {
            in = ys;
        }
    }
    /* Last step first: ŷ_s feeds step s+1, so ∂L/∂ŷ_s = ∂L_s/∂ŷ_s + (dx of step s+1). */
    for (int64_t s = k - 1; s >= 0; s--) {
        const float *ys = im->y + s * n;
        WX_TRY(wx_train_loss_grad(loss, im->dy, 1.0, ys, targets + s * n, b));
        if (s < k - 1) /* the state part of the next input is ŷ_s; the extras are constants */
            for (int64_t i = 0; i < b; i++) /* a backend op: dy and carry may be device memory */
                WX_TRY(im->fcn->be->add_forward(im->fcn->ctx, im->dy + i * (n / b),
                                                im->dy + i * (n / b),
                                                im->carry + i * tm->in_channels * tm->h * tm->w,
                                                n / b));
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
    im->fcn->be->mem_free(im->fcn->ctx, im->y);
    im->fcn->be->mem_free(im->fcn->ctx, im->dy);
    im->fcn->be->mem_free(im->fcn->ctx, im->carry);
    im->fcn->be->mem_free(im->fcn->ctx, im->xin);
    wx_fcn_destroy(im->fcn);
    free(im->ext);
    free(im->t);
    free(im->config_text);
    free(im);
}

/* The model grid's latitudes (H) and longitudes (W) in degrees (a regular grid when no data). */
static void fcn_latlon(const wx_train_model *tm, double *lat, double *lon) {
    for (int64_t j = 0; j < tm->h; j++)
        lat[j] = tm->data.has_grid ? wx_grid_lat(&tm->data.grid, (int)j) : 90.0 - 180.0 * (double)j / (double)tm->h;
    for (int64_t i = 0; i < tm->w; i++)
        lon[i] = tm->data.has_grid ? wx_grid_lon(&tm->data.grid, (int)i) : 360.0 * (double)i / (double)tm->w;
}

/* e (n_extra, H, W), host memory: the FourCastNet+ extras at the input's valid time t. */
static wx_status fcn_extras(const wx_train_model *tm, const wx_fcn_config *d, float *e, wx_time t,
                            const double *lat, const double *lon) {
    static const char *const tnames[4] = {"day_progress_sin", "day_progress_cos", "year_progress_sin",
                                          "year_progress_cos"};
    const int64_t hw = tm->h * tm->w;
    if (d->extra_time)
        for (int k = 0; k < 4; k++, e += hw)
            WX_TRY(wx_forcing_fill(tnames[k], t, lat, tm->h, lon, tm->w, e));
    if (d->extra_location) {
        for (int64_t p = 0; p < hw; p++) {
            double la = lat[p / tm->w] * M_PI / 180.0, lo = lon[p % tm->w] * M_PI / 180.0;
            e[p] = (float)sin(la), e[hw + p] = (float)cos(lo), e[2 * hw + p] = (float)sin(lo);
        }
        e += 3 * hw;
    }
    if (d->extra_static) /* normalised surface geopotential, land-sea mask (read by the data) */
        memcpy(e, tm->data.statics, sizeof(float) * (size_t)(2 * hw));
    return WX_OK;
}

/* FourCastNet+: x (B, Cout + n_extra, H, W) = [state (B, Cout, H, W), extras at the input time
 * t1 − dt]. dev: x and states are backend memory (next_input on a device backend): the states
 * are copied on the device and the extras, computed on the host, uploaded into place; else both
 * are host memory (make_input on every backend, next_input on the CPU). */
static wx_status fcn_build_input(wx_train_model *tm, float *x, const float *states,
                                 const wx_time *t1, int64_t b, int dev) {
    fcn_impl *im = tm->impl;
    const wx_fcn_config *d = &im->fcn->d;
    const wx_backend *be = im->fcn->be;
    int64_t hw = tm->h * tm->w, cout = tm->out_channels, cin = tm->in_channels;
    if (!t1 && d->extra_time)
        return wx_error_set(WX_ERR_USAGE, "fourcastnet: time inputs need the valid times");
    double *lat = wx_malloc(sizeof(double) * (size_t)tm->h), *lon = wx_malloc(sizeof(double) * (size_t)tm->w);
    fcn_latlon(tm, lat, lon);
    const size_t sbytes = sizeof(float) * (size_t)(cout * hw);
    const size_t ebytes = sizeof(float) * (size_t)((cin - cout) * hw);
    wx_status st = WX_OK;
    for (int64_t s = 0; st == WX_OK && s < b; s++) {
        float *xs = x + s * cin * hw;
        wx_time t = d->extra_time ? t1[s] - tm->data.dt_s : 0; /* the input's valid time */
        if (!dev) {
            memcpy(xs, states + s * cout * hw, sbytes);
            st = fcn_extras(tm, d, xs + cout * hw, t, lat, lon);
            continue;
        }
        st = be->copy_d2d(im->fcn->ctx, xs, states + s * cout * hw, sbytes);
        /* im->ext is free again when copy_h2d returns (a blocking copy) */
        if (st == WX_OK) st = fcn_extras(tm, d, im->ext, t, lat, lon);
        if (st == WX_OK) st = be->copy_h2d(im->fcn->ctx, xs + cout * hw, im->ext, ebytes);
    }
    free(lat), free(lon);
    return st;
}

/* make_input: host memory on every backend (the data layer's). */
static wx_status fcn_make_input(wx_train_model *tm, float *x, const float *states,
                                const wx_time *t1, int64_t b) {
    return fcn_build_input(tm, x, states, t1, b, 0);
}

/* next_input: backend memory. */
static wx_status fcn_next_input(wx_train_model *tm, float *x1, const float *x0, const float *y0,
                                const wx_time *t2, int64_t b) {
    (void)x0;
    fcn_impl *im = tm->impl;
    return fcn_build_input(tm, x1, y0, t2, b, im->fcn->be->on_device);
}

static const wx_train_model_ops fcn_ops = {fcn_loss_backward, fcn_predict, fcn_print_config,
                                           fcn_destroy, NULL, NULL, NULL, NULL};
static const wx_train_model_ops fcn_plus_ops = {fcn_loss_backward, fcn_predict, fcn_print_config,
                                                fcn_destroy, fcn_make_input, fcn_next_input, NULL,
                                                NULL};
static const wx_train_channel fcn_statics[2] = {
    {"geopotential_at_surface", 0, WX_LEVEL_STATIC, 0}, {"land_sea_mask", 0, WX_LEVEL_STATIC, 0}};

static wx_status fcn_create(const wx_yaml *map, const char *path, wx_ctx *ctx, const wx_backend *be,
                            uint64_t seed, int64_t max_batch, int64_t max_rollout,
                            wx_train_model **out) {
    wx_fcn_config d;
    WX_TRY(wx_fcn_config_parse(map, path, &d));
    WX_TRY(wx_fcn_check(&d));
    if (max_rollout > 1 && d.in_channels != d.out_channels + d.n_extra)
        return wx_error_set(WX_ERR_USAGE, "%s: model: %lld input and %lld output channels: an "
                            "autoregressive rollout of %lld steps needs them equal",
                            map && map->file ? map->file : "model", (long long)d.in_channels,
                            (long long)d.out_channels, (long long)max_rollout);
    wx_fcn *f = wx_fcn_create(ctx, be, &d, seed, max_batch, (int)max_rollout);
    if (!f) return wx_error_wrap(WX_ERR_RUN, "model: ");
    fcn_impl *im = wx_calloc(1, sizeof *im);
    im->fcn = f, im->max_batch = max_batch, im->max_rollout = max_rollout;
    int64_t hw = d.img_h * d.img_w;
    /* in the model's backend memory (device memory on CUDA) */
    im->y = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)(max_rollout * max_batch *
                                                               d.out_channels * hw), "outputs");
    im->dy = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)(max_batch * d.out_channels * hw),
                              "output gradient");
    im->carry = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)(max_batch * d.in_channels * hw),
                                 "input gradient");
    if (im->y && im->dy && im->carry && d.n_extra && max_rollout > 1) /* inputs of steps 2..K */
        im->xin = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)(2 * max_batch *
                                                                     d.in_channels * hw),
                                   "rollout inputs");
    if (!im->y || !im->dy || !im->carry || (d.n_extra && max_rollout > 1 && !im->xin)) {
        wx_train_model tmp = {.impl = im}; /* allocation: message set by wx_backend_alloc */
        fcn_destroy(&tmp);
        return WX_ERR_RUN;
    }
    if (d.n_extra) {
        im->ext = wx_malloc(sizeof(float) * (size_t)(d.n_extra * hw));
        im->t = wx_malloc(sizeof(wx_time) * (size_t)(max_batch + 1));
    }
    size_t len = 0;
    FILE *mem = open_memstream(&im->config_text, &len);
    WX_ASSERT(mem != NULL);
    wx_fcn_config_print(mem, map, 0);
    fclose(mem);
    wx_train_model *tm = wx_calloc(1, sizeof *tm);
    tm->ops = d.n_extra ? &fcn_plus_ops : &fcn_ops, tm->family = "fourcastnet";
    tm->params = &f->params;
    if (d.extra_static) tm->nstatic = 2, tm->statics = fcn_statics;
    tm->in_channels = d.in_channels, tm->out_channels = d.out_channels;
    tm->h = d.img_h, tm->w = d.img_w, tm->impl = im;
    *out = tm;
    return WX_OK;
}

wx_status wx_train_model_create_ex(const wx_yaml *model, const char *path, wx_ctx *ctx,
                                   const wx_backend *be, uint64_t seed, int64_t max_batch,
                                   int64_t max_rollout, int act_checkpoint, wx_train_model **out) {
    *out = NULL;
    const wx_yaml *t = model && model->kind == WX_YAML_MAP ? wx_yaml_get(model, "type") : NULL;
    const char *type = NULL;
    if (!t || wx_yaml_as_string(t, "model.type", &type) != WX_OK)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: model: missing 'type' (fourcastnet or "
                            "graphcast)", model && model->file ? model->file : "config",
                            model ? model->line : 0);
    if (!strcmp(type, "fourcastnet"))
        return fcn_create(model, path, ctx, be, seed, max_batch, max_rollout, out);
    if (!strcmp(type, "precipnet"))
        return wx_train_model_precip_create_map(model, ctx, be, seed, max_batch, out);
    if (!strcmp(type, "graphcast"))
        return wx_train_model_gc_create(model, path, ctx, be, seed, max_batch, max_rollout,
                                        act_checkpoint, out);
    return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'model.type': '%s' cannot be trained "
                        "(expected fourcastnet or graphcast)", t->file, t->line, type);
}

wx_status wx_train_model_create(const wx_yaml *model, const char *path, wx_ctx *ctx,
                                const wx_backend *be, uint64_t seed, int64_t max_batch,
                                int64_t max_rollout, wx_train_model **out) {
    return wx_train_model_create_ex(model, path, ctx, be, seed, max_batch, max_rollout, 0, out);
}

void wx_train_data_free(wx_train_data *d) {
    free(d->names);
    free(d->mean);
    free(d->std);
    free(d->diff_std);
    free(d->statics);
    free(d->forcing_names);
    free(d->forcing_mean);
    free(d->forcing_std);
    memset(d, 0, sizeof *d);
}

wx_status wx_train_model_attach(wx_train_model *m, const wx_train_data *d) {
    if (d->nstate != m->out_channels)
        return wx_error_set(WX_ERR_USAGE, "model data: %d state channels for a model with %lld "
                            "outputs", d->nstate, (long long)m->out_channels);
    if (d->nstatic != m->nstatic)
        return wx_error_set(WX_ERR_USAGE, "model data: %d static fields for a model with %d",
                            d->nstatic, m->nstatic);
    wx_train_data *o = &m->data;
    wx_train_data_free(o);
    size_t n = (size_t)d->nstate, hw = (size_t)(m->h * m->w);
    o->nstate = d->nstate, o->nstatic = d->nstatic, o->dt_s = d->dt_s;
    o->has_grid = d->has_grid, o->grid = d->grid;
    o->names = wx_calloc(n + 1, sizeof *o->names);
    o->mean = wx_calloc(n + 1, sizeof(double));
    o->std = wx_calloc(n + 1, sizeof(double));
    o->diff_std = wx_calloc(n + 1, sizeof(double));
    for (size_t c = 0; c < n; c++) {
        if (d->names) snprintf(o->names[c], WX_TRAIN_NAME_MAX, "%s", d->names[c]);
        o->mean[c] = d->mean ? d->mean[c] : 0.0;
        o->std[c] = d->std ? d->std[c] : 1.0;
        o->diff_std[c] = d->diff_std ? d->diff_std[c] : 0.0;
    }
    o->statics = wx_calloc((size_t)d->nstatic * hw + 1, sizeof(float));
    if (d->statics) memcpy(o->statics, d->statics, sizeof(float) * (size_t)d->nstatic * hw);
    o->nforcing = d->nforcing;
    if (d->nforcing) {
        size_t nf = (size_t)d->nforcing;
        o->forcing_names = wx_calloc(nf, sizeof *o->forcing_names);
        memcpy(o->forcing_names, d->forcing_names, nf * sizeof *o->forcing_names);
        o->forcing_mean = wx_malloc(nf * sizeof(double));
        o->forcing_std = wx_malloc(nf * sizeof(double));
        memcpy(o->forcing_mean, d->forcing_mean, nf * sizeof(double));
        memcpy(o->forcing_std, d->forcing_std, nf * sizeof(double));
    }
    return m->ops->attach_data ? m->ops->attach_data(m) : WX_OK;
}

wx_status wx_train_model_make_input(wx_train_model *m, float *x, const float *states,
                                    const wx_time *t1, int64_t b) {
    if (m->ops->make_input) return m->ops->make_input(m, x, states, t1, b);
    if (m->in_channels != m->out_channels)
        return wx_error_set(WX_ERR_USAGE, "%s: %lld input and %lld output channels: the input "
                            "cannot be built from states", m->family, (long long)m->in_channels,
                            (long long)m->out_channels);
    const size_t bytes = sizeof(float) * (size_t)(b * m->in_channels * m->h * m->w);
    const wx_params *p = m->params;
    if (p && p->be && p->be->on_device) return p->be->copy_d2d(p->be_ctx, x, states, bytes);
    memcpy(x, states, bytes);
    return WX_OK;
}

wx_status wx_train_model_next_input(wx_train_model *m, float *x1, const float *x0,
                                    const float *y0, const wx_time *t2, int64_t b) {
    if (m->ops->next_input) return m->ops->next_input(m, x1, x0, y0, t2, b);
    return wx_train_model_make_input(m, x1, y0, t2, b);
}

/* Checkpoint DATA (trainer.c data_yaml): channels_out entries {name, mean, std, diff_std},
 * time_step_s; static fields from the FLDS section. */
static wx_status data_from_checkpoint(const wx_checkpoint *ck, wx_train_model *m) {
    wx_yaml *y = NULL;
    if (!ck->data_text) return wx_error_set(WX_ERR_RUN, "%s: no DATA section", ck->path);
    WX_TRY(wx_yaml_load_string(ck->data_text, ck->path, &y));
    wx_train_data d;
    memset(&d, 0, sizeof d);
    wx_status st = WX_OK;
    const wx_yaml *ch = wx_yaml_get(y, "channels_out"), *dt = wx_yaml_get(y, "time_step_s");
    if (!ch || ch->kind != WX_YAML_SEQ || !dt)
        st = wx_error_set(WX_ERR_RUN, "%s: DATA section without channels_out/time_step_s", ck->path);
    if (st == WX_OK) st = wx_yaml_as_int(dt, "time_step_s", &d.dt_s);
    const wx_yaml *g = wx_yaml_get(y, "grid");
    if (st == WX_OK && g) { /* {nlat, nlon, lat0, dlat, lon0, dlon} (trainer.c data_yaml) */
        int64_t nlat = 0, nlon = 0;
        double v[4] = {0};
        const char *k[4] = {"lat0", "dlat", "lon0", "dlon"};
        st = wx_yaml_as_int(wx_yaml_get(g, "nlat"), "grid.nlat", &nlat);
        if (st == WX_OK) st = wx_yaml_as_int(wx_yaml_get(g, "nlon"), "grid.nlon", &nlon);
        for (int i = 0; st == WX_OK && i < 4; i++) st = wx_yaml_as_double(wx_yaml_get(g, k[i]), k[i], &v[i]);
        if (st == WX_OK) st = wx_grid_make((int)nlat, (int)nlon, v[0], v[1], v[2], v[3], &d.grid);
        d.has_grid = st == WX_OK;
    }
    if (st == WX_OK) {
        d.nstate = ch->count;
        d.names = wx_calloc((size_t)d.nstate + 1, sizeof *d.names);
        d.mean = wx_calloc((size_t)d.nstate + 1, sizeof(double));
        d.std = wx_calloc((size_t)d.nstate + 1, sizeof(double));
        d.diff_std = wx_calloc((size_t)d.nstate + 1, sizeof(double));
    }
    for (int i = 0; st == WX_OK && i < d.nstate; i++) {
        const wx_yaml *e = ch->items[i], *v;
        const char *name = NULL;
        if ((v = wx_yaml_get(e, "name"))) st = wx_yaml_as_string(v, "name", &name);
        if (st == WX_OK && name) snprintf(d.names[i], WX_TRAIN_NAME_MAX, "%s", name);
        if (st == WX_OK && (v = wx_yaml_get(e, "mean"))) st = wx_yaml_as_double(v, "mean", &d.mean[i]);
        if (st == WX_OK && (v = wx_yaml_get(e, "std"))) st = wx_yaml_as_double(v, "std", &d.std[i]);
        if (st == WX_OK && (v = wx_yaml_get(e, "diff_std")))
            st = wx_yaml_as_double(v, "diff_std", &d.diff_std[i]);
    }
    /* forcings: [{name, mean, std}] (import-weights of a GraphCast checkpoint with --data: the
     * published normalisation of the forcings; absent in trained checkpoints) */
    const wx_yaml *fo = wx_yaml_get(y, "forcings");
    if (st == WX_OK && fo && fo->kind == WX_YAML_SEQ && fo->count > 0) {
        d.nforcing = fo->count;
        d.forcing_names = wx_calloc((size_t)fo->count, sizeof *d.forcing_names);
        d.forcing_mean = wx_calloc((size_t)fo->count, sizeof(double));
        d.forcing_std = wx_calloc((size_t)fo->count, sizeof(double));
        for (int i = 0; st == WX_OK && i < fo->count; i++) {
            const char *name = NULL;
            st = wx_yaml_as_string(wx_yaml_get(fo->items[i], "name"), "DATA.forcings.name", &name);
            if (st == WX_OK) snprintf(d.forcing_names[i], WX_TRAIN_NAME_MAX, "%s", name);
            if (st == WX_OK)
                st = wx_yaml_as_double(wx_yaml_get(fo->items[i], "mean"), "DATA.forcings.mean",
                                       &d.forcing_mean[i]);
            if (st == WX_OK)
                st = wx_yaml_as_double(wx_yaml_get(fo->items[i], "std"), "DATA.forcings.std",
                                       &d.forcing_std[i]);
        }
        if (st != WX_OK) st = wx_error_wrap(WX_ERR_RUN, "%s: ", ck->path);
    }
    if (st == WX_OK) {
        d.nstatic = m->nstatic;
        if (m->nstatic) {
            if (ck->nfields != m->nstatic || ck->field_h != m->h || ck->field_w != m->w)
                st = wx_error_set(WX_ERR_RUN, "%s: %d static fields of %lldx%lld, the model needs "
                                  "%d of %lldx%lld", ck->path, ck->nfields, (long long)ck->field_h,
                                  (long long)ck->field_w, m->nstatic, (long long)m->h,
                                  (long long)m->w);
            else
                d.statics = ck->fields;
        }
    }
    if (st == WX_OK) st = wx_train_model_attach(m, &d);
    d.statics = NULL; /* the checkpoint's */
    wx_train_data_free(&d);
    wx_yaml_free(y);
    return st;
}

wx_status wx_train_model_load(const char *ckpt_path, wx_ctx *ctx, const wx_backend *be,
                              int64_t max_batch, wx_train_model **out) {
    *out = NULL;
    wx_checkpoint ck;
    WX_TRY(wx_checkpoint_read(ckpt_path, &ck));
    wx_yaml *my = NULL;
    wx_status st = ck.model_text ? wx_yaml_load_string(ck.model_text, ckpt_path, &my)
                                 : wx_error_set(WX_ERR_RUN, "%s: no MODL section", ckpt_path);
    wx_train_model *m = NULL;
    /* max_rollout 0: no tapes, inference only */
    if (st == WX_OK) st = wx_train_model_create(my, "", ctx, be, 0, max_batch, 0, &m);
    if (st == WX_OK) { /* through a host copy when the parameters are device memory */
        float *h = NULL;
        st = wx_params_host_begin(m->params, &h);
        if (st == WX_OK) st = wx_checkpoint_load(&ck, WX_CKPT_PARAM, m->params, h);
        wx_status e = h ? wx_params_host_end(m->params, h) : WX_OK;
        if (st == WX_OK) st = e;
    }
    if (st == WX_OK) st = data_from_checkpoint(&ck, m);
    wx_yaml_free(my);
    wx_checkpoint_free(&ck);
    if (st != WX_OK) {
        wx_train_model_destroy(m);
        return st;
    }
    *out = m;
    return WX_OK;
}

void wx_train_model_destroy(wx_train_model *m) {
    if (!m) return;
    m->ops->destroy(m);
    wx_train_data_free(&m->data);
    free(m);
}
