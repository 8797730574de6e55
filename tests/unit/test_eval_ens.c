/* wxcast eval of an ensemble file (a `realization` axis, as the forecast writer makes it): fair
 * CRPS and the spread-skill ratio per variable and lead, against hand-computed values.
 *
 * Truth as in test_eval.c (t2m rising 1 K per 6 h). Members m = 0, 1, 2 are truth + s·d_m with
 * d = (−1, 0.5, 2) and s = k + 1 at lead k (k = 0..4 steps), from two initial times. Every point
 * has the same errors, so area weights drop out and, per lead (by hand):
 *   ensemble mean error = s·(−1 + 0.5 + 2)/3 = 0.5 s           → RMSE = bias = 0.5 s
 *   fair CRPS = s·[(1 + 0.5 + 2)/3 − (2·(1.5 + 3 + 1.5))/(2·3·2)] = s·(7/6 − 1) = s/6
 *   spread = sqrt(var(d; ddof 1))·s = sqrt(((−1.5)² + 0² + 1.5²)/2)·s = 1.5 s
 *   spread/skill = 1.5 s / 0.5 s = 3;  fair = 3·sqrt(4/3) = 2·sqrt(3)
 * A deterministic file of the same run keeps n_ens = 0 and no CRPS. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wx_cli.h"
#include "eval_truth.h"
#include "core/wx_fs.h"
#include "infer/eval.h"
#include "io/archive.h"
#include "io/netcdf_write.h"
#include "wx_test.h"

#define DIR "eval_ens_test"
static const double D[3] = {-1.0, 0.5, 2.0};

/* t2m from record t0, leads 0..4 steps: members > 0 as an ensemble, else member 1 alone. */
static int write_forecast(const char *path, const wx_archive_meta *m, int64_t t0, int members) {
    wx_nc_var var = {"t2m", "K", "air_temperature", "2 metre temperature", 0};
    wx_nc_layout L = {m->grid, 0, NULL, 1, &var, 1, m->start + t0 * m->step, "test", "test_eval_ens", 0};
    wx_nc_layout_ext ext = {NULL, 0, NULL, members};
    wx_nc_writer w;
    if (wx_nc_writer_open_ext(&w, path, &L, "time", &ext) != WX_OK) return 0;
    int64_t P = wx_archive_points(m);
    float *f = malloc(sizeof(float) * (size_t)P);
    int ok = 1;
    for (int k = 0; ok && k <= 4; k++)
        for (int e = 0; ok && e < (members ? members : 1); e++) {
            double d = D[members ? e : 1] * (k + 1);
            for (int64_t p = 0; p < P; p++) f[p] = (float)(eval_truth(t0 + k, 0, &m->grid, (int)p) + d);
            wx_time v = m->start + (t0 + k) * m->step;
            ok = (members ? wx_nc_writer_put_member(&w, k, v, 0, 0, e, f) : wx_nc_writer_put(&w, k, v, 0, 0, f)) == WX_OK;
        }
    free(f);
    if (!ok) {
        printf("forecast: %s\n", wx_error_message());
        wx_nc_writer_abort(&w);
        return 0;
    }
    return wx_nc_writer_close(&w) == WX_OK;
}

int main(void) {
    system("rm -rf " DIR);
    wx_archive_meta m;
    eval_make_meta(&m, 2, 12, 42);
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
        WX_CHECK(r.ninit == 2 && r.nmodels == 2, "2 inits (%lld), 2 models (%d)", (long long)r.ninit, r.nmodels);
        for (int k = 0; k <= 4; k++) {
            double s = k + 1;
            const wx_eval_cell *c = wx_eval_find(&r, "ens", "t2m", k * 21600LL);
            if (!WX_CHECK(c != NULL, "ens t2m +%dh present", 6 * k)) continue;
            wx_scores e;
            wx_score_finish(&c->sums, &e);
            WX_CHECK(e.n == 2 && e.n_ens == 2, "+%dh: n %lld n_ens %lld (want 2, 2)", 6 * k, (long long)e.n,
                     (long long)e.n_ens);
            WX_CHECK(fabs(e.rmse - 0.5 * s) < 1e-4 && fabs(e.bias - 0.5 * s) < 1e-4,
                     "+%dh: ensemble-mean rmse %.7g bias %.7g (want %g)", 6 * k, e.rmse, e.bias, 0.5 * s);
            WX_CHECK(fabs(e.crps - s / 6) < 1e-4, "+%dh: crps %.7g (want %.7g)", 6 * k, e.crps, s / 6);
            WX_CHECK(fabs(e.spread - 1.5 * s) < 1e-4, "+%dh: spread %.7g (want %g)", 6 * k, e.spread, 1.5 * s);
            WX_CHECK(fabs(e.spread_skill - 3) < 1e-3 && fabs(e.spread_skill_fair - 2 * sqrt(3.0)) < 1e-3,
                     "+%dh: spread/skill %.7g (want 3), fair %.7g (want %.7g)", 6 * k, e.spread_skill,
                     e.spread_skill_fair, 2 * sqrt(3.0));
            const wx_eval_cell *dc = wx_eval_find(&r, "det", "t2m", k * 21600LL);
            if (!WX_CHECK(dc != NULL, "det t2m +%dh present", 6 * k)) continue;
            wx_score_finish(&dc->sums, &e);
            WX_CHECK(e.n == 2 && e.n_ens == 0 && isnan(e.crps) && fabs(e.rmse - 0.5 * s) < 1e-4,
                     "+%dh det: n %lld n_ens %lld crps %g rmse %.7g", 6 * k, (long long)e.n,
                     (long long)e.n_ens, e.crps, e.rmse);
        }
    }
    wx_eval_result_free(&r);

    /* The command writes the ensemble columns. */
    char fl[1024];
    snprintf(fl, sizeof fl, "ens=%s,%s,det=%s,%s", files[0], files[1], files[2], files[3]);
    char *argv[] = {"wxcast", "eval", "--forecast", fl, "--truth", DIR "/truth", "--output", DIR "/out",
                    "--no-baselines", NULL};
    WX_CHECK(wx_cli_main(9, argv) == 0, "wxcast eval exit 0: %s", wx_error_message());
    char *csv = NULL, *json = NULL;
    size_t len = 0;
    WX_CHECK(wx_read_file(DIR "/out/scores.csv", &csv, &len) == WX_OK, "scores.csv");
    /* Lead 6 h (s = 2): n_ens 2, CRPS 1/3; the deterministic row ends with n_ens 0 and empties. */
    char *ens = csv ? strstr(csv, "\nens,t2m,K,6,2,") : NULL, *det = csv ? strstr(csv, "\ndet,t2m,K,6,2,") : NULL;
    char *ens_end = ens ? strchr(ens + 1, '\n') : NULL, *det_end = det ? strchr(det + 1, '\n') : NULL;
    char *crps = ens ? strstr(ens, ",,2,0.33333") : NULL; /* acc empty (no climatology), n_ens, crps */
    WX_CHECK(csv && strstr(csv, "acc,n_ens,crps,spread,spread_skill,spread_skill_fair\n") && crps &&
                 crps < ens_end && det_end && !strncmp(det_end - 6, ",0,,,,", 6),
             "csv rows with the ensemble columns:\n%.600s", csv ? csv : "");
    WX_CHECK(wx_read_file(DIR "/out/scores.json", &json, &len) == WX_OK && strstr(json, "\"spread_skill\":3,") &&
                 strstr(json, "\"crps\":0.333333333,"),
             "json has crps and spread_skill");
    free(csv), free(json);
    wx_archive_meta_free(&m);
    return wx_test_summary();
}
