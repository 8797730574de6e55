/* PNG maps of regional (non-periodic) grids, wherever their lon0 lies in [0, 360): a box across
 * Greenwich (lon0 350, the ERA5 UK extract), one in the western hemisphere (lon0 250) and one in
 * the eastern (lon0 100), each drawn on the default map from −180 and on one from 0. The field is
 * linear in longitude and latitude, so bilinear interpolation reproduces it exactly: every map
 * pixel whose centre lies inside the box must show the documented colour of the field's value
 * there (computed here from the pixel's lon/lat, not from the grid), and pixels a cell or more
 * outside the box are grey. Also the ensemble-spread style: 0..max of the data, YlOrRd, units
 * without offset. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/png_map.h"
#include "wx_test.h"

static int near_rgb(wx_rgb a, wx_rgb b, int tol) {
    return abs(a.r - b.r) <= tol && abs(a.g - b.g) <= tol && abs(a.b - b.b) <= tol;
}

/* The test field (K): 260 + 0.5·(degrees east of the box's west edge) + 0.3·(degrees south of its
 * north edge). */
static double field_at(double dlon_east, double dlat_south) {
    return 260 + 0.5 * dlon_east + 0.3 * dlat_south;
}

static void check_box(double lon0, double west) {
    wx_grid g;
    /* 33 x 49 at 0.25 degrees like era5-2mt-2019-03-uk.grib: lat 58..50, lon lon0..lon0+12 */
    WX_CHECK(wx_grid_make(33, 49, 58, 0.25, lon0, 0.25, &g) == WX_OK, "grid: %s", wx_error_message());
    float *f = malloc(sizeof(float) * 33 * 49);
    for (int j = 0; j < 33; j++)
        for (int i = 0; i < 49; i++) f[j * 49 + i] = (float)field_at(i * 0.25, j * 0.25);
    wx_map_style s;
    wx_map_style_for("2t", 0, "K", 1, &s);
    wx_map_opts o;
    wx_map_opts_default(&o);
    o.width = 1440; /* 4 pixels a degree: 48 x 32 pixels inside the box */
    o.west = west;
    wx_canvas c;
    wx_map_layout l;
    WX_CHECK(wx_map_render(&g, f, &s, &o, &c, &l) == WX_OK, "render: %s", wx_error_message());
    int inside = 0, wrong = 0, outside = 0, not_grey = 0;
    wx_rgb grey = {160, 160, 160};
    for (int y = 0; y < l.map_h; y++) {
        double lat = 90.0 - (y + 0.5) * 180.0 / l.map_h;
        for (int x = 0; x < l.map_w; x++) {
            double lon = west + (x + 0.5) * 360.0 / l.map_w;
            double e = fmod(lon - lon0 + 720.0, 360.0); /* degrees east of the west edge */
            if (e > 180) e -= 360;
            wx_rgb got = wx_canvas_get(&c, l.map_x + x, l.map_y + y);
            if (e >= 0 && e <= 12 && lat <= 58 && lat >= 50) {
                wx_rgb want = wx_map_colour(&s, field_at(e, 58 - lat) - 273.15);
                inside++;
                if (!near_rgb(got, want, 1)) {
                    if (wrong++ < 3)
                        printf("lon0 %g west %g: (%.3f, %.3f) is (%d,%d,%d), want (%d,%d,%d)\n",
                               lon0, west, lon, lat, got.r, got.g, got.b, want.r, want.g, want.b);
                }
            } else if (e < -0.5 || e > 12.5 || lat > 58.5 || lat < 49.5) {
                outside++;
                not_grey += !near_rgb(got, grey, 0);
            }
        }
    }
    WX_CHECK(inside == 48 * 32 && wrong == 0,
             "lon0 %g on a map from %g: %d of %d pixels inside the box off their field colour", lon0,
             west, wrong, inside);
    WX_CHECK(outside > 0 && not_grey == 0, "lon0 %g on a map from %g: %d of %d pixels outside not grey",
             lon0, west, not_grey, outside);
    wx_canvas_free(&c);
    free(f);
}

static void test_spread_style(void) {
    wx_map_style s;
    wx_map_style_spread("t", 850, NULL, &s);
    WX_CHECK(!strcmp(s.id, "spread") && !strcmp(s.units, "K") && s.offset == 0 && s.scale == 1 &&
                 s.contour_step == 0 && s.nstops == 8 && !(s.vmax > s.vmin),
             "t850 spread style: id %s units %s offset %g scale %g, range from the data", s.id,
             s.units, s.offset, s.scale);
    wx_map_style_spread("msl", 0, NULL, &s);
    WX_CHECK(!strcmp(s.units, "hPa") && s.scale == 0.01 && s.contour_step == 0,
             "msl spread in hPa without contours (%s, scale %g, contours %g)", s.units, s.scale,
             s.contour_step);
    wx_map_style_spread("z", 500, NULL, &s);
    WX_CHECK(!strcmp(s.units, "dam") && fabs(s.scale - 1 / 98.0665) < 1e-12, "z spread in dam");
    /* A global field of spreads 0.25..0.75 K (exact in float): colour bar 0..0.8 (0..max rounded
     * up to the bar's step 0.1), first stop #ffffcc. */
    wx_grid g;
    wx_grid_global(10.0, &g);
    float *f = malloc(sizeof(float) * (size_t)g.nlat * g.nlon);
    for (int j = 0; j < g.nlat; j++)
        for (int i = 0; i < g.nlon; i++) f[j * g.nlon + i] = (float)(0.25 + 0.5 * i / (g.nlon - 1));
    wx_map_style_spread("t", 850, NULL, &s);
    wx_map_opts o;
    wx_map_opts_default(&o);
    wx_canvas c;
    wx_map_layout l;
    WX_CHECK(wx_map_render(&g, f, &s, &o, &c, &l) == WX_OK, "render spread: %s", wx_error_message());
    WX_CHECK(l.vmin == 0 && fabs(l.vmax - 0.8) < 1e-9, "spread bar 0..max: %g..%g", l.vmin, l.vmax);
    wx_rgb first = wx_canvas_get(&c, l.bar_x, l.bar_y + l.bar_h / 2);
    wx_rgb last = wx_canvas_get(&c, l.bar_x + l.bar_w - 1, l.bar_y + l.bar_h / 2);
    WX_CHECK(near_rgb(first, (wx_rgb){0xff, 0xff, 0xcc}, 3) && near_rgb(last, (wx_rgb){0xb1, 0, 0x26}, 3),
             "bar from #ffffcc to #b10026: (%d,%d,%d) .. (%d,%d,%d)", first.r, first.g, first.b,
             last.r, last.g, last.b);
    wx_canvas_free(&c);
    free(f);
}

int main(void) {
    double lon0s[3] = {350, 250, 100}, wests[2] = {-180, 0};
    for (int k = 0; k < 3; k++)
        for (int w = 0; w < 2; w++) check_box(lon0s[k], wests[w]);
    test_spread_style();
    return wx_test_summary();
}
