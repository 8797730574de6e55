#include "io/netcdf_classic.h"

#include <netcdf.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t pad4(uint64_t n) { return (n + 3) / 4 * 4; }

/* The encoded size of a name: its length (4 or 8 bytes) and its bytes padded to 4. */
static uint64_t name_bytes(const char *name, uint64_t count) { return count + pad4(strlen(name)); }

/* The encoded size of an attribute list (tag and count, then name, type, count, values). */
static uint64_t att_list_bytes(int ncid, int var, int natts, uint64_t count) {
    uint64_t b = 4 + count;
    for (int a = 0; a < natts; a++) {
        char name[NC_MAX_NAME + 1];
        nc_type t;
        size_t len = 0, tsize = 1;
        if (nc_inq_attname(ncid, var, a, name) || nc_inq_att(ncid, var, name, &t, &len)) continue;
        nc_inq_type(ncid, t, NULL, &tsize);
        b += name_bytes(name, count) + 4 + count + pad4((uint64_t)len * tsize);
    }
    return b;
}

wx_status wx_netcdf_classic_check_size(int ncid, const char *path) {
    int fmt = 0;
    if (nc_inq_format(ncid, &fmt) != NC_NOERR) return WX_OK;
    if (fmt != NC_FORMAT_CLASSIC && fmt != NC_FORMAT_64BIT_OFFSET && fmt != NC_FORMAT_CDF5) return WX_OK;
    uint64_t cnt = fmt == NC_FORMAT_CDF5 ? 8 : 4;    /* counts and lengths */
    uint64_t off = fmt == NC_FORMAT_CLASSIC ? 4 : 8; /* a variable's begin */
    int ndims = 0, nvars = 0, ngatts = 0, unlim = -1;
    if (nc_inq(ncid, &ndims, &nvars, &ngatts, &unlim) != NC_NOERR) return WX_OK;
    size_t numrecs = 0;
    if (unlim >= 0) nc_inq_dimlen(ncid, unlim, &numrecs);
    uint64_t need = 4 + cnt;     /* magic, numrecs */
    need += 4 + cnt;             /* dimension list: tag, count */
    for (int d = 0; d < ndims; d++) {
        char name[NC_MAX_NAME + 1];
        if (nc_inq_dimname(ncid, d, name) == NC_NOERR) need += name_bytes(name, cnt) + cnt;
    }
    need += att_list_bytes(ncid, NC_GLOBAL, ngatts, cnt);
    need += 4 + cnt; /* variable list: tag, count */
    for (int v = 0; v < nvars; v++) {
        char name[NC_MAX_NAME + 1];
        int vd = 0, dims[NC_MAX_VAR_DIMS], natts = 0;
        nc_type t;
        size_t tsize = 1;
        if (nc_inq_var(ncid, v, name, &t, &vd, dims, &natts) != NC_NOERR) continue;
        nc_inq_type(ncid, t, NULL, &tsize);
        need += name_bytes(name, cnt) + cnt + (uint64_t)vd * cnt + att_list_bytes(ncid, v, natts, cnt) +
                4 + cnt + off;
        uint64_t vals = tsize; /* the data: per record for a record variable */
        int rec = 0;
        for (int k = 0; k < vd; k++) {
            size_t len = 0;
            if (dims[k] == unlim) {
                rec = 1;
                continue;
            }
            nc_inq_dimlen(ncid, dims[k], &len);
            vals *= len;
        }
        need += rec ? vals * numrecs : vals;
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || (uint64_t)sb.st_size >= need) return WX_OK;
    return wx_error_set(WX_ERR_RUN, "%s: truncated: %lld bytes, and its header describes at least "
                        "%llu (%d variables, %zu records); netCDF would read the missing part as "
                        "zeros: download or copy it again", path, (long long)sb.st_size,
                        (unsigned long long)need, nvars, numrecs);
}
