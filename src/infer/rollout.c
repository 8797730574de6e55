#include "infer/rollout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_yaml.h"
#include "infer/forecast_init.h"
#include "meteo/wx_catalogue.h"
#include "ops/wx_ctx.h"
#include "ops/wx_gemm.h"
#include "train/checkpoint.h"
#include "train/train_model.h"
#include "wx_build_config.h"
#include "backend/wx_cuda_api.h"
#if WX_HAVE_CUDA
#include "wx_cuda_backend.h" /* wx_cuda_precision */
#endif

/* One channel list of the DATA section: - {name, units, mean, std}. */
static wx_status parse_channels(const wx_yaml *root, const char *key, wx_rollout_channel **out,
                                int *n) {
    const wx_yaml *seq = wx_yaml_get(root, key);
    /* messages without the path: parse_data prefixes it */
    if (!seq || seq->kind != WX_YAML_SEQ || seq->count < 1)
        return wx_error_set(WX_ERR_RUN, "checkpoint DATA section: '%s' is missing or empty (a "
                            "checkpoint of import-weights without --data has no channels or "
                            "statistics: import again with --data, docs/weights.md)", key);
    *n = seq->count;
    *out = wx_calloc((size_t)seq->count, sizeof **out);
    for (int i = 0; i < seq->count; i++) {
        const wx_yaml *it = seq->items[i];
        wx_rollout_channel *c = &(*out)[i];
        const char *name = NULL, *units = "";
        char k[96];
        snprintf(k, sizeof k, "DATA.%s[%d]", key, i);
        WX_TRY(wx_yaml_as_string(wx_yaml_get(it, "name"), k, &name));
        if (wx_yaml_get(it, "units")) WX_TRY(wx_yaml_as_string(wx_yaml_get(it, "units"), k, &units));
        WX_TRY(wx_yaml_as_double(wx_yaml_get(it, "mean"), k, &c->mean));
        WX_TRY(wx_yaml_as_double(wx_yaml_get(it, "std"), k, &c->std));
        if (!(c->std > 0) || !isfinite(c->mean))
            return wx_error_set(WX_ERR_RUN, "checkpoint DATA %s: channel '%s' has mean %g, std %g "
                                "(expected finite, std > 0)", key, name, c->mean, c->std);
        snprintf(c->name, sizeof c->name, "%s", name);
        snprintf(c->units, sizeof c->units, "%s", units);
        double acc = 0;
        if (wx_yaml_get(it, "accumulation_s"))
            WX_TRY(wx_yaml_as_double(wx_yaml_get(it, "accumulation_s"), k, &acc));
        c->accum_s = (int64_t)acc;
        wx_archive_channel ac; /* a name outside the catalogue is simply not clamped */
        if (wx_forecast_channel_from_name(name, 0, &ac) == WX_OK) {
            const wx_catalogue_entry *e = wx_catalogue_find_kind(ac.param, ac.kind);
            c->nonnegative = e && e->nonnegative;
        }
    }
    return WX_OK;
}

static wx_status parse_data(wx_rollout *r, const char *text) {
    wx_yaml *root = NULL;
    char name[1100];
    snprintf(name, sizeof name, "%s (DATA section)", r->path);
    WX_TRY(wx_yaml_load_string(text, name, &root));
    wx_status st = parse_channels(root, "channels_in", &r->in, &r->nin);
    if (st == WX_OK) st = parse_channels(root, "channels_out", &r->out, &r->nout);
    if (st == WX_OK) st = wx_yaml_as_int(wx_yaml_get(root, "time_step_s"), "DATA.time_step_s", &r->step_s);
    const wx_yaml *g = wx_yaml_get(root, "grid");
    int64_t nlat = 0, nlon = 0;
    double lat0 = 0, dlat = 0, lon0 = 0, dlon = 0;
    if (st == WX_OK) st = wx_yaml_as_int(wx_yaml_get(g, "nlat"), "DATA.grid.nlat", &nlat);
    if (st == WX_OK) st = wx_yaml_as_int(wx_yaml_get(g, "nlon"), "DATA.grid.nlon", &nlon);
    if (st == WX_OK) st = wx_yaml_as_double(wx_yaml_get(g, "lat0"), "DATA.grid.lat0", &lat0);
    if (st == WX_OK) st = wx_yaml_as_double(wx_yaml_get(g, "dlat"), "DATA.grid.dlat", &dlat);
    if (st == WX_OK) st = wx_yaml_as_double(wx_yaml_get(g, "lon0"), "DATA.grid.lon0", &lon0);
    if (st == WX_OK) st = wx_yaml_as_double(wx_yaml_get(g, "dlon"), "DATA.grid.dlon", &dlon);
    if (st == WX_OK) st = wx_grid_make((int)nlat, (int)nlon, lat0, dlat, lon0, dlon, &r->grid);
    wx_yaml_free(root);
    if (st != WX_OK) return wx_error_wrap(st, "%s: ", r->path);
    if (r->step_s <= 0)
        return wx_error_set(WX_ERR_RUN, "%s: checkpoint DATA: time_step_s %lld, expected > 0",
                            r->path, (long long)r->step_s);
    /* Autoregression: every input channel must come back out of the model under its name. */
    r->next_in = wx_calloc((size_t)r->nin, sizeof(int));
    for (int i = 0; i < r->nin; i++) {
        r->next_in[i] = -1;
        for (int o = 0; o < r->nout; o++)
            if (!strcmp(r->in[i].name, r->out[o].name)) r->next_in[i] = o;
        if (r->next_in[i] < 0)
            return wx_error_set(WX_ERR_RUN, "%s: input channel '%s' is not an output of the model: "
                                "it cannot be rolled out autoregressively", r->path, r->in[i].name);
    }
    return WX_OK;
}

/* The network from the checkpoint, checked against the DATA section it came with. */
static wx_status build_model(wx_rollout *r) {
    WX_TRY(wx_train_model_load(r->path, r->ctx, r->be, r->max_batch, &r->model));
    wx_train_model *m = r->model;
    snprintf(r->family, sizeof r->family, "%s", m->family);
    r->h = m->h, r->w = m->w;
    r->builder = m->ops->make_input != NULL;
    r->window = r->builder && m->window > 1 ? m->window : 1;
    /* A builder model's input channels are its own (forcings, statics): only FourCastNet's are
     * the DATA channels_in. */
    if ((!r->builder && m->in_channels != r->nin) || m->out_channels != r->nout ||
        m->h != r->grid.nlat || m->w != r->grid.nlon)
        return wx_error_set(WX_ERR_RUN, "%s: the model (%lld in, %lld out, %lldx%lld) does not match "
                            "its DATA section (%d in, %d out, %dx%d)", r->path,
                            (long long)m->in_channels, (long long)m->out_channels, (long long)m->h,
                            (long long)m->w, r->nin, r->nout, r->grid.nlat, r->grid.nlon);
    /* A builder model's state is its output: same channels, same order, in and out. */
    for (int i = 0; r->builder && i < r->nin; i++)
        if (r->nin != r->nout || r->next_in[i] != i)
            return wx_error_set(WX_ERR_RUN, "%s: %s model: DATA channels_in must be channels_out "
                                "(the state), in the same order", r->path, r->family);
    if (m->data.dt_s != r->step_s)
        return wx_error_set(WX_ERR_RUN, "%s: the model's time step %llds is not DATA.time_step_s "
                            "%llds", r->path, (long long)m->data.dt_s, (long long)r->step_s);
    return WX_OK;
}

/* The backend the options name, checked before anything is read ("no CUDA device" first). */
static wx_status pick_backend(const wx_rollout_opts *o, const wx_backend **be) {
    if (o->backend) *be = o->backend; /* tests only: not reachable from the CLI */
    else WX_TRY(wx_backend_by_name(o->device, "--device", be));
    if (o->bf16 && !wx_backend_is_cuda(*be))
        return wx_error_set(WX_ERR_USAGE, "--precision bf16 needs the CUDA backend; backend '%s' "
                            "computes in fp32", (*be)->name);
    return WX_OK;
}

/* The backend's settings on the context: GPU 0, the GEMM precision. */
static wx_status setup_backend(wx_rollout *r, const wx_rollout_opts *o) {
    r->dev = r->be->on_device;
#if WX_HAVE_CUDA
    if (wx_backend_is_cuda(r->be)) {
        const wx_cuda_api *cuda = wx_cuda();
        if (!cuda) return WX_ERR_RUN;
        WX_TRY(cuda->ctx_attach(r->ctx, 0));
        WX_TRY(cuda->set_precision(r->ctx, o->bf16 ? WX_CUDA_BF16 : WX_CUDA_FP32));
    }
#else
    (void)o;
#endif
    return WX_OK;
}

/* Host buffers, and on a device backend their device counterparts (see rollout.h). */
static wx_status alloc_buffers(wx_rollout *r) {
    size_t hw = (size_t)(r->h * r->w), B = (size_t)r->max_batch;
    size_t cin = r->builder ? (size_t)r->model->in_channels : 0;
    size_t nx = B * (size_t)r->nin * hw, ny = B * (size_t)r->nout * hw, nm = B * cin * hw;
    r->t0 = wx_calloc(2 * B, sizeof(wx_time)); /* and the step's target times after them */
    r->x = wx_malloc(sizeof(float) * nx);
    r->y = wx_malloc(sizeof(float) * ny);
    if (r->builder) {
        r->prev = wx_malloc(sizeof(float) * ((size_t)(r->window - 1) * B * (size_t)r->nout + 1) * hw);
        r->xm = wx_malloc(sizeof(float) * nm);
        if (!r->dev) r->xm2 = wx_malloc(sizeof(float) * nm);
    }
    if (!r->dev) {
        r->dx = r->x, r->dy = r->y, r->dxm = r->xm, r->dxm2 = r->xm2;
        return WX_OK;
    }
    r->dx = wx_backend_alloc(r->be, r->ctx, sizeof(float) * nx, "rollout state");
    r->dy = r->dx ? wx_backend_alloc(r->be, r->ctx, sizeof(float) * ny, "rollout prediction") : NULL;
    if (!r->dy) return WX_ERR_RUN;
    if (r->builder) {
        r->dxm = wx_backend_alloc(r->be, r->ctx, sizeof(float) * nm, "rollout model input");
        r->dxm2 = r->dxm ? wx_backend_alloc(r->be, r->ctx, sizeof(float) * nm, "rollout model input")
                         : NULL;
        if (!r->dxm2) return WX_ERR_RUN;
    }
    return WX_OK;
}

wx_status wx_rollout_open(const char *ckpt_path, int threads, int64_t max_batch, wx_rollout **out) {
    wx_rollout_opts o = {.threads = threads, .max_batch = max_batch};
    return wx_rollout_open_opts(ckpt_path, &o, out);
}

wx_status wx_rollout_open_opts(const char *ckpt_path, const wx_rollout_opts *o, wx_rollout **out) {
    *out = NULL;
    if (o->max_batch < 1) return wx_error_set(WX_ERR_USAGE, "rollout: batch %lld, expected >= 1",
                                              (long long)o->max_batch);
    const wx_backend *be = NULL;
    WX_TRY(pick_backend(o, &be));
    wx_checkpoint ck;
    WX_TRY(wx_checkpoint_read(ckpt_path, &ck));
    wx_rollout *r = wx_calloc(1, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", ckpt_path);
    r->max_batch = o->max_batch;
    r->be = be;
    wx_status st = WX_OK;
    if (!ck.model_text || !ck.data_text)
        st = wx_error_set(WX_ERR_RUN, "%s: the checkpoint has no %s section (not written by wxcast "
                          "train?)", ckpt_path, !ck.model_text ? "MODL" : "DATA");
    if (st == WX_OK) st = parse_data(r, ck.data_text);
    wx_checkpoint_free(&ck); /* the model reads it again: one copy of the weights at a time */
    if (st == WX_OK) {
        r->ctx = wx_ctx_create(o->threads);
        wx_blas_one_thread(0); /* ops/wx_gemm.h: a stopped pool stays stopped */
        st = setup_backend(r, o);
    }
    if (st == WX_OK) st = build_model(r);
    if (st == WX_OK && r->dev && r->model->params->be != r->be)
        st = wx_error_set(WX_ERR_USAGE, "%s: device '%s': the %s model keeps its parameters in host "
                          "memory; it runs on the CPU backend only", ckpt_path, r->be->name,
                          r->family);
    if (st == WX_OK) st = alloc_buffers(r);
    if (st != WX_OK) {
        wx_rollout_close(r);
        return st;
    }
    *out = r;
    return WX_OK;
}

void wx_rollout_close(wx_rollout *r) {
    if (!r) return;
    wx_train_model_destroy(r->model);
    if (r->dev) { /* backend memory goes before the context it was made on */
        r->be->mem_free(r->ctx, r->dx);
        r->be->mem_free(r->ctx, r->dy);
        r->be->mem_free(r->ctx, r->dxm);
        r->be->mem_free(r->ctx, r->dxm2);
    }
    if (r->ctx) wx_ctx_destroy(r->ctx);
    free(r->in);
    free(r->out);
    free(r->next_in);
    free(r->t0);
    free(r->x);
    free(r->y);
    free(r->prev);
    free(r->xm);
    free(r->xm2);
    free(r);
}

static int find_channel(const wx_archive_meta *m, const char *name) {
    for (int c = 0; c < m->nchan; c++)
        if (!strcmp(m->chan[c].name, name)) return c;
    return -1;
}

wx_status wx_rollout_match_archive(const wx_rollout *r, const wx_archive_meta *m, int *map_in,
                                   int *map_out) {
    for (int k = 0; k < 2; k++) {
        int n = k ? r->nout : r->nin;
        const wx_rollout_channel *ch = k ? r->out : r->in;
        int *map = k ? map_out : map_in;
        for (int i = 0; map && i < n; i++) {
            map[i] = find_channel(m, ch[i].name);
            if (map[i] < 0) {
                char have[1024] = "";
                for (int c = 0; c < m->nchan; c++) {
                    size_t l = strlen(have);
                    snprintf(have + l, sizeof have - l, "%s%s", c ? ", " : "", m->chan[c].name);
                }
                return wx_error_set(WX_ERR_USAGE, "no channel '%s' (model %s channel %d); the "
                                    "data hold: %s", ch[i].name, k ? "output" : "input", i, have);
            }
        }
    }
    /* The model grid is the archive grid or, as FourCastNet's 720 of ERA5's 721 rows, the archive
     * grid without its last row. */
    wx_grid top = m->grid;
    top.nlat = r->grid.nlat;
    int rows_ok = m->grid.nlat == r->grid.nlat || m->grid.nlat == r->grid.nlat + 1;
    if (!rows_ok || !wx_grid_same(&top, &r->grid, 1e-6)) {
        char a[160], b[160];
        wx_grid_describe(&m->grid, a, sizeof a);
        wx_grid_describe(&r->grid, b, sizeof b);
        return wx_error_set(WX_ERR_USAGE, "the data's grid (%s) is not the model grid (%s)", a, b);
    }
    return WX_OK;
}

/* Record (b, nchan, P) of initial time s, input channel i → dst (hw), normalised. */
static void normalise(const wx_rollout *r, float *dst, const float *rec, const wx_archive_meta *m,
                      int map, int i, int64_t s) {
    size_t hw = (size_t)(r->h * r->w), P = (size_t)wx_archive_points(m);
    /* The model rows are a prefix of the archive rows (checked by match_archive). */
    const float *src = rec + ((size_t)s * (size_t)m->nchan + (size_t)map) * P;
    double mu = r->in[i].mean, inv = 1.0 / r->in[i].std;
    for (size_t p = 0; p < hw; p++) dst[p] = (float)((src[p] - mu) * inv);
}

wx_status wx_rollout_set_state(wx_rollout *r, const float *rec, const wx_archive_meta *m,
                               const int *map_in, const wx_time *t0, int64_t b) {
    if (b < 1 || b > r->max_batch)
        return wx_error_set(WX_ERR_USAGE, "rollout: %lld initial times, expected 1..%lld",
                            (long long)b, (long long)r->max_batch);
    if (!t0 && r->builder)
        return wx_error_set(WX_ERR_USAGE, "rollout: the %s model needs the initial times", r->family);
    size_t hw = (size_t)(r->h * r->w), R = (size_t)b * (size_t)m->nchan * (size_t)wx_archive_points(m);
    const float *newest = rec + (size_t)(r->window - 1) * R;
    for (int64_t s = 0; s < b; s++) {
        r->t0[s] = t0 ? t0[s] : 0;
        for (int i = 0; i < r->nin; i++)
            normalise(r, r->x + ((size_t)s * (size_t)r->nin + (size_t)i) * hw, newest, m, map_in[i], i, s);
        /* earlier states (builder models: in = out channels, so map_in serves them too) */
        for (int64_t w = 0; w + 1 < r->window; w++)
            for (int i = 0; i < r->nin; i++)
                normalise(r, r->prev + (((size_t)w * (size_t)b + (size_t)s) * (size_t)r->nin + (size_t)i) * hw,
                          rec + (size_t)w * R, m, map_in[i], i, s);
    }
    r->b = b;
    r->steps = 0;
    r->x_dirty = 1;
    return WX_OK;
}

void wx_rollout_state_edited(wx_rollout *r) { r->x_dirty = 1; }

/* The model input of the next step into r->dxm (builder models; FourCastNet reads dx itself). */
static wx_status next_model_input(wx_rollout *r, const wx_time *t) {
    if (r->steps > 0) { /* from the last input and prediction: the model shifts its window */
        WX_TRY(wx_train_model_next_input(r->model, r->dxm2, r->dxm, r->dy, t, r->b));
        float *swap = r->dxm;
        r->dxm = r->dxm2, r->dxm2 = swap;
        if (!r->dev) r->xm = r->dxm, r->xm2 = r->dxm2;
        return WX_OK;
    }
    /* First step (or after an ensemble edit of x): states (window, b, Cout, H, W), oldest first:
     * the earlier analyses, then the current state x (which is the whole window when it is 1).
     * make_input works in host memory on every backend; a device gets its result uploaded. */
    size_t n = (size_t)r->b * (size_t)r->nout * (size_t)(r->h * r->w);
    float *states = r->window == 1 ? r->x : wx_malloc(sizeof(float) * n * (size_t)r->window);
    if (r->window > 1) {
        memcpy(states, r->prev, sizeof(float) * n * (size_t)(r->window - 1));
        memcpy(states + n * (size_t)(r->window - 1), r->x, sizeof(float) * n);
    }
    wx_status st = wx_train_model_make_input(r->model, r->xm, states, t, r->b);
    if (states != r->x) free(states);
    if (st == WX_OK && r->dev)
        st = r->be->copy_h2d(r->ctx, r->dxm, r->xm,
                             sizeof(float) * (size_t)(r->b * r->model->in_channels * r->h * r->w));
    return st;
}

/* ŷ becomes the state: x[i] = ŷ[next_in[i]], on the host (x) and in backend memory (dx). */
static wx_status feed_back(wx_rollout *r) {
    size_t hw = (size_t)(r->h * r->w);
    int same = r->nin == r->nout;
    for (int i = 0; same && i < r->nin; i++) same = r->next_in[i] == i;
    if (same) { /* the usual case: one block */
        size_t bytes = sizeof(float) * (size_t)r->b * (size_t)r->nin * hw;
        memcpy(r->x, r->y, bytes);
        return r->dev ? r->be->copy_d2d(r->ctx, r->dx, r->dy, bytes) : WX_OK;
    }
    for (int64_t s = 0; s < r->b; s++)
        for (int i = 0; i < r->nin; i++) {
            size_t to = ((size_t)s * (size_t)r->nin + (size_t)i) * hw;
            size_t from = ((size_t)s * (size_t)r->nout + (size_t)r->next_in[i]) * hw;
            memcpy(r->x + to, r->y + from, sizeof(float) * hw);
            if (r->dev) WX_TRY(r->be->copy_d2d(r->ctx, r->dx + to, r->dy + from, sizeof(float) * hw));
        }
    return WX_OK;
}

wx_status wx_rollout_step(wx_rollout *r) {
    wx_time *t = r->t0 + r->max_batch; /* target times: valid times of this step's prediction */
    for (int64_t s = 0; s < r->b; s++) t[s] = r->t0[s] + (r->steps + 1) * r->step_s;
    if (r->dev && r->x_dirty) /* the initial (or edited) state goes up once */
        WX_TRY(r->be->copy_h2d(r->ctx, r->dx, r->x,
                               sizeof(float) * (size_t)(r->b * r->nin * r->h * r->w)));
    r->x_dirty = 0;
    if (r->builder) WX_TRY(next_model_input(r, t));
    WX_TRY(r->model->ops->predict(r->model, r->dy, r->builder ? r->dxm : r->dx, r->b));
    if (r->dev) /* the lead's output: the one copy back per step */
        WX_TRY(r->be->copy_d2h(r->ctx, r->y, r->dy,
                               sizeof(float) * (size_t)(r->b * r->nout * r->h * r->w)));
    r->steps++;
    /* Diagnostic models hook in here: r->y is the predicted state, not yet fed back. */
    if (r->hook) WX_TRY(r->hook(r, r->hook_user));
    return feed_back(r);
}

void wx_rollout_output(const wx_rollout *r, float *out) {
    size_t hw = (size_t)(r->h * r->w);
    for (int64_t s = 0; s < r->b; s++)
        for (int o = 0; o < r->nout; o++) {
            size_t off = ((size_t)s * (size_t)r->nout + (size_t)o) * hw;
            double mu = r->out[o].mean, sd = r->out[o].std;
            for (size_t p = 0; p < hw; p++) out[off + p] = (float)(r->y[off + p] * sd + mu);
            if (r->out[o].nonnegative) /* NaN (a diverged model) stays NaN, not a plausible 0 */
                for (size_t p = 0; p < hw; p++)
                    if (out[off + p] < 0) out[off + p] = 0;
        }
}

int wx_rollout_input_unread(const wx_rollout *r, int i) {
    const wx_train_model *m = r->model;
    int o = 0;
    while (o < r->nout && strcmp(r->out[o].name, r->in[i].name)) o++;
    return o < r->nout && m && m->state && o < m->nstate && m->state[o].output_only;
}
