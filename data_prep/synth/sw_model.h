/* The forced shallow-water world: vorticity, divergence, free-surface geopotential and a column
 * moisture tracer, semi-implicit leapfrog with a Robert–Asselin filter and ∇⁸ hyperdiffusion.
 * Physics and parameter choices are described in docs/synth.md. */
#ifndef WX_SW_MODEL_H
#define WX_SW_MODEL_H

#include <stdint.h>

#include "core/wx_rng.h"
#include "synth/sw_spectral.h"

typedef struct {
    int trunc, nlat, nlon; /* spectral truncation and Gaussian grid */
    double dt;             /* seconds; must divide 6 h */
    double depth;          /* mean layer depth (m): sets the gravity-wave speed and Rossby radius */
    double z_mean;         /* mean z500 height (m) the output adds to the height anomaly */
    double jet_dh;         /* equator-to-pole drop of the equilibrium height (m) */
    double jet_u;          /* peak speed of the equilibrium jets (m/s) */
    double jet_lat;        /* mean jet latitude (degrees) */
    double jet_swing;      /* seasonal excursion of the jet latitude (degrees) */
    double jet_width;      /* jet half-width (degrees) */
    double tau_relax;      /* height relaxation time (s) */
    double tau_drag;       /* Rayleigh drag time toward the equilibrium jets (s) */
    double tau_hdiff;      /* ∇⁸ e-folding time at wavenumber T (s) */
    double orog_scale;     /* fraction of the orography height the layer feels */
    double diurnal_amp;    /* diurnal height forcing amplitude (m/day) over land */
    double eddy_forcing;   /* rms vorticity source of the storm tracks (s⁻²) */
    double eddy_tau;       /* its decorrelation time (s) */
    uint64_t seed;
} wx_sw_params;

/* Defaults for truncation T on an nlat×nlon Gaussian grid. */
void wx_sw_params_default(wx_sw_params *p, int trunc, int nlat, int nlon);

typedef struct {
    wx_sw_params par;
    wx_sw_spec sp;
    int nspec, ngrid;
    /* two time levels (previous, current) of each prognostic, spectral (nspec) */
    wx_cplx *vort[2], *div[2], *phi[2], *q[2];
    wx_cplx *vort_eq;       /* (nspec) equilibrium vorticity (zonal jets) */
    wx_cplx *eddy_f;        /* (nspec) seeded red-noise vorticity source (synoptic band) */
    wx_rng rng;
    wx_cplx *phi_eq;        /* (nspec) equilibrium free-surface geopotential (zonal) */
    wx_cplx *phis_dyn;      /* (nspec) surface geopotential felt by the layer */
    double *orog;           /* (nlat, nlon) true orography height (m) */
    double *gphis;          /* (nlat, nlon) grid of phis_dyn */
    double *lsm;            /* (nlat, nlon) land fraction 0..1 */
    double *lon;            /* (nlon) radians */
    /* grid diagnostics of the current level, refreshed each step (nlat, nlon) */
    double *ucos, *vcos, *gphi, *gq, *gvort;
    double *precip_acc;     /* (nlat, nlon) condensation accumulated since the last reset (kg m⁻²) */
    double *w1, *w2, *w3, *w4; /* grid scratch */
    wx_cplx *t1, *t2, *t3, *t4, *t5; /* spectral scratch */
    double time;            /* model seconds since the start of the output period */
    double year_phase0;     /* day of year (0..365) at time 0 */
    int64_t nsteps;
} wx_sw_model;

/* t0_doy: day of the 365-day year (fractional) at model time 0. The model starts from rest at
 * the equilibrium height plus seeded noise. */
wx_status wx_sw_model_init(wx_sw_model *m, const wx_sw_params *p, double t0_doy, double start_time);
void wx_sw_model_free(wx_sw_model *m);
/* Advances one step of par.dt; fails (WX_ERR_RUN) if the state stops being finite. */
wx_status wx_sw_model_step(wx_sw_model *m);
/* Multiplies the height anomaly of the current state by (1 + rel) at every grid point
 * (twin-run experiments). */
void wx_sw_model_perturb(wx_sw_model *m, double rel);
/* Refreshes ucos, vcos, gphi, gq, gvort from the current spectral state. */
void wx_sw_model_grid(wx_sw_model *m);
/* Kinetic energy per total wavenumber n = 0..T of the current state (J kg⁻¹ per unit mass). */
void wx_sw_model_ke_spectrum(const wx_sw_model *m, double *ke /*(T+1)*/);

#define WX_SW_GRAV 9.80665
#define WX_SW_RADIUS 6.371e6
#define WX_SW_OMEGA 7.292e-5

#endif
