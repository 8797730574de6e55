/* Archive → CF-1.8 NetCDF (io/netcdf_write.h, the project's one NetCDF writer): dimensions
 * (time, latitude, longitude), one float32 variable per channel named as in the recipe, in
 * physical units, with units/standard_name/long_name from the catalogue. */
#ifndef WX_ARCHIVE_DUMP_H
#define WX_ARCHIVE_DUMP_H

#include <stdint.h>

#include "core/wx_error.h"
#include "meteo/wx_time.h"

typedef struct {
    const char *vars;      /* comma-separated channel names, in output order; NULL: all */
    int has_start, has_end;
    wx_time start, end;    /* valid-time window, inclusive */
    int deflate;           /* 0..9 */
    int as_forecast;       /* 1: forecast_reference_time = the first time written (a perfect
                              forecast for checking eval; plain dumps have none, so eval refuses
                              them) */
    int threads;           /* archive reader workers (0: 4) */
    int64_t times_written; /* out */
    int vars_written;      /* out */
} wx_dump_opts;

/* Writes `out_path` atomically. Unknown channel names, an empty or reversed window are
 * WX_ERR_USAGE naming the value and what the archive has; read errors WX_ERR_RUN. */
wx_status wx_archive_dump(const char *dir, const char *out_path, wx_dump_opts *o);

#endif
