/* First-order conservative regridding between regular latitude/longitude grids, as
 * WeatherBench2's ConservativeRegridder (weatherbench2/regridding.py) does it for its 1.5°
 * (240×121) headline scores: a target cell's value is the area-weighted mean of the source cells
 * it overlaps, separably in latitude (overlap of sin φ between cell bounds) and longitude
 * (overlap of the periodic longitude intervals), each weight row normalised to sum 1, skipping
 * NaN source values (a target cell without a finite source value is NaN).
 *
 * Cell bounds: midpoints between rows and columns. The outer latitude bounds are the poles on a
 * grid that is periodic in longitude (as WB2's), else half a spacing beyond the outer rows,
 * clamped to ±90°; longitudes are periodic on a periodic grid, else half a spacing beyond the
 * outer columns. Any pair of resolutions works (coarser or finer, integer ratio or not). */
#ifndef WX_REGRID_H
#define WX_REGRID_H

#include "meteo/wx_grid.h"

typedef struct wx_regrid wx_regrid;

/* The weights from src to dst. A usage error when the two do not overlap everywhere (a target
 * row or column with no source cell under it). */
wx_status wx_regrid_create(const wx_grid *src, const wx_grid *dst, wx_regrid **out);
/* in: [src.nlat, src.nlon] → out: [dst.nlat, dst.nlon]. Thread-safe (scratch per call). */
void wx_regrid_apply(const wx_regrid *r, const float *in, float *out);
void wx_regrid_free(wx_regrid *r);

#endif
