/* The family-independent parts of wx_train_model (train_model.h): creation by model.type, data
 * attachment, input construction, loading from a checkpoint. The families' adapters are
 * train_model_fcn.c, train_model_gc.c (+ train_model_gc_rollout.c) and train_model_precip.c; the
 * loss is train_loss.c. */
#include "train/train_model.h"

#include <stdlib.h>
#include <string.h>

#include "train/checkpoint.h"
#include "train/train_model_priv.h"

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
        return wx_train_model_fcn_create(model, path, ctx, be, seed, max_batch, max_rollout,
                                         act_checkpoint, out);
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
