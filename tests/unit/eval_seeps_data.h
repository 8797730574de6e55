/* The synthetic precipitation archive of the SEEPS tests (test_eval_seeps, test_eval_seeps_clim):
 * 45° global grid (5 × 8), 12-hourly records 2019-01-01T00 .. 2020-12-31T12 (two whole years, the
 * second a leap year), channels t2m (K) and tp (m, accumulated over `accum_s`). tp at record t,
 * point p: dry (0, or below 0.1 mm) with a probability rising along the columns from 0.02 (column
 * 0, p1 < 0.1: masked) to 0.98 (column 7, p1 > 0.85: masked) and with the season; one value in
 * 53 is exactly (float)0.1 mm (not dry, in no category when scored); else 0.1 mm plus an
 * exponential amount whose scale grows with the row and is larger at 12 UTC.
 * Header-only (static functions). */
#ifndef EVAL_SEEPS_DATA_H
#define EVAL_SEEPS_DATA_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../data_prep/climatology_build.h"
#include "core/wx_fs.h"
#include "io/archive.h"

#define SD_COUNT (731 * 2)
#define SD_STEP 43200

static double sd_hash(int64_t t, int p, int salt) {
    uint32_t x = (uint32_t)(t * 2654435761u) ^ (uint32_t)(p * 40503u + (uint32_t)salt * 97u + 17u);
    x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15, x *= 0x27d4eb2du, x ^= x >> 16;
    return x / 4294967296.0; /* [0, 1) */
}

static float sd_tp(const wx_archive_meta *m, int64_t t, int p) {
    int nlon = m->grid.nlon, col = p % nlon, row = p / nlon;
    wx_time vt = m->start + t * m->step;
    double season = sin(2 * M_PI * wx_time_day_of_year(vt) / 366.0);
    double pdry = 0.02 + 0.96 * col / (nlon - 1) + 0.06 * season;
    double u1 = sd_hash(t, p, 1), u2 = sd_hash(t, p, 2);
    if (u1 < pdry) return u2 < 0.5 ? 0.0f : (float)(9e-5 * u2);
    if (sd_hash(t, p, 3) < 1.0 / 53) return (float)1e-4;
    double scale = 1e-3 * (1 + row) * (wx_time_hour_of_day(vt) == 12 ? 1.5 : 1.0);
    return (float)(1e-4 + scale * -log(1 - u2));
}

static float sd_value(const wx_archive_meta *m, int64_t t, int c, int p) {
    if (c == 1) return sd_tp(m, t, p);
    double lat = wx_grid_lat(&m->grid, p / m->grid.nlon) * M_PI / 180;
    return (float)(280 + 10 * cos(lat) + 0.01 * (double)t);
}

static wx_status sd_fetch(void *ctx, int64_t t, size_t q0, size_t n, float *out) {
    const wx_archive_meta *m = ctx;
    int64_t P = wx_archive_points(m);
    for (size_t k = 0; k < n; k++) {
        int64_t e = (int64_t)(q0 + k);
        out[k] = sd_value(m, t, (int)(e / P), (int)(e % P));
    }
    return WX_OK;
}

/* Writes the archive (count records, tp accumulated over accum_s) and its climatology of format
 * `version` (0: current) into dir. Returns 1 on success, else prints the error. */
static int sd_make_archive(const char *dir, wx_archive_meta *m, int64_t count, int64_t accum_s,
                           int version) {
    memset(m, 0, sizeof *m);
    m->nchan = 2;
    m->chan = wx_calloc(2, sizeof *m->chan);
    const char *names[2] = {"t2m", "tp"}, *params[2] = {"2t", "tp"}, *units[2] = {"K", "m"};
    for (int c = 0; c < 2; c++) {
        snprintf(m->chan[c].name, 64, "%s", names[c]), snprintf(m->chan[c].param, 64, "%s", params[c]);
        snprintf(m->chan[c].units, 32, "%s", units[c]);
        m->chan[c].kind = WX_LEVEL_SINGLE;
    }
    m->chan[1].accum_s = accum_s;
    wx_grid_global(45.0, &m->grid);
    m->start = wx_time_make(2019, 1, 1, 0, 0, 0);
    m->step = SD_STEP;
    m->count = count;
    m->records_per_shard = count;
    m->key = 11;
    m->has_stats = 1;
    m->stats_start = m->start, m->stats_end = m->start + (count - 1) * m->step;
    m->diff_step = m->step;
    double **arrs[5] = {&m->mean, &m->std, &m->min, &m->max, &m->diff_std};
    for (int k = 0; k < 5; k++) {
        *arrs[k] = wx_calloc(2, sizeof(double));
        (*arrs[k])[0] = (*arrs[k])[1] = 1;
    }
    int64_t P = wx_archive_points(m);
    float *rec = malloc(sizeof(float) * (size_t)(2 * P));
    wx_shard_writer *w;
    int ok = wx_mkdir_p(dir) == WX_OK && wx_shard_writer_open(dir, 0, m, &w) == WX_OK;
    for (int64_t t = 0; ok && t < count; t++) {
        ok = sd_fetch(m, t, 0, (size_t)(2 * P), rec) == WX_OK;
        ok = ok && wx_shard_writer_put(w, rec) == WX_OK;
    }
    ok = ok && wx_shard_writer_commit(w) == WX_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/climatology.wxc", dir);
    wx_clim_opts co = {61, 1 << 22, 0}; /* a small budget: several passes */
    ok = ok && wx_climatology_build_version(path, m, m->stats_start, m->stats_end, &co, version,
                                            sd_fetch, m) == WX_OK;
    snprintf(m->climatology, sizeof m->climatology, "climatology.wxc");
    ok = ok && wx_archive_write_manifest(dir, m) == WX_OK;
    if (!ok) printf("archive %s: %s\n", dir, wx_error_message());
    free(rec);
    return ok;
}

/* Runs fn(ctx) with stderr sent to `path`; returns what fn returns. */
static int sd_with_stderr(const char *path, int (*fn)(void *), void *ctx) {
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w");
    if (!f || saved < 0) return fn(ctx);
    dup2(fileno(f), 2);
    int rc = fn(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    return rc;
}

/* Occurrences of `needle` in file `path`. */
static int sd_count_in(const char *path, const char *needle) {
    char *s = NULL;
    size_t n = 0;
    if (wx_read_file(path, &s, &n) != WX_OK) return -1;
    int k = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++) k++;
    free(s);
    return k;
}

#endif
