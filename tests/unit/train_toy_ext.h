/* The trainer tests' toy archive (train_toy.h: z500, t850, u850 advected eastwards one column per
 * step) with extra channels for the precip stage and FourCastNet's extra inputs:
 *   tp  (single level, m of 6-h accumulation) = 1e-3 · max(0, g_u − 0.3)², g_u the u850 pattern
 *       at the same valid time: a deterministic function of the state, zero over about half the
 *       globe, up to ~3 mm;
 *   lsm, zs (static, repeated in every record): a land-sea mask and a surface geopotential (m² s⁻²)
 *       fixed in space.
 * Header-only (static functions). */
#ifndef TRAIN_TOY_EXT_H
#define TRAIN_TOY_EXT_H

#include "train_toy.h"

enum { TOY_EXT_TP = 1, TOY_EXT_STATIC = 2 };

__attribute__((unused)) static double toy_tp(int64_t t, int j, int i) {
    double g = (toy_value(2, t, j, i) - toy_mean[2]) / toy_amp[2] - 0.3;
    return g > 0 ? 1e-3 * g * g : 0.0;
}

__attribute__((unused)) static double toy_lsm(int j, int i) {
    double lat = toy_lat(j) * M_PI / 180, lon = i * 11.25 * M_PI / 180;
    return cos(lon) + 0.5 * sin(2 * lat) > 0.4 ? 1.0 : 0.0;
}

__attribute__((unused)) static double toy_zs(int j, int i) {
    double lat = toy_lat(j) * M_PI / 180, lon = i * 11.25 * M_PI / 180;
    return 9.80665 * 1500.0 * toy_lsm(j, i) * (0.5 + 0.5 * cos(lat) * sin(3 * lon));
}

/* Names of the channels written with `flags`; returns their count. */
__attribute__((unused)) static int toy_ext_channels(int flags, const char *names[6]) {
    int n = 0;
    for (int c = 0; c < TOY_NCH; c++) names[n++] = toy_names[c];
    if (flags & TOY_EXT_TP) names[n++] = "tp";
    if (flags & TOY_EXT_STATIC) names[n++] = "lsm", names[n++] = "zs";
    return n;
}

__attribute__((unused)) static double toy_ext_value(const char *name, int64_t t, int j, int i) {
    for (int c = 0; c < TOY_NCH; c++)
        if (!strcmp(name, toy_names[c])) return toy_value(c, t, j, i);
    if (!strcmp(name, "tp")) return toy_tp(t, j, i);
    if (!strcmp(name, "lsm")) return toy_lsm(j, i);
    return toy_zs(j, i);
}

/* Writes the archive (count records, 3 shards at most) into dir; 0 on success. */
__attribute__((unused)) static int toy_ext_archive_write(const char *dir, int64_t count, int flags) {
    const char *names[6];
    int nch = toy_ext_channels(flags, names);
    wx_archive_meta m;
    memset(&m, 0, sizeof m);
    m.nchan = nch;
    m.chan = wx_calloc((size_t)nch, sizeof *m.chan);
    for (int c = 0; c < nch; c++) {
        wx_archive_channel *a = &m.chan[c];
        snprintf(a->name, sizeof a->name, "%s", names[c]);
        if (c < TOY_NCH) {
            snprintf(a->param, sizeof a->param, "%s", c == 0 ? "z" : c == 1 ? "t" : "u");
            a->kind = WX_LEVEL_PRESSURE;
            a->level = c == 0 ? 500 : 850;
            snprintf(a->units, sizeof a->units, "%s", c == 0 ? "m**2 s**-2" : c == 1 ? "K" : "m s**-1");
        } else if (!strcmp(names[c], "tp")) {
            snprintf(a->param, sizeof a->param, "tp");
            a->kind = WX_LEVEL_SINGLE;
            a->accum_s = 21600;
            snprintf(a->units, sizeof a->units, "m");
        } else {
            snprintf(a->param, sizeof a->param, "%s", !strcmp(names[c], "lsm") ? "lsm" : "z");
            a->kind = WX_LEVEL_STATIC;
            snprintf(a->units, sizeof a->units, "%s", !strcmp(names[c], "lsm") ? "(0 - 1)" : "m**2 s**-2");
        }
    }
    if (wx_grid_make(TOY_NLAT, TOY_NLON, 90.0, 11.25, 0.0, 11.25, &m.grid) != WX_OK) return -1;
    m.start = wx_time_make(2019, 12, 20, 0, 0, 0);
    m.step = 21600;
    m.count = count;
    m.dtype = WX_DTYPE_F32;
    m.key = 0x7a12ULL;
    m.records_per_shard = (count + 2) / 3;
    int64_t pts = TOY_NLAT * TOY_NLON;
    float *rec = wx_malloc(sizeof(float) * (size_t)(nch * pts));
    double sum[6] = {0}, sq[6] = {0}, mn[6], mx[6];
    for (int c = 0; c < nch; c++) mn[c] = 1e300, mx[c] = -1e300;
    int ok = wx_mkdir_p(dir) == WX_OK;
    for (int s = 0; ok && s < wx_archive_shard_count(&m); s++) {
        wx_shard_writer *w;
        ok = wx_shard_writer_open(dir, s, &m, &w) == WX_OK;
        for (int64_t t = s * m.records_per_shard; ok && t < count && t < (s + 1) * m.records_per_shard; t++) {
            for (int c = 0; c < nch; c++)
                for (int j = 0; j < TOY_NLAT; j++)
                    for (int i = 0; i < TOY_NLON; i++) {
                        float v = (float)toy_ext_value(names[c], t, j, i);
                        rec[(c * TOY_NLAT + j) * TOY_NLON + i] = v;
                        sum[c] += v, sq[c] += (double)v * v;
                        if (v < mn[c]) mn[c] = v;
                        if (v > mx[c]) mx[c] = v;
                    }
            ok = wx_shard_writer_put(w, rec) == WX_OK;
        }
        ok = ok && wx_shard_writer_commit(w) == WX_OK;
    }
    m.has_stats = 1;
    m.stats_start = m.start;
    m.stats_end = m.start + (count - 1) * m.step;
    m.mean = wx_calloc((size_t)nch, sizeof(double));
    m.std = wx_calloc((size_t)nch, sizeof(double));
    m.min = wx_calloc((size_t)nch, sizeof(double));
    m.max = wx_calloc((size_t)nch, sizeof(double));
    m.diff_std = wx_calloc((size_t)nch, sizeof(double));
    m.diff_step = m.step;
    double n = (double)count * (double)pts;
    for (int c = 0; c < nch; c++) {
        m.mean[c] = sum[c] / n;
        m.std[c] = sqrt(fmax(sq[c] / n - m.mean[c] * m.mean[c], 0.0));
        m.min[c] = mn[c], m.max[c] = mx[c], m.diff_std[c] = m.std[c];
    }
    ok = ok && wx_archive_write_manifest(dir, &m) == WX_OK;
    free(rec);
    wx_archive_meta_free(&m);
    return ok ? 0 : -1;
}

#endif
