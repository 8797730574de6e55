#include "synth/sw_spectral.h"

#include <math.h>
#include <string.h>

/* Gauss–Legendre nodes (descending, north→south) and weights by Newton iteration on P_N. */
static void gauss_nodes(int n, double *mu, double *w) {
    for (int i = 0; i < (n + 1) / 2; i++) {
        double x = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 0;
        for (int it = 0; it < 100; it++) {
            double p0 = 1, p1 = x;
            for (int k = 2; k <= n; k++) {
                double p2 = ((2.0 * k - 1) * x * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            dp = n * (x * p1 - p0) / (x * x - 1);
            double dx = p1 / dp;
            x -= dx;
            if (fabs(dx) < 1e-15) break;
        }
        /* recompute the derivative at the converged node */
        double p0 = 1, p1 = x;
        for (int k = 2; k <= n; k++) {
            double p2 = ((2.0 * k - 1) * x * p1 - (k - 1.0) * p0) / k;
            p0 = p1;
            p1 = p2;
        }
        dp = n * (x * p1 - p0) / (x * x - 1);
        mu[i] = x;
        mu[n - 1 - i] = -x;
        w[i] = w[n - 1 - i] = 2.0 / ((1 - x * x) * dp * dp);
    }
}

static double eps_nm(int n, int m) {
    return n <= 0 ? 0.0 : sqrt((double)(n * n - m * m) / (4.0 * n * n - 1.0));
}

/* P̄_nm for n = m..T+1 at μ by the stable three-term recurrence in n (starting from the sectoral
 * P̄_mm built up in m), then H_nm = −n ε_{n+1} P̄_{n+1} + (n+1) ε_n P̄_{n−1}. */
static void legendre_column(int T, int m, double mu, double *p /*(T+2−m)*/, double *h /*(T+1−m)*/) {
    double c = sqrt(1 - mu * mu), pmm = 1.0;
    for (int k = 1; k <= m; k++) pmm *= sqrt((2.0 * k + 1) / (2.0 * k)) * c;
    p[0] = pmm;
    if (T + 1 > m) p[1] = mu * pmm / eps_nm(m + 1, m);
    for (int n = m + 2; n <= T + 1; n++)
        p[n - m] = (mu * p[n - 1 - m] - eps_nm(n - 1, m) * p[n - 2 - m]) / eps_nm(n, m);
    for (int n = m; n <= T; n++) {
        double prev = n > m ? p[n - 1 - m] : 0.0;
        h[n - m] = -n * eps_nm(n + 1, m) * p[n + 1 - m] + (n + 1) * eps_nm(n, m) * prev;
    }
}

wx_status wx_sw_spec_init(wx_sw_spec *s, int trunc, int nlat, int nlon, double radius) {
    memset(s, 0, sizeof *s);
    if (trunc < 1 || nlat % 2 || nlon < 3 * trunc + 1 || nlat < (3 * trunc + 1) / 2)
        return wx_error_set(WX_ERR_USAGE,
                            "synth: truncation T%d needs an even Gaussian grid with nlat >= %d and "
                            "nlon >= %d (got %dx%d)",
                            trunc, (3 * trunc + 1) / 2, 3 * trunc + 1, nlat, nlon);
    int T = trunc;
    s->trunc = T;
    s->nlat = nlat;
    s->nlon = nlon;
    s->nh = nlat / 2;
    s->radius = radius;
    s->nspec = (T + 1) * (T + 2) / 2;
    s->mu = wx_malloc(sizeof(double) * nlat);
    s->wts = wx_malloc(sizeof(double) * nlat);
    s->coslat = wx_malloc(sizeof(double) * nlat);
    gauss_nodes(nlat, s->mu, s->wts);
    for (int j = 0; j < nlat; j++) s->coslat[j] = sqrt(1 - s->mu[j] * s->mu[j]);
    s->off = wx_malloc(sizeof(int) * (T + 1));
    s->lap = wx_malloc(sizeof(double) * s->nspec);
    s->ilap = wx_malloc(sizeof(double) * s->nspec);
    for (int m = 0, k = 0; m <= T; m++) {
        s->off[m] = k;
        for (int n = m; n <= T; n++, k++) {
            s->lap[k] = -n * (n + 1.0) / (radius * radius);
            s->ilap[k] = n ? 1.0 / s->lap[k] : 0.0;
        }
    }
    s->p = wx_calloc(T + 1, sizeof(double *));
    s->h = wx_calloc(T + 1, sizeof(double *));
    double *pcol = wx_malloc(sizeof(double) * (T + 2));
    for (int m = 0; m <= T; m++) {
        int cnt = T + 1 - m;
        s->p[m] = wx_malloc(sizeof(double) * s->nh * cnt);
        s->h[m] = wx_malloc(sizeof(double) * s->nh * cnt);
        for (int j = 0; j < s->nh; j++) {
            double hcol[T + 1];
            legendre_column(T, m, s->mu[j], pcol, hcol);
            memcpy(s->p[m] + (size_t)j * cnt, pcol, sizeof(double) * cnt);
            memcpy(s->h[m] + (size_t)j * cnt, hcol, sizeof(double) * cnt);
        }
    }
    free(pcol);
    s->fbuf = fftw_malloc(sizeof(double) * nlon);
    s->cbuf = fftw_malloc(sizeof(fftw_complex) * (nlon / 2 + 1));
    s->four = wx_malloc(sizeof(wx_cplx) * nlat * (T + 1));
    s->four2 = wx_malloc(sizeof(wx_cplx) * nlat * (T + 1));
    if (!s->fbuf || !s->cbuf) return wx_error_set(WX_ERR_RUN, "synth: fftw_malloc failed");
    /* FFTW_ESTIMATE: plans (and so results) do not depend on timing measurements. */
    s->fwd = fftw_plan_dft_r2c_1d(nlon, s->fbuf, s->cbuf, FFTW_ESTIMATE);
    s->inv = fftw_plan_dft_c2r_1d(nlon, s->cbuf, s->fbuf, FFTW_ESTIMATE);
    if (!s->fwd || !s->inv)
        return wx_error_set(WX_ERR_RUN, "synth: FFTW plan creation failed for nlon=%d", nlon);
    return WX_OK;
}

void wx_sw_spec_free(wx_sw_spec *s) {
    if (s->p)
        for (int m = 0; m <= s->trunc; m++) {
            free(s->p[m]);
            free(s->h[m]);
        }
    free(s->p);
    free(s->h);
    if (s->fwd) fftw_destroy_plan(s->fwd);
    if (s->inv) fftw_destroy_plan(s->inv);
    fftw_free(s->fbuf);
    fftw_free(s->cbuf);
    free(s->mu);
    free(s->wts);
    free(s->coslat);
    free(s->off);
    free(s->lap);
    free(s->ilap);
    free(s->four);
    free(s->four2);
    memset(s, 0, sizeof *s);
}

/* four (nlat, T+1) ← Fourier coefficients m ≤ T of each grid row, divided by nlon. */
static void fft_rows(wx_sw_spec *s, const double *grid, wx_cplx *four) {
    int T = s->trunc;
    double inv = 1.0 / s->nlon;
    for (int j = 0; j < s->nlat; j++) {
        memcpy(s->fbuf, grid + (size_t)j * s->nlon, sizeof(double) * s->nlon);
        fftw_execute(s->fwd);
        for (int m = 0; m <= T; m++)
            four[j * (T + 1) + m] = s->cbuf[m] * inv; /* fftw_complex is C99 complex here */
    }
}

static void ifft_rows(wx_sw_spec *s, const wx_cplx *four, double *grid) {
    int T = s->trunc, nf = s->nlon / 2 + 1;
    for (int j = 0; j < s->nlat; j++) {
        for (int m = 0; m < nf; m++) {
            wx_cplx v = m <= T ? four[j * (T + 1) + m] : 0;
            if (m == 0) v = creal(v);
            s->cbuf[m] = v;
        }
        fftw_execute(s->inv);
        memcpy(grid + (size_t)j * s->nlon, s->fbuf, sizeof(double) * s->nlon);
    }
}

/* four[j][m] = Σ_n cp_nm P̄_nm(μ_j) + ch_nm H_nm(μ_j) (either may be NULL), using the parities
 * P̄_nm(−μ) = (−1)^{n−m} P̄_nm(μ) and H_nm(−μ) = −(−1)^{n−m} H_nm(μ). */
static void leg_synth(const wx_sw_spec *s, const wx_cplx *cp, const wx_cplx *ch, wx_cplx *four) {
    int T = s->trunc, nl = s->nlat;
    for (int m = 0; m <= T; m++) {
        int cnt = T + 1 - m;
        const wx_cplx *a = cp ? cp + s->off[m] : NULL, *b = ch ? ch + s->off[m] : NULL;
        for (int j = 0; j < s->nh; j++) {
            const double *pp = s->p[m] + (size_t)j * cnt, *hh = s->h[m] + (size_t)j * cnt;
            wx_cplx ev = 0, od = 0;
            if (a)
                for (int k = 0; k < cnt; k++) {
                    if (k & 1)
                        od += a[k] * pp[k];
                    else
                        ev += a[k] * pp[k];
                }
            /* H has the opposite parity: its even-k terms flip sign in the south */
            wx_cplx hev = 0, hod = 0;
            if (b)
                for (int k = 0; k < cnt; k++) {
                    if (k & 1)
                        hod += b[k] * hh[k];
                    else
                        hev += b[k] * hh[k];
                }
            four[j * (T + 1) + m] = ev + od + hev + hod;
            four[(nl - 1 - j) * (T + 1) + m] = ev - od - hev + hod;
        }
    }
}

/* spec_nm = ½ Σ_j w_j (fp[j][m] P̄_nm(μ_j) + fh[j][m] H_nm(μ_j)); either input may be NULL. */
static void leg_analyse(const wx_sw_spec *s, const wx_cplx *fp, const wx_cplx *fh, wx_cplx *spec) {
    int T = s->trunc, nl = s->nlat;
    memset(spec, 0, sizeof(wx_cplx) * s->nspec);
    for (int m = 0; m <= T; m++) {
        int cnt = T + 1 - m;
        wx_cplx *out = spec + s->off[m];
        for (int j = 0; j < s->nh; j++) {
            const double *pp = s->p[m] + (size_t)j * cnt, *hh = s->h[m] + (size_t)j * cnt;
            double w = 0.5 * s->wts[j];
            wx_cplx ps = 0, pd = 0, hs = 0, hd = 0;
            if (fp) {
                wx_cplx n = fp[j * (T + 1) + m], so = fp[(nl - 1 - j) * (T + 1) + m];
                ps = w * (n + so);
                pd = w * (n - so);
            }
            if (fh) {
                wx_cplx n = fh[j * (T + 1) + m], so = fh[(nl - 1 - j) * (T + 1) + m];
                hs = w * (n + so);
                hd = w * (n - so);
            }
            for (int k = 0; k < cnt; k++)
                out[k] += (k & 1) ? pd * pp[k] + hs * hh[k] : ps * pp[k] + hd * hh[k];
        }
    }
}

void wx_sw_spec_analyse(wx_sw_spec *s, const double *grid, wx_cplx *spec) {
    fft_rows(s, grid, s->four);
    leg_analyse(s, s->four, NULL, spec);
    for (int n = 0; n <= s->trunc; n++) spec[n] = creal(spec[n]); /* m = 0 is real */
}

void wx_sw_spec_synthesise(wx_sw_spec *s, const wx_cplx *spec, double *grid) {
    leg_synth(s, spec, NULL, s->four);
    ifft_rows(s, s->four, grid);
}

void wx_sw_spec_analyse_div(wx_sw_spec *s, const double *a, const double *b, wx_cplx *spec) {
    int T = s->trunc;
    fft_rows(s, a, s->four);
    fft_rows(s, b, s->four2);
    double ir = 1.0 / s->radius;
    for (int j = 0; j < s->nlat; j++)
        for (int m = 0; m <= T; m++) {
            s->four[j * (T + 1) + m] *= I * m * ir;
            s->four2[j * (T + 1) + m] *= -ir; /* ∫ ∂B/∂μ P̄ dμ = −∫ B/(1−μ²) H dμ */
        }
    leg_analyse(s, s->four, s->four2, spec);
    for (int n = 0; n <= T; n++) spec[n] = creal(spec[n]);
}

void wx_sw_spec_uv(wx_sw_spec *s, const wx_cplx *vort, const wx_cplx *div, double *ucos,
                   double *vcos) {
    int T = s->trunc, ns = s->nspec;
    wx_cplx *cp = wx_malloc(sizeof(wx_cplx) * ns), *ch = wx_malloc(sizeof(wx_cplx) * ns);
    double ir = 1.0 / s->radius;
    /* U = (1/a)[∂χ/∂λ − (1−μ²) ∂ψ/∂μ] */
    for (int m = 0; m <= T; m++)
        for (int k = s->off[m]; k < s->off[m] + T + 1 - m; k++) {
            cp[k] = I * m * ir * s->ilap[k] * div[k];
            ch[k] = -ir * s->ilap[k] * vort[k];
        }
    leg_synth(s, cp, ch, s->four);
    ifft_rows(s, s->four, ucos);
    /* V = (1/a)[∂ψ/∂λ + (1−μ²) ∂χ/∂μ] */
    for (int m = 0; m <= T; m++)
        for (int k = s->off[m]; k < s->off[m] + T + 1 - m; k++) {
            cp[k] = I * m * ir * s->ilap[k] * vort[k];
            ch[k] = ir * s->ilap[k] * div[k];
        }
    leg_synth(s, cp, ch, s->four);
    ifft_rows(s, s->four, vcos);
    free(cp);
    free(ch);
}
