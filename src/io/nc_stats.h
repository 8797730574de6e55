/* DeepMind GraphCast's normalisation statistics (stats/mean_by_level.nc, stddev_by_level.nc,
 * diffs_stddev_by_level.nc, read by graphcast normalization.py): one NetCDF file of per-variable
 * values, a scalar for a surface variable, forcing or static field, a vector along the `level`
 * dimension (hPa, its coordinate variable) for an atmospheric one. Read with netCDF-C. */
#ifndef WX_NC_STATS_H
#define WX_NC_STATS_H

#include "core/wx_error.h"

typedef struct {
    char path[1024];
    int ncid;
} wx_nc_stats;

/* WX_ERR_RUN naming the file when it cannot be opened as NetCDF. */
wx_status wx_nc_stats_open(const char *path, wx_nc_stats *s);
void wx_nc_stats_close(wx_nc_stats *s);

/* *v = the value of `var` at `level` hPa (level <= 0: a variable without a level dimension, or
 * with a level dimension of length 1). A missing variable, a missing level, a value that is not
 * finite or a variable of another shape is WX_ERR_RUN with one message naming the file, the
 * variable and the level. */
wx_status wx_nc_stats_get(const wx_nc_stats *s, const char *var, double level, double *v);

#endif
