/* SEEPS pieces without the reference (test_eval_seeps has it), on short archives of
 * eval_seeps_data.h:
 * - the score of one point is WB2's scoring matrix entry for every (forecast, truth) category pair
 *   (p1 = 0.4: WB2's own test value 1.25 for a light forecast of a dry truth), 0 for a value
 *   exactly at the dry threshold (in no category), NaN for NaN or p1 outside (0.1, 0.85); a field
 *   all miscategorised the same way scores that entry whatever the weights and masked points;
 * - a version-1 climatology (what older wxcast wrote) still opens and gives the same mean fields,
 *   and eval with it gives every other score unchanged, no SEEPS, the former scores.csv header,
 *   "seeps": null and one warning; asking it for SEEPS fields is an error saying why;
 * - tp accumulated over 1 h: a version-2 file without SEEPS fields (one info line at the build,
 *   one warning at eval); over 24 h: dry threshold 0.25 mm;
 * - a small memory budget (many passes) writes a byte-identical file;
 * - a window longer than a year: no SEEPS fields, one info line;
 * - errors: SEEPS fields asked of a version-2 file without them, damaged and truncated SEEPS
 *   slabs, version 3, SEEPS channel out of range, damaged version-2 header bytes, an unknown
 *   version asked of the builder. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval_seeps_data.h"
#include "infer/eval.h"
#include "io/climatology.h"
#include "io/netcdf_write.h"
#include "wx_test.h"

#define DIR "eval_seeps_clim_test"
#define COUNT 200

static void check_points(void) {
    const double dry = 1e-4, wet = 1e-3, p1 = 0.4;
    const double x[3] = {0, 5e-4, 2e-3}; /* dry, light, heavy */
    /* 0.5 × Rodwell's matrix at p1 = 0.4, rows forecast, columns truth, written out */
    const double want[3][3] = {{0, 0.5 / 0.6, 2 / 0.6}, {1.25, 0, 1.5 / 0.6}, {1.875, 0.625, 0}};
    double maxd = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            maxd = fmax(maxd, fabs(wx_metrics_seeps_point(x[i], x[j], wet, p1, dry) - want[i][j]));
    WX_CHECK(maxd < 1e-12, "scoring matrix: max diff %.3g", maxd);
    WX_CHECK(wx_metrics_seeps_point((float)1e-4, 0, wet, p1, dry) == 0 &&
                 wx_metrics_seeps_point(0, (float)1e-4, wet, p1, dry) == 0,
             "a value exactly at the dry threshold is in no category: 0");
    WX_CHECK(wx_metrics_seeps_point(5e-4, 0, NAN, p1, dry) == 0 &&
                 wx_metrics_seeps_point(0, 5e-4, NAN, p1, dry) == 0,
             "a NaN wet threshold leaves a wet value in no category: 0");
    WX_CHECK(isnan(wx_metrics_seeps_point(NAN, 0, wet, p1, dry)) &&
                 isnan(wx_metrics_seeps_point(0, NAN, wet, p1, dry)) &&
                 isnan(wx_metrics_seeps_point(0, 5e-4, wet, 0.1, dry)) &&
                 isnan(wx_metrics_seeps_point(0, 5e-4, wet, 0.85, dry)) &&
                 isnan(wx_metrics_seeps_point(0, 5e-4, wet, NAN, dry)) &&
                 !isnan(wx_metrics_seeps_point(0, 5e-4, wet, 0.11, dry)),
             "NaN input, p1 <= 0.1, p1 >= 0.85 or NaN: NaN");
    /* a field: forecast light, truth dry everywhere, p1 0.5 but 0.9 (masked) at two points */
    enum { NL = 3, NO = 4 };
    float f[NL * NO], o[NL * NO], wt[NL * NO], pp[NL * NO], mask[NL * NO];
    double w[NL] = {0.3, 1.7, 1.0};
    for (int k = 0; k < NL * NO; k++)
        f[k] = 5e-4f, o[k] = 0, wt[k] = 1e-3f, pp[k] = k == 1 || k == 6 ? 0.9f : 0.5f, mask[k] = k % 3 ? 0.5f : 1;
    wx_seeps_clim sc = {wt, pp, dry};
    wx_score_sums s = {0}, sm = {0};
    wx_score_add_seeps_masked(&s, w, NULL, NL, NO, f, o, &sc);
    wx_score_add_seeps_masked(&s, w, NULL, NL, NO, o, o, &sc); /* perfect: 0 */
    wx_score_add_seeps_masked(&sm, w, mask, NL, NO, f, o, &sc);
    wx_scores r, rm;
    wx_score_finish(&s, &r), wx_score_finish(&sm, &rm);
    WX_CHECK(r.n_seeps == 2 && fabs(r.seeps - 0.5) < 1e-12 && fabs(rm.seeps - 1.0) < 1e-12,
             "field: light for dry at p1 0.5 scores 0.5/p1 = 1 (masked weights: %.17g), time mean "
             "with a perfect case %.17g", rm.seeps, r.seeps);
    for (int k = 0; k < NL * NO; k++) pp[k] = 0.95f;
    wx_score_sums sn = {0};
    wx_score_add_seeps_masked(&sn, w, NULL, NL, NO, f, o, &sc);
    wx_score_finish(&sn, &r);
    WX_CHECK(isnan(r.seeps) && r.n_seeps == 1, "every point masked: NaN");
}

/* Forecast file of t2m + 1 and tp = the truth at the next record, from record t0, leads 0..2. */
static int write_forecast(const wx_archive_meta *m, const char *path, int64_t t0) {
    wx_nc_var vars[2] = {{"t2m", "K", "air_temperature", "2 metre temperature", 0},
                         {"tp", "m", "lwe_thickness_of_precipitation_amount", "Total precipitation", 0}};
    wx_nc_layout L = {m->grid, 0, NULL, 2, vars, 1, m->start + t0 * m->step, "test", "seeps_clim", 0};
    wx_nc_writer w;
    if (wx_nc_writer_open(&w, path, &L) != WX_OK) return 0;
    int64_t P = wx_archive_points(m);
    float f[64];
    int ok = P <= 64;
    for (int k = 0; ok && k <= 2; k++)
        for (int c = 0; ok && c < 2; c++) {
            for (int64_t p = 0; p < P; p++) f[p] = c ? sd_value(m, t0 + k + 1, 1, (int)p) : sd_value(m, t0 + k, 0, (int)p) + 1;
            ok = wx_nc_writer_put(&w, k, m->start + (t0 + k) * m->step, c, 0, f) == WX_OK;
        }
    if (!ok) return wx_nc_writer_abort(&w), 0;
    return wx_nc_writer_close(&w) == WX_OK;
}

static wx_eval_opts EO;
static wx_eval_result R;
static int run_eval(void *ctx) {
    (void)ctx;
    return wx_eval_run(&EO, &R) == WX_OK;
}

typedef struct {
    const char *dir;
    wx_archive_meta *m;
    int64_t accum;
} mk_args;
static int make(void *ctx) {
    mk_args *a = ctx;
    return sd_make_archive(a->dir, a->m, COUNT, a->accum, 0);
}

static int build_long(void *ctx) {
    wx_archive_meta *m = ctx;
    wx_clim_opts o = {367, 1 << 22, 0};
    return wx_climatology_build(DIR "/w367.wxc", m, m->stats_start, m->stats_end, &o, sd_fetch, m) == WX_OK;
}

static int patch(const char *path, off_t off, const void *b, size_t n) {
    int fd = open(path, O_RDWR);
    int ok = fd >= 0 && pwrite(fd, b, n, off) == (ssize_t)n;
    if (fd >= 0) close(fd);
    return ok;
}

int main(void) {
    check_points();
    if (system("rm -rf " DIR) != 0) printf("rm -rf " DIR " failed\n");
    wx_archive_meta m2, m1, mh, md;
    int ok = sd_make_archive(DIR "/v2", &m2, COUNT, 21600, 0) && sd_make_archive(DIR "/v1", &m1, COUNT, 21600, 1);
    if (!WX_CHECK(ok, "archives")) return wx_test_summary();
    /* 1. version 1: opens, same mean fields, no SEEPS */
    wx_climatology *c1, *c2;
    ok = wx_climatology_open(DIR "/v1", &c1) == WX_OK && wx_climatology_open(DIR "/v2", &c2) == WX_OK;
    if (WX_CHECK(ok, "open both: %s", wx_error_message())) {
        const wx_clim_header *h1 = wx_climatology_header(c1), *h2 = wx_climatology_header(c2);
        WX_CHECK(h1->version == 1 && h1->seeps_chan == -1 && !wx_climatology_has_seeps(c1) &&
                     h1->data_offset == 4096 && h2->version == 2 && wx_climatology_has_seeps(c2),
                 "versions %u / %u", h1->version, h2->version);
        float a[2 * 40], b[2 * 40], dry[40], wet[40];
        int same = 1;
        for (int d = 1; d <= 366; d += 73)
            same &= wx_climatology_get(c1, d, 12, a) == WX_OK && wx_climatology_get(c2, d, 12, b) == WX_OK &&
                    !memcmp(a, b, sizeof a);
        WX_CHECK(same, "version 1 and 2 hold the same mean fields");
        WX_CHECK(wx_climatology_seeps_get(c1, 10, 0, dry, wet) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "v1/climatology.wxc: no SEEPS fields (version 1: "
                            "rebuild the climatology with this wxcast)"),
                 "SEEPS of a version-1 file: %s", wx_error_message());
        WX_CHECK(wx_climatology_seeps_get(c2, 10, 0, dry, wet) == WX_OK, "SEEPS of version 2");
        wx_climatology_close(c1), wx_climatology_close(c2);
    }
    /* 2. eval with each: every other score identical */
    ok = write_forecast(&m2, DIR "/f.nc", 50);
    const char *files[1] = {DIR "/f.nc"}, *models[1] = {"m"};
    EO = (wx_eval_opts){.nfiles = 1, .files = files, .models = models, .truth = DIR "/v2", .baselines = 1};
    wx_eval_result r2;
    ok = ok && sd_with_stderr(DIR "/e2.txt", run_eval, NULL);
    r2 = R;
    EO.truth = DIR "/v1";
    ok = ok && sd_with_stderr(DIR "/e1.txt", run_eval, NULL);
    if (WX_CHECK(ok, "eval: %s", wx_error_message())) {
        int same = R.ncells == r2.ncells && r2.has_seeps && !R.has_seeps, nseeps = 0;
        for (int i = 0; same && i < R.ncells; i++) {
            wx_scores a, b;
            wx_score_finish(&R.cells[i].sums, &a), wx_score_finish(&r2.cells[i].sums, &b);
            same &= a.rmse == b.rmse && a.bias == b.bias && a.mae == b.mae &&
                    (a.acc == b.acc || (isnan(a.acc) && isnan(b.acc))) && isnan(a.seeps);
            nseeps += b.n_seeps > 0;
        }
        WX_CHECK(same && nseeps == 9, "version 1: same scores, no SEEPS (version 2: %d SEEPS cells)", nseeps);
        WX_CHECK(sd_count_in(DIR "/e1.txt", "warning: eval: " DIR "/v1: the climatology is version "
                             "1, without SEEPS fields: tp is scored without SEEPS") == 1 &&
                     sd_count_in(DIR "/e2.txt", "warning") == 0, "one warning with version 1 only");
        WX_CHECK(wx_eval_write_csv(&R, DIR "/s1.csv") == WX_OK && wx_eval_write_json(&R, DIR "/s1.json") == WX_OK &&
                     sd_count_in(DIR "/s1.csv", "model,variable,units,lead_hours,n,rmse,bias,mae,acc,"
                                 "n_ens,crps,spread,spread_skill,spread_skill_fair\n") == 1 &&
                     sd_count_in(DIR "/s1.json", "\"seeps\":null") == 1 &&
                     sd_count_in(DIR "/s1.json", "\"seeps\":") == 1,
                 "version 1: the former scores.csv header, scores.json \"seeps\": null");
        wx_eval_result_free(&R);
    }
    wx_eval_result_free(&r2);
    /* 3. tp over 1 h: no SEEPS fields, said once at the build and once at eval; over 24 h: 0.25 mm */
    mk_args ah = {DIR "/h1", &mh, 3600}, ad = {DIR "/d1", &md, 86400};
    ok = sd_with_stderr(DIR "/b1.txt", make, &ah) && sd_with_stderr(DIR "/b24.txt", make, &ad);
    if (WX_CHECK(ok, "1 h and 24 h archives")) {
        WX_CHECK(sd_count_in(DIR "/b1.txt", "climatology: no SEEPS fields for tp (accumulated over "
                             "1h, units m): WeatherBench2 defines SEEPS dry thresholds for 6 h and "
                             "24 h totals in m or mm only") == 1 &&
                     sd_count_in(DIR "/b24.txt", "no SEEPS") == 0, "one info line for 1 h");
        ok = wx_climatology_open(DIR "/h1", &c1) == WX_OK && wx_climatology_open(DIR "/d1", &c2) == WX_OK;
        if (WX_CHECK(ok, "open: %s", wx_error_message())) {
            const wx_clim_header *h1 = wx_climatology_header(c1), *h2 = wx_climatology_header(c2);
            WX_CHECK(h1->version == 2 && !wx_climatology_has_seeps(c1) && h2->seeps_chan == 1 &&
                         h2->seeps_dry == 2.5e-4 && h2->seeps_period_s == 86400,
                     "1 h: no SEEPS; 24 h: dry %g", h2->seeps_dry);
            float dry[40], wet[40];
            WX_CHECK(wx_climatology_seeps_get(c1, 1, 0, dry, wet) == WX_ERR_RUN &&
                         strstr(wx_error_message(), "h1/climatology.wxc: no SEEPS fields (version 2: "
                                "the archive has no tp accumulated over 6 h or 24 h)"),
                     "SEEPS of a version-2 file without them: %s", wx_error_message());
            wx_climatology_close(c1), wx_climatology_close(c2);
        }
        EO.truth = DIR "/h1";
        if (WX_CHECK(sd_with_stderr(DIR "/eh.txt", run_eval, NULL), "eval 1 h: %s", wx_error_message())) {
            WX_CHECK(!R.has_seeps && sd_count_in(DIR "/eh.txt", DIR "/h1: the climatology has no "
                     "SEEPS fields (tp is not a 6 h or 24 h total in m or mm, the periods "
                     "WeatherBench2 defines SEEPS for): tp is scored without SEEPS") == 1,
                     "eval of a 1 h tp: one warning, no SEEPS");
            wx_eval_result_free(&R);
        }
    }
    /* a window longer than a year: the mean only, said once */
    ok = sd_with_stderr(DIR "/w367.txt", build_long, &m2);
    unsigned char hb[128] = {0};
    int fd = open(DIR "/w367.wxc", O_RDONLY);
    ok = ok && fd >= 0 && pread(fd, hb, sizeof hb, 0) == (ssize_t)sizeof hb;
    if (fd >= 0) close(fd);
    wx_clim_header hw;
    wx_clim_header_unpack(hb, &hw);
    WX_CHECK(ok && hw.version == 2 && hw.seeps_chan == -1 &&
                 sd_count_in(DIR "/w367.txt", "climatology: no SEEPS fields for tp: a window of 367 "
                             "days is longer than a year") == 1,
             "window 367: no SEEPS fields, one info line (%s)", wx_error_message());
    /* 4. a budget of a few points per pass: the same bytes */
    wx_clim_opts tiny = {61, 20000, 0};
    ok = wx_climatology_build(DIR "/tiny.wxc", &m2, m2.stats_start, m2.stats_end, &tiny, sd_fetch, &m2) == WX_OK;
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    ok = ok && wx_read_file(DIR "/tiny.wxc", &x, &nx) == WX_OK && wx_read_file(DIR "/v2/climatology.wxc", &y, &ny) == WX_OK;
    WX_CHECK(ok && nx == ny && !memcmp(x, y, nx), "tiny budget: byte-identical file (%zu / %zu bytes)", nx, ny);
    free(x), free(y);
    /* 5. errors */
    WX_CHECK(wx_climatology_build_version(DIR "/v5.wxc", &m2, m2.stats_start, m2.stats_end, NULL, 5,
                                          sd_fetch, &m2) == WX_ERR_USAGE &&
                 strstr(wx_error_message(), "climatology version 5: expected 1 or 2"), "version 5: %s",
             wx_error_message());
    const char *path = DIR "/v2/climatology.wxc";
    if (WX_CHECK(wx_climatology_open(DIR "/v2", &c2) == WX_OK, "reopen")) {
        const wx_clim_header *h = wx_climatology_header(c2);
        off_t off = (off_t)(h->seeps_offset + 3 * 2 * 40 * 4 + 7); /* slab (day 2, 12 UTC) */
        unsigned char b = 0;
        int fd = open(path, O_RDONLY);
        ok = fd >= 0 && pread(fd, &b, 1, off) == 1;
        if (fd >= 0) close(fd);
        b ^= 0x10;
        float dry[40], wet[40], mean[80];
        WX_CHECK(ok && patch(path, off, &b, 1) && wx_climatology_seeps_get(c2, 2, 12, dry, wet) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "climatology.wxc: SEEPS day 2 hour 12: crc32 mismatch"),
                 "damaged SEEPS slab: %s", wx_error_message());
        WX_CHECK(wx_climatology_seeps_get(c2, 2, 0, dry, wet) == WX_OK && wx_climatology_get(c2, 2, 12, mean) == WX_OK,
                 "the neighbours are fine");
        ok = truncate(DIR "/tiny.wxc", (off_t)(h->seeps_offset + 100 * 2 * 40 * 4)) == 0 &&
             rename(DIR "/tiny.wxc", DIR "/v1/climatology.wxc") == 0; /* v1's manifest: same grid */
        wx_climatology *ct;
        /* another file in its place is refused by the manifest's record of the header checksum */
        WX_CHECK(ok && wx_climatology_open(DIR "/v1", &ct) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "v1/climatology.wxc: not the climatology ingest wrote "
                                                "for this archive"),
                 "a foreign climatology: %s", wx_error_message());
        /* once the manifest is rewritten for it, truncated slabs are found when read */
        wx_archive_meta mv;
        ok = ok && wx_archive_read_manifest(DIR "/v1", &mv) == WX_OK;
        if (ok) ok = wx_archive_write_manifest(DIR "/v1", &mv) == WX_OK, wx_archive_meta_free(&mv);
        if (WX_CHECK(ok && wx_climatology_open(DIR "/v1", &ct) == WX_OK, "truncated copy opens: %s", wx_error_message())) {
            WX_CHECK(wx_climatology_seeps_get(ct, 51, 0, dry, wet) == WX_ERR_RUN &&
                         strstr(wx_error_message(), "SEEPS day 51 hour 0: read failed (file truncated)") &&
                         wx_climatology_seeps_get(ct, 50, 12, dry, wet) == WX_OK,
                     "truncated SEEPS slabs: %s", wx_error_message());
            wx_climatology_close(ct);
        }
        wx_climatology_close(c2);
    }
    uint32_t v3 = 3, v2 = 2;
    int32_t ch9 = 9, ch1 = 1;
    WX_CHECK(patch(path, 8, &v3, 4) && wx_climatology_open(DIR "/v2", &c2) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "version 3, 366 days, 2 hours: expected version 1 or 2"),
             "version 3: %s", wx_error_message());
    WX_CHECK(patch(path, 8, &v2, 4) && patch(path, 36, &ch9, 4) && wx_climatology_open(DIR "/v2", &c2) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "SEEPS channel 9: expected -1 or 0..1"),
             "SEEPS channel 9: %s", wx_error_message());
    int64_t period = 3600;
    WX_CHECK(patch(path, 36, &ch1, 4) && patch(path, 96, &period, 8) &&
                 wx_climatology_open(DIR "/v2", &c2) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "header checksum mismatch"),
             "version 2's header bytes 96..127 are checked: %s", wx_error_message());
    wx_archive_meta_free(&m2), wx_archive_meta_free(&m1), wx_archive_meta_free(&mh), wx_archive_meta_free(&md);
    if (wx_test_failed == 0 && system("rm -rf " DIR) != 0) printf("cleanup failed\n");
    return wx_test_summary();
}
