#include "synth/sw_model.h"

#include <math.h>
#include <string.h>

#include "synth/sw_forcing.h"

#define DAY 86400.0
#define NTEND 13
#define NWORK 21

void wx_sw_params_default(wx_sw_params *p, int trunc, int nlat, int nlon) {
    memset(p, 0, sizeof *p);
    p->trunc = trunc;
    p->nlat = nlat;
    p->nlon = nlon;
    /* explicit advection limits the step (gravity waves are implicit); it must divide 6 h.
     * T42: 2400 s (jets near 60 m/s give an advective Courant number u·dt·T/a ≈ 0.95); T42 ran
     * 300 days stable even at 2700 s, T21 400 days at 4320 s. */
    double want = 4800.0 * 21.0 / trunc;
    int k = (int)ceil(21600.0 / want);
    p->dt = 21600.0 / k;
    /* a thin lower layer lowers the critical shear of baroclinic instability (β g' H_lower / f²) */
    p->depth[0] = 7000;
    p->depth[1] = 3000;
    /* internal gravity-wave speed √(g' H0 H1 / (H0 + H1)) = 60 m/s: Rossby radius ≈ 580 km at 45° */
    p->g_red = 60.0 * 60.0 * (p->depth[0] + p->depth[1]) / (p->depth[0] * p->depth[1]);
    p->z_mean = 5600;
    p->z_weight = 0.5;
    p->t_scale = 0;   /* set below from the equilibrium contrast */
    p->teq_dh = 6000;
    p->jet_lat = 45;
    p->jet_swing = 8;
    p->jet_width = 12;
    /* 45 K between equator and pole in radiative equilibrium */
    p->t_scale = p->g_red * p->teq_dh / 45.0;
    p->tau_rad = 6 * DAY;
    p->tau_drag[0] = 40 * DAY;
    p->tau_drag[1] = 5 * DAY;
    p->tau_hdiff = 3 * 3600.0 * 21.0 / trunc;
    p->orog_scale = 0.2;
    p->diurnal_amp = 100;
    p->tau_evap = DAY;
    p->seed = 1;
}

static double doy_at(const wx_sw_model *m, double t) { return fmod(m->year_phase0 + t / DAY, 365.0); }

/* heq ← spectral coefficients of the equilibrium upper-thickness anomaly at time t (zero mean:
 * the forcing moves mass between the layers, never creates it). */
static void update_equilibrium(wx_sw_model *m, double t) {
    const wx_sw_params *p = &m->par;
    double doy = doy_at(m, t), *g = m->work;
    for (int j = 0; j < p->nlat; j++) {
        double lat = asin(m->sp.mu[j]) * 180 / M_PI;
        double v = wx_sw_heq(lat, doy, 0, p->teq_dh, p->jet_lat, p->jet_swing, p->jet_width);
        for (int i = 0; i < p->nlon; i++) g[j * p->nlon + i] = v;
    }
    wx_sw_spec_analyse(&m->sp, g, m->heq);
    m->heq[0] = 0;
}

wx_status wx_sw_model_init(wx_sw_model *m, const wx_sw_params *p, double t0_doy, double start_time) {
    memset(m, 0, sizeof *m);
    m->par = *p;
    WX_TRY(wx_sw_spec_init(&m->sp, p->trunc, p->nlat, p->nlon, WX_SW_RADIUS));
    int ns = m->nspec = m->sp.nspec, ng = m->ngrid = p->nlat * p->nlon;
    for (int k = 0; k < 2; k++) {
        for (int l = 0; l < WX_SW_NLAYER; l++) {
            m->vort[k][l] = wx_calloc(ns, sizeof(wx_cplx));
            m->div[k][l] = wx_calloc(ns, sizeof(wx_cplx));
            m->h[k][l] = wx_calloc(ns, sizeof(wx_cplx));
        }
        m->q[k] = wx_calloc(ns, sizeof(wx_cplx));
    }
    m->heq = wx_calloc(ns, sizeof(wx_cplx));
    m->lheat = wx_calloc(ns, sizeof(wx_cplx));
    m->orog_phi = wx_calloc(ns, sizeof(wx_cplx));
    m->tend = wx_calloc((size_t)NTEND * ns, sizeof(wx_cplx));
    m->coef = wx_calloc((size_t)8 * ns, sizeof(wx_cplx));
    double **gr[] = {&m->orog, &m->lsm, &m->gq, &m->gorog, &m->precip_acc, &m->ucos[0], &m->ucos[1],
                     &m->vcos[0], &m->vcos[1], &m->gvort[0], &m->gvort[1], &m->gh[0], &m->gh[1]};
    for (unsigned i = 0; i < sizeof gr / sizeof *gr; i++) *gr[i] = wx_calloc(ng, sizeof(double));
    m->work = wx_calloc((size_t)NWORK * ng, sizeof(double));
    m->w1 = m->work;
    m->w2 = m->work + ng;
    m->lon = wx_malloc(sizeof(double) * p->nlon);
    m->f_cor = wx_malloc(sizeof(double) * p->nlat);
    m->rcos2 = wx_malloc(sizeof(double) * p->nlat);
    for (int i = 0; i < p->nlon; i++) m->lon[i] = 2 * M_PI * i / p->nlon;
    for (int j = 0; j < p->nlat; j++) {
        m->f_cor[j] = 2 * WX_SW_OMEGA * m->sp.mu[j];
        m->rcos2[j] = 1.0 / (1 - m->sp.mu[j] * m->sp.mu[j]);
    }
    m->year_phase0 = t0_doy;
    m->time = start_time;

    for (int j = 0; j < p->nlat; j++)
        for (int i = 0; i < p->nlon; i++) {
            double lat = asin(m->sp.mu[j]) * 180 / M_PI;
            int k = j * p->nlon + i;
            wx_sw_geo_eval(lat, m->lon[i] * 180 / M_PI, &m->orog[k], &m->lsm[k]);
            m->w1[k] = WX_SW_GRAV * p->orog_scale * m->orog[k];
        }
    wx_sw_spec_analyse(&m->sp, m->w1, m->orog_phi);
    /* Gibbs ringing of the steep ranges is damped by a smooth spectral filter */
    int T = p->trunc;
    for (int mm = 0; mm <= T; mm++)
        for (int n = mm; n <= T; n++) {
            double x = (double)n / (T + 1);
            m->orog_phi[m->sp.off[mm] + n - mm] *= exp(-4 * x * x * x * x);
        }
    wx_sw_spec_synthesise(&m->sp, m->orog_phi, m->gorog);
    for (int k = 0; k < ng; k++) m->gorog[k] /= WX_SW_GRAV;
    update_equilibrium(m, m->time);

    /* from rest with a flat free surface and flat interface (the lower layer is thinner over
     * the mountains), seeded vorticity noise at synoptic scales in both layers */
    wx_rng init_rng;
    wx_rng_init(&init_rng, p->seed, 3);
    for (int l = 0; l < WX_SW_NLAYER; l++)
        for (int mm = 0; mm <= T; mm++)
            for (int n = mm; n <= T; n++) {
                double re = 2 * wx_rng_uniform(&init_rng) - 1;
                double im = mm ? 2 * wx_rng_uniform(&init_rng) - 1 : 0;
                if (n < 4 || n > 20) continue;
                m->vort[1][l][m->sp.off[mm] + n - mm] = 2e-6 * (re + I * im);
            }
    for (int k = 0; k < ns; k++) m->h[1][1][k] = -m->orog_phi[k] / WX_SW_GRAV;
    for (int k = 0; k < ng; k++) m->w1[k] = 0.6 * wx_sw_qsat(276.0);
    wx_sw_spec_analyse(&m->sp, m->w1, m->q[1]);
    for (int k = 0; k < ns; k++) {
        for (int l = 0; l < WX_SW_NLAYER; l++) {
            m->vort[0][l][k] = m->vort[1][l][k];
            m->h[0][l][k] = m->h[1][l][k];
        }
        m->q[0][k] = m->q[1][k];
    }
    wx_sw_model_grid(m);
    return WX_OK;
}

wx_status wx_sw_model_clone(wx_sw_model *dst, const wx_sw_model *src) {
    WX_TRY(wx_sw_model_init(dst, &src->par, src->year_phase0, src->time));
    size_t b = sizeof(wx_cplx) * src->nspec;
    for (int k = 0; k < 2; k++) {
        for (int l = 0; l < WX_SW_NLAYER; l++) {
            memcpy(dst->vort[k][l], src->vort[k][l], b);
            memcpy(dst->div[k][l], src->div[k][l], b);
            memcpy(dst->h[k][l], src->h[k][l], b);
        }
        memcpy(dst->q[k], src->q[k], b);
    }
    memcpy(dst->heq, src->heq, b);
    memcpy(dst->lheat, src->lheat, b);
    memcpy(dst->precip_acc, src->precip_acc, sizeof(double) * src->ngrid);
    dst->nsteps = src->nsteps;
    wx_sw_model_grid(dst);
    return WX_OK;
}

double wx_sw_model_z500_diff(wx_sw_model *a, wx_sw_model *b, double *za, double *zb) {
    wx_sw_model_grid(a);
    wx_sw_model_z500(a, za);
    wx_sw_model_grid(b);
    wx_sw_model_z500(b, zb);
    int nx = a->par.nlon;
    double mean = 0, ws = 0, s = 0;
    for (int k = 0; k < a->ngrid; k++) {
        mean += a->sp.wts[k / nx] * (za[k] - zb[k]);
        ws += a->sp.wts[k / nx];
    }
    mean /= ws;
    for (int k = 0; k < a->ngrid; k++) {
        double d = za[k] - zb[k] - mean;
        s += a->sp.wts[k / nx] * d * d;
    }
    return sqrt(s / ws);
}

void wx_sw_model_free(wx_sw_model *m) {
    for (int k = 0; k < 2; k++) {
        for (int l = 0; l < WX_SW_NLAYER; l++) {
            free(m->vort[k][l]);
            free(m->div[k][l]);
            free(m->h[k][l]);
        }
        free(m->q[k]);
    }
    wx_cplx *sc[] = {m->heq, m->lheat, m->orog_phi, m->tend, m->coef};
    for (unsigned i = 0; i < sizeof sc / sizeof *sc; i++) free(sc[i]);
    double *gr[] = {m->orog, m->lsm, m->gq, m->gorog, m->precip_acc, m->ucos[0], m->ucos[1],
                    m->vcos[0], m->vcos[1], m->gvort[0], m->gvort[1], m->gh[0], m->gh[1],
                    m->work, m->lon, m->f_cor, m->rcos2};
    for (unsigned i = 0; i < sizeof gr / sizeof *gr; i++) free(gr[i]);
    wx_sw_spec_free(&m->sp);
    memset(m, 0, sizeof *m);
}

void wx_sw_model_grid(wx_sw_model *m) {
    int ns = m->nspec;
    wx_sw_synth_item it[9];
    for (int l = 0; l < WX_SW_NLAYER; l++) {
        wx_cplx *c = m->coef + (size_t)4 * l * ns;
        wx_sw_spec_uv_coef(&m->sp, m->vort[1][l], m->div[1][l], c, c + ns, c + 2 * ns, c + 3 * ns);
        it[2 * l] = (wx_sw_synth_item){c, c + ns, m->ucos[l]};
        it[2 * l + 1] = (wx_sw_synth_item){c + 2 * ns, c + 3 * ns, m->vcos[l]};
        it[4 + l] = (wx_sw_synth_item){m->vort[1][l], NULL, m->gvort[l]};
        it[6 + l] = (wx_sw_synth_item){m->h[1][l], NULL, m->gh[l]};
    }
    it[8] = (wx_sw_synth_item){m->q[1], NULL, m->gq};
    wx_sw_spec_synth_many(&m->sp, 9, it);
}

void wx_sw_model_z500(const wx_sw_model *m, double *z) {
    const wx_sw_params *p = &m->par;
    /* Montgomery potentials: upper g(h0 + h1 + b), lower the same minus g' h0 */
    for (int k = 0; k < m->ngrid; k++) {
        double up = WX_SW_GRAV * (m->gh[0][k] + m->gh[1][k] + m->gorog[k]);
        z[k] = up - (1 - p->z_weight) * p->g_red * m->gh[0][k];
    }
}

void wx_sw_model_perturb(wx_sw_model *m, double rel) {
    /* (H + h')(1 + rel) − H: a00 is the global mean */
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < WX_SW_NLAYER; l++) {
            for (int i = 0; i < m->nspec; i++) m->h[k][l][i] *= 1 + rel;
            m->h[k][l][0] += rel * m->par.depth[l];
        }
    wx_sw_model_grid(m);
}

void wx_sw_model_ke_spectrum(const wx_sw_model *m, double *ke) {
    int T = m->par.trunc;
    double a2 = WX_SW_RADIUS * WX_SW_RADIUS, htot = m->par.depth[0] + m->par.depth[1];
    for (int n = 0; n <= T; n++) ke[n] = 0;
    for (int l = 0; l < WX_SW_NLAYER; l++)
        for (int mm = 0; mm <= T; mm++)
            for (int n = mm > 0 ? mm : 1; n <= T; n++) {
                int k = m->sp.off[mm] + n - mm;
                double w = (mm ? 2.0 : 1.0) * m->par.depth[l] / htot;
                double z = creal(m->vort[1][l][k] * conj(m->vort[1][l][k])) +
                           creal(m->div[1][l][k] * conj(m->div[1][l][k]));
                ke[n] += 0.5 * w * a2 / (n * (n + 1.0)) * z;
            }
}

/* Grid-space nonlinear terms and physics at the current level. Leaves in tend, per layer l at
 * 4l: vorticity, divergence (with −∇²E), thickness tendencies; 8: moisture; 9: diurnal heating
 * (thickness moved from the lower to the upper layer). */
static void tendencies(wx_sw_model *m) {
    const wx_sw_params *p = &m->par;
    wx_sw_spec *sp = &m->sp;
    int nx = p->nlon, ng = m->ngrid, ns = m->nspec;
    double doy = doy_at(m, m->time), utc = fmod(m->time, DAY);
    if (utc < 0) utc += DAY;
    wx_sw_model_grid(m);
    double *w = m->work;
    wx_sw_anal_item it[NTEND];
    for (int l = 0; l < WX_SW_NLAYER; l++) {
        double *A = w + (6 * l) * ng, *B = A + ng, *E = B + ng, *Ah = E + ng, *Bh = Ah + ng;
        const double *u = m->ucos[l], *v = m->vcos[l], *z = m->gvort[l], *h = m->gh[l];
        for (int j = 0; j < p->nlat; j++) {
            double r = m->rcos2[j], f = m->f_cor[j];
            for (int i = j * nx; i < (j + 1) * nx; i++) {
                double eta = (z[i] + f) * r;
                A[i] = u[i] * eta;
                B[i] = v[i] * eta;
                E[i] = 0.5 * (u[i] * u[i] + v[i] * v[i]) * r;
                Ah[i] = u[i] * h[i] * r;
                Bh[i] = v[i] * h[i] * r;
            }
        }
        wx_cplx *t = m->tend + (size_t)4 * l * ns;
        it[4 * l] = (wx_sw_anal_item){A, B, t, 0};
        it[4 * l + 1] = (wx_sw_anal_item){B, A, t + ns, 1}; /* curl: div(V η, −U η) */
        it[4 * l + 2] = (wx_sw_anal_item){Ah, Bh, t + 2 * ns, 0};
        it[4 * l + 3] = (wx_sw_anal_item){E, NULL, t + 3 * ns, 0};
    }
    /* moisture (carried by the lower layer), its sources, and the diurnal heating: a thickness
     * source following the sun, stronger over land; evaporation toward 90 % of saturation,
     * condensation above 85 % */
    double *Aq = w + 12 * ng, *Bq = Aq + ng, *Q = Bq + ng, *S = Q + ng, *Lh = S + ng;
    double *hu_old = Lh + ng, *hl_old = hu_old + ng, *Cv = hl_old + ng, *q_old = Cv + ng;
    /* Evaporation and condensation relax q toward a saturation value: dampings, so they act on
     * the previous level, as the drag and the refill. At the centre of the leapfrog step their
     * computational mode grew where 2 dt is not small against the 3-hour condensation time
     * (T21's default dt 4320 s: tcwv flipped between 0 and ~58 kg m⁻² every 6 h). */
    wx_sw_synth_item qs_old = {m->q[0], NULL, q_old};
    wx_sw_spec_synth_many(sp, 1, &qs_old);
    if (p->h_min > 0) {
        /* the refill is a damping: from the previous level, as the drag, because a damping
         * evaluated at the centre of a leapfrog step amplifies its computational mode */
        wx_sw_synth_item hs[2] = {{m->h[0][0], NULL, hu_old}, {m->h[0][1], NULL, hl_old}};
        wx_sw_spec_synth_many(sp, 2, hs);
    }
    const double tau_e = p->tau_evap, tau_c = 3 * 3600.0;
    /* cos zenith = sin φ sin δ + cos φ cos δ cos(hour angle), the hour angle per column */
    double dec = wx_sw_declination(doy), sdec = sin(dec), cdec = cos(dec);
    double *chour = m->work + 5 * (size_t)ng; /* a free work slot */
    for (int i = 0; i < nx; i++) chour[i] = cdec * cos(2 * M_PI * utc / DAY + m->lon[i] - M_PI);
    for (int j = 0; j < p->nlat; j++) {
        double r = m->rcos2[j], smu = sp->mu[j] * sdec, cl = sp->coslat[j];
        for (int i = 0; i < nx; i++) {
            int k = j * nx + i;
            double land = m->lsm[k];
            Aq[k] = m->ucos[1][k] * m->gq[k] * r;
            Bq[k] = m->vcos[1][k] * m->gq[k] * r;
            double cz = smu + cl * chour[i];
            if (cz < 0) cz = 0;
            Q[k] = p->diurnal_amp / DAY * (0.3 + 0.7 * land) * (cz - 1 / M_PI);
            double qs = wx_sw_qsat(276.0 + p->g_red * m->gh[0][k] / p->t_scale);
            double q = m->gq[k] > 0 ? m->gq[k] : 0, qo = q_old[k] > 0 ? q_old[k] : 0;
            double evap = (0.9 * qs - qo) / tau_e * (1 - 0.85 * land);
            if (evap < 0) evap = 0;
            double cond = (qo - 0.85 * qs) / tau_c;
            if (cond < 0) cond = 0;
            S[k] = evap - cond;
            m->precip_acc[k] += cond * p->dt;
            /* cond is kg m⁻² s⁻¹ = mm s⁻¹, latent m per mm (session 4 divided by 1000 more) */
            if (p->latent > 0) Lh[k] = p->latent * cond;
            if (p->conv_rate > 0) { /* a threshold, not a ramp: the switch itself is chaotic */
                double c = q > p->conv_rh * qs ? p->conv_rate : 0;
                S[k] -= c;
                m->precip_acc[k] += c * p->dt;
                Cv[k] = p->conv_heat * c;
            }
            if (p->h_min > 0) { /* refill a layer about to vanish from the other one */
                double hu = p->depth[0] + hu_old[k], hl = p->depth[1] + hl_old[k];
                if (hl < p->h_min) Q[k] -= (p->h_min - hl) / p->tau_hmin;
                if (hu < p->h_min) Q[k] += (p->h_min - hu) / p->tau_hmin;
            }
        }
    }
    it[8] = (wx_sw_anal_item){Aq, Bq, m->tend + 8 * (size_t)ns, 0};
    it[9] = (wx_sw_anal_item){Q, NULL, m->tend + 9 * (size_t)ns, 0};
    it[10] = (wx_sw_anal_item){S, NULL, m->tend + 10 * (size_t)ns, 0};
    /* the latent item only when switched on: a different batch could change the default bits */
    int nanal = 11;
    if (p->latent > 0) it[nanal++] = (wx_sw_anal_item){Lh, NULL, m->tend + 11 * (size_t)ns, 0};
    if (p->conv_rate > 0 && p->conv_heat > 0)
        it[nanal++] = (wx_sw_anal_item){Cv, NULL, m->tend + 12 * (size_t)ns, 0};
    wx_sw_spec_anal_many(sp, nanal, it);
    for (int l = 0; l < WX_SW_NLAYER; l++) {
        wx_cplx *t = m->tend + (size_t)4 * l * ns;
        for (int k = 0; k < ns; k++) {
            t[k] = -t[k];
            t[ns + k] -= sp->lap[k] * t[3 * ns + k]; /* −∇²E */
            t[2 * ns + k] = -t[2 * ns + k];
        }
    }
    wx_cplx *tq = m->tend + 8 * (size_t)ns, *tQ = tq + ns, *tS = tQ + ns;
    if (p->latent > 0) {
        /* low-passed in space (grid-scale latent heating feeding its own convergence is CISK at
         * the truncation) and relaxed in time, like a relaxed Betts–Miller adjustment */
        const wx_cplx *tL = m->tend + 11 * (size_t)ns;
        double r = 1 - exp(-p->dt / p->latent_tau), nf = p->latent_n;
        for (int mm = 0; mm <= p->trunc; mm++)
            for (int n = mm; n <= p->trunc; n++) {
                int k = sp->off[mm] + n - mm;
                double filt = nf > 0 ? exp(-(n / nf) * (n / nf)) : 1;
                m->lheat[k] += r * (filt * tL[k] - m->lheat[k]);
                tQ[k] += m->lheat[k];
            }
    }
    if (p->conv_rate > 0 && p->conv_heat > 0) {
        const wx_cplx *tC = m->tend + 12 * (size_t)ns;
        for (int mm = 0; mm <= p->trunc; mm++)
            for (int n = mm; n <= p->trunc; n++) {
                int k = sp->off[mm] + n - mm;
                double nf = p->conv_n, filt = nf > 0 ? exp(-(n / nf) * (n / nf)) : 1;
                tQ[k] += filt * tC[k];
            }
    }
    tQ[0] = 0; /* heating moves mass between the layers, never adds it */
    for (int k = 0; k < ns; k++) tq[k] = -tq[k] + tS[k];
}

wx_status wx_sw_model_step(wx_sw_model *m) {
    const wx_sw_params *p = &m->par;
    wx_sw_spec *sp = &m->sp;
    int T = p->trunc, ns = m->nspec;
    /* the first step is a forward step of dt (leapfrog from identical levels with dt/2) */
    double dt = m->nsteps == 0 ? 0.5 * p->dt : p->dt;
    if (m->nsteps % (int64_t)llround(21600.0 / p->dt) == 0) update_equilibrium(m, m->time);
    tendencies(m);
    /* The implicit gravity waves use reference thicknesses deeper than any the layers reach:
     * the remainder (H − Href) δ is explicit, and it is only stable while it slows the waves
     * (Href < H locally would be an explicit wave faster than the step allows). */
    const double g = WX_SW_GRAV, gr = p->g_red;
    const double H0 = p->depth[0] + p->teq_dh, H1 = p->depth[1] + p->teq_dh;
    const double rem[2] = {H0 - p->depth[0], H1 - p->depth[1]};
    const double a2 = 1.0 / (WX_SW_RADIUS * WX_SW_RADIUS), nt = (double)T * (T + 1), ra = 0.05;
    const wx_cplx *tQ = m->tend + 9 * (size_t)ns, *tq = m->tend + 8 * (size_t)ns;
    for (int mm = 0; mm <= T; mm++)
        for (int n = mm; n <= T; n++) {
            int k = sp->off[mm] + n - mm;
            double L = n * (n + 1.0) * a2, c = dt * dt * L;
            wx_cplx zm[2], dm[2], hm[2], nz[2], nd[2], nh[2], dn[2], hn[2], zn[2];
            for (int l = 0; l < 2; l++) {
                const wx_cplx *t = m->tend + (size_t)4 * l * ns;
                zm[l] = m->vort[0][l][k];
                dm[l] = m->div[0][l][k];
                hm[l] = m->h[0][l][k];
                nz[l] = t[k] - zm[l] / p->tau_drag[l];
                /* drag on the vorticity only (Ekman-like): damping the divergence as well
                 * suppressed the baroclinic eddies */
                nd[l] = t[ns + k] + L * m->orog_phi[k];
                nh[l] = t[2 * ns + k] + rem[l] * m->div[1][l][k];
            }
            wx_cplx heat = tQ[k] + (m->heq[k] - hm[0]) / p->tau_rad;
            nh[0] += heat;
            nh[1] -= heat;
            /* Montgomery potentials M = G h with G = [[g, g], [g − g', g]]; the gravity-wave
             * terms L·M and H δ are averaged over t ± dt: (I + dt² L G H) δ⁺ = rhs */
            double a11 = 1 + c * g * H0, a12 = c * g * H1, a21 = c * (g - gr) * H0, a22 = 1 + c * g * H1;
            double det = a11 * a22 - a12 * a21;
            wx_cplx gh0 = g * (hm[0] + hm[1]), gh1 = (g - gr) * hm[0] + g * hm[1];
            wx_cplx gn0 = g * (nh[0] + nh[1]), gn1 = (g - gr) * nh[0] + g * nh[1];
            wx_cplx r0 = dm[0] - c * (g * H0 * dm[0] + g * H1 * dm[1]) + 2 * dt * nd[0] +
                         2 * dt * L * gh0 + 2 * dt * dt * L * gn0;
            wx_cplx r1 = dm[1] - c * ((g - gr) * H0 * dm[0] + g * H1 * dm[1]) + 2 * dt * nd[1] +
                         2 * dt * L * gh1 + 2 * dt * dt * L * gn1;
            dn[0] = (a22 * r0 - a12 * r1) / det;
            dn[1] = (a11 * r1 - a21 * r0) / det;
            double x = n * (n + 1.0) / nt, hd = 1.0 / (1 + 2 * dt * x * x * x * x / p->tau_hdiff);
            for (int l = 0; l < 2; l++) {
                hn[l] = hm[l] + 2 * dt * nh[l] - dt * (l ? H1 : H0) * (dm[l] + dn[l]);
                zn[l] = (zm[l] + 2 * dt * nz[l]) * hd;
                dn[l] *= hd;
                hn[l] *= hd;
                /* Robert–Asselin filter of the current level, then shift */
                m->vort[0][l][k] = m->vort[1][l][k] + ra * (zm[l] - 2 * m->vort[1][l][k] + zn[l]);
                m->div[0][l][k] = m->div[1][l][k] + ra * (dm[l] - 2 * m->div[1][l][k] + dn[l]);
                m->h[0][l][k] = m->h[1][l][k] + ra * (hm[l] - 2 * m->h[1][l][k] + hn[l]);
                m->vort[1][l][k] = zn[l];
                m->div[1][l][k] = dn[l];
                m->h[1][l][k] = hn[l];
            }
            wx_cplx qm = m->q[0][k], qn = (qm + 2 * dt * tq[k]) * hd;
            m->q[0][k] = m->q[1][k] + ra * (qm - 2 * m->q[1][k] + qn);
            m->q[1][k] = qn;
        }
    m->time += p->dt;
    m->nsteps++;
    for (int k = 0; k <= T; k++) {
        double v = creal(m->vort[1][0][k]) + creal(m->h[1][0][k]) + creal(m->div[1][1][k]) +
                   creal(m->h[1][1][k]);
        if (!isfinite(v))
            return wx_error_set(WX_ERR_RUN,
                                "synth: model state became non-finite at step %lld (T%d, dt %.0f s)",
                                (long long)m->nsteps, T, p->dt);
    }
    return WX_OK;
}
