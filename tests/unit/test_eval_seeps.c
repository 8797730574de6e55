/* SEEPS in wxcast eval and the SEEPS climatology, against an independent xarray computation of
 * WeatherBench2's definitions (tests/ref/ref_seeps.py: WB2's SEEPSThreshold inside its rolling
 * climatology code path, xarray's weighted quantile; WB2's SpatialSEEPS/SEEPS scoring, reading
 * the forecast NetCDF itself) on the synthetic two-year precipitation archive of
 * eval_seeps_data.h:
 * - the builder's dry fraction and wet threshold at every day of year, hour and point equal the
 *   reference's (NaN at the same places);
 * - eval's SEEPS of a model, persistence and the climatology baseline, globally and in the
 *   tropics, equal the reference's at every lead;
 * - a perfect forecast scores 0 (RMSE 0 too); scores.csv gets a "seeps" column, scores.json a
 *   "seeps" key per precipitation score and a top-level "seeps" description;
 * - a file whose precipitation is named total_precipitation_24hr (a 6 h climatology) is scored
 *   without SEEPS, with one warning naming it;
 * - --resolution 90: SEEPS on the coarser grid equals a recomputation from the regridded forecast,
 *   truth, wet threshold and p1 (a perfect forecast 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval_seeps_data.h"
#include "infer/eval.h"
#include "io/climatology.h"
#include "io/netcdf_write.h"
#include "meteo/wx_regrid.h"
#include "wx_test.h"

#define PY "/usr/bin/python3"
#define SCRIPT WX_FIXTURE_DIR "/../ref_seeps.py"
#define DIR "eval_seeps_test"

static wx_archive_meta M;

/* Model "m": truth shifted by one record at every third point, 0 at every seventh, (float)0.1 mm
 * at every eleventh, NaN at point 5 of lead 2; "perfect": the truth. */
static float fc_value(int kind, int64_t t0, int k, int c, int p) {
    float o = sd_value(&M, t0 + k, c, p);
    if (kind == 1 || c == 0) return c == 0 && kind != 1 ? o + 1.0f : o;
    if (p == 5 && k == 2) return NAN;
    if (p % 7 == 0) return 0.0f;
    if (p % 11 == 0) return (float)1e-4;
    if (p % 3 == 0) return sd_value(&M, t0 + k + 1, c, p);
    return o;
}

/* A forecast file from record t0, leads 0..4 records; tp named tp_name. */
static int write_forecast(const char *path, int64_t t0, int kind, const char *tp_name) {
    wx_nc_var vars[2] = {{"t2m", "K", "air_temperature", "2 metre temperature", 0},
                         {tp_name, "m", "lwe_thickness_of_precipitation_amount",
                          "Total precipitation", 0}};
    wx_nc_layout L = {M.grid, 0, NULL, 2, vars, 1, M.start + t0 * M.step, "test", "test_eval_seeps", 0};
    wx_nc_writer w;
    if (wx_nc_writer_open(&w, path, &L) != WX_OK) return 0;
    int64_t P = wx_archive_points(&M);
    float *f = malloc(sizeof(float) * (size_t)P);
    int ok = 1;
    for (int k = 0; ok && k <= 4; k++)
        for (int c = 0; ok && c < 2; c++) {
            for (int64_t p = 0; p < P; p++) f[p] = fc_value(kind, t0, k, c, (int)p);
            ok = wx_nc_writer_put(&w, k, M.start + (t0 + k) * M.step, c, 0, f) == WX_OK;
        }
    free(f);
    if (!ok) {
        wx_nc_writer_abort(&w);
        return 0;
    }
    return wx_nc_writer_close(&w) == WX_OK;
}

/* Dumps tp and the climatology baseline's tp for the reference. */
static int write_dumps(void) {
    int64_t P = wx_archive_points(&M);
    FILE *ft = fopen(DIR "/truth.f32", "wb"), *fc = fopen(DIR "/climmean.f32", "wb");
    wx_climatology *c;
    if (!ft || !fc || wx_climatology_open(DIR "/arc", &c) != WX_OK) return 0;
    float *rec = malloc(sizeof(float) * (size_t)(2 * P));
    int ok = 1;
    for (int64_t t = 0; ok && t < M.count; t++) {
        ok = sd_fetch(&M, t, (size_t)P, (size_t)P, rec) == WX_OK && fwrite(rec, 4, (size_t)P, ft) == (size_t)P;
        ok = ok && wx_climatology_get_time(c, M.start + t * M.step, rec) == WX_OK &&
             fwrite(rec + P, 4, (size_t)P, fc) == (size_t)P;
    }
    wx_climatology_close(c);
    free(rec);
    fclose(ft), fclose(fc);
    FILE *fm = fopen(DIR "/meta.txt", "w");
    if (!fm) return 0;
    fprintf(fm, "2019-01-01T00:00:00 %d %d %d %d %.17g %.17g %.17g %.17g %.17g 61\n", SD_STEP,
            (int)M.count, M.grid.nlat, M.grid.nlon, M.grid.lat0, M.grid.dlat, M.grid.lon0,
            M.grid.dlon, 1e-4);
    fclose(fm);
    return ok;
}

/* The builder's SEEPS fields against ref_clim.f32. */
static void check_climatology(void) {
    wx_climatology *c;
    if (!WX_CHECK(wx_climatology_open(DIR "/arc", &c) == WX_OK, "open: %s", wx_error_message())) return;
    const wx_clim_header *h = wx_climatology_header(c);
    WX_CHECK(h->version == 2 && h->seeps_chan == 1 && h->seeps_period_s == 21600 &&
                 h->seeps_dry == 1e-4 && h->nhours == 2, "header: version %u, SEEPS channel %d, "
             "period %lld, dry %g, %u hours", h->version, h->seeps_chan,
             (long long)h->seeps_period_s, h->seeps_dry, h->nhours);
    size_t P = (size_t)wx_archive_points(&M), n = 366 * 2 * 2 * P, got = 0;
    float *ref = malloc(sizeof(float) * n), *dry = malloc(sizeof(float) * P), *wet = malloc(sizeof(float) * P);
    FILE *f = fopen(DIR "/ref_clim.f32", "rb");
    if (f) got = fread(ref, 4, n, f), fclose(f);
    WX_CHECK(got == n, "ref_clim.f32: %zu of %zu values", got, n);
    double max_df = 0, max_rel = 0;
    int nan_mismatch = 0, nnan = 0, bad = 0;
    for (int d = 1; d <= 366 && got == n; d++)
        for (int k = 0; k < 2; k++) {
            if (wx_climatology_seeps_get(c, d, h->hours[k], dry, wet) != WX_OK) {
                bad++;
                continue;
            }
            const float *rd = ref + ((size_t)(d - 1) * 2 + k) * 2 * P, *rw = rd + P;
            for (size_t p = 0; p < P; p++) {
                nan_mismatch += isnan(dry[p]) != isnan(rd[p]) || isnan(wet[p]) != isnan(rw[p]);
                nnan += isnan(wet[p]);
                if (!isnan(rd[p])) max_df = fmax(max_df, fabs(dry[p] - rd[p]));
                if (!isnan(rw[p]) && !isnan(wet[p]))
                    max_rel = fmax(max_rel, fabs(wet[p] - rw[p]) / fmax(fabs(rw[p]), 1e-12));
            }
        }
    printf("SEEPS climatology vs reference: max |dry fraction diff| %.3g, max rel wet threshold "
           "diff %.3g, %d NaN thresholds\n", max_df, max_rel, nnan);
    WX_CHECK(bad == 0 && nan_mismatch == 0, "%d read errors, %d NaN mismatches", bad, nan_mismatch);
    WX_CHECK(max_df <= 1e-7, "dry fraction: max diff %.3g (float32 of the same ratio)", max_df);
    WX_CHECK(max_rel <= 2e-7, "wet threshold: max rel diff %.3g (float32 rounding)", max_rel);
    WX_CHECK(nnan > 0, "the always-dry column has NaN thresholds somewhere");
    wx_climatology_close(c);
    free(ref), free(dry), free(wet);
}

/* SEEPS of model "m" at lead 24 h on the 90° grid, recomputed here: forecast, truth, the wet
 * threshold at the valid time and p1 regridded with wx_regrid (test_regrid holds it to WB2's
 * regridder), each point scored with wx_metrics_seeps_point, the cell-area mean over finite
 * points, then the mean over the two initial times. */
static double seeps_regridded(const int64_t *inits) {
    wx_grid to;
    wx_regrid *rg = NULL;
    wx_climatology *c = NULL;
    if (wx_grid_global(90, &to) != WX_OK || wx_regrid_create(&M.grid, &to, &rg) != WX_OK ||
        wx_climatology_open(DIR "/arc", &c) != WX_OK)
        return NAN;
    int64_t P = wx_archive_points(&M), Q = (int64_t)to.nlat * to.nlon;
    float a[5][64], b[5][64]; /* forecast, truth, wet, p1, dry fraction: source; regridded */
    double w[8], sum = 0;
    wx_grid_area_weights(&to, w);
    int ok = P <= 64 && Q <= 64 && wx_climatology_seeps_p1(c, a[3]) == WX_OK;
    for (int i = 0; ok && i < 2; i++) {
        int64_t t = inits[i] + 2;
        wx_time v = M.start + t * M.step;
        for (int64_t p = 0; p < P; p++) a[0][p] = fc_value(0, inits[i], 2, 1, (int)p), a[1][p] = sd_value(&M, t, 1, (int)p);
        ok = wx_climatology_seeps_get(c, wx_time_day_of_year(v), wx_time_hour_of_day(v), a[4], a[2]) == WX_OK;
        for (int k = 0; k < 4; k++) wx_regrid_apply(rg, a[k], b[k]);
        double num = 0, den = 0;
        for (int64_t q = 0; q < Q; q++) {
            double sp = wx_metrics_seeps_point(b[0][q], b[1][q], b[2][q], b[3][q], 1e-4);
            if (!isnan(sp)) num += w[q / to.nlon] * sp, den += w[q / to.nlon];
        }
        sum += num / den;
    }
    wx_regrid_free(rg);
    wx_climatology_close(c);
    return ok ? sum / 2 : NAN;
}

static wx_eval_opts EO;
static wx_eval_result R;
static int run_eval(void *ctx) {
    (void)ctx;
    return wx_eval_run(&EO, &R) == WX_OK;
}

static double seeps_of(const char *region, const char *model, double lead_h, int64_t *n) {
    const wx_eval_cell *c = wx_eval_find_region(&R, region, model, "tp", (int64_t)(lead_h * 3600));
    wx_scores s = {0};
    if (c) wx_score_finish(&c->sums, &s);
    if (n) *n = c ? s.n_seeps : -1;
    return c ? s.seeps : NAN;
}

static void check_against_reference(void) {
    FILE *f = fopen(DIR "/ref.csv", "r");
    if (!WX_CHECK(f != NULL, "ref.csv")) return;
    char line[256], region[32], model[32];
    double lead, ref, maxd = 0;
    int rows = 0, missing = 0;
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    while (fgets(line, sizeof line, f)) {
        for (char *q = line; *q; q++)
            if (*q == ',') *q = ' ';
        if (sscanf(line, "%31s %31s %lf %lf", region, model, &lead, &ref) != 4) continue;
        double v = seeps_of(region, model, lead, NULL);
        if (isnan(v) || isnan(ref)) {
            missing += isnan(v) != isnan(ref);
            continue;
        }
        maxd = fmax(maxd, fabs(v - ref));
        rows++;
    }
    fclose(f);
    printf("SEEPS vs reference: %d (region, model, lead) rows, max |diff| %.3g\n", rows, maxd);
    WX_CHECK(rows == 2 * 3 * 5 && missing == 0, "%d rows compared (want 30), %d NaN mismatches", rows, missing);
    WX_CHECK(maxd <= 1e-6, "max |SEEPS - reference| %.3g > 1e-6", maxd);
}

int main(void) {
    if (system("rm -rf " DIR) != 0) printf("rm -rf " DIR " failed\n");
    if (!WX_CHECK(sd_make_archive(DIR "/arc", &M, SD_COUNT, 21600, 0), "archive")) return wx_test_summary();
    int64_t inits[2] = {900, 1101};
    char files[6][128];
    const char *models[6] = {"m", "m", "perfect", "perfect", "p24", "p24"}, *fl[6];
    for (int i = 0; i < 6; i++) { /* every model from the same two initial times: shared baselines */
        snprintf(files[i], sizeof files[i], DIR "/f%d.nc", i);
        fl[i] = files[i];
        WX_CHECK(write_forecast(files[i], inits[i % 2], i < 2 ? 0 : i < 4 ? 1 : 0,
                                i < 4 ? "tp" : "total_precipitation_24hr"), "forecast %d: %s", i,
                 wx_error_message());
    }
    EO = (wx_eval_opts){.nfiles = 6, .files = fl, .models = models, .truth = DIR "/arc",
                        .baselines = 1, .regions = "tropics"};
    int ok = sd_with_stderr(DIR "/err.txt", run_eval, NULL);
    if (!WX_CHECK(ok, "eval: %s", wx_error_message())) return wx_test_summary();
    WX_CHECK(R.has_seeps && R.seeps_chan == 1 && R.seeps_dry == 1e-4 && R.seeps_period_s == 21600,
             "SEEPS on tp, 0.1 mm, 6 h");
    /* 2. perfect forecast: 0 at every lead, in both regions; RMSE 0 */
    int zero = 1;
    for (int k = 0; k <= 4; k++)
        for (int g = 0; g < 2; g++) {
            int64_t n;
            double v = seeps_of(g ? "tropics" : "global", "perfect", 12.0 * k, &n);
            zero &= v == 0 && n == 2;
        }
    const wx_eval_cell *pc = wx_eval_find(&R, "perfect", "tp", 24 * 3600);
    wx_scores ps = {0};
    if (pc) wx_score_finish(&pc->sums, &ps);
    WX_CHECK(zero && pc && ps.rmse == 0, "perfect forecast: SEEPS 0 at every lead and region");
    /* 3. total_precipitation_24hr against a 6 h climatology: scored, but not with SEEPS */
    int64_t n24;
    seeps_of("global", "p24", 12, &n24);
    const wx_eval_cell *c24 = wx_eval_find(&R, "p24", "tp", 12 * 3600);
    WX_CHECK(c24 && c24->sums.n == 2 && n24 == 0, "p24: tp scored (n %lld) without SEEPS (n %lld)",
             c24 ? (long long)c24->sums.n : -1LL, (long long)n24);
    WX_CHECK(sd_count_in(DIR "/err.txt", "f4.nc: total_precipitation_24hr is accumulated over "
                         "1d, the climatology's SEEPS fields over 6h: no SEEPS for this file") == 1 &&
                 sd_count_in(DIR "/err.txt", "warning:") == 4 &&
                 sd_count_in(DIR "/err.txt", "eval: m: tp: 2 forecast values are NaN or infinite "
                             "where the truth is finite, at 1 of 5 leads (the first +24 h)") == 1,
             "one period warning per file, one for the NaN forecast points of m and of p24 (see "
             DIR "/err.txt)");
    /* 4. tables */
    WX_CHECK(wx_eval_write_csv(&R, DIR "/scores.csv") == WX_OK && wx_eval_write_json(&R, DIR "/scores.json") == WX_OK,
             "write tables");
    WX_CHECK(sd_count_in(DIR "/scores.csv", "spread_skill_fair,seeps,region\n") == 1 &&
                 sd_count_in(DIR "/scores.csv", "\nperfect,tp,m,24,2,0,0,0,1,0,,,,,0,global\n") == 1,
             "scores.csv: seeps column before region");
    WX_CHECK(sd_count_in(DIR "/scores.json", "\"seeps\":{\"variable\":\"tp\",\"accumulation_hours\":6,"
                         "\"dry_threshold\":0.0001") == 1 && sd_count_in(DIR "/scores.json", "\"seeps\":0}") >= 10,
             "scores.json: the SEEPS description and perfect scores 0");
    /* 5. the reference */
    if (access(PY, X_OK) != 0 || system(PY " -c 'import xarray, netCDF4' >/dev/null 2>&1") != 0) {
        printf("reference skipped: %s with xarray and netCDF4 is not available\n", PY);
    } else {
        WX_CHECK(write_dumps(), "dumps: %s", wx_error_message());
        int rc = system(PY " " SCRIPT " " DIR " " DIR "/f0.nc," DIR "/f1.nc");
        if (WX_CHECK(rc == 0, "ref_seeps.py exit %d", rc)) {
            check_climatology();
            check_against_reference();
        }
    }
    wx_eval_result_free(&R);
    /* 6. --resolution 90: the SEEPS fields regridded as the mean climatology */
    EO.regions = NULL, EO.resolution = 90;
    ok = sd_with_stderr(DIR "/err90.txt", run_eval, NULL);
    if (WX_CHECK(ok, "eval --resolution 90: %s", wx_error_message())) {
        int64_t n;
        double p = seeps_of("global", "perfect", 24, &n), mv = seeps_of("global", "m", 24, NULL);
        double want = seeps_regridded(inits);
        WX_CHECK(R.has_seeps && p == 0 && n == 2 && isfinite(mv) && mv > 0 && fabs(mv - want) < 1e-12,
                 "--resolution 90: perfect %g, model %.17g (recomputed on regridded fields %.17g)",
                 p, mv, want);
        wx_eval_result_free(&R);
    }
    wx_archive_meta_free(&M);
    if (wx_test_failed == 0 && system("rm -rf " DIR) != 0) printf("cleanup failed\n");
    return wx_test_summary();
}
