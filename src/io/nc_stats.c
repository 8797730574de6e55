#include "io/nc_stats.h"

#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/netcdf_open.h"

wx_status wx_nc_stats_open(const char *path, wx_nc_stats *s) {
    memset(s, 0, sizeof *s);
    s->ncid = -1;
    WX_TRY(wx_nc_open_read(path, &s->ncid, NULL));
    snprintf(s->path, sizeof s->path, "%s", path);
    return WX_OK;
}

void wx_nc_stats_close(wx_nc_stats *s) {
    if (s->ncid >= 0) nc_close(s->ncid);
    s->ncid = -1;
}

/* "at 500 hPa" or "" for messages. */
static const char *level_text(double level, char *buf, size_t cap) {
    if (level > 0) snprintf(buf, cap, " at level %g hPa", level);
    else buf[0] = 0;
    return buf;
}

wx_status wx_nc_stats_get(const wx_nc_stats *s, const char *var, double level, double *v) {
    char lt[64];
    int id, nd, dims[NC_MAX_VAR_DIMS];
    if (nc_inq_varid(s->ncid, var, &id) != NC_NOERR)
        return wx_error_set(WX_ERR_RUN, "%s: no variable '%s'%s (a GraphCast statistics file "
                            "has one per model variable)", s->path, var,
                            level_text(level, lt, sizeof lt));
    if (nc_inq_varndims(s->ncid, id, &nd) != NC_NOERR || nd > 1 ||
        (nd == 1 && nc_inq_vardimid(s->ncid, id, dims) != NC_NOERR))
        return wx_error_set(WX_ERR_RUN, "%s: variable '%s'%s: expected a scalar or a vector along "
                            "'level'", s->path, var, level_text(level, lt, sizeof lt));
    size_t index = 0, n = 1;
    if (nd == 1) {
        char dname[NC_MAX_NAME + 1];
        int cid;
        if (nc_inq_dim(s->ncid, dims[0], dname, &n) != NC_NOERR || strcmp(dname, "level"))
            return wx_error_set(WX_ERR_RUN, "%s: variable '%s': its dimension is not 'level'",
                                s->path, var);
        if (level > 0) {
            double *lv = malloc(sizeof(double) * (n ? n : 1));
            if (!lv) return wx_error_set(WX_ERR_RUN, "%s: out of memory", s->path);
            /* The coordinate must lie along the variable's own dimension: lv holds n values. */
            int cnd = 0, cdim = -1;
            int ok = nc_inq_varid(s->ncid, "level", &cid) == NC_NOERR &&
                     nc_inq_varndims(s->ncid, cid, &cnd) == NC_NOERR && cnd == 1 &&
                     nc_inq_vardimid(s->ncid, cid, &cdim) == NC_NOERR && cdim == dims[0] &&
                     nc_get_var_double(s->ncid, cid, lv) == NC_NOERR;
            size_t k = 0;
            while (ok && k < n && fabs(lv[k] - level) > 1e-6) k++;
            free(lv);
            if (!ok)
                return wx_error_set(WX_ERR_RUN, "%s: no readable 'level' coordinate along the "
                                    "'level' dimension (for variable '%s'%s)", s->path, var,
                                    level_text(level, lt, sizeof lt));
            if (k == n)
                return wx_error_set(WX_ERR_RUN, "%s: variable '%s' has no value%s", s->path, var,
                                    level_text(level, lt, sizeof lt));
            index = k;
        } else if (n != 1) {
            return wx_error_set(WX_ERR_RUN, "%s: variable '%s' has %zu levels; expected one value "
                                "(a surface variable)", s->path, var, n);
        }
    } else if (level > 0) {
        return wx_error_set(WX_ERR_RUN, "%s: variable '%s' has no level dimension (needed: a value%s)",
                            s->path, var, level_text(level, lt, sizeof lt));
    }
    int e = nd == 1 ? nc_get_var1_double(s->ncid, id, &index, v) : nc_get_var_double(s->ncid, id, v);
    if (e != NC_NOERR)
        return wx_error_set(WX_ERR_RUN, "%s: variable '%s'%s: %s", s->path, var,
                            level_text(level, lt, sizeof lt), nc_strerror(e));
    if (!isfinite(*v))
        return wx_error_set(WX_ERR_RUN, "%s: variable '%s'%s: value %g (expected finite)", s->path,
                            var, level_text(level, lt, sizeof lt), *v);
    return WX_OK;
}
