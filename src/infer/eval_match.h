/* eval's matching of forecast fields to truth channels and of files to initial times (moved out
 * of eval.c to keep it short). */
#ifndef WX_EVAL_MATCH_H
#define WX_EVAL_MATCH_H

#include "io/archive.h"
#include "io/wx_source.h"

/* The archive channel of field f (catalogue shortName, level kind and level; an ensemble file's
 * "z500" read as parameter and level), or -1. */
int wx_eval_match_channel(const wx_archive_meta *m, const wx_field_info *f);
/* Initial times of a forecast file, ascending, into *inits (malloc'd, *n of them):
 * forecast_reference_time (wxcast's files: one), or the time axis of a file with a lead-time
 * axis (WeatherBench2's layout: time = initial time, prediction_timedelta; any number). */
/* 1 when forecast file `path` is on the truth's grid without its last row (FourCastNet's 720 of
 * ERA5's 721: the south pole dropped), judged by its first field that matches a truth channel;
 * 0 otherwise (the truth's grid, or another one that eval_file refuses). */
int wx_eval_file_short_by_one_row(const char *path, const wx_archive_meta *m);
wx_status wx_eval_file_inits(const char *path, const wx_archive_meta *m, wx_time **inits, int *n);

#endif
