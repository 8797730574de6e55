/* GraphCast forcings (src/models/forcings.c): the ERA5 TSI lookup against graphcast's published
 * test value; TOA radiation integrated over whole days against the closed-form daily insolation
 * (Spencer 1971 declination and eccentricity, an independent solar-position formula; within
 * 1% + 0.5 W m⁻², seen 0.6%: the two orbit approximations differ by ~0.001 rad); polar
 * night; the published progress definitions at known instants; name dispatch. */
#include <math.h>
#include <stdlib.h>

#include "models/forcings.h"
#include "wx_test.h"

/* Daily-mean TOA insolation (W m⁻²) by Spencer's formulas, evaluated at noon of day n. */
static double daily_mean_spencer(int n, double lat_deg, double tsi) {
    double g = 2.0 * M_PI * (n - 0.5) / 365.0, phi = lat_deg * M_PI / 180.0;
    double dec = 0.006918 - 0.399912 * cos(g) + 0.070257 * sin(g) - 0.006758 * cos(2 * g) +
                 0.000907 * sin(2 * g) - 0.002697 * cos(3 * g) + 0.00148 * sin(3 * g);
    double e0 = 1.000110 + 0.034221 * cos(g) + 0.001280 * sin(g) + 0.000719 * cos(2 * g) +
                0.000077 * sin(2 * g);
    double c = -tan(phi) * tan(dec);
    double h0 = c >= 1 ? 0 : c <= -1 ? M_PI : acos(c);
    return tsi * e0 / M_PI * (h0 * sin(phi) * sin(dec) + cos(phi) * cos(dec) * sin(h0));
}

int main(void) {
    /* graphcast solar_radiation_test.py: mid-2020 ERA5 TSI = 0.9965 × 1365.7240 */
    double tsi = wx_forcing_tsi(wx_time_make(2020, 7, 2, 0, 0, 0));
    WX_CHECK(fabs(tsi - 1360.9440) < 5e-5, "TSI 2020-07-02 %.6f (expected 1360.9440)", tsi);
    WX_CHECK(fabs(wx_forcing_tsi(wx_time_make(1900, 1, 1, 0, 0, 0)) - 0.9965 * 1365.7765) < 1e-9,
             "TSI before the table: first value");

    /* Σ of the 24 hourly TISR values of a day = the day's integral. */
    const int days[4][3] = {{2020, 3, 20}, {2020, 6, 21}, {2020, 9, 22}, {2020, 12, 21}};
    const double lats[7] = {-80, -45, -10, 0, 30, 60, 80};
    double lon = 0, worst = 0;
    for (int d = 0; d < 4; d++) {
        wx_time t0 = wx_time_make(days[d][0], days[d][1], days[d][2], 0, 0, 0);
        int n = wx_time_day_of_year(t0);
        for (int k = 0; k < 7; k++) {
            double sum = 0;
            for (int h = 1; h <= 24; h++) {
                float v;
                wx_forcing_toa_radiation(t0 + 3600 * h, &lats[k], 1, &lon, 1, &v);
                sum += v;
            }
            double ours = sum / 86400.0, ref = daily_mean_spencer(n, lats[k], wx_forcing_tsi(t0 + 43200));
            double e = fabs(ours - ref);
            if (e / (ref + 1) > worst) worst = e / (ref + 1);
            WX_CHECK(e < 0.01 * ref + 0.5, "%d-%02d-%02d lat %g: daily mean %.2f vs Spencer %.2f W/m2", days[d][0],
                     days[d][1], days[d][2], lats[k], ours, ref);
        }
    }
    printf("daily-mean TOA insolation vs Spencer: worst relative diff %.2e\n", worst);
    /* Polar night: nothing at 80°S on 21 June, any hour. */
    double lat = -80;
    float v = 1;
    wx_forcing_toa_radiation(wx_time_make(2020, 6, 21, 12, 0, 0), &lat, 1, &lon, 1, &v);
    WX_CHECK(v == 0.0f, "polar night TISR %g", v);
    /* Near the subsolar point at local noon the hour integral is close to S/d²·3600. */
    lat = 23.44;
    wx_forcing_toa_radiation(wx_time_make(2020, 6, 21, 12, 30, 0), &lat, 1, &lon, 1, &v);
    WX_CHECK(v > 0.99 * 1321 * 3600 && v < 1.0 * 1330 * 3600, "June noon TISR %.4g J/m2", v);

    /* Progress features (graphcast data_utils.py) */
    WX_CHECK(wx_forcing_year_progress(0) == 0.0, "year progress at the epoch");
    double yp = wx_forcing_year_progress((wx_time)(86400.0 * 365.24219 * 10.25));
    WX_CHECK(fabs(yp - 0.25) < 1e-7, "year progress 10.25 years later %.12f", yp);
    WX_CHECK(fabs(wx_forcing_day_progress(wx_time_make(2021, 5, 4, 6, 0, 0), 0.0) - 0.25) < 1e-12,
             "day progress 06 UTC at 0E");
    WX_CHECK(fabs(wx_forcing_day_progress(wx_time_make(2021, 5, 4, 0, 0, 0), 90.0) - 0.25) < 1e-12,
             "day progress 00 UTC at 90E");
    WX_CHECK(fabs(wx_forcing_day_progress(wx_time_make(2021, 5, 4, 18, 0, 0), 270.0) - 0.5) < 1e-12,
             "day progress wraps");
    double glat[2] = {45, -45}, glon[4] = {0, 90, 180, 270};
    float f[8];
    WX_CHECK(wx_forcing_fill("day_progress_sin", wx_time_make(2021, 5, 4, 0, 0, 0), glat, 2, glon, 4,
                             f) == WX_OK, "fill day_progress_sin");
    WX_CHECK(fabsf(f[0]) < 1e-6f && fabsf(f[1] - 1) < 1e-6f && fabsf(f[5] - 1) < 1e-6f &&
             fabsf(f[3] + 1) < 1e-6f, "day_progress_sin values %g %g %g %g", f[0], f[1], f[2], f[3]);
    WX_CHECK(wx_forcing_fill("toa_incident_solar_radiation", wx_time_make(2021, 5, 4, 0, 0, 0),
                             glat, 2, glon, 4, f) == WX_OK, "fill tisr");
    WX_CHECK(f[0] == 0.0f && f[2] > 1e6f, "midnight at 0E dark, noon at 180E lit (%g, %g)", f[0], f[2]);
    WX_CHECK(wx_forcing_fill("year_progress_tan", 0, glat, 2, glon, 4, f) == WX_ERR_USAGE,
             "unknown forcing rejected");
    return wx_test_summary();
}
