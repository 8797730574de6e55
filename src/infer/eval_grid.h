/* The grid `wxcast eval` scores on: the truth archive's own, or with --resolution R WeatherBench2's
 * way of scoring at 1.5° (240×121): every field (forecast, truth, climatology, land-sea mask) is
 * brought from the archive's grid to the global grid of spacing R with both poles by conservative
 * regridding (meteo/wx_regrid.h, as WB2's ConservativeRegridder) before any score, and the
 * latitude weights are that grid's. With `rows` below the archive's (FourCastNet's 720 of ERA5's 721
 * rows, the south pole dropped) every field is scored on the archive's first `rows` rows, so that
 * such forecasts and full-grid ones (GraphCast) are compared on the same points. */
#ifndef WX_EVAL_GRID_H
#define WX_EVAL_GRID_H

#include <stdint.h>

#include "io/archive.h"
#include "io/climatology.h"
#include "io/wx_source.h"
#include "meteo/wx_regrid.h"

typedef struct {
    wx_grid grid;   /* the scoring grid */
    int64_t P, Pa;  /* points of the scoring grid and of the archive's */
    wx_regrid *rg;  /* archive grid -> grid; NULL: no regridding */
    int crop;       /* the scoring grid is the archive's first grid.nlat rows */
    float *scratch; /* [nchan, Pa] a record on the archive grid before regridding or cropping */
    int nchan;
} wx_eval_grid;

/* res <= 0: the archive's grid. Else the global grid of `res` degrees: a usage error when the
 * archive's grid is not global (periodic in longitude, rows within one spacing of both poles:
 * FourCastNet's 720-row grid is), 180/res, 360/res are not integers, or it
 * is finer than the archive's (so the scoring grid never has more points: P <= Pa). */
wx_status wx_eval_grid_open(const wx_archive_meta *m, double res, wx_eval_grid *g);
/* The archive's first `rows` rows (rows < the archive's nlat; not with --resolution). */
wx_status wx_eval_grid_crop(const wx_archive_meta *m, int rows, wx_eval_grid *g);
/* Fields on the archive grid to the scoring grid. in: [n, Pa] → out: [n, P] (out may be in
 * only without regridding: then it copies when they differ). */
void wx_eval_grid_map(const wx_eval_grid *g, const float *in, int n, float *out);
/* Archive record `t` (all channels). out: [nchan, P] */
wx_status wx_eval_grid_truth(wx_eval_grid *g, wx_archive *ar, int64_t t, float *out);
/* Field i of a forecast file (on the archive's grid, or already on the cropped scoring grid;
 * missing values NaN). out: [P] */
wx_status wx_eval_grid_field(wx_eval_grid *g, wx_source *src, int i, float *out);
/* The climatology at valid time v. out: [nchan, P] */
wx_status wx_eval_grid_clim(wx_eval_grid *g, wx_climatology *c, wx_time v, float *out);
void wx_eval_grid_close(wx_eval_grid *g);

#endif
