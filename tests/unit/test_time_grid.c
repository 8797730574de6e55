/* wx_time against independent values (Unix `date -u`, the CF conventions' examples) and wx_grid
 * weights against the closed form of WeatherBench 2's cell-area weights. */
#include <math.h>
#include <string.h>

#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"
#include "wx_test.h"

int main(void) {
    wx_time t;
    char buf[32];
    /* date -u -d 2017-01-01T00:00 +%s = 1483228800 */
    WX_CHECK(wx_time_parse("2017-01-01T00:00", "t", &t) == WX_OK && t == 1483228800, "parse");
    WX_CHECK(wx_time_parse("2017-01-02 12:00:00Z", "t", &t) == WX_OK && t == 1483228800 + 129600,
             "parse space form");
    WX_CHECK(wx_time_parse("2019-03-31T23", "t", &t) == WX_OK && t == 1554073200, "hour only");
    WX_CHECK(wx_time_parse("2017-02-29T00:00", "t", &t) == WX_ERR_USAGE, "2017-02-29 rejected");
    WX_CHECK(strstr(wx_error_message(), "2017-02-29") != NULL, "message names the value");
    WX_CHECK(wx_time_parse("2016-02-29", "t", &t) == WX_OK, "leap day");
    wx_time_format(1483228800 + 6 * 3600, buf);
    WX_CHECK(!strcmp(buf, "2017-01-01T06:00"), "format %s", buf);
    wx_time_format(-2208988800LL, buf); /* date -u -d 1900-01-01 +%s */
    WX_CHECK(!strcmp(buf, "1900-01-01T00:00"), "format 1900 %s", buf);
    int64_t d;
    WX_CHECK(wx_time_parse_duration("6h", "s", &d) == WX_OK && d == 21600, "6h");
    WX_CHECK(wx_time_parse_duration("1d", "s", &d) == WX_OK && d == 86400, "1d");
    WX_CHECK(wx_time_parse_duration("30m", "s", &d) == WX_OK && d == 1800, "30m");
    WX_CHECK(wx_time_parse_duration("-6h", "s", &d) == WX_ERR_USAGE, "negative");
    WX_CHECK(wx_time_parse_duration("6x", "s", &d) == WX_ERR_USAGE, "bad unit");
    WX_CHECK(wx_time_parse_duration("12", "s", &d) == WX_OK && d == 43200, "a bare number is hours");
    /* v * 3600 overflowed int64 into a negative "missing" duration */
    WX_CHECK(wx_time_parse_duration("9999999999999999996h", "s", &d) == WX_ERR_USAGE &&
             strstr(wx_error_message(), "longer than 10000 years"), "overflow: %s", wx_error_message());
    WX_CHECK(wx_time_parse_duration("87600h", "s", &d) == WX_OK && d == 87600LL * 3600, "10 years");
    WX_CHECK(wx_time_parse_duration("0.5d", "s", &d) == WX_ERR_USAGE &&
             strstr(wx_error_message(), "is not a duration"), "0.5d: %s", wx_error_message());
    WX_CHECK(wx_time_parse_duration("0h", "s", &d) == WX_ERR_USAGE &&
             strstr(wx_error_message(), "above 0"), "0h: %s", wx_error_message());
    WX_CHECK(wx_time_parse_duration("6 h", "s", &d) == WX_ERR_USAGE, "a space before the unit");
    WX_CHECK(wx_time_parse_duration("+6h", "s", &d) == WX_OK && d == 21600, "+6h");
    wx_time_format_duration(21600, buf);
    WX_CHECK(!strcmp(buf, "6h"), "6h out");
    WX_CHECK(wx_time_day_of_year(wx_time_make(2016, 12, 31, 18, 0, 0)) == 366, "doy leap");
    WX_CHECK(wx_time_day_of_year(wx_time_make(2017, 3, 1, 0, 0, 0)) == 60, "doy 2017-03-01");
    WX_CHECK(wx_time_hour_of_day(wx_time_make(1960, 5, 5, 18, 0, 0)) == 18, "hour before 1970");
    WX_CHECK(wx_time_from_grib(20171018, 1200, &t) == WX_OK && t == 1508328000, "grib time");

    wx_time_cf cf;
    /* ERA5 CDS old layout: hours since 1900-01-01; 1024872 h = 2016-12-01T00:00 (Python
     * datetime arithmetic). */
    WX_CHECK(wx_time_cf_parse("hours since 1900-01-01 00:00:00.0", "gregorian", "time", &cf) == WX_OK,
             "cf parse");
    WX_CHECK(wx_time_cf_value(&cf, 1024872) == wx_time_make(2016, 12, 1, 0, 0, 0), "cf value");
    WX_CHECK(wx_time_cf_parse("seconds since 1970-01-01", "proleptic_gregorian", "t", &cf) == WX_OK &&
                 wx_time_cf_value(&cf, 1483228800.0) == 1483228800, "seconds since epoch");
    /* Standard calendar: 0001-01-01 is Julian (JDN 1721424) and 1582-10-15 Gregorian is JDN
     * 2299161, 577737 days later. Proleptic Gregorian: date(1582,10,15).toordinal() - 1 = 577735
     * (Python). */
    WX_CHECK(wx_time_cf_parse("days since 0001-01-01", "standard", "t", &cf) == WX_OK, "julian");
    WX_CHECK(wx_time_cf_value(&cf, 577737) == wx_time_make(1582, 10, 15, 0, 0, 0),
             "standard calendar 0001-01-01 + 577737 d = 1582-10-15");
    WX_CHECK(wx_time_cf_parse("days since 0001-01-01", "proleptic_gregorian", "t", &cf) == WX_OK &&
                 wx_time_cf_value(&cf, 577735) == wx_time_make(1582, 10, 15, 0, 0, 0),
             "proleptic 0001-01-01 + 577735 d");
    WX_CHECK(wx_time_cf_parse("hours since 1900-01-01", "noleap", "t", &cf) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "noleap"), "noleap refused");
    WX_CHECK(wx_time_cf_parse("fortnights since 1900-01-01", NULL, "t", &cf) == WX_ERR_RUN, "unit");
    /* xarray's encodings of datetime64[ns] (numpy: 2020-03-20T06 is 1584684000 s after 1970) */
    WX_CHECK(wx_time_cf_parse("nanoseconds since 1970-01-01", "proleptic_gregorian", "t", &cf) ==
                 WX_OK && wx_time_cf_value(&cf, 1584684000e9) == wx_time_make(2020, 3, 20, 6, 0, 0),
             "nanoseconds since epoch");
    WX_CHECK(wx_time_cf_parse("microseconds since 2020-03-20", NULL, "t", &cf) == WX_OK &&
                 wx_time_cf_value(&cf, 21600e6) == wx_time_make(2020, 3, 20, 6, 0, 0), "microseconds");
    WX_CHECK(wx_time_cf_parse("milliseconds since 2020-03-20", NULL, "t", &cf) == WX_OK &&
                 wx_time_cf_value(&cf, 21600e3) == wx_time_make(2020, 3, 20, 6, 0, 0), "milliseconds");

    wx_grid g;
    WX_CHECK(wx_grid_global(1.0, &g) == WX_OK && g.nlat == 181 && g.nlon == 360, "1 degree");
    double w[181];
    wx_grid_area_weights(&g, w);
    /* Closed form: interior rows sin(lat+0.5)-sin(lat-0.5) = 2 cos(lat) sin(0.5°); pole rows
     * 1 - sin(89.5°); normalised by the sum, which telescopes to 2. */
    double r = M_PI / 180, mean = 2.0 / 181;
    WX_CHECK(fabs(w[90] - 2 * sin(0.5 * r) / mean) < 1e-12, "equator weight %.15g", w[90]);
    WX_CHECK(fabs(w[0] - (1 - sin(89.5 * r)) / mean) < 1e-12, "pole weight %.15g", w[0]);
    WX_CHECK(fabs(w[30] - 2 * cos(60 * r) * sin(0.5 * r) / mean) < 1e-12, "60N weight");
    WX_CHECK(fabs(w[30] - w[150]) < 1e-12, "symmetric");

    /* A regional grid (58..50°N, 1°): each row's cell ends half a spacing out, so the weights go
     * as the rows' own band areas; with WB2's ±90° outer bounds (meant for the globe) the 50°N
     * row took the whole cap south of 50.5°N, 88 % of the weight. */
    wx_grid uk;
    double wu[9], band[9], bsum = 0;
    wx_grid_make(9, 13, 58, 1.0, 350, 1.0, &uk);
    wx_grid_area_weights(&uk, wu);
    for (int j = 0; j < 9; j++) {
        double lat = 58 - j;
        band[j] = sin((lat + 0.5) * r) - sin((lat - 0.5) * r);
        bsum += band[j];
    }
    int bands_ok = 1;
    for (int j = 0; j < 9; j++) bands_ok &= fabs(wu[j] - band[j] / (bsum / 9)) < 1e-12;
    WX_CHECK(!wx_grid_is_global(&uk) && bands_ok && wu[8] / 9 < 0.13 && wu[8] > wu[0],
             "regional weights are the rows' bands: 50N %.4f, 58N %.4f (mean 1)", wu[8], wu[0]);

    /* The ingest recipe's coarse grid (values: test_regrid) */
    wx_grid f, c;
    WX_CHECK(wx_grid_global(0.5, &f) == WX_OK && wx_grid_coarse_shape(&f, 1.0, &c) == WX_OK &&
                 c.nlat == 181 && c.nlon == 360, "coarse shape");
    /* no multiple: a global source goes to the global grid of that spacing, a regional one cannot */
    WX_CHECK(wx_grid_coarse_shape(&f, 0.75, &c) == WX_OK && c.nlat == 241 && c.nlon == 480 &&
                 c.lat0 == 90, "0.75 from a global 0.5 grid: %dx%d", c.nlat, c.nlon);
    wx_grid reg;
    wx_grid_make(61, 81, 60, 0.5, 10, 0.5, &reg);
    WX_CHECK(!wx_grid_is_global(&reg) && wx_grid_is_global(&f) &&
                 wx_grid_coarse_shape(&reg, 0.75, &c) == WX_ERR_USAGE &&
                 strstr(wx_error_message(), "(the source is not global)"),
             "0.75 from a regional 0.5 grid: usage error (%s)", wx_error_message());
    wx_grid fcn;
    wx_grid_make(720, 1440, 90, 0.25, 0, 0.25, &fcn);
    WX_CHECK(wx_grid_is_global(&fcn), "FourCastNet's 720-row grid is global");
    return wx_test_summary();
}
