/* Parallel ingest: the archive (shards, manifest, statistics) is byte-identical with 1 and 3
 * threads, with batches smaller than the 6-hour difference lag (ring across batches) and several
 * shards; records equal eccodes' own decoding (float16: rounded by the compiler's _Float16, not by
 * our converter); statistics equal a double-precision two-pass computation from eccodes' values,
 * also with drop_south_pole (records one row shorter than the decoded grid). */
#include <eccodes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest.h"
#include "io/archive.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_ingest_thr_XXXXXX";

static int run(const char *name, const char *body, int threads) {
    char path[1200], out[1200];
    snprintf(path, sizeof path, "%s/%s.yaml", tmp, name);
    snprintf(out, sizeof out, "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    fputs(body, f);
    fclose(f);
    omp_set_num_threads(threads);
    wx_ingest_opts o = {0};
    o.output = out;
    wx_status st = wx_ingest_run(path, &o);
    return WX_CHECK(st == WX_OK, "%s (%d threads): %s", name, threads, wx_error_message());
}

static int same_files(const char *a, const char *b) {
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "diff -r %s/%s %s/%s >/dev/null", tmp, a, tmp, b);
    return system(cmd) == 0;
}

/* Values of the messages of `file` with this shortName (and level, member when >= 0) in file
 * order, as float32: [n, npts]. */
static float *eccodes_values(const char *file, const char *sn, long level, long member, int n,
                             size_t npts) {
    FILE *f = fopen(file, "rb");
    float *out = calloc((size_t)n * npts, sizeof(float));
    double *d = malloc(sizeof(double) * npts);
    int k = 0, err = 0;
    codes_handle *h;
    while (f && k < n && (h = codes_handle_new_from_file(NULL, f, PRODUCT_GRIB, &err))) {
        char s[64];
        size_t len = sizeof s, nv = npts;
        long lev = 0, num = 0;
        codes_get_string(h, "shortName", s, &len);
        codes_get_long(h, "level", &lev);
        codes_get_long(h, "number", &num);
        if (!strcmp(s, sn) && (level < 0 || lev == level) && (member < 0 || num == member) &&
            codes_get_double_array(h, "values", d, &nv) == 0 && nv == npts) {
            for (size_t p = 0; p < npts; p++) out[(size_t)k * npts + p] = (float)d[p];
            k++;
        }
        codes_handle_delete(h);
    }
    if (f) fclose(f);
    free(d);
    WX_CHECK(k == n, "%s: %d of %d messages of %s", file, k, n, sn);
    return out;
}

static float *records(const char *name, wx_archive_meta *m) {
    char out[1200];
    snprintf(out, sizeof out, "%s/%s", tmp, name);
    wx_archive_opts ao = {2, 1, 0};
    wx_archive *a;
    if (!WX_CHECK(wx_archive_open(out, &ao, &a) == WX_OK, "open %s: %s", name, wx_error_message()))
        return NULL;
    const wx_archive_meta *am = wx_archive_meta_of(a);
    size_t vals = (size_t)am->nchan * (size_t)wx_archive_points(am);
    float *all = malloc(sizeof(float) * vals * (size_t)am->count);
    for (int64_t t = 0; t < am->count; t++)
        WX_CHECK(wx_archive_read(a, &t, 1, all + (size_t)t * vals) == WX_OK, "read %lld",
                 (long long)t);
    *m = *am; /* scalar fields only are used after close */
    m->chan = NULL, m->mean = m->std = m->min = m->max = m->diff_std = NULL;
    wx_archive_close(a);
    return all;
}

/* Two-pass double statistics of x[t0..t1] (stride `stride` floats per time, npts each). */
static void ref_stats(const float *x, size_t stride, size_t npts, int t0, int t1, int lag,
                      double *mean, double *sd, double *mn, double *mx, double *dsd) {
    double s = 0, n = 0, q = 0;
    *mn = INFINITY, *mx = -INFINITY;
    for (int t = t0; t <= t1; t++)
        for (size_t p = 0; p < npts; p++) {
            double v = x[(size_t)t * stride + p];
            s += v, n++, *mn = fmin(*mn, v), *mx = fmax(*mx, v);
        }
    *mean = s / n;
    for (int t = t0; t <= t1; t++)
        for (size_t p = 0; p < npts; p++) q += (x[(size_t)t * stride + p] - *mean) * (x[(size_t)t * stride + p] - *mean);
    *sd = sqrt(q / n);
    double ds = 0, dq = 0, dn = 0;
    for (int t = t0 + lag; lag && t <= t1; t++)
        for (size_t p = 0; p < npts; p++) {
            double d = (double)x[(size_t)t * stride + p] - x[(size_t)(t - lag) * stride + p];
            ds += d, dn++;
        }
    for (int t = t0 + lag; lag && t <= t1; t++)
        for (size_t p = 0; p < npts; p++) {
            double d = (double)x[(size_t)t * stride + p] - x[(size_t)(t - lag) * stride + p] - ds / dn;
            dq += d * d;
        }
    *dsd = lag ? sqrt(dq / dn) : NAN;
}

static void check_stats(const char *what, int ch, const double *got_mean, const double *got_sd,
                        const double *got_mn, const double *got_mx, const double *got_dsd,
                        double mean, double sd, double mn, double mx, double dsd) {
    /* The manifest keeps 9 significant digits: 5e-9 relative; min/max are float values. */
    WX_CHECK(fabs(got_mean[ch] - mean) <= 1e-8 * fabs(mean), "%s mean %.12g vs %.12g", what, got_mean[ch], mean);
    WX_CHECK(fabs(got_sd[ch] - sd) <= 1e-8 * sd, "%s std %.12g vs %.12g", what, got_sd[ch], sd);
    WX_CHECK((float)got_mn[ch] == (float)mn && (float)got_mx[ch] == (float)mx, "%s min/max %.9g %.9g vs %.9g %.9g",
             what, got_mn[ch], got_mx[ch], mn, mx);
    if (!isnan(dsd))
        WX_CHECK(fabs(got_dsd[ch] - dsd) <= 1e-8 * dsd, "%s diff std %.12g vs %.12g", what, got_dsd[ch], dsd);
}

static wx_status manifest(const char *name, wx_archive_meta *m) {
    char out[1200];
    snprintf(out, sizeof out, "%s/%s", tmp, name);
    return wx_archive_read_manifest(out, m);
}

/* Hourly ERA5 t2m (UK, 49x33), float16, 2-record shards and batches (lag 6 > batch 2). */
static void hourly_f16(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "sources: [\"%s/era5/era5-2mt-2019-03-uk.grib\"]\nvariables: [{name: t2m, param: 2t}]\n"
             "dates: {start: \"2019-03-01T00:00\", end: \"2019-03-02T23:00\", step: \"1h\"}\n"
             "statistics: {start: \"2019-03-01T03:00\", end: \"2019-03-02T20:00\"}\n"
             "dtype: float16\nshard_mb: 0.008\nclimatology: false\n", WX_DATA_DIR);
    if (!run("h1", body, 1) || !run("h3", body, 3)) return;
    WX_CHECK(same_files("h1", "h3"), "hourly float16 archive identical with 1 and 3 threads");
    wx_archive_meta m, ms;
    float *got = records("h3", &m);
    if (!got || !WX_CHECK(manifest("h3", &ms) == WX_OK, "manifest: %s", wx_error_message())) return;
    WX_CHECK(wx_archive_shard_count(&m) == 24, "24 shards of 2 records, got %d", wx_archive_shard_count(&m));
    char file[1200];
    snprintf(file, sizeof file, "%s/era5/era5-2mt-2019-03-uk.grib", WX_DATA_DIR);
    size_t np = 49 * 33;
    float *ref = eccodes_values(file, "2t", -1, -1, 48, np);
    int bad = 0;
    for (size_t k = 0; k < 48 * np; k++) {
        ref[k] = (float)(_Float16)ref[k];
        bad += got[k] != ref[k];
    }
    WX_CHECK(bad == 0, "%d of %zu values differ from eccodes rounded to float16", bad, 48 * np);
    double mean, sd, mn, mx, dsd;
    ref_stats(ref, np, np, 3, 44, 6, &mean, &sd, &mn, &mx, &dsd);
    check_stats("hourly t2m", 0, ms.mean, ms.std, ms.min, ms.max, ms.diff_std, mean, sd, mn, mx, dsd);
    free(ref);
    free(got);
    wx_archive_meta_free(&ms);
}

/* Global 3-degree z500/t850 member 3 with drop_south_pole: statistics over 60 of 61 rows. */
static void drop_pole_stats(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "sources: [\"%s/era5/era5-levels-members.grib\"]\n"
             "variables: [{name: z500, param: z, level: 500}, {name: t850, param: t, level: 850}]\n"
             "dates: {start: \"2017-01-01T00:00\", end: \"2017-01-02T12:00\", step: \"12h\"}\n"
             "member: 3\ndrop_south_pole: true\nclimatology: false\n"
             "statistics: {start: \"2017-01-01T00:00\", end: \"2017-01-02T12:00\"}\n", WX_DATA_DIR);
    if (!run("p1", body, 1) || !run("p3", body, 3)) return;
    WX_CHECK(same_files("p1", "p3"), "drop_south_pole archive identical with 1 and 3 threads");
    wx_archive_meta ms;
    if (!WX_CHECK(manifest("p3", &ms) == WX_OK, "manifest: %s", wx_error_message())) return;
    char file[1200];
    snprintf(file, sizeof file, "%s/era5/era5-levels-members.grib", WX_DATA_DIR);
    size_t np = 120 * 61;
    const char *sn[2] = {"z", "t"};
    long lev[2] = {500, 850};
    for (int ch = 0; ch < 2; ch++) {
        float *ref = eccodes_values(file, sn[ch], lev[ch], 3, 4, np);
        double mean, sd, mn, mx, dsd;
        ref_stats(ref, np, 120 * 60, 0, 3, 0, &mean, &sd, &mn, &mx, &dsd);
        check_stats(sn[ch], ch, ms.mean, ms.std, ms.min, ms.max, ms.diff_std, mean, sd, mn, mx, dsd);
        free(ref);
    }
    WX_CHECK(ms.grid.nlat == 60, "60 rows kept, got %d", ms.grid.nlat);
    wx_archive_meta_free(&ms);
}

int main(void) {
    if (!mkdtemp(tmp)) return 1;
    hourly_f16();
    drop_pole_stats();
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    WX_CHECK(system(cmd) == 0, "cleanup");
    return wx_test_summary();
}
