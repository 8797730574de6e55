#include "synth/sw_spectral.h"

#include <cblas.h>
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
    s->nf2 = nlon / 2 + 1;
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
    double ***tab[4] = {&s->pe, &s->po, &s->he, &s->ho};
    for (int t = 0; t < 4; t++) *tab[t] = wx_calloc(T + 1, sizeof(double *));
    double *pcol = wx_malloc(sizeof(double) * (T + 2)), *hcol = wx_malloc(sizeof(double) * (T + 1));
    for (int m = 0; m <= T; m++) {
        int cnt = T + 1 - m, ce = (cnt + 1) / 2, co = cnt / 2;
        s->pe[m] = wx_malloc(sizeof(double) * s->nh * ce);
        s->he[m] = wx_malloc(sizeof(double) * s->nh * ce);
        s->po[m] = wx_malloc(sizeof(double) * s->nh * (co ? co : 1));
        s->ho[m] = wx_malloc(sizeof(double) * s->nh * (co ? co : 1));
        for (int j = 0; j < s->nh; j++) {
            legendre_column(T, m, s->mu[j], pcol, hcol);
            for (int k = 0; k < cnt; k++) {
                if (k & 1) {
                    s->po[m][j * co + k / 2] = pcol[k];
                    s->ho[m][j * co + k / 2] = hcol[k];
                } else {
                    s->pe[m][j * ce + k / 2] = pcol[k];
                    s->he[m][j * ce + k / 2] = hcol[k];
                }
            }
        }
    }
    free(pcol);
    free(hcol);
    size_t nfour = (size_t)WX_SW_BATCH_MAX * nlat * s->nf2;
    s->four = fftw_malloc(sizeof(fftw_complex) * nfour);
    s->four2 = fftw_malloc(sizeof(fftw_complex) * nfour);
    size_t nst = (size_t)(T + 1) * 2 * WX_SW_BATCH_MAX, nsum = (size_t)s->nh * 2 * WX_SW_BATCH_MAX;
    s->ca = wx_malloc(sizeof(double) * nst);
    s->cb = wx_malloc(sizeof(double) * nst);
    s->sym = wx_malloc(sizeof(double) * 2 * nsum); /* P and H parts */
    s->anti = wx_malloc(sizeof(double) * 2 * nsum);
    double *rbuf = fftw_malloc(sizeof(double) * nlat * nlon);
    if (!s->four || !s->four2 || !rbuf) {
        fftw_free(rbuf);
        return wx_error_set(WX_ERR_RUN, "synth: fftw_malloc failed (nlat %d, nlon %d)", nlat, nlon);
    }
    /* FFTW_ESTIMATE: plans (and so results) do not depend on timing measurements; UNALIGNED:
     * the plans are executed on the callers' grids */
    int n[1] = {nlon};
    unsigned fl = FFTW_ESTIMATE | FFTW_UNALIGNED;
    s->fwd = fftw_plan_many_dft_r2c(1, n, nlat, rbuf, NULL, 1, nlon, s->four, NULL, 1, s->nf2, fl);
    s->inv = fftw_plan_many_dft_c2r(1, n, nlat, s->four, NULL, 1, s->nf2, rbuf, NULL, 1, nlon, fl);
    fftw_free(rbuf);
    if (!s->fwd || !s->inv)
        return wx_error_set(WX_ERR_RUN, "synth: FFTW plan creation failed for %d rows of %d",
                            nlat, nlon);
    return WX_OK;
}

void wx_sw_spec_free(wx_sw_spec *s) {
    double **tab[4] = {s->pe, s->po, s->he, s->ho};
    for (int t = 0; t < 4; t++) {
        if (tab[t])
            for (int m = 0; m <= s->trunc; m++) free(tab[t][m]);
        free(tab[t]);
    }
    if (s->fwd) fftw_destroy_plan(s->fwd);
    if (s->inv) fftw_destroy_plan(s->inv);
    fftw_free(s->four);
    fftw_free(s->four2);
    free(s->mu);
    free(s->wts);
    free(s->coslat);
    free(s->off);
    free(s->lap);
    free(s->ilap);
    free(s->ca);
    free(s->cb);
    free(s->sym);
    free(s->anti);
    memset(s, 0, sizeof *s);
}

/* C (m×n, ldc) = beta C + op(A) B with B (k×n, ldb); k = 0 leaves beta C. */
static void gemm(int trans, int m, int n, int k, const double *a, int lda, const double *b, int ldb,
                 double beta, double *c, int ldc) {
    if (k == 0) {
        if (beta == 0)
            for (int i = 0; i < m; i++) memset(c + (size_t)i * ldc, 0, sizeof(double) * n);
        return;
    }
    cblas_dgemm(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a,
                lda, b, ldb, beta, c, ldc);
}

/* Columns of a batch: fields with an H part first (so their block is contiguous), then the rest. */
static int batch_columns(int nf, const int *has_h, int *col) {
    int nv = 0;
    for (int f = 0; f < nf; f++)
        if (has_h[f]) col[f] = nv++;
    for (int f = 0, k = nv; f < nf; f++)
        if (!has_h[f]) col[f] = k++;
    return nv;
}

static void synth_chunk(wx_sw_spec *s, int nf, const wx_sw_synth_item *it) {
    int T = s->trunc, nh = s->nh, nl = s->nlat, nf2 = s->nf2, ld = 2 * nf;
    int col[WX_SW_BATCH_MAX], has_h[WX_SW_BATCH_MAX];
    for (int f = 0; f < nf; f++) has_h[f] = it[f].h != NULL;
    int nv = batch_columns(nf, has_h, col);
    for (int m = 0; m <= T; m++) {
        int cnt = T + 1 - m, ce = (cnt + 1) / 2, co = cnt / 2;
        /* stage rows: even n − m first (ce rows), then odd (co rows) */
        for (int f = 0; f < nf; f++) {
            int c = 2 * col[f];
            const wx_cplx *p = it[f].p ? it[f].p + s->off[m] : NULL;
            const wx_cplx *h = it[f].h ? it[f].h + s->off[m] : NULL;
            for (int k = 0; k < cnt; k++) {
                int r = (k & 1) ? ce + k / 2 : k / 2;
                wx_cplx v = p ? p[k] : 0;
                s->ca[r * ld + c] = creal(v);
                s->ca[r * ld + c + 1] = cimag(v);
                if (h) {
                    s->cb[r * ld + c] = creal(h[k]);
                    s->cb[r * ld + c + 1] = cimag(h[k]);
                }
            }
        }
        /* P̄ even and H odd are symmetric about the equator, P̄ odd and H even antisymmetric */
        gemm(0, nh, ld, ce, s->pe[m], ce, s->ca, ld, 0.0, s->sym, ld);
        gemm(0, nh, ld, co, s->po[m], co, s->ca + ce * ld, ld, 0.0, s->anti, ld);
        if (nv) {
            gemm(0, nh, 2 * nv, co, s->ho[m], co, s->cb + ce * ld, ld, 1.0, s->sym, ld);
            gemm(0, nh, 2 * nv, ce, s->he[m], ce, s->cb, ld, 1.0, s->anti, ld);
        }
        for (int f = 0; f < nf; f++) {
            int c = 2 * col[f];
            fftw_complex *F = s->four + (size_t)f * nl * nf2;
            for (int j = 0; j < nh; j++) {
                double sr = s->sym[j * ld + c], si = s->sym[j * ld + c + 1];
                double ar = s->anti[j * ld + c], ai = s->anti[j * ld + c + 1];
                F[j * nf2 + m] = (sr + ar) + I * (si + ai);
                F[(nl - 1 - j) * nf2 + m] = (sr - ar) + I * (si - ai);
            }
        }
    }
    for (int f = 0; f < nf; f++) {
        fftw_complex *F = s->four + (size_t)f * nl * nf2;
        for (int j = 0; j < nl; j++) {
            F[j * nf2] = creal(F[j * nf2]);
            for (int m = T + 1; m < nf2; m++) F[j * nf2 + m] = 0;
        }
        fftw_execute_dft_c2r(s->inv, F, it[f].grid);
    }
}

/* The Fourier coefficients of grid g if an earlier item of the batch already transformed it. */
static const fftw_complex *fourier_seen(const wx_sw_anal_item *it, int f, const double *g,
                                        const fftw_complex **fa, const fftw_complex **fb) {
    for (int k = 0; k < f; k++) {
        if (it[k].a == g) return fa[k];
        if (it[k].b == g) return fb[k];
    }
    return NULL;
}

static void anal_chunk(wx_sw_spec *s, int nf, const wx_sw_anal_item *it) {
    int T = s->trunc, nh = s->nh, nl = s->nlat, nf2 = s->nf2, ld = 2 * nf;
    int col[WX_SW_BATCH_MAX], has_h[WX_SW_BATCH_MAX];
    const fftw_complex *fa[WX_SW_BATCH_MAX], *fb[WX_SW_BATCH_MAX];
    for (int f = 0; f < nf; f++) {
        has_h[f] = it[f].b != NULL;
        fa[f] = fourier_seen(it, f, it[f].a, fa, fb);
        if (!fa[f]) {
            fftw_complex *F = s->four + (size_t)f * nl * nf2;
            fftw_execute_dft_r2c(s->fwd, (double *)it[f].a, F);
            fa[f] = F;
        }
        fb[f] = NULL;
        if (has_h[f]) {
            fb[f] = fourier_seen(it, f, it[f].b, fa, fb);
            if (!fb[f]) {
                fftw_complex *F = s->four2 + (size_t)f * nl * nf2;
                fftw_execute_dft_r2c(s->fwd, (double *)it[f].b, F);
                fb[f] = F;
            }
        }
    }
    int nv = batch_columns(nf, has_h, col);
    size_t nsum = (size_t)nh * ld;
    double *psum = s->sym, *pdif = s->anti, *hsum = s->sym + nsum, *hdif = s->anti + nsum;
    double ir = 1.0 / s->radius;
    for (int m = 0; m <= T; m++) {
        int cnt = T + 1 - m, ce = (cnt + 1) / 2, co = cnt / 2;
        for (int f = 0; f < nf; f++) {
            int c = 2 * col[f];
            const fftw_complex *F = fa[f], *G = fb[f];
            /* ∫ ∂B/∂μ P̄ dμ = −∫ B/(1−μ²) H dμ; the 1/nlon normalises the FFT */
            wx_cplx fac = has_h[f] ? I * m * ir : 1.0;
            double fh = it[f].neg_b ? ir : -ir;
            for (int j = 0; j < nh; j++) {
                double w = 0.5 * s->wts[j] / s->nlon;
                wx_cplx n = fac * w * F[j * nf2 + m], so = fac * w * F[(nl - 1 - j) * nf2 + m];
                psum[j * ld + c] = creal(n + so);
                psum[j * ld + c + 1] = cimag(n + so);
                pdif[j * ld + c] = creal(n - so);
                pdif[j * ld + c + 1] = cimag(n - so);
                if (has_h[f]) {
                    n = fh * w * G[j * nf2 + m];
                    so = fh * w * G[(nl - 1 - j) * nf2 + m];
                    hsum[j * ld + c] = creal(n + so);
                    hsum[j * ld + c + 1] = cimag(n + so);
                    hdif[j * ld + c] = creal(n - so);
                    hdif[j * ld + c + 1] = cimag(n - so);
                }
            }
        }
        /* even n − m: P̄ᵀ(sum) + Hᵀ(difference); odd: P̄ᵀ(difference) + Hᵀ(sum) */
        gemm(1, ce, ld, nh, s->pe[m], ce, psum, ld, 0.0, s->ca, ld);
        if (co) gemm(1, co, ld, nh, s->po[m], co, pdif, ld, 0.0, s->ca + ce * ld, ld);
        if (nv) {
            gemm(1, ce, 2 * nv, nh, s->he[m], ce, hdif, ld, 1.0, s->ca, ld);
            if (co) gemm(1, co, 2 * nv, nh, s->ho[m], co, hsum, ld, 1.0, s->ca + ce * ld, ld);
        }
        for (int f = 0; f < nf; f++) {
            int c = 2 * col[f];
            wx_cplx *out = it[f].spec + s->off[m];
            for (int k = 0; k < cnt; k++) {
                int r = (k & 1) ? ce + k / 2 : k / 2;
                out[k] = s->ca[r * ld + c] + (m ? I * s->ca[r * ld + c + 1] : 0.0);
            }
        }
    }
}

void wx_sw_spec_synth_many(wx_sw_spec *s, int nf, const wx_sw_synth_item *items) {
    for (int f = 0; f < nf; f += WX_SW_BATCH_MAX)
        synth_chunk(s, nf - f < WX_SW_BATCH_MAX ? nf - f : WX_SW_BATCH_MAX, items + f);
}

void wx_sw_spec_anal_many(wx_sw_spec *s, int nf, const wx_sw_anal_item *items) {
    for (int f = 0; f < nf; f += WX_SW_BATCH_MAX)
        anal_chunk(s, nf - f < WX_SW_BATCH_MAX ? nf - f : WX_SW_BATCH_MAX, items + f);
}

void wx_sw_spec_analyse(wx_sw_spec *s, const double *grid, wx_cplx *spec) {
    wx_sw_anal_item it = {grid, NULL, spec, 0};
    wx_sw_spec_anal_many(s, 1, &it);
}

void wx_sw_spec_synthesise(wx_sw_spec *s, const wx_cplx *spec, double *grid) {
    wx_sw_synth_item it = {spec, NULL, grid};
    wx_sw_spec_synth_many(s, 1, &it);
}

void wx_sw_spec_analyse_div(wx_sw_spec *s, const double *a, const double *b, wx_cplx *spec) {
    wx_sw_anal_item it = {a, b, spec, 0};
    wx_sw_spec_anal_many(s, 1, &it);
}

void wx_sw_spec_uv_coef(const wx_sw_spec *s, const wx_cplx *vort, const wx_cplx *div,
                        wx_cplx *ucp, wx_cplx *uch, wx_cplx *vcp, wx_cplx *vch) {
    double ir = 1.0 / s->radius;
    /* U = (1/a)[∂χ/∂λ − (1−μ²) ∂ψ/∂μ], V = (1/a)[∂ψ/∂λ + (1−μ²) ∂χ/∂μ] */
    for (int m = 0; m <= s->trunc; m++)
        for (int k = s->off[m]; k < s->off[m] + s->trunc + 1 - m; k++) {
            double il = ir * s->ilap[k];
            ucp[k] = I * m * il * div[k];
            uch[k] = -il * vort[k];
            vcp[k] = I * m * il * vort[k];
            vch[k] = il * div[k];
        }
}

void wx_sw_spec_uv(wx_sw_spec *s, const wx_cplx *vort, const wx_cplx *div, double *ucos,
                   double *vcos) {
    int ns = s->nspec;
    wx_cplx *c = wx_malloc(sizeof(wx_cplx) * 4 * ns);
    wx_sw_spec_uv_coef(s, vort, div, c, c + ns, c + 2 * ns, c + 3 * ns);
    wx_sw_synth_item it[2] = {{c, c + ns, ucos}, {c + 2 * ns, c + 3 * ns, vcos}};
    wx_sw_spec_synth_many(s, 2, it);
    free(c);
}
