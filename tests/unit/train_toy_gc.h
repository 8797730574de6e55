/* A tiny training archive for the GraphCast trainer tests, written with the archive writer API:
 * 11.25° global grid with both poles (17 × 32: GraphCast's grid at that resolution), 6-hourly
 * from 2019-12-20T00, channels
 *   t2m (2t, single), msl (single), z500, z850 (z on pressure levels), lsm (static)
 * with per-channel statistics and the std of 6-hour differences computed here in double over
 * every record. The archive has no surface geopotential, so a model asking for
 * geopotential_at_surface gets zeros.
 *
 * Channel c at time t is a smooth field advected eastwards by one column (11.25°) per step,
 *   f_c(t, j, i) = mean_c + amp_c · g_c(lat_j, lon_i − t·11.25°),
 * so the next state is a deterministic function of the last two (extrapolation of their
 * difference is exact up to the grid), and persistence has a known non-zero error.
 * Header-only (static functions). */
#ifndef TRAIN_TOY_GC_H
#define TRAIN_TOY_GC_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "io/archive.h"

#define GCT_NLAT 17
#define GCT_NLON 32
#define GCT_NCH 5
#define GCT_NSTATE 4

static const char *const gct_names[GCT_NCH] = {"t2m", "msl", "z500", "z850", "lsm"};
static const char *const gct_params[GCT_NCH] = {"2t", "msl", "z", "z", "lsm"};
static const double gct_mean[GCT_NCH] = {285.0, 101000.0, 54000.0, 14000.0, 0.0};
static const double gct_amp[GCT_NCH] = {12.0, 1500.0, 1500.0, 600.0, 0.0};

__attribute__((unused)) static double gct_lat(int j) { return 90.0 - 11.25 * j; }

/* The field in physical units. */
__attribute__((unused)) static double gct_value(int c, int64_t t, int j, int i) {
    double lat = gct_lat(j) * M_PI / 180, lon0 = i * 11.25 * M_PI / 180;
    if (c == 4) return cos(lat) * cos(lon0) > 0.3 ? 1.0 : 0.0; /* land-sea mask, static */
    double lon = (i - (double)t) * 11.25 * M_PI / 180;
    double g = cos(lat) * (0.8 * cos(2 * lon + 0.3 * c) + 0.5 * sin(3 * lon + 1.1 + c)) +
               0.4 * sin(2 * lat) * cos(lon - 0.7 * c) + 0.3 * cos(lat) * cos(lat) * sin(5 * lon + c);
    return gct_mean[c] + gct_amp[c] * g;
}

/* Writes the archive (count records, 3 shards at most) into dir; 0 on success. */
__attribute__((unused)) static int gct_archive_write(const char *dir, int64_t count) {
    wx_archive_meta m;
    memset(&m, 0, sizeof m);
    m.nchan = GCT_NCH;
    m.chan = wx_calloc(GCT_NCH, sizeof *m.chan);
    for (int c = 0; c < GCT_NCH; c++) {
        snprintf(m.chan[c].name, sizeof m.chan[c].name, "%s", gct_names[c]);
        snprintf(m.chan[c].param, sizeof m.chan[c].param, "%s", gct_params[c]);
        m.chan[c].kind = c < 2 ? WX_LEVEL_SINGLE : c < 4 ? WX_LEVEL_PRESSURE : WX_LEVEL_STATIC;
        m.chan[c].level = c == 2 ? 500 : c == 3 ? 850 : 0;
        snprintf(m.chan[c].units, sizeof m.chan[c].units, "%s",
                 c == 0 ? "K" : c == 1 ? "Pa" : c < 4 ? "m**2 s**-2" : "(0 - 1)");
    }
    if (wx_grid_make(GCT_NLAT, GCT_NLON, 90.0, 11.25, 0.0, 11.25, &m.grid) != WX_OK) return -1;
    m.start = wx_time_make(2019, 12, 20, 0, 0, 0);
    m.step = 21600;
    m.count = count;
    m.dtype = WX_DTYPE_F32;
    m.key = 0x6c7a11ULL;
    m.records_per_shard = (count + 2) / 3;
    const int64_t pts = GCT_NLAT * GCT_NLON;
    float *rec = wx_malloc(sizeof(float) * (size_t)(GCT_NCH * pts));
    double sum[GCT_NCH] = {0}, sq[GCT_NCH] = {0}, dsq[GCT_NCH] = {0}, dsum[GCT_NCH] = {0};
    double mn[GCT_NCH], mx[GCT_NCH];
    for (int c = 0; c < GCT_NCH; c++) mn[c] = 1e300, mx[c] = -1e300;
    int ok = wx_mkdir_p(dir) == WX_OK;
    for (int s = 0; ok && s < wx_archive_shard_count(&m); s++) {
        wx_shard_writer *w;
        ok = wx_shard_writer_open(dir, s, &m, &w) == WX_OK;
        for (int64_t t = s * m.records_per_shard; ok && t < count && t < (s + 1) * m.records_per_shard; t++) {
            for (int c = 0; c < GCT_NCH; c++)
                for (int j = 0; j < GCT_NLAT; j++)
                    for (int i = 0; i < GCT_NLON; i++) {
                        float v = (float)gct_value(c, t, j, i);
                        rec[(c * GCT_NLAT + j) * GCT_NLON + i] = v;
                        sum[c] += v, sq[c] += (double)v * v;
                        if (v < mn[c]) mn[c] = v;
                        if (v > mx[c]) mx[c] = v;
                        if (t + 1 < count) {
                            double d = (double)(float)gct_value(c, t + 1, j, i) - v;
                            dsum[c] += d, dsq[c] += d * d;
                        }
                    }
            ok = wx_shard_writer_put(w, rec) == WX_OK;
        }
        ok = ok && wx_shard_writer_commit(w) == WX_OK;
    }
    m.has_stats = 1;
    m.stats_start = m.start;
    m.stats_end = m.start + (count - 1) * m.step;
    m.mean = wx_calloc(GCT_NCH, sizeof(double));
    m.std = wx_calloc(GCT_NCH, sizeof(double));
    m.min = wx_calloc(GCT_NCH, sizeof(double));
    m.max = wx_calloc(GCT_NCH, sizeof(double));
    m.diff_std = wx_calloc(GCT_NCH, sizeof(double));
    m.diff_step = m.step;
    const double n = (double)count * (double)pts, nd = (double)(count - 1) * (double)pts;
    for (int c = 0; c < GCT_NCH; c++) {
        m.mean[c] = sum[c] / n;
        m.std[c] = sqrt(sq[c] / n - m.mean[c] * m.mean[c]);
        m.min[c] = mn[c], m.max[c] = mx[c];
        m.diff_std[c] = sqrt(dsq[c] / nd - (dsum[c] / nd) * (dsum[c] / nd));
    }
    ok = ok && wx_archive_write_manifest(dir, &m) == WX_OK;
    free(rec);
    wx_archive_meta_free(&m);
    return ok ? 0 : -1;
}

/* A tiny GraphCast on that grid: 4 states (2t, msl, z500, z850), 3 forcings, 2 statics (lsm from
 * the archive, surface geopotential absent). in = 2·(2 + 2 + 3) + 2 + 3 = 19 channels. */
__attribute__((unused)) static const char *gct_model_yaml =
    "type: graphcast\n"
    "resolution: 11.25\n"
    "mesh_min_level: 0\n"
    "mesh_max_level: 2\n"
    "latent_size: 24\n"
    "gnn_msg_steps: 2\n"
    "hidden_layers: 1\n"
    "radius_query_fraction_edge_length: 0.6\n"
    "input_steps: 2\n"
    "surface_variables: [2m_temperature, mean_sea_level_pressure]\n"
    "atmospheric_variables: [geopotential]\n"
    "pressure_levels: [500, 850]\n"
    "forcings: [toa_incident_solar_radiation, day_progress_sin, day_progress_cos]\n"
    "static_variables: [land_sea_mask, geopotential_at_surface]\n";

/* Writes text to path; 0 on success. */
__attribute__((unused)) static int gct_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#endif
