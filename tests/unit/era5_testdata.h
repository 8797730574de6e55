/* Test-data writers shared by the ingest tests: small GRIB (eccodes sample) and NetCDF (netCDF-C)
 * files holding one known field in a chosen layout. The field is f(lat, lon) on a global grid of
 * `res` degrees, north→south rows, longitudes 0..360-res. Header-only (static functions). */
#ifndef ERA5_TESTDATA_H
#define ERA5_TESTDATA_H

#include <eccodes.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference field: smooth, distinct at every point, exact in 16-bit packing tests only to the
 * packing precision (tests compare layouts that share packing). */
__attribute__((unused)) static double td_value(double lat, double lon, int t, double level) {
    return 250.0 + 30.0 * cos(lat * M_PI / 180) + 5.0 * sin(lon * M_PI / 90) + 0.5 * t + level / 1000;
}

typedef struct {
    int j_pos;      /* 1: rows south→north */
    int i_neg;      /* 1: columns west←east */
    int lon_m180;   /* 1: columns start at -180 */
    int pa;         /* 1: level in Pa (isobaricInPa) */
    int missing;    /* number of points to leave missing (bitmap) */
    int edition;    /* 1 or 2 */
} td_grib_opts;

/* Appends one message to fp: shortName `sn`, level hPa (0: surface field `sn` as single level),
 * valid time = 2017-01-01 00 UTC + 6h*t. Returns 0 on success. */
__attribute__((unused)) static int td_grib_write(FILE *fp, const char *sn, double level, int t, double res,
                         const td_grib_opts *o) {
    char sample[256];
    snprintf(sample, sizeof sample, "/usr/share/eccodes/samples/GRIB%d.tmpl", o->edition ? o->edition : 2);
    FILE *sf = fopen(sample, "rb");
    if (!sf) return 1;
    int err = 0;
    codes_handle *h = codes_handle_new_from_file(NULL, sf, PRODUCT_GRIB, &err);
    fclose(sf);
    if (!h) return 1;
    int nlat = (int)(180 / res) + 1, nlon = (int)(360 / res);
    size_t len;
    if (level > 0) {
        const char *tol = o->pa ? "isobaricInPa" : "isobaricInhPa";
        len = strlen(tol);
        err |= codes_set_string(h, "typeOfLevel", tol, &len);
        err |= codes_set_long(h, "level", o->pa ? (long)(level * 100) : (long)level);
    }
    len = strlen(sn);
    err |= codes_set_string(h, "shortName", sn, &len);
    err |= codes_set_long(h, "dataDate", 20170101 + (t * 6) / 24);
    err |= codes_set_long(h, "dataTime", ((t * 6) % 24) * 100);
    err |= codes_set_long(h, "Ni", nlon);
    err |= codes_set_long(h, "Nj", nlat);
    double lon_first = o->lon_m180 ? -180 : 0, lon_last = lon_first + 360 - res;
    if (o->i_neg) {
        double tmp = lon_first;
        lon_first = lon_last;
        lon_last = tmp;
    }
    err |= codes_set_long(h, "iScansNegatively", o->i_neg);
    err |= codes_set_long(h, "jScansPositively", o->j_pos);
    err |= codes_set_double(h, "latitudeOfFirstGridPointInDegrees", o->j_pos ? -90 : 90);
    err |= codes_set_double(h, "latitudeOfLastGridPointInDegrees", o->j_pos ? 90 : -90);
    err |= codes_set_double(h, "longitudeOfFirstGridPointInDegrees", lon_first);
    err |= codes_set_double(h, "longitudeOfLastGridPointInDegrees", lon_last);
    err |= codes_set_double(h, "iDirectionIncrementInDegrees", res);
    err |= codes_set_double(h, "jDirectionIncrementInDegrees", res);
    size_t n = (size_t)nlat * nlon;
    double *v = malloc(sizeof(double) * n);
    for (int r = 0; r < nlat; r++)
        for (int c = 0; c < nlon; c++) {
            double lat = o->j_pos ? -90 + r * res : 90 - r * res;
            double lon = lon_first + (o->i_neg ? -c : c) * res;
            v[(size_t)r * nlon + c] = td_value(lat, lon, t, level);
        }
    if (o->missing) {
        err |= codes_set_long(h, "bitmapPresent", 1);
        err |= codes_set_double(h, "missingValue", 9999);
        for (int k = 0; k < o->missing; k++) v[k * 7 % n] = 9999;
    }
    err |= codes_set_long(h, "bitsPerValue", 24);
    err |= codes_set_double_array(h, "values", v, n);
    free(v);
    const void *buf;
    size_t blen;
    err |= codes_get_message(h, &buf, &blen);
    if (!err && fwrite(buf, 1, blen, fp) != blen) err = 1;
    codes_handle_delete(h);
    return err;
}

/* NetCDF layouts. */
typedef struct {
    int new_cds;   /* 1: valid_time/pressure_level names, "seconds since 1970"; 0: time/level,
                      "hours since 1900-01-01" */
    int packed;    /* 1: short with scale_factor/add_offset */
    int lat_up;    /* 1: latitude ascending */
    int expver;    /* 1: an expver dimension of 2, times split between the two */
    int lon_m180;  /* 1: longitudes -180..180-res */
} td_nc_opts;

/* Writes `path` with variable `var` (levels: nlev hPa values, 0 = single level) for nt 6-hourly
 * times from 2017-01-01 00 UTC. Values are td_value, or given by `vals` when non-NULL
 * (indexed [t][lev][row north→south][col from 0°]). Returns 0 on success. */
__attribute__((unused)) static int td_nc_write(const char *path, const char *var, const double *levels, int nlev, int nt,
                       double res, const td_nc_opts *o, const float *vals) {
    int nc, e = nc_create(path, NC_CLOBBER | NC_NETCDF4, &nc);
    if (e) return e;
    int nlat = (int)(180 / res) + 1, nlon = (int)(360 / res);
    int dt, dl = -1, dy, dx, dx_e = -1;
    const char *tname = o->new_cds ? "valid_time" : "time";
    const char *lname = o->new_cds ? "pressure_level" : "level";
    e |= nc_def_dim(nc, tname, (size_t)nt, &dt);
    if (o->expver) e |= nc_def_dim(nc, "expver", 2, &dx_e);
    if (nlev) e |= nc_def_dim(nc, lname, (size_t)nlev, &dl);
    e |= nc_def_dim(nc, "latitude", (size_t)nlat, &dy);
    e |= nc_def_dim(nc, "longitude", (size_t)nlon, &dx);
    int vt, vl = -1, vy, vx, vv;
    e |= nc_def_var(nc, tname, o->new_cds ? NC_INT64 : NC_INT, 1, &dt, &vt);
    const char *tu = o->new_cds ? "seconds since 1970-01-01" : "hours since 1900-01-01 00:00:00.0";
    e |= nc_put_att_text(nc, vt, "units", strlen(tu), tu);
    e |= nc_put_att_text(nc, vt, "calendar", o->new_cds ? 19 : 9,
                         o->new_cds ? "proleptic_gregorian" : "gregorian");
    if (nlev) {
        e |= nc_def_var(nc, lname, NC_DOUBLE, 1, &dl, &vl);
        e |= nc_put_att_text(nc, vl, "units", o->new_cds ? 3 : 8, o->new_cds ? "hPa" : "millibars");
    }
    e |= nc_def_var(nc, "latitude", NC_DOUBLE, 1, &dy, &vy);
    e |= nc_put_att_text(nc, vy, "units", 13, "degrees_north");
    e |= nc_def_var(nc, "longitude", NC_DOUBLE, 1, &dx, &vx);
    e |= nc_put_att_text(nc, vx, "units", 12, "degrees_east");
    int dims[5], nd = 0;
    dims[nd++] = dt;
    if (o->expver) dims[nd++] = dx_e;
    if (nlev) dims[nd++] = dl;
    dims[nd++] = dy;
    dims[nd++] = dx;
    e |= nc_def_var(nc, var, o->packed ? NC_SHORT : NC_FLOAT, nd, dims, &vv);
    double scale = 0.002, offset = 265.0;
    if (o->packed) {
        short fill = -32767;
        e |= nc_put_att_double(nc, vv, "scale_factor", NC_DOUBLE, 1, &scale);
        e |= nc_put_att_double(nc, vv, "add_offset", NC_DOUBLE, 1, &offset);
        e |= nc_put_att_short(nc, vv, "_FillValue", NC_SHORT, 1, &fill);
    } else {
        float fill = NAN;
        e |= nc_put_att_float(nc, vv, "_FillValue", NC_FLOAT, 1, &fill);
    }
    e |= nc_enddef(nc);
    for (int t = 0; t < nt; t++) {
        long long tv = o->new_cds ? 1483228800LL + t * 21600LL : 1025616LL + t * 6;
        size_t st = (size_t)t;
        e |= nc_put_var1_longlong(nc, vt, &st, &tv);
    }
    if (nlev) e |= nc_put_var_double(nc, vl, levels);
    double *lat = malloc(sizeof(double) * nlat), *lon = malloc(sizeof(double) * nlon);
    for (int r = 0; r < nlat; r++) lat[r] = o->lat_up ? -90 + r * res : 90 - r * res;
    for (int c = 0; c < nlon; c++) lon[c] = (o->lon_m180 ? -180 : 0) + c * res;
    e |= nc_put_var_double(nc, vy, lat);
    e |= nc_put_var_double(nc, vx, lon);
    size_t n = (size_t)nlat * nlon;
    double *buf = malloc(sizeof(double) * n);
    for (int t = 0; t < nt; t++)
        for (int x = 0; x < (o->expver ? 2 : 1); x++)
            for (int l = 0; l < (nlev ? nlev : 1); l++) {
                /* With expver, even times live in experiment 0 and odd times in 1; the other
                 * slice holds fill values. */
                int present = !o->expver || (t % 2) == x;
                for (int r = 0; r < nlat; r++)
                    for (int c = 0; c < nlon; c++) {
                        double v = td_value(lat[r], lon[c], t, nlev ? levels[l] : 0);
                        if (vals) {
                            int rr = (int)floor((90 - lat[r]) / res + 0.5);
                            int cc = (int)floor(fmod(lon[c] + 360, 360) / res + 0.5) % nlon;
                            v = vals[(((size_t)t * (nlev ? nlev : 1) + l) * nlat + rr) * nlon + cc];
                        }
                        if (o->packed) v = present ? floor((v - offset) / scale + 0.5) : -32767;
                        else if (!present) v = NAN;
                        buf[(size_t)r * nlon + c] = v;
                    }
                size_t start[5] = {0}, count[5] = {0};
                int k = 0;
                start[k] = (size_t)t, count[k++] = 1;
                if (o->expver) start[k] = (size_t)x, count[k++] = 1;
                if (nlev) start[k] = (size_t)l, count[k++] = 1;
                start[k] = 0, count[k++] = (size_t)nlat;
                start[k] = 0, count[k++] = (size_t)nlon;
                e |= nc_put_vara_double(nc, vv, start, count, buf);
            }
    free(buf);
    free(lat);
    free(lon);
    e |= nc_close(nc);
    return e;
}

#endif
