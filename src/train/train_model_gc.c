/* GraphCast behind wx_train_model (train_model.h): the input channel layout, the forcings'
 * normalisation, the state/residual scales, the loss weights and the model's creation. Inputs,
 * the state map, predict and the K-step rollout loss are train_model_gc_rollout.c.
 *
 * Input channels, in the published order (graphcast.md reference §1.7, model_utils
 * dataset_to_stacked): every input variable — state variables fed as inputs, forcings, statics —
 * sorted by name; each variable time outer (t − (W−1)·dt … t; statics have no time), level inner;
 * then the forcings at the target time, sorted by name. W = input_steps. in_channels therefore
 * matches wx_gc_config's count.
 *
 * Normalisation: states (x − mean)/std with the archive's statistics (m->data); statics likewise
 * (done by the data layer); forcings here: TISR by a mean and std computed once from the same
 * ERA5-style formula (10° grid, 146 times over a year, every 61 h so all hours are sampled),
 * year/day progress sin/cos by their exact mean 0 and std 1/√2 — unless the data gives forcing
 * statistics (m->data.forcing_*: a DeepMind checkpoint imported with --data), used as given. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meteo/wx_catalogue.h"
#include "models/forcings.h"
#include "models/graphcast.h"
#include "train/train_model.h"
#include "train/train_model_gc_priv.h"
#include "train/train_model_priv.h"

enum { SLOT_STATE, SLOT_FORCING, SLOT_STATIC };

/* Input variable v of the sorted list. */
typedef struct {
    const char *name;
    int kind, idx; /* SLOT_*, index into states (first channel)/forcings/statics */
    int levels;    /* 1, or n_levels for atmospheric variables */
} in_var;

static int in_var_cmp(const void *a, const void *b) {
    return strcmp(((const in_var *)a)->name, ((const in_var *)b)->name);
}

static int is_target_only(const wx_gc_config *c, const char *name) {
    for (int i = 0; i < c->n_target_only; i++)
        if (!strcmp(c->target_only[i], name)) return 1;
    return 0;
}

static void build_layout(gc_impl *im) {
    const wx_gc_config *c = &im->c;
    const int64_t W = im->W, cout = c->out_channels;
    in_var *v = wx_calloc((size_t)(c->n_surface + c->n_atmos + c->n_forcings + c->n_static) + 1,
                          sizeof *v);
    int nv = 0;
    for (int i = 0; i < c->n_surface; i++)
        if (!is_target_only(c, c->surface[i])) v[nv++] = (in_var){c->surface[i], SLOT_STATE, i, 1};
    for (int i = 0; i < c->n_atmos; i++)
        if (!is_target_only(c, c->atmos[i]))
            v[nv++] = (in_var){c->atmos[i], SLOT_STATE, c->n_surface + i * c->n_levels, c->n_levels};
    for (int i = 0; i < c->n_forcings; i++) v[nv++] = (in_var){c->forcings[i], SLOT_FORCING, i, 1};
    for (int i = 0; i < c->n_static; i++) v[nv++] = (in_var){c->statics[i], SLOT_STATIC, i, 1};
    qsort(v, (size_t)nv, sizeof *v, in_var_cmp);
    for (int64_t i = 0; i < W * cout; i++) im->state_ch[i] = -1;
    int32_t k = 0;
    for (int i = 0; i < nv; i++) {
        if (v[i].kind == SLOT_STATIC) {
            im->stat_ch[v[i].idx] = k++;
            continue;
        }
        for (int64_t s = 0; s < W; s++)
            for (int l = 0; l < v[i].levels; l++) {
                if (v[i].kind == SLOT_STATE) im->state_ch[s * cout + v[i].idx + l] = k++;
                else im->forc_ch[s * im->nf + v[i].idx] = k++;
            }
    }
    /* target-time forcings, sorted by name */
    int *fo = wx_calloc((size_t)im->nf + 1, sizeof(int));
    for (int i = 0; i < im->nf; i++) fo[i] = i;
    for (int i = 1; i < im->nf; i++)
        for (int j = i; j > 0 && strcmp(c->forcings[fo[j - 1]], c->forcings[fo[j]]) > 0; j--) {
            int t = fo[j];
            fo[j] = fo[j - 1], fo[j - 1] = t;
        }
    for (int i = 0; i < im->nf; i++) im->forc_ch[W * im->nf + fo[i]] = k++;
    WX_ASSERT(k == c->in_channels);
    free(fo);
    free(v);
}

/* Forcing normalisation constants (see the header comment). */
static wx_status forcing_stats(gc_impl *im) {
    const int nlat = 19, nlon = 36, nt = 146;
    double lat[19], lon[36];
    for (int j = 0; j < nlat; j++) lat[j] = 90.0 - 10.0 * j;
    for (int i = 0; i < nlon; i++) lon[i] = 10.0 * i;
    float *f = wx_malloc(sizeof(float) * nlat * nlon);
    for (int q = 0; q < im->nf; q++) {
        const char *name = im->c.forcings[q];
        if (strcmp(name, "toa_incident_solar_radiation") && strcmp(name, "tisr")) {
            /* sin/cos of a uniformly advancing phase: mean 0, std 1/√2; checks the name */
            wx_status st = wx_forcing_fill(name, 0, lat, 1, lon, 1, f);
            if (st != WX_OK) {
                free(f);
                return wx_error_wrap(WX_ERR_USAGE, "graphcast forcings: ");
            }
            im->fmean[q] = 0.0, im->fstd[q] = sqrt(0.5);
            continue;
        }
        /* area-weighted moments (cos lat) over the sample */
        double s0 = 0, s1 = 0, s2 = 0;
        wx_time t0 = wx_time_make(2001, 1, 1, 0, 0, 0);
        for (int k = 0; k < nt; k++) {
            wx_forcing_toa_radiation(t0 + (wx_time)k * 61 * 3600, lat, nlat, lon, nlon, f);
            for (int j = 0; j < nlat; j++) {
                double w = cos(lat[j] * M_PI / 180.0);
                for (int i = 0; i < nlon; i++) {
                    double x = f[j * nlon + i];
                    s0 += w, s1 += w * x, s2 += w * x * x;
                }
            }
        }
        im->fmean[q] = s1 / s0;
        im->fstd[q] = sqrt(s2 / s0 - im->fmean[q] * im->fmean[q]);
    }
    free(f);
    return WX_OK;
}

static wx_status gc_attach(wx_train_model *tm) {
    gc_impl *im = tm->impl;
    const int64_t cout = tm->out_channels;
    /* Forcing statistics given with the data (a DeepMind checkpoint imported with --data: its
     * stats files) replace the computed ones, every forcing by name. */
    for (int q = 0; tm->data.nforcing && q < im->nf; q++) {
        int k = 0;
        while (k < tm->data.nforcing && strcmp(tm->data.forcing_names[k], im->c.forcings[q])) k++;
        if (k == tm->data.nforcing || !(tm->data.forcing_std[k] > 0))
            return wx_error_set(WX_ERR_RUN, "graphcast: the data's forcing statistics %s forcing "
                                "%s", k == tm->data.nforcing ? "lack" : "have std <= 0 for",
                                im->c.forcings[q]);
        im->fmean[q] = tm->data.forcing_mean[k], im->fstd[q] = tm->data.forcing_std[k];
    }
    for (int64_t c = 0; c < cout; c++) {
        if (im->state_ch[(im->W - 1) * cout + c] < 0) {
            im->scale[c] = 0;
            continue;
        }
        double sd = tm->data.std[c], dd = tm->data.diff_std[c];
        if (!(sd > 0) || !(dd > 0))
            return wx_error_set(WX_ERR_RUN, "graphcast: state channel %s has std %g and 6-hour "
                                "difference std %g; the residual output needs both > 0 (archive "
                                "statistics with diff_std)", tm->data.names[c], sd, dd);
        im->scale[c] = (float)(dd / sd);
    }
    return WX_OK;
}

static wx_status gc_loss_weights(wx_train_model *tm, float *wlat, float *wch) {
    gc_impl *im = tm->impl;
    WX_TRY(wx_gc_loss_weights(&im->c, im->lat, wlat, wch));
    for (int64_t c = 0; c < tm->out_channels; c++)
        if (im->scale[c] > 0) wch[c] = (float)((double)wch[c] / ((double)im->scale[c] * im->scale[c]));
    return WX_OK;
}

static void gc_print_config(const wx_train_model *tm, FILE *out) {
    const gc_impl *im = tm->impl;
    fputs(im->config_text, out);
}

static void gc_destroy(wx_train_model *tm) {
    gc_impl *im = tm->impl;
    wx_gc_destroy(im->gc);
    free(im->state_ch), free(im->forc_ch), free(im->stat_ch);
    free(im->lat), free(im->lon), free(im->fmean), free(im->fstd), free(im->scale);
    free(im->state_desc), free(im->static_desc);
    free(im->out), free(im->pred), free(im->xa), free(im->xb), free(im->dout), free(im->dpred);
    free(im->ga), free(im->gb), free(im->fbuf);
    free(im->config_text);
    free(im->hx), free(im->hy);
    if (im->be) {
        im->be->mem_free(im->ctx, im->d_in), im->be->mem_free(im->ctx, im->d_out);
        im->be->mem_free(im->ctx, im->d_dout), im->be->mem_free(im->ctx, im->d_dx);
    }
    free(im);
}

static const wx_train_model_ops gc_ops = {
    wx_train_gc_loss_backward, wx_train_gc_predict,       gc_print_config, gc_destroy,
    wx_train_gc_make_input,    wx_train_gc_next_input_be, gc_attach,       gc_loss_weights};

/* "total_precipitation_6hr" names the 6-hour accumulation of total_precipitation. */
static void desc(wx_train_channel *d, const char *name, double level, int kind) {
    snprintf(d->name, sizeof d->name, "%s", name);
    d->level = level, d->kind = kind;
}

wx_status wx_train_model_gc_create(const wx_yaml *map, const char *path, wx_ctx *ctx,
                                   const wx_backend *be, uint64_t seed, int64_t max_batch,
                                   int64_t max_rollout, int act_checkpoint, wx_train_model **out) {
    wx_gc_config c;
    WX_TRY(wx_gc_config_parse(map, path, &c));
    gc_impl *im = wx_calloc(1, sizeof *im);
    im->c = c, im->W = c.input_steps, im->maxb = max_batch, im->max_rollout = max_rollout;
    im->hw = c.nlat * c.nlon, im->nf = c.n_forcings;
    const int64_t cout = c.out_channels, cin = c.in_channels, hw = im->hw;
    im->state_ch = wx_calloc((size_t)(im->W * cout), sizeof(int32_t));
    im->forc_ch = wx_calloc((size_t)((im->W + 1) * im->nf) + 1, sizeof(int32_t));
    im->stat_ch = wx_calloc((size_t)c.n_static + 1, sizeof(int32_t));
    build_layout(im);
    im->lat = wx_malloc(sizeof(double) * (size_t)c.nlat);
    im->lon = wx_malloc(sizeof(double) * (size_t)c.nlon);
    for (int64_t j = 0; j < c.nlat; j++) im->lat[j] = 90.0 - (double)j * c.resolution;
    for (int64_t i = 0; i < c.nlon; i++) im->lon[i] = (double)i * c.resolution;
    im->fmean = wx_calloc((size_t)im->nf + 1, sizeof(double));
    im->fstd = wx_calloc((size_t)im->nf + 1, sizeof(double));
    im->scale = wx_calloc((size_t)cout, sizeof(float));
    im->fbuf = wx_malloc(sizeof(float) * (size_t)hw);
    im->config_text = NULL;
    wx_train_model *tm = wx_calloc(1, sizeof *tm);
    tm->ops = &gc_ops, tm->family = "graphcast", tm->impl = im;
    wx_status st = forcing_stats(im);
    if (st == WX_OK) {
        im->gc = wx_gc_create(ctx, be, &c, seed, max_batch, (int)max_rollout, act_checkpoint);
        if (!im->gc) st = wx_error_wrap(WX_ERR_RUN, "model: ");
    }
    if (st != WX_OK) {
        gc_destroy(tm);
        free(tm);
        return st;
    }
    size_t n = (size_t)(max_batch * cout * hw), nx = (size_t)(max_batch * cin * hw);
    /* A model made for prediction only (max_rollout 0: forecasts, rollouts) has no gradient
     * buffers, host or device: at 0.25° each is 0.3–0.5 GB per sample. */
    const int train = max_rollout > 0;
    im->out = wx_malloc(sizeof(float) * n);
    im->pred = train ? wx_malloc(sizeof(float) * n * (size_t)max_rollout) : NULL;
    im->dout = train ? wx_malloc(sizeof(float) * n) : NULL;
    im->dpred = train ? wx_malloc(sizeof(float) * n) : NULL;
    im->xa = wx_malloc(sizeof(float) * nx);
    im->xb = wx_malloc(sizeof(float) * nx);
    im->ga = train ? wx_malloc(sizeof(float) * nx) : NULL;
    im->gb = train ? wx_malloc(sizeof(float) * nx) : NULL;
    if (im->gc->ops) { /* staging for the ops path (device memory on CUDA) */
        im->be = be, im->ctx = ctx;
        im->hx = wx_malloc(sizeof(float) * nx);
        im->hy = wx_malloc(sizeof(float) * (nx > n ? nx : n));
        im->d_in = wx_backend_alloc(be, ctx, sizeof(float) * nx, "graphcast input");
        im->d_out = wx_backend_alloc(be, ctx, sizeof(float) * n, "graphcast output");
        if (train) {
            im->d_dout = wx_backend_alloc(be, ctx, sizeof(float) * n, "graphcast output gradient");
            im->d_dx = wx_backend_alloc(be, ctx, sizeof(float) * nx, "graphcast input gradient");
        }
        if (!im->d_in || !im->d_out || (train && (!im->d_dout || !im->d_dx))) {
            gc_destroy(tm);
            free(tm);
            return WX_ERR_RUN; /* message set by wx_backend_alloc */
        }
    }
    /* what the data layer must find */
    im->state_desc = wx_calloc((size_t)cout, sizeof *im->state_desc);
    int64_t k = 0;
    for (int i = 0; i < c.n_surface; i++) desc(&im->state_desc[k++], c.surface[i], 0, WX_LEVEL_SINGLE);
    for (int i = 0; i < c.n_atmos; i++)
        for (int l = 0; l < c.n_levels; l++)
            desc(&im->state_desc[k++], c.atmos[i], c.levels[l], WX_LEVEL_PRESSURE);
    for (int64_t j = 0; j < k; j++)
        im->state_desc[j].output_only = is_target_only(&c, im->state_desc[j].name);
    im->static_desc = wx_calloc((size_t)c.n_static + 1, sizeof *im->static_desc);
    for (int i = 0; i < c.n_static; i++) desc(&im->static_desc[i], c.statics[i], 0, WX_LEVEL_STATIC);
    size_t len = 0;
    FILE *mem = open_memstream(&im->config_text, &len);
    WX_ASSERT(mem != NULL);
    wx_gc_config_print(mem, map, 0);
    fclose(mem);
    tm->params = &im->gc->params;
    tm->in_channels = cin, tm->out_channels = cout, tm->h = c.nlat, tm->w = c.nlon;
    tm->window = im->W;
    tm->nstate = (int)cout, tm->state = im->state_desc;
    tm->nstatic = c.n_static, tm->statics = im->static_desc;
    *out = tm;
    return WX_OK;
}
