/* One deterministic forecast product: the state of a training archive at an initial time, rolled
 * out by a trained model (infer/rollout.h) and written with infer/forecast_write.h: lead 0 is the
 * archive record itself (exact), leads 1..steps the model's output, every output channel. */
#ifndef WX_FORECAST_H
#define WX_FORECAST_H

#include <stdint.h>

#include "core/wx_error.h"
#include "meteo/wx_time.h"

typedef struct {
    const char *model;   /* checkpoint */
    const char *init;    /* archive folder holding the initial state */
    wx_time time;        /* initial time (must be a record of the archive) */
    int64_t steps;       /* model steps (>= 0) */
    const char *output;  /* NetCDF file */
    int threads;         /* <= 0: all cores */
    int progress;        /* 1: progress line on stderr */
    /* results */
    int64_t step_s;      /* seconds per step */
    int nvars;
    double seconds;      /* wall time of the rollout and writing */
} wx_forecast_opts;

/* Usage errors (time not on the archive's axis, channels or grid not matching) name the value and
 * what the archive has; read, model and write errors are WX_ERR_RUN. */
wx_status wx_forecast_run(wx_forecast_opts *o);

#endif
