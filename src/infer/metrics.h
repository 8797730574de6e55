/* WeatherBench2 verification scores (shared/reference/products-and-metrics.md §2), per variable
 * and lead time, accumulated over a set of initial times.
 *
 * Latitude weights are WB2's cell areas, w_j = sin φ_{j+½} − sin φ_{j−½} with ±90° as the outer
 * bounds (on a global grid; a regional grid's rows end half a spacing out), normalised to mean 1:
 * wx_grid_area_weights (src/meteo/wx_grid.h) computes exactly that,
 * for either row order (the weights are symmetric under the flip WB2 makes to increasing latitude,
 * so fields stay in the archive's north→south order here). ⟨X⟩ is Σ w_j X_ji / Σ w_j over the
 * points where the truth (and the climatology, for ACC) is finite, one point set for all terms of
 * a score. (WB2 aggregates with skipna=False, so there a single NaN makes the score NaN; skipping
 * a missing truth keeps FourCastNet's padded row or a masked region from poisoning every score,
 * and equals WB2 when nothing is missing.) A NaN or infinite *forecast* value at such a point is
 * not skipped: the score of that initial time is NaN, as in WB2, and the point is counted in
 * wx_score_sums.n_bad for eval's warning, so a model that breaks down never scores better.
 *
 * Per initial time t (one call of wx_score_add_*):
 *   MSE(t)  = ⟨(f−o)²⟩,  bias(t) = ⟨f−o⟩,  MAE(t) = ⟨|f−o|⟩
 *   ACC(t)  = ⟨(f−c)(o−c)⟩ / sqrt(⟨(f−c)²⟩·⟨(o−c)²⟩)          uncentred; c at the valid time
 *   CRPS(t) = ⟨(1/M)Σ_m|x_m−o|⟩ − ½⟨(1/(M(M−1)))Σ_{i,j}|x_i−x_j|⟩   fair form; spread 0 when M<2
 *   VAR(t)  = ⟨var_m(x; ddof 1)⟩,  EMSE(t) = ⟨(mean_m x − o)²⟩
 * Over initial times (wx_score_finish):
 *   RMSE = sqrt(mean_t MSE)  (square root after the time mean, ECMWF/WB2 convention), or
 *          mean_t sqrt(MSE(t)) with rmse_per_init (NVlabs FourCastNet's published numbers)
 *   bias, MAE, ACC, CRPS = mean_t of the above
 *   spread/skill = sqrt(mean_t VAR) / sqrt(mean_t EMSE)   (WB2's two parts combined)
 *   spread/skill fair = sqrt((M+1)/M) · spread/skill     (GenCast's finite-ensemble correction;
 *                                                         not WB2's, reported beside it)
 * SEEPS (WB2 metrics.py SpatialSEEPS/SEEPS, Rodwell et al. 2010; precipitation only), per point
 * with the dry threshold r (0.1 mm for 6 h totals, 0.25 mm for 24 h), the wet threshold u at the
 * valid time and p1 the climatological dry fraction averaged over day of year and hour:
 *   category(x) = dry if x < r, light if r < x < u, heavy if x >= u (x == r: none, scores 0;
 *                 u NaN: x > r is in none), the same thresholds for forecast and truth;
 *   score = S[cat(f)][cat(o)],  S = ½·[[0, 1/(1−p1), 4/(1−p1)],
 *                                     [1/p1, 0, 3/(1−p1)],
 *                                     [1/p1 + 3/(2+p1), 3/(2+p1), 0]]
 *   NaN where f or o is NaN or p1 is not in (0.1, 0.85) (WX_SEEPS_MIN_P1/MAX_P1);
 *   SEEPS(t) = ⟨score⟩ over the finite points (WB2: skipna=True), SEEPS = mean_t SEEPS(t).
 * Sums are kept in double; the order of summation is fixed (row by row), so results are
 * identical run to run. */
#ifndef WX_METRICS_H
#define WX_METRICS_H

#include <stdint.h>

/* Running sums for one (variable, lead). Zero-initialise ({0}) before the first add. */
typedef struct {
    int64_t n;          /* initial times with a deterministic forecast added */
    double sum_mse, sum_bias, sum_mae;
    double sum_rmse;    /* Σ_t sqrt(MSE(t)) */
    int rmse_per_init;  /* 1: RMSE = mean_t sqrt(MSE(t)), NVlabs FourCastNet's (the mean over
                           initial times of its per-initial-time RMSE); 0: WB2's sqrt(mean_t MSE) */
    int vector;         /* 1: a wind vector (wx_score_add_vector): MSE only, no bias/MAE/ACC */
    int64_t n_acc;      /* of those, with a climatology given */
    double sum_acc;
    int64_t n_ens;      /* initial times with an ensemble added */
    int members;        /* M of the last ensemble added */
    double sum_crps, sum_ens_var, sum_ens_mse;
    int64_t n_seeps;    /* initial times with SEEPS added (wx_score_add_seeps_masked) */
    double sum_seeps;
    int64_t n_bad;      /* scored points where the forecast was NaN or infinite (scores NaN) */
} wx_score_sums;

/* Final scores; NaN where nothing was accumulated (or ACC where a denominator was 0). */
typedef struct {
    int64_t n, n_ens;
    double rmse, bias, mae, acc;
    double crps, spread, ens_mean_rmse, spread_skill, spread_skill_fair;
    int64_t n_seeps;
    double seeps;       /* NaN when not scored */
} wx_scores;

/* What SEEPS compares against, on the scoring grid. */
typedef struct {
    const float *wet; /* [nlat, nlon] wet threshold at the valid time */
    const float *p1;  /* [nlat, nlon] dry fraction averaged over day of year and hour */
    double dry;       /* dry threshold, in the field's units */
} wx_seeps_clim;

/* NVlabs FourCastNet's latitude weights (inference/inference.py, shared/reference/
 * fourcastnet.md item 8): w_j = nlat·cos(lat_j) / Σ_k cos(lat_k) with lat_j = 90 − j·180/(nlat−1),
 * i.e. rows assumed evenly spaced from +90 to −90 inclusive whatever the grid's true latitudes
 * (on 720 rows that is slightly off the 0.25° grid, as in NVlabs' code). Symmetric in j, so the
 * row order does not matter. Mean 1 like the WB2 weights; the pole rows get weight 0. w: [nlat] */
void wx_metrics_fourcastnet_weights(int nlat, double *w);

/* Area-weighted mean ⟨x⟩ over finite points; NaN when no point is finite.
 * w: [nlat] (wx_grid_area_weights), x: [nlat, nlon] */
double wx_metrics_wmean(const double *w, int nlat, int nlon, const float *x);

/* Per-initial-time quantities (exposed for tests and spatial use).
 * f, o, c: [nlat, nlon]; points where any is non-finite are skipped. */
double wx_metrics_mse(const double *w, int nlat, int nlon, const float *f, const float *o);
double wx_metrics_bias(const double *w, int nlat, int nlon, const float *f, const float *o);
double wx_metrics_acc(const double *w, int nlat, int nlon, const float *f, const float *o,
                      const float *c);
/* Fair CRPS, ensemble variance (ddof 1) and ensemble-mean MSE of one initial time.
 * ens: [M, nlat, nlon], o: [nlat, nlon]; any output pointer may be NULL. */
void wx_metrics_ensemble(const double *w, int nlat, int nlon, int M, const float *ens,
                         const float *o, double *crps, double *ens_var, double *ens_mse);

/* Adds one initial time of a deterministic forecast f against truth o; c (climatology at the
 * valid time) may be NULL, then ACC is not accumulated. f, o, c: [nlat, nlon] */
void wx_score_add(wx_score_sums *s, const double *w, int nlat, int nlon, const float *f,
                  const float *o, const float *c);
/* Adds one initial time of a wind vector (WB2 WindVectorRMSE, §2.2): MSE(t) = ⟨(Δu)² + (Δv)²⟩
 * over the points where all four inputs are finite; RMSE as for any field.
 * fu, fv, ou, ov: [nlat, nlon] */
void wx_score_add_vector(wx_score_sums *s, const double *w, int nlat, int nlon, const float *fu,
                         const float *fv, const float *ou, const float *ov);
/* Adds one initial time of an ensemble. ens: [M, nlat, nlon], o: [nlat, nlon] */
void wx_score_add_ensemble(wx_score_sums *s, const double *w, int nlat, int nlon, int M,
                           const float *ens, const float *o);
/* The three adds above with every point (j, i) weighted w_j·mask_ji instead of w_j: WB2's region
 * scores (weatherbench2/regions.py: a lat/lon box keeps the latitude weights of its points, so
 * mask 0/1; a LandRegion multiplies them by the land-sea mask, so mask = land fraction), each mean
 * normalised by the region's own Σ w·mask. Points with mask 0 are skipped; a region with no point
 * gives NaN (WB2's weighted mean over nothing). mask: [nlat, nlon], NULL = 1 everywhere (then
 * bit for bit the unmasked add). */
void wx_score_add_masked(wx_score_sums *s, const double *w, const float *mask, int nlat, int nlon,
                         const float *f, const float *o, const float *c);
void wx_score_add_vector_masked(wx_score_sums *s, const double *w, const float *mask, int nlat,
                                int nlon, const float *fu, const float *fv, const float *ou,
                                const float *ov);
void wx_score_add_ensemble_masked(wx_score_sums *s, const double *w, const float *mask, int nlat,
                                  int nlon, int M, const float *ens, const float *o);
/* SEEPS of one point (formula above): NaN where f or o is NaN or p1 is outside the mask. */
double wx_metrics_seeps_point(double f, double o, double wet, double p1, double dry);
/* Adds SEEPS(t) of forecast f against truth o, every point weighted w_j·mask_ji as in
 * wx_score_add_masked (mask NULL: 1). f, o: [nlat, nlon]; sc's fields on the same grid */
void wx_score_add_seeps_masked(wx_score_sums *s, const double *w, const float *mask, int nlat,
                               int nlon, const float *f, const float *o, const wx_seeps_clim *sc);
void wx_score_finish(const wx_score_sums *s, wx_scores *out);

#endif
