/* Forecast product writing throughput (docs/benchmarks.md, run by tests/bench/bench_products.sh):
 * a 0.25° (721×1440) forecast of FourCastNet's 20 channels, lead 0 plus STEPS 6-hourly steps,
 * written through the product writer (infer/forecast_write.h) as NetCDF (plain or deflate 4) or
 * GRIB2 (16-bit grid_simple or grid_ccsds); and the truth archive eval scores it against.
 *
 * Fields: per channel a smooth base (climate-like values in physical units) plus a small
 * hash noise in the low bits, as real float32 analyses have (so deflate and CCSDS see realistic
 * entropy, not constant fields); record t is the base rolled east by 3 columns per step. The
 * archive's record t is the forecast's field at t shifted by one more column (non-zero errors).
 * Only the writer calls (open, put, close with fsync and rename) are timed (wall and CPU).
 *
 *   bench_products write nc|nc-deflate|grib-simple|grib-ccsds OUT STEPS [INIT_RECORD]
 *   bench_products archive DIR RECORDS
 * Prints one JSON line: mode, MB of float32 fields, seconds, MB/s, bytes written. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/wx_fs.h"
#include "infer/forecast_init.h"
#include "infer/forecast_write.h"
#include "io/archive.h"

#define NCH 20
static const char *CHANNELS[NCH] = {"u10",  "v10",  "t2m",  "sp",   "msl",  "t850", "u1000",
                                    "v1000", "z1000", "u850", "v850", "z850", "u500", "v500",
                                    "z500", "t500", "z50",  "r500", "r850", "tcwv"};
static const double BASE[NCH] = {0, 0, 278, 96000, 101000, 272, 0, 0, 800, 0, 0, 14000, 0, 0,
                                 54000, 252, 200000, 50, 70, 20};
static const double AMP[NCH] = {8, 6, 30, 3000, 2000, 25, 8, 6, 600, 10, 8, 900, 15, 12,
                                3000, 20, 3000, 30, 25, 25};

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wall and CPU seconds of the writer calls: on a loaded machine CPU time is the steadier figure. */
static double wall, cpu, wall0, cpu0;
static void tic(void) { wall0 = clock_s(CLOCK_MONOTONIC), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID); }
static void toc(void) {
    wall += clock_s(CLOCK_MONOTONIC) - wall0, cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
}

static uint32_t hash(uint32_t x) {
    x ^= x >> 16, x *= 0x7feb352dU, x ^= x >> 15, x *= 0x846ca68bU, x ^= x >> 16;
    return x;
}

/* base: [NCH, nlat, nlon] */
static float *make_base(const wx_grid *g) {
    size_t P = (size_t)g->nlat * g->nlon;
    float *b = malloc(sizeof(float) * P * NCH);
    for (int c = 0; c < NCH; c++)
        for (int j = 0; j < g->nlat; j++) {
            double lat = wx_grid_lat(g, j) * M_PI / 180;
            for (int i = 0; i < g->nlon; i++) {
                double lon = wx_grid_lon(g, i) * M_PI / 180;
                double v = BASE[c] + AMP[c] * (cos(lat) * cos(2 * lat + c) +
                                               0.3 * sin(3 * lon + c) * cos(lat) +
                                               0.1 * sin(11 * lon + 7 * lat + c));
                double noise = (hash((uint32_t)((c * g->nlat + j) * g->nlon + i)) / 4294967296.0 - 0.5);
                b[(size_t)c * P + (size_t)j * g->nlon + i] = (float)(v + 1e-3 * AMP[c] * noise);
            }
        }
    return b;
}

/* out = base rolled east by `shift` columns. out, base: [NCH, nlat, nlon] */
static void roll(const wx_grid *g, const float *base, int shift, float *out) {
    int n = g->nlon;
    shift = ((shift % n) + n) % n;
    for (size_t r = 0; r < (size_t)NCH * g->nlat; r++) {
        const float *s = base + r * n;
        float *d = out + r * n;
        memcpy(d + shift, s, sizeof(float) * (size_t)(n - shift));
        memcpy(d, s + n - shift, sizeof(float) * (size_t)shift);
    }
}

static int channels(wx_archive_channel *ch) {
    for (int c = 0; c < NCH; c++)
        if (wx_forecast_channel_from_name(CHANNELS[c], 21600, &ch[c]) != WX_OK) {
            fprintf(stderr, "channel %s: %s\n", CHANNELS[c], wx_error_message());
            return 0;
        }
    return 1;
}

static int fail(const char *what) {
    fprintf(stderr, "bench_products: %s: %s\n", what, wx_error_message());
    return 1;
}

static int cmd_write(const char *mode, const char *out, int steps, int init_rec) {
    wx_grid g;
    wx_grid_global(0.25, &g);
    wx_archive_channel ch[NCH];
    if (!channels(ch)) return 1;
    wx_forecast_write_opts o = {.step_s = 21600, .source = "bench_products"};
    if (!strcmp(mode, "nc") || !strcmp(mode, "nc-deflate")) {
        o.netcdf = out;
        o.deflate = strcmp(mode, "nc") ? 4 : 0;
    } else if (!strcmp(mode, "grib-simple") || !strcmp(mode, "grib-ccsds")) {
        o.grib_dir = out;
        o.grib_prefix = "bench";
        o.grib_packing = strcmp(mode, "grib-simple") ? WX_GRIB_CCSDS : WX_GRIB_SIMPLE;
        o.grib_bits = 16;
    } else {
        fprintf(stderr, "bench_products: unknown mode %s\n", mode);
        return 2;
    }
    size_t P = (size_t)g.nlat * g.nlon;
    float *base = make_base(&g), *f = malloc(sizeof(float) * P * NCH);
    wx_time t0 = wx_time_make(2018, 1, 1, 0, 0, 0) + (wx_time)init_rec * 21600;
    wx_forecast_writer w;
    tic();
    if (wx_forecast_writer_open_opts(&w, &o, &g, NCH, ch, t0) != WX_OK) return fail("open");
    toc();
    for (int k = 0; k <= steps; k++) {
        roll(&g, base, 3 * (init_rec + k), f);
        tic();
        if (wx_forecast_writer_put(&w, t0 + (wx_time)k * 21600, f) != WX_OK) return fail("put");
        toc();
    }
    tic();
    if (wx_forecast_writer_close(&w) != WX_OK) return fail("close");
    toc();
    int64_t bytes = 0, sz;
    char p[4096];
    if (o.netcdf) {
        if (wx_file_size(out, &bytes) != WX_OK) return fail("size");
    } else
        for (int k = 0; k < 2; k++) {
            snprintf(p, sizeof p, "%s/bench_%s.grib2", out, k ? "pl" : "sfc");
            if (wx_file_size(p, &sz) != WX_OK) return fail("size");
            bytes += sz;
        }
    double mb = (double)P * NCH * (steps + 1) * 4 / 1e6;
    printf("{\"mode\": \"%s\", \"steps\": %d, \"channels\": %d, \"mb_float32\": %.1f, \"seconds\": %.2f, "
           "\"mb_s\": %.1f, \"cpu_seconds\": %.2f, \"mb_per_cpu_s\": %.1f, \"bytes_out\": %lld}\n", mode,
           steps, NCH, mb, wall, mb / wall, cpu, mb / cpu, (long long)bytes);
    free(base), free(f);
    return 0;
}

static int cmd_archive(const char *dir, int records) {
    wx_archive_meta m;
    memset(&m, 0, sizeof m);
    wx_grid_global(0.25, &m.grid);
    m.nchan = NCH;
    m.chan = calloc(NCH, sizeof *m.chan);
    if (!channels(m.chan)) return 1;
    m.start = wx_time_make(2018, 1, 1, 0, 0, 0);
    m.step = 21600;
    m.count = records;
    m.records_per_shard = records;
    m.key = 1;
    size_t P = (size_t)m.grid.nlat * m.grid.nlon;
    float *base = make_base(&m.grid), *f = malloc(sizeof(float) * P * NCH);
    wx_shard_writer *w;
    if (wx_mkdir_p(dir) != WX_OK || wx_shard_writer_open(dir, 0, &m, &w) != WX_OK) return fail("archive");
    for (int t = 0; t < records; t++) {
        roll(&m.grid, base, 3 * t + 1, f);
        if (wx_shard_writer_put(w, f) != WX_OK) return fail("archive put");
    }
    if (wx_shard_writer_commit(w) != WX_OK || wx_archive_write_manifest(dir, &m) != WX_OK)
        return fail("archive commit");
    free(base), free(f);
    wx_archive_meta_free(&m);
    printf("{\"archive\": \"%s\", \"records\": %d}\n", dir, records);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "write"))
        return cmd_write(argv[2], argv[3], atoi(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
    if (argc == 4 && !strcmp(argv[1], "archive")) return cmd_archive(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: bench_products write nc|nc-deflate|grib-simple|grib-ccsds OUT STEPS "
                    "[INIT_RECORD]\n       bench_products archive DIR RECORDS\n");
    return 2;
}
