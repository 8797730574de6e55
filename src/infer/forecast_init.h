/* The initial state of a forecast from analysis files (GRIB or NetCDF, through io/wx_source.h;
 * `path` one file or a comma-separated list read as one, e.g. single-level + pressure-level),
 * in the shape the archive path gives it, so one rollout code serves both: a wx_archive_meta
 * whose channels are the model's (output channels first, then input-only ones), described by
 * parsing the model's channel names against the catalogue ("z500" → z at 500 hPa, "t2m" → 2t),
 * and one record (nchan, nlat, nlon) on the file's grid.
 *
 * The time read is `time` when has_time, else the earliest valid time any matching field has.
 * Every input channel must be in the file at that time (a usage error names the channel, the
 * file and the time); output-only channels absent from it (a diagnostic such as tp) are NaN.
 * A forecast file written by `wxcast forecast` reads back as the state it was written from. */
#ifndef WX_FORECAST_INIT_H
#define WX_FORECAST_INIT_H

#include "infer/rollout.h"
#include "io/archive.h"

/* Channel description from a model channel name: a catalogue name of a single-level field
 * ("t2m", "msl", "tp"), or a pressure-level parameter followed by its level in hPa ("z500").
 * step_s: accumulation window of accumulated parameters. */
wx_status wx_forecast_channel_from_name(const char *name, int64_t step_s, wx_archive_channel *out);

/* meta: caller frees with wx_archive_meta_free; *rec: caller frees. */
wx_status wx_forecast_init_from_file(const char *path, const wx_rollout *r, int has_time,
                                     wx_time *time, wx_archive_meta *meta, float **rec);

#endif
