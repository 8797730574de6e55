/* NetCDF reader (netCDF-C) behind io/wx_source.h: CF coordinates found by units/standard_name/axis,
 * packed variables, fill values, time units and calendars, CDS new (valid_time, pressure_level,
 * expver) and old (time, level) layouts, and DeepMind's GraphCast / WeatherBench2 layout (batch,
 * time offsets dated by a `datetime` coordinate, lat/lon/level by name, "_6hr" accumulations). */
#ifndef WX_NETCDF_READ_H
#define WX_NETCDF_READ_H

#include "io/wx_source_priv.h"

wx_status wx_netcdf_scan(wx_source *s);
wx_status wx_netcdf_read(wx_source *s, int i, wx_missing_policy policy, float *values);
void wx_netcdf_close(wx_source *s);

#endif
