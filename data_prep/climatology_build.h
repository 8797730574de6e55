/* Computes the day-of-year × hour-of-day climatology of an archive's records (io/climatology.h
 * describes the file; docs/archive-format.md the formula). */
#ifndef WX_CLIMATOLOGY_BUILD_H
#define WX_CLIMATOLOGY_BUILD_H

#include <stdint.h>

#include "io/archive.h"

/* Fills rec [nchan, nlat, nlon] (float32, physical units) with record t of the archive. */
typedef wx_status (*wx_clim_fetch)(void *ctx, int64_t t, float *rec);

typedef struct {
    int window;           /* odd number of days (61) */
    int64_t budget_bytes; /* accumulator memory; more elements than fit take further passes */
} wx_clim_opts;

/* Writes `path` atomically from the records of `m` whose valid time lies in [start, end], read
 * through `fetch`. Hours of day are those of the records in the window. */
wx_status wx_climatology_build(const char *path, const wx_archive_meta *m, wx_time start,
                               wx_time end, const wx_clim_opts *opts, wx_clim_fetch fetch,
                               void *ctx);

#endif
