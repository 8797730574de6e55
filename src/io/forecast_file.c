#include "io/forecast_file.h"

#include <netcdf.h>
#include <stdio.h>
#include <string.h>

wx_status wx_forecast_file_ref_time(const char *path, wx_time *out, int *found) {
    *found = 0;
    int nc, id, rc = nc_open(path, NC_NOWRITE, &nc);
    if (rc == NC_ENOTNC)
        return wx_error_set(WX_ERR_RUN, "%s: not a NetCDF file (expected a NetCDF forecast file as "
                            "`wxcast forecast --output` writes; GRIB2 forecasts are not read)", path);
    if (rc != NC_NOERR)
        return wx_error_set(WX_ERR_RUN, "%s: %s (expected a NetCDF forecast file)", path, nc_strerror(rc));
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
