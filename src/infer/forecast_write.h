/* A forecast product file (one initial time) through the project's NetCDF writer
 * (io/netcdf_write.h): CF-1.8, dimensions (time, latitude, longitude) with `time` the valid time,
 * latitude north→south as the model grid, longitude from 0 east; one float32 variable per channel
 * named as the channel ("z500", "t2m") with units, standard_name and long_name from the
 * catalogue; the scalar forecast_reference_time and forecast_period(time) in hours. Lead 0 (the
 * initial state) is the first time written. The file appears atomically on close. */
#ifndef WX_FORECAST_WRITE_H
#define WX_FORECAST_WRITE_H

#include <stdint.h>

#include "io/archive.h"
#include "io/netcdf_write.h"

typedef struct {
    wx_nc_writer w;
    int nvars;
    int64_t ntimes, points;
    wx_time ref_time;
    struct wx_forecast_attrs *attrs; /* [nvars] names and attribute strings kept for the writer */
    wx_nc_var *vars;
} wx_forecast_writer;

/* chans [nvars]: the archive description of each channel written (name, param, level, units).
 * source: the "source" global attribute (the checkpoint), may be NULL. */
wx_status wx_forecast_writer_open(wx_forecast_writer *f, const char *path, const wx_grid *g,
                                  int nvars, const wx_archive_channel *chans, wx_time ref_time,
                                  const char *source);
/* Appends valid time `valid` (>= the previous one): fields (nvars, nlat, nlon), physical units. */
wx_status wx_forecast_writer_put(wx_forecast_writer *f, wx_time valid, const float *fields);
wx_status wx_forecast_writer_close(wx_forecast_writer *f);
void wx_forecast_writer_abort(wx_forecast_writer *f);

#endif
