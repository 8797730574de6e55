#include "io/forecast_file.h"

#include <errno.h>
#include <netcdf.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "io/netcdf_open.h"

wx_status wx_forecast_file_ref_time(const char *path, wx_time *out, int *found) {
    *found = 0;
    int nc, id, rc;
    wx_status st = wx_nc_open_read(path, &nc, &rc);
    if (st != WX_OK && rc == NC_ENOTNC)
        return wx_error_set(WX_ERR_RUN, "%s: not a NetCDF file (expected a NetCDF forecast file as "
                            "`wxcast forecast --output` writes; GRIB2 forecasts are not read)", path);
    if (st != WX_OK) return st;
    if (nc_inq_varid(nc, "forecast_reference_time", &id) != NC_NOERR) {
        nc_close(nc);
        return WX_OK;
    }
    char units[256] = "", cal[64] = "";
    size_t len = 0;
    if (nc_inq_attlen(nc, id, "units", &len) == NC_NOERR && len < sizeof units)
        nc_get_att_text(nc, id, "units", units);
    len = 0;
    if (nc_inq_attlen(nc, id, "calendar", &len) == NC_NOERR && len < sizeof cal)
        nc_get_att_text(nc, id, "calendar", cal);
    double v = 0;
    rc = nc_get_var_double(nc, id, &v);
    nc_close(nc);
    if (rc != NC_NOERR)
        return wx_error_set(WX_ERR_RUN, "%s: forecast_reference_time: %s", path, nc_strerror(rc));
    wx_time_cf cf;
    char what[600];
    snprintf(what, sizeof what, "%s: forecast_reference_time", path);
    WX_TRY(wx_time_cf_parse(units, cal, what, &cf));
    *out = wx_time_cf_value(&cf, v);
    *found = 1;
    return WX_OK;
}

static int att_text(int nc, int var, const char *name, char *buf, size_t len) {
    size_t n = 0;
    if (nc_inq_attlen(nc, var, name, &n) != NC_NOERR || n >= len) return 0;
    nc_type t;
    if (nc_inq_atttype(nc, var, name, &t) != NC_NOERR || t != NC_CHAR) return 0;
    if (nc_get_att_text(nc, var, name, buf) != NC_NOERR) return 0;
    buf[n] = 0;
    return 1;
}

wx_status wx_forecast_file_is_spread(const char *path, int *yes) {
    *yes = 0;
    int nc, nvars, rc;
    wx_status st = wx_nc_open_read(path, &nc, &rc);
    if (st != WX_OK && rc == NC_ENOTNC) return WX_OK; /* GRIB: no spread files of that format */
    if (st != WX_OK) return st;
    char buf[512];
    if (att_text(nc, NC_GLOBAL, "ensemble_statistic", buf, sizeof buf) &&
        !strcmp(buf, "standard_deviation"))
        *yes = 1;
    if ((rc = nc_inq_nvars(nc, &nvars)) != NC_NOERR) {
        nc_close(nc);
        return wx_error_set(WX_ERR_RUN, "%s: %s", path, nc_strerror(rc));
    }
    for (int v = 0; v < nvars && !*yes; v++)
        if (att_text(nc, v, "cell_methods", buf, sizeof buf) &&
            strstr(buf, "realization: standard_deviation"))
            *yes = 1;
    nc_close(nc);
    return WX_OK;
}

wx_status wx_forecast_file_check_not_spread(const char *path) {
    int yes;
    WX_TRY(wx_forecast_file_is_spread(path, &yes));
    if (yes)
        return wx_error_set(WX_ERR_USAGE, "%s is an ensemble spread file, not a forecast: give the "
                            "mean file or the members file", path);
    return WX_OK;
}

void wx_forecast_file_grib_ref_time(const wx_source *src, wx_time *out, int *found) {
    int any = 0, differ = 0;
    for (int i = 0; i < wx_source_count(src) && !differ; i++) {
        const wx_field_info *f = wx_source_info(src, i);
        if (!f->has_time || !f->has_ref) continue; /* the reader's dataDate/dataTime */
        differ = any && f->ref != *out;
        *out = f->ref, any = 1;
    }
    *found = any && !differ;
}
