/* GRIB2 writer and reader conventions, checked with eccodes' own decoding:
 * - ensembles: member 0 (the unperturbed control) is a control forecast (typeOfProcessedData 3,
 *   typeOfEnsembleForecast 1, dataType cf), members 1.. perturbed (4, 3, pf) with their
 *   perturbationNumber, instantaneous (PDT 4.1) and accumulated (PDT 4.11) alike;
 * - NaN goes through the bitmap: numberOfMissing equals the NaN count, the missing points decode
 *   as eccodes' missingValue, and every other value round-trips within the 16-bit packing step
 *   (range / 65535), which a missing value packed as data (9999) would blow far past;
 * - geopotential height (gh, paramId 156, gpm), as ECMWF open data gives it on pressure levels,
 *   reads as the z channel times 9.80665. */
#include <eccodes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/grib_write.h"
#include "io/wx_source.h"
#include "wx_test.h"

enum { NLAT = 19, NLON = 36 }; /* 10 degrees */

static double field_value(int j, int i, int k) {
    return 250.0 + 30.0 * cos((90.0 - 10.0 * j) * M_PI / 180) + 3.0 * sin(i * 0.7 + k);
}

static long get_l(codes_handle *h, const char *key) {
    long v = -999;
    int e = codes_get_long(h, key, &v);
    return e ? -999 : v;
}

static void check_ensemble(const char *dir, const wx_grid *g) {
    char path[512];
    snprintf(path, sizeof path, "%s/ens.grib2", dir);
    wx_grib_writer w;
    WX_CHECK(wx_grib_writer_open(&w, path) == WX_OK, "open: %s", wx_error_message());
    w.forecast = 1;
    const wx_catalogue_entry *t2 = wx_catalogue_find("2t"), *tp = wx_catalogue_find("tp");
    float *v = wx_malloc(sizeof(float) * NLAT * NLON);
    const int members = 3;
    for (int m = 0; m < members; m++)
        for (int k = 0; k < 2; k++) {
            for (int p = 0; p < NLAT * NLON; p++) v[p] = (float)(k ? 1e-3 * (p % 7) : field_value(p / NLON, p % NLON, m));
            wx_grib_field f = {k ? tp : t2, 0, 946684800, k ? 0 : 6 * 3600, 6 * 3600, m, members};
            WX_CHECK(wx_grib_writer_add(&w, &f, g, v) == WX_OK, "add member %d: %s", m, wx_error_message());
        }
    WX_CHECK(wx_grib_writer_close(&w) == WX_OK, "close: %s", wx_error_message());
    free(v);
    FILE *fp = fopen(path, "rb");
    if (!WX_CHECK(fp != NULL, "%s written", path)) return;
    int err = 0, n = 0, bad = 0;
    codes_handle *h;
    while ((h = codes_handle_new_from_file(NULL, fp, PRODUCT_GRIB, &err)) != NULL) {
        int m = n / 2, k = n % 2;
        char dt[32] = "";
        size_t len = sizeof dt;
        codes_get_string(h, "dataType", dt, &len);
        long tpd = get_l(h, "typeOfProcessedData"), tef = get_l(h, "typeOfEnsembleForecast");
        long num = get_l(h, "perturbationNumber"), tot = get_l(h, "numberOfForecastsInEnsemble");
        long pdt = get_l(h, "productDefinitionTemplateNumber");
        int want_cf = m == 0;
        int good = !strcmp(dt, want_cf ? "cf" : "pf") && tpd == (want_cf ? 3 : 4) &&
                   tef == (want_cf ? 1 : 3) && num == m && tot == members && pdt == (k ? 11 : 1);
        bad += !good;
        WX_CHECK(good, "message %d (member %d, %s): dataType %s typeOfProcessedData %ld "
                 "typeOfEnsembleForecast %ld perturbationNumber %ld of %ld, PDT %ld; want %s %d %d "
                 "%d of %d, PDT %d", n + 1, m, k ? "tp" : "2t", dt, tpd, tef, num, tot, pdt,
                 want_cf ? "cf" : "pf", want_cf ? 3 : 4, want_cf ? 1 : 3, m, members, k ? 11 : 1);
        codes_handle_delete(h);
        n++;
    }
    fclose(fp);
    WX_CHECK(n == 2 * members, "%d messages (want %d)", n, 2 * members);
    /* our reader gives each message its member back */
    wx_source *s = NULL;
    if (WX_CHECK(wx_source_open(path, &s) == WX_OK, "read back: %s", wx_error_message())) {
        int ok = wx_source_count(s) == 2 * members;
        for (int i = 0; ok && i < wx_source_count(s); i++) ok = wx_source_info(s, i)->member == i / 2;
        WX_CHECK(ok, "reader: members 0,0,1,1,2,2");
        wx_source_close(s);
    }
}

static void check_nan(const char *dir, const wx_grid *g) {
    char path[512];
    snprintf(path, sizeof path, "%s/nan.grib2", dir);
    float *v = wx_malloc(sizeof(float) * NLAT * NLON);
    double lo = INFINITY, hi = -INFINITY;
    int nnan = 0;
    for (int j = 0; j < NLAT; j++)
        for (int i = 0; i < NLON; i++) {
            int miss = j == NLAT - 1 || (j * 7 + i * 3) % 11 == 0; /* the pole row (FourCastNet's
                                                                    padding) and a scatter */
            float x = (float)field_value(j, i, 0);
            v[j * NLON + i] = miss ? NAN : x;
            if (miss) nnan++;
            else lo = fmin(lo, x), hi = fmax(hi, x);
        }
    wx_grib_writer w;
    WX_CHECK(wx_grib_writer_open(&w, path) == WX_OK, "open: %s", wx_error_message());
    wx_grib_field f = {wx_catalogue_find("2t"), 0, 946684800, 0, 12 * 3600, -1, 0};
    WX_CHECK(wx_grib_writer_add(&w, &f, g, v) == WX_OK, "add: %s", wx_error_message());
    WX_CHECK(wx_grib_writer_close(&w) == WX_OK, "close: %s", wx_error_message());
    FILE *fp = fopen(path, "rb");
    int err = 0;
    codes_handle *h = fp ? codes_handle_new_from_file(NULL, fp, PRODUCT_GRIB, &err) : NULL;
    if (!WX_CHECK(h != NULL, "eccodes opens %s", path)) {
        if (fp) fclose(fp);
        free(v);
        return;
    }
    long nmiss = get_l(h, "numberOfMissing"), bitmap = get_l(h, "bitmapPresent");
    WX_CHECK(bitmap == 1 && nmiss == nnan, "bitmapPresent %ld, numberOfMissing %ld (want 1, %d)",
             bitmap, nmiss, nnan);
    double miss = 0;
    codes_get_double(h, "missingValue", &miss);
    size_t n = NLAT * NLON;
    double *d = wx_malloc(sizeof(double) * n);
    WX_CHECK(codes_get_double_array(h, "values", d, &n) == 0 && n == NLAT * NLON, "decode");
    double tol = (hi - lo) / 65535.0, worst = 0;
    int wrong_missing = 0;
    for (size_t p = 0; p < n; p++) {
        if (isnan(v[p])) wrong_missing += d[p] != miss;
        else {
            wrong_missing += d[p] == miss;
            worst = fmax(worst, fabs(d[p] - v[p]));
        }
    }
    WX_CHECK(wrong_missing == 0, "%d points decode wrongly as (non-)missing", wrong_missing);
    WX_CHECK(worst <= tol, "values within the 16-bit step: max error %.3g <= %.3g (range %g..%g)",
             worst, tol, lo, hi);
    double dmax = 0;
    codes_get_double(h, "max", &dmax);
    WX_CHECK(fabs(dmax - hi) <= tol, "eccodes max %g = the largest non-missing value %g", dmax, hi);
    codes_handle_delete(h);
    fclose(fp);
    free(d);
    /* and our reader brings the NaN back where they were */
    wx_source *s = NULL;
    if (WX_CHECK(wx_source_open(path, &s) == WX_OK, "read back: %s", wx_error_message())) {
        float *r = wx_malloc(sizeof(float) * NLAT * NLON);
        WX_CHECK(wx_source_read(s, 0, WX_MISSING_NAN, r) == WX_OK, "read: %s", wx_error_message());
        int same = 0;
        for (int p = 0; p < NLAT * NLON; p++) same += isnan(r[p]) == isnan(v[p]);
        WX_CHECK(same == NLAT * NLON, "reader: NaN at the same %d points", nnan);
        free(r);
        wx_source_close(s);
    }
    free(v);
}

/* A gh field written by eccodes alone (GRIB2 sample, shortName gh at 500 hPa). */
static void check_gh(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/gh.grib2", dir);
    codes_handle *h = codes_grib_handle_new_from_samples(NULL, "regular_ll_pl_grib2");
    if (!WX_CHECK(h != NULL, "eccodes sample regular_ll_pl_grib2")) return;
    size_t len;
    const char *sn = "gh";
    len = strlen(sn);
    int e = codes_set_long(h, "Ni", NLON) | codes_set_long(h, "Nj", NLAT) |
            codes_set_double(h, "latitudeOfFirstGridPointInDegrees", 90) |
            codes_set_double(h, "longitudeOfFirstGridPointInDegrees", 0) |
            codes_set_double(h, "latitudeOfLastGridPointInDegrees", -90) |
            codes_set_double(h, "longitudeOfLastGridPointInDegrees", 350) |
            codes_set_double(h, "iDirectionIncrementInDegrees", 10) |
            codes_set_double(h, "jDirectionIncrementInDegrees", 10) |
            codes_set_long(h, "jScansPositively", 0) | codes_set_long(h, "dataDate", 20240101) |
            codes_set_long(h, "dataTime", 0) | codes_set_long(h, "level", 500) |
            codes_set_string(h, "shortName", sn, &len) | codes_set_long(h, "bitsPerValue", 16);
    double *gh = wx_malloc(sizeof(double) * NLAT * NLON);
    for (int p = 0; p < NLAT * NLON; p++) gh[p] = 5500 + 300 * cos((90.0 - 10.0 * (p / NLON)) * M_PI / 180) + p % 5;
    e |= codes_set_double_array(h, "values", gh, NLAT * NLON);
    long pid = get_l(h, "paramId");
    WX_CHECK(e == 0 && pid == 156, "eccodes: gh set (paramId %ld, want 156)", pid);
    size_t n = NLAT * NLON;
    codes_get_double_array(h, "values", gh, &n); /* the packed values, as a reader decodes them */
    WX_CHECK(codes_write_message(h, path, "w") == 0, "write %s", path);
    codes_handle_delete(h);
    wx_source *s = NULL;
    if (!WX_CHECK(wx_source_open(path, &s) == WX_OK, "open gh file: %s", wx_error_message())) {
        free(gh);
        return;
    }
    const wx_field_info *f = wx_source_info(s, 0);
    WX_CHECK(!strcmp(f->param, "z") && f->entry && f->entry->param_id == 129 &&
                 f->kind == WX_LEVEL_PRESSURE && f->level == 500 && !strcmp(f->name, "gh"),
             "gh at 500 hPa is channel z 500 (param %s, level %g, name %s)", f->param, f->level, f->name);
    float *r = wx_malloc(sizeof(float) * NLAT * NLON);
    double *want = wx_malloc(sizeof(double) * NLAT * NLON);
    for (int p = 0; p < NLAT * NLON; p++) want[p] = 9.80665 * gh[p];
    if (WX_CHECK(wx_source_read(s, 0, WX_MISSING_ERROR, r) == WX_OK, "read: %s", wx_error_message()))
        WX_CHECK_CLOSE_F32("z = 9.80665 gh (m2 s-2)", r, want, NLAT * NLON, 4e-7, 0);
    wx_source_close(s);
    free(r), free(want), free(gh);
    double k = 0;
    WX_CHECK(wx_catalogue_find_converted("gh", WX_LEVEL_SINGLE, &k) == NULL &&
                 wx_catalogue_find_converted("t", WX_LEVEL_PRESSURE, &k) == NULL,
             "only gh on pressure levels is converted");
}

int main(void) {
    char dir[] = "/tmp/wx_test_grib_write.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    wx_grid g;
    WX_CHECK(wx_grid_make(NLAT, NLON, 90, 10, 0, 10, &g) == WX_OK, "grid");
    check_ensemble(dir, &g);
    check_nan(dir, &g);
    check_gh(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
    return wx_test_summary();
}
