/* GraphCast forcings, computed from the time and the grid (reference graphcast.md §1.8):
 *   toa_incident_solar_radiation — ERA5-compatible TISR (graphcast solar_radiation.py): the
 *     top-of-atmosphere flux integrated over the hour ending at t (trapezoid, 360 bins), in J m⁻²,
 *     with ERA5's yearly TSI table (IFS cycle 41r2 values × 0.9965) and the orbital formulas
 *     DeepMind fitted to ERA5;
 *   year_progress_sin/cos — sin/cos(2π·frac(seconds / 86400 / 365.24219));
 *   day_progress_sin/cos  — sin/cos(2π·frac(frac(seconds / 86400) + lon / 360°)), local time.
 * Times are wx_time (seconds since 1970 UTC); grids are lat (nlat) × lon (nlon) in degrees,
 * outputs (nlat, nlon) row-major. */
#ifndef WX_FORCINGS_H
#define WX_FORCINGS_H

#include <stdint.h>

#include "core/wx_error.h"
#include "meteo/wx_time.h"

/* Total solar irradiance (W m⁻²) at t, linearly interpolated in fractional years between the
 * mid-year ERA5 values (1951.5 … 2034.5), constant outside. */
double wx_forcing_tsi(wx_time t);

/* TISR (J m⁻²) for the hour ending at t. out (nlat, nlon). */
void wx_forcing_toa_radiation(wx_time t, const double *lat, int64_t nlat, const double *lon,
                              int64_t nlon, float *out);
/* Instantaneous TOA flux (W m⁻²) at one point and time (the integrand above). */
double wx_forcing_toa_flux(double j2000_days, double lat_deg, double lon_deg, double tsi);
/* Days since J2000.0 (2000-01-01T12:00) of t. */
double wx_forcing_j2000_days(wx_time t);

double wx_forcing_year_progress(wx_time t); /* in [0, 1) */
double wx_forcing_day_progress(wx_time t, double lon_deg); /* in [0, 1) */

/* Fills one forcing field by name (the names above). out (nlat, nlon). WX_ERR_USAGE for an
 * unknown name. */
wx_status wx_forcing_fill(const char *name, wx_time t, const double *lat, int64_t nlat,
                          const double *lon, int64_t nlon, float *out);

#endif
