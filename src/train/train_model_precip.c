/* The precip stage's model (NVlabs train.py with params.precip: gen = model_wind(inp) under
 * no_grad, gen_prc = model(gen), loss on log1p(tp/eps) at t + dt) behind the wx_train_model
 * contract, and the same network as a forecast diagnostic (wx_precip_diag).
 *
 * The wind model is loaded from its checkpoint with wx_train_model_load (no tapes) and only its
 * predict/make_input/next_input are called: its parameters live outside m->params, so neither
 * the optimizer nor a checkpoint of this stage touches them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/precipnet.h"
#include "train/checkpoint.h"
#include "train/train_model.h"

typedef struct {
    wx_precip *net;
    wx_train_model *wind; /* frozen */
    double eps;
    char channel[WX_TRAIN_NAME_MAX];
    char wind_path[WX_TRAIN_PATH_MAX];
    uint32_t wind_crc;    /* the wind checkpoint's trailing crc32: which wind model this is */
    wx_fcn_config d;      /* the PrecipNet backbone */
    int64_t max_batch;
    const wx_backend *be;
    wx_ctx *ctx;
    /* in be's memory, as the arguments of the ops (train_model.h) */
    float *gen;           /* (B, Cstate, H, W) the wind model's predicted state */
    float *y, *dy;        /* (B, 1, H, W) */
} precip_impl;

static wx_status pr_loss_backward(wx_train_model *tm, const wx_train_loss *loss, const float *x,
                                  const float *targets, const wx_time *t1, int64_t k, int64_t b,
                                  double *loss_out) {
    (void)t1;
    precip_impl *im = tm->impl;
    WX_ASSERT(k == 1 && b >= 1 && b <= im->max_batch);
    wx_train_model *w = im->wind;
    /* no gradient reaches the wind model: predict records nothing */
    WX_TRY(w->ops->predict(w, im->gen, x, b));
    wx_precip_tapes_clear(im->net);
    WX_TRY(wx_precip_forward(im->net, im->y, im->gen, b));
    WX_TRY(wx_train_loss_value(loss, loss_out, im->y, targets, b));
    WX_TRY(wx_train_loss_grad(loss, im->dy, 1.0, im->y, targets, b));
    return wx_precip_backward(im->net, NULL, im->dy);
}

static wx_status pr_predict(wx_train_model *tm, float *y, const float *x, int64_t b) {
    precip_impl *im = tm->impl;
    WX_TRY(im->wind->ops->predict(im->wind, im->gen, x, b));
    return wx_precip_predict(im->net, y, im->gen, b);
}

static wx_status pr_make_input(wx_train_model *tm, float *x, const float *states, const wx_time *t1,
                               int64_t b) {
    precip_impl *im = tm->impl;
    return wx_train_model_make_input(im->wind, x, states, t1, b);
}

/* The wind model's next input: y0 (tp) plays no part; the state comes from the wind model. */
static wx_status pr_next_input(wx_train_model *tm, float *x1, const float *x0, const float *y0,
                               const wx_time *t2, int64_t b) {
    (void)y0;
    precip_impl *im = tm->impl;
    WX_TRY(im->wind->ops->predict(im->wind, im->gen, x0, b));
    return wx_train_model_next_input(im->wind, x1, x0, im->gen, t2, b);
}

static void print_backbone(FILE *out, const wx_fcn_config *d, const char *ind) {
    fprintf(out, "%stype: fourcastnet\n%simg_size: [%lld, %lld]\n%spatch_size: %lld\n", ind, ind,
            (long long)d->img_h, (long long)d->img_w, ind, (long long)d->patch);
    fprintf(out, "%sin_channels: %lld\n%sout_channels: %lld\n%sembed_dim: %lld\n%sdepth: %lld\n",
            ind, (long long)d->in_channels, ind, (long long)d->out_channels, ind,
            (long long)d->embed_dim, ind, (long long)d->depth);
    fprintf(out, "%smlp_ratio: %.17g\n%snum_blocks: %lld\n%ssparsity_threshold: %.17g\n", ind,
            d->mlp_ratio, ind, (long long)d->num_blocks, ind, d->sparsity_threshold);
    fprintf(out, "%shard_thresholding_fraction: %.17g\n%shidden_size_factor: %lld\n", ind,
            d->hard_thresholding_fraction, ind, (long long)d->hidden_size_factor);
    fprintf(out, "%stwo_sided_modes: %s\n%scount_unused_norm: %s\n", ind,
            d->two_sided_modes ? "true" : "false", ind, d->count_unused_norm ? "true" : "false");
}

static void pr_print_config(const wx_train_model *tm, FILE *out) {
    const precip_impl *im = tm->impl;
    fprintf(out, "type: precipnet\neps: %.17g\nchannel: \"%s\"\nwind_checkpoint: \"%s\"\n"
            "wind_crc32: \"%08x\"\nbackbone:\n", im->eps, im->channel, im->wind_path, im->wind_crc);
    print_backbone(out, &im->d, "  ");
}

static void pr_destroy(wx_train_model *tm) {
    precip_impl *im = tm->impl;
    wx_precip_destroy(im->net);
    wx_train_model_destroy(im->wind);
    im->be->mem_free(im->ctx, im->gen), im->be->mem_free(im->ctx, im->y);
    im->be->mem_free(im->ctx, im->dy);
    free(im);
}

static const wx_train_model_ops pr_ops = {pr_loss_backward, pr_predict, pr_print_config,
                                          pr_destroy, pr_make_input, pr_next_input, NULL, NULL};
/* A wind model that builds no input of its own (FourCastNet without extra inputs): the data layer
 * reads x directly. */
static const wx_train_model_ops pr_ops_plain = {pr_loss_backward, pr_predict, pr_print_config,
                                                pr_destroy, NULL, pr_next_input, NULL, NULL};

/* d: the backbone with in/out channels set; where: the config key for messages. */
static wx_status create(const wx_fcn_config *d, double eps, const char *channel, const char *wind_path,
                        const char *where, wx_ctx *ctx, const wx_backend *be, uint64_t seed,
                        int64_t max_batch, wx_train_model **out) {
    *out = NULL;
    wx_train_model *w = NULL;
    wx_status st = wx_train_model_load(wind_path, ctx, be, max_batch, &w);
    if (st != WX_OK) return wx_error_wrap(st, "%s: ", where);
    if (strcmp(w->family, "fourcastnet")) {
        wx_train_model_destroy(w);
        return wx_error_set(WX_ERR_USAGE, "%s: %s is a %s model; the precip stage needs a "
                            "FourCastNet wind model", where, wind_path, w->family);
    }
    wx_fcn_config dd = *d;
    dd.in_channels = w->out_channels, dd.out_channels = 1;
    if (d->img_h != w->h || d->img_w != w->w || d->in_channels != w->out_channels ||
        d->out_channels != 1) {
        wx_train_model_destroy(w);
        return wx_error_set(WX_ERR_USAGE, "%s: the PrecipNet backbone is %lldx%lld with %lld input "
                            "and %lld output channels; on the wind model %s it must be %lldx%lld "
                            "with %lld inputs (its state) and 1 output", where, (long long)d->img_h,
                            (long long)d->img_w, (long long)d->in_channels,
                            (long long)d->out_channels, wind_path, (long long)w->h, (long long)w->w,
                            (long long)w->out_channels);
    }
    wx_precip *net = wx_precip_create(ctx, be, &dd, seed, max_batch, 1);
    if (!net) {
        wx_train_model_destroy(w);
        return wx_error_wrap(WX_ERR_RUN, "%s: PrecipNet: ", where);
    }
    precip_impl *im = wx_calloc(1, sizeof *im);
    im->net = net, im->wind = w, im->eps = eps, im->d = dd, im->max_batch = max_batch;
    im->be = be, im->ctx = ctx;
    snprintf(im->channel, sizeof im->channel, "%s", channel);
    snprintf(im->wind_path, sizeof im->wind_path, "%s", wind_path);
    /* checkpoint.h: the file ends with the crc32 of everything before it (read and checked by
     * the load above); recorded in this model's MODL so a --resume notices another wind model */
    FILE *wf = fopen(wind_path, "rb");
    unsigned char c4[4] = {0, 0, 0, 0};
    if (wf && fseek(wf, -4, SEEK_END) == 0 && fread(c4, 1, 4, wf) == 4)
        im->wind_crc = (uint32_t)c4[0] | (uint32_t)c4[1] << 8 | (uint32_t)c4[2] << 16 |
                       (uint32_t)c4[3] << 24;
    if (wf) fclose(wf);
    size_t hw = (size_t)(w->h * w->w);
    im->gen = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)(max_batch * w->out_channels) * hw,
                               "precip: wind model outputs");
    im->y = im->gen ? wx_backend_alloc(be, ctx, sizeof(float) * (size_t)max_batch * hw,
                                       "precip: outputs") : NULL;
    im->dy = im->y ? wx_backend_alloc(be, ctx, sizeof(float) * (size_t)max_batch * hw,
                                      "precip: output gradient") : NULL;
    if (!im->dy) {
        wx_status st = wx_error_wrap(WX_ERR_RUN, "%s: ", where);
        wx_train_model tmp = {.impl = im};
        pr_destroy(&tmp);
        return st;
    }
    wx_train_model *tm = wx_calloc(1, sizeof *tm);
    tm->ops = w->ops->make_input ? &pr_ops : &pr_ops_plain;
    tm->family = "precipnet";
    tm->params = &net->params;
    tm->in_channels = w->in_channels, tm->out_channels = 1, tm->h = w->h, tm->w = w->w;
    tm->impl = im;
    tm->nin_names = w->data.nstate;
    tm->in_names = (const char (*)[WX_TRAIN_NAME_MAX])w->data.names;
    tm->in_mean = w->data.mean, tm->in_std = w->data.std;
    tm->target_name = im->channel;
    tm->target_log_eps = eps;
    tm->dt_s = w->data.dt_s;
    *out = tm;
    return WX_OK;
}

wx_status wx_train_model_precip_create(const wx_train_config *c, wx_ctx *ctx, const wx_backend *be,
                                       uint64_t seed, int64_t max_batch, wx_train_model **out) {
    const wx_yaml *map = c->precip_model ? c->precip_model : c->model;
    const char *path = c->precip_model ? (c->precip_model_root ? "" : "precip.model")
                                       : (c->model_path[0] ? "" : "model");
    const wx_yaml *t = map && map->kind == WX_YAML_MAP ? wx_yaml_get(map, "type") : NULL;
    const char *type = NULL;
    if (!t || wx_yaml_as_string(t, "type", &type) != WX_OK || strcmp(type, "fourcastnet"))
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s: the PrecipNet backbone must be a "
                            "fourcastnet model config (type: fourcastnet)",
                            map && map->file ? map->file : c->path, map ? map->line : 0,
                            c->precip_model ? "precip.model" : "model");
    wx_fcn_config d;
    WX_TRY(wx_fcn_config_parse(map, path, &d));
    if (c->precip_model) {
        /* An explicit backbone names its channels itself, or leaves them to the wind model. */
        if (!wx_yaml_get(map, "out_channels")) d.out_channels = 1;
        if (!wx_yaml_get(map, "in_channels")) d.in_channels = -1;
    } else {
        d.out_channels = 1, d.in_channels = -1; /* the wind model's config: its state in, tp out */
    }
    wx_fcn_config probe = d;
    /* the PrecipNet reads the predicted state only: no FourCastNet+ extras of its own */
    probe.extra_time = probe.extra_location = probe.extra_static = 0, probe.n_extra = 0;
    if (d.in_channels < 0) {
        /* the state size is the wind model's; create() checks the rest */
        wx_checkpoint ck;
        wx_status st = wx_checkpoint_read(c->wind_ckpt, &ck);
        if (st != WX_OK) return wx_error_wrap(st, "%s: key 'precip.wind_checkpoint': ", c->path);
        wx_yaml *my = NULL;
        st = ck.model_text ? wx_yaml_load_string(ck.model_text, c->wind_ckpt, &my)
                           : wx_error_set(WX_ERR_RUN, "%s: no MODL section", c->wind_ckpt);
        wx_fcn_config wd;
        if (st == WX_OK) st = wx_fcn_config_parse(my, "", &wd);
        if (st == WX_OK) probe.in_channels = wd.out_channels;
        wx_yaml_free(my);
        wx_checkpoint_free(&ck);
        if (st != WX_OK) return wx_error_wrap(st, "%s: key 'precip.wind_checkpoint': ", c->path);
    }
    char where[WX_TRAIN_PATH_MAX + 64];
    snprintf(where, sizeof where, "%.4000s: precip", c->path);
    return create(&probe, c->precip_eps, c->precip_channel, c->wind_ckpt, where, ctx, be, seed,
                  max_batch, out);
}

static const wx_cfg_field map_fields[] = {
    {"type", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "precipnet", NULL},
    {"eps", WX_CFG_FLOAT, 0, 1e-30, 1e6, "1e-5", "target transform log1p(tp / eps)", NULL},
    {"channel", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "tp", "archive precipitation channel", NULL},
    {"wind_checkpoint", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "\"\"", "the frozen wind model", NULL},
    {"wind_crc32", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "\"\"", "its trailing crc32 when trained (not in checkpoints before 2026-12-01)", NULL},
    {"backbone", WX_CFG_MAP, 1, WX_CFG_NO_RANGE, NULL, "the PrecipNet's AFNO backbone", NULL},
    WX_CFG_END};

/* MODL of a precip checkpoint: eps, channel, wind checkpoint path, backbone config. */
static wx_status parse_map(const wx_yaml *map, wx_fcn_config *d, double *eps, const char **channel,
                           const char **wind) {
    WX_TRY(wx_cfg_validate(map, "", map_fields));
    WX_TRY(wx_cfg_double(map, map_fields, "eps", eps));
    WX_TRY(wx_cfg_str(map, map_fields, "channel", channel));
    WX_TRY(wx_cfg_str(map, map_fields, "wind_checkpoint", wind));
    return wx_fcn_config_parse(wx_yaml_get(map, "backbone"), "backbone", d);
}

wx_status wx_train_model_precip_create_map(const wx_yaml *map, wx_ctx *ctx, const wx_backend *be,
                                           uint64_t seed, int64_t max_batch, wx_train_model **out) {
    wx_fcn_config d;
    double eps;
    const char *channel, *wind;
    WX_TRY(parse_map(map, &d, &eps, &channel, &wind));
    return create(&d, eps, channel, wind, map->file ? map->file : "precipnet", ctx, be, seed,
                  max_batch, out);
}

/* Forecast diagnostic ------------------------------------------------------------------------- */

struct wx_precip_diag {
    wx_precip *net;
    double eps;
    char channel[WX_TRAIN_NAME_MAX];
    int nin;
    int *src;          /* (nin) rollout state channel of each PrecipNet input */
    double *a, *b;     /* (nin) x_i = a_i · y_src + b_i: the rollout's normalisation → ours */
    int nstate;
    int64_t hw, max_batch;
    const wx_backend *be;
    wx_ctx *ctx;
    float *x, *y;      /* (max_batch, nin, H, W), (max_batch, 1, H, W): host */
    float *dx, *dy;    /* the same in be's memory on a device backend (NULL on the CPU) */
};

void wx_precip_diag_close(wx_precip_diag *d) {
    if (!d) return;
    wx_precip_destroy(d->net);
    if (d->be) d->be->mem_free(d->ctx, d->dx), d->be->mem_free(d->ctx, d->dy);
    free(d->src), free(d->a), free(d->b), free(d->x), free(d->y);
    free(d);
}

const char *wx_precip_diag_channel(const wx_precip_diag *d) { return d->channel; }

/* DATA channels_in of the precip checkpoint: the state channels and their normalisation. */
static wx_status diag_inputs(wx_precip_diag *d, const char *path, const char *data_text, int nstate,
                             const char *const *names, const double *mean, const double *std) {
    wx_yaml *y = NULL;
    WX_TRY(wx_yaml_load_string(data_text, path, &y));
    const wx_yaml *ch = wx_yaml_get(y, "channels_in");
    wx_status st = WX_OK;
    if (!ch || ch->kind != WX_YAML_SEQ || ch->count != d->nin)
        st = wx_error_set(WX_ERR_RUN, "%s: DATA channels_in has %d entries, the PrecipNet %d inputs",
                          path, ch ? ch->count : 0, d->nin);
    for (int i = 0; st == WX_OK && i < d->nin; i++) {
        const char *name = NULL;
        double mu = 0, sd = 1;
        st = wx_yaml_as_string(wx_yaml_get(ch->items[i], "name"), "channels_in.name", &name);
        if (st == WX_OK) st = wx_yaml_as_double(wx_yaml_get(ch->items[i], "mean"), "mean", &mu);
        if (st == WX_OK) st = wx_yaml_as_double(wx_yaml_get(ch->items[i], "std"), "std", &sd);
        if (st != WX_OK) break;
        int o = 0;
        while (o < nstate && strcmp(names[o], name)) o++;
        if (o == nstate) {
            st = wx_error_set(WX_ERR_USAGE, "--precip %s: input channel '%s' is not predicted by "
                              "the wind model (the forecast's state channels)", path, name);
            break;
        }
        if (!(sd > 0)) sd = 1;
        d->src[i] = o;
        d->a[i] = std[o] / sd;
        d->b[i] = (mean[o] - mu) / sd;
    }
    wx_yaml_free(y);
    return st;
}

wx_status wx_precip_diag_open(const char *ckpt, wx_ctx *ctx, const wx_backend *be,
                              int64_t max_batch, int nstate, const char *const *names,
                              const double *mean, const double *std, wx_precip_diag **out) {
    *out = NULL;
    wx_checkpoint ck;
    WX_TRY(wx_checkpoint_read(ckpt, &ck));
    wx_yaml *my = NULL;
    wx_status st = ck.model_text && ck.data_text
                       ? wx_yaml_load_string(ck.model_text, ckpt, &my)
                       : wx_error_set(WX_ERR_RUN, "%s: no MODL/DATA section", ckpt);
    const wx_yaml *t = st == WX_OK ? wx_yaml_get(my, "type") : NULL;
    const char *type = NULL;
    if (st == WX_OK && (!t || wx_yaml_as_string(t, "type", &type) != WX_OK || strcmp(type, "precipnet")))
        st = wx_error_set(WX_ERR_USAGE, "--precip %s: not a precipitation model (model type '%s'; "
                          "train one with wxcast train CONFIG --stage precip)", ckpt,
                          type ? type : "?");
    wx_fcn_config d;
    double eps = WX_PRECIP_EPS;
    const char *channel = "tp", *wind = "";
    if (st == WX_OK) st = parse_map(my, &d, &eps, &channel, &wind);
    wx_precip_diag *g = wx_calloc(1, sizeof *g);
    if (st == WX_OK) {
        g->eps = eps, g->nin = (int)d.in_channels, g->nstate = nstate, g->max_batch = max_batch;
        g->hw = d.img_h * d.img_w;
        snprintf(g->channel, sizeof g->channel, "%s", channel);
        g->src = wx_calloc((size_t)g->nin, sizeof(int));
        g->a = wx_calloc((size_t)g->nin, sizeof(double));
        g->b = wx_calloc((size_t)g->nin, sizeof(double));
        st = diag_inputs(g, ckpt, ck.data_text, nstate, names, mean, std);
    }
    if (st == WX_OK) {
        g->net = wx_precip_create(ctx, be, &d, 0, max_batch, 0);
        if (!g->net) st = wx_error_wrap(WX_ERR_RUN, "--precip %s: ", ckpt);
    }
    if (st == WX_OK) { /* through a host copy when the parameters are device memory */
        float *h = NULL;
        st = wx_params_host_begin(&g->net->params, &h);
        if (st == WX_OK) st = wx_checkpoint_load(&ck, WX_CKPT_PARAM, &g->net->params, h);
        wx_status e = h ? wx_params_host_end(&g->net->params, h) : WX_OK;
        if (st == WX_OK) st = e;
    }
    if (st == WX_OK) {
        g->be = be, g->ctx = ctx;
        g->x = wx_malloc(sizeof(float) * (size_t)(max_batch * g->nin * g->hw));
        g->y = wx_malloc(sizeof(float) * (size_t)(max_batch * g->hw));
        if (be->on_device) {
            g->dx = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)(max_batch * g->nin * g->hw),
                                     "--precip inputs");
            g->dy = g->dx ? wx_backend_alloc(be, ctx, sizeof(float) * (size_t)(max_batch * g->hw),
                                             "--precip outputs") : NULL;
            if (!g->dy) st = wx_error_wrap(WX_ERR_RUN, "--precip %s: ", ckpt);
        }
    }
    wx_yaml_free(my);
    wx_checkpoint_free(&ck);
    if (st != WX_OK) {
        wx_precip_diag_close(g);
        return st;
    }
    *out = g;
    return WX_OK;
}

wx_status wx_precip_diag_run(wx_precip_diag *d, float *tp, const float *y, int64_t b) {
    WX_ASSERT(b >= 1 && b <= d->max_batch);
    for (int64_t s = 0; s < b; s++)
        for (int i = 0; i < d->nin; i++) {
            const float *src = y + ((size_t)s * (size_t)d->nstate + (size_t)d->src[i]) * (size_t)d->hw;
            float *dst = d->x + ((size_t)s * (size_t)d->nin + (size_t)i) * (size_t)d->hw;
            for (int64_t p = 0; p < d->hw; p++) dst[p] = (float)(d->a[i] * src[p] + d->b[i]);
        }
    if (d->dx) { /* a device backend: the network reads and writes its memory */
        WX_TRY(d->be->copy_h2d(d->ctx, d->dx, d->x, sizeof(float) * (size_t)(b * d->nin * d->hw)));
        WX_TRY(wx_precip_predict(d->net, d->dy, d->dx, b));
        WX_TRY(d->be->copy_d2h(d->ctx, d->y, d->dy, sizeof(float) * (size_t)(b * d->hw)));
    } else {
        WX_TRY(wx_precip_predict(d->net, d->y, d->x, b));
    }
    wx_precip_from_log(tp, d->y, b * d->hw, d->eps);
    /* ReLU keeps the log ≥ 0, so tp ≥ 0 already; the clamp guards rounding of exp(0) − 1 */
    for (int64_t p = 0; p < b * d->hw; p++)
        if (!(tp[p] > 0)) tp[p] = 0;
    return WX_OK;
}
