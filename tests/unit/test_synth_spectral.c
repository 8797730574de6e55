/* Spherical-harmonic transforms of the synthetic world against closed forms: the Gauss weights
 * integrate polynomials exactly, μ = P̄_10/√3 and the P̄_22 sectoral harmonic analyse to their known
 * coefficients, solid-body rotation u = u0 cos φ has ζ = 2 u0 μ / a and U = u0 (1 − μ²), and
 * analysis ∘ synthesis and the velocity / divergence operators are mutually inverse. */
#include <math.h>
#include <stdlib.h>

#include "synth/sw_spectral.h"
#include "wx_test.h"

int main(void) {
    wx_sw_spec s;
    const int T = 21, nlat = 32, nlon = 64;
    const double a = 6.371e6;
    wx_sw_spec bad;
    WX_CHECK(wx_sw_spec_init(&bad, 42, 32, 64, a) == WX_ERR_USAGE, "T42 on 32x64 is rejected");
    wx_sw_spec_free(&bad);
    WX_CHECK(wx_sw_spec_init(&s, T, nlat, nlon, a) == WX_OK, "init: %s", wx_error_message());

    /* Gauss quadrature: ∫ μ^k dμ = 2/(k+1) for even k up to 2 nlat − 1 */
    for (int k = 0; k <= 2 * nlat - 2; k += 2) {
        double sum = 0;
        for (int j = 0; j < nlat; j++) sum += s.wts[j] * pow(s.mu[j], k);
        WX_CHECK(fabs(sum - 2.0 / (k + 1)) < 1e-13, "quadrature of mu^%d: %.16g", k, sum);
    }
    WX_CHECK(s.mu[0] > 0 && s.mu[nlat - 1] < 0, "rows run north to south");

    int ng = nlat * nlon;
    double *g = malloc(sizeof(double) * ng), *g2 = malloc(sizeof(double) * ng);
    double *u = malloc(sizeof(double) * ng), *v = malloc(sizeof(double) * ng);
    wx_cplx *c = calloc(s.nspec, sizeof(wx_cplx)), *c2 = calloc(s.nspec, sizeof(wx_cplx));
    wx_cplx *c3 = calloc(s.nspec, sizeof(wx_cplx));

    /* f = μ: a_10 = 1/√3, everything else 0 */
    for (int j = 0; j < nlat; j++)
        for (int i = 0; i < nlon; i++) g[j * nlon + i] = s.mu[j];
    wx_sw_spec_analyse(&s, g, c);
    double other = 0;
    for (int k = 0; k < s.nspec; k++)
        if (k != 1) other = fmax(other, cabs(c[k]));
    WX_CHECK(fabs(creal(c[1]) - 1 / sqrt(3.0)) < 1e-13 && other < 1e-13,
             "mu analyses to a10 = %.15f (1/sqrt3 = %.15f), max other %.2e", creal(c[1]),
             1 / sqrt(3.0), other);
    /* f = (1 − μ²) cos 2λ: P̄_22 = √(15/8)(1−μ²)... so a_22 = ½ √(8/15) (real part) */
    for (int j = 0; j < nlat; j++)
        for (int i = 0; i < nlon; i++)
            g[j * nlon + i] = (1 - s.mu[j] * s.mu[j]) * cos(2 * 2 * M_PI * i / nlon);
    wx_sw_spec_analyse(&s, g, c);
    int k22 = s.off[2];
    WX_CHECK(fabs(creal(c[k22]) - 0.5 * sqrt(8.0 / 15.0)) < 1e-13 && fabs(cimag(c[k22])) < 1e-13,
             "a22 = %.15f + %.2ei, expected %.15f", creal(c[k22]), cimag(c[k22]),
             0.5 * sqrt(8.0 / 15.0));

    /* random coefficients: synthesis then analysis is the identity */
    srand(7);
    for (int m = 0; m <= T; m++)
        for (int n = m; n <= T; n++) {
            double re = rand() / (double)RAND_MAX - 0.5, im = m ? rand() / (double)RAND_MAX - 0.5 : 0;
            c[s.off[m] + n - m] = re + I * im;
        }
    wx_sw_spec_synthesise(&s, c, g);
    wx_sw_spec_analyse(&s, g, c2);
    double err = 0;
    for (int k = 0; k < s.nspec; k++) err = fmax(err, cabs(c2[k] - c[k]));
    WX_CHECK(err < 1e-12, "analyse(synthesise(c)) = c: max error %.2e", err);

    /* solid-body rotation: ζ = 2 u0 μ / a, δ = 0 → U = u0 (1 − μ²), V = 0 */
    const double u0 = 20;
    for (int k = 0; k < s.nspec; k++) c[k] = c2[k] = 0;
    c[1] = 2 * u0 / a / sqrt(3.0);
    wx_sw_spec_uv(&s, c, c2, u, v);
    double eu = 0, ev = 0;
    for (int j = 0; j < nlat; j++)
        for (int i = 0; i < nlon; i++) {
            eu = fmax(eu, fabs(u[j * nlon + i] - u0 * (1 - s.mu[j] * s.mu[j])));
            ev = fmax(ev, fabs(v[j * nlon + i]));
        }
    WX_CHECK(eu < 1e-10 && ev < 1e-10, "solid body U error %.2e, V %.2e", eu, ev);

    /* random ζ, δ (n ≤ T−1 so products stay resolved): U, V then vorticity and divergence
     * back through the divergence operator: ζ = div(V, −U)·, δ = div(U, V) */
    for (int m = 0; m <= T; m++)
        for (int n = m; n <= T; n++) {
            int k = s.off[m] + n - m;
            double f = (n == 0 || n >= T) ? 0 : 1e-5;
            c[k] = f * ((rand() / (double)RAND_MAX - 0.5) + (m ? I * (rand() / (double)RAND_MAX - 0.5) : 0));
            c2[k] = f * 0.3 * ((rand() / (double)RAND_MAX - 0.5) + (m ? I * (rand() / (double)RAND_MAX - 0.5) : 0));
        }
    wx_sw_spec_uv(&s, c, c2, u, v);
    for (int j = 0; j < nlat; j++)
        for (int i = 0; i < nlon; i++) {
            double r = 1 / (1 - s.mu[j] * s.mu[j]);
            g[j * nlon + i] = v[j * nlon + i] * r;
            g2[j * nlon + i] = -u[j * nlon + i] * r;
        }
    wx_sw_spec_analyse_div(&s, g, g2, c3);
    double ez = 0, ed = 0, sc = 0;
    for (int k = 0; k < s.nspec; k++) {
        ez = fmax(ez, cabs(c3[k] - c[k]));
        sc = fmax(sc, cabs(c[k]));
    }
    for (int k = 0; k < ng; k++) {
        double r = 1 / (1 - s.mu[k / nlon] * s.mu[k / nlon]);
        g[k] = u[k] * r;
        g2[k] = v[k] * r;
    }
    wx_sw_spec_analyse_div(&s, g, g2, c3);
    for (int k = 0; k < s.nspec; k++) ed = fmax(ed, cabs(c3[k] - c2[k]));
    WX_CHECK(ez < 1e-9 * sc && ed < 1e-9 * sc, "vorticity / divergence recovered from winds: "
             "errors %.2e %.2e (scale %.2e)", ez, ed, sc);

    wx_sw_spec_free(&s);
    free(g);
    free(g2);
    free(u);
    free(v);
    free(c);
    free(c2);
    free(c3);
    return wx_test_summary();
}
