/* A forecast product (one initial time) through the project's writers: CF-1.8 NetCDF
 * (io/netcdf_write.h) and/or GRIB2 (io/grib_write.h). Lead 0 (the initial state) is the first
 * time written; files appear atomically on close, all or none.
 *
 * NetCDF, deterministic: dimensions (time, [level], latitude, longitude) with `time` the valid
 * time (unlimited), latitude north→south as the model grid, longitude from 0 east; one float32
 * variable per single-level channel named as the channel ("t2m") and one per pressure-level
 * parameter ("z", "t") on a `level` axis (hPa, decreasing: 1000 first); parameters on another
 * level set get an axis of their own (level_2, ...), so no variable holds levels it lacks. Units,
 * standard_name and long_name from the catalogue (accumulations: cell_methods "time: sum" and
 * the period in long_name); the scalar forecast_reference_time and forecast_period(time) in
 * hours, auxiliary coordinates named in every variable's `coordinates` attribute.
 * NetCDF, ensemble (members > 0): (time, realization, latitude, longitude), one variable per
 * channel ("z500"): CDO reads at most 4 dimensions.
 * GRIB2: <grib_dir>/<prefix>_sfc.grib2 (single-level channels) and <prefix>_pl.grib2 (pressure
 * levels), typeOfProcessedData forecast (members: member 0 the control forecast, dataType cf,
 * the others perturbed, pf, with perturbationNumber), step = lead; accumulated channels (tp) with PDT 4.8/4.11 over [lead − accumulation, lead] and no
 * message at leads shorter than the accumulation (lead 0). */
#ifndef WX_FORECAST_WRITE_H
#define WX_FORECAST_WRITE_H

#include <stdint.h>

#include "io/archive.h"
#include "io/grib_write.h"
#include "io/netcdf_write.h"

/* What a file of deterministic layout holds (CF cell_methods over the members' axis): the
 * forecast itself, or the ensemble's mean or standard deviation (ddof 1) per point. The summaries
 * say so in a global attribute `ensemble_statistic` ("mean", "standard_deviation"), the title,
 * each variable's cell_methods ("realization: mean", "realization: standard_deviation", after
 * "time: sum" for accumulations) and long_name ("ensemble standard deviation of 2 metre
 * temperature"); units and standard_name stay the quantity's (CF 7.3). */
typedef enum { WX_ENS_NONE = 0, WX_ENS_MEAN = 1, WX_ENS_SPREAD = 2 } wx_ens_statistic;

typedef struct {
    const char *netcdf;      /* NetCDF path, or NULL */
    const char *grib_dir;    /* folder for the GRIB2 files, or NULL */
    const char *grib_prefix; /* file stem; NULL: "forecast_YYYYMMDDTHH" of the initial time */
    int deflate;             /* NetCDF deflate level 0..9 */
    int grib_bits;           /* bits per value, 0: 16 */
    int grib_packing;        /* WX_GRIB_SIMPLE or WX_GRIB_CCSDS */
    int members;             /* 0: deterministic; > 0: ensemble of this many members */
    int64_t step_s;          /* model step: the accumulation of accumulated channels without one */
    const char *source;      /* "source" global attribute (the checkpoint), may be NULL */
    wx_ens_statistic statistic; /* NetCDF only: a summary of `stat_members` members, not a forecast */
    int stat_members;
} wx_forecast_write_opts;

typedef struct {
    wx_nc_writer w;
    int has_nc;
    wx_grib_writer grib[2]; /* [0] surface, [1] pressure */
    int has_grib[2];
    char *grib_path[2];
    int nvars, members;
    int64_t ntimes, points;
    wx_time ref_time, last_valid;
    wx_archive_channel *chans;          /* [nvars] */
    const wx_catalogue_entry **entries; /* [nvars] (NULL: unknown to the catalogue) */
    int *nc_var, *nc_level;             /* [nvars] NetCDF variable and level index */
    int64_t *nan_first;                 /* [nvars] NaN points of the first valid time (a mask) */
    struct wx_forecast_attrs *attrs;    /* names and attribute strings kept for the writer */
    wx_nc_var *vars;
    int64_t step_s;
    wx_grid grid;
} wx_forecast_writer;

/* Before a rollout: whether the outputs of `times` valid times fit on their file systems. The
 * estimate is exact for uncompressed NetCDF (times x nvars x points x members floats; an
 * ensemble's mean and spread files add two members' worth) and for GRIB (bits per value);
 * an estimate over the free space is an error (exit 1) rather than a failure hours later, or a
 * warning only with NetCDF deflate, whose ratio is unknown beforehand. */
wx_status wx_forecast_space_check(const wx_forecast_write_opts *o, int64_t times, int nvars,
                                  int64_t points);

/* chans [nvars]: the description of each channel written (name, param, level, units). */
wx_status wx_forecast_writer_open_opts(wx_forecast_writer *f, const wx_forecast_write_opts *o,
                                       const wx_grid *g, int nvars,
                                       const wx_archive_channel *chans, wx_time ref_time);
/* Deterministic NetCDF only (the original interface). */
wx_status wx_forecast_writer_open(wx_forecast_writer *f, const char *path, const wx_grid *g,
                                  int nvars, const wx_archive_channel *chans, wx_time ref_time,
                                  const char *source);
/* Appends valid time `valid` (>= the previous one): fields (nvars, nlat, nlon), physical units. */
wx_status wx_forecast_writer_put(wx_forecast_writer *f, wx_time valid, const float *fields);
/* Ensemble: member m (0..members-1) at valid time `valid`; all members of one time before the
 * next time. fields (nvars, nlat, nlon) */
wx_status wx_forecast_writer_put_member(wx_forecast_writer *f, wx_time valid, int member,
                                        const float *fields);
wx_status wx_forecast_writer_close(wx_forecast_writer *f);
void wx_forecast_writer_abort(wx_forecast_writer *f);

#endif
