/* A tiny training archive for the trainer tests, written with the archive writer API: 17×32 global
 * grid (11.25°, both poles, so the model's 16 rows exercise the south-pole drop), 3 channels, 6-hourly
 * from 2019-12-20T00, with per-channel statistics computed here in double over every record.
 *
 * Channel c at time t is a smooth field advected eastwards by one column per step:
 *   f_c(t, j, i) = mean_c + amp_c · g_c(lat_j, lon_i − t·dlon)
 * with g a fixed sum of a few low-order waves. So the next state is a deterministic, learnable
 * function of the current one, and persistence has a known non-zero error.
 *
 * toy_ext_archive_write adds channels for the precip stage and FourCastNet's extra inputs:
 *   tp  (single level, m of 6-h accumulation) = 1e-3 · max(0, g_u − 0.3)², g_u the u850 pattern
 *       at the same valid time: a deterministic function of the state, zero over about half the
 *       globe, up to ~3 mm;
 *   lsm, zs (static, repeated in every record): a land-sea mask and a surface geopotential (m² s⁻²)
 *       fixed in space.
 * Header-only (static functions). */
#ifndef TRAIN_TOY_H
#define TRAIN_TOY_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "io/archive.h"

#define TOY_NLAT 17
#define TOY_NLON 32
#define TOY_NCH 3

static const char *const toy_names[TOY_NCH] = {"z500", "t850", "u850"};
static const double toy_mean[TOY_NCH] = {54000.0, 270.0, 5.0};
static const double toy_amp[TOY_NCH] = {1500.0, 12.0, 9.0};

__attribute__((unused)) static double toy_lat(int j) { return 90.0 - 11.25 * j; }

/* The field in physical units. */
__attribute__((unused)) static double toy_value(int c, int64_t t, int j, int i) {
    double lat = toy_lat(j) * M_PI / 180, lon = (i - (double)t) * 11.25 * M_PI / 180;
    double g = cos(lat) * (0.8 * cos(2 * lon + 0.3 * c) + 0.5 * sin(3 * lon + 1.1 + c)) +
               0.4 * sin(2 * lat) * cos(lon - 0.7 * c) + 0.3 * cos(lat) * cos(lat) * sin(5 * lon + c);
    return toy_mean[c] + toy_amp[c] * g;
}

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

/* Writes the archive of the channels `flags` selects (count records, 3 shards at most) into dir,
 * its manifest with the given key; 0 on success. */
static int toy_archive_write_key(const char *dir, int64_t count, int flags, uint64_t key) {
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
    m.key = key;
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

/* The three base channels; 0 on success. */
__attribute__((unused)) static int toy_archive_write(const char *dir, int64_t count) {
    return toy_archive_write_key(dir, count, 0, 0x7a11ULL);
}

/* The base channels and those `flags` adds (TOY_EXT_TP, TOY_EXT_STATIC); 0 on success. */
__attribute__((unused)) static int toy_ext_archive_write(const char *dir, int64_t count, int flags) {
    return toy_archive_write_key(dir, count, flags, 0x7a12ULL);
}

/* The tiny FourCastNet used by the trainer tests (16×32 model grid, patch 4 → 4×8 tokens). */
__attribute__((unused)) static const char *toy_model_yaml =
    "type: fourcastnet\n"
    "img_size: [16, 32]\n"
    "patch_size: 4\n"
    "in_channels: 3\n"
    "out_channels: 3\n"
    "embed_dim: 32\n"
    "depth: 2\n"
    "mlp_ratio: 2.0\n"
    "num_blocks: 4\n";

/* Writes text to path; 0 on success. */
__attribute__((unused)) static int toy_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#endif
