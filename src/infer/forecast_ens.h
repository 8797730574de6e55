/* Ensemble initial-state perturbations, applied in the model's normalised units (so amplitude a
 * is a fraction of each channel's standard deviation) to members 1..M-1 of a rollout state;
 * member 0 is the unperturbed control.
 *
 *   gaussian            x + a·ξ, ξ ~ N(0,1) per point
 *   spherical-gaussian  x + a·g, g a smooth random field on the sphere: Σ_{l≤L,m} ξ_lm
 *                       sqrt(C_l) Ȳ_lm with C_l = (l(l+1) + τ²)^(−α) (α = 2, τ = 3: the
 *                       Matérn-like spectrum of earth2studio's SphericalGaussian), Ȳ the
 *                       orthonormal real spherical harmonics, L = min(nlat−1, 63), g rescaled to
 *                       unit area-weighted RMS
 *   bred                bred vectors: dx_0 = a·ξ; `cycles` times: dx ← M(x+dx) − M(x) rescaled
 *                       per channel to RMS a; x + dx
 * Every member and channel draws from its own Philox stream (seed, 2 = the ensemble stream), so
 * the perturbations do not depend on the batch size or thread count. */
#ifndef WX_FORECAST_ENS_H
#define WX_FORECAST_ENS_H

/* The largest perturbation, in channel standard deviations, forecast --amplitude and daily's
 * ensemble.amplitude accept: far past any useful spread, well below where the model's output
 * overflows float (1e30 already gave 1e31 m/s winds). */
#define WX_AMPLITUDE_MAX 100.0

#include "infer/rollout.h"

typedef enum { WX_PERTURB_GAUSSIAN = 0, WX_PERTURB_SPHERICAL = 1, WX_PERTURB_BRED = 2 } wx_perturbation;

wx_status wx_perturbation_parse(const char *text, wx_perturbation *out);
/* "gaussian", "spherical-gaussian", "bred": the names parse takes. */
const char *wx_perturbation_name(wx_perturbation p);

/* One smooth random field of unit area-weighted RMS on grid g (any rows, north→south).
 * out: [g.nlat, g.nlon] */
void wx_spherical_gaussian_field(const wx_grid *g, uint64_t seed, uint64_t member, int channel,
                                 float *out);

/* Perturbs members 1..r->b−1 of the state set by wx_rollout_set_state (all b copies of one
 * initial state). Bred vectors run the model (cycles steps) and restore the step count. */
wx_status wx_forecast_perturb(wx_rollout *r, wx_perturbation kind, double amplitude, uint64_t seed,
                              int cycles);

#endif
