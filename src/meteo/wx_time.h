/* Times as int64 seconds since 1970-01-01T00:00 UTC (proleptic Gregorian), durations in seconds,
 * ISO-8601 text, and CF time coordinates ("hours since 1900-01-01 00:00:00"). */
#ifndef WX_TIME_H
#define WX_TIME_H

#include <stdint.h>

#include "core/wx_error.h"

typedef int64_t wx_time; /* seconds since 1970-01-01T00:00:00 UTC */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (negative before 1970). */
int64_t wx_time_days_from_civil(int64_t y, int m, int d);
void wx_time_civil_from_days(int64_t days, int64_t *y, int *m, int *d);

wx_time wx_time_make(int64_t y, int mo, int d, int h, int mi, int s);
void wx_time_split(wx_time t, int64_t *y, int *mo, int *d, int *h, int *mi, int *s);

/* Parses "2017-01-01", "2017-01-01T06", "2017-01-01T06:00", "2017-01-01 06:00:00" and a trailing
 * "Z". `what` names the value in errors ("dates.start"). */
wx_status wx_time_parse(const char *text, const char *what, wx_time *out);
/* "2017-01-01T06:00" (seconds appended only when non-zero). buf: at least 32 bytes. */
void wx_time_format(wx_time t, char *buf);

/* Parses "6h", "30m", "1d", "90s", "6" (hours) into seconds (> 0). */
wx_status wx_time_parse_duration(const char *text, const char *what, int64_t *out);
/* "6h", "90m", "2d", "45s": the largest unit that divides exactly. buf: at least 32 bytes. */
void wx_time_format_duration(int64_t seconds, char *buf);

int wx_time_day_of_year(wx_time t); /* 1..366 */
int wx_time_hour_of_day(wx_time t); /* 0..23 */
/* YYYYMMDD and HHMM as eccodes' dataDate/validityTime use them. */
wx_status wx_time_from_grib(long date, long hhmm, wx_time *out);

/* A CF time coordinate: value v means epoch + v*unit seconds. */
typedef struct {
    double unit;   /* seconds per unit (3600 for hours) */
    wx_time epoch; /* reference time as unix seconds */
} wx_time_cf;

/* Parses units "hours since 1900-01-01 00:00:00.0" with calendar NULL/""/"standard"/"gregorian"/
 * "proleptic_gregorian". The standard calendar is Julian before 1582-10-15: a reference date
 * before then is converted through the Julian day number. Other calendars are an error. */
wx_status wx_time_cf_parse(const char *units, const char *calendar, const char *what,
                           wx_time_cf *out);
/* Converts a CF value to seconds, rounded to the nearest second. */
wx_time wx_time_cf_value(const wx_time_cf *cf, double v);

#endif
