/* wxcast eval of forecast files written by the product writer (infer/forecast_write.h) with
 * pressure-level channels: the ensemble layout keeps one variable per pressure channel ("z500",
 * "t850": no level axis beside realization, CDO reads ≤ 4 dimensions) and the deterministic one
 * puts them on a `level` axis ("z", "t"); eval must score z500 and t850 from both.
 *
 * Truth (eval_truth.h): channel c rises EVAL_CHANS[c].rise per 6 h. Ensemble members m = 0, 1, 2
 * are truth + s·SC[c]·d_m with d = (−1, 0.5, 2), s = k + 1 at lead k (k = 0..3 steps), from two
 * initial times. Every
 * point has the same errors, so area weights drop out; per lead, by hand (as test_eval_ens.c):
 *   ensemble-mean error = 0.5·s·SC     → RMSE = bias = 0.5·s·SC
 *   fair CRPS = s·SC·[(1 + 0.5 + 2)/3 − 2·(1.5 + 3 + 1.5)/(2·3·2)] = s·SC/6
 *   spread = sqrt(((−1.5)² + 0² + 1.5²)/2)·s·SC = 1.5·s·SC,  spread/skill = 3
 * The deterministic file is truth + OFF[c]: RMSE = bias = OFF[c], n_ens = 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wx_cli.h"
#include "eval_truth.h"
#include "core/wx_fs.h"
#include "infer/eval.h"
#include "infer/forecast_write.h"
#include "io/archive.h"
#include "wx_test.h"

#define DIR "eval_ens_pl_test"
#define NCH 3
#define NLEAD 4
static const double D[3] = {-1.0, 0.5, 2.0};
static const double SC[NCH] = {1.0, 10.0, 0.5}, OFF[NCH] = {2, 30, -1};

/* Through the product writer: members > 0 an ensemble, 0 the deterministic truth + OFF. */
static int write_forecast(const char *path, const wx_archive_meta *m, int64_t t0, int members) {
    wx_forecast_write_opts o = {.netcdf = path, .members = members, .step_s = m->step};
    wx_forecast_writer fw;
    if (wx_forecast_writer_open_opts(&fw, &o, &m->grid, NCH, m->chan, m->start + t0 * m->step) != WX_OK)
        return 0;
    int64_t P = wx_archive_points(m);
    float *f = malloc(sizeof(float) * (size_t)(P * NCH));
    int ok = 1;
    for (int k = 0; ok && k < NLEAD; k++)
        for (int e = 0; ok && e < (members ? members : 1); e++) {
            for (int c = 0; c < NCH; c++) {
                double d = members ? D[e] * (k + 1) * SC[c] : OFF[c];
                for (int64_t p = 0; p < P; p++) f[c * P + p] = (float)(eval_truth(t0 + k, c, &m->grid, (int)p) + d);
            }
            ok = wx_forecast_writer_put_member(&fw, m->start + (t0 + k) * m->step, e, f) == WX_OK;
        }
    free(f);
    if (!ok) {
        printf("forecast: %s\n", wx_error_message());
        wx_forecast_writer_abort(&fw);
        return 0;
    }
    return wx_forecast_writer_close(&fw) == WX_OK;
}

/* The crps column (11th) of the CSV row starting with `row`, NaN when absent. */
static double csv_crps(const char *csv, const char *row) {
    const char *p = csv ? strstr(csv, row) : NULL;
    for (int col = 0; p && col < 10; col++) {
        p = strpbrk(p + 1, ",\n");
        if (p && *p == '\n') p = NULL;
    }
    return p ? strtod(p + 1, NULL) : NAN;
}

int main(void) {
    system("rm -rf " DIR);
    wx_archive_meta m;
    eval_make_meta(&m, NCH, 8, 7);
    WX_CHECK(eval_write_archive(DIR "/truth", &m, NULL), "archive written");
    int ok = write_forecast(DIR "/ens_0.nc", &m, 0, 3) && write_forecast(DIR "/ens_2.nc", &m, 2, 3) &&
             write_forecast(DIR "/det_0.nc", &m, 0, 0) && write_forecast(DIR "/det_2.nc", &m, 2, 0);
    WX_CHECK(ok, "forecast files written: %s", ok ? "" : wx_error_message());
    const char *files[4] = {DIR "/ens_0.nc", DIR "/ens_2.nc", DIR "/det_0.nc", DIR "/det_2.nc"};
    const char *models[4] = {"ens", "ens", "det", "det"};
    wx_eval_opts o = {.nfiles = 4, .files = files, .models = models, .truth = DIR "/truth", .climatology = ""};
    wx_eval_result r;
    wx_status st = wx_eval_run(&o, &r);
    WX_CHECK(st == WX_OK, "eval: %s", wx_error_message());
    if (st == WX_OK) {
        WX_CHECK(r.ninit == 2 && r.nmodels == 2 && r.ncells == 2 * NCH * NLEAD,
                 "2 inits (%lld), 2 models (%d), %d cells (want %d)", (long long)r.ninit, r.nmodels,
                 r.ncells, 2 * NCH * NLEAD);
        for (int c = 0; c < NCH; c++)
            for (int k = 0; k < NLEAD; k++) {
                double s = (k + 1) * SC[c], tol = 2e-4 * SC[c] * (c == 1 ? 10 : 1);
                const wx_eval_cell *ce = wx_eval_find(&r, "ens", EVAL_CHANS[c].name, k * 21600LL);
                if (!WX_CHECK(ce != NULL, "ens %s +%dh scored", EVAL_CHANS[c].name, 6 * k)) continue;
                wx_scores e;
                wx_score_finish(&ce->sums, &e);
                WX_CHECK(e.n == 2 && e.n_ens == 2 && fabs(e.rmse - 0.5 * s) < tol && fabs(e.bias - 0.5 * s) < tol,
                         "ens %s +%dh: n %lld n_ens %lld rmse %.7g bias %.7g (want %g)", EVAL_CHANS[c].name, 6 * k,
                         (long long)e.n, (long long)e.n_ens, e.rmse, e.bias, 0.5 * s);
                WX_CHECK(fabs(e.crps - s / 6) < tol && fabs(e.spread - 1.5 * s) < tol,
                         "ens %s +%dh: crps %.7g (want %.7g) spread %.7g (want %g)", EVAL_CHANS[c].name, 6 * k,
                         e.crps, s / 6, e.spread, 1.5 * s);
                WX_CHECK(fabs(e.spread_skill - 3) < 2e-3, "ens %s +%dh: spread/skill %.7g (want 3)",
                         EVAL_CHANS[c].name, 6 * k, e.spread_skill);
                const wx_eval_cell *cd = wx_eval_find(&r, "det", EVAL_CHANS[c].name, k * 21600LL);
                if (!WX_CHECK(cd != NULL, "det %s +%dh scored", EVAL_CHANS[c].name, 6 * k)) continue;
                wx_score_finish(&cd->sums, &e);
                WX_CHECK(e.n == 2 && e.n_ens == 0 && fabs(e.rmse - fabs(OFF[c])) < tol &&
                             fabs(e.bias - OFF[c]) < tol,
                         "det %s +%dh: rmse %.7g bias %.7g (want %g)", EVAL_CHANS[c].name, 6 * k, e.rmse, e.bias, OFF[c]);
            }
    }
    wx_eval_result_free(&r);

    /* The command's CSV has the ensemble's z500 and t850 rows with CRPS: +6 h, s = 2·SC. */
    char fl[512];
    snprintf(fl, sizeof fl, "ens=%s,%s", files[0], files[1]);
    char *argv[] = {"wxcast", "eval", "--forecast", fl, "--truth", DIR "/truth", "--output", DIR "/out",
                    "--no-baselines", NULL};
    WX_CHECK(wx_cli_main(9, argv) == 0, "wxcast eval exit 0: %s", wx_error_message());
    char *csv = NULL;
    size_t len = 0;
    WX_CHECK(wx_read_file(DIR "/out/scores.csv", &csv, &len) == WX_OK, "scores.csv");
    double zc = csv_crps(csv, "\nens,z500,m2 s-2,6,"), tc = csv_crps(csv, "\nens,t850,K,6,");
    WX_CHECK(fabs(zc - 10.0 / 3) < 2e-3 && fabs(tc - 1.0 / 6) < 1e-4,
             "csv crps z500 +6h %.7g (want %.7g), t850 %.7g (want %.7g)", zc, 10.0 / 3, tc, 1.0 / 6);
    free(csv);
    wx_archive_meta_free(&m);
    system("rm -rf " DIR);
    return wx_test_summary();
}
