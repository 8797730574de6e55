/* wxcast eval --regions (WeatherBench2's regions, infer/eval_regions.h) and --resolution (WB2's
 * scoring after conservative regridding, infer/eval_grid.h) against an independent
 * xarray computation of WB2's definitions (tests/ref/ref_eval_regions.py: WB2's region slices and
 * land weights applied with xarray .sel / .weighted as WB2 does, reading the forecast NetCDF
 * itself). The truth is a 2.5° global archive (so every box bound of WB2's regions, 347.5°,
 * 42.5°, 102.5°, −12.5° included, falls on a grid point: the bounds must be included) with t2m,
 * z500 and a static land fraction lsm (0, 1 and fractions in between); forecasts err by a pattern
 * varying with latitude, longitude and lead. Also: the default (no regions) tables have exactly
 * the former layout and equal the global rows of a run with regions; the masked adds of metrics.h
 * (wind vectors and ensembles too) equal the unmasked ones on a cut-out box and with the row mask
 * folded into the weights; a region with no grid point
 * (arctic on a regional grid) gives NaN; a land region without lsm, and an unknown region name,
 * are usage errors; "all" without lsm skips the land regions. --resolution 7.5 on the 2.5°
 * archive equals the reference run on every field regridded (wx_regrid, checked against WB2's
 * regridder in test_regrid), regions and ACC included; a finer, non-dividing or regional case is
 * a usage error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../data_prep/climatology_build.h"
#include "core/wx_fs.h"
#include "infer/eval.h"
#include "io/archive.h"
#include "io/climatology.h"
#include "io/netcdf_write.h"
#include "meteo/wx_regrid.h"
#include "eval_truth.h"
#include "wx_test.h"

#define PY "/usr/bin/python3"
#define SCRIPT WX_FIXTURE_DIR "/../ref_eval_regions.py"
#define DIR "eval_regions_test"
#define NCH 3 /* t2m, z500, lsm */

static const wx_grid *G; /* the grid eval_value reads */

/* Truth: channel 0 t2m, 1 z500, 2 lsm (the land fraction, constant in time). */
static float eval_value(int64_t t, int c, int p) {
    double lat = wx_grid_lat(G, p / G->nlon) * M_PI / 180, lon = wx_grid_lon(G, p % G->nlon) * M_PI / 180;
    if (c == 2) return (float)fmin(1, fmax(0, 0.3 + 0.9 * cos(lon) * cos(lat) + 0.4 * sin(lat)));
    double base = c ? 52000 : 280, amp = c ? 800 : 20, rise = c ? 10 : 1;
    return (float)(base + amp * cos(lat) + 3 * sin(2 * lon) + 2 * cos(lat + 3 * lon) + rise * t);
}

static wx_status fetch(void *ctx, int64_t t, size_t q0, size_t n, float *out) {
    const wx_archive_meta *m = ctx;
    int64_t P = wx_archive_points(m);
    for (size_t k = 0; k < n; k++) {
        int64_t e = (int64_t)(q0 + k);
        out[k] = eval_value(t, (int)(e / P), (int)(e % P));
    }
    return WX_OK;
}

/* A 12-record archive on grid g; with_lsm: the static lsm channel; with_clim: a climatology. */
static int make_archive(const char *dir, const wx_grid *g, int with_lsm, int with_clim,
                        wx_archive_meta *m) {
    static const char *names[NCH] = {"t2m", "z500", "lsm"}, *params[NCH] = {"2t", "z", "lsm"};
    static const char *units[NCH] = {"K", "m2 s-2", "(0 - 1)"};
    memset(m, 0, sizeof *m);
    m->nchan = with_lsm ? 3 : 2;
    m->chan = wx_calloc((size_t)m->nchan, sizeof *m->chan);
    for (int c = 0; c < m->nchan; c++) {
        snprintf(m->chan[c].name, 64, "%s", names[c]), snprintf(m->chan[c].param, 64, "%s", params[c]);
        snprintf(m->chan[c].units, 32, "%s", units[c]);
        m->chan[c].kind = c == 1 ? WX_LEVEL_PRESSURE : c == 2 ? WX_LEVEL_STATIC : WX_LEVEL_SINGLE;
        m->chan[c].level = c == 1 ? 500 : 0;
    }
    m->grid = *g;
    G = &m->grid;
    m->start = wx_time_make(2017, 1, 1, 0, 0, 0);
    m->step = 21600, m->count = 12, m->records_per_shard = 12, m->key = 7;
    m->has_stats = 1, m->stats_start = m->start, m->stats_end = m->start + 11 * m->step;
    m->diff_step = m->step;
    double **arrs[5] = {&m->mean, &m->std, &m->min, &m->max, &m->diff_std};
    for (int k = 0; k < 5; k++) {
        *arrs[k] = wx_calloc((size_t)m->nchan, sizeof(double));
        for (int c = 0; c < m->nchan; c++) (*arrs[k])[c] = 1;
    }
    return eval_write_archive_from(dir, m, with_clim ? "climatology.wxc" : NULL, fetch);
}

/* Forecast from record t0, leads 0..4 steps of t2m and z500: truth + an error varying with
 * latitude, longitude and lead (so every region scores differently). */
static float forecast_value(const wx_archive_meta *m, int64_t t0, int k, int c, int p,
                            const void *ctx) {
    (void)ctx;
    double scale = c ? 30 : 1.5;
    double lat = wx_grid_lat(&m->grid, p / m->grid.nlon) * M_PI / 180;
    double lon = wx_grid_lon(&m->grid, p % m->grid.nlon) * M_PI / 180;
    double e = scale * (0.3 + sin(lat) + 0.7 * cos(lon + 0.5 * k) + 0.4 * k * sin(2 * lat + lon));
    return (float)(eval_value(t0 + k, c, p) + e);
}

static int write_forecast(const char *path, const wx_archive_meta *m, int64_t t0) {
    return eval_write_forecast_from(path, m, t0, forecast_value, NULL, "test_eval_regions");
}

/* The inputs of the reference in dir: truth records, climatology at their valid times, the
 * layout; rg != NULL: every field regridded to grid g by it (eval --resolution), else on m's. */
static int dump_inputs(const char *dir, const wx_archive_meta *m, const wx_regrid *rg,
                       const wx_grid *g) {
    int64_t P = wx_archive_points(m), n = P * NCH, Pg = (int64_t)g->nlat * g->nlon;
    float *buf = malloc(sizeof(float) * (size_t)n), *mapped = malloc(sizeof(float) * (size_t)(Pg * NCH));
    wx_climatology *cl;
    char path[256];
    snprintf(path, sizeof path, "%s/truth.f32", dir);
    FILE *ft = fopen(path, "wb");
    snprintf(path, sizeof path, "%s/clim.f32", dir);
    FILE *fc = fopen(path, "wb");
    int ok = ft && fc && wx_climatology_open(DIR "/truth", &cl) == WX_OK;
    for (int64_t t = 0; ok && t < m->count; t++)
        for (int k = 0; ok && k < 2; k++) {
            ok = k ? wx_climatology_get_time(cl, m->start + t * m->step, buf) == WX_OK
                   : fetch((void *)m, t, 0, (size_t)n, buf) == WX_OK;
            for (int c = 0; rg && c < NCH; c++) wx_regrid_apply(rg, buf + c * P, mapped + c * Pg);
            ok = ok && fwrite(rg ? mapped : buf, sizeof(float), (size_t)(Pg * NCH), k ? fc : ft) ==
                           (size_t)(Pg * NCH);
        }
    if (ft) ok &= fclose(ft) == 0;
    if (fc) ok &= fclose(fc) == 0;
    if (ok) wx_climatology_close(cl);
    snprintf(path, sizeof path, "%s/meta.txt", dir);
    FILE *fm = fopen(path, "w");
    ok = ok && fm && fprintf(fm, "2017-01-01T00:00 %lld %lld %d %d %.17g %.17g %.17g %.17g 2\n",
                             (long long)m->step, (long long)m->count, g->nlat, g->nlon, g->lat0,
                             g->dlat, g->lon0, g->dlon) > 0;
    if (fm) ok &= fclose(fm) == 0;
    free(buf), free(mapped);
    return ok;
}

/* A forecast file of forecast_value regridded by rg to m's grid (the reference's input for
 * eval --resolution): leads 0..4, t2m and z500, as eval_write_forecast_from lays them out. */
typedef struct {
    const float *f; /* [5 leads, 2 channels, P of m's grid] */
} mapped_fc;

static float mapped_value(const wx_archive_meta *m, int64_t t0, int k, int c, int p, const void *ctx) {
    (void)t0;
    return ((const mapped_fc *)ctx)->f[((size_t)k * 2 + c) * wx_archive_points(m) + p];
}

static int write_forecast_regridded(const char *path, const wx_archive_meta *fine,
                                    const wx_archive_meta *coarse, const wx_regrid *rg, int64_t t0) {
    int64_t P = wx_archive_points(fine), Pc = wx_archive_points(coarse);
    float *f = malloc(sizeof(float) * (size_t)P), *all = malloc(sizeof(float) * (size_t)(10 * Pc));
    for (int k = 0; k <= 4; k++)
        for (int c = 0; c < 2; c++) {
            for (int64_t p = 0; p < P; p++) f[p] = forecast_value(fine, t0, k, c, (int)p, NULL);
            wx_regrid_apply(rg, f, all + (k * 2 + c) * Pc);
        }
    mapped_fc ctx = {all};
    int ok = eval_write_forecast_from(path, coarse, t0, mapped_value, &ctx, "test_eval_regions");
    free(f), free(all);
    return ok;
}

/* Compares every row of the reference with eval's cell of the same region, model, variable and
 * lead; returns the rows compared. */
static int compare_ref(const char *dir, const wx_eval_result *r, int *regions_seen) {
    char path[256];
    snprintf(path, sizeof path, "%s/ref.csv", dir);
    FILE *f = fopen(path, "r");
    if (!WX_CHECK(f != NULL, "ref.csv written")) return 0;
    char line[512], region[64], model[64], var[64];
    double lead, v[4];
    int rows = 0;
    double worst = 0;
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    while (fgets(line, sizeof line, f)) {
        for (char *p = line; *p; p++)
            if (*p == ',') *p = ' ';
        if (sscanf(line, "%63s %63s %63s %lf %lf %lf %lf %lf", region, model, var, &lead, &v[0], &v[1],
                   &v[2], &v[3]) != 8)
            continue;
        const wx_eval_cell *c = wx_eval_find_region(r, region, model, var, (int64_t)llround(lead * 3600));
        if (!WX_CHECK(c != NULL, "%s %s %s +%gh scored", region, model, var, lead)) continue;
        wx_scores s;
        wx_score_finish(&c->sums, &s);
        double got[4] = {s.rmse, s.bias, s.mae, s.acc};
        const char *what[4] = {"rmse", "bias", "mae", "acc"};
        double scale = !strcmp(var, "z500") ? 30 : 1.5; /* the error's size */
        for (int k = 0; k < 4; k++) {
            /* persistence at lead 0 is the truth itself: its ACC is 1 or 0/0 (NaN) */
            int both_nan = isnan(got[k]) && isnan(v[k]);
            double err = both_nan ? 0 : fabs(got[k] - v[k]) / (k == 3 ? 1 : scale);
            if (!(err <= worst)) worst = err;
            WX_CHECK(both_nan || err < 1e-9, "%s %s %s +%gh %s: %.12g, reference %.12g", region,
                     model, var, lead, what[k], got[k], v[k]);
        }
        for (int k = 0; k < r->nregions; k++)
            if (!strcmp(r->region_names[k], region)) regions_seen[k] = 1;
        rows++;
    }
    fclose(f);
    printf("  %d reference rows, largest difference %.3g (relative to the error scale; ACC absolute)\n",
           rows, worst);
    return rows;
}

/* The masked adds of metrics.h (deterministic, wind vector, ensemble) against the unmasked ones on
 * what the mask selects: a 0/1 box scores as the box cut out of the grid, and a mask constant
 * along each row m_j as the weights w_j·m_j. */
static void check_masked_adds(void) {
    enum { H = 9, W = 12, M = 4, P = H * W, J0 = 2, NJ = 4, I0 = 3, NI = 6 };
    static float x[8][P], ens[M * P], mask[P], rowm[P], cut[8][NJ * NI], cens[M * NJ * NI];
    double w[H], wr[H];
    unsigned s = 12345;
    for (int k = 0; k < 8; k++)
        for (int p = 0; p < P; p++) s = s * 1103515245u + 12345u, x[k][p] = (float)((s >> 8) % 2000) / 100.0f;
    for (int p = 0; p < M * P; p++) s = s * 1103515245u + 12345u, ens[p] = (float)((s >> 8) % 2000) / 100.0f;
    for (int j = 0; j < H; j++) w[j] = 0.5 + 0.1 * j, wr[j] = w[j] * (0.2 + 0.08 * j);
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            int in = j >= J0 && j < J0 + NJ && i >= I0 && i < I0 + NI;
            mask[j * W + i] = in, rowm[j * W + i] = (float)(wr[j] / w[j]);
            if (!in) continue;
            int q = (j - J0) * NI + (i - I0);
            for (int k = 0; k < 8; k++) cut[k][q] = x[k][j * W + i];
            for (int e = 0; e < M; e++) cens[e * NJ * NI + q] = ens[e * P + j * W + i];
        }
    /* rowm holds the float of wr/w: the reference weights must use that same float */
    for (int j = 0; j < H; j++) wr[j] = w[j] * (double)rowm[j * W];
    wx_score_sums a = {0}, b = {0}, c = {0};
    wx_score_add_masked(&a, w, mask, H, W, x[0], x[1], x[2]);
    wx_score_add_vector_masked(&a, w, mask, H, W, x[3], x[4], x[5], x[6]);
    wx_score_add_ensemble_masked(&a, w, mask, H, W, M, ens, x[7]);
    wx_score_add(&b, w + J0, NJ, NI, cut[0], cut[1], cut[2]);
    wx_score_add_vector(&b, w + J0, NJ, NI, cut[3], cut[4], cut[5], cut[6]);
    wx_score_add_ensemble(&b, w + J0, NJ, NI, M, cens, cut[7]);
    wx_score_add_masked(&c, w, rowm, H, W, x[0], x[1], x[2]);
    wx_score_add_vector_masked(&c, w, rowm, H, W, x[3], x[4], x[5], x[6]);
    wx_score_add_ensemble_masked(&c, w, rowm, H, W, M, ens, x[7]);
    double ga[6] = {a.sum_mse, a.sum_bias, a.sum_mae, a.sum_acc, a.sum_crps, a.sum_ens_var};
    double gb[6] = {b.sum_mse, b.sum_bias, b.sum_mae, b.sum_acc, b.sum_crps, b.sum_ens_var};
    double gc[6] = {c.sum_mse, c.sum_bias, c.sum_mae, c.sum_acc, c.sum_crps, c.sum_ens_var};
    wx_score_sums d = {0};
    wx_score_add(&d, wr, H, W, x[0], x[1], x[2]);
    wx_score_add_vector(&d, wr, H, W, x[3], x[4], x[5], x[6]);
    wx_score_add_ensemble(&d, wr, H, W, M, ens, x[7]);
    double gd[6] = {d.sum_mse, d.sum_bias, d.sum_mae, d.sum_acc, d.sum_crps, d.sum_ens_var};
    double e1 = 0, e2 = 0;
    for (int k = 0; k < 6; k++)
        e1 = fmax(e1, fabs(ga[k] - gb[k]) / fabs(gb[k])), e2 = fmax(e2, fabs(gc[k] - gd[k]) / fabs(gd[k]));
    WX_CHECK(e1 < 1e-12 && a.n == 2 && a.n_ens == 1, "0/1 box mask = the box cut out (MSE+vector, "
             "bias, MAE, ACC, CRPS, ensemble variance): largest relative difference %.3g", e1);
    WX_CHECK(e2 < 1e-12, "row mask m_j = weights w_j·m_j: largest relative difference %.3g", e2);
}

static char *slurp(const char *path) {
    char *s = NULL;
    size_t len;
    return wx_read_file(path, &s, &len) == WX_OK ? s : NULL;
}

int main(void) {
    if (access(PY, X_OK) != 0 || system(PY " -c 'import xarray, netCDF4' >/dev/null 2>&1") != 0) {
        printf("skipped: %s with xarray and netCDF4 is not available\n", PY);
        return 77;
    }
    if (system("rm -rf " DIR) != 0) printf("rm -rf " DIR " failed\n");
    check_masked_adds();
    wx_grid g;
    wx_grid_global(2.5, &g); /* 73 x 144 */
    wx_archive_meta m;
    if (!WX_CHECK(make_archive(DIR "/truth", &g, 1, 1, &m), "archive with lsm")) return wx_test_summary();
    WX_CHECK(write_forecast(DIR "/f2.nc", &m, 2) && write_forecast(DIR "/f5.nc", &m, 5), "forecasts");
    WX_CHECK(dump_inputs(DIR, &m, NULL, &m.grid), "reference inputs dumped");

    /* 1. Every region against the xarray reference. */
    const char *files[2] = {DIR "/f2.nc", DIR "/f5.nc"}, *models[2] = {"m", "m"};
    wx_eval_opts o = {.nfiles = 2, .files = files, .models = models, .truth = DIR "/truth",
                      .baselines = 1, .regions = "all"};
    wx_eval_result r;
    wx_status st = wx_eval_run(&o, &r);
    WX_CHECK(st == WX_OK, "eval --regions all: %s", st ? wx_error_message() : "ok");
    WX_CHECK(r.nregions == 16, "all: %d regions (global + 12 + 3 land)", r.nregions);
    int rc = system(PY " " SCRIPT " " DIR " " DIR "/f2.nc," DIR "/f5.nc 3");
    WX_CHECK(rc == 0, "reference script ran (status %d)", rc);
    int seen[32] = {0};
    int rows = compare_ref(DIR, &r, seen);
    /* 16 regions x 2 models (m, persistence) x 2 variables x 5 leads */
    WX_CHECK(rows == 16 * 2 * 2 * 5, "%d reference rows compared (want 320)", rows);
    int nseen = 0;
    for (int k = 0; k < r.nregions; k++) nseen += seen[k];
    WX_CHECK(nseen == 16, "all 16 regions compared (%d)", nseen);
    /* The regions differ from global and from each other (a mask that did nothing would pass a
     * reference that also ignored it; the reference applies them, this shows they matter). */
    const char *named[5] = {"tropics", "europe", "arctic", "tropics_land", "global_land"};
    const wx_eval_cell *cg = wx_eval_find(&r, "m", "z500", 4 * 21600);
    for (int k = 0; k < 5; k++) {
        const wx_eval_cell *c = wx_eval_find_region(&r, named[k], "m", "z500", 4 * 21600);
        wx_scores a, b;
        if (!WX_CHECK(c && cg, "%s z500 +24h present", named[k])) continue;
        wx_score_finish(&c->sums, &a), wx_score_finish(&cg->sums, &b);
        WX_CHECK(fabs(a.rmse - b.rmse) > 0.01 * b.rmse && a.n == 2, "%s RMSE %.6g differs from global %.6g (n %lld)",
                 named[k], a.rmse, b.rmse, (long long)a.n);
    }
    WX_CHECK(wx_eval_write_csv(&r, DIR "/all.csv") == WX_OK && wx_eval_write_json(&r, DIR "/all.json") == WX_OK,
             "tables with regions written");

    /* 2. Default: the former layout, equal to the global rows of the run with regions. */
    wx_eval_result d;
    o.regions = NULL;
    st = wx_eval_run(&o, &d);
    WX_CHECK(st == WX_OK && d.nregions == 0 && d.nrcells == 0, "eval without regions");
    WX_CHECK(d.ncells == r.ncells, "same global cells (%d, %d)", d.ncells, r.ncells);
    int differ = -1;
    for (int i = 0; i < d.ncells && i < r.ncells && differ < 0; i++)
        if (memcmp(&d.cells[i].sums, &r.cells[i].sums, sizeof d.cells[i].sums)) differ = i;
    WX_CHECK(differ < 0, "global sums bit for bit those of the run with regions (first differing "
             "cell %d)", differ);
    WX_CHECK(wx_eval_write_csv(&d, DIR "/def.csv") == WX_OK && wx_eval_write_json(&d, DIR "/def.json") == WX_OK,
             "default tables written");
    char *dc = slurp(DIR "/def.csv"), *ac = slurp(DIR "/all.csv"), *dj = slurp(DIR "/def.json"),
         *aj = slurp(DIR "/all.json");
    if (WX_CHECK(dc && ac && dj && aj, "tables read")) {
        const char *hdr = "model,variable,units,lead_hours,n,rmse,bias,mae,acc,n_ens,crps,spread,"
                          "spread_skill,spread_skill_fair\n";
        WX_CHECK(!strncmp(dc, hdr, strlen(hdr)), "default scores.csv header unchanged");
        WX_CHECK(!strstr(dj, "region"), "default scores.json has no region key");
        /* every default line + ",global" is the same line of the regional table */
        char *p = dc, *q = ac;
        int same = 1, lines = 0;
        while (*p && *q) {
            size_t lp = strcspn(p, "\n"), lq = strcspn(q, "\n");
            const char *tail = lines == 0 ? ",region" : ",global";
            same &= lq == lp + strlen(tail) && !strncmp(p, q, lp) && !strncmp(q + lp, tail, strlen(tail));
            p += lp + (p[lp] == '\n'), q += lq + (q[lq] == '\n');
            lines++;
        }
        WX_CHECK(same && *p == 0, "default scores.csv = the global rows of the regional one (%d lines)", lines);
        WX_CHECK(strstr(q, ",europe\n") && strstr(q, ",tropics_land\n") && !strstr(q, ",global\n"),
                 "the other regions' rows follow the global ones");
        /* scores.json: "scores" as without regions, then "regions" and "region_scores" */
        char *cut = strstr(aj, ",\"regions\":");
        size_t ld = strlen(dj);
        WX_CHECK(cut && (size_t)(cut - aj) == ld - 2 && !strncmp(aj, dj, ld - 2) &&
                     strstr(cut, "\"region_scores\":[{\"region\":\"tropics\",\"model\":\"m\""),
                 "scores.json: global \"scores\" unchanged, region_scores after");
    }
    free(dc), free(ac), free(dj), free(aj);
    wx_eval_result_free(&d);
    wx_eval_result_free(&r);

    /* 4. --resolution 7.5 (WB2's 1.5° scoring at test size): every field regridded from the
     * 2.5° archive before scoring. The reference scores the fields regridded by wx_regrid (itself
     * checked against WB2's regridder in test_regrid) on the 7.5° grid, lsm and climatology too. */
    wx_grid g7;
    wx_grid_global(7.5, &g7);
    wx_regrid *rg = NULL;
    wx_archive_meta m7 = m;
    m7.grid = g7;
    WX_CHECK(wx_mkdir_p(DIR "/r7") == WX_OK && wx_regrid_create(&m.grid, &g7, &rg) == WX_OK &&
                 dump_inputs(DIR "/r7", &m, rg, &g7) &&
                 write_forecast_regridded(DIR "/r7/f2.nc", &m, &m7, rg, 2) &&
                 write_forecast_regridded(DIR "/r7/f5.nc", &m, &m7, rg, 5),
             "regridded reference inputs");
    wx_regrid_free(rg);
    o.regions = "all";
    o.resolution = 7.5;
    st = wx_eval_run(&o, &r);
    WX_CHECK(st == WX_OK && r.resolution == 7.5, "eval --resolution 7.5: %s", st ? wx_error_message() : "ok");
    rc = system(PY " " SCRIPT " " DIR "/r7 " DIR "/r7/f2.nc," DIR "/r7/f5.nc 3");
    WX_CHECK(rc == 0, "reference script ran on the regridded fields (status %d)", rc);
    memset(seen, 0, sizeof seen);
    rows = st == WX_OK ? compare_ref(DIR "/r7", &r, seen) : 0;
    WX_CHECK(rows == 16 * 2 * 2 * 5, "--resolution: %d reference rows compared (want 320)", rows);
    if (st == WX_OK) {
        WX_CHECK(wx_eval_write_json(&r, DIR "/r7.json") == WX_OK, "json written");
        char *j7 = slurp(DIR "/r7.json");
        WX_CHECK(j7 && strstr(j7, "\"resolution\":7.5"), "scores.json names the resolution");
        free(j7);
        const wx_eval_cell *c7 = wx_eval_find(&r, "m", "z500", 4 * 21600);
        wx_eval_result nat;
        o.resolution = 0, o.regions = NULL;
        if (wx_eval_run(&o, &nat) == WX_OK) {
            const wx_eval_cell *cn = wx_eval_find(&nat, "m", "z500", 4 * 21600);
            wx_scores a, b;
            wx_score_finish(&c7->sums, &a), wx_score_finish(&cn->sums, &b);
            WX_CHECK(fabs(a.rmse - b.rmse) > 1e-3 * b.rmse, "7.5° RMSE %.6g differs from 2.5° %.6g",
                     a.rmse, b.rmse);
            wx_eval_result_free(&nat);
        }
        wx_eval_result_free(&r);
    }
    /* finer than the truth, not dividing 180 (a regional truth: below): usage errors */
    const struct { double res; const char *msg; } bad[] = {
        {1.0, "finer than the truth archive's grid"}, {0.7, "divides 180 and 360"}};
    for (int k = 0; k < 2; k++) {
        o.resolution = bad[k].res;
        st = wx_eval_run(&o, &r);
        WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), bad[k].msg),
                 "--resolution %g: usage error (%s)", bad[k].res, wx_error_message());
    }

    /* 3. A regional grid without the Arctic: NaN scores; "all" without lsm skips the land
     * regions; a named land region without lsm and an unknown name are usage errors. */
    wx_grid gr;
    wx_grid_make(9, 36, 40, 10, 0, 10, &gr); /* 40N..40S */
    wx_archive_meta mr;
    WX_CHECK(make_archive(DIR "/regional", &gr, 0, 0, &mr), "regional archive without lsm");
    WX_CHECK(write_forecast(DIR "/r2.nc", &mr, 2), "regional forecast");
    const char *rf[1] = {DIR "/r2.nc"};
    wx_eval_opts orr = {.nfiles = 1, .files = rf, .models = models, .truth = DIR "/regional",
                        .baselines = 0, .regions = "arctic,tropics"};
    st = wx_eval_run(&orr, &r);
    WX_CHECK(st == WX_OK, "regional grid, arctic and tropics: %s", st ? wx_error_message() : "ok");
    if (st == WX_OK) {
        const wx_eval_cell *ca = wx_eval_find_region(&r, "arctic", "m", "t2m", 21600),
                           *ct = wx_eval_find_region(&r, "tropics", "m", "t2m", 21600);
        wx_scores a = {0}, t = {0};
        if (ca) wx_score_finish(&ca->sums, &a);
        if (ct) wx_score_finish(&ct->sums, &t);
        WX_CHECK(ca && isnan(a.rmse) && isnan(a.bias) && isnan(a.mae) && a.n == 1,
                 "arctic on 40N..40S: NaN scores over 1 initial time (rmse %g, n %lld)", a.rmse, (long long)a.n);
        WX_CHECK(ct && isfinite(t.rmse) && t.rmse > 0, "tropics on 40N..40S: rmse %g", t.rmse);
        wx_eval_result_free(&r);
    }
    orr.regions = "all";
    st = wx_eval_run(&orr, &r);
    int land = 0;
    for (int k = 0; st == WX_OK && k < r.nregions; k++) land += strstr(r.region_names[k], "_land") != NULL;
    WX_CHECK(st == WX_OK && r.nregions == 13 && land == 0, "all without lsm: 13 regions, no land (%d, %d)",
             r.nregions, land);
    if (st == WX_OK) wx_eval_result_free(&r);
    orr.regions = "tropics,global_land";
    st = wx_eval_run(&orr, &r);
    WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), "--regions global_land") &&
                 strstr(wx_error_message(), "no land-sea mask"),
             "a land region without lsm: usage error (%s)", wx_error_message());
    orr.regions = NULL, orr.resolution = 20;
    st = wx_eval_run(&orr, &r);
    WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), "is not global"),
             "--resolution on a regional truth: usage error (%s)", wx_error_message());
    orr.resolution = 0;
    orr.regions = "tropics,mars";
    st = wx_eval_check_opts(&orr);
    WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), "--regions: unknown region 'mars' (known: global, tropics,") &&
                 strstr(wx_error_message(), "tropics_land, all)"),
             "unknown region: usage error (%s)", wx_error_message());
    wx_archive_meta_free(&m);
    wx_archive_meta_free(&mr);
    if (system("rm -rf " DIR) != 0) printf("rm -rf " DIR " failed\n");
    return wx_test_summary();
}
