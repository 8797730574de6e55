/* Regular latitude/longitude grid as stored in wxcast archives and tensors: rows run north→south
 * (row 0 is the northernmost), columns run east from lon0 with lon0 in [0, 360). */
#ifndef WX_GRID_H
#define WX_GRID_H

#include "core/wx_error.h"

typedef struct {
    int nlat, nlon;
    double lat0; /* latitude of row 0 (degrees, the northernmost row) */
    double dlat; /* row spacing in degrees, > 0: lat(j) = lat0 - j*dlat */
    double lon0; /* longitude of column 0 in [0, 360) */
    double dlon; /* column spacing in degrees, > 0: lon(i) = lon0 + i*dlon */
} wx_grid;

/* Builds a grid and checks it (sizes >= 1, spacings > 0, latitudes within [-90, 90]). */
wx_status wx_grid_make(int nlat, int nlon, double lat0, double dlat, double lon0, double dlon,
                       wx_grid *out);
/* The global grid of `res` degrees including both poles: 181×360 for 1.0, 721×1440 for 0.25. */
wx_status wx_grid_global(double res, wx_grid *out);

double wx_grid_lat(const wx_grid *g, int j);
double wx_grid_lon(const wx_grid *g, int i);
/* 1 when the columns cover the full circle (nlon*dlon == 360 within 1e-6 degrees). */
int wx_grid_is_periodic(const wx_grid *g);
/* 1 when both grids have the same shape and coordinates within `tol` degrees. */
int wx_grid_same(const wx_grid *a, const wx_grid *b, double tol);
/* "721x1440 lat 90..-90 step 0.25, lon 0..359.75 step 0.25" into buf. */
void wx_grid_describe(const wx_grid *g, char *buf, int len);

/* Cell-area latitude weights (WeatherBench 2): bounds are midpoints between rows and, on a global
 * grid, ±90 outside the outer rows (a regional grid's outer rows end half a spacing out);
 * w_j = |sin φ_{j+½} − sin φ_{j−½}|, normalised to mean 1. Used by eval and the training losses.
 * w: [nlat] */
void wx_grid_area_weights(const wx_grid *g, double *w);

/* 1 when the grid covers the globe: periodic in longitude, its outer rows within one spacing of
 * both poles (FourCastNet's 720-row grid without the south pole is global). */
int wx_grid_is_global(const wx_grid *g);
/* The grid of an ingest recipe's `grid: {resolution: res}`: spacing res starting at the fine grid's
 * first point and covering it when res is a multiple of the fine spacings (and divides 360 on a
 * periodic grid); otherwise, for a global fine grid, the global grid of spacing res with both
 * poles. Fields go there by conservative regridding (meteo/wx_regrid.h). */
wx_status wx_grid_coarse_shape(const wx_grid *fine, double res, wx_grid *out);

#endif
