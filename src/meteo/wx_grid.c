#include "meteo/wx_grid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

wx_status wx_grid_make(int nlat, int nlon, double lat0, double dlat, double lon0, double dlon,
                       wx_grid *out) {
    if (nlat < 1 || nlon < 1)
        return wx_error_set(WX_ERR_RUN, "grid: size %dx%d, expected at least 1x1", nlat, nlon);
    if ((nlat > 1 && !(dlat > 0)) || (nlon > 1 && !(dlon > 0)))
        return wx_error_set(WX_ERR_RUN, "grid: spacing %g x %g degrees, expected > 0", dlat, dlon);
    double last = lat0 - (nlat - 1) * dlat;
    if (lat0 > 90 + 1e-6 || last < -90 - 1e-6)
        return wx_error_set(WX_ERR_RUN, "grid: latitudes %.9g..%.9g outside [-90, 90]", lat0, last);
    lon0 = fmod(lon0, 360.0);
    if (lon0 < 0) lon0 += 360.0;
    if (fabs(lon0 - 360.0) < 1e-9) lon0 = 0;
    *out = (wx_grid){nlat, nlon, lat0, nlat > 1 ? dlat : (dlat > 0 ? dlat : 1), lon0,
                     nlon > 1 ? dlon : (dlon > 0 ? dlon : 1)};
    return WX_OK;
}

wx_status wx_grid_global(double res, wx_grid *out) {
    double nl = 180.0 / res, nn = 360.0 / res;
    if (!(res > 0) || fabs(nl - floor(nl + 0.5)) > 1e-9 || fabs(nn - floor(nn + 0.5)) > 1e-9)
        return wx_error_set(WX_ERR_USAGE, "grid resolution %g: expected a divisor of 180 degrees",
                            res);
    return wx_grid_make((int)floor(nl + 0.5) + 1, (int)floor(nn + 0.5), 90.0, res, 0.0, res, out);
}

double wx_grid_lat(const wx_grid *g, int j) { return g->lat0 - j * g->dlat; }
double wx_grid_lon(const wx_grid *g, int i) { return g->lon0 + i * g->dlon; }

int wx_grid_is_periodic(const wx_grid *g) { return fabs(g->nlon * g->dlon - 360.0) < 1e-6; }

int wx_grid_same(const wx_grid *a, const wx_grid *b, double tol) {
    return a->nlat == b->nlat && a->nlon == b->nlon && fabs(a->lat0 - b->lat0) <= tol &&
           fabs(a->lon0 - b->lon0) <= tol && (a->nlat == 1 || fabs(a->dlat - b->dlat) <= tol) &&
           (a->nlon == 1 || fabs(a->dlon - b->dlon) <= tol);
}

void wx_grid_describe(const wx_grid *g, char *buf, int len) {
    /* a regional grid across the meridian as eccodes and the CDS give it: -10..2, not 350..362 */
    double l0 = g->lon0, l1 = wx_grid_lon(g, g->nlon - 1);
    if (!wx_grid_is_periodic(g) && l1 >= 360) l0 -= 360, l1 -= 360;
    snprintf(buf, (size_t)len, "%dx%d lat %g..%g step %g, lon %g..%g step %g", g->nlat, g->nlon,
             g->lat0, wx_grid_lat(g, g->nlat - 1), g->dlat, l0, l1, g->dlon);
}

void wx_grid_area_weights(const wx_grid *g, double *w) {
    const double d2r = M_PI / 180.0;
    /* WB2's outer bounds at ±90° are for the globe (its outer rows are the poles, or within one
     * spacing of them). On a regional grid they would give the edge rows the whole cap beyond
     * (the 50°N row of a 58..50°N box 88 % of the weight): there every row's cell ends half a
     * spacing out. */
    const int global = wx_grid_is_global(g);
    double sum = 0;
    for (int j = 0; j < g->nlat; j++) {
        double lat = wx_grid_lat(g, j);
        double hi = j == 0 && global ? 90.0 : lat + 0.5 * g->dlat;
        double lo = j == g->nlat - 1 && global ? -90.0 : lat - 0.5 * g->dlat;
        if (hi > 90) hi = 90;
        if (lo < -90) lo = -90;
        w[j] = fabs(sin(hi * d2r) - sin(lo * d2r));
        sum += w[j];
    }
    for (int j = 0; j < g->nlat; j++) w[j] *= g->nlat / sum;
}

static int int_ratio(double a, double b, int *out) {
    double r = a / b;
    int n = (int)floor(r + 0.5);
    *out = n;
    return n >= 1 && fabs(r - n) < 1e-6;
}

int wx_grid_is_global(const wx_grid *g) {
    return wx_grid_is_periodic(g) && g->lat0 + g->dlat >= 90 - 1e-9 &&
           wx_grid_lat(g, g->nlat - 1) - g->dlat <= -90 + 1e-9;
}

wx_status wx_grid_coarse_shape(const wx_grid *fine, double res, wx_grid *out) {
    int fy, fx;
    if (int_ratio(res, fine->dlat, &fy) && int_ratio(res, fine->dlon, &fx)) {
        int nlat = (fine->nlat - 1) / fy + 1;
        int nlon = wx_grid_is_periodic(fine) ? fine->nlon / fx : (fine->nlon - 1) / fx + 1;
        if (wx_grid_is_periodic(fine) && fine->nlon % fx)
            return wx_error_set(WX_ERR_USAGE, "grid.resolution %g does not divide 360 degrees", res);
        return wx_grid_make(nlat, nlon, fine->lat0, res, fine->lon0, res, out);
    }
    /* a global source goes to the global grid of that spacing, whatever the ratio (the synthetic
     * 32x64 world, 5.806 x 5.625 degrees, to GraphCast's 5.625) */
    if (wx_grid_is_global(fine) && wx_grid_global(res, out) == WX_OK) return WX_OK;
    return wx_error_set(WX_ERR_USAGE, "grid.resolution %g: expected a multiple of the source "
                        "spacing %g x %g degrees%s", res, fine->dlat, fine->dlon,
                        wx_grid_is_global(fine) ? ", or a spacing that divides 180 and 360 (the "
                        "source is global)" : " (the source is not global)");
}

