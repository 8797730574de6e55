/* GRIB reader against eccodes' own decoding: for every message of the real ERA5 files, every
 * point's value from eccodes' geo-iterator (lat, lon, value) must equal, exactly, the value our
 * reader stored at that latitude/longitude; metadata (parameter, level, member, valid time) must
 * match eccodes' keys. Gaussian grids and the damaged file must fail with their clear errors. Test
 * files written here: the same field in four scanning modes / longitude conventions / hPa vs Pa
 * must decode identically; bitmap missing values and a truncated file give clear errors. */
#include <eccodes.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "era5_testdata.h"
#include "io/wx_source.h"
#include "wx_test.h"

static char path_buf[1024];
static const char *data(const char *name) {
    snprintf(path_buf, sizeof path_buf, "%s/era5/%s", WX_DATA_DIR, name);
    return path_buf;
}

/* Compares every message of `file` with eccodes' iterator; returns number of messages. */
static int check_file_against_eccodes(const char *name) {
    const char *path = data(name);
    wx_source *s = NULL;
    if (!WX_CHECK(wx_source_open(path, &s) == WX_OK, "%s: open: %s", name, wx_error_message()))
        return 0;
    FILE *fp = fopen(path, "rb");
    int err = 0, msg = 0;
    long bad = 0, points = 0, meta_bad = 0;
    codes_handle *h;
    while ((h = codes_handle_new_from_file(NULL, fp, PRODUCT_GRIB, &err)) != NULL) {
        const wx_field_info *f = wx_source_info(s, msg);
        msg++;
        if (!f) break;
        float *vals = wx_malloc(sizeof(float) * (size_t)f->grid.nlat * f->grid.nlon);
        if (wx_source_read(s, msg - 1, WX_MISSING_ERROR, vals) != WX_OK) {
            WX_CHECK(0, "%s: read %d: %s", name, msg, wx_error_message());
            free(vals);
            codes_handle_delete(h);
            break;
        }
        codes_iterator *it = codes_grib_iterator_new(h, 0, &err);
        double lat, lon, v;
        while (codes_grib_iterator_next(it, &lat, &lon, &v)) {
            int j = (int)floor((f->grid.lat0 - lat) / f->grid.dlat + 0.5);
            double dl = fmod(lon - f->grid.lon0 + 720.0, 360.0);
            int i = (int)floor(dl / f->grid.dlon + 0.5) % f->grid.nlon;
            points++;
            if (j < 0 || j >= f->grid.nlat || vals[(size_t)j * f->grid.nlon + i] != (float)v) bad++;
        }
        codes_grib_iterator_delete(it);
        char sn[64];
        size_t len = sizeof sn;
        long level = 0, number = -1, vd = 0, vt = 0;
        codes_get_string(h, "shortName", sn, &len);
        codes_get_long(h, "level", &level);
        if (codes_is_defined(h, "number")) codes_get_long(h, "number", &number);
        codes_get_long(h, "validityDate", &vd);
        codes_get_long(h, "validityTime", &vt);
        wx_time t;
        wx_time_from_grib(vd, vt, &t);
        if (strcmp(sn, f->name) || (f->kind == WX_LEVEL_PRESSURE && level != (long)f->level) ||
            number != f->member || t != f->valid)
            meta_bad++;
        free(vals);
        codes_handle_delete(h);
    }
    fclose(fp);
    WX_CHECK(msg == wx_source_count(s), "%s: %d messages vs %d fields", name, msg, wx_source_count(s));
    WX_CHECK(bad == 0 && points > 0, "%s: %ld of %ld points differ from eccodes", name, bad, points);
    WX_CHECK(meta_bad == 0, "%s: %ld messages with metadata differing from eccodes", name, meta_bad);
    wx_source_close(s);
    return msg;
}

static void expect_open_error(const char *path, const char *a, const char *b) {
    wx_source *s = NULL;
    wx_status st = wx_source_open(path, &s);
    WX_CHECK(st == WX_ERR_RUN, "%s: expected an error", path);
    WX_CHECK(strstr(wx_error_message(), a) && strstr(wx_error_message(), b),
             "%s: message '%s' should contain '%s' and '%s'", path, wx_error_message(), a, b);
    wx_source_close(s);
}

static int read_first(const char *path, wx_field_info *info, float *vals) {
    wx_source *s;
    if (wx_source_open(path, &s) != WX_OK) return 0;
    *info = *wx_source_info(s, 0);
    int ok = wx_source_read(s, 0, WX_MISSING_ERROR, vals) == WX_OK;
    wx_source_close(s);
    return ok;
}

int main(void) {
    WX_CHECK(check_file_against_eccodes("era5-levels-members.grib") == 160, "160 messages");
    WX_CHECK(check_file_against_eccodes("uv_on_different_levels.grib") == 16, "16 messages");
    check_file_against_eccodes("regular_ll_sfc.grib");
    check_file_against_eccodes("regular_ll_msl.grib");
    WX_CHECK(check_file_against_eccodes("era5-2mt-2019-03-uk.grib") == 744, "744 messages");

    /* Metadata beyond the iterator check. */
    wx_source *s;
    if (WX_CHECK(wx_source_open(data("era5-levels-members.grib"), &s) == WX_OK, "open")) {
        const wx_field_info *f = wx_source_info(s, 0);
        WX_CHECK(f->grid.nlat == 61 && f->grid.nlon == 120 && f->grid.lat0 == 90 &&
                     f->grid.lon0 == 0 && f->grid.dlat == 3, "3 degree grid");
        int members_seen[10] = {0};
        for (int i = 0; i < wx_source_count(s); i++) {
            const wx_field_info *g = wx_source_info(s, i);
            if (g->member >= 0 && g->member < 10) members_seen[g->member]++;
        }
        for (int m = 0; m < 10; m++) WX_CHECK(members_seen[m] == 16, "member %d: 16 fields", m);
        wx_source_close(s);
    }
    if (WX_CHECK(wx_source_open(data("regular_ll_msl.grib"), &s) == WX_OK, "msl")) {
        const wx_field_info *f = wx_source_info(s, 0);
        WX_CHECK(!strcmp(f->param, "prmsl") && f->kind == WX_LEVEL_SINGLE && f->grid.nlat == 181,
                 "prmsl single level 181 rows");
        wx_source_close(s);
    }
    if (WX_CHECK(wx_source_open(data("era5-2mt-2019-03-uk.grib"), &s) == WX_OK, "uk")) {
        const wx_field_info *f = wx_source_info(s, 0);
        /* grib_get: Ni 49 Nj 33, latitudeOfFirst 58, longitudeOfFirst -10 (so lon0 = 350). */
        WX_CHECK(!strcmp(f->param, "2t") && f->grid.nlon == 49 && f->grid.nlat == 33 &&
                     f->grid.lon0 == 350 && f->grid.lat0 == 58, "uk grid lon0 %g lat0 %g",
                 f->grid.lon0, f->grid.lat0);
        wx_source_close(s);
    }

    expect_open_error(data("regular_gg_pl.grib"), "regular_gg", "cdo remapbil");
    expect_open_error(data("reduced_gg.grib"), "reduced_gg", "cdo remapbil");
    expect_open_error(data("era5-levels-corrupted.grib"), "message 1", "damaged");

    /* Self-written GRIB: four layouts of the same field decode identically. */
    char tmp[] = "/tmp/wx_grib_read_XXXXXX";
    WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    td_grib_opts layouts[] = {{0, 0, 0, 0, 0, 2}, {1, 0, 0, 0, 0, 2}, {0, 1, 0, 0, 0, 2},
                              {0, 0, 1, 0, 0, 2}, {1, 1, 1, 1, 0, 2}, {0, 0, 0, 0, 0, 1}};
    int nl = 37, nn = 72;
    float *ref = wx_malloc(sizeof(float) * nl * nn), *got = wx_malloc(sizeof(float) * nl * nn);
    for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/layout%zu.grib", tmp, k);
        FILE *fp = fopen(p, "wb");
        WX_CHECK(td_grib_write(fp, "t", 850, 1, 5.0, &layouts[k]) == 0, "write layout %zu", k);
        fclose(fp);
        wx_field_info f = {0};
        if (!WX_CHECK(read_first(p, &f, k ? got : ref), "read layout %zu: %s", k,
                      wx_error_message()))
            continue;
        WX_CHECK(f.grid.lat0 == 90 && f.grid.lon0 == 0 && f.grid.nlat == nl && f.grid.nlon == nn,
                 "layout %zu stored grid", k);
        WX_CHECK(f.kind == WX_LEVEL_PRESSURE && f.level == 850, "layout %zu level %g", k, f.level);
        WX_CHECK(f.valid == 1483228800 + 21600, "layout %zu valid time", k);
        if (k) WX_CHECK(!memcmp(ref, got, sizeof(float) * nl * nn), "layout %zu equals layout 0", k);
        else {
            /* Row 2 (80N), column 3 (15E) against the formula (24-bit packing: 1e-3 K). */
            double want = td_value(80, 15, 1, 850);
            WX_CHECK(fabs(ref[2 * nn + 3] - want) < 2e-3, "value %g vs %g", ref[2 * nn + 3], want);
        }
    }
    /* Missing values: error naming message, variable and count; nan policy keeps NaN. */
    char p[1200];
    snprintf(p, sizeof p, "%s/missing.grib", tmp);
    FILE *fp = fopen(p, "wb");
    td_grib_opts mo = {0, 0, 0, 0, 5, 2};
    WX_CHECK(td_grib_write(fp, "2t", 0, 0, 5.0, &mo) == 0, "write missing");
    fclose(fp);
    if (WX_CHECK(wx_source_open(p, &s) == WX_OK, "open missing")) {
        WX_CHECK(wx_source_read(s, 0, WX_MISSING_ERROR, got) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "message 1") && strstr(wx_error_message(), "2t") &&
                     strstr(wx_error_message(), "5 of 2664") &&
                     strstr(wx_error_message(), "2017-01-01T00:00"),
                 "missing error: %s", wx_error_message());
        WX_CHECK(wx_source_read(s, 0, WX_MISSING_NAN, got) == WX_OK, "nan policy");
        int nn_ = 0;
        for (int k = 0; k < nl * nn; k++) nn_ += isnan(got[k]);
        WX_CHECK(nn_ == 5, "5 NaN, got %d", nn_);
        wx_source_close(s);
    }
    /* Truncated file: two messages, the second cut in half. */
    snprintf(p, sizeof p, "%s/trunc.grib", tmp);
    fp = fopen(p, "wb");
    td_grib_write(fp, "t", 500, 0, 5.0, &layouts[0]);
    long one = ftell(fp);
    td_grib_write(fp, "t", 500, 1, 5.0, &layouts[0]);
    fclose(fp);
    WX_CHECK(truncate(p, one + (one / 2)) == 0, "truncate");
    expect_open_error(p, "message 2", "truncated");
    free(ref);
    free(got);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    WX_CHECK(system(cmd) == 0, "cleanup");
    return wx_test_summary();
}
