/* Spherical-harmonic transforms on a Gaussian grid with triangular truncation T.
 *
 * Convention: f(λ, μ) = Σ_n a_n0 P̄_n0(μ) + 2 Re Σ_{m≥1} Σ_n a_nm P̄_nm(μ) e^{imλ}, with P̄ normalised
 * so that ½∫₋₁¹ P̄_nm² dμ = 1 (a_00 is the global mean). μ = sin(latitude); Gaussian rows run
 * north→south; longitudes 0, 2π/nlon, ... Coefficients are stored m-major: index(m, n) =
 * off[m] + n − m, 0 ≤ m ≤ n ≤ T. Grids are row-major (nlat, nlon).
 *
 * Speed: the model transforms ~20 fields per step, so the work is batched. The Legendre sums of
 * all fields of a batch are one DGEMM per order m and parity (the P̄ and H tables are split into
 * even and odd n − m, which equatorial symmetry makes the only distinction between the two
 * hemispheres), and the longitudes are one FFTW many-plan over the nlat rows of a field. */
#ifndef WX_SW_SPECTRAL_H
#define WX_SW_SPECTRAL_H

#include <complex.h>
#include <fftw3.h>

#include "core/wx_error.h"

typedef double complex wx_cplx;

#define WX_SW_BATCH_MAX 24 /* fields per internal batch; larger batches are split */

typedef struct {
    int trunc;           /* T */
    int nlat, nlon;      /* Gaussian grid */
    int nh;              /* nlat / 2: rows per hemisphere (nlat is even) */
    int nf2;             /* nlon / 2 + 1: Fourier coefficients per row */
    int nspec;           /* (T+1)(T+2)/2 */
    double radius;       /* planet radius (m) */
    double *mu, *wts;    /* (nlat) sin(lat) north→south, Gauss weights (sum 2) */
    double *coslat;      /* (nlat) sqrt(1 − μ²) */
    int *off;            /* (T+1) start of order m in the coefficient vector */
    double *lap;         /* (nspec) −n(n+1)/a² */
    double *ilap;        /* (nspec) inverse Laplacian, 0 for n = 0 */
    /* [m] (nh, ceil(cnt/2)) and (nh, floor(cnt/2)), cnt = T+1−m, on the northern rows:
     * P̄_nm and H_nm = (1−μ²) dP̄_nm/dμ for even (e) and odd (o) n − m */
    double **pe, **po, **he, **ho;
    fftw_plan fwd, inv;  /* nlat rows of one field, unaligned arrays allowed */
    fftw_complex *four;  /* (BATCH_MAX, nlat, nf2) Fourier scratch */
    fftw_complex *four2; /* (BATCH_MAX, nlat, nf2) second Fourier scratch (H parts) */
    double *ca, *cb;     /* (T+1, 2·BATCH_MAX) staged coefficients of one order */
    double *sym, *anti;  /* (nh, 2·BATCH_MAX) hemispheric sums and differences */
} wx_sw_spec;

/* One field of a synthesis batch: grid = Σ p_nm P̄_nm e^{imλ} + Σ h_nm H_nm e^{imλ} (p or h may be
 * NULL). */
typedef struct {
    const wx_cplx *p, *h; /* (nspec) each */
    double *grid;         /* (nlat, nlon) output */
} wx_sw_synth_item;

/* One field of an analysis batch. b == NULL: spec = coefficients of a. Otherwise spec =
 * coefficients of (1/(a(1−μ²))) ∂A/∂λ + (1/a) ∂B/∂μ given a = A/(1−μ²), b = ±B/(1−μ²) (−
 * when neg_b); B must vanish at the poles (it does for fluxes of V = v cos φ). A grid named
 * by several items of a batch is Fourier-transformed once. */
typedef struct {
    const double *a, *b; /* (nlat, nlon) each */
    wx_cplx *spec;       /* (nspec) output */
    int neg_b;           /* 1: use −b */
} wx_sw_anal_item;

/* nlon ≥ 3T+1 and nlat ≥ (3T+1)/2 (even) avoid aliasing of quadratic terms. */
wx_status wx_sw_spec_init(wx_sw_spec *s, int trunc, int nlat, int nlon, double radius);
void wx_sw_spec_free(wx_sw_spec *s);

/* Batched transforms of nf fields (any number; outputs must not alias inputs). */
void wx_sw_spec_synth_many(wx_sw_spec *s, int nf, const wx_sw_synth_item *items);
void wx_sw_spec_anal_many(wx_sw_spec *s, int nf, const wx_sw_anal_item *items);

/* Single-field forms of the above. grid (nlat, nlon) ↔ coefficients (nspec). */
void wx_sw_spec_analyse(wx_sw_spec *s, const double *grid, wx_cplx *spec);
void wx_sw_spec_synthesise(wx_sw_spec *s, const wx_cplx *spec, double *grid);
void wx_sw_spec_analyse_div(wx_sw_spec *s, const double *a, const double *b, wx_cplx *spec);
/* Coefficients (nspec each) whose synthesis (P part cp, H part ch) gives U = u cos φ and
 * V = v cos φ from vorticity and divergence (nspec each). */
void wx_sw_spec_uv_coef(const wx_sw_spec *s, const wx_cplx *vort, const wx_cplx *div,
                        wx_cplx *ucp, wx_cplx *uch, wx_cplx *vcp, wx_cplx *vch);
/* U = u cos φ and V = v cos φ (nlat, nlon) from vorticity and divergence coefficients (nspec). */
void wx_sw_spec_uv(wx_sw_spec *s, const wx_cplx *vort, const wx_cplx *div, double *ucos,
                   double *vcos);

#endif
