/* `wxcast synth`: runs the forced shallow-water world from a config and writes monthly GRIB2
 * and/or CF NetCDF files the way the CDS delivers ERA5 (the files in configs/synth/ document the keys;
 * docs/synth.md the physics and the measurements). */
#ifndef WX_SYNTH_RUN_H
#define WX_SYNTH_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "core/wx_error.h"

typedef struct {
    const char *output;  /* overrides the config's output folder (NULL: config) */
    int print_config;    /* 1: print the effective config to stdout and stop */
    /* results */
    int64_t times_written;
    int files_written;
    char output_dir[1024];
    char twin_log[1024]; /* the twin_log file written instead of output files, "" when none */
    int twin_days;
} wx_synth_opts;

wx_status wx_synth_run(const char *config_path, wx_synth_opts *o);

#endif
