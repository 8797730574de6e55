#include "meteo/wx_time.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Howard Hinnant's days_from_civil / civil_from_days (exact for all int64 years of interest). */
int64_t wx_time_days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void wx_time_civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

wx_time wx_time_make(int64_t y, int mo, int d, int h, int mi, int s) {
    return wx_time_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

static int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

void wx_time_split(wx_time t, int64_t *y, int *mo, int *d, int *h, int *mi, int *s) {
    int64_t days = floordiv(t, 86400);
    int64_t sec = t - days * 86400;
    wx_time_civil_from_days(days, y, mo, d);
    *h = (int)(sec / 3600);
    *mi = (int)(sec / 60 % 60);
    *s = (int)(sec % 60);
}

static int days_in_month(int64_t y, int m) {
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 ? 28 + leap : dm[m - 1];
}

/* Parses the date-time prefix of `s`; returns the number of characters used (0 on failure). */
static int parse_datetime(const char *s, int64_t *y, int *mo, int *d, int *h, int *mi, double *sec) {
    int n = 0;
    long long yy;
    *h = *mi = 0;
    *sec = 0;
    if (sscanf(s, "%lld-%d-%d%n", &yy, mo, d, &n) != 3) return 0;
    *y = yy;
    const char *p = s + n;
    if (*p == 'T' || (*p == ' ' && isdigit((unsigned char)p[1]))) {
        int k = 0;
        p++;
        if (sscanf(p, "%d%n", h, &k) != 1) return 0;
        p += k;
        if (*p == ':') {
            if (sscanf(p + 1, "%d%n", mi, &k) != 1) return 0;
            p += 1 + k;
            if (*p == ':') {
                if (sscanf(p + 1, "%lf%n", sec, &k) != 1) return 0;
                p += 1 + k;
            }
        }
    }
    if (*mo < 1 || *mo > 12 || *d < 1 || *d > days_in_month(*y, *mo) || *h < 0 || *h > 23 ||
        *mi < 0 || *mi > 59 || *sec < 0 || *sec >= 61)
        return 0;
    return (int)(p - s);
}

wx_status wx_time_parse(const char *text, const char *what, wx_time *out) {
    int64_t y;
    int mo, d, h, mi;
    double sec;
    int n = text ? parse_datetime(text, &y, &mo, &d, &h, &mi, &sec) : 0;
    if (n > 0) {
        const char *p = text + n;
        if (*p == 'Z') p++;
        if (*p == 0) {
            *out = wx_time_make(y, mo, d, h, mi, (int)floor(sec + 0.5));
            return WX_OK;
        }
    }
    return wx_error_set(WX_ERR_USAGE, "%s: '%s' is not a date-time, expected ISO-8601 like "
                        "2017-01-01T06:00", what, text ? text : "");
}

void wx_time_format(wx_time t, char *buf) {
    int64_t y;
    int mo, d, h, mi, s;
    wx_time_split(t, &y, &mo, &d, &h, &mi, &s);
    if (s)
        snprintf(buf, 32, "%04lld-%02d-%02dT%02d:%02d:%02d", (long long)y, mo, d, h, mi, s);
    else
        snprintf(buf, 32, "%04lld-%02d-%02dT%02d:%02d", (long long)y, mo, d, h, mi);
}

wx_status wx_time_parse_duration(const char *text, const char *what, int64_t *out) {
    const char *t = text ? text : "";
    char *u = NULL;
    errno = 0;
    long long v = (*t == '-' || *t == '+' || (*t >= '0' && *t <= '9')) ? strtoll(t, &u, 10) : 0;
    int64_t mul = 0;
    if (u && u > t) {
        if (!*u || !strcmp(u, "h")) mul = 3600;
        else if (!strcmp(u, "m") || !strcmp(u, "min")) mul = 60;
        else if (!strcmp(u, "s")) mul = 1;
        else if (!strcmp(u, "d")) mul = 86400;
    }
    if (!mul) /* "0.5d", "6 h", "six hours" */
        return wx_error_set(WX_ERR_USAGE, "%s: '%s' is not a duration, expected a positive whole "
                            "number with unit s, m, h or d (e.g. 6h; a bare number is hours)", what, t);
    if (v <= 0)
        return wx_error_set(WX_ERR_USAGE, "%s: '%s': expected a duration above 0 (e.g. 6h; a bare "
                            "number is hours)", what, t);
    /* 10 000 years: far past any forecast or archive, far below int64 seconds (v * mul overflowed) */
    const long long max_s = 10000LL * 366 * 86400;
    if (errno == ERANGE || v > max_s / mul)
        return wx_error_set(WX_ERR_USAGE, "%s: '%s': longer than 10000 years", what, t);
    *out = (int64_t)v * mul;
    return WX_OK;
}

void wx_time_format_duration(int64_t s, char *buf) {
    if (s % 86400 == 0) snprintf(buf, 32, "%lldd", (long long)(s / 86400));
    else if (s % 3600 == 0) snprintf(buf, 32, "%lldh", (long long)(s / 3600));
    else if (s % 60 == 0) snprintf(buf, 32, "%lldm", (long long)(s / 60));
    else snprintf(buf, 32, "%llds", (long long)s);
}

int wx_time_day_of_year(wx_time t) {
    int64_t y;
    int mo, d, h, mi, s;
    wx_time_split(t, &y, &mo, &d, &h, &mi, &s);
    return (int)(wx_time_days_from_civil(y, mo, d) - wx_time_days_from_civil(y, 1, 1)) + 1;
}

int wx_time_hour_of_day(wx_time t) {
    return (int)((t - floordiv(t, 86400) * 86400) / 3600);
}

wx_status wx_time_from_grib(long date, long hhmm, wx_time *out) {
    long y = date / 10000, m = date / 100 % 100, d = date % 100, h = hhmm / 100, mi = hhmm % 100;
    if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, (int)m) || h > 23 || mi > 59 || hhmm < 0)
        return wx_error_set(WX_ERR_RUN, "invalid GRIB date/time %ld %04ld", date, hhmm);
    *out = wx_time_make(y, (int)m, (int)d, (int)h, (int)mi, 0);
    return WX_OK;
}

/* Julian-calendar date to days since 1970-01-01 (via the Julian day number). */
static int64_t days_from_julian(int64_t y, int m, int d) {
    int64_t a = (14 - m) / 12, yy = y + 4800 - a, mm = m + 12 * a - 3;
    int64_t jdn = d + (153 * mm + 2) / 5 + 365 * yy + floordiv(yy, 4) - 32083;
    return jdn - 2440588;
}

wx_status wx_time_cf_parse(const char *units, const char *calendar, const char *what,
                           wx_time_cf *out) {
    int julian_before_reform = 1;
    if (calendar && *calendar) {
        if (!strcasecmp(calendar, "proleptic_gregorian")) julian_before_reform = 0;
        else if (strcasecmp(calendar, "standard") && strcasecmp(calendar, "gregorian"))
            return wx_error_set(WX_ERR_RUN, "%s: calendar '%s' is not supported, expected "
                                "standard, gregorian or proleptic_gregorian", what, calendar);
    }
    char unit[32];
    int n = 0;
    if (!units || sscanf(units, "%31s since %n", unit, &n) != 1 || n == 0)
        return wx_error_set(WX_ERR_RUN, "%s: time units '%s', expected '<unit> since <date>'",
                            what, units ? units : "");
    double mul = 0;
    const char *u = unit;
    if (!strcasecmp(u, "seconds") || !strcasecmp(u, "second") || !strcasecmp(u, "s")) mul = 1;
    else if (!strcasecmp(u, "minutes") || !strcasecmp(u, "minute") || !strcasecmp(u, "min")) mul = 60;
    else if (!strcasecmp(u, "hours") || !strcasecmp(u, "hour") || !strcasecmp(u, "h")) mul = 3600;
    else if (!strcasecmp(u, "days") || !strcasecmp(u, "day") || !strcasecmp(u, "d")) mul = 86400;
    /* xarray encodes datetime64 values that are not whole seconds in these */
    else if (!strcasecmp(u, "milliseconds")) mul = 1e-3;
    else if (!strcasecmp(u, "microseconds")) mul = 1e-6;
    else if (!strcasecmp(u, "nanoseconds")) mul = 1e-9;
    if (mul == 0)
        return wx_error_set(WX_ERR_RUN, "%s: time unit '%s' in '%s', expected seconds, minutes, "
                            "hours, days, or milli-, micro-, nanoseconds", what, unit, units);
    int64_t y;
    int mo, d, h, mi;
    double sec;
    const char *ref = units + n;
    int used = parse_datetime(ref, &y, &mo, &d, &h, &mi, &sec);
    if (!used)
        return wx_error_set(WX_ERR_RUN, "%s: reference date in time units '%s' is not a date",
                            what, units);
    int64_t days;
    if (julian_before_reform && (y < 1582 || (y == 1582 && (mo < 10 || (mo == 10 && d < 15)))))
        days = days_from_julian(y, mo, d);
    else
        days = wx_time_days_from_civil(y, mo, d);
    out->unit = mul;
    out->epoch = days * 86400 + h * 3600 + mi * 60 + (int64_t)floor(sec + 0.5);
    return WX_OK;
}

wx_time wx_time_cf_value(const wx_time_cf *cf, double v) {
    return cf->epoch + (wx_time)llround(v * cf->unit);
}
