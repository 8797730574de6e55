/* wxcast eval end to end on a tiny archive whose truth rises by a known amount per 6 h, scored
 * against forecast NetCDF files written with the product writer: a model off by a constant, a
 * perfect model, persistence (error = the truth's change over the lead) and the climatology
 * baseline (hand-computed from the triangular 61-day weights over the archive's 3 days). */
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/wx_cli.h"
#include "eval_truth.h"
#include "core/wx_fs.h"
#include "infer/eval.h"
#include "io/archive.h"
#include "io/netcdf_write.h"
#include "io/png_scorecard.h"
#include "wx_test.h"

#define DIR "eval_test"

/* Forecast from record t0 for leads 0..4 steps: truth + offset[c]. */
static int write_forecast(const char *path, const wx_archive_meta *m, int64_t t0, const double *offset) {
    return eval_write_forecast(path, m, t0, offset, 0, "test_eval");
}

static void check(const wx_eval_result *r, const char *model, const char *var, int steps, double rmse,
                  double bias, double acc, int n, double tol) {
    const wx_eval_cell *c = wx_eval_find(r, model, var, steps * 21600LL);
    if (!WX_CHECK(c != NULL, "%s %s lead %dh present", model, var, steps * 6)) return;
    wx_scores s;
    wx_score_finish(&c->sums, &s);
    WX_CHECK(fabs(s.rmse - rmse) <= tol && (isnan(bias) || fabs(s.bias - bias) <= tol) &&
                 (isnan(acc) || fabs(s.acc - acc) <= 1e-6) && s.n == n,
             "%s %s +%dh: rmse %.7g (want %g) bias %.7g (want %g) acc %.7g (want %g) n %lld (want %d)",
             model, var, steps * 6, s.rmse, rmse, s.bias, bias, s.acc, acc, (long long)s.n, n);
}


static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* An RGB PNG read with libpng's simplified API; NULL when unreadable. Caller frees. */
static uint8_t *read_rgb(const char *path, int *w, int *h) {
    png_image pi = {.version = PNG_IMAGE_VERSION};
    if (!png_image_begin_read_from_file(&pi, path)) return NULL;
    pi.format = PNG_FORMAT_RGB;
    uint8_t *buf = malloc(PNG_IMAGE_SIZE(pi));
    if (!png_image_finish_read(&pi, NULL, buf, 0, NULL)) {
        free(buf);
        return NULL;
    }
    *w = (int)pi.width, *h = (int)pi.height;
    return buf;
}

/* Pixels of colour (r, g, b) ±tol in the rectangle; their mean row in *mean_y. */
static int count_rgb(const uint8_t *img, int W, int x0, int y0, int w, int h, int r, int g, int b,
                     int tol, double *mean_y) {
    int n = 0;
    double sy = 0;
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) {
            const uint8_t *p = img + ((size_t)y * W + x) * 3;
            if (abs(p[0] - r) <= tol && abs(p[1] - g) <= tol && abs(p[2] - b) <= tol) n++, sy += y;
        }
    if (mean_y) *mean_y = n ? sy / n : NAN;
    return n;
}

/* The colour at the corner of a scorecard cell (the value text is centred, away from it). */
static int cell_is(const uint8_t *img, int W, const wx_scorecard *sc, int row, int col, double r,
                   double g, double b, double tol) {
    int x, y, w, h;
    wx_scorecard_cell_rect(sc, row, col, &x, &y, &w, &h);
    const uint8_t *p = img + ((size_t)(y + 2) * W + x + 2) * 3;
    int ok = fabs(p[0] - r) <= tol && fabs(p[1] - g) <= tol && fabs(p[2] - b) <= tol;
    if (!ok) printf("  cell (%d,%d): (%d,%d,%d), want (%g,%g,%g)\n", row, col, p[0], p[1], p[2], r, g, b);
    return ok;
}

/* Relative RMSE and scorecards: "good" has RMSE 2 (t2m) and 20 (z500) at every lead, persistence
 * RISE·k at lead k, so 100·(2 − k)/k: +100 % (6 h), 0 (12 h), −33.3 % (18 h), −50 % (24 h), and
 * the perfect model −100 %. Colours: the ColorBrewer RdBu stops (reversed), interpolated. */
static void check_scorecards(const wx_eval_result *r) {
    int good = wx_eval_model_index(r, "good"), perfect = wx_eval_model_index(r, "perfect");
    int pers = wx_eval_model_index(r, WX_EVAL_PERSISTENCE);
    WX_CHECK(good >= 0 && perfect >= 0 && pers >= 0 && wx_eval_model_index(r, "nosuch") < 0, "model indices");
    static const double want[5] = {NAN, 100, 0, -100.0 / 3, -50};
    for (int c = 0; c < 2; c++)
        for (int k = 0; k <= 4; k++) {
            double v = wx_eval_relative_rmse(r, good, pers, c, k * 21600LL);
            double vp = wx_eval_relative_rmse(r, perfect, pers, c, k * 21600LL);
            WX_CHECK(k == 0 ? isnan(v) && isnan(vp) : fabs(v - want[k]) < 1e-3 && fabs(vp + 100) < 1e-3,
                     "chan %d +%dh: relative rmse good %.6g (want %g), perfect %.6g (want -100)", c, 6 * k,
                     v, want[k], vp);
        }
    wx_rgb lo = wx_scorecard_colour(-100, 100), hi = wx_scorecard_colour(250, 100), mid = wx_scorecard_colour(0, 100);
    WX_CHECK(lo.r == 0x05 && lo.g == 0x30 && lo.b == 0x61 && hi.r == 0x67 && hi.g == 0 && hi.b == 0x1f &&
                 mid.r == 0xf7 && mid.g == 0xf7 && mid.b == 0xf7,
             "RdBu_r ends #053061, #67001f (clipped from +250 %%), centre #f7f7f7");

    const char *rows[2] = {"t2m", "z500"}, *cols[4] = {"6h", "12h", "18h", "24h"};
    double vals[8] = {0};
    wx_scorecard sc = {"", "", 2, 4, rows, cols, vals, 100};
    int W, H;
    uint8_t *img = read_rgb(DIR "/out/scorecard_good_vs_persistence.png", &W, &H);
    if (WX_CHECK(img != NULL, "scorecard_good_vs_persistence.png read")) {
        for (int c = 0; c < 2; c++) {
            WX_CHECK(cell_is(img, W, &sc, c, 0, 0x67, 0x00, 0x1f, 0) && cell_is(img, W, &sc, c, 1, 247, 247, 247, 0) &&
                         /* −33.3 %: 1/3 from #92c5de to #d1e5f0 */
                         cell_is(img, W, &sc, c, 2, 146 + 63 / 3.0, 197 + 32 / 3.0, 222 + 18 / 3.0, 1) &&
                         /* −50 %: halfway from #4393c3 to #92c5de */
                         cell_is(img, W, &sc, c, 3, (67 + 146) / 2.0, (147 + 197) / 2.0, (195 + 222) / 2.0, 1),
                     "row %s: cell colours +100 %%, 0, -33 %%, -50 %%", rows[c]);
            int x, y, w, h;
            wx_scorecard_cell_rect(&sc, c, 3, &x, &y, &w, &h);
            int text = count_rgb(img, W, x, y, w, h, 20, 20, 20, 0, NULL);
            wx_scorecard_cell_rect(&sc, c, 0, &x, &y, &w, &h);
            int white = count_rgb(img, W, x, y, w, h, 255, 255, 255, 0, NULL);
            WX_CHECK(text >= 15 && white >= 15, "row %s: values printed (%d dark text px in '-50%%', %d white "
                     "in '+100%%')", rows[c], text, white);
        }
        free(img);
    }
    img = read_rgb(DIR "/out/scorecard_perfect_vs_persistence.png", &W, &H);
    if (WX_CHECK(img != NULL, "scorecard_perfect_vs_persistence.png read")) {
        WX_CHECK(cell_is(img, W, &sc, 0, 0, 5, 48, 97, 0) && cell_is(img, W, &sc, 1, 3, 5, 48, 97, 0),
                 "perfect model: the blue end #053061");
        free(img);
    }
    /* RMSE vs lead: the two models (tab10 blue, orange) and both baselines (greys) on one plot,
     * inside the axes (70..590, 36..390; the perfect model lies on the bottom edge); good (RMSE 2)
     * above perfect (0). */
    img = read_rgb(DIR "/out/rmse_t2m.png", &W, &H);
    if (WX_CHECK(img != NULL, "rmse_t2m.png read")) {
        double yg, yp, yb;
        int ng = count_rgb(img, W, 71, 34, 519, 360, 31, 119, 180, 0, &yg);
        int np = count_rgb(img, W, 71, 34, 519, 360, 255, 127, 14, 0, &yp);
        int nb = count_rgb(img, W, 71, 34, 519, 360, 90, 90, 90, 0, &yb);
        int nc = count_rgb(img, W, 71, 34, 519, 360, 160, 160, 160, 0, NULL);
        WX_CHECK(ng > 500 && np > 500 && nb > 200 && nc > 200 && yg < yp,
                 "rmse plot: good %d px (mean row %.0f), perfect %d (row %.0f), persistence %d, climatology %d",
                 ng, yg, np, yp, nb, nc);
        free(img);
    }
}

int main(void) {
    system("rm -rf " DIR);
    wx_archive_meta m;
    eval_make_meta(&m, 2, 12, 42);
    WX_CHECK(eval_write_archive(DIR "/truth", &m, "climatology.wxc"), "archive with climatology written");
    double off_good[2] = {2, 20}, off_zero[2] = {0, 0};
    int ok = write_forecast(DIR "/good_0.nc", &m, 0, off_good) && write_forecast(DIR "/good_2.nc", &m, 2, off_good) &&
             write_forecast(DIR "/perfect_0.nc", &m, 0, off_zero) && write_forecast(DIR "/perfect_2.nc", &m, 2, off_zero);
    WX_CHECK(ok, "forecast files written");

    const char *files[4] = {DIR "/good_0.nc", DIR "/good_2.nc", DIR "/perfect_0.nc", DIR "/perfect_2.nc"};
    const char *models[4] = {"good", "good", "perfect", "perfect"};
    wx_eval_opts o = {.nfiles = 4, .files = files, .models = models, .truth = DIR "/truth", .baselines = 1};
    wx_eval_result r;
    wx_status st = wx_eval_run(&o, &r);
    WX_CHECK(st == WX_OK, "eval: %s", wx_error_message());
    if (st == WX_OK) {
        WX_CHECK(r.ninit == 2 && r.nmodels == 4 && r.has_climatology, "2 inits, 4 models (%d), climatology",
                 r.nmodels);
        for (int k = 0; k <= 4; k++) {
            check(&r, "good", "t2m", k, 2, 2, NAN, 2, 1e-4);
            check(&r, "good", "z500", k, 20, 20, NAN, 2, 2e-3);
            /* ACC: 1 for the perfect model where the truth has an anomaly; from the 2nd day on the
             * linear truth equals its symmetric-window climatology (0/0, not asserted). The good
             * model's anomalies are constant fields of the same sign: uncentred ACC 1 too. */
            check(&r, "perfect", "t2m", k, 0, 0, k < 2 ? 1 : NAN, 2, 1e-4);
            if (k < 2) check(&r, "good", "t2m", k, 2, 2, 1, 2, 1e-4);
            /* Persistence: error −RISE·k everywhere; scored once per init although two models share them. */
            check(&r, WX_EVAL_PERSISTENCE, "t2m", k, k * EVAL_CHANS[0].rise, -k * EVAL_CHANS[0].rise, NAN, 2, 1e-4);
            check(&r, WX_EVAL_PERSISTENCE, "z500", k, k * EVAL_CHANS[1].rise, -k * EVAL_CHANS[1].rise, NAN, 2, 2e-3);
        }
        /* Climatology at the valid time, lead 0 from 00 UTC day 1: records of that hour on days
         * 1, 2, 3 (offsets 0, 4, 8 steps) weighted 30, 29, 28 → offset 340/87 steps; from 12 UTC
         * day 1 (offsets 2, 6, 10): (60+174+280)/87 − 2 = 340/87 too. */
        check(&r, WX_EVAL_CLIMATOLOGY, "t2m", 0, 340.0 / 87, 340.0 / 87, NAN, 2, 1e-4);
    }
    wx_eval_result_free(&r);

    /* The command: CSV rows, JSON, plots. */
    char fl[1024];
    snprintf(fl, sizeof fl, "good=%s,%s,perfect=%s,%s", files[0], files[1], files[2], files[3]);
    char *argv[] = {"wxcast", "eval", "--forecast", fl, "--truth", DIR "/truth", "--output", DIR "/out", NULL};
    WX_CHECK(wx_cli_main(8, argv) == 0, "wxcast eval exit 0");
    char *csv = NULL;
    size_t len = 0;
    WX_CHECK(wx_read_file(DIR "/out/scores.csv", &csv, &len) == WX_OK, "scores.csv");
    int lines = 0;
    for (size_t i = 0; csv && i < len; i++) lines += csv[i] == '\n';
    /* 4 models × 2 variables × 5 leads + header. */
    WX_CHECK(lines == 41 && csv && strstr(csv, "persistence,t2m,K,24,2,4,-4,4,"), "%d csv lines", lines);
    free(csv);
    WX_CHECK(wx_eval_run(&o, &r) == WX_OK, "eval again: %s", wx_error_message());
    check_scorecards(&r);
    wx_eval_result_free(&r);
    /* --baseline: another baseline, a model, or an unknown name (usage error, exit 2) */
    char *argv2[] = {"wxcast", "eval", "--forecast", fl, "--truth", DIR "/truth", "--output", DIR "/out2",
                     "--baseline", "climatology", NULL};
    WX_CHECK(wx_cli_main(10, argv2) == 0 && exists(DIR "/out2/scorecard_good_vs_climatology.png") &&
                 exists(DIR "/out2/scorecard_persistence_vs_climatology.png"),
             "--baseline climatology: cards for the models and persistence");
    argv2[9] = "good";
    WX_CHECK(wx_cli_main(10, argv2) == 0 && exists(DIR "/out2/scorecard_perfect_vs_good.png"),
             "--baseline good");
    argv2[9] = "nosuch";
    WX_CHECK(wx_cli_main(10, argv2) == 2 && strstr(wx_error_message(), "nosuch"), "--baseline nosuch: exit 2 (%s)",
             wx_error_message());
    png_image pi = {.version = PNG_IMAGE_VERSION};
    WX_CHECK(png_image_begin_read_from_file(&pi, DIR "/out/rmse_z500.png") && pi.width == 760, "rmse plot");
    png_image_free(&pi);
    png_image pa = {.version = PNG_IMAGE_VERSION};
    WX_CHECK(png_image_begin_read_from_file(&pa, DIR "/out/acc_t2m.png"), "acc plot");
    png_image_free(&pa);
    /* A forecast on another grid is a usage error that says so (as forecast --init). */
    wx_archive_meta m2;
    eval_make_meta(&m2, 2, 12, 42);
    wx_grid_global(5.0, &m2.grid);
    write_forecast(DIR "/coarse.nc", &m2, 0, off_good);
    const char *f2[1] = {DIR "/coarse.nc"};
    wx_eval_opts o2 = {.nfiles = 1, .files = f2, .models = models, .truth = DIR "/truth", .climatology = "", .baselines = 1};
    st = wx_eval_run(&o2, &r);
    WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), "regrid the forecast"), "grid mismatch: usage error: %s", wx_error_message());
    wx_archive_meta_free(&m);
    wx_archive_meta_free(&m2);
    return wx_test_summary();
}
