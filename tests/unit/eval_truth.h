/* The analytic truth archive of the eval tests (test_eval, test_eval_ens, test_eval_ens_pl): on a
 * 10° global grid, 6-hourly from 2017-01-01T00, channel c at record t and point (lat, lon) is
 *   base_c + amp_c·cos(lat) + 3·sin(2·lon) + rise_c·t
 * so persistence errs by exactly rise_c per step, and forecasts written as truth + offsets have
 * errors known by hand. The channels are the first nch rows of EVAL_CHANS, in that order.
 * Header-only (static functions). */
#ifndef EVAL_TRUTH_H
#define EVAL_TRUTH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../data_prep/climatology_build.h"
#include "core/wx_fs.h"
#include "io/archive.h"
#include "io/netcdf_write.h"

typedef struct {
    const char *name, *param, *units;
    double level; /* hPa; 0 = single level */
    double base, amp, rise;
} eval_chan;

static const eval_chan EVAL_CHANS[] = {
    {"t2m", "2t", "K", 0, 280, 20, 1.0},           /* rises 1 K per 6 h */
    {"z500", "z", "m2 s-2", 500, 52000, 800, 10.0}, /* 10 m2 s-2 per 6 h */
    {"t850", "t", "K", 850, 270, 15, 0.25},
    {"u500", "u", "m s-1", 500, 5, 10, 0.5},   /* a u/v pair: wind vectors (test_eval_opts) */
    {"v500", "v", "m s-1", 500, -3, 4, 0.25},
};
#define EVAL_MAX_CHANS ((int)(sizeof EVAL_CHANS / sizeof EVAL_CHANS[0]))

static float eval_truth(int64_t t, int c, const wx_grid *g, int p) {
    double lat = wx_grid_lat(g, p / g->nlon), lon = wx_grid_lon(g, p % g->nlon);
    const eval_chan *e = &EVAL_CHANS[c];
    return (float)(e->base + e->amp * cos(lat * M_PI / 180) + 3 * sin(lon * M_PI / 90) + e->rise * t);
}

/* Metadata of a `count`-record archive of the first nch channels; statistics all 1 (the tests
 * score in physical units, so only their presence matters). */
__attribute__((unused)) static void eval_make_meta(wx_archive_meta *m, int nch, int64_t count,
                                                  uint64_t key) {
    memset(m, 0, sizeof *m);
    m->nchan = nch;
    m->chan = wx_calloc((size_t)nch, sizeof *m->chan);
    for (int c = 0; c < nch; c++) {
        const eval_chan *e = &EVAL_CHANS[c];
        snprintf(m->chan[c].name, 64, "%s", e->name), snprintf(m->chan[c].param, 64, "%s", e->param);
        m->chan[c].kind = e->level > 0 ? WX_LEVEL_PRESSURE : WX_LEVEL_SINGLE, m->chan[c].level = e->level;
        snprintf(m->chan[c].units, 32, "%s", e->units);
    }
    wx_grid_global(10.0, &m->grid);
    m->start = wx_time_make(2017, 1, 1, 0, 0, 0);
    m->step = 21600;
    m->count = count;
    m->records_per_shard = count;
    m->key = key;
    m->has_stats = 1;
    m->stats_start = m->start, m->stats_end = m->start + (m->count - 1) * m->step;
    m->diff_step = m->step;
    double **arrs[5] = {&m->mean, &m->std, &m->min, &m->max, &m->diff_std};
    for (int k = 0; k < 5; k++) {
        *arrs[k] = wx_calloc((size_t)nch, sizeof(double));
        for (int c = 0; c < nch; c++) (*arrs[k])[c] = 1;
    }
}

/* wx_clim_fetch: elements [q0, q0 + n) of record t (channel-major, as archive records). */
static wx_status eval_clim_fetch(void *ctx, int64_t t, size_t q0, size_t n, float *out) {
    const wx_archive_meta *m = ctx;
    int64_t P = wx_archive_points(m);
    for (size_t k = 0; k < n; k++) {
        int64_t e = (int64_t)(q0 + k);
        out[k] = eval_truth(t, (int)(e / P), &m->grid, (int)(e % P));
    }
    return WX_OK;
}

/* Writes the archive into dir with the records `fetch` (ctx = m) gives: one shard, then, when
 * climatology is not NULL, the climatology (61-day window) under that file name beside it, which
 * the manifest then names; then the manifest. Returns 1 when all went well, else prints the error
 * and returns 0. */
__attribute__((unused)) static int eval_write_archive_from(const char *dir, wx_archive_meta *m,
                                                           const char *climatology,
                                                           wx_clim_fetch fetch) {
    int64_t P = wx_archive_points(m);
    float *rec = malloc(sizeof(float) * (size_t)(P * m->nchan));
    wx_shard_writer *w;
    int ok = wx_mkdir_p(dir) == WX_OK && wx_shard_writer_open(dir, 0, m, &w) == WX_OK;
    for (int64_t t = 0; ok && t < m->count; t++) {
        ok = fetch(m, t, 0, (size_t)(P * m->nchan), rec) == WX_OK;
        ok = ok && wx_shard_writer_put(w, rec) == WX_OK;
    }
    ok = ok && wx_shard_writer_commit(w) == WX_OK;
    if (ok && climatology) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, climatology);
        wx_clim_opts co = {61, 1 << 24, 0};
        ok = wx_climatology_build(path, m, m->start, m->start + (m->count - 1) * m->step, &co,
                                  fetch, m) == WX_OK;
        snprintf(m->climatology, sizeof m->climatology, "%s", climatology);
    }
    ok = ok && wx_archive_write_manifest(dir, m) == WX_OK;
    if (!ok) printf("archive: %s\n", wx_error_message());
    free(rec);
    return ok;
}

/* The archive of the analytic truth above (eval_write_archive_from with eval_clim_fetch). */
__attribute__((unused)) static int eval_write_archive(const char *dir, wx_archive_meta *m,
                                                      const char *climatology) {
    return eval_write_archive_from(dir, m, climatology, eval_clim_fetch);
}

/* A forecast value: channel c (0 t2m, 1 z500) at lead k (record t0 + k), point p. */
typedef float (*eval_forecast_value)(const wx_archive_meta *m, int64_t t0, int k, int c, int p,
                                     const void *ctx);

/* A forecast file from record t0, leads 0..4 steps, channels t2m and z500 with the values `value`
 * gives. source names the writing test. */
__attribute__((unused)) static int eval_write_forecast_from(const char *path,
                                                            const wx_archive_meta *m, int64_t t0,
                                                            eval_forecast_value value,
                                                            const void *ctx, const char *source) {
    double lev = 500;
    wx_nc_var vars[2] = {{"t2m", "K", "air_temperature", "2 metre temperature", 0},
                         {"z", "m2 s-2", "geopotential", "Geopotential", 1}};
    wx_nc_layout L = {m->grid, 1, &lev, 2, vars, 1, m->start + t0 * m->step, "test", source, 0};
    wx_nc_writer w;
    if (wx_nc_writer_open(&w, path, &L) != WX_OK) return 0;
    int64_t P = wx_archive_points(m);
    float *f = malloc(sizeof(float) * (size_t)P);
    int ok = 1;
    for (int k = 0; ok && k <= 4; k++)
        for (int c = 0; ok && c < 2; c++) {
            for (int64_t p = 0; p < P; p++) f[p] = value(m, t0, k, c, (int)p, ctx);
            ok = wx_nc_writer_put(&w, k, m->start + (t0 + k) * m->step, c, 0, f) == WX_OK;
        }
    free(f);
    if (!ok) {
        printf("forecast: %s\n", wx_error_message());
        wx_nc_writer_abort(&w);
        return 0;
    }
    return wx_nc_writer_close(&w) == WX_OK;
}

typedef struct {
    const double *offset;
    double pattern;
} eval_offset_pattern;

static float eval_truth_plus(const wx_archive_meta *m, int64_t t0, int k, int c, int p,
                             const void *ctx) {
    const eval_offset_pattern *o = ctx;
    return (float)(eval_truth(t0 + k, c, &m->grid, p) + o->offset[c] +
                   o->pattern * sin(wx_grid_lat(&m->grid, p / m->grid.nlon) * M_PI / 180));
}

/* The analytic truth + offset[c] + pattern·sin(lat) (eval_write_forecast_from). */
__attribute__((unused)) static int eval_write_forecast(const char *path, const wx_archive_meta *m,
                                                       int64_t t0, const double *offset,
                                                       double pattern, const char *source) {
    eval_offset_pattern o = {offset, pattern};
    return eval_write_forecast_from(path, m, t0, eval_truth_plus, &o, source);
}

#endif
