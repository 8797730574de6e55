/* GraphCast forcings: ERA5-style TOA incident solar radiation and progress features. */
#include "models/forcings.h"

#include <math.h>
#include <string.h>

#define SECONDS_PER_DAY 86400.0
#define AVG_DAYS_PER_YEAR 365.24219 /* graphcast data_utils.py */
#define JULIAN_YEAR_DAYS 365.25
#define TISR_BINS 360
#define TISR_PERIOD_S 3600.0

/* ERA5's yearly TSI (IFS cycle 41r2) for 1951.5 … 2034.5, before the 0.9965 scaling DeepMind
 * applies (graphcast solar_radiation.py era5_tsi_data); 1996–2008 repeats as a 13-year cycle. */
static const double era5_tsi_raw[] = {
    1365.7765, 1365.7676, 1365.6284, 1365.6564, 1365.7773, 1366.3109, 1366.6681, 1366.6328,
    1366.3828, 1366.2767, 1365.9199, 1365.7484, 1365.6963, 1365.6976, 1365.7341, 1365.9178,
    1366.1143, 1366.1644, 1366.2476, 1366.2426, 1365.9580, 1366.0525, 1365.7991, 1365.7271,
    1365.5345, 1365.6453, 1365.8331, 1366.2747, 1366.6348, 1366.6482, 1366.6951, 1366.2859,
    1366.1992, 1365.8103, 1365.6416, 1365.6379, 1365.7899, 1366.0826, 1366.6479, 1366.5533,
    1366.4457, 1366.3021, 1366.0286, 1365.7971, 1365.6996, /* 1951–1995 */
};
static const double era5_tsi_cycle[13] = {
    1365.6121, 1365.7399, 1366.1021, 1366.3851, 1366.6836, 1366.6022, 1366.6807,
    1366.2300, 1366.0480, 1365.8545, 1365.8107, 1365.7240, 1365.6918, /* 1996–2008, repeated */
};
#define TSI_FIRST_YEAR 1951
#define TSI_YEARS 84 /* 1951 … 2034 */

static double tsi_of_year(int k) { /* k = year − 1951 */
    int n_raw = (int)(sizeof era5_tsi_raw / sizeof *era5_tsi_raw);
    double v = k < n_raw ? era5_tsi_raw[k] : era5_tsi_cycle[(k - n_raw) % 13];
    return 0.9965 * v;
}

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

double wx_forcing_tsi(wx_time t) {
    int64_t y;
    int mo, d, h, mi, s;
    wx_time_split(t, &y, &mo, &d, &h, &mi, &s);
    double day_frac = (h * 3600.0 + mi * 60.0 + s) / SECONDS_PER_DAY;
    double fy = (double)y + ((double)wx_time_day_of_year(t) - 1.0 + day_frac) / (365.0 + is_leap(y));
    double x = fy - (TSI_FIRST_YEAR + 0.5); /* position in the table, 0 = 1951.5 */
    if (x <= 0) return tsi_of_year(0);
    if (x >= TSI_YEARS - 1) return tsi_of_year(TSI_YEARS - 1);
    int k = (int)floor(x);
    double f = x - k;
    return tsi_of_year(k) * (1.0 - f) + tsi_of_year(k + 1) * f;
}

double wx_forcing_j2000_days(wx_time t) {
    /* Julian date of the Unix epoch is 2440587.5; J2000.0 is JD 2451545.0. */
    return (double)t / SECONDS_PER_DAY + (2440587.5 - 2451545.0);
}

typedef struct {
    double rotational_phase, sin_dec, cos_dec, eq_time_s, dist_au;
} orbit;

/* The orbital formulas of solar_radiation.py (from ECCC GEM's fctast/fcttim, fitted to ERA5). */
static orbit orbit_at(double j2000_days) {
    orbit o;
    double theta = j2000_days / JULIAN_YEAR_DAYS;
    o.rotational_phase = j2000_days - floor(j2000_days); /* Python's % 1.0 */
    double rel = 1.7535 + 6.283076 * theta;
    double rem = 6.240041 + 6.283020 * theta;
    double rlls = 4.8951 + 6.283076 * theta;
    double rllls = 4.8952 + 6.283320 * theta - 0.0075 * sin(rel) - 0.0326 * cos(rel) -
                   0.0003 * sin(2.0 * rel) + 0.0002 * cos(2.0 * rel);
    const double repsm = 0.409093; /* obliquity */
    o.sin_dec = sin(repsm) * sin(rllls);
    o.cos_dec = sqrt(1.0 - o.sin_dec * o.sin_dec);
    o.eq_time_s = 591.8 * sin(2.0 * rlls) - 459.4 * sin(rem) + 39.5 * sin(rem) * cos(2.0 * rlls) -
                  12.7 * sin(4.0 * rlls) - 4.8 * sin(2.0 * rem);
    o.dist_au = 1.0001 - 0.0163 * sin(rel) + 0.0037 * cos(rel);
    return o;
}

double wx_forcing_toa_flux(double j2000_days, double lat_deg, double lon_deg, double tsi) {
    orbit o = orbit_at(j2000_days);
    double lat = lat_deg * (M_PI / 180.0), lon = lon_deg * (M_PI / 180.0);
    double hour_angle = 2.0 * M_PI * (o.rotational_phase + o.eq_time_s / SECONDS_PER_DAY) + lon;
    double sin_alt = cos(lat) * o.cos_dec * cos(hour_angle) + sin(lat) * o.sin_dec;
    return tsi / (o.dist_au * o.dist_au) * (sin_alt > 0 ? sin_alt : 0.0);
}

void wx_forcing_toa_radiation(wx_time t, const double *lat, int64_t nlat, const double *lon,
                              int64_t nlon, float *out) {
    const double tsi = wx_forcing_tsi(t), day0 = wx_forcing_j2000_days(t);
    const double dx = TISR_PERIOD_S / TISR_BINS;
    double *acc = calloc((size_t)(nlat * nlon), sizeof(double));
    double *cl = wx_malloc(sizeof(double) * (size_t)nlon), *sl = wx_malloc(sizeof(double) * (size_t)nlon);
    WX_ASSERT(acc != NULL);
    for (int64_t i = 0; i < nlon; i++) {
        cl[i] = cos(lon[i] * (M_PI / 180.0));
        sl[i] = sin(lon[i] * (M_PI / 180.0));
    }
    /* Trapezoid over the 361 instants t − 1 h … t; cos(h + lon) by the angle-addition formula
     * so that each instant costs one sin/cos pair, not one per point. */
    for (int k = 0; k <= TISR_BINS; k++) {
        double days = day0 - (TISR_PERIOD_S - k * dx) / SECONDS_PER_DAY;
        orbit o = orbit_at(days);
        double h = 2.0 * M_PI * (o.rotational_phase + o.eq_time_s / SECONDS_PER_DAY);
        double ch = cos(h), sh = sin(h), f = tsi / (o.dist_au * o.dist_au);
        double wgt = (k == 0 || k == TISR_BINS) ? 0.5 * dx : dx;
        for (int64_t j = 0; j < nlat; j++) {
            double la = lat[j] * (M_PI / 180.0), a = cos(la) * o.cos_dec, b = sin(la) * o.sin_dec;
            double *row = acc + j * nlon;
            for (int64_t i = 0; i < nlon; i++) {
                double s = a * (ch * cl[i] - sh * sl[i]) + b;
                if (s > 0) row[i] += wgt * f * s;
            }
        }
    }
    for (int64_t p = 0; p < nlat * nlon; p++) out[p] = (float)acc[p];
    free(acc), free(cl), free(sl);
}

double wx_forcing_year_progress(wx_time t) {
    double y = (double)t / SECONDS_PER_DAY / AVG_DAYS_PER_YEAR;
    return y - floor(y);
}

double wx_forcing_day_progress(wx_time t, double lon_deg) {
    int64_t sec = t % 86400;
    if (sec < 0) sec += 86400;
    double p = (double)sec / SECONDS_PER_DAY + lon_deg / 360.0;
    return p - floor(p);
}

wx_status wx_forcing_fill(const char *name, wx_time t, const double *lat, int64_t nlat,
                          const double *lon, int64_t nlon, float *out) {
    if (strcmp(name, "toa_incident_solar_radiation") == 0 || strcmp(name, "tisr") == 0) {
        wx_forcing_toa_radiation(t, lat, nlat, lon, nlon, out);
        return WX_OK;
    }
    int year = strncmp(name, "year_progress_", 14) == 0, day = strncmp(name, "day_progress_", 13) == 0;
    const char *fn = year ? name + 14 : day ? name + 13 : "";
    int is_sin = strcmp(fn, "sin") == 0, is_cos = strcmp(fn, "cos") == 0;
    if (!(year || day) || !(is_sin || is_cos))
        return wx_error_set(WX_ERR_USAGE, "forcing '%s': unknown (expected "
                            "toa_incident_solar_radiation, year_progress_sin/cos or "
                            "day_progress_sin/cos)", name);
    for (int64_t i = 0; i < nlon; i++) {
        double p = year ? wx_forcing_year_progress(t) : wx_forcing_day_progress(t, lon[i]);
        float v = (float)(is_sin ? sin(2.0 * M_PI * p) : cos(2.0 * M_PI * p));
        for (int64_t j = 0; j < nlat; j++) out[j * nlon + i] = v;
    }
    return WX_OK;
}
