#include "io/netcdf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/wx_fs.h"

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

/* A file whose nc_close failed (a full disk: HDF5 writes its cache there) stays half-open inside
 * HDF5, whose exit-time teardown then crashes on it (SIGSEGV in H5F__close_cb after the error
 * line); main() skips that teardown when this is set. */
static int close_failed;

static int close_file(int ncid) {
    int rc = nc_close(ncid);
    if (rc != NC_NOERR) close_failed = 1;
    return rc;
}

int wx_nc_writer_exit_unclean(void) { return close_failed; }

/* " (its file system has 12 kB free)" when the folder of `tmp` is nearly full, else "". */
static void space_hint(const char *tmp, char *buf, size_t n) {
    buf[0] = 0;
    char *dcopy = wx_strdup(tmp);
    struct statvfs v;
    if (statvfs(dirname(dcopy), &v) == 0 && (double)v.f_bavail * (double)v.f_frsize < 64e6)
        snprintf(buf, n, " (its file system has %.0f kB free: full?)",
                 (double)v.f_bavail * (double)v.f_frsize / 1e3);
    free(dcopy);
}

void wx_nc_writer_abort(wx_nc_writer *w) {
    if (w->ncid > 0) close_file(w->ncid);
    if (w->tmp) unlink(w->tmp);
    if (w->reg > 0) wx_fs_tmp_unregister(w->reg - 1);
    free(w->path);
    free(w->tmp);
    free(w->varids);
    free(w->ndims);
    memset(w, 0, sizeof *w);
}

wx_status wx_nc_writer_open(wx_nc_writer *w, const char *path, const wx_nc_layout *L) {
    return wx_nc_writer_open_time(w, path, L, "valid_time");
}

wx_status wx_nc_writer_open_time(wx_nc_writer *w, const char *path, const wx_nc_layout *L,
                                 const char *tname) {
    return wx_nc_writer_open_ext(w, path, L, tname, NULL);
}

wx_status wx_nc_writer_open_ext(wx_nc_writer *w, const char *path, const wx_nc_layout *L,
                                const char *tname, const wx_nc_layout_ext *ext) {
    wx_status st = WX_OK;
    static const wx_nc_layout_ext none = {0};
    const wx_nc_layout_ext *X = ext ? ext : &none;
    memset(w, 0, sizeof *w);
    WX_TRY(wx_output_replaceable(path));
    WX_TRY(wx_mkdir_parent(path)); /* outputs make their folder (core/wx_fs.h) */
    wx_atomic_remove_dead(path);   /* a SIGKILLed run's temporary of this output */
    w->path = wx_strdup(path);
    size_t n = strlen(path) + 64;
    w->tmp = wx_malloc(n);
    char *dcopy = wx_strdup(path), *bcopy = wx_strdup(path);
    snprintf(w->tmp, n, "%s/.%s.tmp.%ld", dirname(dcopy), basename(bcopy), (long)getpid());
    free(dcopy);
    free(bcopy);
    w->reg = wx_fs_tmp_register(w->tmp, 0) + 1; /* removed on SIGINT/SIGTERM (core/wx_fs.h) */
    w->nvars = L->nvars;
    w->nlevels = L->nlevels;
    w->grid = L->grid;
    w->has_ref_time = L->has_ref_time;
    w->ref_time = L->ref_time;
    w->varids = wx_calloc(L->nvars > 0 ? L->nvars : 1, sizeof(int));
    w->ndims = wx_calloc(L->nvars > 0 ? L->nvars : 1, sizeof(int));
    w->members = X->members;
    const char *lname = X->level_name ? X->level_name : "pressure_level";
    int naxes = (L->nlevels > 0 ? 1 : 0) + X->nextra_axes;
    int dl_axis[16], vl_axis[16], dm = -1, vm = -1;
    if (naxes > 16 || (X->nextra_axes > 0 && L->nlevels <= 0)) {
        st = wx_error_set(WX_ERR_RUN, "%s: %d level axes (expected the first one, then at most "
                          "15 more)", path, naxes);
        goto fail;
    }
    int ncid = -1;
    NC_TRY(nc_create(w->tmp, NC_NETCDF4 | NC_CLOBBER, &ncid), "create");
    w->ncid = ncid;
    int dt, dy, dx;
    if (X->members > 0) NC_TRY(nc_def_dim(ncid, "realization", X->members, &dm), "define realization");
    NC_TRY(nc_def_dim(ncid, tname, NC_UNLIMITED, &dt), "define the time dimension");
    char axis_name[16][80];
    for (int a = 0; a < naxes; a++) {
        if (a == 0) snprintf(axis_name[a], sizeof axis_name[a], "%s", lname);
        else snprintf(axis_name[a], sizeof axis_name[a], "%s_%d", lname, a + 1);
        size_t len = a == 0 ? (size_t)L->nlevels : (size_t)X->extra_axes[a - 1].nlevels;
        NC_TRY(nc_def_dim(ncid, axis_name[a], len, &dl_axis[a]), "define a level dimension");
    }
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
    if (X->members > 0) {
        NC_TRY(nc_def_var(ncid, "realization", NC_INT, 1, &dm, &vm), "define realization");
        NC_TRY(put_text(ncid, vm, "standard_name", "realization"), "attribute");
        NC_TRY(put_text(ncid, vm, "long_name", "ensemble member"), "attribute");
        NC_TRY(put_text(ncid, vm, "units", "1"), "attribute");
    }
    for (int a = 0; a < naxes; a++) {
        NC_TRY(nc_def_var(ncid, axis_name[a], NC_DOUBLE, 1, &dl_axis[a], &vl), "define a level axis");
        vl_axis[a] = vl;
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
        dims[nd++] = dt; /* CDO wants time first: (time, realization, lat, lon) */
        if (X->members > 0) dims[nd++] = dm;
        if (d->has_level) {
            int axis = d->has_level - 1;
            if (L->nlevels <= 0 || axis < 0 || axis >= naxes ||
                X->members > 0) {
                st = wx_error_set(WX_ERR_RUN, "%s: variable %s: level axis %d does not exist%s",
                                  path, d->name, axis,
                                  X->members > 0 ? " (an ensemble file keeps <= 4 dimensions: "
                                                   "one variable per level)" : "");
                goto fail;
            }
            dims[nd++] = dl_axis[axis];
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
        /* CF 5.7 / Example 5.14: the reference time and the lead are auxiliary coordinates of
         * every field, so readers (xarray, netCDF-Java) list them as coordinates. */
        if (L->has_ref_time)
            NC_TRY(put_text(ncid, id, "coordinates", "forecast_reference_time forecast_period"),
                   "attribute");
        w->varids[v] = id;
        w->ndims[v] = nd;
    }
    NC_TRY(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.8"), "attribute");
    NC_TRY(put_text(ncid, NC_GLOBAL, "institution", "wxcast"), "attribute");
    if (L->title) NC_TRY(put_text(ncid, NC_GLOBAL, "title", L->title), "attribute");
    if (L->source) NC_TRY(put_text(ncid, NC_GLOBAL, "source", L->source), "attribute");
    NC_TRY(nc_enddef(ncid), "end of definitions");
    double *buf = wx_malloc(sizeof(double) * (L->grid.nlat > L->grid.nlon ? L->grid.nlat : L->grid.nlon));
    for (int j = 0; j < L->grid.nlat; j++) buf[j] = wx_grid_lat(&L->grid, j);
    int rc = nc_put_var_double(ncid, vy, buf);
    /* A regional grid across the meridian (lon0 350, ten columns past 360) is written as the CDS
     * delivers it, -10 .. 2: still increasing, and within [-180, 360) as readers expect; wxcast's
     * readers fold lon0 back into [0, 360). */
    double lon_shift = wx_grid_lon(&L->grid, L->grid.nlon - 1) >= 360.0 - 1e-9 ? -360.0 : 0.0;
    for (int i = 0; rc == NC_NOERR && i < L->grid.nlon; i++)
        buf[i] = wx_grid_lon(&L->grid, i) + lon_shift;
    if (rc == NC_NOERR) rc = nc_put_var_double(ncid, vx, buf);
    free(buf);
    NC_TRY(rc, "write coordinates");
    for (int a = 0; a < naxes; a++)
        NC_TRY(nc_put_var_double(ncid, vl_axis[a], a == 0 ? L->levels : X->extra_axes[a - 1].levels),
               "write a level axis");
    if (X->members > 0) {
        int *num = wx_malloc(sizeof(int) * (size_t)X->members);
        for (int m = 0; m < X->members; m++) num[m] = m;
        rc = nc_put_var_int(ncid, vm, num);
        free(num);
        NC_TRY(rc, "write realization");
    }
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

wx_status wx_nc_writer_var_text(wx_nc_writer *w, int var, const char *name, const char *text) {
    wx_status st = WX_OK;
    WX_ASSERT(var >= -1 && var < w->nvars && w->ntimes == 0);
    NC_TRY(nc_redef(w->ncid), "reopen the definitions");
    int rc = put_text(w->ncid, var < 0 ? NC_GLOBAL : w->varids[var], name, text);
    int rc2 = nc_enddef(w->ncid);
    if (rc != NC_NOERR) {
        st = wx_error_set(WX_ERR_RUN, "%s: attribute %s of variable %d: %s", w->path, name, var,
                          nc_strerror(rc));
        goto fail;
    }
    NC_TRY(rc2, "end of definitions");
    return WX_OK;
fail:
    return st;
}

wx_status wx_nc_writer_put(wx_nc_writer *w, int64_t t, wx_time valid, int var, int level_index,
                           const float *values) {
    return wx_nc_writer_put_member(w, t, valid, var, level_index, 0, values);
}

wx_status wx_nc_writer_put_member(wx_nc_writer *w, int64_t t, wx_time valid, int var,
                                  int level_index, int member, const float *values) {
    wx_status st = WX_OK;
    WX_ASSERT(var >= 0 && var < w->nvars);
    WX_ASSERT(member >= 0 && (member < w->members || (w->members == 0 && member == 0)));
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
    int ndims = w->ndims[var], k = 0;
    size_t start[4] = {0, 0, 0, 0}, count[4] = {1, 1, 1, 1};
    start[k++] = (size_t)t;
    if (w->members > 0) start[k++] = (size_t)member;
    if (ndims - k == 3) start[k] = (size_t)level_index;
    count[ndims - 2] = w->grid.nlat;
    count[ndims - 1] = w->grid.nlon;
    NC_TRY(nc_put_vara_float(w->ncid, w->varids[var], start, count, values), "write field");
    return WX_OK;
fail:
    return st;
}

wx_status wx_nc_writer_close(wx_nc_writer *w) {
    wx_status st = WX_OK;
    int rc = close_file(w->ncid);
    w->ncid = 0;
    if (rc != NC_NOERR) {
        char hint[96];
        space_hint(w->tmp, hint, sizeof hint);
        st = wx_error_set(WX_ERR_RUN, "%s: close: %s%s", w->path, nc_strerror(rc), hint);
        goto fail;
    }
    int fd = open(w->tmp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        if (fd >= 0) close(fd);
        st = wx_error_set(WX_ERR_RUN, "%s: fsync of the temporary %s failed: %s", w->path, w->tmp,
                          strerror(errno));
        goto fail;
    }
    close(fd);
    if (rename(w->tmp, w->path) != 0) {
        st = wx_error_set(WX_ERR_RUN, "%s: rename from %s failed: %s", w->path, w->tmp,
                          strerror(errno));
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
