/* wxcast eval's option checks (all before any file is read), baselines scored on each model's own
 * initial times, duplicate files, and the FourCastNet convention (src/infer/eval.c, eval_opts.c,
 * eval_plots.c) on the analytic truth archive of eval_truth.h: t2m rises 1 K and z500 10 m2 s-2
 * per 6 h, so persistence errs by exactly that per step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "eval_truth.h"
#include "infer/eval.h"
#include "infer/metrics.h"
#include "io/netcdf_write.h"
#include "wx_test.h"

#define DIR "eval_opts_test"

/* Forecast from record t0 for leads 0..4 steps: truth + offset + pattern·sin(lat) (both channels). */
static int write_forecast_p(const char *path, const wx_archive_meta *m, int64_t t0, double offset,
                            double pattern) {
    const double off[2] = {offset, offset};
    return eval_write_forecast(path, m, t0, off, pattern, "test_eval_opts");
}

static int write_forecast(const char *path, const wx_archive_meta *m, int64_t t0, double offset) {
    return write_forecast_p(path, m, t0, offset, 0);
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static wx_scores score(const wx_eval_result *r, const char *model, const char *var, int steps) {
    wx_scores s = {.n = -1, .rmse = NAN};
    const wx_eval_cell *c = wx_eval_find(r, model, var, steps * 21600LL);
    if (c) wx_score_finish(&c->sums, &s);
    return s;
}

/* Every usage error is found before the truth archive is even opened (a missing archive would
 * otherwise be the error), and leaves the result empty. */
static void test_usage(void) {
    const char *f1[1] = {DIR "/a_0.nc"}, *m1[1] = {"a"};
    wx_eval_opts o = {.nfiles = 1, .files = f1, .models = m1, .truth = DIR "/nosuch", .baselines = 1};
    wx_eval_result r;
    struct {
        const char *what, *baseline, *climatology, *want;
        int baselines, no_clim;
    } cases[] = {
        {"unknown --baseline", "foo", NULL, "--baseline foo: not among the scored models (a, persistence", 1, 0},
        {"--baseline persistence with --no-baselines", "persistence", NULL, "--no-baselines", 0, 0},
        {"--baseline climatology with --no-baselines", "climatology", NULL, "--no-baselines", 0, 0},
        {"--baseline climatology with --no-climatology", "climatology", NULL, "--no-climatology", 1, 1},
        {"--climatology with --no-climatology", NULL, DIR "/truth", "contradict", 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.baseline = cases[i].baseline, o.climatology = cases[i].climatology;
        o.baselines = cases[i].baselines, o.no_climatology = cases[i].no_clim;
        wx_status st = wx_eval_run(&o, &r);
        WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), cases[i].want) && r.ncells == 0,
                 "%s: usage error before opening anything: %s", cases[i].what, wx_error_message());
    }
    o = (wx_eval_opts){.nfiles = 1, .files = f1, .models = m1, .truth = DIR "/nosuch", .baselines = 1,
                       .convention = 7};
    WX_CHECK(wx_eval_run(&o, &r) == WX_ERR_USAGE, "unknown convention: %s", wx_error_message());
    int conv = -1;
    WX_CHECK(wx_eval_convention_parse("fourcastnet", &conv) == WX_OK && conv == WX_EVAL_FOURCASTNET &&
                 wx_eval_convention_parse("wb2", &conv) == WX_OK && conv == WX_EVAL_WB2 &&
                 wx_eval_convention_parse("nvidia", &conv) == WX_ERR_USAGE,
             "convention names wb2, fourcastnet");
    const char *mp[1] = {"persistence"};
    o = (wx_eval_opts){.nfiles = 1, .files = f1, .models = mp, .truth = DIR "/nosuch", .baselines = 1};
    WX_CHECK(wx_eval_run(&o, &r) == WX_ERR_USAGE && strstr(wx_error_message(), "model name 'persistence'"),
             "a model named like a baseline: %s", wx_error_message());
    /* The same file twice, also under another spelling of its path: its initial time would count
     * twice (n = 2 while "1 initial times" is reported). */
    const char *f2[2] = {DIR "/a_0.nc", DIR "/a_0.nc"}, *f3[2] = {DIR "/a_0.nc", DIR "/./a_0.nc"};
    const char *m2[2] = {"a", "a"}, *m2b[2] = {"a", "b"};
    o = (wx_eval_opts){.nfiles = 2, .files = f2, .models = m2, .truth = DIR "/nosuch", .baselines = 1};
    WX_CHECK(wx_eval_run(&o, &r) == WX_ERR_USAGE && strstr(wx_error_message(), "listed twice"),
             "a file listed twice: %s", wx_error_message());
    o.files = f3, o.models = m2b;
    WX_CHECK(wx_eval_run(&o, &r) == WX_ERR_USAGE && strstr(wx_error_message(), "listed twice"),
             "a file listed twice under another path (and model): %s", wx_error_message());
    /* Two files of one model from one initial time: found before scoring. */
    const char *f4[2] = {DIR "/a_0.nc", DIR "/a_0_copy.nc"};
    o = (wx_eval_opts){.nfiles = 2, .files = f4, .models = m2, .truth = DIR "/truth", .baselines = 1};
    WX_CHECK(wx_eval_run(&o, &r) == WX_ERR_USAGE && strstr(wx_error_message(), "are both from initial "
                                                                                "time 2017-01-01T00:00 for model 'a'"),
             "two files of model a from one initial time: %s", wx_error_message());
    /* --baseline climatology with a truth archive that has none: after reading its manifest,
     * before scoring. */
    o = (wx_eval_opts){.nfiles = 1, .files = f1, .models = m1, .truth = DIR "/truth_noclim", .baselines = 1,
                       .baseline = "climatology"};
    WX_CHECK(wx_eval_run(&o, &r) == WX_ERR_USAGE && strstr(wx_error_message(), "has no climatology"),
             "--baseline climatology without one: %s", wx_error_message());
    o.baseline = "a";
    wx_status st = wx_eval_run(&o, &r);
    WX_CHECK(st == WX_OK, "--baseline a (a model): %s", st ? wx_error_message() : "ok");
    wx_eval_result_free(&r);
}

/* Model a from 00 UTC, model b from 06 UTC (one initial time each): WB2 compares on the same
 * initial times, so each model's baselines are scored on its own (n = 1), not pooled (n = 2). */
static void test_per_model_baselines(void) {
    const char *files[2] = {DIR "/a_0.nc", DIR "/b_1.nc"}, *models[2] = {"a", "b"};
    wx_eval_opts o = {.nfiles = 2, .files = files, .models = models, .truth = DIR "/truth", .baselines = 1};
    wx_eval_result r;
    wx_status st = wx_eval_run(&o, &r);
    if (!WX_CHECK(st == WX_OK, "eval a@00Z, b@06Z: %s", st ? wx_error_message() : "ok")) return;
    WX_CHECK(r.ninit == 2 && r.baselines_per_model == 1 && r.nmodels == 6,
             "2 initial times, per-model baseline rows, 6 rows (%d)", r.nmodels);
    WX_CHECK(wx_eval_find(&r, WX_EVAL_PERSISTENCE, "t2m", 21600) == NULL, "no pooled persistence row");
    for (int k = 1; k <= 4; k++) {
        wx_scores a = score(&r, "a", "t2m", k), pa = score(&r, "persistence@a", "t2m", k);
        wx_scores b = score(&r, "b", "t2m", k), pb = score(&r, "persistence@b", "t2m", k);
        WX_CHECK(a.n == 1 && b.n == 1 && pa.n == 1 && pb.n == 1 && fabs(pa.rmse - k) < 1e-4 &&
                     fabs(pb.rmse - k) < 1e-4 && score(&r, "climatology@a", "t2m", k).n == 1,
                 "+%dh: n a %lld, b %lld, persistence@a %lld (rmse %.6g, want %d), persistence@b %lld", 6 * k,
                 (long long)a.n, (long long)b.n, (long long)pa.n, pa.rmse, k, (long long)pb.n);
    }
    int ia = wx_eval_model_index(&r, "a"), ipa = wx_eval_model_index(&r, "persistence@a");
    WX_CHECK(fabs(wx_eval_relative_rmse(&r, ia, ipa, 0, 21600) - 100) < 1e-3,
             "a vs its persistence at +6h: +100 %% (RMSE 2 vs 1)");
    WX_CHECK(wx_eval_model_index(&r, WX_EVAL_PERSISTENCE) >= 0, "\"persistence\" names its per-model rows");
    int n = 0;
    st = wx_eval_write_scorecards(&r, WX_EVAL_PERSISTENCE, DIR, &n);
    WX_CHECK(st == WX_OK && n == 4 && exists(DIR "/scorecard_a_vs_persistence.png") &&
                 exists(DIR "/scorecard_b_vs_persistence.png") &&
                 exists(DIR "/scorecard_climatology@a_vs_persistence.png") &&
                 !exists(DIR "/scorecard_persistence@b_vs_persistence.png"),
             "scorecards against each model's own persistence: %d (want 4): %s", n, st ? wx_error_message() : "");
    st = wx_eval_write_scorecards(&r, "a", DIR, &n);
    WX_CHECK(st == WX_OK && n == 3 && exists(DIR "/scorecard_b_vs_a.png") &&
                 exists(DIR "/scorecard_persistence@a_vs_a.png") && !exists(DIR "/scorecard_persistence@b_vs_a.png"),
             "scorecards against model a: b and a's own baselines (%d, want 3)", n);
    wx_eval_result_free(&r);

    /* The same initial times for both models: one shared row, each initial time scored once. */
    const char *same[2] = {DIR "/a_0.nc", DIR "/b_0.nc"};
    o.files = same;
    st = wx_eval_run(&o, &r);
    if (WX_CHECK(st == WX_OK, "eval a, b both from 00Z: %s", st ? wx_error_message() : "ok")) {
        wx_scores p = score(&r, WX_EVAL_PERSISTENCE, "t2m", 2);
        WX_CHECK(r.ninit == 1 && r.baselines_per_model == 0 && r.nmodels == 4 && p.n == 1 && fabs(p.rmse - 2) < 1e-4,
                 "shared rows: %d rows, persistence +12h n %lld rmse %.6g", r.nmodels, (long long)p.n, p.rmse);
    }
    wx_eval_result_free(&r);
}

/* NVlabs' convention: RMSE = mean over initial times of each one's RMSE (errors 2 and 4 → 3, where
 * WB2's root after the mean gives sqrt(10)); ACC against the time-mean climatology with the
 * cos-latitude weights. */
static void test_fourcastnet(const wx_archive_meta *m) {
    const char *files[2] = {DIR "/a_0.nc", DIR "/a4_2.nc"}, *models[2] = {"a", "a"};
    wx_eval_opts o = {.nfiles = 2, .files = files, .models = models, .truth = DIR "/truth", .baselines = 1};
    wx_eval_result wb, fc;
    wx_status s1 = wx_eval_run(&o, &wb);
    o.convention = WX_EVAL_FOURCASTNET;
    wx_status s2 = wx_eval_run(&o, &fc);
    if (!WX_CHECK(s1 == WX_OK && s2 == WX_OK, "eval wb2 and fourcastnet: %s", wx_error_message())) return;
    wx_scores a = score(&wb, "a", "t2m", 1), b = score(&fc, "a", "t2m", 1);
    WX_CHECK(fabs(a.rmse - sqrt(10)) < 1e-4 && fabs(b.rmse - 3) < 1e-4 && fc.convention == WX_EVAL_FOURCASTNET,
             "rmse: wb2 %.7g (want sqrt 10), fourcastnet %.7g (want 3)", a.rmse, b.rmse);
    wx_eval_result_free(&wb);
    wx_eval_result_free(&fc);
    /* ACC at lead 0 of each initial time against the time mean, recomputed here from the
     * climatology's fields and NVlabs' weights: errors 1 + 3·sin(lat) and 2 + 3·sin(lat) (the
     * truth's anomalies are uniform, so a constant error would give ACC ±1). */
    const char *pf[2] = {DIR "/p_0.nc", DIR "/p_2.nc"};
    o.files = pf, o.convention = WX_EVAL_WB2;
    s1 = wx_eval_run(&o, &wb);
    o.convention = WX_EVAL_FOURCASTNET;
    s2 = wx_eval_run(&o, &fc);
    if (!WX_CHECK(s1 == WX_OK && s2 == WX_OK, "eval wb2 and fourcastnet: %s", wx_error_message())) return;
    wx_climatology *clim;
    if (!WX_CHECK(wx_climatology_open(DIR "/truth", &clim) == WX_OK, "climatology: %s", wx_error_message())) return;
    const wx_clim_header *h = wx_climatology_header(clim);
    int64_t P = wx_archive_points(m);
    double *sum = calloc((size_t)P, sizeof(double)), *cnt = calloc((size_t)P, sizeof(double));
    float *buf = malloc(sizeof(float) * (size_t)(2 * P)), *cm = malloc(sizeof(float) * (size_t)P);
    for (int d = 1; d <= 366; d++)
        for (uint32_t k = 0; k < h->nhours; k++) {
            wx_climatology_get(clim, d, h->hours[k], buf);
            for (int64_t p = 0; p < P; p++)
                if (isfinite(buf[p])) sum[p] += d == 366 ? 0.25 * buf[p] : buf[p], cnt[p] += d == 366 ? 0.25 : 1;
        }
    for (int64_t p = 0; p < P; p++) cm[p] = (float)(sum[p] / cnt[p]);
    wx_climatology_close(clim);
    double *w = malloc(sizeof(double) * (size_t)m->grid.nlat), acc = 0;
    for (int j = 0; j < m->grid.nlat; j++) /* NVlabs: nlat·cos(90 − j·180/(nlat−1)) / Σcos */
        w[j] = cos((90.0 - j * 180.0 / (m->grid.nlat - 1)) * M_PI / 180);
    double ws = 0;
    for (int j = 0; j < m->grid.nlat; j++) ws += w[j];
    for (int j = 0; j < m->grid.nlat; j++) w[j] *= m->grid.nlat / ws;
    static const int t0[2] = {0, 2};
    static const double off[2] = {1, 2};
    for (int i = 0; i < 2; i++) {
        double sfo = 0, sff = 0, soo = 0;
        for (int64_t p = 0; p < P; p++) {
            double lat = wx_grid_lat(&m->grid, (int)(p / m->grid.nlon));
            double o_ = eval_truth(t0[i], 0, &m->grid, (int)p), f_ = o_ + off[i] + 3 * sin(lat * M_PI / 180);
            double wj = w[p / m->grid.nlon], fa = (float)f_ - cm[p], oa = (float)o_ - cm[p];
            sfo += wj * fa * oa, sff += wj * fa * fa, soo += wj * oa * oa;
        }
        acc += sfo / sqrt(sff * soo) / 2;
    }
    wx_scores c0 = score(&fc, "a", "t2m", 0), w0 = score(&wb, "a", "t2m", 0);
    printf("acc at lead 0: fourcastnet %.9g (recomputed %.9g), wb2 %.9g\n", c0.acc, acc, w0.acc);
    WX_CHECK(fabs(c0.acc - acc) < 1e-5 && fabs(w0.acc - acc) > 1e-3,
             "fourcastnet acc at lead 0 %.9g (want %.7g against the time mean; wb2's %.7g)", c0.acc, acc, w0.acc);
    free(sum), free(cnt), free(buf), free(cm), free(w);
    wx_eval_result_free(&wb);
    wx_eval_result_free(&fc);
}

/* WB2's wind-vector RMSE for the u500/v500 pair of a 5-channel truth: a forecast off by
 * (+3, +4) m/s has vector RMSE 5 at every lead; persistence errs by the truth's rise per step,
 * (0.5, 0.25) m/s, so sqrt(0.5² + 0.25²)·k at lead k; bias and MAE are not defined. */
static void test_wind_vector(void) {
    wx_archive_meta m;
    eval_make_meta(&m, 5, 8, 9);
    WX_CHECK(eval_write_archive(DIR "/truth5", &m, "climatology.wxc"), "5-channel archive written");
    double lev = 500;
    wx_nc_var vars[4] = {{"t2m", "K", "air_temperature", "2 metre temperature", 0},
                         {"z", "m2 s-2", "geopotential", "Geopotential", 1},
                         {"u", "m s-1", "eastward_wind", "U component of wind", 1},
                         {"v", "m s-1", "northward_wind", "V component of wind", 1}};
    static const int chan[4] = {0, 1, 3, 4};
    static const double off[4] = {0, 0, 3, 4};
    wx_nc_layout L = {m.grid, 1, &lev, 4, vars, 1, m.start, "test", "test_eval_opts", 0};
    wx_nc_writer w;
    int ok = wx_nc_writer_open(&w, DIR "/wind_0.nc", &L) == WX_OK;
    int64_t P = wx_archive_points(&m);
    float *f = malloc(sizeof(float) * (size_t)P);
    for (int k = 0; ok && k <= 3; k++)
        for (int v = 0; ok && v < 4; v++) {
            for (int64_t p = 0; p < P; p++) f[p] = (float)(eval_truth(k, chan[v], &m.grid, (int)p) + off[v]);
            ok = wx_nc_writer_put(&w, k, m.start + k * m.step, v, 0, f) == WX_OK;
        }
    free(f);
    ok = ok && wx_nc_writer_close(&w) == WX_OK;
    if (!WX_CHECK(ok, "wind forecast written: %s", ok ? "" : wx_error_message())) return;
    const char *files[1] = {DIR "/wind_0.nc"}, *models[1] = {"w"};
    wx_eval_opts o = {.nfiles = 1, .files = files, .models = models, .truth = DIR "/truth5", .baselines = 1};
    wx_eval_result r;
    wx_status st = wx_eval_run(&o, &r);
    if (!WX_CHECK(st == WX_OK, "eval with a u/v pair: %s", st ? wx_error_message() : "ok")) return;
    WX_CHECK(r.nchan == 6 && r.nchan_truth == 5 && !strcmp(r.chan_names[5], "wv500") &&
                 !strcmp(r.chan_units[5], "m s-1"),
             "a derived channel wv500 (m s-1) after the 5 truth channels (%d channels)", r.nchan);
    for (int k = 0; k <= 3; k++) {
        wx_scores a = score(&r, "w", "wv500", k), p = score(&r, WX_EVAL_PERSISTENCE, "wv500", k);
        double want = k * sqrt(0.5 * 0.5 + 0.25 * 0.25);
        WX_CHECK(a.n == 1 && fabs(a.rmse - 5) < 1e-4 && isnan(a.bias) && isnan(a.mae) && isnan(a.acc) &&
                     p.n == 1 && fabs(p.rmse - want) < 1e-4,
                 "+%dh: wv500 rmse %.7g (want 5; bias %g), persistence %.7g (want %.7g)", 6 * k, a.rmse,
                 a.bias, p.rmse, want);
    }
    /* plots: wind vectors have an RMSE plot and no (empty) ACC plot; u500 has both */
    WX_CHECK(wx_mkdir_p(DIR "/wplots") == WX_OK && wx_eval_write_plots(&r, DIR "/wplots") == WX_OK &&
                 access(DIR "/wplots/rmse_wv500.png", F_OK) == 0 &&
                 access(DIR "/wplots/acc_u500.png", F_OK) == 0 &&
                 access(DIR "/wplots/acc_wv500.png", F_OK) != 0,
             "rmse_wv500.png and acc_u500.png written, no acc_wv500.png");
    wx_eval_result_free(&r);
    wx_archive_meta_free(&m);
}

int main(void) {
    (void)system("rm -rf " DIR);
    wx_archive_meta m, m2;
    eval_make_meta(&m, 2, 12, 42);
    eval_make_meta(&m2, 2, 12, 42);
    WX_CHECK(eval_write_archive(DIR "/truth", &m, "climatology.wxc"), "archive with climatology written");
    WX_CHECK(eval_write_archive(DIR "/truth_noclim", &m2, NULL), "archive without climatology written");
    WX_CHECK(write_forecast(DIR "/a_0.nc", &m, 0, 2) && write_forecast(DIR "/a_0_copy.nc", &m, 0, 2) &&
                 write_forecast(DIR "/b_1.nc", &m, 1, 2) && write_forecast(DIR "/b_0.nc", &m, 0, 2) &&
                 write_forecast(DIR "/a4_2.nc", &m, 2, 4) && write_forecast_p(DIR "/p_0.nc", &m, 0, 1, 3) &&
                 write_forecast_p(DIR "/p_2.nc", &m, 2, 2, 3),
             "forecast files written");
    test_usage();
    test_per_model_baselines();
    test_fourcastnet(&m);
    test_wind_vector();
    wx_archive_meta_free(&m);
    wx_archive_meta_free(&m2);
    return wx_test_summary();
}
