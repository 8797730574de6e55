/* The synthetic planet's geography and the pointwise physics shared by the model and the output
 * diagnostics: idealised continents and mountain ranges, the seasonal equilibrium height, the
 * temperature proxy and the saturation column water. All functions of position are analytic, so
 * static fields are evaluated exactly on any output grid. */
#ifndef WX_SW_FORCING_H
#define WX_SW_FORCING_H

/* Orography height (m, ≥ 0) and land fraction (0..1) at latitude/longitude in degrees. */
void wx_sw_geo_eval(double lat_deg, double lon_deg, double *orog_m, double *land);

/* Radiative-equilibrium upper-layer thickness (m) at latitude (deg) on day-of-year doy (365-day
 * year), before removing its global mean: depth minus a tanh step of dh per hemisphere centred
 * on the seasonal latitude of the baroclinic zone (winter: equatorward and 25 % stronger). */
double wx_sw_heq(double lat_deg, double doy, double depth, double dh, double jet_lat,
                 double swing, double width);

/* Solar declination (radians) and cosine of the zenith angle (clipped at 0) at a point. */
double wx_sw_declination(double doy);
double wx_sw_cos_zenith(double lat_rad, double lon_rad, double doy, double utc_seconds_of_day);

/* Saturation column water (kg m⁻²) at 850 hPa temperature t850 (K; ~7 % per K). */
double wx_sw_qsat(double t850);

#endif
