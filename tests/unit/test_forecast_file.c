/* What io/forecast_file.h tells about product files, and the self-description of the ensemble
 * summaries the forecast writer makes:
 * - spread files (WX_ENS_SPREAD) carry the global attribute ensemble_statistic =
 *   "standard_deviation", a title saying spread, per variable cell_methods
 *   "realization: standard_deviation" (after "time: sum" for tp) and long_name "ensemble standard
 *   deviation of ...", units and standard_name unchanged (CF 7.3); mean files likewise with
 *   "mean"; read back with netCDF-C;
 * - wx_forecast_file_is_spread: 1 for those, for a file written here with netCDF-C that only has
 *   the CF cell_methods (another producer's), 0 for forecasts, mean files and GRIB; an error for a
 *   missing file; wx_forecast_file_check_not_spread's usage error names the file;
 * - wx_forecast_file_grib_ref_time: regular_ll_msl.grib (a +72 h forecast, dataDate 20061004
 *   dataTime 0 as grib_ls shows) gives 2006-10-04T00:00; era5-2mt-2019-03-uk.grib (744 hourly
 *   analyses, each its own dataDate/dataTime) gives none. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/forecast_init.h"
#include "infer/forecast_write.h"
#include "io/forecast_file.h"
#include "wx_test.h"

static const char *const names[] = {"t850", "t2m", "tp"};
enum { NCH = 3, NLAT = 5, NLON = 8 };

/* Text attribute `name` of variable var (NC_GLOBAL: the file's), "" when absent; a ring of 4
 * buffers, so one check can show several. */
static const char *att(int nc, int var, const char *name) {
    static char ring[4][256];
    static int next;
    char *b = ring[next++ % 4];
    size_t len = 0;
    int ok = nc_inq_attlen(nc, var, name, &len) == NC_NOERR && len < sizeof ring[0] &&
             nc_get_att_text(nc, var, name, b) == NC_NOERR;
    b[ok ? len : 0] = 0;
    return b;
}

static void write_file(const char *path, wx_ens_statistic stat, const wx_archive_channel *ch) {
    wx_grid g;
    wx_grid_make(NLAT, NLON, 90, 45, 0, 45, &g);
    wx_forecast_write_opts o = {.netcdf = path, .step_s = 6 * 3600, .statistic = stat,
                                .stat_members = 4};
    wx_forecast_writer w;
    if (!WX_CHECK(wx_forecast_writer_open_opts(&w, &o, &g, NCH, ch, 946684800) == WX_OK,
                  "open %s: %s", path, wx_error_message()))
        return;
    float *x = wx_calloc((size_t)NCH * NLAT * NLON, sizeof(float));
    WX_CHECK(wx_forecast_writer_put(&w, 946684800, x) == WX_OK, "put: %s", wx_error_message());
    WX_CHECK(wx_forecast_writer_close(&w) == WX_OK, "close: %s", wx_error_message());
    free(x);
}

/* The attributes of a summary file; method "standard_deviation" or "mean", what its words. */
static void check_summary(const char *path, const char *method, const char *what) {
    int nc;
    if (!WX_CHECK(nc_open(path, NC_NOWRITE, &nc) == NC_NOERR, "netCDF-C opens %s", path)) return;
    char want[256];
    const char *got = att(nc, NC_GLOBAL, "ensemble_statistic");
    WX_CHECK(!strcmp(got, method), "%s: ensemble_statistic '%s' (want '%s')", path, got, method);
    got = att(nc, NC_GLOBAL, "title");
    snprintf(want, sizeof want, "wxcast ensemble %s", !strcmp(method, "mean") ? "mean" : "spread");
    WX_CHECK(strstr(got, want) && strstr(got, "4 members"), "%s: title '%s'", path, got);
    static const struct {
        const char *var, *units, *standard_name, *long_name, *time_method;
    } v[] = {{"t", "K", "air_temperature", "Temperature", ""},
             {"t2m", "K", "air_temperature", "2 metre temperature", ""},
             {"tp", "m", "lwe_thickness_of_precipitation_amount", "Total precipitation", "time: sum "}};
    for (int k = 0; k < NCH; k++) {
        int id;
        if (!WX_CHECK(nc_inq_varid(nc, v[k].var, &id) == NC_NOERR, "%s: variable %s", path, v[k].var))
            continue;
        const char *u = att(nc, id, "units"), *sn = att(nc, id, "standard_name");
        WX_CHECK(!strcmp(u, v[k].units) && !strcmp(sn, v[k].standard_name),
                 "%s: %s keeps units '%s' and standard_name '%s'", path, v[k].var, u, sn);
        got = att(nc, id, "cell_methods");
        snprintf(want, sizeof want, "%srealization: %s", v[k].time_method, method);
        WX_CHECK(!strcmp(got, want), "%s: %s:cell_methods '%s' (want '%s')", path, v[k].var, got, want);
        got = att(nc, id, "long_name");
        snprintf(want, sizeof want, "ensemble %s of %s", what, v[k].long_name);
        WX_CHECK(!strncmp(got, want, strlen(want)), "%s: %s:long_name '%s' starts '%s'", path,
                 v[k].var, got, want);
    }
    nc_close(nc);
}

/* A spread file of another producer: no global marker, only CF cell_methods. */
static int write_cf_only(const char *path) {
    int nc, dl, v;
    const char *cm = "time: sum realization: standard_deviation";
    if (nc_create(path, NC_CLOBBER | NC_NETCDF4, &nc) != NC_NOERR) return 0;
    int ok = nc_def_dim(nc, "latitude", 3, &dl) == NC_NOERR &&
             nc_def_var(nc, "tp", NC_FLOAT, 1, &dl, &v) == NC_NOERR &&
             nc_put_att_text(nc, v, "cell_methods", strlen(cm), cm) == NC_NOERR;
    return nc_close(nc) == NC_NOERR && ok;
}

static int spread_of(const char *path) {
    int yes = -1;
    wx_status st = wx_forecast_file_is_spread(path, &yes);
    WX_CHECK(st == WX_OK, "is_spread %s: %s", path, st ? wx_error_message() : "");
    return yes;
}

int main(void) {
    char dir[] = "/tmp/wx_test_forecast_file.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    wx_archive_channel ch[NCH];
    for (int c = 0; c < NCH; c++)
        WX_CHECK(wx_forecast_channel_from_name(names[c], 6 * 3600, &ch[c]) == WX_OK,
                 "channel %s: %s", names[c], wx_error_message());
    char fc[600], mean[600], spread[600], other[600], grib[600], uk[600], none[600];
    snprintf(fc, sizeof fc, "%s/f.nc", dir);
    snprintf(mean, sizeof mean, "%s/f_mean.nc", dir);
    snprintf(spread, sizeof spread, "%s/f_spread.nc", dir);
    snprintf(other, sizeof other, "%s/other.nc", dir);
    snprintf(none, sizeof none, "%s/none.nc", dir);
    snprintf(grib, sizeof grib, "%s/era5/regular_ll_msl.grib", WX_DATA_DIR);
    snprintf(uk, sizeof uk, "%s/era5/era5-2mt-2019-03-uk.grib", WX_DATA_DIR);
    write_file(fc, WX_ENS_NONE, ch);
    write_file(mean, WX_ENS_MEAN, ch);
    write_file(spread, WX_ENS_SPREAD, ch);
    check_summary(spread, "standard_deviation", "standard deviation");
    check_summary(mean, "mean", "mean");
    WX_CHECK(write_cf_only(other), "netCDF-C writes %s", other);

    WX_CHECK(spread_of(spread) == 1, "the forecast writer's spread file is a spread file");
    WX_CHECK(spread_of(other) == 1, "cell_methods 'realization: standard_deviation' alone is enough");
    WX_CHECK(spread_of(fc) == 0 && spread_of(mean) == 0, "forecast and mean files are not");
    WX_CHECK(spread_of(grib) == 0, "a GRIB file is not");
    int yes = -1;
    WX_CHECK(wx_forecast_file_is_spread(none, &yes) == WX_ERR_RUN && strstr(wx_error_message(), none),
             "missing file: an error naming it (%s)", wx_error_message());
    WX_CHECK(wx_forecast_file_check_not_spread(fc) == WX_OK, "check_not_spread passes a forecast");
    wx_status st = wx_forecast_file_check_not_spread(spread);
    WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), spread) &&
                 strstr(wx_error_message(), "an ensemble spread file, not a forecast: give the "
                                            "mean file or the members file"),
             "check_not_spread: usage error naming the file (%s)", wx_error_message());

    wx_source *src;
    wx_time t = 0;
    int found = -1;
    if (WX_CHECK(wx_source_open(grib, &src) == WX_OK, "open %s: %s", grib, wx_error_message())) {
        wx_forecast_file_grib_ref_time(src, &t, &found);
        WX_CHECK(found == 1 &&
                     t == wx_time_make(2006, 10, 4, 0, 0, 0) &&
                     wx_source_info(src, 0)->valid - t == 72 * 3600,
                 "regular_ll_msl.grib: init 2006-10-04T00 and lead 72 h (found %d, t %lld)", found,
                 (long long)t);
        wx_source_close(src);
    }
    if (WX_CHECK(wx_source_open(uk, &src) == WX_OK, "open %s: %s", uk, wx_error_message())) {
        wx_forecast_file_grib_ref_time(src, &t, &found);
        WX_CHECK(found == 0,
                 "era5-2mt-2019-03-uk.grib: 744 analyses, no common init (found %d)", found);
        wx_source_close(src);
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
    return wx_test_summary();
}
