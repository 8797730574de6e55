#include "io/coastline.h"

#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/netcdf_open.h"

void wx_coastline_path(char res, char *buf, int len) {
    const char *dir = getenv("WX_GSHHG_DIR");
    if (!dir || !*dir) dir = "/usr/share/gmt-gshhg";
    snprintf(buf, (size_t)len, "%s/binned_GSHHS_%c.nc", dir, res);
}

static wx_status nc_fail(const char *path, const char *what, int rc) {
    return wx_error_set(WX_ERR_RUN, "%s: %s: %s (expected a GSHHG binned coastline file)", path,
                        what, nc_strerror(rc));
}

static wx_status get_int(int nc, const char *path, const char *name, int *v) {
    int id, rc = nc_inq_varid(nc, name, &id);
    if (rc == NC_NOERR) rc = nc_get_var_int(nc, id, v);
    return rc == NC_NOERR ? WX_OK : nc_fail(path, name, rc);
}

/* Reads a whole 1-D variable of `n` values as int (netCDF converts short/byte). */
static wx_status get_ints(int nc, const char *path, const char *name, int n, int **out) {
    int id, rc = nc_inq_varid(nc, name, &id);
    size_t len = 0;
    int dim;
    if (rc == NC_NOERR) rc = nc_inq_vardimid(nc, id, &dim);
    if (rc == NC_NOERR) rc = nc_inq_dimlen(nc, dim, &len);
    if (rc != NC_NOERR) return nc_fail(path, name, rc);
    if ((int)len < n)
        return wx_error_set(WX_ERR_RUN, "%s: %s has %zu values, expected at least %d", path, name,
                            len, n);
    *out = wx_malloc(sizeof(int) * (len ? len : 1));
    rc = nc_get_var_int(nc, id, *out);
    if (rc != NC_NOERR) {
        free(*out);
        *out = NULL;
        return nc_fail(path, name, rc);
    }
    return WX_OK;
}

wx_status wx_coastline_load(const char *path, int max_level, wx_coastline *out) {
    memset(out, 0, sizeof *out);
    int nc;
    if (wx_nc_open_read(path, &nc, NULL) != WX_OK) {
        char msg[1024]; /* the message is rebuilt in the buffer it lives in */
        snprintf(msg, sizeof msg, "%s", wx_error_message());
        return wx_error_set(WX_ERR_RUN, "%s (coastlines come from Debian's gmt-gshhg-low; install "
                            "it or set WX_GSHHG_DIR)", msg);
    }
    int bin_min = 0, nx = 0, ny = 0, nbin = 0, nseg = 0, npts = 0;
    int *first_seg = NULL, *nseg_bin = NULL, *info = NULL, *first_pt = NULL, *dx = NULL,
        *dy = NULL;
    wx_status st = WX_OK;
    if ((st = get_int(nc, path, "Bin_size_in_minutes", &bin_min)) ||
        (st = get_int(nc, path, "N_bins_in_360_longitude_range", &nx)) ||
        (st = get_int(nc, path, "N_bins_in_180_degree_latitude_range", &ny)) ||
        (st = get_int(nc, path, "N_bins_in_file", &nbin)) ||
        (st = get_int(nc, path, "N_segments_in_file", &nseg)) ||
        (st = get_int(nc, path, "N_points_in_file", &npts)))
        goto done;
    if (bin_min <= 0 || nx * bin_min != 360 * 60 || ny * bin_min != 180 * 60 || nbin != nx * ny) {
        st = wx_error_set(WX_ERR_RUN, "%s: bins of %d minutes in %dx%d (%d in file): expected a "
                                      "complete global set", path, bin_min, nx, ny, nbin);
        goto done;
    }
    if ((st = get_ints(nc, path, "Id_of_first_segment_in_a_bin", nbin, &first_seg)) ||
        (st = get_ints(nc, path, "N_segments_in_a_bin", nbin, &nseg_bin)) ||
        (st = get_ints(nc, path, "Embedded_npts_levels_exit_entry_for_a_segment", nseg, &info)) ||
        (st = get_ints(nc, path, "Id_of_first_point_in_a_segment", nseg, &first_pt)) ||
        (st = get_ints(nc, path, "Relative_longitude_from_SW_corner_of_bin", npts, &dx)) ||
        (st = get_ints(nc, path, "Relative_latitude_from_SW_corner_of_bin", npts, &dy)))
        goto done;
    out->start = wx_malloc(sizeof(int) * (size_t)(nseg + 1));
    out->count = wx_malloc(sizeof(int) * (size_t)(nseg + 1));
    out->lon = wx_malloc(sizeof(float) * (size_t)(npts + 1));
    out->lat = wx_malloc(sizeof(float) * (size_t)(npts + 1));
    double size = bin_min / 60.0, scale = size / 65535.0;
    for (int b = 0; b < nbin; b++) {
        double lon_sw = (b % nx) * size, lat_sw = 90.0 - (b / nx + 1) * size;
        for (int s = first_seg[b]; s < first_seg[b] + nseg_bin[b]; s++) {
            if (s < 0 || s >= nseg) {
                st = wx_error_set(WX_ERR_RUN, "%s: bin %d: segment %d outside 0..%d", path, b, s,
                                  nseg - 1);
                goto done;
            }
            int level = (info[s] >> 6) & 7, n = (int)((unsigned)info[s] >> 9), p0 = first_pt[s];
            if (p0 < 0 || n < 0 || p0 + n > npts) {
                st = wx_error_set(WX_ERR_RUN, "%s: segment %d: points %d..%d outside 0..%d", path,
                                  s, p0, p0 + n - 1, npts - 1);
                goto done;
            }
            if (level < 1 || level > max_level || n < 2) continue;
            out->start[out->nseg] = out->npts;
            out->count[out->nseg] = n;
            for (int k = 0; k < n; k++) {
                /* Offsets are unsigned 16-bit values stored in a signed short variable. */
                out->lon[out->npts] = (float)(lon_sw + (uint16_t)dx[p0 + k] * scale);
                out->lat[out->npts] = (float)(lat_sw + (uint16_t)dy[p0 + k] * scale);
                out->npts++;
            }
            out->nseg++;
        }
    }
done:
    free(first_seg), free(nseg_bin), free(info), free(first_pt), free(dx), free(dy);
    nc_close(nc);
    if (st != WX_OK) wx_coastline_free(out);
    return st;
}

void wx_coastline_free(wx_coastline *c) {
    free(c->start), free(c->count), free(c->lon), free(c->lat);
    memset(c, 0, sizeof *c);
}
