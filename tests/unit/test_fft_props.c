/* Property tests for the FFT wrapper (rfft2 / irfft2, ortho): round trip, Parseval, the adjoint
 * (dot-product) identities of both backward passes, agreement with a naive double-loop DFT at tiny
 * sizes (torch's irfft2 semantics written out for non-Hermitian input), unaligned buffers, and
 * bitwise repeatability. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wx_ops.h"
#include "wx_test.h"

static double *rnd(int64_t n, uint64_t seed) {
    double *x = malloc(sizeof(double) * (size_t)n);
    wx_test_fill_uniform(x, n, seed, -1, 1);
    return x;
}

static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* X[ky,kx] = s·Σ x e^{−iθ}, kx < Wf. */
static void naive_rfft2(double *X, const double *x, int64_t b, int64_t h, int64_t w, int64_t c) {
    int64_t wf = w / 2 + 1;
    double s = 1 / sqrt((double)(h * w));
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t ky = 0; ky < h; ky++)
            for (int64_t kx = 0; kx < wf; kx++)
                for (int64_t ch = 0; ch < c; ch++) {
                    double re = 0, im = 0;
                    for (int64_t yy = 0; yy < h; yy++)
                        for (int64_t xx = 0; xx < w; xx++) {
                            double th = 2 * M_PI * ((double)(ky * yy) / h + (double)(kx * xx) / w);
                            double v = x[((bi * h + yy) * w + xx) * c + ch];
                            re += v * cos(th), im -= v * sin(th);
                        }
                    double *o = X + (((bi * h + ky) * wf + kx) * c + ch) * 2;
                    o[0] = s * re, o[1] = s * im;
                }
}

/* torch.fft.irfft2 for any one-sided X: inverse DFT along H (complex), then along W a c2r that
 * counts interior columns twice and takes only the real part of kx = 0 and kx = W/2. */
static void naive_irfft2(double *y, const double *X, int64_t b, int64_t h, int64_t w, int64_t c) {
    int64_t wf = w / 2 + 1;
    double s = 1 / sqrt((double)(h * w));
    double *g = malloc(sizeof(double) * 2 * (size_t)wf);
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t yy = 0; yy < h; yy++) {
                for (int64_t kx = 0; kx < wf; kx++) {
                    double re = 0, im = 0;
                    for (int64_t ky = 0; ky < h; ky++) {
                        const double *z = X + (((bi * h + ky) * wf + kx) * c + ch) * 2;
                        double th = 2 * M_PI * (double)(ky * yy) / h;
                        re += z[0] * cos(th) - z[1] * sin(th);
                        im += z[0] * sin(th) + z[1] * cos(th);
                    }
                    g[2 * kx] = re, g[2 * kx + 1] = im;
                }
                for (int64_t xx = 0; xx < w; xx++) {
                    double v = 0;
                    for (int64_t kx = 0; kx < wf; kx++) {
                        double ph = 2 * M_PI * (double)(kx * xx) / w;
                        if (kx == 0) v += g[0];
                        else if (2 * kx == w) v += g[2 * kx] * cos(ph);
                        else v += 2 * (g[2 * kx] * cos(ph) - g[2 * kx + 1] * sin(ph));
                    }
                    y[((bi * h + yy) * w + xx) * c + ch] = s * v;
                }
            }
    free(g);
}

static void check_size(wx_ctx *ctx, int64_t b, int64_t h, int64_t w, int64_t c) {
    int64_t wf = w / 2 + 1, nx = b * h * w * c, nX = b * h * wf * c * 2;
    char what[128];
    double *x = rnd(nx, 10 + h * w), *X = malloc(sizeof(double) * nX);
    double *y = malloc(sizeof(double) * nx), *ref = malloc(sizeof(double) * (nX > nx ? nX : nx));

    /* Naive DFT, both directions (irfft2 on a random, non-Hermitian spectrum). */
    WX_CHECK(wx_cpu_rfft2_forward_f64(ctx, X, x, b, h, w, c) == WX_OK, "rfft2");
    naive_rfft2(ref, x, b, h, w, c);
    snprintf(what, sizeof what, "rfft2 f64 vs naive DFT H=%lld W=%lld", (long long)h, (long long)w);
    WX_CHECK_CLOSE_F64(what, X, ref, nX, 1e-13, 0);
    double *Z = rnd(nX, 20 + h * w);
    WX_CHECK(wx_cpu_irfft2_forward_f64(ctx, y, Z, b, h, w, c) == WX_OK, "irfft2");
    naive_irfft2(ref, Z, b, h, w, c);
    snprintf(what, sizeof what, "irfft2 f64 vs naive H=%lld W=%lld", (long long)h, (long long)w);
    WX_CHECK_CLOSE_F64(what, y, ref, nx, 1e-13, 0);
    /* float32 against the same naive references. */
    float *xf = malloc(sizeof(float) * nx), *Xf = malloc(sizeof(float) * nX);
    float *yf = malloc(sizeof(float) * nx), *Zf = malloc(sizeof(float) * nX);
    wx_test_f64_to_f32(xf, x, nx), wx_test_f64_to_f32(Zf, Z, nX);
    WX_CHECK(wx_cpu_rfft2_forward(ctx, Xf, xf, b, h, w, c) == WX_OK, "rfft2 f32");
    naive_rfft2(ref, x, b, h, w, c);
    snprintf(what, sizeof what, "rfft2 f32 vs naive H=%lld W=%lld", (long long)h, (long long)w);
    WX_CHECK_CLOSE_F32(what, Xf, ref, nX, 1e-6, 0);
    WX_CHECK(wx_cpu_irfft2_forward(ctx, yf, Zf, b, h, w, c) == WX_OK, "irfft2 f32");
    naive_irfft2(ref, Z, b, h, w, c);
    snprintf(what, sizeof what, "irfft2 f32 vs naive H=%lld W=%lld", (long long)h, (long long)w);
    WX_CHECK_CLOSE_F32(what, yf, ref, nx, 1e-6, 0);

    /* Round trip irfft2(rfft2(x)) = x. */
    WX_CHECK(wx_cpu_irfft2_forward_f64(ctx, y, X, b, h, w, c) == WX_OK, "irfft2");
    snprintf(what, sizeof what, "round trip f64 H=%lld W=%lld", (long long)h, (long long)w);
    WX_CHECK_CLOSE_F64(what, y, x, nx, 1e-14, 0);
    WX_CHECK(wx_cpu_irfft2_forward(ctx, yf, Xf, b, h, w, c) == WX_OK, "irfft2 f32");
    snprintf(what, sizeof what, "round trip f32 H=%lld W=%lld", (long long)h, (long long)w);
    WX_CHECK_CLOSE_F32(what, yf, x, nx, 1e-6, 0);

    /* Parseval under ortho: Σx² = Σ over the full spectrum (interior columns stand for two). */
    double ex = dot(x, x, nx), eX = 0;
    for (int64_t i = 0; i < nX / 2; i++) {
        int64_t kx = (i / c) % wf;
        eX += (kx == 0 || 2 * kx == w ? 1 : 2) * (X[2 * i] * X[2 * i] + X[2 * i + 1] * X[2 * i + 1]);
    }
    WX_CHECK(fabs(ex - eX) <= 1e-13 * ex, "Parseval H=%lld W=%lld: Σx² %.15g vs spectrum %.15g",
             (long long)h, (long long)w, ex, eX);

    /* Adjoints: <rfft2 x, G> = <x, rfft2ᵀ G> and <irfft2 Z, g> = <Z, irfft2ᵀ g>. */
    double *G = rnd(nX, 30), *g = rnd(nx, 31), *dx = malloc(sizeof(double) * nx);
    double *dZ = malloc(sizeof(double) * nX);
    WX_CHECK(wx_cpu_rfft2_backward_f64(ctx, dx, G, b, h, w, c) == WX_OK, "rfft2_backward");
    double l = dot(X, G, nX), r = dot(x, dx, nx);
    WX_CHECK(fabs(l - r) <= 1e-13 * (fabs(l) + 1), "rfft2 adjoint H=%lld W=%lld: %.15g vs %.15g",
             (long long)h, (long long)w, l, r);
    WX_CHECK(wx_cpu_irfft2_forward_f64(ctx, y, Z, b, h, w, c) == WX_OK, "irfft2");
    WX_CHECK(wx_cpu_irfft2_backward_f64(ctx, dZ, g, b, h, w, c) == WX_OK, "irfft2_backward");
    l = dot(y, g, nx), r = dot(Z, dZ, nX);
    WX_CHECK(fabs(l - r) <= 1e-13 * (fabs(l) + 1), "irfft2 adjoint H=%lld W=%lld: %.15g vs %.15g",
             (long long)h, (long long)w, l, r);
    free(x), free(X), free(y), free(ref), free(Z), free(xf), free(Xf), free(yf), free(Zf);
    free(G), free(g), free(dx), free(dZ);
}

/* Buffers one float off FFTW's alignment (the unaligned plans) must give the same numbers, and
 * the same call twice the same bits. */
static void check_alignment_and_repeat(wx_ctx *ctx) {
    int64_t b = 2, h = 8, w = 12, c = 4, wf = w / 2 + 1, nx = b * h * w * c, nX = b * h * wf * c * 2;
    double *xd = rnd(nx, 40);
    float *xa = malloc(sizeof(float) * nx), *xu = malloc(sizeof(float) * (nx + 1));
    float *Xa = malloc(sizeof(float) * nX), *Xu = malloc(sizeof(float) * (nX + 1));
    float *Xb = malloc(sizeof(float) * nX), *ya = malloc(sizeof(float) * nx);
    float *yu = malloc(sizeof(float) * (nx + 1));
    wx_test_f64_to_f32(xa, xd, nx), wx_test_f64_to_f32(xu + 1, xd, nx);
    WX_CHECK(wx_cpu_rfft2_forward(ctx, Xa, xa, b, h, w, c) == WX_OK, "rfft2 aligned");
    WX_CHECK(wx_cpu_rfft2_forward(ctx, Xu + 1, xu + 1, b, h, w, c) == WX_OK, "rfft2 unaligned");
    WX_CHECK(wx_cpu_rfft2_forward(ctx, Xb, xa, b, h, w, c) == WX_OK, "rfft2 again");
    WX_CHECK(!memcmp(Xa, Xb, sizeof(float) * nX), "rfft2: two identical calls differ");
    double *ref = malloc(sizeof(double) * nX);
    for (int64_t i = 0; i < nX; i++) ref[i] = Xa[i];
    WX_CHECK_CLOSE_F32("rfft2 unaligned vs aligned", Xu + 1, ref, nX, 1e-6, 0);
    WX_CHECK(wx_cpu_irfft2_forward(ctx, ya, Xa, b, h, w, c) == WX_OK, "irfft2 aligned");
    WX_CHECK(wx_cpu_irfft2_forward(ctx, yu + 1, Xu + 1, b, h, w, c) == WX_OK, "irfft2 unaligned");
    WX_CHECK_CLOSE_F32("round trip via unaligned buffers", yu + 1, xd, nx, 1e-6, 0);
    free(xd), free(xa), free(xu), free(Xa), free(Xu), free(Xb), free(ya), free(yu), free(ref);
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(0);
    check_size(ctx, 2, 3, 4, 2);
    check_size(ctx, 2, 4, 5, 2);
    check_size(ctx, 2, 2, 2, 2);
    check_size(ctx, 1, 6, 8, 3);
    check_size(ctx, 1, 7, 1, 2); /* W = 1: a single, DC-only column */
    check_alignment_and_repeat(ctx);
    /* Bad sizes are reported, not crashed on. */
    float dummy[4];
    WX_CHECK(wx_cpu_rfft2_forward(ctx, dummy, dummy, 1, 0, 2, 1) == WX_ERR_USAGE,
             "rfft2 with H = 0 must fail with a usage error");
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
