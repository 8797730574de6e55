/* eval's matching of forecast fields to truth channels and of files to initial times (moved out
 * of eval.c to keep it short). */
#ifndef WX_EVAL_MATCH_H
#define WX_EVAL_MATCH_H

#include "io/archive.h"
#include "io/wx_source.h"

/* The archive channel of field f (catalogue shortName, level kind and level; an ensemble file's
 * "z500" read as parameter and level), or -1. */
int wx_eval_match_channel(const wx_archive_meta *m, const wx_field_info *f);
/* Initial times of forecast file `path`, ascending, into *inits (malloc'd, *n of them):
 * forecast_reference_time (wxcast's files: one), or the time axis of a file with a lead-time axis
 * (WeatherBench2's layout: any number); short_by_one: the file is on the truth's grid without its
 * last row (FourCastNet's 720 of ERA5's 721), judged by its first field of a truth channel. One
 * scan of the file. */
wx_status wx_eval_file_scan(const char *path, const wx_archive_meta *m, wx_time **inits, int *n,
                            int *short_by_one);

#endif
