/* The FourCastNet (AFNO) adapter behind wx_train_model (train_model.h): the K-step rollout loss
 * and its gradient, the FourCastNet+ extra inputs (time, location, statics), the model's creation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meteo/wx_catalogue.h"
#include "models/forcings.h"
#include "models/fourcastnet.h"
#include "train/train_model.h"
#include "train/train_model_priv.h"

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

wx_status wx_train_model_fcn_create(const wx_yaml *map, const char *path, wx_ctx *ctx,
                                    const wx_backend *be, uint64_t seed, int64_t max_batch,
                                    int64_t max_rollout, int act_checkpoint, wx_train_model **out) {
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
