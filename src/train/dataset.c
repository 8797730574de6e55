#include "train/dataset.h"

#include <stdlib.h>
#include <string.h>

#include "core/wx_log.h"
#include "meteo/wx_time.h"

static int year_of(const wx_archive_meta *m, int64_t t) {
    int64_t y;
    int mo, d, h, mi, s;
    wx_time_split(m->start + t * m->step, &y, &mo, &d, &h, &mi, &s);
    return (int)y;
}

/* Initial times t with t and t + reach·dt inside [years[0], years[1]]. */
static int64_t *split_samples(const wx_dataset *ds, const int64_t years[2], int64_t reach,
                              int64_t *n) {
    const wx_archive_meta *m = ds->meta;
    int64_t *s = wx_malloc(sizeof(int64_t) * (size_t)(m->count + 1));
    *n = 0;
    for (int64_t t = 0; t + reach * ds->dt < m->count; t++) {
        int y0 = year_of(m, t), y1 = year_of(m, t + reach * ds->dt);
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

wx_status wx_dataset_open(wx_dataset *ds, const wx_train_config *c, int64_t model_in,
                          int64_t model_out, int64_t model_h, int64_t model_w, int64_t batch,
                          int64_t rollout) {
    memset(ds, 0, sizeof *ds);
    ds->pending = -1;
    wx_archive_opts o = {c->read_threads, 1, 0};
    WX_TRY(wx_archive_open(c->archive, &o, &ds->ar));
    const wx_archive_meta *m = ds->meta = wx_archive_meta_of(ds->ar);
    /* channels */
    ds->nin = c->nin ? c->nin : m->nchan;
    ds->nout = c->nout ? c->nout : ds->nin;
    ds->cin = wx_malloc(sizeof(int) * (size_t)ds->nin);
    ds->cout = wx_malloc(sizeof(int) * (size_t)ds->nout);
    if (c->nin) WX_TRY(map_channels(m, c, c->chan_in, c->nin, "data.channels_in", ds->cin));
    else for (int i = 0; i < ds->nin; i++) ds->cin[i] = i;
    if (c->nout) WX_TRY(map_channels(m, c, c->chan_out, c->nout, "data.channels_out", ds->cout));
    else memcpy(ds->cout, ds->cin, sizeof(int) * (size_t)ds->nout);
    if (ds->nin != model_in || ds->nout != model_out)
        return wx_error_set(WX_ERR_USAGE, "%s: the model has %lld input and %lld output channels but "
                            "data gives %d and %d (data.channels_in/channels_out, default: all %d "
                            "archive channels)", c->path, (long long)model_in, (long long)model_out,
                            ds->nin, ds->nout, m->nchan);
    int same = ds->nin == ds->nout;
    for (int i = 0; same && i < ds->nin; i++) same = ds->cin[i] == ds->cout[i];
    int64_t max_lead = c->leads[c->nleads - 1];
    if (!same && (rollout > 1 || max_lead > 1))
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
    int64_t rec = wx_archive_points(m) * m->nchan;
    for (int i = 0; i < 2; i++)
        ds->raw[i] = wx_malloc(sizeof(float) * (size_t)(batch * (rollout + 1) * rec));
    ds->times = wx_malloc(sizeof(int64_t) * (size_t)(batch * (rollout + 1)));
    ds->perm = wx_malloc(sizeof(int64_t) * (size_t)ds->ntrain);
    for (int64_t i = 0; i < ds->ntrain; i++) ds->perm[i] = i;
    return WX_OK;
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
    int64_t r = ds->rollout + 1;
    for (int64_t b = 0; b < ds->batch; b++) {
        int64_t t = ds->train[ds->perm[i * ds->global_batch + ds->part + b]];
        for (int64_t k = 0; k < r; k++) ds->times[b * r + k] = t + k * ds->dt;
    }
    WX_TRY(wx_archive_prefetch(ds->ar, ds->times, (int)(ds->batch * r), ds->raw[i % 2]));
    ds->pending = i;
    return WX_OK;
}

void wx_dataset_drain(wx_dataset *ds) {
    if (ds->ar && ds->pending >= 0) (void)wx_archive_wait(ds->ar);
    ds->pending = -1;
}

/* raw (n·r records of (nchan, nlat, nlon)) → x (n, Cin, H, W) from record 0 of each sample and
 * targets (r−1, n, Cout, H, W) from records 1..r−1. */
static void assemble(const wx_dataset *ds, const float *raw, int64_t n, int64_t r, float *x,
                     float *targets) {
    const wx_archive_meta *m = ds->meta;
    int64_t pts = wx_archive_points(m), hw = ds->h * ds->w, recn = pts * m->nchan;
    for (int64_t s = 0; s < n; s++)
        for (int64_t k = 0; k < r; k++) {
            const float *rec = raw + (s * r + k) * recn;
            int nc = k ? ds->nout : ds->nin;
            const int *ch = k ? ds->cout : ds->cin;
            float *dst = k ? targets + ((k - 1) * n + s) * nc * hw : x + s * nc * hw;
            for (int c = 0; c < nc; c++) {
                const float *src = rec + ch[c] * pts; /* rows beyond h (the pole row) are skipped */
                double mu = ds->mean[ch[c]], sd = ds->std[ch[c]];
                for (int64_t p = 0; p < hw; p++) dst[c * hw + p] = (float)(((double)src[p] - mu) / sd);
            }
        }
}

wx_status wx_dataset_batch(wx_dataset *ds, int64_t i, float *x, float *targets) {
    if (ds->pending != i) {
        wx_dataset_drain(ds);
        WX_TRY(wx_dataset_prefetch(ds, i));
    }
    ds->pending = -1;
    WX_TRY(wx_archive_wait(ds->ar));
    assemble(ds, ds->raw[i % 2], ds->batch, ds->rollout + 1, x, targets);
    return WX_OK;
}

wx_status wx_dataset_read_valid(wx_dataset *ds, const int64_t *samples, int64_t n,
                                const int64_t *leads, int nl, float *x, float *targets) {
    int64_t r = nl + 1;
    const wx_archive_meta *m = ds->meta;
    int64_t recn = wx_archive_points(m) * m->nchan;
    int64_t *times = wx_malloc(sizeof(int64_t) * (size_t)(n * r));
    float *raw = malloc(sizeof(float) * (size_t)(n * r * recn));
    if (!raw) {
        free(times);
        return wx_error_set(WX_ERR_RUN, "validation: cannot allocate %lld records",
                            (long long)(n * r));
    }
    for (int64_t s = 0; s < n; s++) {
        times[s * r] = samples[s];
        for (int k = 0; k < nl; k++) times[s * r + 1 + k] = samples[s] + leads[k] * ds->dt;
    }
    wx_status st = wx_archive_read(ds->ar, times, (int)(n * r), raw);
    if (st == WX_OK) assemble(ds, raw, n, r, x, targets);
    free(raw);
    free(times);
    return st;
}
