/* CF attributes of the forecast NetCDF products, read back with netCDF-C:
 * - every data variable names forecast_reference_time and forecast_period in its `coordinates`
 *   attribute (CF 5.7, Example 5.14: auxiliary coordinates), deterministic and ensemble files;
 * - units and standard_name as the CF standard-name table gives them (expected values written
 *   here from the table, not from our catalogue): tcwv atmosphere_mass_content_of_water_vapor
 *   (kg m-2), tp lwe_thickness_of_precipitation_amount (m) with cell_methods "time: sum" and its
 *   6 h period in long_name, skt surface_temperature; instantaneous fields carry no cell_methods;
 * - every catalogue entry has eccodes units, UDUNITS units and a CF standard_name. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infer/forecast_init.h"
#include "infer/forecast_write.h"
#include "wx_test.h"

/* From the CF standard-name table (canonical units converted to the unit the field is in). */
static const struct {
    const char *channel, *nc_var, *units, *standard_name;
} cf[] = {
    {"z500", "z", "m2 s-2", "geopotential"},
    {"t850", "t", "K", "air_temperature"},
    {"t2m", "t2m", "K", "air_temperature"},
    {"u10", "u10", "m s-1", "eastward_wind"},
    {"v10", "v10", "m s-1", "northward_wind"},
    {"msl", "msl", "Pa", "air_pressure_at_mean_sea_level"},
    {"sp", "sp", "Pa", "surface_air_pressure"},
    {"tcwv", "tcwv", "kg m-2", "atmosphere_mass_content_of_water_vapor"},
    {"tp", "tp", "m", "lwe_thickness_of_precipitation_amount"},
    {"skt", "skt", "K", "surface_temperature"},
};
enum { NCH = sizeof cf / sizeof cf[0], NLAT = 5, NLON = 8 };

static int text_att(int nc, int var, const char *name, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    if (nc_inq_attlen(nc, var, name, &len) != NC_NOERR || len >= cap) return 0;
    if (nc_get_att_text(nc, var, name, buf) != NC_NOERR) return 0;
    buf[len] = 0;
    return 1;
}

static void write_file(const char *path, int members, const wx_archive_channel *ch) {
    wx_grid g;
    wx_grid_make(NLAT, NLON, 90, 45, 0, 45, &g);
    wx_forecast_write_opts o = {.netcdf = path, .members = members, .step_s = 6 * 3600};
    wx_forecast_writer w;
    if (!WX_CHECK(wx_forecast_writer_open_opts(&w, &o, &g, NCH, ch, 946684800) == WX_OK,
                  "open %s: %s", path, wx_error_message()))
        return;
    float *x = wx_calloc((size_t)NCH * NLAT * NLON, sizeof(float));
    wx_status st = WX_OK;
    for (int t = 0; t < 2 && st == WX_OK; t++)
        for (int m = 0; m < (members ? members : 1) && st == WX_OK; m++)
            st = wx_forecast_writer_put_member(&w, 946684800 + t * 6 * 3600, m, x);
    WX_CHECK(st == WX_OK, "put: %s", wx_error_message());
    WX_CHECK(wx_forecast_writer_close(&w) == WX_OK, "close: %s", wx_error_message());
    free(x);
}

static void check_file(const char *path, int ensemble) {
    int nc;
    if (!WX_CHECK(nc_open(path, NC_NOWRITE, &nc) == NC_NOERR, "netCDF-C opens %s", path)) return;
    char buf[256];
    for (int c = 0; c < NCH; c++) {
        const char *name = ensemble ? cf[c].channel : cf[c].nc_var;
        int var;
        if (!WX_CHECK(nc_inq_varid(nc, name, &var) == NC_NOERR, "%s: variable %s", path, name))
            continue;
        text_att(nc, var, "coordinates", buf, sizeof buf);
        WX_CHECK(!strcmp(buf, "forecast_reference_time forecast_period"),
                 "%s: %s:coordinates = '%s'", path, name, buf);
        char u[64], sn[128];
        text_att(nc, var, "units", u, sizeof u);
        text_att(nc, var, "standard_name", sn, sizeof sn);
        WX_CHECK(!strcmp(u, cf[c].units) && !strcmp(sn, cf[c].standard_name),
                 "%s: %s units '%s' standard_name '%s' (want '%s', '%s')", path, name, u, sn,
                 cf[c].units, cf[c].standard_name);
        int has_cm = text_att(nc, var, "cell_methods", buf, sizeof buf);
        if (!strcmp(cf[c].channel, "tp")) {
            WX_CHECK(has_cm && !strcmp(buf, "time: sum"), "%s: tp cell_methods '%s'", path, buf);
            text_att(nc, var, "long_name", buf, sizeof buf);
            WX_CHECK(strstr(buf, "accumulated over the 6h ending at time") != NULL,
                     "%s: tp long_name gives the period: '%s'", path, buf);
        } else {
            WX_CHECK(!has_cm, "%s: %s has no cell_methods (got '%s')", path, name, buf);
        }
    }
    /* the coordinates themselves stay what they were */
    int vr, vp, nd = -1;
    WX_CHECK(nc_inq_varid(nc, "forecast_reference_time", &vr) == NC_NOERR &&
                 nc_inq_varndims(nc, vr, &nd) == NC_NOERR && nd == 0 &&
                 text_att(nc, vr, "standard_name", buf, sizeof buf) &&
                 !strcmp(buf, "forecast_reference_time"),
             "%s: scalar forecast_reference_time", path);
    WX_CHECK(nc_inq_varid(nc, "forecast_period", &vp) == NC_NOERR &&
                 text_att(nc, vp, "units", buf, sizeof buf) && !strcmp(buf, "hours"),
             "%s: forecast_period in hours", path);
    nc_close(nc);
}

int main(void) {
    char dir[] = "/tmp/wx_test_product_attrs.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    wx_archive_channel ch[NCH];
    for (int c = 0; c < NCH; c++)
        WX_CHECK(wx_forecast_channel_from_name(cf[c].channel, 6 * 3600, &ch[c]) == WX_OK,
                 "channel %s: %s", cf[c].channel, wx_error_message());
    char det[600], ens[600];
    snprintf(det, sizeof det, "%s/f.nc", dir);
    snprintf(ens, sizeof ens, "%s/e.nc", dir);
    write_file(det, 0, ch);
    check_file(det, 0);
    write_file(ens, 3, ch);
    check_file(ens, 1);
    /* the catalogue: units both ways and a CF name for every entry (CF has one for each) */
    int missing = 0;
    for (int i = 0; i < wx_catalogue_count(); i++) {
        const wx_catalogue_entry *e = wx_catalogue_at(i);
        int ok = e->units && e->units[0] && e->cf_units && e->cf_units[0] && e->standard_name &&
                 e->standard_name[0];
        missing += !ok;
        WX_CHECK(ok, "catalogue %s (%s): units '%s' / '%s', standard_name '%s'", e->short_name,
                 wx_level_kind_name(e->level_kind), e->units, e->cf_units, e->standard_name);
    }
    WX_CHECK(missing == 0, "%d catalogue entries without units or standard_name", missing);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
    return wx_test_summary();
}
