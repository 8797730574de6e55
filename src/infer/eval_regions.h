/* WeatherBench2's evaluation regions for `wxcast eval --regions` (google-research/weatherbench2
 * scripts/evaluate.py, `predefined_regions` and `land_regions`; weatherbench2/regions.py for
 * SliceRegion, LandRegion and CombinedRegion; metrics.py `_spatial_average` for how their
 * weights enter the mean):
 *   global, tropics (|lat| <= 20), extra-tropics (|lat| >= 20), northern-hemisphere (lat >= 20),
 *   southern-hemisphere (lat <= -20), europe, north-america, north-atlantic, north-pacific,
 *   east-asia, ausnz (lat/lon boxes, eval_regions.c), arctic (lat >= 60), antarctic (lat <= -60),
 *   and the land regions global_land, extra-tropics_land, tropics_land.
 * A box is an xarray .sel with slices, so both bounds are included (here within 1e-6°, as our
 * latitudes are computed from lat0 − j·dlat); longitudes are taken in [0, 360) as WB2's data
 * are, and Europe's box crossing 0° is WB2's two slices [347.5, 360) and [0, 42.5]. Its points
 * keep their latitude weights, and every mean is normalised over the region (Σ w over its
 * points): a 0/1 mask on the weights (metrics.h wx_score_add_masked). A land region multiplies
 * the weights by the land-sea mask itself, a fraction in 0..1 (LandRegion with threshold None,
 * as evaluate.py builds it), after the box. A region with no point on the grid (a box between
 * the rows of a coarse grid) or no land gets NaN scores, as WB2's weighted mean over nothing. */
#ifndef WX_EVAL_REGIONS_H
#define WX_EVAL_REGIONS_H

#include "core/wx_error.h"
#include "infer/metrics.h"
#include "io/archive.h"
#include "meteo/wx_grid.h"

#define WX_EVAL_NREGIONS 16 /* WB2's predefined regions, global first */

/* The regions asked for besides global, in the order given, each once. */
typedef struct {
    int n;
    int id[WX_EVAL_NREGIONS];   /* region ids (wx_eval_region_name) */
    int named_land;             /* a land region was named (not only implied by "all") */
    int rows[WX_EVAL_NREGIONS][2]; /* set by wx_eval_regions_masks: first and last row of region
                                      id[k] with a point of nonzero weight (0, -1: none) */
} wx_eval_regions;

/* WB2's name of region id (0 = "global"); NULL out of range. */
const char *wx_eval_region_name(int id);
/* 1 for the land-masked regions. */
int wx_eval_region_is_land(int id);
/* Parses --regions: comma-separated WB2 names, or "all" (every region; the land ones only when
 * the truth has a land-sea mask, as evaluate.py skips them without one). global is always scored
 * and is not put in the list. An unknown name is a usage error listing the known ones. */
wx_status wx_eval_regions_parse(const char *list, wx_eval_regions *out);
/* The truth archive's land-sea mask (a channel lsm / land_sea_mask, read from its first record:
 * ingest repeats static fields in every record); *lsm = NULL when it has none. lsm: [nlat, nlon],
 * caller frees. */
wx_status wx_eval_regions_read_lsm(wx_archive *ar, float **lsm);
/* Drops the land regions from "all" when lsm is NULL (a usage error naming the archive when one
 * was named), then builds each region's point weights and row range. masks: [n, nlat, nlon],
 * allocated here (NULL when n is 0); caller frees. */
wx_status wx_eval_regions_masks(wx_eval_regions *rg, const wx_grid *g, const float *lsm,
                                const char *truth, float **masks);

/* What wx_eval_regions_add scores. */
typedef enum { WX_EVAL_ADD_FIELD, WX_EVAL_ADD_VECTOR, WX_EVAL_ADD_ENSEMBLE } wx_eval_add_kind;
/* One initial time of one field into sums[0] (global, unmasked: wx_score_add*) and sums[1 + k]
 * (region k, masks + k·nlat·nlon, over its rows only). FIELD: a = forecast, b = truth,
 * c = climatology or NULL; VECTOR: a, b = forecast u, v, c, d = truth u, v; ENSEMBLE: a = the M
 * members [M, nlat, nlon], b = truth. rg may be NULL (global only). */
void wx_eval_regions_add(const wx_eval_regions *rg, const float *masks, wx_score_sums *const *sums,
                         const double *w, int nlat, int nlon, wx_eval_add_kind kind, int M,
                         const float *a, const float *b, const float *c, const float *d);
/* SEEPS of one initial time (forecast f against truth o, metrics.h) into sums[0] and each
 * region's sums[1 + k], as wx_eval_regions_add. f, o: [nlat, nlon]; sc on the same grid */
void wx_eval_regions_add_seeps(const wx_eval_regions *rg, const float *masks,
                               wx_score_sums *const *sums, const double *w, int nlat, int nlon,
                               const float *f, const float *o, const wx_seeps_clim *sc);

#endif
