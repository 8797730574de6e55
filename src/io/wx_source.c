#include "io/wx_source_priv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/wx_fs.h"
#include "io/grib_read.h"
#include "io/netcdf_read.h"

wx_field_info *wx_source_add(wx_source *s) {
    if (s->count == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        wx_field_info *n = realloc(s->fields, sizeof *n * (size_t)s->cap);
        WX_ASSERT(n != NULL);
        s->fields = n;
    }
    wx_field_info *f = &s->fields[s->count++];
    memset(f, 0, sizeof *f);
    f->member = -1;
    for (int k = 0; k < 5; k++) f->nc_index[k] = -1;
    return f;
}

wx_status wx_source_open(const char *path, wx_source **out) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return wx_error_set(WX_ERR_RUN, "%s: is a folder, expected a GRIB or NetCDF file (an archive "
                            "folder is named on its own, not among files)", path);
    /* the readers seek: a FIFO would block the open until a writer came, then fail */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return wx_error_set(WX_ERR_RUN, "%s: is %s, expected a GRIB or NetCDF file (the readers "
                            "need a regular file they can seek in)", path, wx_fs_mode_name(sb.st_mode));
    FILE *fp = fopen(path, "rb");
    if (!fp) return wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", path, strerror(errno));
    unsigned char magic[8] = {0};
    size_t n = fread(magic, 1, sizeof magic, fp);
    fclose(fp);
    wx_source *s = wx_calloc(1, sizeof *s);
    s->path = wx_strdup(path);
    wx_status st;
    if (n >= 4 && !memcmp(magic, "GRIB", 4)) {
        s->format = WX_FORMAT_GRIB;
        st = wx_grib_scan(s);
    } else if (n >= 4 && (!memcmp(magic, "CDF", 3) || !memcmp(magic, "\x89HDF", 4))) {
        s->format = WX_FORMAT_NETCDF;
        st = wx_netcdf_scan(s);
    } else if (n >= 6 && !memcmp(magic, "WXCKPT", 6)) {
        st = wx_error_set(WX_ERR_RUN, "%s: a wxcast checkpoint (a model), expected a GRIB or NetCDF "
                          "file", path);
    } else {
        st = wx_error_set(WX_ERR_RUN, "%s: neither GRIB nor NetCDF (the file does not start with "
                          "'GRIB', 'CDF' or the HDF5 signature)", path);
    }
    if (st != WX_OK) {
        wx_source_close(s);
        return st;
    }
    *out = s;
    return WX_OK;
}

void wx_source_close(wx_source *s) {
    if (!s) return;
    if (s->format == WX_FORMAT_GRIB) wx_grib_close(s);
    if (s->format == WX_FORMAT_NETCDF) wx_netcdf_close(s);
    free(s->fields);
    free(s->path);
    free(s);
}

const char *wx_source_path(const wx_source *s) { return s->path; }
wx_source_format wx_source_format_of(const wx_source *s) { return s->format; }
int wx_source_count(const wx_source *s) { return s->count; }
const wx_field_info *wx_source_info(const wx_source *s, int i) {
    return (i >= 0 && i < s->count) ? &s->fields[i] : NULL;
}

void wx_source_check_inputs(wx_source *s) { s->inputs_checked = 1; }

wx_status wx_source_read(wx_source *s, int i, wx_missing_policy policy, float *values) {
    WX_ASSERT(i >= 0 && i < s->count);
    const wx_field_info *f = &s->fields[i];
    wx_status st;
    if (s->format == WX_FORMAT_GRIB) {
        st = wx_grib_read(s, i, policy, values);
    } else { /* netCDF-C keeps global state and is not thread-safe: one NetCDF read at a time. */
#pragma omp critical(wx_netcdf)
        st = wx_netcdf_read(s, i, policy, values);
    }
    if (st == WX_OK && (f->scale != 0 || f->add != 0)) {
        /* a converted parameter (gh -> z) or unit (degC -> K); NaN stays NaN */
        size_t n = (size_t)f->grid.nlat * (size_t)f->grid.nlon;
        double a = f->scale != 0 ? f->scale : 1;
        for (size_t k = 0; k < n; k++) values[k] = (float)(a * values[k] + f->add);
    }
    if (st == WX_OK && s->inputs_checked) { /* to archive or start from: no infinity (NaN is the
                                              * missing-value policy's, above) */
        size_t n = (size_t)f->grid.nlat * (size_t)f->grid.nlon, ninf = 0, first = 0;
        for (size_t k = n; k-- > 0;)
            if (isinf(values[k])) ninf++, first = k;
        if (ninf) {
            char what[512];
            wx_field_describe(s, f, what, sizeof what);
            st = wx_error_set(WX_ERR_RUN, "%s: %zu of %zu values are infinite (the first at point "
                              "%zu): not a state to %s", what, ninf, n, first,
                              "archive or start a forecast from");
        }
    }
    return st;
}

void wx_field_describe(const wx_source *s, const wx_field_info *f, char *buf, int len) {
    char when[32] = "no time", lev[32] = "";
    if (f->has_time) wx_time_format(f->valid, when);
    if (f->kind == WX_LEVEL_PRESSURE) snprintf(lev, sizeof lev, " %g hPa", f->level);
    char mem[24] = "";
    if (f->member >= 0) snprintf(mem, sizeof mem, " member %d", f->member);
    snprintf(buf, (size_t)len, "%s: %s %lld (%s%s %s%s)", s->path,
             s->format == WX_FORMAT_GRIB ? "message" : "field", (long long)f->msg, f->name, lev,
             when, mem);
}

static double snap(double v) { return floor(v * 1e6 + 0.5) / 1e6; }

wx_status wx_source_grid_from_axes(const double *lats, int nlat, const double *lons, int nlon,
                                   const char *where, wx_grid *grid, int *row_map, int *col_map) {
    const char *hint = "regrid to a regular lat/lon grid first, e.g. `cdo remapbil,r360x181 IN OUT`";
    /* NaN passes every spacing comparison below and became a row index far outside the grid */
    for (int k = 0; k < nlat + nlon; k++) {
        double v = k < nlat ? lats[k] : lons[k - nlat];
        if (!isfinite(v) || (k < nlat && fabs(v) > 90 + 1e-4))
            return wx_error_set(WX_ERR_RUN, "%s: %s %d of the coordinates is %g: expected %s", where,
                                k < nlat ? "latitude" : "longitude", k < nlat ? k : k - nlat, v,
                                k < nlat ? "-90..90 degrees" : "a finite number of degrees");
    }
    double dlat = nlat > 1 ? fabs(lats[1] - lats[0]) : 1.0;
    /* longitude steps taken modulo 360: a regional grid across the dateline in -180..180
     * (150 .. 180, -177 .. -150) is regular, it only wraps */
    double dlon = nlon > 1 ? fabs(remainder(lons[1] - lons[0], 360.0)) : 1.0;
    const int lon_up = nlon < 2 || remainder(lons[1] - lons[0], 360.0) > 0;
    double lat0 = lats[0];
    for (int j = 1; j < nlat; j++) {
        double d = lats[j] - lats[j - 1];
        if (fabs(fabs(d) - dlat) > 1e-4 + 1e-4 * dlat || (d > 0) != (lats[1] > lats[0]))
            return wx_error_set(WX_ERR_RUN, "%s: latitudes are not equally spaced (step %g then %g "
                                "at row %d): not a regular lat/lon grid; %s", where, dlat, fabs(d),
                                j, hint);
        if (lats[j] > lat0) lat0 = lats[j];
    }
    for (int i = 1; i < nlon; i++) {
        double d = remainder(lons[i] - lons[i - 1], 360.0);
        if (fabs(fabs(d) - dlon) > 1e-4 + 1e-4 * dlon || (d > 0) != lon_up)
            return wx_error_set(WX_ERR_RUN, "%s: longitudes are not equally spaced (step %g then %g "
                                "at column %d): not a regular lat/lon grid; %s", where, dlon,
                                fabs(d), i, hint);
    }
    /* A spacing such as 180/31 (32 rows including both poles) is not a decimal: snapped to 1e-6
     * it would move the last row past the pole, so it is kept exact from the end rows. */
    if (nlat > 1) {
        /* End rows within 1e-4 degrees of a pole are the pole: CDO's NetCDF of a GRIB grid with
         * spacing 5.806452 (GRIB's micro-degrees) ends at -90.000012 */
        double hi = fmax(lats[0], lats[nlat - 1]), lo = fmin(lats[0], lats[nlat - 1]);
        if (fabs(hi - 90) < 1e-4) hi = 90;
        if (fabs(lo + 90) < 1e-4) lo = -90;
        double exact = (hi - lo) / (nlat - 1);
        dlat = fabs(snap(exact) - exact) < 1e-9 ? snap(exact) : exact;
        if (hi == 90) lat0 = 90;
    }
    dlon = snap(dlon);
    lat0 = snap(lat0);
    int periodic = fabs(nlon * dlon - 360.0) < 1e-3;
    double lon0;
    if (periodic) {
        lon0 = 360;
        for (int i = 0; i < nlon; i++) {
            double l = fmod(lons[i], 360.0);
            if (l < 0) l += 360;
            if (l > 360 - 1e-4) l = 0;
            if (l < lon0) lon0 = l;
        }
    } else {
        lon0 = lon_up ? lons[0] : lons[nlon - 1];
        lon0 = fmod(lon0, 360.0);
        if (lon0 < 0) lon0 += 360;
    }
    lon0 = snap(lon0);
    if (lon0 >= 360) lon0 = 0;
    if (wx_grid_make(nlat, nlon, lat0, dlat, lon0, dlon, grid) != WX_OK)
        return wx_error_wrap(WX_ERR_RUN, "%s: ", where);
    for (int j = 0; j < nlat; j++) {
        row_map[j] = (int)floor((lat0 - lats[j]) / dlat + 0.5);
        if (row_map[j] < 0 || row_map[j] >= nlat) /* cannot happen on the checks above: a guard */
            return wx_error_set(WX_ERR_RUN, "%s: latitude %g does not fit a regular grid", where, lats[j]);
    }
    char *seen = wx_calloc((size_t)nlon, 1);
    wx_status st = WX_OK;
    for (int i = 0; i < nlon && st == WX_OK; i++) {
        double d = fmod(lons[i] - lon0, 360.0);
        if (d < 0) d += 360;
        int c = (int)floor(d / dlon + 0.5);
        if (periodic) c %= nlon;
        if (c >= 0 && c < nlon && seen[c] && fabs((nlon - 1) * dlon - 360.0) < 1e-3)
            st = wx_error_set(WX_ERR_RUN, "%s: longitude %g repeats the first column's (a cyclic "
                              "column, as some tools append for plotting): drop it first, e.g. "
                              "xarray ds.isel(longitude=slice(0, -1)) or `cdo selindexbox,1,%d,1,%d`",
                              where, lons[i], nlon - 1, nlat);
        else if (c < 0 || c >= nlon || seen[c])
            st = wx_error_set(WX_ERR_RUN, "%s: longitude %g does not fit a regular grid", where,
                              lons[i]);
        else
            seen[c] = 1, col_map[i] = c;
    }
    free(seen);
    return st;
}
