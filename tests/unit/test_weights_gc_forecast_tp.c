/* A forecast from an imported DeepMind GraphCast checkpoint whose task has a target-only variable,
 * as GraphCast_small/operational's precipitation: `import-weights model.npz --config
 * graphcast_tiny_tp.yaml --data data.yaml` then one forecast step, against DeepMind's own
 * predictor — normalization.InputsAndResiduals around graphcast.GraphCast, JAX float64, physical
 * output (tests/ref/ref_graphcast_forecast.py, fixtures gc_forecast_tp.wxfx and gc_forecast_tp/).
 * Beyond test_weights_gc_forecast this holds the target-only path (total_precipitation_6hr is no
 * input; DeepMind de-normalises its prediction by mean/stddev, with no residual and no
 * diffs_stddev), the year progress forcings and the geopotential_at_surface static. init.nc
 * holds tp too (DeepMind's datasets do), which a residual on tp would add. DeepMind's tp is > 0
 * at every point here, so wxcast's clamp of tp at 0 in the forecast file (docs/weights.md) does
 * not act. Grid points whose mesh->grid triangle is not GraphCast's are left out and counted
 * (test_weights_gc_forecast). */
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/wx_cli.h"
#include "core/wx_yaml.h"
#include "infer/forecast.h"
#include "models/graphcast.h"
#include "ops/wx_ctx.h"
#include "wx_fixture.h"
#include "wx_test.h"

#define DIR WX_FIXTURE_DIR "/gc_forecast_tp"
#define TP_YAML WX_FIXTURE_DIR "/../../../configs/model/graphcast_tiny_tp.yaml"

enum { HW = 9 * 16, NOUT = 5 };

static char tmp[64];

/* var at lead 1 of a forecast file into y (HW); with levels, at 500 and 850 hPa in that order
 * (the file lists its levels from the top down). */
static int read_lead1(const char *path, const char *var, int levels, float *y) {
    int nc, v, lv, ok;
    if (nc_open(path, NC_NOWRITE, &nc) != NC_NOERR) return 0;
    ok = nc_inq_varid(nc, var, &v) == NC_NOERR;
    if (ok && levels) {
        double lev[2];
        ok = nc_inq_varid(nc, "level", &lv) == NC_NOERR && nc_get_var_double(nc, lv, lev) == NC_NOERR;
        for (size_t k = 0; ok && k < 2; k++) {
            size_t start[4] = {1, k, 0, 0}, count[4] = {1, 1, 9, 16};
            int slot = fabs(lev[k] - 500) < 1e-9 ? 0 : fabs(lev[k] - 850) < 1e-9 ? 1 : -1;
            ok = slot >= 0 && nc_get_vara_float(nc, v, start, count, y + slot * HW) == NC_NOERR;
        }
    } else if (ok) {
        size_t start[3] = {1, 0, 0}, count[3] = {1, 9, 16};
        ok = nc_get_vara_float(nc, v, start, count, y) == NC_NOERR;
    }
    nc_close(nc);
    return ok;
}

static void test_forecast(void) {
    char ck[128], out[128];
    snprintf(ck, sizeof ck, "%s/gc.ckpt", tmp);
    snprintf(out, sizeof out, "%s/f.nc", tmp);
    char *argv[] = {"import-weights", DIR "/model.npz", "--config", TP_YAML, "--data",
                    DIR "/data.yaml", "--output", ck, NULL};
    if (!WX_CHECK(wx_cmd_import_weights(8, argv) == 0, "import with --data: %s",
                  wx_error_message()))
        return;
    wx_forecast_opts fo = {.model = ck, .init = DIR "/init.nc", .steps = 1, .output = out,
                           .threads = 1};
    if (!WX_CHECK(wx_forecast_run_ext(&fo, NULL) == WX_OK, "forecast: %s", wx_error_message()))
        return;
    wx_fixture *f = wx_fixture_load("gc_forecast_tp");
    if (!WX_CHECK(f != NULL, "fixture gc_forecast_tp")) return;
    const wx_fixture_tensor *yr = wx_fixture_get(f, "y"), *sr = wx_fixture_get(f, "m2g_senders");
    if (!WX_CHECK(yr->size == NOUT * HW, "fixture y holds %d channels", NOUT)) {
        wx_fixture_free(f);
        return;
    }
    float y[NOUT * HW];
    WX_CHECK(read_lead1(out, "t2m", 0, y) && read_lead1(out, "msl", 0, y + HW) &&
             read_lead1(out, "tp", 0, y + 2 * HW) && read_lead1(out, "z", 1, y + 3 * HW),
             "read %s", out);
    wx_yaml *yy = NULL;
    wx_gc_config c;
    WX_CHECK(wx_yaml_load_file(TP_YAML, &yy) == WX_OK && wx_gc_config_parse(yy, "", &c) == WX_OK,
             "config: %s", wx_error_message());
    wx_yaml_free(yy);
    WX_CHECK(c.in_channels == 25 && c.out_channels == NOUT,
             "tiny tp config: 25 inputs (no tp), 5 outputs (got %lld, %lld)",
             (long long)c.in_channels, (long long)c.out_channels);
    wx_ctx *ctx = wx_ctx_create(1);
    wx_gc *m = wx_gc_create(ctx, wx_backend_cpu(), &c, 5, 1, 0, 0);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) return;
    static const char *const names[NOUT] = {"t2m", "msl", "tp", "z500", "z850"};
    int differ = 0, tp_neg = 0;
    double err[NOUT] = {0}, ymax[NOUT] = {0};
    for (int g = 0; g < HW; g++) {
        int same = 1;
        for (int k = 0; k < 3; k++) {
            int found = 0;
            for (int j = 0; j < 3; j++)
                found |= m->g.m2g.senders[3 * g + k] == (int32_t)sr->data[3 * g + j];
            same &= found;
        }
        differ += !same;
        tp_neg += yr->data[2 * HW + g] <= 0;
        for (int o = 0; o < NOUT; o++) {
            ymax[o] = fmax(ymax[o], fabs(yr->data[o * HW + g]));
            if (same) err[o] = fmax(err[o], fabs((double)y[o * HW + g] - yr->data[o * HW + g]));
        }
    }
    printf("  %d of %d grid points with another mesh->grid triangle than GraphCast's (left out)\n",
           differ, HW);
    WX_CHECK(tp_neg == 0, "DeepMind's tp > 0 everywhere (no clamp in the comparison): %d not",
             tp_neg);
    for (int o = 0; o < NOUT; o++) {
        printf("  %-4s max |wxcast - DeepMind| %.3e (max |y| %.6g, %.2e relative)\n", names[o],
               err[o], ymax[o], err[o] / ymax[o]);
        WX_CHECK(err[o] <= 2e-6 * ymax[o], "%s: one step within 2e-6 of max |y| (%.2e)", names[o],
                 err[o] / ymax[o]);
    }
    WX_CHECK(differ <= 1, "%d grid points left out (another mesh->grid triangle): at most 1 of 144",
             differ);
    wx_gc_destroy(m);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/wx_gcfctp_XXXXXX");
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    test_forecast();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", tmp);
    return wx_test_summary();
}
