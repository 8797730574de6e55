/* A forecast from an imported DeepMind GraphCast checkpoint: `import-weights model.npz --config
 * graphcast_tiny.yaml --data data.yaml` (DeepMind's three stats files, a statics file) then one
 * forecast step from a NetCDF initial state, against DeepMind's own predictor —
 * normalization.InputsAndResiduals around graphcast.GraphCast, JAX float64, physical output
 * (tests/ref/ref_graphcast_forecast.py, fixtures gc_forecast.wxfx and gc_forecast/). This holds
 * the normalisation of inputs, forcings and statics by DeepMind's statistics (by variable and
 * level), the residual de-normalised with diffs_stddev, the statics file and the forcing values.
 * Grid points whose mesh->grid triangle is not GraphCast's are left out of the comparison and
 * counted: since mesh_closest.c (trimesh's closest-face rule) that is 1 of 144, a point where
 * trimesh's own triangle is decided by numpy's sort order of bit-equal distances and wxcast takes
 * the other one trimesh can return (docs/weights.md "Mesh->grid triangles"; test_weights_gc).
 * A second case (graphcast_tiny_tp.yaml, fixtures gc_forecast_tp) has GraphCast_small/
 * operational's task at toy size: total_precipitation_6hr a target only (DeepMind de-normalises
 * it by mean/stddev, with no residual and no diffs_stddev), the year-progress forcings and the
 * geopotential_at_surface static; init.nc holds tp too (DeepMind's datasets do), which a residual
 * on tp would add, and DeepMind's tp is > 0 at every point, so wxcast's clamp of tp at 0 in the
 * forecast file does not act. Errors: a stats file without a level or a variable, a statics file without the
 * field exit 1 with one line naming file, variable and level; unknown keys and a time step that
 * is not 6 h exit 2. */
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

#define DIR WX_FIXTURE_DIR "/gc_forecast"
#define TINY_YAML WX_FIXTURE_DIR "/../../../configs/model/graphcast_tiny.yaml"
#define DIR_TP WX_FIXTURE_DIR "/gc_forecast_tp"
#define TP_YAML WX_FIXTURE_DIR "/../../../configs/model/graphcast_tiny_tp.yaml"

enum { HW = 9 * 16, MAXOUT = 5 };

static char tmp[64];

static int import_from(const char *npz, const char *yaml, const char *data, const char *out) {
    char *argv[] = {"import-weights", (char *)npz, "--config", (char *)yaml, "--data",
                    (char *)data, "--output", (char *)out, NULL};
    return wx_cmd_import_weights(8, argv);
}

static int import(const char *data, const char *out) {
    return import_from(DIR "/model.npz", TINY_YAML, data, out);
}

static int nc_find_var(int nc, const char *name) {
    int v = -1;
    return nc_inq_varid(nc, name, &v) == NC_NOERR ? v : -1;
}

/* var at lead 1 of a forecast file into y (HW); with levels, z at 500 and 850 hPa in that order
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

/* One case: import fixture `name` (DIR/model.npz, DIR/data.yaml) with config yaml, forecast one
 * step from DIR/init.nc and compare the surface channels `surf` (then z at 500 and 850 hPa) with
 * the fixture's y, DeepMind's output in that order; nin: the config's input count (< 0: not
 * checked). */
static void compare_case(const char *name, const char *dir, const char *yaml,
                         const char *const *surf, int nsurf, int64_t nin) {
    char ck[128], out[128], npz[512], data[512], init[512];
    snprintf(ck, sizeof ck, "%s/%s.ckpt", tmp, name);
    snprintf(out, sizeof out, "%s/%s.nc", tmp, name);
    snprintf(npz, sizeof npz, "%s/model.npz", dir);
    snprintf(data, sizeof data, "%s/data.yaml", dir);
    snprintf(init, sizeof init, "%s/init.nc", dir);
    int nout = nsurf + 2;
    if (!WX_CHECK(import_from(npz, yaml, data, ck) == 0, "%s: import with --data: %s", name,
                  wx_error_message()))
        return;
    wx_forecast_opts fo = {.model = ck, .init = init, .steps = 1, .output = out, .threads = 1};
    if (!WX_CHECK(wx_forecast_run_ext(&fo, NULL) == WX_OK, "%s: forecast: %s", name,
                  wx_error_message()))
        return;
    wx_fixture *f = wx_fixture_load(name);
    if (!WX_CHECK(f != NULL, "fixture %s", name)) return;
    const wx_fixture_tensor *yr = wx_fixture_get(f, "y"), *sr = wx_fixture_get(f, "m2g_senders");
    float y[MAXOUT * HW];
    int ok = yr && sr && yr->size == nout * HW && nout <= MAXOUT;
    for (int o = 0; ok && o < nsurf; o++) ok = read_lead1(out, surf[o], 0, y + o * HW);
    ok = ok && read_lead1(out, "z", 1, y + nsurf * HW);
    if (!WX_CHECK(ok, "%s: fixture y of %d channels, read %s", name, nout, out)) {
        wx_fixture_free(f);
        return;
    }
    /* wxcast's mesh->grid triangles, to leave out the points where they are not GraphCast's */
    wx_yaml *yy = NULL;
    wx_gc_config c;
    WX_CHECK(wx_yaml_load_file(yaml, &yy) == WX_OK && wx_gc_config_parse(yy, "", &c) == WX_OK,
             "config: %s", wx_error_message());
    wx_yaml_free(yy);
    WX_CHECK((nin < 0 || c.in_channels == nin) && c.out_channels == nout, "%s: %lld inputs, %d outputs (got "
             "%lld, %lld)", name, (long long)nin, nout, (long long)c.in_channels,
             (long long)c.out_channels);
    wx_ctx *ctx = wx_ctx_create(1);
    wx_gc *m = wx_gc_create(ctx, wx_backend_cpu(), &c, 5, 1, 0, 0);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) {
        wx_ctx_destroy(ctx);
        wx_fixture_free(f);
        return;
    }
    int differ = 0, tp = -1, tp_neg = 0;
    for (int o = 0; o < nsurf; o++)
        if (!strcmp(surf[o], "tp")) tp = o;
    double err[MAXOUT] = {0}, ymax[MAXOUT] = {0};
    for (int g = 0; g < HW; g++) {
        int same = 1;
        for (int k = 0; k < 3; k++) {
            int found = 0;
            for (int j = 0; j < 3; j++)
                found |= m->g.m2g.senders[3 * g + k] == (int32_t)sr->data[3 * g + j];
            same &= found;
        }
        differ += !same;
        if (tp >= 0) tp_neg += yr->data[tp * HW + g] <= 0;
        for (int o = 0; o < nout; o++) {
            ymax[o] = fmax(ymax[o], fabs(yr->data[o * HW + g]));
            if (same) err[o] = fmax(err[o], fabs((double)y[o * HW + g] - yr->data[o * HW + g]));
        }
    }
    printf("  %s: %d of %d grid points with another mesh->grid triangle than GraphCast's (left "
           "out)\n", name, differ, HW);
    if (tp >= 0)
        WX_CHECK(tp_neg == 0, "%s: DeepMind's tp > 0 everywhere (no clamp in the comparison): "
                 "%d not", name, tp_neg);
    for (int o = 0; o < nout; o++) {
        const char *cn = o < nsurf ? surf[o] : o == nsurf ? "z500" : "z850";
        printf("  %-4s max |wxcast - DeepMind| %.3e (max |y| %.6g, %.2e relative)\n", cn, err[o],
               ymax[o], err[o] / ymax[o]);
        WX_CHECK(err[o] <= 2e-6 * ymax[o], "%s %s: one step within 2e-6 of max |y| (%.2e)", name,
                 cn, err[o] / ymax[o]);
    }
    /* 1: the one point whose face trimesh picks by numpy's sort order of equal distances
     * (docs/weights.md); a rule regression shows up as more */
    WX_CHECK(differ <= 1, "%s: %d grid points left out (another mesh->grid triangle): at most 1 "
             "of 144", name, differ);
    wx_gc_destroy(m);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

/* A target-only variable is no input: an initial file without tp (an HRES analysis) starts the
 * same forecast — every lead-1 channel bitwise equal to the run from the file with tp — and tp
 * at lead 0 is NaN (nothing to show), not an error. The copy of init.nc has its tp renamed. */
static void test_no_tp_input(void) {
    char init[128], ck[128], out[128], ref[128], cmd[512];
    snprintf(init, sizeof init, "%s/init_no_tp.nc", tmp);
    snprintf(ck, sizeof ck, "%s/gc_forecast_tp.ckpt", tmp); /* imported by compare_case */
    snprintf(out, sizeof out, "%s/no_tp.nc", tmp);
    snprintf(ref, sizeof ref, "%s/gc_forecast_tp.nc", tmp);
    snprintf(cmd, sizeof cmd, "cp %s/init.nc %s", DIR_TP, init);
    int nc = -1;
    int ok = system(cmd) == 0 && nc_open(init, NC_WRITE, &nc) == NC_NOERR &&
             nc_redef(nc) == NC_NOERR && nc_rename_var(nc, nc_find_var(nc, "tp"), "unused") ==
             NC_NOERR && nc_enddef(nc) == NC_NOERR;
    if (nc >= 0) nc_close(nc);
    if (!WX_CHECK(ok, "init file without tp")) return;
    wx_forecast_opts fo = {.model = ck, .init = init, .steps = 1, .output = out, .threads = 1};
    if (!WX_CHECK(wx_forecast_run_ext(&fo, NULL) == WX_OK, "forecast from a file without the "
                  "target-only tp: %s", wx_error_message()))
        return;
    static const char *const vars[] = {"t2m", "msl", "tp"};
    float a[2 * HW], b[2 * HW];
    int same = 1, nan0 = 0;
    for (int v = 0; v < 4 && same; v++) {
        int lev = v == 3;
        const char *name = lev ? "z" : vars[v];
        same = read_lead1(out, name, lev, a) && read_lead1(ref, name, lev, b) &&
               !memcmp(a, b, sizeof(float) * (size_t)(lev ? 2 : 1) * HW);
    }
    if (nc_open(out, NC_NOWRITE, &nc) == NC_NOERR) {
        int v;
        size_t start[3] = {0, 0, 0}, count[3] = {1, 9, 16};
        if (nc_inq_varid(nc, "tp", &v) == NC_NOERR &&
            nc_get_vara_float(nc, v, start, count, a) == NC_NOERR)
            for (int g = 0; g < HW; g++) nan0 += isnan(a[g]);
        nc_close(nc);
    }
    WX_CHECK(same, "lead 1 from the file without tp is bitwise the run with it");
    WX_CHECK(nan0 == HW, "tp at lead 0 is NaN at every point (%d of %d)", nan0, HW);
}

static void test_forecast(void) {
    static const char *const surf[] = {"t2m", "msl"}, *const surf_tp[] = {"t2m", "msl", "tp"};
    compare_case("gc_forecast", DIR, TINY_YAML, surf, 2, -1);
    compare_case("gc_forecast_tp", DIR_TP, TP_YAML, surf_tp, 3, 25);
    test_no_tp_input();
}

/* A stats file with the tiny model's scalars (less `skip`) and geopotential on the first nlev of
 * 300, 500, 850 hPa; every value 1. coord_len > 0: the `level` coordinate variable lies along
 * another dimension of that length (a damaged file: reading it into nlev values would overflow). */
static void write_stats(const char *path, int nlev, const char *skip, int coord_len) {
    static const char *const scalars[] = {"2m_temperature", "mean_sea_level_pressure",
                                          "toa_incident_solar_radiation", "day_progress_sin",
                                          "day_progress_cos", "land_sea_mask", NULL};
    int nc, dl, dc, vl, vg, vs[8];
    double lv[64] = {300, 500, 850}, ones[3] = {1, 1, 1};
    nc_create(path, NC_CLOBBER, &nc);
    nc_def_dim(nc, "level", (size_t)nlev, &dl);
    dc = dl;
    if (coord_len > 0) nc_def_dim(nc, "other", (size_t)coord_len, &dc);
    nc_def_var(nc, "level", NC_DOUBLE, 1, &dc, &vl);
    nc_def_var(nc, "geopotential", NC_DOUBLE, 1, &dl, &vg);
    for (int i = 0; scalars[i]; i++)
        if (strcmp(scalars[i], skip)) nc_def_var(nc, scalars[i], NC_DOUBLE, 0, NULL, &vs[i]);
    nc_enddef(nc);
    nc_put_var_double(nc, vl, lv);
    nc_put_var_double(nc, vg, ones);
    for (int i = 0; scalars[i]; i++)
        if (strcmp(scalars[i], skip)) nc_put_var_double(nc, vs[i], ones);
    nc_close(nc);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) fputs(text, f), fclose(f);
}

static void expect(const char *yaml, int code, const char *const *parts, const char *what) {
    char dp[128], ck[128];
    snprintf(dp, sizeof dp, "%s/d.yaml", tmp);
    snprintf(ck, sizeof ck, "%s/bad.ckpt", tmp);
    write_text(dp, yaml);
    unlink(ck);
    int rc = import(dp, ck);
    const char *msg = wx_error_message();
    int ok = rc == code;
    for (int i = 0; parts[i]; i++) ok &= strstr(msg, parts[i]) != NULL;
    WX_CHECK(ok, "%s: exit %d (expected %d), message: %s", what, rc, code, msg);
    WX_CHECK(access(ck, F_OK) != 0, "%s: nothing written", what);
}

static void test_errors(void) {
    char yaml[2048], p[128];
    snprintf(p, sizeof p, "%s/lev.nc", tmp);
    write_stats(p, 2, "", 0); /* 300 and 500 hPa: no 850 */
    snprintf(yaml, sizeof yaml,
             "mean_by_level: %s\nstddev_by_level: %s/stddev_by_level.nc\n"
             "diffs_stddev_by_level: %s/diffs_stddev_by_level.nc\nstatics: %s/statics.nc\n",
             p, DIR, DIR, DIR);
    expect(yaml, 1, (const char *const[]){"lev.nc", "'geopotential'", "850 hPa", NULL},
           "stats file without the 850 hPa level");
    snprintf(p, sizeof p, "%s/var.nc", tmp);
    write_stats(p, 3, "day_progress_cos", 0);
    snprintf(yaml, sizeof yaml,
             "mean_by_level: %s/mean_by_level.nc\nstddev_by_level: %s\n"
             "diffs_stddev_by_level: %s/diffs_stddev_by_level.nc\nstatics: %s/statics.nc\n",
             DIR, p, DIR, DIR);
    expect(yaml, 1, (const char *const[]){"var.nc", "'day_progress_cos'", NULL},
           "stats file without a forcing");
    snprintf(p, sizeof p, "%s/coord.nc", tmp);
    write_stats(p, 3, "", 64);
    snprintf(yaml, sizeof yaml,
             "mean_by_level: %s\nstddev_by_level: %s/stddev_by_level.nc\n"
             "diffs_stddev_by_level: %s/diffs_stddev_by_level.nc\nstatics: %s/statics.nc\n",
             p, DIR, DIR, DIR);
    expect(yaml, 1, (const char *const[]){"coord.nc", "'level' coordinate", "'geopotential'", NULL},
           "stats file whose level coordinate lies along another dimension");
    snprintf(yaml, sizeof yaml,
             "mean_by_level: %s/mean_by_level.nc\nstddev_by_level: %s/stddev_by_level.nc\n"
             "diffs_stddev_by_level: %s/diffs_stddev_by_level.nc\nstatics: %s/init.nc\n",
             DIR, DIR, DIR, DIR);
    expect(yaml, 1, (const char *const[]){"init.nc", "land_sea_mask", NULL},
           "statics file without land_sea_mask");
    snprintf(yaml, sizeof yaml,
             "mean_by_level: %s/mean_by_level.nc\nstddev_by_level: %s/stddev_by_level.nc\n"
             "diffs_stddev_by_level: %s/diffs_stddev_by_level.nc\nstatics: %s/statics.nc\n"
             "means: x.npy\n", DIR, DIR, DIR, DIR);
    expect(yaml, 2, (const char *const[]){"d.yaml", "means", NULL}, "unknown key");
    snprintf(yaml, sizeof yaml,
             "mean_by_level: %s/mean_by_level.nc\nstddev_by_level: %s/stddev_by_level.nc\n"
             "diffs_stddev_by_level: %s/diffs_stddev_by_level.nc\nstatics: %s/statics.nc\n"
             "time_step: 3h\n", DIR, DIR, DIR, DIR);
    expect(yaml, 2, (const char *const[]){"d.yaml", "time_step", NULL}, "time step 3h");
    snprintf(yaml, sizeof yaml,
             "mean_by_level: %s/mean_by_level.nc\nstddev_by_level: %s/stddev_by_level.nc\n"
             "diffs_stddev_by_level: %s/diffs_stddev_by_level.nc\n", DIR, DIR, DIR);
    expect(yaml, 2, (const char *const[]){"d.yaml", "statics", NULL}, "statics missing");
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/wx_gcfc_XXXXXX");
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    test_forecast();
    test_errors();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", tmp);
    return wx_test_summary();
}
