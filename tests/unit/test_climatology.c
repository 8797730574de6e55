/* Climatology (io/climatology.h, data_prep/climatology_build.c) on a synthetic two-year archive
 * (2019 + leap year 2020, 6-hourly) holding base + seasonal + diurnal signal + noise:
 * - values equal an independent double loop of the WeatherBench2 formula (weights 30-|k| over
 *   the circular day-of-year distance, day 365 of a non-leap year also counted as day 366, NaN
 *   skipped) at chosen days, every hour and point;
 * - the smoothed climatology recovers the known signal (seasonal amplitude times the window's
 *   gain, diurnal cycle exact) within the noise tolerance;
 * - a small memory budget (several passes) writes a byte-identical file;
 * - errors: hour not stored (lists the hours), day out of range, flipped data byte, damaged
 *   header. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "climatology_build.h"
#include "core/wx_fs.h"
#include "io/archive.h"
#include "io/climatology.h"
#include "wx_test.h"

#define NCH 2
#define A_SEAS 40.0 /* the window's attenuation, 40*(1-gain) = 0.88, is far above the tolerance */
#define D_DIUR 3.0

static double noise(int64_t t, int e) {
    uint32_t x = (uint32_t)(t * 2654435761u) ^ (uint32_t)(e * 40503u + 17);
    x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
    return (x / 4294967295.0) - 0.5; /* uniform in [-0.5, 0.5] */
}

static double signal(int doy, int hour, int e) {
    return 100 + e * 0.5 + A_SEAS * cos(2 * M_PI * (doy - 1) / 366.0) +
           D_DIUR * cos(2 * M_PI * hour / 24.0);
}

static int is_nan_point(const wx_archive_meta *m, int64_t t, int e) {
    /* Channel 1, point 5: missing through January 2019. */
    return e == (int)wx_archive_points(m) + 5 && t < 31 * 4;
}

static float value(const wx_archive_meta *m, int64_t t, int e) {
    if (is_nan_point(m, t, e)) return NAN;
    wx_time vt = m->start + t * m->step;
    return (float)(signal(wx_time_day_of_year(vt), wx_time_hour_of_day(vt), e) + noise(t, e));
}

static int make_archive(const char *dir, wx_archive_meta *m) {
    memset(m, 0, sizeof *m);
    m->nchan = NCH;
    m->chan = wx_calloc(NCH, sizeof *m->chan);
    for (int c = 0; c < NCH; c++) {
        snprintf(m->chan[c].name, sizeof m->chan[c].name, c ? "t850" : "t2m");
        snprintf(m->chan[c].param, sizeof m->chan[c].param, c ? "t" : "2t");
        m->chan[c].kind = c ? WX_LEVEL_PRESSURE : WX_LEVEL_SINGLE;
        m->chan[c].level = c ? 850 : 0;
        snprintf(m->chan[c].units, sizeof m->chan[c].units, "K");
    }
    wx_grid_global(30.0, &m->grid); /* 7 x 12 */
    m->start = wx_time_make(2019, 1, 1, 0, 0, 0);
    m->step = 21600;
    m->count = 731 * 4;
    m->records_per_shard = 1024;
    m->key = 7;
    m->has_stats = 1;
    m->stats_start = m->start;
    m->stats_end = m->start + (m->count - 1) * m->step;
    double **arr[] = {&m->mean, &m->std, &m->min, &m->max, &m->diff_std};
    for (int k = 0; k < 5; k++) *arr[k] = wx_calloc(NCH, sizeof(double));
    snprintf(m->climatology, sizeof m->climatology, "climatology.wxc");
    size_t E = (size_t)NCH * wx_archive_points(m);
    float *rec = wx_malloc(sizeof(float) * E);
    int ok = wx_mkdir_p(dir) == WX_OK;
    for (int s = 0; ok && s < wx_archive_shard_count(m); s++) {
        wx_shard_writer *w;
        ok = wx_shard_writer_open(dir, s, m, &w) == WX_OK;
        for (int64_t t = s * m->records_per_shard; ok && t < m->count && t < (s + 1) * m->records_per_shard; t++) {
            for (size_t e = 0; e < E; e++) rec[e] = value(m, t, (int)e);
            ok = wx_shard_writer_put(w, rec) == WX_OK;
        }
        ok = ok && wx_shard_writer_commit(w) == WX_OK;
    }
    free(rec);
    return ok && wx_archive_write_manifest(dir, m) == WX_OK;
}

/* wx_clim_fetch through the archive reader: the whole record, then the block asked for. */
static wx_status fetch(void *ctx, int64_t t, size_t q0, size_t n, float *out) {
    static float rec[NCH * 7 * 12];
    WX_TRY(wx_archive_read(ctx, &t, 1, rec));
    memcpy(out, rec + q0, sizeof(float) * n);
    return WX_OK;
}

static int files_equal(const char *a, const char *b) {
    char *x, *y;
    size_t nx, ny;
    if (wx_read_file(a, &x, &nx) != WX_OK) return 0;
    if (wx_read_file(b, &y, &ny) != WX_OK) return free(x), 0;
    int eq = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return eq;
}

/* Independent WeatherBench2-formula value at (doy, hour) for element e from all records. */
static double reference(const wx_archive_meta *m, const float *all, int doy, int hour, int e) {
    size_t E = (size_t)NCH * wx_archive_points(m);
    double num = 0, den = 0;
    for (int64_t t = 0; t < m->count; t++) {
        wx_time vt = m->start + t * m->step;
        if (wx_time_hour_of_day(vt) != hour || isnan(all[t * E + e])) continue;
        int64_t y;
        int mo, d, h, mi, s;
        wx_time_split(vt, &y, &mo, &d, &h, &mi, &s);
        int rd = wx_time_day_of_year(vt), leap = (y % 4 == 0);
        for (int dup = 0; dup < 1 + (rd == 365 && !leap); dup++) {
            int k = abs(rd + dup - doy);
            if (k > 183) k = 366 - k;
            double w = k < 30 ? 30 - k : 0;
            num += w * all[t * E + e];
            den += w;
        }
    }
    return num / den;
}

int main(void) {
    char tmp[] = "/tmp/wx_clim_XXXXXX";
    WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    char dir[1024], small[1100], path[1100];
    snprintf(dir, sizeof dir, "%s/a", tmp);
    wx_archive_meta m;
    if (!WX_CHECK(make_archive(dir, &m), "archive: %s", wx_error_message())) return wx_test_summary();
    size_t P = (size_t)wx_archive_points(&m), E = NCH * P;
    wx_archive *a;
    wx_archive_opts ao = {2, 1, 0};
    WX_CHECK(wx_archive_open(dir, &ao, &a) == WX_OK, "open archive");
    snprintf(path, sizeof path, "%s/climatology.wxc", dir);
    snprintf(small, sizeof small, "%s/small.wxc", tmp);
    WX_CHECK(wx_climatology_build(path, &m, m.stats_start, m.stats_end, NULL, fetch, a) == WX_OK,
             "build: %s", wx_error_message());
    /* 50 elements per pass: 4 passes over the records. */
    wx_clim_opts so = {61, 50 * (int64_t)(366 * (4 * 16 + 8) + 4), 0};
    WX_CHECK(wx_climatology_build(small, &m, m.stats_start, m.stats_end, &so, fetch, a) == WX_OK,
             "build in passes: %s", wx_error_message());
    WX_CHECK(files_equal(path, small), "several passes give the same file");
    /* Every 12 hours from the window's first record (00 UTC): hours 0 and 12 only, each slab the
     * same as the 6-hourly build's (the hours are independent); 18 UTC refused at reading. */
    char half[1100];
    snprintf(half, sizeof half, "%s/half.wxc", tmp);
    uint8_t hrs[24];
    WX_CHECK(wx_climatology_hours(&m, m.stats_start, m.stats_end, 12, hrs) == 2 && hrs[0] == 0 &&
                 hrs[1] == 12, "hours every 12 h: 0, 12");
    WX_CHECK(wx_climatology_hours(&m, m.start + 6 * 3600, m.stats_end, 12, hrs) == 2 && hrs[0] == 6 &&
                 hrs[1] == 18, "from a window starting at 06 UTC: 6, 18");
    wx_clim_opts ho = {61, (int64_t)1 << 30, 12};
    WX_CHECK(wx_climatology_build(half, &m, m.stats_start, m.stats_end, &ho, fetch, a) == WX_OK,
             "build every 12 h: %s", wx_error_message());
    float *all = wx_malloc(sizeof(float) * E * (size_t)m.count);
    int64_t *ts = wx_malloc(sizeof(int64_t) * (size_t)m.count);
    for (int64_t t = 0; t < m.count; t++) ts[t] = t;
    WX_CHECK(wx_archive_read(a, ts, (int)m.count, all) == WX_OK, "read all");
    wx_archive_close(a);

    wx_climatology *c;
    if (!WX_CHECK(wx_climatology_open(dir, &c) == WX_OK, "open: %s", wx_error_message()))
        return wx_test_summary();
    const wx_clim_header *h = wx_climatology_header(c);
    WX_CHECK(h->nhours == 4 && h->hours[1] == 6 && h->hours[3] == 18 && h->window == 61 &&
                 h->nchan == NCH && h->nlat == 7 && h->nlon == 12, "header");
    float *f = wx_malloc(sizeof(float) * E);
    const int days[] = {1, 2, 31, 60, 182, 365, 366};
    double maxrel = 0;
    for (int i = 0; i < 7; i++)
        for (int hr = 0; hr < 24; hr += 6) {
            WX_CHECK(wx_climatology_get(c, days[i], hr, f) == WX_OK, "get %d %d", days[i], hr);
            for (size_t e = 0; e < E; e++) {
                double r = reference(&m, all, days[i], hr, (int)e);
                maxrel = fmax(maxrel, fabs(f[e] - r) / fabs(r));
            }
        }
    printf("climatology vs independent loop: max rel err %.3g\n", maxrel);
    WX_CHECK(maxrel <= 2e-7, "equals the independent double loop: max rel err %.3g", maxrel);
    /* Signal recovery: the triangle window scales a 366-day cosine by its gain. */
    double gain = 0, wsum = 0;
    for (int k = -29; k <= 29; k++) gain += (30 - abs(k)) * cos(2 * M_PI * k / 366.0), wsum += 30 - abs(k);
    gain /= wsum;
    double maxerr = 0;
    for (int d = 1; d <= 366; d++)
        for (int hr = 0; hr < 24; hr += 6) {
            wx_climatology_get(c, d, hr, f);
            for (size_t e = 0; e < E; e++) {
                /* The point missing in January 2019 sees a lopsided window there (biased by the
                 * slope of the seasonal cycle); the exact check above covers it. */
                if (e == P + 5) continue;
                double want = signal(d, hr, (int)e) - A_SEAS * cos(2 * M_PI * (d - 1) / 366.0) * (1 - gain);
                maxerr = fmax(maxerr, fabs(f[e] - want));
            }
        }
    printf("signal recovery: max err %.3f (gain %.4f)\n", maxerr, gain);
    WX_CHECK(maxerr < 0.25, "recovers the seasonal+diurnal signal (gain %.4f): max err %.3f (noise +-0.5)",
             gain, maxerr);
    float *g = wx_malloc(sizeof(float) * E);
    WX_CHECK(wx_climatology_get_time(c, wx_time_make(2021, 3, 1, 12, 0, 0), g) == WX_OK &&
                 wx_climatology_get(c, 60, 12, f) == WX_OK && !memcmp(f, g, sizeof(float) * E),
             "get_time = day 60 hour 12");
    WX_CHECK(wx_climatology_get(c, 10, 3, f) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "hours: 0,6,12,18"), "hour 3: %s", wx_error_message());
    WX_CHECK(wx_climatology_get(c, 367, 0, f) == WX_ERR_RUN, "day 367");
    wx_climatology *c12;
    char halfdir[1100], cmd0[4800];
    snprintf(halfdir, sizeof halfdir, "%s/h", tmp);
    WX_CHECK(wx_mkdir_p(halfdir) == WX_OK, "mkdir");
    snprintf(cmd0, sizeof cmd0, "cp %s/manifest.json %s/ && mv %s %s/climatology.wxc", dir, halfdir, half, halfdir);
    WX_CHECK(system(cmd0) == 0, "place the 12-hourly file");
    if (WX_CHECK(wx_climatology_open(halfdir, &c12) == WX_OK, "open 12-hourly: %s", wx_error_message())) {
        const wx_clim_header *h12 = wx_climatology_header(c12);
        WX_CHECK(h12->nhours == 2 && h12->hours[0] == 0 && h12->hours[1] == 12, "12-hourly header");
        int same = 1;
        for (int d = 1; d <= 366 && same; d += 5)
            for (int hr = 0; hr < 24 && same; hr += 12)
                same = wx_climatology_get(c12, d, hr, g) == WX_OK && wx_climatology_get(c, d, hr, f) == WX_OK &&
                       !memcmp(f, g, sizeof(float) * E);
        WX_CHECK(same, "12-hourly slabs = the 6-hourly build's at 0 and 12 UTC");
        WX_CHECK(wx_climatology_get(c12, 10, 18, f) == WX_ERR_RUN && strstr(wx_error_message(), "hours: 0,12"),
                 "18 UTC not stored: %s", wx_error_message());
        wx_climatology_close(c12);
    }
    wx_climatology_close(c);
    /* Flip one data byte of slab (day 2, hour 6) = slab 5. */
    int fd = open(path, O_RDWR);
    off_t off = 8192 + 5 * (off_t)(E * 4) + 3; /* data_offset = (96 + 4*366*4) rounded to 4096 */
    unsigned char b;
    WX_CHECK(pread(fd, &b, 1, off) == 1, "read byte");
    b ^= 0x40;
    WX_CHECK(pwrite(fd, &b, 1, off) == 1, "write byte");
    close(fd);
    WX_CHECK(wx_climatology_open(dir, &c) == WX_OK, "reopen");
    WX_CHECK(wx_climatology_get(c, 2, 6, f) == WX_ERR_RUN && strstr(wx_error_message(), "crc32") &&
                 strstr(wx_error_message(), "day 2 hour 6"), "damage caught: %s", wx_error_message());
    WX_CHECK(wx_climatology_get(c, 2, 0, f) == WX_OK, "neighbour slab fine");
    wx_climatology_close(c);
    fd = open(path, O_RDWR);
    b = 5;
    WX_CHECK(pwrite(fd, &b, 1, 70) == 1, "damage header (statistics start)");
    close(fd);
    WX_CHECK(wx_climatology_open(dir, &c) == WX_ERR_RUN && strstr(wx_error_message(), "checksum"),
             "header damage: %s", wx_error_message());
    free(f);
    free(g);
    free(all);
    free(ts);
    wx_archive_meta_free(&m);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    WX_CHECK(system(cmd) == 0, "cleanup");
    return wx_test_summary();
}
