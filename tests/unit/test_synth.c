/* The synthetic reanalysis end to end on a tiny world (T21, 32×64, 20 spin-up days, 2 output days):
 * - the GRIB2 and NetCDF writers round-trip a known analytic field: eccodes (the library's own
 *   decoder, not ours) returns every key we set and values within the 16-bit packing step;
 *   netCDF-C returns names, units, coordinates and exact float32 values;
 * - two runs of the same config are byte-identical, a different seed is not;
 * - the run's fields are finite, tp ≥ 0 and within realistic ranges, and GRIB and NetCDF files
 *   of one run agree within the packing step. */
#include <eccodes.h>
#include <math.h>
#include <netcdf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "io/grib_write.h"
#include "io/netcdf_write.h"
#include "synth/synth_run.h"
#include "wx_test.h"

static int files_equal(const char *a, const char *b) {
    char *x, *y;
    size_t nx, ny;
    if (wx_read_file(a, &x, &nx) || wx_read_file(b, &y, &ny)) return 0;
    int eq = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return eq;
}

static void writer_roundtrip(const char *dir) {
    wx_grid g;
    wx_grid_make(19, 36, 90, 10, 0, 10, &g);
    int n = g.nlat * g.nlon;
    float *v = malloc(sizeof(float) * n);
    for (int j = 0; j < g.nlat; j++)
        for (int i = 0; i < g.nlon; i++)
            v[j * g.nlon + i] = (float)(50000 + 3000 * sin(wx_grid_lat(&g, j) * M_PI / 180) +
                                        500 * cos(wx_grid_lon(&g, i) * M_PI / 90));
    char path[512];
    snprintf(path, sizeof path, "%s/rt.grib", dir);
    wx_grib_writer w;
    const wx_catalogue_entry *z = wx_catalogue_find_kind("z", WX_LEVEL_PRESSURE),
                             *tp = wx_catalogue_find("tp");
    wx_time ref = wx_time_make(2001, 3, 4, 18, 0, 0);
    wx_grib_field f1 = {z, 500, ref, 0, 12 * 3600, -1, 0}, f2 = {tp, 0, ref, 6 * 3600, 12 * 3600, -1, 0};
    WX_CHECK(wx_grib_writer_open(&w, path) == WX_OK, "open: %s", wx_error_message());
    WX_CHECK(wx_grib_writer_add(&w, &f1, &g, v) == WX_OK, "add z: %s", wx_error_message());
    WX_CHECK(wx_grib_writer_add(&w, &f2, &g, v) == WX_OK, "add tp: %s", wx_error_message());
    WX_CHECK(wx_grib_writer_close(&w) == WX_OK, "close: %s", wx_error_message());
    FILE *fp = fopen(path, "rb");
    WX_CHECK(fp != NULL, "GRIB file exists after commit");
    int err = 0, k = 0;
    codes_handle *h;
    while (fp && (h = codes_handle_new_from_file(NULL, fp, PRODUCT_GRIB, &err))) {
        char sn[64], tol[64];
        size_t len = sizeof sn;
        codes_get_string(h, "shortName", sn, &len);
        len = sizeof tol;
        codes_get_string(h, "typeOfLevel", tol, &len);
        long pid, lev, date, time, ni, nj, st0, st1, jscan;
        codes_get_long(h, "paramId", &pid);
        codes_get_long(h, "level", &lev);
        codes_get_long(h, "dataDate", &date);
        codes_get_long(h, "dataTime", &time);
        codes_get_long(h, "Ni", &ni);
        codes_get_long(h, "Nj", &nj);
        codes_get_long(h, "startStep", &st0);
        codes_get_long(h, "endStep", &st1);
        codes_get_long(h, "jScansPositively", &jscan);
        double lat1, lon2;
        codes_get_double(h, "latitudeOfFirstGridPointInDegrees", &lat1);
        codes_get_double(h, "longitudeOfLastGridPointInDegrees", &lon2);
        WX_CHECK(date == 20010304 && time == 1800 && ni == 36 && nj == 19 && jscan == 0 &&
                     lat1 == 90 && fabs(lon2 - 350) < 1e-6,
                 "message %d: date %ld time %ld grid %ldx%ld scan %ld lat1 %g lon2 %g", k, date,
                 time, nj, ni, jscan, lat1, lon2);
        if (k == 0)
            WX_CHECK(!strcmp(sn, "z") && pid == 129 && !strcmp(tol, "isobaricInhPa") && lev == 500 &&
                         st1 == 12,
                     "z message: %s %ld %s %ld step %ld", sn, pid, tol, lev, st1);
        else
            WX_CHECK(!strcmp(sn, "tp") && pid == 228 && !strcmp(tol, "surface") && st0 == 6 &&
                         st1 == 12,
                     "tp message: %s %ld %s steps %ld-%ld", sn, pid, tol, st0, st1);
        size_t nv = n;
        double *got = malloc(sizeof(double) * n), maxe = 0;
        codes_get_double_array(h, "values", got, &nv);
        for (int i = 0; i < n; i++) maxe = fmax(maxe, fabs(got[i] - v[i]));
        double step = 7000.0 / 65535; /* field range / 2^16 */
        WX_CHECK(nv == (size_t)n && maxe <= step, "message %d values: max error %.4f (packing step %.4f)",
                 k, maxe, step);
        free(got);
        codes_handle_delete(h);
        k++;
    }
    WX_CHECK(k == 2, "2 messages read back (got %d)", k);
    if (fp) fclose(fp);

    snprintf(path, sizeof path, "%s/rt.nc", dir);
    double lev = 500;
    wx_nc_var vars[1] = {{"z", "m2 s-2", "geopotential", "Geopotential", 1}};
    wx_nc_layout L = {g, 1, &lev, 1, vars, 0, 0, "test", NULL, 1};
    wx_nc_writer nw;
    WX_CHECK(wx_nc_writer_open(&nw, path, &L) == WX_OK, "nc open: %s", wx_error_message());
    WX_CHECK(wx_nc_writer_put(&nw, 0, ref, 0, 0, v) == WX_OK, "nc put: %s", wx_error_message());
    WX_CHECK(access(path, F_OK) != 0, "no final NetCDF before close (atomic write)");
    WX_CHECK(wx_nc_writer_close(&nw) == WX_OK, "nc close: %s", wx_error_message());
    int nc, vid, tid, latid;
    WX_CHECK(nc_open(path, NC_NOWRITE, &nc) == NC_NOERR, "nc_open");
    WX_CHECK(nc_inq_varid(nc, "z", &vid) == NC_NOERR && nc_inq_varid(nc, "valid_time", &tid) == NC_NOERR &&
                 nc_inq_varid(nc, "latitude", &latid) == NC_NOERR,
             "variables z, valid_time, latitude");
    char units[64] = "", conv[32] = "";
    nc_get_att_text(nc, vid, "units", units);
    nc_get_att_text(nc, NC_GLOBAL, "Conventions", conv);
    WX_CHECK(!strcmp(units, "m2 s-2") && !strncmp(conv, "CF-1.8", 6), "units '%s', Conventions '%s'", units, conv);
    long long tv = 0;
    nc_get_var_longlong(nc, tid, &tv);
    memset(units, 0, sizeof units);
    nc_get_att_text(nc, tid, "units", units);
    WX_CHECK(tv == (long long)ref && !strcmp(units, "seconds since 1970-01-01"), "valid_time %lld (%s)", tv, units);
    double lats[19];
    nc_get_var_double(nc, latid, lats);
    WX_CHECK(lats[0] == 90 && lats[18] == -90, "latitude north to south: %g .. %g", lats[0], lats[18]);
    float *back = malloc(sizeof(float) * n);
    nc_get_var_float(nc, vid, back);
    WX_CHECK(!memcmp(back, v, sizeof(float) * n), "NetCDF values are exactly the float32 written");
    nc_close(nc);
    free(back);
    free(v);
}

static const char *cfg_text =
    "truncation: 21\nnlat: 32\nnlon: 64\nstart_year: 2003\ndays: 2\nspin_up_days: 20\n"
    "formats: [grib, netcdf]\n";

static void run_to(const char *dir, const char *extra) {
    char cfg[512], text[1024];
    snprintf(cfg, sizeof cfg, "%s.yaml", dir);
    snprintf(text, sizeof text, "%s%s", cfg_text, extra);
    FILE *fp = fopen(cfg, "w");
    fputs(text, fp);
    fclose(fp);
    wx_synth_opts o = {0};
    o.output = dir;
    wx_status st = wx_synth_run(cfg, &o);
    WX_CHECK(st == WX_OK && o.times_written == 8 && o.files_written == 8,
             "synth run into %s: %s (times %lld, files %d)", dir, st ? wx_error_message() : "ok",
             (long long)o.times_written, o.files_written);
}

static void check_nc_range(const char *path, const char *var, double lo, double hi) {
    int nc, vid, nd, dims[4];
    if (!WX_CHECK(nc_open(path, NC_NOWRITE, &nc) == NC_NOERR, "open %s", path)) return;
    WX_CHECK(nc_inq_varid(nc, var, &vid) == NC_NOERR, "%s has %s", path, var);
    nc_inq_varndims(nc, vid, &nd);
    nc_inq_vardimid(nc, vid, dims);
    size_t total = 1, len;
    for (int d = 0; d < nd; d++) {
        nc_inq_dimlen(nc, dims[d], &len);
        total *= len;
    }
    float *x = malloc(sizeof(float) * total);
    nc_get_var_float(nc, vid, x);
    double mn = INFINITY, mx = -INFINITY;
    size_t bad = 0;
    for (size_t i = 0; i < total; i++) {
        if (!isfinite(x[i])) bad++;
        mn = fmin(mn, x[i]);
        mx = fmax(mx, x[i]);
    }
    WX_CHECK(bad == 0 && mn >= lo && mx <= hi, "%s: %zu non-finite, range [%g, %g] within [%g, %g]",
             var, bad, mn, mx, lo, hi);
    free(x);
    nc_close(nc);
}

int main(void) {
    char dir[] = "/tmp/wx_synth_test_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    writer_roundtrip(dir);

    char a[600], b[600], c[600];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(c, sizeof c, "%s/c", dir);
    run_to(a, "");
    run_to(b, "");
    run_to(c, "seed: 2\n");
    const char *names[] = {"synth_static.grib", "synth_static.nc", "synth_pl500_200301.grib",
                           "synth_pl500_200301.nc", "synth_pl850_200301.nc", "synth_sfc_200301.grib",
                           "synth_sfc_200301.nc"};
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        char pa[700], pb[700];
        snprintf(pa, sizeof pa, "%s/%s", a, names[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, names[i]);
        WX_CHECK(files_equal(pa, pb), "%s byte-identical across runs", names[i]);
    }
    char pa[700], pc[700];
    /* GRIB: no provenance attribute, so other bytes are other fields */
    snprintf(pa, sizeof pa, "%s/synth_pl500_200301.grib", a);
    snprintf(pc, sizeof pc, "%s/synth_pl500_200301.grib", c);
    WX_CHECK(!files_equal(pa, pc), "another seed gives another world");
    /* NetCDF files say which world they hold: seed and config hash in `source` */
    char src[2][256] = {"", ""};
    for (int k = 0; k < 2; k++) {
        int nc;
        size_t len = 0;
        snprintf(pa, sizeof pa, "%s/synth_pl500_200301.nc", k ? c : a);
        if (!nc_open(pa, NC_NOWRITE, &nc)) {
            if (!nc_inq_attlen(nc, NC_GLOBAL, "source", &len) && len < sizeof src[k])
                nc_get_att_text(nc, NC_GLOBAL, "source", src[k]);
            nc_close(nc);
        }
    }
    WX_CHECK(strstr(src[0], "wxcast synth, seed 1, config ") && strstr(src[1], "seed 2, config ") &&
                 !strcmp(strstr(src[0], "config"), strstr(src[1], "config")),
             "source names seed and config hash ('%s', '%s')", src[0], src[1]);

    char p[700];
    snprintf(p, sizeof p, "%s/synth_pl500_200301.nc", a);
    check_nc_range(p, "z", 44000, 61000);
    check_nc_range(p, "u", -80, 100);
    check_nc_range(p, "v", -80, 80);
    snprintf(p, sizeof p, "%s/synth_pl850_200301.nc", a);
    check_nc_range(p, "t", 215, 315);
    snprintf(p, sizeof p, "%s/synth_sfc_200301.nc", a);
    check_nc_range(p, "msl", 94000, 108000);
    check_nc_range(p, "u10", -40, 40);
    check_nc_range(p, "t2m", 200, 325);
    check_nc_range(p, "tcwv", 0, 90);
    check_nc_range(p, "tp", 0, 0.2);
    snprintf(p, sizeof p, "%s/synth_static.nc", a);
    check_nc_range(p, "lsm", 0, 1);
    check_nc_range(p, "z", 0, 9.81 * 6000);

    /* GRIB (eccodes) and NetCDF (netCDF-C) copies of the run agree within the packing step */
    snprintf(p, sizeof p, "%s/synth_sfc_200301.grib", a);
    FILE *fp = fopen(p, "rb");
    int nc, vid, err = 0;
    snprintf(pc, sizeof pc, "%s/synth_sfc_200301.nc", a);
    nc_open(pc, NC_NOWRITE, &nc);
    codes_handle *h;
    int msg = 0, ok = 1;
    while (fp && (h = codes_handle_new_from_file(NULL, fp, PRODUCT_GRIB, &err))) {
        char cf[32];
        size_t len = sizeof cf, n = 32 * 64;
        codes_get_string(h, "cfVarName", cf, &len);
        double vals[32 * 64], mx = -1e30, mn = 1e30, e = 0;
        codes_get_double_array(h, "values", vals, &n);
        float ref[32 * 64];
        size_t start[3] = {(size_t)(msg / 6), 0, 0}, count[3] = {1, 32, 64};
        if (nc_inq_varid(nc, cf, &vid) != NC_NOERR ||
            nc_get_vara_float(nc, vid, start, count, ref) != NC_NOERR) {
            ok = WX_CHECK(0, "GRIB message %d (%s) has no NetCDF twin", msg, cf);
            codes_handle_delete(h);
            break;
        }
        for (int i = 0; i < 32 * 64; i++) {
            mx = fmax(mx, ref[i]);
            mn = fmin(mn, ref[i]);
            e = fmax(e, fabs(vals[i] - ref[i]));
        }
        if (e > (mx - mn) / 65535 * 1.01 + 1e-9) ok = WX_CHECK(0, "message %d %s: GRIB vs NetCDF %g (range %g)", msg, cf, e, mx - mn);
        codes_handle_delete(h);
        msg++;
    }
    WX_CHECK(ok && msg == 48, "48 surface messages match their NetCDF values (read %d)", msg);
    if (fp) fclose(fp);
    nc_close(nc);
    return wx_test_summary();
}
