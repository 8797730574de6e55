/* The forced two-layer shallow-water world: two immiscible layers of different density on the
 * sphere (the lighter "upper troposphere" over the heavier "lower troposphere"), each with
 * vorticity, divergence and thickness, plus a column moisture tracer carried by the lower layer.
 * Heating is a mass transfer between the layers: relaxation of the upper-layer thickness toward
 * a seasonal radiative-equilibrium profile keeps a meridional temperature gradient (a vertical
 * shear in thermal wind balance) that baroclinic instability keeps releasing into eddies, so the
 * flow is chaotic with synoptic growth rates. Semi-implicit leapfrog (both gravity-wave modes),
 * Robert–Asselin filter, implicit ∇⁸ hyperdiffusion. Choices and measurements: docs/synth.md. */
#ifndef WX_SW_MODEL_H
#define WX_SW_MODEL_H

#include <stdint.h>

#include "core/wx_rng.h"
#include "synth/sw_spectral.h"

#define WX_SW_NLAYER 2 /* 0 = upper (light), 1 = lower (dense) */

typedef struct {
    int trunc, nlat, nlon; /* spectral truncation and Gaussian grid */
    double dt;             /* seconds; must divide 6 h */
    double depth[WX_SW_NLAYER]; /* mean layer thicknesses (m) */
    double g_red;          /* reduced gravity of the interface (m s⁻²): sets the Rossby radius */
    double z_mean;         /* mean z500 height (m) the output adds to the anomaly */
    double z_weight;       /* z500 = (1 − w) M_lower + w M_upper (Montgomery potentials) */
    double t_scale;        /* thickness geopotential g'·h per kelvin of t850 (m² s⁻² K⁻¹) */
    double teq_dh;         /* equator-to-pole drop of the equilibrium upper thickness (m) */
    double jet_lat;        /* mean latitude of the equilibrium baroclinic zone (degrees) */
    double jet_swing;      /* its seasonal excursion (degrees) */
    double jet_width;      /* its half-width (degrees) */
    double tau_rad;        /* radiative relaxation time of the upper thickness (s) */
    double tau_drag[WX_SW_NLAYER]; /* Rayleigh drag toward rest (s) */
    double tau_hdiff;      /* ∇⁸ e-folding time at wavenumber T (s) */
    double orog_scale;     /* fraction of the orography height the lower layer feels */
    double diurnal_amp;    /* diurnal heating amplitude (m/day of thickness) over land */
    /* Optional physics (0 = off, the defaults; docs/synth.md "More chaos"): latent heating moves
     * `latent` m of thickness from the lower to the upper layer per kg m⁻² condensed, low-passed
     * in space (Gaussian filter e^{-(n/latent_n)²}) and relaxed in time (latent_tau s), global
     * mean removed; a layer thinner than h_min is refilled from the other one within tau_hmin s
     * (where an isentrope would meet the ground), so a thin lower layer can carry a steep
     * interface without vanishing. */
    double latent, latent_tau, latent_n;
    double h_min, tau_hmin;
    /* Triggered moist convection (0 = off; docs/synth.md "Convection"): a column whose moisture
     * exceeds conv_rh × saturation rains conv_rate kg m⁻² s⁻¹ and moves conv_heat m of thickness
     * per kg m⁻² from the lower to the upper layer, optionally low-passed (e^{-(n/conv_n)²}). The
     * switch is a threshold, as convection starts: twins that differ by 1e-6 soon convect in
     * different columns, which is how the atmosphere's errors grow fastest at small scales. */
    double conv_rate, conv_rh, conv_heat, conv_n;
    /* Evaporation brings q toward 90 % of saturation within tau_evap s (1 day by default;
     * docs/synth.md "Convection, drier"): with a low convection trigger the rain is set by how
     * fast the sea refills the columns, so a longer time gives a drier world. */
    double tau_evap;
    uint64_t seed;
} wx_sw_params;

/* Defaults for truncation T on an nlat×nlon Gaussian grid. */
void wx_sw_params_default(wx_sw_params *p, int trunc, int nlat, int nlon);

typedef struct {
    wx_sw_params par;
    wx_sw_spec sp;
    int nspec, ngrid;
    /* two time levels (previous 0, current 1) of each prognostic, spectral (nspec) */
    wx_cplx *vort[2][WX_SW_NLAYER], *div[2][WX_SW_NLAYER], *h[2][WX_SW_NLAYER], *q[2];
    wx_cplx *heq;           /* (nspec) equilibrium upper-thickness anomaly */
    wx_cplx *lheat;         /* (nspec) relaxed latent heating (m s⁻¹ of thickness) */
    wx_cplx *orog_phi;      /* (nspec) g·(orography felt by the lower layer) */
    wx_cplx *tend;          /* (12, nspec) explicit tendencies and transform scratch */
    wx_cplx *coef;          /* (8, nspec) wind coefficients */
    double *orog;           /* (nlat, nlon) true orography height (m) */
    double *lsm;            /* (nlat, nlon) land fraction 0..1 */
    double *lon;            /* (nlon) radians */
    double *f_cor;          /* (nlat) 2Ω μ */
    double *rcos2;          /* (nlat) 1 / (1 − μ²) */
    /* grid fields of the current level, refreshed by wx_sw_model_grid (nlat, nlon) */
    double *ucos[WX_SW_NLAYER], *vcos[WX_SW_NLAYER], *gvort[WX_SW_NLAYER], *gh[WX_SW_NLAYER];
    double *gq;
    double *gorog;          /* (nlat, nlon) grid of orog_phi / g */
    double *precip_acc;     /* (nlat, nlon) condensation accumulated since the last reset (kg m⁻²) */
    double *work;           /* (16, nlat, nlon) grid scratch */
    double *w1, *w2;        /* two slices of work free for the diagnostics */
    double time;            /* model seconds since the start of the output period */
    double year_phase0;     /* day of year (0..365) at time 0 */
    int64_t nsteps;
} wx_sw_model;

/* t0_doy: day of the 365-day year (fractional) at model time 0. The model starts from rest with
 * flat interfaces plus seeded vorticity noise. */
wx_status wx_sw_model_init(wx_sw_model *m, const wx_sw_params *p, double t0_doy, double start_time);
void wx_sw_model_free(wx_sw_model *m);
/* Advances one step of par.dt; fails (WX_ERR_RUN) if the state stops being finite. */
wx_status wx_sw_model_step(wx_sw_model *m);
/* Multiplies both layer thicknesses of both time levels by (1 + rel) at every grid point
 * (twin-run experiments). */
void wx_sw_model_perturb(wx_sw_model *m, double rel);
/* dst ← an independent copy of src (same parameters, geography and state, both time levels),
 * so that twins can be run from one spin-up. */
wx_status wx_sw_model_clone(wx_sw_model *dst, const wx_sw_model *src);
/* Area-weighted rms difference of the z500 anomalies of a and b with their global means
 * removed (m² s⁻², double precision on the Gaussian grid); refreshes both grids. za, zb:
 * (nlat, nlon) scratch. */
double wx_sw_model_z500_diff(wx_sw_model *a, wx_sw_model *b, double *za, double *zb);
/* Refreshes ucos, vcos, gvort, gh, gq from the current spectral state. */
void wx_sw_model_grid(wx_sw_model *m);
/* z500 geopotential anomaly (m² s⁻²) of the grid fields (nlat, nlon) last refreshed. */
void wx_sw_model_z500(const wx_sw_model *m, double *z);
/* Kinetic energy per total wavenumber n = 0..T of the current state, mass-weighted mean of the
 * layers (J kg⁻¹). */
void wx_sw_model_ke_spectrum(const wx_sw_model *m, double *ke /*(T+1)*/);

#define WX_SW_GRAV 9.80665
#define WX_SW_RADIUS 6.371e6
#define WX_SW_OMEGA 7.292e-5

#endif
