/* What eval needs from a forecast product file beyond its fields (which wx_source reads): the
 * initial time, from the CF scalar forecast_reference_time that src/io/netcdf_write.c writes. */
#ifndef WX_FORECAST_FILE_H
#define WX_FORECAST_FILE_H

#include "core/wx_error.h"
#include "meteo/wx_time.h"

/* *found = 0 (and WX_OK) when the file has no forecast_reference_time variable; an unreadable
 * file or a variable with unusable units is an error. */
wx_status wx_forecast_file_ref_time(const char *path, wx_time *out, int *found);

#endif
