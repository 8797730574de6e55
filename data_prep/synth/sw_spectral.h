/* Spherical-harmonic transforms on a Gaussian grid with triangular truncation T.
 *
 * Convention: f(λ, μ) = Σ_n a_n0 P̄_n0(μ) + 2 Re Σ_{m≥1} Σ_n a_nm P̄_nm(μ) e^{imλ}, with P̄ normalised
 * so that ½∫₋₁¹ P̄_nm² dμ = 1 (a_00 is the global mean). μ = sin(latitude); Gaussian rows run
 * north→south; longitudes 0, 2π/nlon, ... Coefficients are stored m-major: index(m, n) =
 * off[m] + n − m, 0 ≤ m ≤ n ≤ T. Grids are row-major (nlat, nlon). */
#ifndef WX_SW_SPECTRAL_H
#define WX_SW_SPECTRAL_H

#include <complex.h>
#include <fftw3.h>

#include "core/wx_error.h"

typedef double complex wx_cplx;

typedef struct {
    int trunc;           /* T */
    int nlat, nlon;      /* Gaussian grid */
    int nh;              /* nlat / 2: rows per hemisphere (nlat is even) */
    int nspec;           /* (T+1)(T+2)/2 */
    double radius;       /* planet radius (m) */
    double *mu, *wts;    /* (nlat) sin(lat) north→south, Gauss weights (sum 2) */
    double *coslat;      /* (nlat) sqrt(1 − μ²) */
    int *off;            /* (T+1) start of order m in the coefficient vector */
    double *lap;         /* (nspec) −n(n+1)/a² */
    double *ilap;        /* (nspec) inverse Laplacian, 0 for n = 0 */
    double **p, **h;     /* [m] (nh, T+1−m): P̄_nm and (1−μ²) dP̄_nm/dμ on the northern rows */
    double *fbuf;        /* (nlon) real FFT buffer */
    fftw_complex *cbuf;  /* (nlon/2+1) */
    fftw_plan fwd, inv;
    wx_cplx *four;       /* (nlat, T+1) Fourier scratch */
    wx_cplx *four2;      /* (nlat, T+1) second Fourier scratch */
} wx_sw_spec;

/* nlon ≥ 3T+1 and nlat ≥ (3T+1)/2 (even) avoid aliasing of quadratic terms. */
wx_status wx_sw_spec_init(wx_sw_spec *s, int trunc, int nlat, int nlon, double radius);
void wx_sw_spec_free(wx_sw_spec *s);

/* grid (nlat, nlon) → coefficients (nspec). */
void wx_sw_spec_analyse(wx_sw_spec *s, const double *grid, wx_cplx *spec);
/* coefficients (nspec) → grid (nlat, nlon). */
void wx_sw_spec_synthesise(wx_sw_spec *s, const wx_cplx *spec, double *grid);
/* Coefficients of (1/(a(1−μ²))) ∂A/∂λ + (1/a) ∂B/∂μ, given grid a = A/(1−μ²), b = B/(1−μ²)
 * (nlat, nlon) each; B must vanish at the poles (it does for fluxes of V = v cos φ). */
void wx_sw_spec_analyse_div(wx_sw_spec *s, const double *a, const double *b, wx_cplx *spec);
/* U = u cos φ and V = v cos φ (nlat, nlon) from vorticity and divergence coefficients (nspec). */
void wx_sw_spec_uv(wx_sw_spec *s, const wx_cplx *vort, const wx_cplx *div, double *ucos,
                   double *vcos);

#endif
