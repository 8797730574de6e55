/* Config keys added for the chaos tuning of the synthetic world (docs/synth.md):
 * - jet_width: its default (12°) gives byte-identical files to a config without the key (old
 *   configs keep their output), and 8° changes the world (the key is read);
 * - twin_log: runs the twins on the model state instead of writing files; one line per day,
 *   finite, positive; at day 0 the difference is linear in the perturbation (1e-3 gives 1000×
 *   the 1e-6 value to 1e-6 relative), the default perturbation is 1e-6, and the unperturbed
 *   twin of the log is the model itself (a perturbation-free log would be all zero);
 * - the session-4 physics keys (jet_latitude, lower_depth, wave_speed, latent_heating and its
 *   time/filter, min_thickness and its time) at their defaults give the same bytes as no key, and
 *   each of jet_latitude, lower_depth, latent_heating and min_thickness changes the world;
 * - the session-5 convection keys: at their defaults the same bytes as no key; `convection: 1`
 *   rains more (the tp field's sum grows) but leaves z500 byte-identical while
 *   `convection_heating: 0` (the heating is its only coupling to the flow), changes z500 with
 *   heating, and `convection_truncation` changes that heating; in 4-day twins after a 60-day
 *   spin-up the z500 difference grows ≥ 2× with convection and stays < 1.5× without (the
 *   threshold is what makes small differences grow fast);
 * - session 6: `evaporation_days: 1` (the default) gives the same bytes, and with convection
 *   `evaporation_days: 3` rains less (tp sum < 0.8× that with 1 day): the sea refills the
 *   columns more slowly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netcdf.h>

#include "core/wx_fs.h"
#include "synth/synth_run.h"
#include "wx_test.h"

static const char *base = "truncation: 21\nnlat: 32\nnlon: 64\nstart_year: 2003\nspin_up_days: 20\n"
                          "formats: [netcdf]\nvariables: [z500]\n";
/* the same without one of its keys, for runs that set it themselves */
static const char *base_novars = "truncation: 21\nnlat: 32\nnlon: 64\nstart_year: 2003\n"
                                 "spin_up_days: 20\nformats: [netcdf]\n";
static const char *base_nospin = "truncation: 21\nnlat: 32\nnlon: 64\nstart_year: 2003\n"
                                 "formats: [netcdf]\nvariables: [z500]\n";
static const char *cur_base;

static int run(const char *dir, const char *name, const char *extra, wx_synth_opts *o) {
    char cfg[600], out[600];
    snprintf(cfg, sizeof cfg, "%s/%s.yaml", dir, name);
    snprintf(out, sizeof out, "%s/%s", dir, name);
    FILE *fp = fopen(cfg, "w");
    if (!fp) return 0;
    fprintf(fp, "%s%s", cur_base ? cur_base : base, extra);
    fclose(fp);
    memset(o, 0, sizeof *o);
    o->output = out;
    wx_status st = wx_synth_run(cfg, o);
    return WX_CHECK(st == WX_OK, "synth %s: %s", name, st ? wx_error_message() : "ok");
}

static int same_file(const char *a, const char *b) {
    char *x, *y;
    size_t nx, ny;
    if (wx_read_file(a, &x, &nx)) return -1;
    if (wx_read_file(b, &y, &ny)) {
        free(x);
        return -1;
    }
    int eq = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return eq;
}

/* 1 when the z500 fields (variable z) of two pl500 files are bitwise equal, 0 when not, -1 when
 * unreadable. The files' `source` attribute names the config's hash, so worlds of different
 * configs differ as files even where their fields are equal: compare the fields. */
static int same_z500(const char *a, const char *b) {
    float *v[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    const char *p[2] = {a, b};
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        int nc, id, nd, dims[8];
        if (nc_open(p[k], NC_NOWRITE, &nc)) { ok = 0; continue; }
        n[k] = 1;
        if (!nc_inq_varid(nc, "z", &id) && !nc_inq_varndims(nc, id, &nd) && nd <= 8 &&
            !nc_inq_vardimid(nc, id, dims)) {
            for (int d = 0; d < nd; d++) {
                size_t len;
                nc_inq_dimlen(nc, dims[d], &len);
                n[k] *= len;
            }
            v[k] = malloc(sizeof(float) * n[k]);
            if (nc_get_var_float(nc, id, v[k])) ok = 0;
        } else {
            ok = 0;
        }
        nc_close(nc);
    }
    int eq = ok ? (n[0] == n[1] && !memcmp(v[0], v[1], sizeof(float) * n[0])) : -1;
    free(v[0]);
    free(v[1]);
    return eq;
}

/* Sum of a NetCDF variable (float32 values as double); -1 when it cannot be read. */
static double nc_sum(const char *path, const char *var) {
    int nc, id, nd, dims[8];
    if (nc_open(path, NC_NOWRITE, &nc)) return -1;
    double s = -1;
    size_t n = 1, len;
    if (!nc_inq_varid(nc, var, &id) && !nc_inq_varndims(nc, id, &nd) && nd <= 8 &&
        !nc_inq_vardimid(nc, id, dims)) {
        for (int i = 0; i < nd; i++) n *= nc_inq_dimlen(nc, dims[i], &len) ? 0 : len;
        float *x = n ? malloc(sizeof(float) * n) : NULL;
        if (x && !nc_get_var_float(nc, id, x)) {
            s = 0;
            for (size_t i = 0; i < n; i++) s += x[i];
        }
        free(x);
    }
    nc_close(nc);
    return s;
}

/* Reads "day value" lines; returns the count (comment lines skipped). */
static int read_log(const char *path, double *v, int max) {
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        int d;
        double x;
        if (line[0] == '#') continue;
        if (sscanf(line, "%d %lf", &d, &x) != 2 || d != n || n >= max) {
            n = -2;
            break;
        }
        v[n++] = x;
    }
    fclose(fp);
    return n;
}

int main(void) {
    char dir[] = "/tmp/wx_synth_keys_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    wx_synth_opts o;
    char a[700], b[700];

    /* jet_width */
    run(dir, "plain", "days: 1\n", &o);
    run(dir, "w12", "days: 1\njet_width: 12\n", &o);
    run(dir, "w8", "days: 1\njet_width: 8\n", &o);
    snprintf(a, sizeof a, "%s/plain/synth_pl500_200301.nc", dir);
    snprintf(b, sizeof b, "%s/w12/synth_pl500_200301.nc", dir);
    WX_CHECK(same_file(a, b) == 1, "jet_width: 12 (the default) gives the same file as no key");
    snprintf(b, sizeof b, "%s/w8/synth_pl500_200301.nc", dir);
    WX_CHECK(same_z500(a, b) == 0, "jet_width: 8 changes the world");

    /* session-4 keys */
    run(dir, "defaults4", "days: 1\njet_latitude: 45\nlower_depth: 3000\nwave_speed: 60\n"
        "latent_heating: 0\nlatent_hours: 6\nlatent_truncation: 21\nmin_thickness: 0\n"
        "min_thickness_hours: 3\n", &o);
    snprintf(a, sizeof a, "%s/plain/synth_pl500_200301.nc", dir);
    snprintf(b, sizeof b, "%s/defaults4/synth_pl500_200301.nc", dir);
    WX_CHECK(same_file(a, b) == 1, "the new keys at their defaults give the same file as no key");
    const char *changed[][2] = {{"lat55", "days: 1\njet_latitude: 55\n"},
                                {"h1500", "days: 1\nlower_depth: 1500\nmin_thickness: 800\n"},
                                {"latent", "days: 1\nlatent_heating: 5\n"},
                                {"refill", "days: 1\nmin_thickness: 2900\n"}};
    for (int i = 0; i < 4; i++) {
        run(dir, changed[i][0], changed[i][1], &o);
        snprintf(b, sizeof b, "%s/%s/synth_pl500_200301.nc", dir, changed[i][0]);
        WX_CHECK(same_z500(a, b) == 0, "%s changes the world", changed[i][1] + 8);
    }

    /* convection */
    run(dir, "conv_def", "days: 1\nconvection: 0\nconvection_trigger: 0.8\nconvection_heating: 30\n"
        "convection_truncation: 0\nevaporation_days: 1\n", &o);
    snprintf(a, sizeof a, "%s/plain/synth_pl500_200301.nc", dir);
    snprintf(b, sizeof b, "%s/conv_def/synth_pl500_200301.nc", dir);
    WX_CHECK(same_file(a, b) == 1, "the convection keys at their defaults give the same file");
    const char *tp_cfg = "days: 1\nvariables: [z500, tp]\nconvection_trigger: 0.6\n";
    char cfg2[400];
    cur_base = base_novars;
    run(dir, "conv_off", tp_cfg, &o);
    snprintf(cfg2, sizeof cfg2, "%sconvection: 1\nconvection_heating: 0\n", tp_cfg);
    run(dir, "conv_dry", cfg2, &o);
    snprintf(cfg2, sizeof cfg2, "%sconvection: 1\nconvection_heating: 10\n", tp_cfg);
    run(dir, "conv_on", cfg2, &o);
    snprintf(cfg2, sizeof cfg2, "%sconvection: 1\nconvection_heating: 10\nconvection_truncation: 10\n",
             tp_cfg);
    run(dir, "conv_lp", cfg2, &o);
    snprintf(cfg2, sizeof cfg2, "%sconvection: 1\nconvection_heating: 0\nevaporation_days: 3\n", tp_cfg);
    run(dir, "conv_dry3", cfg2, &o);
    cur_base = NULL;
    snprintf(a, sizeof a, "%s/conv_off/synth_pl500_200301.nc", dir);
    snprintf(b, sizeof b, "%s/conv_dry/synth_pl500_200301.nc", dir);
    WX_CHECK(same_z500(a, b) == 1, "convection without heating leaves z500 unchanged");
    snprintf(b, sizeof b, "%s/conv_on/synth_pl500_200301.nc", dir);
    WX_CHECK(same_z500(a, b) == 0, "convective heating changes z500");
    snprintf(a, sizeof a, "%s/conv_lp/synth_pl500_200301.nc", dir);
    WX_CHECK(same_z500(a, b) == 0, "convection_truncation changes the heating");
    double rain[3] = {0, 0, 0};
    const char *tp_dirs[3] = {"conv_off", "conv_dry", "conv_dry3"};
    for (int i = 0; i < 3; i++) {
        snprintf(a, sizeof a, "%s/%s/synth_sfc_200301.nc", dir, tp_dirs[i]);
        rain[i] = nc_sum(a, "tp");
    }
    WX_CHECK(rain[0] >= 0 && rain[1] > 1.2 * rain[0], "convection rains more: tp sum %.4g -> %.4g m",
             rain[0], rain[1]);
    WX_CHECK(rain[2] >= 0 && rain[2] < 0.8 * rain[1], "evaporation_days: 3 rains less: %.4g -> %.4g m",
             rain[1], rain[2]);

    /* twin_log */
    double v6[16], v3[16], vd[16];
    char extra[800];
    snprintf(extra, sizeof extra, "days: 4\nperturbation: 1.0e-6\ntwin_log: %s/t6.txt\n", dir);
    run(dir, "t6", extra, &o);
    WX_CHECK(o.times_written == 0, "twin_log writes no output times (%lld)", (long long)o.times_written);
    snprintf(extra, sizeof extra, "days: 4\nperturbation: 1.0e-3\ntwin_log: %s/t3.txt\n", dir);
    run(dir, "t3", extra, &o);
    snprintf(extra, sizeof extra, "days: 4\ntwin_log: %s/td.txt\n", dir);
    run(dir, "td", extra, &o);
    snprintf(a, sizeof a, "%s/t6.txt", dir);
    int n6 = read_log(a, v6, 16);
    snprintf(a, sizeof a, "%s/t3.txt", dir);
    int n3 = read_log(a, v3, 16);
    snprintf(a, sizeof a, "%s/td.txt", dir);
    int nd = read_log(a, vd, 16);
    WX_CHECK(n6 == 5 && n3 == 5 && nd == 5, "one line per day 0..4 (%d, %d, %d)", n6, n3, nd);
    if (n6 == 5 && n3 == 5 && nd == 5) {
        int ok = 1;
        for (int d = 0; d < 5; d++) ok &= isfinite(v6[d]) && v6[d] > 0;
        WX_CHECK(ok, "twin differences finite and positive (day 4: %.3e)", v6[4]);
        WX_CHECK(v6[0] > 1e-5 && v6[0] < 0.1, "day 0 difference %.3e m2 s-2 for 1e-6", v6[0]);
        WX_CHECK(fabs(v3[0] / v6[0] - 1000) < 1e-3, "day 0 linear in the perturbation: ratio %.6f",
                 v3[0] / v6[0]);
        WX_CHECK(vd[0] == v6[0] && vd[4] == v6[4], "default perturbation is 1e-6 (%.9e vs %.9e)",
                 vd[0], v6[0]);
    }
    /* the convective threshold makes small differences grow fast */
    double g[2][8];
    cur_base = base_nospin;
    for (int i = 0; i < 2; i++) {
        snprintf(extra, sizeof extra, "days: 4\nspin_up_days: 60\ntwin_log: %s/tc%d.txt\n%s", dir, i,
                 i ? "convection: 1\nconvection_trigger: 0.6\nconvection_heating: 10\n" : "");
        run(dir, i ? "tc1" : "tc0", extra, &o);
        snprintf(a, sizeof a, "%s/tc%d.txt", dir, i);
        WX_CHECK(read_log(a, g[i], 8) == 5, "convection twin log %d has days 0..4", i);
    }
    cur_base = NULL;
    WX_CHECK(g[1][4] > 2 * g[1][0], "with convection the twins grow apart: day 4 / day 0 = %.2f",
             g[1][4] / g[1][0]);
    WX_CHECK(g[0][4] < 1.5 * g[0][0], "without it they do not yet: day 4 / day 0 = %.2f",
             g[0][4] / g[0][0]);
    return wx_test_summary();
}
