/* Finite-difference gradient checks, in double, for the spectral ops: rfft2, irfft2 and the AFNO
 * filter (input and every parameter), with spots on the kx = 0 and kx = W/2 (Nyquist) columns,
 * real and imaginary parts. Each loss is L = Σ out ⊙ G for a fixed random G, so its gradient is the
 * op's backward applied to G. The AFNO inputs are checked to sit away from the ReLU (0) and
 * softshrink (±λ) kinks by more than any FD step can move them. Also the accumulation rule:
 * backward twice gives doubled parameter grads and the same (overwritten) input grad. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wx_ops.h"
#include "wx_test.h"

#define EPS 1e-6
#define RTOL 1e-7
#define KINK_MARGIN 1e-4

static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double *rnd(int64_t n, uint64_t seed) {
    double *x = malloc(sizeof(double) * (size_t)n);
    wx_test_fill_uniform(x, n, seed, -1, 1);
    return x;
}

/* ---- rfft2 / irfft2 ---------------------------------------------------------------------- */

typedef struct {
    wx_ctx *ctx;
    int64_t b, h, w, c;
    const double *g;
    double *out;
} fft_ud;

static double rfft2_loss(void *p, const double *x) {
    fft_ud *u = p;
    WX_ASSERT(wx_cpu_rfft2_forward_f64(u->ctx, u->out, x, u->b, u->h, u->w, u->c) == WX_OK);
    return dot(u->out, u->g, u->b * u->h * (u->w / 2 + 1) * u->c * 2);
}

static double irfft2_loss(void *p, const double *X) {
    fft_ud *u = p;
    WX_ASSERT(wx_cpu_irfft2_forward_f64(u->ctx, u->out, X, u->b, u->h, u->w, u->c) == WX_OK);
    return dot(u->out, u->g, u->b * u->h * u->w * u->c);
}

/* Index of (bi, ky, kx, ch, part) in a (B,H,Wf,C,2) spectrum. */
static int64_t spec_at(int64_t h, int64_t wf, int64_t c, int64_t bi, int64_t ky, int64_t kx,
                       int64_t ch, int part) {
    return (((bi * h + ky) * wf + kx) * c + ch) * 2 + part;
}

static void check_fft(wx_ctx *ctx, int64_t b, int64_t h, int64_t w, int64_t c) {
    int64_t wf = w / 2 + 1, nx = b * h * w * c, nX = b * h * wf * c * 2;
    char what[96];
    /* rfft2: L(x) = Σ rfft2(x) ⊙ G. */
    double *x = rnd(nx, 1), *G = rnd(nX, 2), *dx = malloc(sizeof(double) * nx);
    double *X = malloc(sizeof(double) * nX);
    fft_ud u = {ctx, b, h, w, c, G, X};
    WX_CHECK(wx_cpu_rfft2_backward_f64(ctx, dx, G, b, h, w, c) == WX_OK, "rfft2_backward");
    int64_t xspots[] = {0, nx - 1, (h / 2) * w * c + (w / 2) * c}; /* includes pixel (H/2, W/2) */
    snprintf(what, sizeof what, "rfft2 dx (H=%lld W=%lld)", (long long)h, (long long)w);
    WX_CHECK_FD(what, rfft2_loss, &u, x, dx, nx, 3, xspots, 3, EPS, RTOL);

    /* irfft2: L(X) = Σ irfft2(X) ⊙ g, X not Hermitian-consistent. */
    double *Xin = rnd(nX, 3), *g = rnd(nx, 4), *dX = malloc(sizeof(double) * nX);
    double *y = malloc(sizeof(double) * nx);
    fft_ud v = {ctx, b, h, w, c, g, y};
    WX_CHECK(wx_cpu_irfft2_backward_f64(ctx, dX, g, b, h, w, c) == WX_OK, "irfft2_backward");
    int64_t ny2 = w % 2 == 0 ? w / 2 : 1, last = b - 1;
    int64_t sspots[] = {
        spec_at(h, wf, c, 0, 0, 0, 0, 0),       spec_at(h, wf, c, 0, 0, 0, 0, 1),
        spec_at(h, wf, c, 0, 1, 0, 1, 0),       spec_at(h, wf, c, 0, h - 1, 0, 1, 1),
        spec_at(h, wf, c, last, h / 2, 0, 0, 1), spec_at(h, wf, c, 0, 0, ny2, 0, 0),
        spec_at(h, wf, c, 0, 0, ny2, 0, 1),     spec_at(h, wf, c, last, 1, ny2, c - 1, 0),
        spec_at(h, wf, c, last, h - 1, ny2, c - 1, 1), spec_at(h, wf, c, 0, 2, 1, 0, 1)};
    snprintf(what, sizeof what, "irfft2 dX (H=%lld W=%lld)", (long long)h, (long long)w);
    WX_CHECK_FD(what, irfft2_loss, &v, Xin, dX, nX, 3, sspots, 10, EPS, RTOL);
    /* torch ignores Im at (ky=0, kx=0): the gradient there is exactly zero. */
    WX_CHECK(dX[spec_at(h, wf, c, 0, 0, 0, 0, 1)] == 0, "irfft2: dX Im(0,0) = %g, expected 0",
             dX[spec_at(h, wf, c, 0, 0, 0, 0, 1)]);
    free(x), free(G), free(dx), free(X), free(Xin), free(g), free(dX), free(y);
}

/* ---- AFNO filter ------------------------------------------------------------------------- */

typedef struct {
    wx_ctx *ctx;
    int64_t b, h, wf, c, nb, fac, m;
    double lam;
    const uint8_t *mask;
    double *p[5]; /* X, w1, b1, w2, b2 */
    int64_t n[5];
    int which;    /* the one replaced by the FD argument */
    const double *G;
    double *Y, *saved;
} afno_ud;

static void afno_run(afno_ud *u, const double *const *p) {
    WX_ASSERT(wx_cpu_afno_filter_forward_f64(u->ctx, u->Y, u->saved, p[0], p[1], p[2], p[3], p[4],
                                             u->mask, u->b, u->h, u->wf, u->c, u->nb, u->fac,
                                             u->lam) == WX_OK);
}

static double afno_loss(void *ud, const double *arg) {
    afno_ud *u = ud;
    const double *p[5];
    for (int i = 0; i < 5; i++) p[i] = i == u->which ? arg : u->p[i];
    afno_run(u, p);
    return dot(u->Y, u->G, u->b * u->h * u->wf * u->c * 2);
}

/* Smallest distance of a pre-activation to its kink, from the saved buffer. */
static double afno_margin(const afno_ud *u) {
    int64_t nh = u->b * u->m * u->c * u->fac * 2, no = u->b * u->m * u->c * 2;
    double mg = INFINITY;
    for (int64_t i = 0; i < nh; i++) mg = fmin(mg, fabs(u->saved[i]));
    for (int64_t i = 0; i < no; i++) mg = fmin(mg, fabs(fabs(u->saved[nh + i]) - u->lam));
    return mg;
}

static void check_afno(wx_ctx *ctx, int64_t b, int64_t h, int64_t w, int64_t c, int64_t nb,
                       int64_t fac, double lam, int full_mask) {
    int64_t wf = w / 2 + 1, bs = c / nb, hid = bs * fac, nX = b * h * wf * c * 2;
    uint8_t *mask = malloc((size_t)(h * wf));
    int64_t m = 0;
    for (int64_t ky = 0; ky < h; ky++)
        for (int64_t kx = 0; kx < wf; kx++) {
            /* Partial mask: a gap in ky and kx < wf − 1, so unkept modes get dX = 0. */
            int keep = full_mask || (ky != 1 && kx < wf - 1);
            mask[ky * wf + kx] = (uint8_t)keep;
            m += keep;
        }
    afno_ud u = {.ctx = ctx, .b = b, .h = h, .wf = wf, .c = c, .nb = nb, .fac = fac, .m = m,
                 .lam = lam, .mask = mask};
    u.n[0] = nX, u.n[1] = 2 * nb * bs * hid, u.n[2] = 2 * nb * hid, u.n[3] = u.n[1];
    u.n[4] = 2 * nb * bs;
    u.Y = malloc(sizeof(double) * nX);
    u.saved = malloc(sizeof(double) * wx_afno_filter_saved_len(b, m, c, fac));
    double *G = rnd(nX, 77);
    u.G = G;
    /* Draw inputs until every pre-activation is KINK_MARGIN away from its kink. */
    uint64_t seed = 100;
    for (int tries = 0;; tries++, seed += 10) {
        for (int i = 0; i < 5; i++) {
            free(u.p[i]);
            u.p[i] = rnd(u.n[i], seed + i);
        }
        for (int64_t i = 0; i < u.n[1]; i++) u.p[1][i] /= sqrt((double)bs), u.p[3][i] /= sqrt((double)hid);
        afno_run(&u, (const double *const *)u.p);
        if (afno_margin(&u) > KINK_MARGIN) break;
        if (!WX_CHECK(tries < 200, "afno: no seed with kink margin %g", KINK_MARGIN)) return;
    }
    double *dg[5];
    for (int i = 0; i < 5; i++) dg[i] = calloc((size_t)u.n[i], sizeof(double));
    WX_CHECK(wx_cpu_afno_filter_backward_f64(ctx, dg[0], dg[1], dg[2], dg[3], dg[4], G, u.saved,
                                             u.p[0], u.p[1], u.p[3], mask, b, h, wf, c, nb, fac,
                                             lam) == WX_OK, "afno backward");
    int64_t ny = wf - 1; /* Nyquist column for even W */
    int64_t xspots[] = {spec_at(h, wf, c, 0, 0, 0, 0, 0),       spec_at(h, wf, c, 0, 0, 0, 0, 1),
                        spec_at(h, wf, c, 0, h - 1, 0, c - 1, 1), spec_at(h, wf, c, 0, 2, ny, 0, 0),
                        spec_at(h, wf, c, b - 1, 2, ny, 1, 1),   spec_at(h, wf, c, 0, 1, 1, 0, 0)};
    static const char *names[5] = {"dX", "dw1", "db1", "dw2", "db2"};
    char what[96];
    for (int i = 0; i < 5; i++) {
        u.which = i;
        int64_t pspots[] = {0, u.n[i] / 2 + 1, u.n[i] - 1};
        snprintf(what, sizeof what, "afno %s (%s mask, factor %lld)", names[i],
                 full_mask ? "full" : "partial", (long long)fac);
        WX_CHECK_FD(what, afno_loss, &u, u.p[i], dg[i], u.n[i], 3, i == 0 ? xspots : pspots,
                    i == 0 ? 6 : 3, EPS, RTOL);
    }
    /* Unkept modes: dX = 0 exactly. */
    int zero_ok = 1;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t k = 0; k < h * wf; k++)
            if (!mask[k])
                for (int64_t j = 0; j < 2 * c; j++) zero_ok &= dg[0][(bi * h * wf + k) * 2 * c + j] == 0;
    WX_CHECK(zero_ok, "afno: dX nonzero on a mode the mask drops");

    /* Accumulation: a second backward doubles parameter grads, overwrites dX. */
    double *dg2[5];
    for (int i = 0; i < 5; i++) {
        dg2[i] = calloc((size_t)u.n[i], sizeof(double));
        if (i == 0) for (int64_t j = 0; j < u.n[0]; j++) dg2[0][j] = 9.0;
    }
    for (int r = 0; r < 2; r++)
        WX_CHECK(wx_cpu_afno_filter_backward_f64(ctx, dg2[0], dg2[1], dg2[2], dg2[3], dg2[4], G,
                                                 u.saved, u.p[0], u.p[1], u.p[3], mask, b, h, wf,
                                                 c, nb, fac, lam) == WX_OK, "afno backward x2");
    for (int i = 0; i < 5; i++) {
        double *want = malloc(sizeof(double) * u.n[i]);
        for (int64_t j = 0; j < u.n[i]; j++) want[j] = (i == 0 ? 1 : 2) * dg[i][j];
        snprintf(what, sizeof what, "afno %s after two backward calls", names[i]);
        WX_CHECK_CLOSE_F64(what, dg2[i], want, u.n[i], 1e-14, 0);
        free(want), free(dg[i]), free(dg2[i]), free(u.p[i]);
    }
    free(mask), free(u.Y), free(u.saved), free(G);
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(0);
    check_fft(ctx, 2, 6, 8, 3); /* even H, even W */
    check_fft(ctx, 1, 5, 6, 2); /* odd H, even W */
    check_fft(ctx, 1, 4, 7, 2); /* odd W: no Nyquist column */
    check_afno(ctx, 2, 4, 6, 8, 2, 1, 0.05, 1);
    check_afno(ctx, 1, 5, 8, 8, 4, 2, 0.05, 0);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
