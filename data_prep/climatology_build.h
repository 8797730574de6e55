/* Computes the day-of-year × hour-of-day climatology of an archive's records (io/climatology.h
 * describes the file; docs/archive-format.md the formula). */
#ifndef WX_CLIMATOLOGY_BUILD_H
#define WX_CLIMATOLOGY_BUILD_H

#include <stdint.h>

#include "io/archive.h"

/* Fills out[0, n) with elements [q0, q0 + n) of record t of the archive (a record is
 * [nchan, nlat, nlon] float32 in physical units): each pass of the build reads only its block of
 * every record, so the records are read once in all, however many passes the budget needs. */
typedef wx_status (*wx_clim_fetch)(void *ctx, int64_t t, size_t q0, size_t n, float *out);

typedef struct {
    int window;           /* odd number of days (61) */
    int64_t budget_bytes; /* accumulator memory; more elements than fit take further passes */
    int hour_step;        /* hours kept: every hour_step-th from the window's first record's hour
                           * (6: WeatherBench2's 6-hourly climatology); 0: every hour present */
} wx_clim_opts;

/* The hours of day (ascending) the climatology of `m`'s records in [start, end] keeps; returns
 * how many (0 when no record lies in the window). */
int wx_climatology_hours(const wx_archive_meta *m, wx_time start, wx_time end, int hour_step,
                         uint8_t hours[24]);

/* Writes `path` atomically from the records of `m` whose valid time lies in [start, end] and
 * whose hour is one wx_climatology_hours keeps, read through `fetch`: the mean, then (version 2,
 * when wx_clim_seeps_channel finds a channel) the SEEPS fields, each within the budget. */
wx_status wx_climatology_build(const char *path, const wx_archive_meta *m, wx_time start,
                               wx_time end, const wx_clim_opts *opts, wx_clim_fetch fetch,
                               void *ctx);
/* wx_climatology_build writing format `version`: 0 or 2, the current one (with the SEEPS fields
 * of a 6 h / 24 h tp channel, climatology_seeps.h); 1: version 1, the mean only, as older wxcast
 * wrote it (the compatibility tests make one). */
wx_status wx_climatology_build_version(const char *path, const wx_archive_meta *m, wx_time start,
                                       wx_time end, const wx_clim_opts *opts, int version,
                                       wx_clim_fetch fetch, void *ctx);

#endif
