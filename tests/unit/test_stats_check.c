/* verify's statistics re-check (data_prep/ingest.h wx_stats_check_*): on an archive written with
 * the shard writer, the recomputed statistics equal an independent two-pass computation in
 * double (the manifest holding those passes the check); an edited std is named with its channel;
 * an infinity in a record (a float16 overflow of an old archive) is named as such. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "ingest.h"
#include "wx_test.h"

enum { NCH = 2, NT = 9 };

static float value(int64_t t, int c, int p) { return (float)(100 * c + 3.0 * sin(0.7 * t + p) + 0.01 * p * t); }

/* mean, population std, min, max and the std of lag-1 differences of channel c over all records,
 * straight from the definition (two passes in double). */
static void two_pass(const wx_archive_meta *m, int c, double out[5]) {
    int64_t P = wx_archive_points(m);
    double s = 0, n = 0, mn = INFINITY, mx = -INFINITY, ds = 0, dn = 0;
    for (int64_t t = 0; t < NT; t++)
        for (int64_t p = 0; p < P; p++) {
            double v = value(t, c, (int)p);
            s += v, n++, mn = fmin(mn, v), mx = fmax(mx, v);
            if (t) ds += v - value(t - 1, c, (int)p), dn++;
        }
    double mean = s / n, dmean = ds / dn, q = 0, dq = 0;
    for (int64_t t = 0; t < NT; t++)
        for (int64_t p = 0; p < P; p++) {
            double v = value(t, c, (int)p);
            q += (v - mean) * (v - mean);
            if (t) {
                double d = v - value(t - 1, c, (int)p) - dmean;
                dq += d * d;
            }
        }
    out[0] = mean, out[1] = sqrt(q / n), out[2] = mn, out[3] = mx, out[4] = sqrt(dq / dn);
}

static int write(const char *dir, wx_archive_meta *m, int with_inf) {
    int64_t P = wx_archive_points(m);
    float *rec = malloc(sizeof(float) * (size_t)(NCH * P));
    int ok = wx_mkdir_p(dir) == WX_OK;
    wx_shard_writer *w = NULL;
    ok = ok && wx_shard_writer_open(dir, 0, m, &w) == WX_OK;
    for (int64_t t = 0; ok && t < NT; t++) {
        for (int c = 0; c < NCH; c++)
            for (int64_t p = 0; p < P; p++) rec[c * P + p] = value(t, c, (int)p);
        if (with_inf && t == 4) rec[P + 7] = INFINITY;
        ok = wx_shard_writer_put(w, rec) == WX_OK;
    }
    ok = ok && wx_shard_writer_commit(w) == WX_OK && wx_archive_write_manifest(dir, m) == WX_OK;
    free(rec);
    return ok;
}

/* Runs the check over the archive's records; returns its status. */
static wx_status check(const char *dir) {
    wx_archive_meta m;
    WX_TRY(wx_archive_read_manifest(dir, &m));
    wx_stats_check *s = wx_stats_check_begin(&m);
    wx_archive *a = NULL;
    wx_archive_opts o = {1, 1, 0};
    wx_status st = wx_archive_open(dir, &o, &a);
    float *rec = malloc(sizeof(float) * (size_t)(NCH * wx_archive_points(&m)));
    for (int64_t t = 0; st == WX_OK && t < m.count; t++)
        if ((st = wx_archive_read(a, &t, 1, rec)) == WX_OK) wx_stats_check_record(s, t, rec);
    if (a) wx_archive_close(a);
    st = st == WX_OK ? wx_stats_check_finish(s, dir) : (wx_stats_check_free(s), st);
    free(rec);
    wx_archive_meta_free(&m);
    return st;
}

int main(void) {
    char tmp[] = "/tmp/wx_stats_check_XXXXXX";
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    wx_archive_meta m;
    memset(&m, 0, sizeof m);
    m.nchan = NCH;
    m.chan = calloc(NCH, sizeof *m.chan);
    snprintf(m.chan[0].name, 64, "z500"), snprintf(m.chan[0].param, 64, "z");
    snprintf(m.chan[1].name, 64, "t2m"), snprintf(m.chan[1].param, 64, "2t");
    m.chan[0].kind = WX_LEVEL_PRESSURE, m.chan[0].level = 500, m.chan[1].kind = WX_LEVEL_SINGLE;
    wx_grid_global(30.0, &m.grid); /* 7 x 12 */
    m.start = 1483228800, m.step = 21600, m.count = NT, m.records_per_shard = NT, m.key = 7;
    m.has_stats = 1, m.stats_start = m.start, m.stats_end = m.start + (NT - 1) * m.step;
    m.diff_step = 21600;
    double *arr[5];
    for (int k = 0; k < 5; k++) arr[k] = calloc(NCH, sizeof(double));
    m.mean = arr[0], m.std = arr[1], m.min = arr[2], m.max = arr[3], m.diff_std = arr[4];
    for (int c = 0; c < NCH; c++) {
        double s[5];
        two_pass(&m, c, s);
        for (int k = 0; k < 5; k++) arr[k][c] = s[k];
    }
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/ok", tmp);
    WX_CHECK(write(dir, &m, 0), "write: %s", wx_error_message());
    wx_status st = check(dir);
    WX_CHECK(st == WX_OK, "statistics equal the two-pass computation: %s", st ? wx_error_message() : "");
    double keep = m.std[1];
    m.std[1] = 0;
    snprintf(dir, sizeof dir, "%s/edited", tmp);
    WX_CHECK(write(dir, &m, 0), "write: %s", wx_error_message());
    st = check(dir);
    WX_CHECK(st == WX_ERR_RUN && strstr(wx_error_message(), "statistics.std of channel t2m is 0, the records give "),
             "an edited std is named: %s", wx_error_message());
    m.std[1] = keep;
    snprintf(dir, sizeof dir, "%s/inf", tmp);
    WX_CHECK(write(dir, &m, 1), "write: %s", wx_error_message());
    st = check(dir);
    WX_CHECK(st == WX_ERR_RUN && strstr(wx_error_message(), "channel t2m holds infinite values"),
             "an infinity in a record is named: %s", wx_error_message());
    for (int k = 0; k < 5; k++) free(arr[k]);
    free(m.chan);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) printf("cleanup failed\n");
    return wx_test_summary();
}
