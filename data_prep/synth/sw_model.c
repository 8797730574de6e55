#include "synth/sw_model.h"

#include <math.h>
#include <string.h>

#include "synth/sw_forcing.h"

#define DAY 86400.0

void wx_sw_params_default(wx_sw_params *p, int trunc, int nlat, int nlon) {
    memset(p, 0, sizeof *p);
    p->trunc = trunc;
    p->nlat = nlat;
    p->nlon = nlon;
    /* explicit advection limits the step; it must divide the 6-hour output step */
    double want = 3600.0 * 21.0 / trunc;
    int k = (int)ceil(21600.0 / want);
    p->dt = 21600.0 / k;
    p->depth = 2000;
    p->z_mean = 5600;
    p->jet_dh = 1000;
    p->jet_u = 50;
    p->jet_lat = 42;
    p->jet_swing = 8;
    p->jet_width = 6;
    p->tau_relax = 10 * DAY;
    p->tau_drag = 10 * DAY;
    p->tau_hdiff = 3 * 3600.0 * 21.0 / trunc;
    p->orog_scale = 0.2;
    p->diurnal_amp = 30;
    p->eddy_forcing = 1.5e-10;
    p->eddy_tau = 2 * DAY;
    p->seed = 1;
}

static double doy_at(const wx_sw_model *m, double t) { return fmod(m->year_phase0 + t / DAY, 365.0); }

/* phi_eq ← spectral coefficients of g·h_eq − g·H0 at time t. */
static void update_equilibrium(wx_sw_model *m, double t) {
    const wx_sw_params *p = &m->par;
    double doy = doy_at(m, t);
    for (int j = 0; j < p->nlat; j++) {
        double lat = asin(m->sp.mu[j]) * 180 / M_PI;
        double v = WX_SW_GRAV * (wx_sw_heq(lat, doy, p->depth, p->jet_dh, p->jet_lat,
                                           p->jet_swing, p->jet_width) - p->depth);
        for (int i = 0; i < p->nlon; i++) m->w1[j * p->nlon + i] = v;
    }
    wx_sw_spec_analyse(&m->sp, m->w1, m->phi_eq);
    /* ζ_eq = div(V=0, −U)/(…) with U = u_eq cos φ */
    for (int j = 0; j < p->nlat; j++) {
        double lat = asin(m->sp.mu[j]) * 180 / M_PI, c = m->sp.coslat[j];
        double u = wx_sw_ueq(lat, doy, p->jet_u, p->jet_lat, p->jet_swing, p->jet_width);
        for (int i = 0; i < p->nlon; i++) {
            m->w2[j * p->nlon + i] = 0;
            m->w3[j * p->nlon + i] = -u * c / (c * c);
        }
    }
    wx_sw_spec_analyse_div(&m->sp, m->w2, m->w3, m->vort_eq);
    /* the layer keeps its mass: only the shape of the profile is imposed */
    m->phi_eq[0] = 0;
}

/* One AR(1) update of the storm-track vorticity source: white noise in total wavenumbers
 * 6..min(T−2, 24), unit grid rms, shaped by Gaussian envelopes around both jets. It stands in for
 * the baroclinic eddy generation a one-layer model lacks; twins share it, so their divergence is
 * the flow's own instability. */
static void update_eddy_source(wx_sw_model *m, double t, double interval) {
    const wx_sw_params *p = &m->par;
    int T = p->trunc, nmax = T - 2 < 24 ? T - 2 : 24;
    for (int k = 0; k < m->nspec; k++) m->t5[k] = 0;
    for (int mm = 0; mm <= T; mm++)
        for (int n = mm; n <= T; n++) {
            double re = wx_rng_normal(&m->rng), im = wx_rng_normal(&m->rng);
            if (n < 6 || n > nmax || mm == 0) continue;
            m->t5[m->sp.off[mm] + n - mm] = re + I * im;
        }
    wx_sw_spec_synthesise(&m->sp, m->t5, m->w1);
    double ss = 0, ws = 0, doy = doy_at(m, t);
    for (int k = 0; k < m->ngrid; k++) {
        ss += m->sp.wts[k / p->nlon] * m->w1[k] * m->w1[k];
        ws += m->sp.wts[k / p->nlon];
    }
    double scale = ss > 0 ? 1 / sqrt(ss / ws) : 0;
    double s = cos(2 * M_PI * (doy - 15.0) / 365.0);
    for (int j = 0; j < p->nlat; j++) {
        double lat = asin(m->sp.mu[j]) * 180 / M_PI;
        double ln = p->jet_lat - p->jet_swing * s, ls = p->jet_lat + p->jet_swing * s;
        double en = (lat - ln) / 15, es = (lat + ls) / 15;
        double env = (1 + 0.3 * s) * exp(-en * en) + (1 - 0.3 * s) * exp(-es * es);
        for (int i = 0; i < p->nlon; i++) m->w1[j * p->nlon + i] *= scale * env;
    }
    wx_sw_spec_analyse(&m->sp, m->w1, m->t5);
    double r = exp(-interval / p->eddy_tau), c = sqrt(1 - r * r) * p->eddy_forcing;
    for (int k = 0; k < m->nspec; k++) m->eddy_f[k] = r * m->eddy_f[k] + c * m->t5[k];
    m->eddy_f[0] = 0;
}

wx_status wx_sw_model_init(wx_sw_model *m, const wx_sw_params *p, double t0_doy, double start_time) {
    memset(m, 0, sizeof *m);
    m->par = *p;
    WX_TRY(wx_sw_spec_init(&m->sp, p->trunc, p->nlat, p->nlon, WX_SW_RADIUS));
    int ns = m->nspec = m->sp.nspec, ng = m->ngrid = p->nlat * p->nlon;
    for (int k = 0; k < 2; k++) {
        m->vort[k] = wx_calloc(ns, sizeof(wx_cplx));
        m->div[k] = wx_calloc(ns, sizeof(wx_cplx));
        m->phi[k] = wx_calloc(ns, sizeof(wx_cplx));
        m->q[k] = wx_calloc(ns, sizeof(wx_cplx));
    }
    wx_cplx **sc[] = {&m->eddy_f, &m->vort_eq, &m->phi_eq, &m->phis_dyn, &m->t1, &m->t2, &m->t3, &m->t4, &m->t5};
    for (unsigned i = 0; i < sizeof sc / sizeof *sc; i++) *sc[i] = wx_calloc(ns, sizeof(wx_cplx));
    double **gr[] = {&m->orog, &m->gphis, &m->lsm, &m->ucos, &m->vcos, &m->gphi, &m->gq, &m->gvort,
                     &m->precip_acc, &m->w1, &m->w2, &m->w3, &m->w4};
    for (unsigned i = 0; i < sizeof gr / sizeof *gr; i++) *gr[i] = wx_calloc(ng, sizeof(double));
    m->lon = wx_malloc(sizeof(double) * p->nlon);
    for (int i = 0; i < p->nlon; i++) m->lon[i] = 2 * M_PI * i / p->nlon;
    m->year_phase0 = t0_doy;
    m->time = start_time;

    for (int j = 0; j < p->nlat; j++)
        for (int i = 0; i < p->nlon; i++) {
            double lat = asin(m->sp.mu[j]) * 180 / M_PI;
            wx_sw_geo_eval(lat, m->lon[i] * 180 / M_PI, &m->orog[j * p->nlon + i],
                           &m->lsm[j * p->nlon + i]);
            m->w1[j * p->nlon + i] = WX_SW_GRAV * p->orog_scale * m->orog[j * p->nlon + i];
        }
    wx_sw_spec_analyse(&m->sp, m->w1, m->phis_dyn);
    /* Gibbs ringing of the steep ranges is damped by a smooth spectral filter */
    int T = p->trunc;
    for (int mm = 0; mm <= T; mm++)
        for (int n = mm; n <= T; n++) {
            double x = (double)n / (T + 1);
            m->phis_dyn[m->sp.off[mm] + n - mm] *= exp(-4 * x * x * x * x);
        }
    wx_sw_spec_synthesise(&m->sp, m->phis_dyn, m->gphis);
    update_equilibrium(m, m->time);
    wx_rng_init(&m->rng, p->seed, 2);
    for (int k = 0; k < 8; k++) update_eddy_source(m, m->time, 21600.0);

    /* from rest with a flat free surface, seeded vorticity noise at synoptic scales */
    wx_rng init_rng;
    wx_rng_init(&init_rng, p->seed, 3);
    for (int mm = 0; mm <= T; mm++)
        for (int n = mm; n <= T; n++) {
            if (n < 4 || n > 20) continue;
            double re = 2 * wx_rng_uniform(&init_rng) - 1, im = mm ? 2 * wx_rng_uniform(&init_rng) - 1 : 0;
            m->vort[1][m->sp.off[mm] + n - mm] = 2e-6 * (re + I * im);
        }
    for (int j = 0; j < p->nlat; j++)
        for (int i = 0; i < p->nlon; i++) m->w1[j * p->nlon + i] = 0.6 * wx_sw_qsat(wx_sw_t850(p->depth, p->depth));
    wx_sw_spec_analyse(&m->sp, m->w1, m->q[1]);
    for (int k = 0; k < ns; k++) {
        m->vort[0][k] = m->vort[1][k];
        m->q[0][k] = m->q[1][k];
    }
    wx_sw_model_grid(m);
    return WX_OK;
}

void wx_sw_model_free(wx_sw_model *m) {
    for (int k = 0; k < 2; k++) {
        free(m->vort[k]);
        free(m->div[k]);
        free(m->phi[k]);
        free(m->q[k]);
    }
    wx_cplx *sc[] = {m->eddy_f, m->vort_eq, m->phi_eq, m->phis_dyn, m->t1, m->t2, m->t3, m->t4, m->t5};
    for (unsigned i = 0; i < sizeof sc / sizeof *sc; i++) free(sc[i]);
    double *gr[] = {m->orog, m->gphis, m->lsm, m->ucos, m->vcos, m->gphi, m->gq, m->gvort, m->precip_acc,
                    m->w1, m->w2, m->w3, m->w4, m->lon};
    for (unsigned i = 0; i < sizeof gr / sizeof *gr; i++) free(gr[i]);
    wx_sw_spec_free(&m->sp);
    memset(m, 0, sizeof *m);
}

void wx_sw_model_grid(wx_sw_model *m) {
    wx_sw_spec_uv(&m->sp, m->vort[1], m->div[1], m->ucos, m->vcos);
    wx_sw_spec_synthesise(&m->sp, m->vort[1], m->gvort);
    wx_sw_spec_synthesise(&m->sp, m->phi[1], m->gphi);
    wx_sw_spec_synthesise(&m->sp, m->q[1], m->gq);
}

void wx_sw_model_perturb(wx_sw_model *m, double rel) {
    double g0 = WX_SW_GRAV * m->par.depth;
    for (int k = 0; k < 2; k++) {
        wx_sw_spec_synthesise(&m->sp, m->phi[k], m->w1);
        for (int i = 0; i < m->ngrid; i++) m->w1[i] = (m->w1[i] + g0) * (1 + rel) - g0;
        wx_sw_spec_analyse(&m->sp, m->w1, m->phi[k]);
    }
    wx_sw_model_grid(m);
}

void wx_sw_model_ke_spectrum(const wx_sw_model *m, double *ke) {
    int T = m->par.trunc;
    double a2 = WX_SW_RADIUS * WX_SW_RADIUS;
    for (int n = 0; n <= T; n++) ke[n] = 0;
    for (int mm = 0; mm <= T; mm++)
        for (int n = mm > 0 ? mm : 1; n <= T; n++) {
            int k = m->sp.off[mm] + n - mm;
            double w = mm ? 2.0 : 1.0;
            double z = creal(m->vort[1][k] * conj(m->vort[1][k])) +
                       creal(m->div[1][k] * conj(m->div[1][k]));
            ke[n] += 0.5 * w * a2 / (n * (n + 1.0)) * z;
        }
}

/* Grid-space nonlinear terms and physics at the current level; leaves the explicit tendencies
 * in t1 (vorticity), t2 (divergence), t3 (height), t4 (moisture). */
static void tendencies(wx_sw_model *m) {
    const wx_sw_params *p = &m->par;
    wx_sw_spec *sp = &m->sp;
    int nx = p->nlon;
    double doy = doy_at(m, m->time), utc = fmod(m->time, DAY);
    if (utc < 0) utc += DAY;
    wx_sw_model_grid(m);
    /* absolute-vorticity fluxes (U η, V η)/(1 − μ²) and kinetic energy */
    for (int j = 0; j < p->nlat; j++) {
        double r = 1.0 / (1 - sp->mu[j] * sp->mu[j]), f = 2 * WX_SW_OMEGA * sp->mu[j];
        for (int i = 0; i < nx; i++) {
            int k = j * nx + i;
            double eta = m->gvort[k] + f, u = m->ucos[k], v = m->vcos[k];
            m->w1[k] = u * eta * r;
            m->w2[k] = v * eta * r;
            m->w3[k] = 0.5 * (u * u + v * v) * r;
        }
    }
    wx_sw_spec_analyse_div(sp, m->w1, m->w2, m->t1);
    for (int k = 0; k < m->ngrid; k++) m->w4[k] = -m->w1[k];
    wx_sw_spec_analyse_div(sp, m->w2, m->w4, m->t2);
    wx_sw_spec_analyse(sp, m->w3, m->t5);
    for (int k = 0; k < m->nspec; k++) {
        m->t1[k] = -m->t1[k];
        m->t2[k] -= sp->lap[k] * m->t5[k]; /* −∇²E */
    }
    /* mass flux of the layer anomaly (Φ' − Φs) v and of moisture q v */
    for (int j = 0; j < p->nlat; j++) {
        double r = 1.0 / (1 - sp->mu[j] * sp->mu[j]);
        for (int i = 0; i < nx; i++) {
            int k = j * nx + i;
            double h = m->gphi[k] - m->gphis[k];
            m->w1[k] = m->ucos[k] * h * r;
            m->w2[k] = m->vcos[k] * h * r;
        }
    }
    wx_sw_spec_analyse_div(sp, m->w1, m->w2, m->t3);
    for (int k = 0; k < m->ngrid; k++) {
        double r = 1.0 / (1 - sp->mu[k / nx] * sp->mu[k / nx]);
        m->w1[k] = m->ucos[k] * m->gq[k] * r;
        m->w2[k] = m->vcos[k] * m->gq[k] * r;
    }
    wx_sw_spec_analyse_div(sp, m->w1, m->w2, m->t4);
    /* diurnal heating (height source following the sun, stronger over land) and moisture
     * sources: evaporation toward 90 % of saturation, condensation above 85 % */
    const double tau_e = 1.0 * DAY, tau_c = 3 * 3600.0;
    double q0 = 0;
    for (int j = 0; j < p->nlat; j++) {
        double lat = asin(sp->mu[j]);
        for (int i = 0; i < nx; i++) {
            int k = j * nx + i;
            double land = m->lsm[k];
            double cz = wx_sw_cos_zenith(lat, m->lon[i], doy, utc);
            m->w1[k] = WX_SW_GRAV * p->diurnal_amp / DAY * (0.3 + 0.7 * land) * (cz - 1 / M_PI);
            double z = (m->gphi[k]) / WX_SW_GRAV + p->depth;
            double qs = wx_sw_qsat(wx_sw_t850(z, p->depth));
            double q = m->gq[k] > 0 ? m->gq[k] : 0;
            double evap = (0.9 * qs - q) / tau_e * (1 - 0.85 * land);
            if (evap < 0) evap = 0;
            double cond = (q - 0.85 * qs) / tau_c;
            if (cond < 0) cond = 0;
            m->w2[k] = evap - cond;
            m->precip_acc[k] += cond * p->dt;
            q0 += evap;
        }
    }
    (void)q0;
    wx_sw_spec_analyse(sp, m->w1, m->t5);
    m->t5[0] = 0; /* heating redistributes mass, never adds it */
    for (int k = 0; k < m->nspec; k++) m->t3[k] = -m->t3[k] + m->t5[k];
    wx_sw_spec_analyse(sp, m->w2, m->t5);
    for (int k = 0; k < m->nspec; k++) m->t4[k] = -m->t4[k] + m->t5[k];
}

wx_status wx_sw_model_step(wx_sw_model *m) {
    const wx_sw_params *p = &m->par;
    wx_sw_spec *sp = &m->sp;
    int T = p->trunc;
    /* the first step is a forward step of dt (leapfrog from identical levels with dt/2) */
    double dt = m->nsteps == 0 ? 0.5 * p->dt : p->dt;
    if (m->nsteps % (int64_t)llround(21600.0 / p->dt) == 0) {
        update_equilibrium(m, m->time);
        update_eddy_source(m, m->time, 21600.0);
    }
    tendencies(m);
    double pbar = WX_SW_GRAV * p->depth, a2 = 1.0 / (WX_SW_RADIUS * WX_SW_RADIUS);
    double nt = (double)T * (T + 1);
    for (int mm = 0; mm <= T; mm++)
        for (int n = mm; n <= T; n++) {
            int k = sp->off[mm] + n - mm;
            double L = n * (n + 1.0) * a2;
            wx_cplx zm = m->vort[0][k], dm = m->div[0][k], pm = m->phi[0][k], qm = m->q[0][k];
            wx_cplx nz = m->t1[k] - (zm - m->vort_eq[k]) / p->tau_drag + m->eddy_f[k];
            wx_cplx nd = m->t2[k] - dm / p->tau_drag;
            wx_cplx np = m->t3[k] + (m->phi_eq[k] - pm) / p->tau_relax;
            wx_cplx zn = zm + 2 * dt * nz;
            wx_cplx dn = (dm * (1 - dt * dt * L * pbar) + 2 * dt * (nd + L * pm + dt * L * np)) /
                         (1 + dt * dt * L * pbar);
            wx_cplx pn = pm + 2 * dt * np - dt * pbar * (dn + dm);
            wx_cplx qn = qm + 2 * dt * m->t4[k];
            double x = n * (n + 1.0) / nt, hd = 1.0 / (1 + 2 * dt * x * x * x * x / p->tau_hdiff);
            zn *= hd;
            dn *= hd;
            pn *= hd;
            qn *= hd;
            /* Robert–Asselin filter of the current level, then shift */
            const double ra = 0.05;
            m->vort[0][k] = m->vort[1][k] + ra * (zm - 2 * m->vort[1][k] + zn);
            m->div[0][k] = m->div[1][k] + ra * (dm - 2 * m->div[1][k] + dn);
            m->phi[0][k] = m->phi[1][k] + ra * (pm - 2 * m->phi[1][k] + pn);
            m->q[0][k] = m->q[1][k] + ra * (qm - 2 * m->q[1][k] + qn);
            m->vort[1][k] = zn;
            m->div[1][k] = dn;
            m->phi[1][k] = pn;
            m->q[1][k] = qn;
        }
    m->time += p->dt;
    m->nsteps++;
    for (int k = 0; k <= T; k++) {
        double v = creal(m->vort[1][k]) + creal(m->phi[1][k]) + creal(m->div[1][k]);
        if (!isfinite(v))
            return wx_error_set(WX_ERR_RUN,
                                "synth: model state became non-finite at step %lld (T%d, dt %.0f s)",
                                (long long)m->nsteps, T, p->dt);
    }
    return WX_OK;
}
