#include "io/netcdf_write.h"

#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NC_TRY(call, what)                                                                      \
    do {                                                                                        \
        int rc_ = (call);                                                                       \
        if (rc_ != NC_NOERR) {                                                                  \
            st = wx_error_set(WX_ERR_RUN, "%s: %s: %s", w->path, what, nc_strerror(rc_));      \
            goto fail;                                                                          \
        }                                                                                       \
    } while (0)

static int put_text(int ncid, int var, const char *name, const char *text) {
    return nc_put_att_text(ncid, var, name, strlen(text), text);
}

void wx_nc_writer_abort(wx_nc_writer *w) {
    if (w->ncid > 0) nc_close(w->ncid);
    if (w->tmp) unlink(w->tmp);
    free(w->path);
    free(w->tmp);
    free(w->varids);
    memset(w, 0, sizeof *w);
}

wx_status wx_nc_writer_open(wx_nc_writer *w, const char *path, const wx_nc_layout *L) {
    return wx_nc_writer_open_time(w, path, L, "valid_time");
}

wx_status wx_nc_writer_open_time(wx_nc_writer *w, const char *path, const wx_nc_layout *L,
                                 const char *tname) {
    wx_status st = WX_OK;
    memset(w, 0, sizeof *w);
    w->path = wx_strdup(path);
    size_t n = strlen(path) + 64;
    w->tmp = wx_malloc(n);
    char *dcopy = wx_strdup(path), *bcopy = wx_strdup(path);
    snprintf(w->tmp, n, "%s/.%s.tmp.%ld", dirname(dcopy), basename(bcopy), (long)getpid());
    free(dcopy);
    free(bcopy);
    w->nvars = L->nvars;
    w->nlevels = L->nlevels;
    w->grid = L->grid;
    w->has_ref_time = L->has_ref_time;
    w->ref_time = L->ref_time;
    w->varids = wx_calloc(L->nvars > 0 ? L->nvars : 1, sizeof(int));
    int ncid = -1;
    NC_TRY(nc_create(w->tmp, NC_NETCDF4 | NC_CLOBBER, &ncid), "create");
    w->ncid = ncid;
    int dt, dl = -1, dy, dx;
    NC_TRY(nc_def_dim(ncid, tname, NC_UNLIMITED, &dt), "define the time dimension");
    if (L->nlevels > 0) NC_TRY(nc_def_dim(ncid, "pressure_level", L->nlevels, &dl), "define pressure_level");
    NC_TRY(nc_def_dim(ncid, "latitude", L->grid.nlat, &dy), "define latitude");
    NC_TRY(nc_def_dim(ncid, "longitude", L->grid.nlon, &dx), "define longitude");
    int vt, vl = -1, vy, vx;
    NC_TRY(nc_def_var(ncid, tname, NC_INT64, 1, &dt, &vt), "define the time coordinate");
    NC_TRY(put_text(ncid, vt, "units", "seconds since 1970-01-01"), "attribute");
    NC_TRY(put_text(ncid, vt, "calendar", "proleptic_gregorian"), "attribute");
    NC_TRY(put_text(ncid, vt, "standard_name", "time"), "attribute");
    NC_TRY(put_text(ncid, vt, "long_name", "time"), "attribute");
    NC_TRY(put_text(ncid, vt, "axis", "T"), "attribute");
    w->time_var = vt;
    if (L->has_ref_time) {
        int vr, vp;
        NC_TRY(nc_def_var(ncid, "forecast_reference_time", NC_INT64, 0, NULL, &vr), "define reference time");
        NC_TRY(put_text(ncid, vr, "units", "seconds since 1970-01-01"), "attribute");
        NC_TRY(put_text(ncid, vr, "calendar", "proleptic_gregorian"), "attribute");
        NC_TRY(put_text(ncid, vr, "standard_name", "forecast_reference_time"), "attribute");
        NC_TRY(nc_def_var(ncid, "forecast_period", NC_INT64, 1, &dt, &vp), "define forecast_period");
        NC_TRY(put_text(ncid, vp, "units", "hours"), "attribute");
        NC_TRY(put_text(ncid, vp, "standard_name", "forecast_period"), "attribute");
        /* Newer xarray decodes a timedelta only with this attribute (earth2studio PR #538). */
        NC_TRY(put_text(ncid, vp, "dtype", "timedelta64[ns]"), "attribute");
        w->period_var = vp;
    }
    if (L->nlevels > 0) {
        NC_TRY(nc_def_var(ncid, "pressure_level", NC_DOUBLE, 1, &dl, &vl), "define pressure_level");
        NC_TRY(put_text(ncid, vl, "units", "hPa"), "attribute");
        NC_TRY(put_text(ncid, vl, "standard_name", "air_pressure"), "attribute");
        NC_TRY(put_text(ncid, vl, "long_name", "pressure"), "attribute");
        NC_TRY(put_text(ncid, vl, "positive", "down"), "attribute");
        NC_TRY(put_text(ncid, vl, "axis", "Z"), "attribute");
    }
    NC_TRY(nc_def_var(ncid, "latitude", NC_DOUBLE, 1, &dy, &vy), "define latitude");
    NC_TRY(put_text(ncid, vy, "units", "degrees_north"), "attribute");
    NC_TRY(put_text(ncid, vy, "standard_name", "latitude"), "attribute");
    NC_TRY(put_text(ncid, vy, "long_name", "latitude"), "attribute");
    NC_TRY(put_text(ncid, vy, "axis", "Y"), "attribute");
    NC_TRY(nc_def_var(ncid, "longitude", NC_DOUBLE, 1, &dx, &vx), "define longitude");
    NC_TRY(put_text(ncid, vx, "units", "degrees_east"), "attribute");
    NC_TRY(put_text(ncid, vx, "standard_name", "longitude"), "attribute");
    NC_TRY(put_text(ncid, vx, "long_name", "longitude"), "attribute");
    NC_TRY(put_text(ncid, vx, "axis", "X"), "attribute");
    for (int v = 0; v < L->nvars; v++) {
        const wx_nc_var *d = &L->vars[v];
        int dims[4], nd = 0;
        dims[nd++] = dt;
        if (d->has_level) {
            if (L->nlevels <= 0) {
                st = wx_error_set(WX_ERR_RUN, "%s: variable %s needs a pressure_level dimension",
                                  path, d->name);
                goto fail;
            }
            dims[nd++] = dl;
        }
        dims[nd++] = dy;
        dims[nd++] = dx;
        int id;
        NC_TRY(nc_def_var(ncid, d->name, NC_FLOAT, nd, dims, &id), "define variable");
        size_t chunk[4];
        for (int k = 0; k < nd; k++) chunk[k] = 1;
        chunk[nd - 2] = L->grid.nlat;
        chunk[nd - 1] = L->grid.nlon;
        NC_TRY(nc_def_var_chunking(ncid, id, NC_CHUNKED, chunk), "chunking");
        if (L->deflate > 0) NC_TRY(nc_def_var_deflate(ncid, id, 1, 1, L->deflate), "deflate");
        float fill = NAN;
        NC_TRY(nc_def_var_fill(ncid, id, 0, &fill), "fill value");
        NC_TRY(put_text(ncid, id, "units", d->units), "attribute");
        if (d->standard_name && d->standard_name[0])
            NC_TRY(put_text(ncid, id, "standard_name", d->standard_name), "attribute");
        NC_TRY(put_text(ncid, id, "long_name", d->long_name ? d->long_name : d->name), "attribute");
        w->varids[v] = id;
    }
    NC_TRY(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.8"), "attribute");
    NC_TRY(put_text(ncid, NC_GLOBAL, "institution", "wxcast"), "attribute");
    if (L->title) NC_TRY(put_text(ncid, NC_GLOBAL, "title", L->title), "attribute");
    if (L->source) NC_TRY(put_text(ncid, NC_GLOBAL, "source", L->source), "attribute");
    NC_TRY(nc_enddef(ncid), "end of definitions");
    double *buf = wx_malloc(sizeof(double) * (L->grid.nlat > L->grid.nlon ? L->grid.nlat : L->grid.nlon));
    for (int j = 0; j < L->grid.nlat; j++) buf[j] = wx_grid_lat(&L->grid, j);
    int rc = nc_put_var_double(ncid, vy, buf);
    for (int i = 0; rc == NC_NOERR && i < L->grid.nlon; i++) buf[i] = wx_grid_lon(&L->grid, i);
    if (rc == NC_NOERR) rc = nc_put_var_double(ncid, vx, buf);
    free(buf);
    NC_TRY(rc, "write coordinates");
    if (L->nlevels > 0) NC_TRY(nc_put_var_double(ncid, vl, L->levels), "write pressure_level");
    if (L->has_ref_time) {
        long long rt = L->ref_time;
        int vr;
        NC_TRY(nc_inq_varid(ncid, "forecast_reference_time", &vr), "reference time");
        NC_TRY(nc_put_var_longlong(ncid, vr, &rt), "write reference time");
    }
    return WX_OK;
fail:
    wx_nc_writer_abort(w);
    return st;
}

wx_status wx_nc_writer_put(wx_nc_writer *w, int64_t t, wx_time valid, int var, int level_index,
                           const float *values) {
    wx_status st = WX_OK;
    WX_ASSERT(var >= 0 && var < w->nvars);
    if (t > w->ntimes)
        return wx_error_set(WX_ERR_RUN, "%s: time index %lld written before %lld", w->path,
                            (long long)t, (long long)w->ntimes);
    if (t == w->ntimes) {
        size_t start = (size_t)t, one = 1;
        long long v = valid;
        NC_TRY(nc_put_vara_longlong(w->ncid, w->time_var, &start, &one, &v), "write valid_time");
        if (w->has_ref_time) {
            long long hours = (valid - w->ref_time) / 3600;
            NC_TRY(nc_put_vara_longlong(w->ncid, w->period_var, &start, &one, &hours),
                   "write forecast_period");
        }
        w->ntimes++;
    }
    int ndims;
    NC_TRY(nc_inq_varndims(w->ncid, w->varids[var], &ndims), "inquire variable");
    size_t start[4] = {(size_t)t, 0, 0, 0}, count[4] = {1, 1, 1, 1};
    if (ndims == 4) {
        start[1] = (size_t)level_index;
        count[2] = w->grid.nlat;
        count[3] = w->grid.nlon;
    } else {
        count[1] = w->grid.nlat;
        count[2] = w->grid.nlon;
    }
    NC_TRY(nc_put_vara_float(w->ncid, w->varids[var], start, count, values), "write field");
    return WX_OK;
fail:
    return st;
}

wx_status wx_nc_writer_close(wx_nc_writer *w) {
    wx_status st = WX_OK;
    int rc = nc_close(w->ncid);
    w->ncid = 0;
    if (rc != NC_NOERR) {
        st = wx_error_set(WX_ERR_RUN, "%s: close: %s", w->path, nc_strerror(rc));
        goto fail;
    }
    int fd = open(w->tmp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        if (fd >= 0) close(fd);
        st = wx_error_set(WX_ERR_RUN, "%s: fsync of the temporary failed", w->path);
        goto fail;
    }
    close(fd);
    if (rename(w->tmp, w->path) != 0) {
        st = wx_error_set(WX_ERR_RUN, "%s: rename from %s failed", w->path, w->tmp);
        goto fail;
    }
    char *dcopy = wx_strdup(w->path);
    int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY);
    free(dcopy);
    if (dfd >= 0) {
        fsync(dfd); /* best effort: some file systems refuse fsync on folders */
        close(dfd);
    }
    free(w->tmp);
    w->tmp = NULL;
    wx_nc_writer_abort(w);
    return WX_OK;
fail:
    wx_nc_writer_abort(w);
    return st;
}
