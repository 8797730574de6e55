/* `wxcast daily`: the operational run of one day. From a YAML config (schema in daily.c,
 * example with every key in configs/daily/example.yaml):
 *
 *   1. the analysis of <date> at analysis.init_hour is the file analysis.folder/analysis.pattern
 *      with the placeholders {YYYYMMDD} {YYYY} {MM} {DD} {HH} filled in;
 *   2. <output>/<YYYYMMDD>T<HH>/ already there: the day is done, nothing is touched (skipped = 1);
 *   3. otherwise everything is built in <output>/.tmp-<YYYYMMDD>T<HH>-<pid>/: the deterministic
 *      forecast (forecast.nc, GRIB2 in grib/ when configured), the ensemble when members > 1
 *      (ensemble.nc, ensemble_mean.nc, ensemble_spread.nc, GRIB2 in grib_ensemble/), the PNG maps
 *      and the web viewer of the deterministic forecast (index.html, maps/, wind/: infer/export.h)
 *      through the library calls of `wxcast forecast` and `wxcast export`;
 *   4. the temporary folder is renamed onto the dated name only when all of it is written, so a
 *      dated folder is always complete. On any failure (no analysis file, a channel the model
 *      needs missing from it, a model or write error) the temporary folder is removed and no
 *      dated folder appears.
 *
 * Errors are WX_ERR_RUN (a missing or partial analysis is a data problem of the day, not a usage
 * error) except config errors (WX_ERR_USAGE), and name the file and what was expected. */
#ifndef WX_DAILY_H
#define WX_DAILY_H

#include "core/wx_error.h"
#include "meteo/wx_time.h"

#define WX_DAILY_PATH_MAX 1024

typedef struct {
    const char *config; /* YAML file */
    const char *date;   /* "YYYY-MM-DD"; NULL: today (UTC) */
    int threads;        /* > 0: overrides the config's threads */
    const char *device; /* "cpu"/"cuda": overrides the config's device (NULL: the config's) */
    const char *precision; /* "fp32"/"bf16": overrides the config's precision (NULL: the config's) */
    int force;          /* replace a dated folder that is not this config's finished run */
    /* results */
    wx_time init;                        /* initial time run */
    char analysis[WX_DAILY_PATH_MAX];    /* analysis file used */
    char folder[WX_DAILY_PATH_MAX];      /* the dated output folder */
    int skipped;                         /* 1: the dated folder held this config's finished run */
    int members;                         /* ensemble members run (0: none) */
    int npng;                            /* maps written */
    double seconds;
} wx_daily_opts;

wx_status wx_daily_run(wx_daily_opts *o);

/* Fills the placeholders {YYYYMMDD} {YYYY} {MM} {DD} {HH} of pattern with the date and hour of
 * t; other text is copied, an unknown {...} is a usage error naming it. */
wx_status wx_daily_pattern_fill(const char *pattern, wx_time t, char *out, size_t cap);

#endif
