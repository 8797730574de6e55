#include "train/dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/wx_log.h"
#include "meteo/wx_catalogue.h"
#include "meteo/wx_time.h"

static int year_of(const wx_archive_meta *m, int64_t t) {
    int64_t y;
    int mo, d, h, mi, s;
    wx_time_split(m->start + t * m->step, &y, &mo, &d, &h, &mi, &s);
    return (int)y;
}

/* Initial times t with t − (window−1)·dt and t + reach·dt inside [years[0], years[1]]. */
static int64_t *split_samples(const wx_dataset *ds, const int64_t years[2], int64_t reach,
                              int64_t *n) {
    const wx_archive_meta *m = ds->meta;
    int64_t *s = wx_malloc(sizeof(int64_t) * (size_t)(m->count + 1));
    const int64_t back = (ds->window - 1) * ds->dt;
    *n = 0;
    for (int64_t t = back; t + reach * ds->dt < m->count; t++) {
        int y0 = year_of(m, t - back), y1 = year_of(m, t + reach * ds->dt);
        if (y0 >= years[0] && y1 <= years[1]) s[(*n)++] = t;
    }
    return s;
}

static wx_status map_channels(const wx_archive_meta *m, const wx_train_config *c, char **names,
                              int n, const char *key, int *idx) {
    for (int i = 0; i < n; i++) {
        int found = -1;
        for (int k = 0; k < m->nchan; k++)
            if (!strcmp(m->chan[k].name, names[i])) found = k;
        if (found < 0) {
            char have[1024] = "";
            size_t used = 0;
            for (int k = 0; k < m->nchan && used + 70 < sizeof have; k++)
                used += (size_t)snprintf(have + used, sizeof have - used, "%s%s", k ? ", " : "",
                                         m->chan[k].name);
            return wx_error_set(WX_ERR_USAGE, "%s: key '%s': channel '%s' is not in the archive %s "
                                "(it has %s)", c->path, key, names[i], c->archive, have);
        }
        idx[i] = found;
    }
    return WX_OK;
}

/* Time step, statistics, splits and buffers (channels and grid are set). */
static wx_status open_common(wx_dataset *ds, const wx_train_config *c, int64_t batch,
                             int64_t rollout) {
    const wx_archive_meta *m = ds->meta;
    int64_t max_lead = c->leads[c->nleads - 1];
    /* time step */
    if (c->time_step_s % m->step)
        return wx_error_set(WX_ERR_USAGE, "%s: key 'data.time_step': %lld s is not a multiple of the "
                            "archive step %lld s", c->path, (long long)c->time_step_s,
                            (long long)m->step);
    ds->dt = c->time_step_s / m->step;
    /* statistics */
    if (!m->has_stats)
        return wx_error_set(WX_ERR_RUN, "%s: the archive has no statistics; training normalises with "
                            "them (re-ingest with a `statistics:` window in the recipe)", c->archive);
    ds->mean = wx_malloc(sizeof(double) * (size_t)m->nchan);
    ds->std = wx_malloc(sizeof(double) * (size_t)m->nchan);
    for (int k = 0; k < m->nchan; k++) {
        ds->mean[k] = m->mean[k];
        ds->std[k] = m->std[k];
        if (!(m->std[k] > 0)) {
            wx_log_warn("%s: channel %s has std %g; normalising it by 1", c->archive, m->chan[k].name,
                        m->std[k]);
            ds->std[k] = 1;
        }
    }
    /* splits */
    ds->rollout = rollout, ds->max_lead = max_lead;
    /* a year range outside the archive is the likelier mistake than a lead too long for it */
    int64_t y0, y1;
    int mo, dd, hh, mi, ss;
    wx_time_split(m->start, &y0, &mo, &dd, &hh, &mi, &ss);
    wx_time_split(m->start + (m->count - 1) * m->step, &y1, &mo, &dd, &hh, &mi, &ss);
    const int64_t *yr[2] = {c->train_years, c->valid_years};
    for (int k = 0; k < 2; k++)
        if (yr[k][1] < y0 || yr[k][0] > y1)
            return wx_error_set(WX_ERR_USAGE, "%s: %s [%lld, %lld]: the archive %s holds no record "
                                "in those years (it covers %lld..%lld)", c->path,
                                k ? "valid_years" : "train_years", (long long)yr[k][0],
                                (long long)yr[k][1], c->archive, (long long)y0, (long long)y1);
    ds->train = split_samples(ds, c->train_years, rollout, &ds->ntrain);
    ds->valid = split_samples(ds, c->valid_years, max_lead, &ds->nvalid);
    if (ds->ntrain < batch)
        return wx_error_set(WX_ERR_USAGE, "%s: train_years [%lld, %lld] give %lld samples of %lld "
                            "steps in %s, fewer than one batch of %lld", c->path,
                            (long long)c->train_years[0], (long long)c->train_years[1],
                            (long long)ds->ntrain, (long long)rollout, c->archive, (long long)batch);
    if (ds->nvalid < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: valid_years [%lld, %lld] give no sample reaching lead "
                            "%lld in %s", c->path, (long long)c->valid_years[0],
                            (long long)c->valid_years[1], (long long)max_lead, c->archive);
    ds->batch = ds->global_batch = batch;
    int64_t rec = wx_archive_points(m) * m->nchan, r = ds->window + rollout;
    for (int i = 0; i < 2; i++)
        ds->raw[i] = wx_malloc(sizeof(float) * (size_t)(batch * r * rec));
    ds->times = wx_malloc(sizeof(int64_t) * (size_t)(batch * r));
    ds->t1 = wx_malloc(sizeof(wx_time) * (size_t)batch);
    ds->perm = wx_malloc(sizeof(int64_t) * (size_t)ds->ntrain);
    for (int64_t i = 0; i < ds->ntrain; i++) ds->perm[i] = i;
    return WX_OK;
}


/* Channels by name (NULL lists: all archive channels, without static ones when skip_static), the
 * grid, then open_common. can_roll: the model builds its next input itself (precip), so inputs
 * and outputs may differ at any lead. */
static wx_status open_named(wx_dataset *ds, const wx_train_config *c, char **in, int nin,
                            const char *in_key, char **out, int nout, const char *out_key,
                            int skip_static, int can_roll, int64_t model_in, int64_t model_out,
                            int64_t model_h, int64_t model_w, int64_t batch, int64_t rollout) {
    memset(ds, 0, sizeof *ds);
    ds->pending = -1;
    ds->window = 1;
    wx_archive_opts o = {c->read_threads, 1, 0};
    WX_TRY(wx_archive_open(c->archive, &o, &ds->ar));
    const wx_archive_meta *m = ds->meta = wx_archive_meta_of(ds->ar);
    /* channels */
    int nall = 0;
    for (int k = 0; k < m->nchan; k++) nall += !(skip_static && m->chan[k].kind == WX_LEVEL_STATIC);
    ds->nin = nin ? nin : nall;
    ds->nout = nout ? nout : ds->nin;
    ds->cin = wx_malloc(sizeof(int) * (size_t)ds->nin + 1);
    ds->cout = wx_malloc(sizeof(int) * (size_t)ds->nout + 1);
    if (nin) WX_TRY(map_channels(m, c, in, nin, in_key, ds->cin));
    else
        for (int k = 0, i = 0; k < m->nchan; k++)
            if (!(skip_static && m->chan[k].kind == WX_LEVEL_STATIC)) ds->cin[i++] = k;
    if (nout) WX_TRY(map_channels(m, c, out, nout, out_key, ds->cout));
    else memcpy(ds->cout, ds->cin, sizeof(int) * (size_t)ds->nout);
    if (ds->nin != model_in || ds->nout != model_out)
        return wx_error_set(WX_ERR_USAGE, "%s: the model has %lld input and %lld output channels but "
                            "data gives %d and %d (data.channels_in/channels_out, default: all %d "
                            "%sarchive channels)", c->path, (long long)model_in, (long long)model_out,
                            ds->nin, ds->nout, nall, skip_static ? "non-static " : "");
    int same = ds->nin == ds->nout;
    for (int i = 0; same && i < ds->nin; i++) same = ds->cin[i] == ds->cout[i];
    int64_t max_lead = c->leads[c->nleads - 1];
    if (!same && !can_roll && (rollout > 1 || max_lead > 1))
        return wx_error_set(WX_ERR_USAGE, "%s: channels_out differ from channels_in, so the model "
                            "cannot be rolled out: rollout_steps and validation.leads must be 1",
                            c->path);
    /* grid */
    if (m->grid.nlon != model_w || (m->grid.nlat != model_h && m->grid.nlat != model_h + 1))
        return wx_error_set(WX_ERR_USAGE, "%s: the model grid is %lldx%lld (img_size) but the archive "
                            "%s is %dx%d (expected the same, or one more row to drop)", c->path,
                            (long long)model_h, (long long)model_w, c->archive, m->grid.nlat,
                            m->grid.nlon);
    ds->h = model_h, ds->w = model_w;
    WX_TRY(wx_grid_make((int)model_h, (int)model_w, m->grid.lat0, m->grid.dlat, m->grid.lon0,
                        m->grid.dlon, &ds->grid));
    ds->wlat = wx_malloc(sizeof(double) * (size_t)model_h);
    wx_grid_area_weights(&ds->grid, ds->wlat);
    return open_common(ds, c, batch, rollout);
}

wx_status wx_dataset_open(wx_dataset *ds, const wx_train_config *c, int64_t model_in,
                          int64_t model_out, int64_t model_h, int64_t model_w, int64_t batch,
                          int64_t rollout) {
    return open_named(ds, c, c->chan_in, c->nin, "data.channels_in", c->chan_out, c->nout,
                      "data.channels_out", 0, 0, model_in, model_out, model_h, model_w, batch,
                      rollout);
}
/* Archive channel of a model channel: the same channel name (case-insensitive), or the same
 * catalogue variable ("2m_temperature" = 2t) and level; GraphCast's "total_precipitation_6hr" is
 * the archive's tp accumulated over 6 h. −1 when absent. */
static int find_channel(const wx_archive_meta *m, const wx_train_channel *want) {
    char name[WX_TRAIN_NAME_MAX];
    int64_t accum = wx_catalogue_strip_period(want->name, name, sizeof name);
    if (!accum) accum = -1;
    const wx_catalogue_entry *e = wx_catalogue_find_kind(name, (wx_level_kind)want->kind);
    if (!e && want->kind == WX_LEVEL_STATIC) e = wx_catalogue_find_kind(name, WX_LEVEL_SINGLE);
    for (int k = 0; k < m->nchan; k++) {
        const wx_archive_channel *a = &m->chan[k];
        int pressure = a->kind == WX_LEVEL_PRESSURE;
        if (pressure != (want->kind == WX_LEVEL_PRESSURE)) continue;
        if (pressure && fabs(a->level - want->level) > 1e-6) continue;
        if (want->kind == WX_LEVEL_STATIC && a->kind != WX_LEVEL_STATIC &&
            !(e && e->level_kind == WX_LEVEL_SINGLE))
            continue;
        if (want->kind != WX_LEVEL_STATIC && a->kind == WX_LEVEL_STATIC) continue;
        if (!pressure && !strcasecmp(a->name, want->name)) return k;
        if (e && wx_catalogue_matches(e, a->param) && (accum < 0 || a->accum_s == accum)) return k;
    }
    return -1;
}

static wx_status read_statics(wx_dataset *ds, const wx_train_config *c, wx_train_model *mdl);

/* The precip model: its state channels (the wind model's) in, its target channel out. */
static wx_status open_precip(wx_dataset *ds, const wx_train_config *c, wx_train_model *mdl,
                             int64_t batch, int64_t rollout) {
    char **in = wx_calloc((size_t)mdl->nin_names + 1, sizeof(char *));
    for (int i = 0; i < mdl->nin_names; i++) in[i] = (char *)mdl->in_names[i];
    char *out[1] = {(char *)mdl->target_name};
    int build = mdl->ops->make_input != NULL;
    wx_status st = open_named(ds, c, in, mdl->nin_names, "precip.wind_checkpoint (its state "
                              "channels)", out, 1, "precip.channel", 0, 1,
                              build ? mdl->nin_names : mdl->in_channels, 1, mdl->h, mdl->w, batch,
                              rollout);
    free(in);
    WX_TRY(st);
    /* log1p(x / eps) of a field that goes negative (t2m in degC, a wind) is NaN: the target must
     * be an accumulation (its values >= 0), as tp is */
    const wx_archive_channel *tc = &ds->meta->chan[ds->cout[0]];
    const wx_catalogue_entry *te = wx_catalogue_find_kind(tc->param, tc->kind);
    if (te && !te->accumulated)
        return wx_error_set(WX_ERR_USAGE, "%s: precip.channel '%s' is %s (%s), not an accumulation: "
                            "the precip stage predicts log1p(x / eps) of a non-negative sum such as "
                            "tp", c->path, mdl->target_name, te->short_name, te->long_name);
    ds->target_log_eps = mdl->target_log_eps;
    for (int i = 0; i < mdl->nin_names; i++) {
        int k = ds->cin[i];
        double dm = fabs(ds->mean[k] - mdl->in_mean[i]), ds_ = fabs(ds->std[k] - mdl->in_std[i]);
        if (dm > 1e-9 * (fabs(mdl->in_mean[i]) + mdl->in_std[i]) || ds_ > 1e-9 * mdl->in_std[i])
            return wx_error_set(WX_ERR_USAGE, "%s: channel %s: the archive %s normalises it with mean "
                                "%.9g, std %.9g but the wind model was trained with %.9g, %.9g: "
                                "train the precip stage on the wind model's archive", c->path,
                                mdl->in_names[i], c->archive, ds->mean[k], ds->std[k],
                                mdl->in_mean[i], mdl->in_std[i]);
    }
    return WX_OK;
}

wx_status wx_dataset_open_model(wx_dataset *ds, const wx_train_config *c, wx_train_model *mdl,
                                int64_t batch, int64_t rollout) {
    if (mdl->nstate == 0) {
        int build = mdl->ops->make_input != NULL;
        if (mdl->nin_names)
            WX_TRY(open_precip(ds, c, mdl, batch, rollout));
        else if (build) /* FourCastNet with extra inputs: the data layer reads the state only */
            WX_TRY(open_named(ds, c, c->chan_in, c->nin, "data.channels_in", c->chan_out, c->nout,
                              "data.channels_out", mdl->nstatic > 0, 0, mdl->out_channels,
                              mdl->out_channels, mdl->h, mdl->w, batch, rollout));
        else
            WX_TRY(wx_dataset_open(ds, c, mdl->in_channels, mdl->out_channels, mdl->h, mdl->w,
                                   batch, rollout));
        ds->model = mdl;
        if (build)
            ds->states = wx_malloc(sizeof(float) * (size_t)(batch * ds->nin * ds->h * ds->w));
        return read_statics(ds, c, mdl);
    }
    memset(ds, 0, sizeof *ds);
    ds->pending = -1;
    ds->window = mdl->window > 0 ? mdl->window : 1;
    ds->model = mdl;
    wx_archive_opts o = {c->read_threads, 1, 0};
    WX_TRY(wx_archive_open(c->archive, &o, &ds->ar));
    const wx_archive_meta *m = ds->meta = wx_archive_meta_of(ds->ar);
    if (c->nin || c->nout)
        return wx_error_set(WX_ERR_USAGE, "%s: key 'data.channels_in': a %s model names its own "
                            "channels (its config's variables); leave channels_in/channels_out "
                            "empty", c->path, mdl->family);
    /* state channels: inputs and targets alike */
    ds->nin = ds->nout = mdl->nstate;
    ds->cin = wx_malloc(sizeof(int) * (size_t)ds->nin);
    ds->cout = wx_malloc(sizeof(int) * (size_t)ds->nout);
    for (int i = 0; i < mdl->nstate; i++) {
        const wx_train_channel *w = &mdl->state[i];
        ds->cin[i] = ds->cout[i] = find_channel(m, w);
        if (ds->cin[i] < 0) {
            char lev[32] = "";
            if (w->kind == WX_LEVEL_PRESSURE) snprintf(lev, sizeof lev, " at %g hPa", w->level);
            return wx_error_set(WX_ERR_USAGE, "%s: model variable '%s'%s is not in the archive %s "
                                "(no channel of that name or catalogue variable and level)",
                                c->path, w->name, lev, c->archive);
        }
    }
    /* grid: the model's exactly */
    double res = 180.0 / (double)(mdl->h - 1);
    if (m->grid.nlat != mdl->h || m->grid.nlon != mdl->w || fabs(m->grid.lat0 - 90.0) > 1e-6 ||
        fabs(m->grid.dlat - res) > 1e-6 || fabs(m->grid.lon0) > 1e-6)
        return wx_error_set(WX_ERR_USAGE, "%s: the %s model grid is %lldx%lld (%g degrees from "
                            "90N, 0E, poles included) but the archive %s is %dx%d from %gN %gE "
                            "every %g degrees (regrid at ingest: grid: {resolution: %g})", c->path,
                            mdl->family, (long long)mdl->h, (long long)mdl->w, res, c->archive,
                            m->grid.nlat, m->grid.nlon, m->grid.lat0, m->grid.lon0, m->grid.dlat, res);
    ds->h = mdl->h, ds->w = mdl->w;
    WX_TRY(wx_grid_make((int)ds->h, (int)ds->w, m->grid.lat0, m->grid.dlat, m->grid.lon0,
                        m->grid.dlon, &ds->grid));
    ds->wlat = wx_malloc(sizeof(double) * (size_t)ds->h);
    wx_grid_area_weights(&ds->grid, ds->wlat);
    WX_TRY(open_common(ds, c, batch, rollout));
    /* residual scales need the dt-difference statistics of the model step */
    if (!m->diff_std || m->diff_step != c->time_step_s)
        return wx_error_set(WX_ERR_RUN, "%s: the archive's difference statistics are over %lld s, "
                            "the model step (data.time_step) is %lld s: GraphCast's residual "
                            "normalisation needs the std of differences over the model step",
                            c->archive, (long long)m->diff_step, (long long)c->time_step_s);
    int64_t hw = ds->h * ds->w;
    ds->states = wx_malloc(sizeof(float) * (size_t)(ds->window * batch * ds->nin * hw));
    return read_statics(ds, c, mdl);
}

/* Static fields: from the first record (ingest repeats them in every record), else zeros. */
static wx_status read_statics(wx_dataset *ds, const wx_train_config *c, wx_train_model *mdl) {
    const wx_archive_meta *m = ds->meta;
    int64_t hw = ds->h * ds->w;
    ds->cstatic = wx_calloc((size_t)mdl->nstatic + 1, sizeof(int));
    ds->statics = wx_calloc((size_t)(mdl->nstatic * hw) + 1, sizeof(float));
    if (mdl->nstatic) {
        float *rec = wx_malloc(sizeof(float) * (size_t)(wx_archive_points(m) * m->nchan));
        int64_t t0 = 0;
        wx_status st = wx_archive_read(ds->ar, &t0, 1, rec);
        for (int i = 0; st == WX_OK && i < mdl->nstatic; i++) {
            int k = ds->cstatic[i] = find_channel(m, &mdl->statics[i]);
            if (k < 0) {
                wx_log_warn("%s: static field '%s' is not in the archive; the model gets zeros "
                            "(ingest it as a static variable, e.g. param lsm / z)", c->archive,
                            mdl->statics[i].name);
                continue;
            }
            for (int64_t p = 0; p < hw; p++)
                ds->statics[i * hw + p] = (float)(((double)rec[k * wx_archive_points(m) + p] -
                                                   ds->mean[k]) / ds->std[k]);
        }
        free(rec);
        WX_TRY(st);
    }
    return WX_OK;
}

void wx_dataset_model_data(const wx_dataset *ds, wx_train_data *d, double *mean, double *std,
                           double *diff_std, char (*names)[WX_TRAIN_NAME_MAX]) {
    const wx_archive_meta *m = ds->meta;
    memset(d, 0, sizeof *d);
    d->nstate = ds->nout;
    for (int c = 0; c < ds->nout; c++) {
        int k = ds->cout[c];
        mean[c] = ds->mean[k], std[c] = ds->std[k];
        diff_std[c] = m->diff_std ? m->diff_std[k] : 0.0;
        snprintf(names[c], WX_TRAIN_NAME_MAX, "%s", m->chan[k].name);
    }
    d->names = names, d->mean = mean, d->std = std, d->diff_std = diff_std;
    d->nstatic = ds->model ? ds->model->nstatic : 0;
    d->statics = d->nstatic ? ds->statics : NULL;
    d->dt_s = ds->dt * m->step;
    d->has_grid = 1, d->grid = ds->grid;
}

void wx_dataset_close(wx_dataset *ds) {
    wx_dataset_drain(ds);
    if (ds->ar) wx_archive_close(ds->ar);
    free(ds->cin);
    free(ds->cout);
    free(ds->wlat);
    free(ds->mean);
    free(ds->std);
    free(ds->train);
    free(ds->valid);
    free(ds->raw[0]);
    free(ds->raw[1]);
    free(ds->times);
    free(ds->perm);
    free(ds->states);
    free(ds->t1);
    free(ds->statics);
    free(ds->cstatic);
    memset(ds, 0, sizeof *ds);
    ds->pending = -1;
}

void wx_dataset_epoch_begin(wx_dataset *ds, const wx_rng *order) {
    ds->next_order = *order;
    wx_rng_permutation(&ds->next_order, ds->perm, ds->ntrain);
}

int64_t wx_dataset_batches_per_epoch(const wx_dataset *ds) { return ds->ntrain / ds->global_batch; }

wx_status wx_dataset_set_ranks(wx_dataset *ds, const wx_train_config *c, int rank, int size) {
    ds->global_batch = ds->batch * size;
    ds->part = ds->batch * rank;
    if (ds->ntrain < ds->global_batch)
        return wx_error_set(WX_ERR_USAGE, "%s: train_years [%lld, %lld] give %lld samples in %s, "
                            "fewer than one global batch of %lld", c->path,
                            (long long)c->train_years[0], (long long)c->train_years[1],
                            (long long)ds->ntrain, c->archive, (long long)ds->global_batch);
    return WX_OK;
}

wx_status wx_dataset_prefetch(wx_dataset *ds, int64_t i) {
    WX_ASSERT(ds->pending < 0 && i >= 0 && i < wx_dataset_batches_per_epoch(ds));
    int64_t r = ds->window + ds->rollout, back = (ds->window - 1) * ds->dt;
    for (int64_t b = 0; b < ds->batch; b++) {
        int64_t t = ds->train[ds->perm[i * ds->global_batch + ds->part + b]];
        for (int64_t k = 0; k < r; k++) ds->times[b * r + k] = t - back + k * ds->dt;
    }
    WX_TRY(wx_archive_prefetch(ds->ar, ds->times, (int)(ds->batch * r), ds->raw[i % 2]));
    ds->pending = i;
    return WX_OK;
}

void wx_dataset_drain(wx_dataset *ds) {
    if (ds->ar && ds->pending >= 0) (void)wx_archive_wait(ds->ar);
    ds->pending = -1;
}

/* raw (n·r records of (nchan, nlat, nlon)), r = window + K, → targets (K, n, Cout, H, W) from the
 * last K records of each sample and x (n, Cin, H, W): channels_in of record 0 (window 1, no model
 * input builder), or the model's make_input of the window's states at t1 (n). */
static wx_status assemble(wx_dataset *ds, const float *raw, int64_t n, int64_t r, float *x,
                          float *targets, const wx_time *t1) {
    const wx_archive_meta *m = ds->meta;
    int64_t pts = wx_archive_points(m), hw = ds->h * ds->w, recn = pts * m->nchan;
    const int64_t W = ds->window;
    const int build = ds->model && ds->model->ops->make_input;
    for (int64_t s = 0; s < n; s++)
        for (int64_t k = 0; k < r; k++) {
            const float *rec = raw + (s * r + k) * recn;
            int in = k < W;
            int nc = in ? ds->nin : ds->nout;
            const int *ch = in ? ds->cin : ds->cout;
            float *dst = !in ? targets + ((k - W) * n + s) * nc * hw
                             : build ? ds->states + (k * n + s) * nc * hw : x + s * nc * hw;
            for (int c = 0; c < nc; c++) {
                const float *src = rec + ch[c] * pts; /* rows beyond h (the pole row) are skipped */
                double mu = ds->mean[ch[c]], sd = ds->std[ch[c]];
                if (!in && ds->target_log_eps > 0) /* NVlabs reshape_precip: log1p(tp / eps) */
                    for (int64_t p = 0; p < hw; p++)
                        dst[c * hw + p] = (float)log1p(fmax((double)src[p], 0.0) / ds->target_log_eps);
                else
                    for (int64_t p = 0; p < hw; p++) dst[c * hw + p] = (float)(((double)src[p] - mu) / sd);
            }
        }
    return build ? ds->model->ops->make_input(ds->model, x, ds->states, t1, n) : WX_OK;
}

static wx_time valid_time(const wx_dataset *ds, int64_t record) {
    return ds->meta->start + record * ds->meta->step;
}

wx_status wx_dataset_batch(wx_dataset *ds, int64_t i, float *x, float *targets) {
    if (ds->pending != i) {
        wx_dataset_drain(ds);
        WX_TRY(wx_dataset_prefetch(ds, i));
    }
    ds->pending = -1;
    WX_TRY(wx_archive_wait(ds->ar));
    const int64_t r = ds->window + ds->rollout;
    for (int64_t b = 0; b < ds->batch; b++) ds->t1[b] = valid_time(ds, ds->times[b * r + ds->window]);
    return assemble(ds, ds->raw[i % 2], ds->batch, r, x, targets, ds->t1);
}

wx_status wx_dataset_read_valid(wx_dataset *ds, const int64_t *samples, int64_t n,
                                const int64_t *leads, int nl, float *x, float *targets,
                                wx_time *t1) {
    const int64_t W = ds->window, r = nl + W;
    const wx_archive_meta *m = ds->meta;
    int64_t recn = wx_archive_points(m) * m->nchan;
    int64_t *times = wx_malloc(sizeof(int64_t) * (size_t)(n * r));
    wx_time *tt = wx_malloc(sizeof(wx_time) * (size_t)n);
    float *raw = malloc(sizeof(float) * (size_t)(n * r * recn));
    float *states = NULL;
    if (ds->model && ds->model->ops->make_input)
        states = malloc(sizeof(float) * (size_t)(W * n * ds->nin * ds->h * ds->w));
    if (!raw || (ds->model && ds->model->ops->make_input && !states)) {
        free(times), free(tt), free(raw), free(states);
        return wx_error_set(WX_ERR_RUN, "validation: cannot allocate %lld records",
                            (long long)(n * r));
    }
    for (int64_t s = 0; s < n; s++) {
        for (int64_t k = 0; k < W; k++) times[s * r + k] = samples[s] - (W - 1 - k) * ds->dt;
        for (int k = 0; k < nl; k++) times[s * r + W + k] = samples[s] + leads[k] * ds->dt;
        tt[s] = valid_time(ds, samples[s] + ds->dt);
        if (t1) t1[s] = tt[s];
    }
    wx_status st = wx_archive_read(ds->ar, times, (int)(n * r), raw);
    float *keep = ds->states;
    if (states) ds->states = states;
    if (st == WX_OK) st = assemble(ds, raw, n, r, x, targets, tt);
    ds->states = keep;
    free(raw);
    free(times);
    free(tt);
    free(states);
    return st;
}
