/* What eval and export need from a forecast product file beyond its fields (which wx_source
 * reads): the initial time (the CF scalar forecast_reference_time that src/io/netcdf_write.c
 * writes, or GRIB's dataDate/dataTime) and whether the file is an ensemble spread. */
#ifndef WX_FORECAST_FILE_H
#define WX_FORECAST_FILE_H

#include "core/wx_error.h"
#include "io/wx_source.h"
#include "meteo/wx_time.h"

/* *found = 0 (and WX_OK) when the file has no forecast_reference_time variable; an unreadable
 * file or a variable with unusable units is an error. */
wx_status wx_forecast_file_ref_time(const char *path, wx_time *out, int *found);

/* *yes = 1 when the file holds an ensemble spread (the members' standard deviation per point)
 * rather than a forecast: a NetCDF file whose global attribute ensemble_statistic is
 * "standard_deviation" (what `wxcast forecast --members` writes to <out>_spread.nc), or any of
 * whose variables has a CF cell_methods with "realization: standard_deviation" (other
 * producers). Anything else, GRIB included, is *yes = 0; an unreadable file is an error. */
wx_status wx_forecast_file_is_spread(const char *path, int *yes);
/* WX_ERR_USAGE naming the file when it is a spread file (for commands that score or start from
 * forecasts), WX_OK otherwise. */
wx_status wx_forecast_file_check_not_spread(const char *path);

/* The GRIB analogue of forecast_reference_time: the messages' dataDate/dataTime (the forecast's
 * initial time) when every message of the file that has a valid time shares one; *found = 0
 * when they differ (a series of analyses) or no message has a valid time. */
void wx_forecast_file_grib_ref_time(const wx_source *src, wx_time *out, int *found);

#endif
