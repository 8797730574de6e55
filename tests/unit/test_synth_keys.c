/* Config keys added for the chaos tuning of the synthetic world (docs/synth.md):
 * - jet_width: its default (12°) gives byte-identical files to a config without the key (old
 *   configs keep their output), and 8° changes the world (the key is read);
 * - twin_log: runs the twins on the model state instead of writing files; one line per day,
 *   finite, positive; at day 0 the difference is linear in the perturbation (1e-3 gives 1000×
 *   the 1e-6 value to 1e-6 relative), the default perturbation is 1e-6, and the unperturbed
 *   twin of the log is the model itself (a perturbation-free log would be all zero);
 * - the session-4 physics keys (jet_latitude, lower_depth, wave_speed, latent_heating and its
 *   time/filter, min_thickness and its time) at their defaults give the same bytes as no key, and
 *   each of jet_latitude, lower_depth, latent_heating and min_thickness changes the world. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "synth/synth_run.h"
#include "wx_test.h"

static const char *base = "truncation: 21\nnlat: 32\nnlon: 64\nstart_year: 2003\nspin_up_days: 20\n"
                          "formats: [netcdf]\nvariables: [z500]\n";

static int run(const char *dir, const char *name, const char *extra, wx_synth_opts *o) {
    char cfg[600], out[600];
    snprintf(cfg, sizeof cfg, "%s/%s.yaml", dir, name);
    snprintf(out, sizeof out, "%s/%s", dir, name);
    FILE *fp = fopen(cfg, "w");
    if (!fp) return 0;
    fprintf(fp, "%s%s", base, extra);
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
    WX_CHECK(same_file(a, b) == 0, "jet_width: 8 changes the world");

    /* session-4 keys */
    run(dir, "defaults4", "days: 1\njet_latitude: 45\nlower_depth: 3000\nwave_speed: 60\n"
        "latent_heating: 0\nlatent_hours: 6\nlatent_truncation: 21\nmin_thickness: 0\n"
        "min_thickness_hours: 3\n", &o);
    snprintf(a, sizeof a, "%s/plain/synth_pl500_200301.nc", dir);
    snprintf(b, sizeof b, "%s/defaults4/synth_pl500_200301.nc", dir);
    WX_CHECK(same_file(a, b) == 1, "the new keys at their defaults give the same file as no key");
    const char *changed[][2] = {{"lat55", "days: 1\njet_latitude: 55\n"},
                                {"h1500", "days: 1\nlower_depth: 1500\nmin_thickness: 800\n"},
                                {"latent", "days: 1\nlatent_heating: 50\n"},
                                {"refill", "days: 1\nmin_thickness: 2900\n"}};
    for (int i = 0; i < 4; i++) {
        run(dir, changed[i][0], changed[i][1], &o);
        snprintf(b, sizeof b, "%s/%s/synth_pl500_200301.nc", dir, changed[i][0]);
        WX_CHECK(same_file(a, b) == 0, "%s changes the world", changed[i][1] + 8);
    }

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
    return wx_test_summary();
}
