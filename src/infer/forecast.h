/* One forecast product: an initial state (a training archive record, or analysis/forecast files
 * in GRIB or NetCDF: infer/forecast_init.h) rolled out by a trained model (infer/rollout.h) and
 * written with infer/forecast_write.h (NetCDF and/or GRIB2): lead 0 is the initial state itself
 * (exact), leads 1..steps the model's output, every output channel. With members > 0 the
 * members run as one batch through the model from perturbed initial states
 * (infer/forecast_ens.h; member 0 the control), and the ensemble mean and spread (standard
 * deviation, ddof 1) are written as deterministic NetCDF files beside the ensemble file. */
#ifndef WX_FORECAST_H
#define WX_FORECAST_H

#include <stdint.h>

#include "core/wx_error.h"
#include "infer/forecast_ens.h"
#include "meteo/wx_time.h"

typedef struct {
    const char *model;   /* checkpoint */
    const char *init;    /* archive folder (manifest.json) or a GRIB/NetCDF file */
    wx_time time;        /* initial time (a record of the archive; for files: see has_time) */
    int64_t steps;       /* model steps (>= 0); ignored when lead_s > 0 */
    const char *output;  /* NetCDF file, or NULL with grib_dir */
    int threads;         /* <= 0: all cores */
    int progress;        /* 1: progress line on stderr */
    /* results */
    int64_t step_s;      /* seconds per step */
    int nvars;
    double seconds;      /* wall time of the rollout and writing */
    const char *precip;  /* precipitation model checkpoint (--precip), or NULL */
    const char *device;  /* backend of the rollout: "cpu" (NULL) or "cuda" (--device) */
    int bf16;            /* --precision bf16 (CUDA only) */
} wx_forecast_opts;

/* Optional parts (zero: a deterministic NetCDF forecast at `time`). */
typedef struct {
    int has_time;        /* file init: 0 = the earliest valid time in the file */
    int64_t lead_s;      /* > 0: steps = lead_s / step (a multiple of the model step) */
    const char *grib_dir;
    int deflate;         /* NetCDF deflate level */
    int grib_bits, grib_packing;
    int members;         /* 0 or 1: deterministic */
    wx_perturbation perturbation;
    double amplitude;    /* fraction of each channel's std (default 0.05 when 0) */
    uint64_t seed;
    int bred_cycles;     /* 0: 3 */
    char mean_path[1024], spread_path[1024]; /* results: ensemble mean/spread files ("" if none) */
    /* Models reading two states (GraphCast): a GRIB/NetCDF file with the state at time − step
     * (NULL: the earlier time from the init file itself). Only with a file init. */
    const char *init_prev;
    /* With init_prev NULL, a file init at a given time and a model reading two states: the file
     * that would hold the state at time − step (daily: the drop folder's file for that time).
     * The callback fills `path`; when that file exists and is not the init file, the earlier
     * state is read from it, otherwise from the init file (an error then names both). */
    wx_status (*prev_path)(void *user, wx_time t, char *path, size_t cap);
    void *prev_user;
} wx_forecast_ext;

/* Usage errors (time not on the archive's axis, channels or grid not matching) name the value and
 * what the archive has; read, model and write errors are WX_ERR_RUN. */
wx_status wx_forecast_run(wx_forecast_opts *o);
/* With the optional parts (x may be NULL; results written into it). */
wx_status wx_forecast_run_ext(wx_forecast_opts *o, wx_forecast_ext *x);
/* 1 when path is a training archive folder (has manifest.json), 0 for anything else (a file). */
int wx_forecast_init_is_archive(const char *path);

#endif
