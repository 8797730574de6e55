/* CUDA backend vs CPU backend, op by op, through the two backend tables.
 *
 * For every op in ops/ops.def: fresh random inputs on the host, the CPU op, the same inputs on the
 * device, the CUDA op, results copied back and compared. Every device output sits between guard
 * regions and is poisoned with NaN before each run (accumulating outputs start from the same
 * random values as the CPU's); the guards must come back untouched, the inputs unchanged, and two
 * runs must agree bit for bit.
 *
 * Tolerances, relative to the largest |CPU value| of the tensor:
 *   1e-5  element-wise ops, reductions (double on both sides, different order) and FFTs (cuFFT vs
 *         FFTW, both fp32: errors ~ eps·log N);
 *   1e-4  GEMM-based ops (linear, patch_embed, afno_filter): cuBLAS and OpenBLAS round fp32
 *         partial sums in different orders and blockings; the worst case grows with K·eps·Σ|a||b|,
 *         which exceeds 1e-5·max|y| when terms cancel (K up to 64 here);
 *   0     ops that sum in the CPU's own order or only move data (gather/segment sums, concat,
 *         unpatchify, add backward): checked bit for bit;
 *   1e-2  bf16 GEMMs on random inputs (the bound; torch float64 puts the error of bf16
 *         inputs at ~2e-3 for these shapes), and 1e-4 on inputs exact in bf16.
 *
 * Without a GPU (wx_cuda_device_count gives 0) the host-side checks run (table complete, clean
 * "no CUDA device" errors, argument checks before any device work) and the test exits 77. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "backend/wx_backend.h"
#include "ops/graph_csr.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"

#define TOL 1e-5
#define TOL_GEMM 1e-4
#define GUARD 64 /* floats before and after each output: 256 bytes keep outputs aligned */

#include "cuda_op_harness.h"

#define F(n) (sizeof(float) * (size_t)(n))

/* ---- dense ------------------------------------------------------------------------------------ */

static void test_linear(int64_t n, int64_t in, int64_t out, int bias, uint64_t seed) {
    float *x = rnd(n * in, seed, -1, 1), *w = rnd(out * in, seed + 1, -1, 1);
    float *b = rnd(out, seed + 2, -1, 1), *dy = rnd(n * out, seed + 3, -1, 1);
    float *dw0 = rnd(out * in, seed + 4, -1, 1), *db0 = rnd(out, seed + 5, -1, 1);
    float *y = zeros(n * out), *dx = zeros(n * in), *dw = dup(dw0, out * in), *db = dup(db0, out);
    const float *bb = bias ? b : NULL;
    cuda_ok(cpu->linear_forward(ctx, y, x, w, bb, n, in, out), "cpu linear");
    cuda_ok(cpu->linear_backward(ctx, dx, dw, bias ? db : NULL, dy, x, w, n, in, out), "cpu linear bwd");
    float *gx = dev_in(x, F(n * in), "x"), *gw = dev_in(w, F(out * in), "w");
    float *gb = bias ? dev_in(b, F(out), "b") : NULL, *gdy = dev_in(dy, F(n * out), "dy");
    dev_output *Y = dev_out("linear y", n * out, NULL), *DX = dev_out("linear dx", n * in, NULL);
    dev_output *DW = dev_out("linear dw", out * in, dw0), *DB = dev_out("linear db", out, db0);
    GPU_RUNS("linear", {
        cuda_ok(cu->linear_forward(ctx, Y->dev, gx, gw, gb, n, in, out), "cuda linear");
        cuda_ok(cu->linear_backward(ctx, DX->dev, DW->dev, bias ? DB->dev : NULL, gdy, gx, gw, n,
                                    in, out), "cuda linear bwd");
    });
    expect(Y, y, TOL_GEMM);
    expect(DX, dx, TOL_GEMM);
    expect(DW, dw, TOL_GEMM);
    expect(DB, db, TOL); /* a column sum, not a GEMM; without bias it must stay at db0 */
    case_end("linear");
    free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(y), free(dx), free(dw), free(db);
}

/* bf16 inputs, fp32 accumulation. exact_inputs: values k/64 in [-1, 1], which bf16 holds exactly,
 * so only the accumulation order differs from the fp32 CPU. */
static void test_linear_bf16(int exact_inputs) {
    const int64_t n = 37, in = 53, out = 29;
    float *x = rnd(n * in, 901, -1, 1), *w = rnd(out * in, 902, -1, 1), *dy = rnd(n * out, 903, -1, 1);
    if (exact_inputs) {
        for (int64_t i = 0; i < n * in; i++) x[i] = roundf(x[i] * 64) / 64;
        for (int64_t i = 0; i < out * in; i++) w[i] = roundf(w[i] * 64) / 64;
        for (int64_t i = 0; i < n * out; i++) dy[i] = roundf(dy[i] * 64) / 64;
    }
    /* with a bias: the bias pass and the backward's shared bf16 copy of dy are in this path */
    float *bias = rnd(out, 904, -1, 1);
    if (exact_inputs)
        for (int64_t i = 0; i < out; i++) bias[i] = roundf(bias[i] * 64) / 64;
    float *y = zeros(n * out), *dx = zeros(n * in), *dw = zeros(out * in), *db = zeros(out);
    cuda_ok(cpu->linear_forward(ctx, y, x, w, bias, n, in, out), "cpu linear");
    cuda_ok(cpu->linear_backward(ctx, dx, dw, db, dy, x, w, n, in, out), "cpu linear bwd");
    float *gx = dev_in(x, F(n * in), "x"), *gw = dev_in(w, F(out * in), "w");
    float *gdy = dev_in(dy, F(n * out), "dy"), *gb = dev_in(bias, F(out), "b");
    float *dw0 = zeros(out * in), *db0 = zeros(out);
    dev_output *Y = dev_out("bf16 linear y", n * out, NULL);
    dev_output *DX = dev_out("bf16 linear dx", n * in, NULL);
    dev_output *DW = dev_out("bf16 linear dw", out * in, dw0);
    dev_output *DB = dev_out("bf16 linear db", out, db0);
    cuda_ok(wx_cuda_set_precision(ctx, WX_CUDA_BF16), "set bf16");
    GPU_RUNS("linear bf16", {
        cuda_ok(cu->linear_forward(ctx, Y->dev, gx, gw, gb, n, in, out), "cuda linear");
        cuda_ok(cu->linear_backward(ctx, DX->dev, DW->dev, DB->dev, gdy, gx, gw, n, in, out),
                "cuda linear bwd");
    });
    cuda_ok(wx_cuda_set_precision(ctx, WX_CUDA_FP32), "set fp32");
    double tol = exact_inputs ? TOL_GEMM : 1e-2;
    expect(Y, y, tol);
    expect(DX, dx, tol);
    expect(DW, dw, tol);
    expect(DB, db, TOL); /* a column sum of the fp32 dy: no rounding */
    if (!exact_inputs) { /* the bf16 path must really round: fp32 would be within 1e-4 */
        double worst = 0, scale = 0;
        for (int64_t i = 0; i < n * out; i++) {
            worst = fmax(worst, fabs((double)Y->got[0][i] - y[i]));
            scale = fmax(scale, fabs(y[i]));
        }
        WX_CHECK(worst > 1e-4 * scale, "bf16 linear: error %.3e of scale %.3e looks like fp32",
                 worst, scale);
    }
    case_end("linear bf16");
    free(x), free(w), free(dy), free(y), free(dx), free(dw), free(dw0), free(bias), free(db), free(db0);
}

static void test_layernorm(void) {
    const int64_t n = 300, c = 300; /* > one chunk of rows, > one block of threads per row */
    float *x = rnd(n * c, 11, 2, 4), *g = rnd(c, 12, 0.5, 1.5), *b = rnd(c, 13, -1, 1);
    float *dy = rnd(n * c, 14, -1, 1), *dg0 = rnd(c, 15, -1, 1), *db0 = rnd(c, 16, -1, 1);
    float *y = zeros(n * c), *mu = zeros(n), *rs = zeros(n), *dx = zeros(n * c);
    float *dg = dup(dg0, c), *db = dup(db0, c);
    cuda_ok(cpu->layernorm_forward(ctx, y, mu, rs, x, g, b, n, c, 1e-5), "cpu ln");
    cuda_ok(cpu->layernorm_backward(ctx, dx, dg, db, dy, x, mu, rs, g, n, c), "cpu ln bwd");
    float *gx = dev_in(x, F(n * c), "x"), *gg = dev_in(g, F(c), "gamma");
    float *gb = dev_in(b, F(c), "beta"), *gdy = dev_in(dy, F(n * c), "dy");
    /* The backward reads the CPU's saved mean/rstd, so it is tested on its own. */
    float *gmu = dev_in(mu, F(n), "mean"), *grs = dev_in(rs, F(n), "rstd");
    dev_output *Y = dev_out("layernorm y", n * c, NULL), *MU = dev_out("layernorm mean", n, NULL);
    dev_output *RS = dev_out("layernorm rstd", n, NULL), *DX = dev_out("layernorm dx", n * c, NULL);
    dev_output *DG = dev_out("layernorm dgamma", c, dg0), *DB = dev_out("layernorm dbeta", c, db0);
    GPU_RUNS("layernorm", {
        cuda_ok(cu->layernorm_forward(ctx, Y->dev, MU->dev, RS->dev, gx, gg, gb, n, c, 1e-5), "ln");
        cuda_ok(cu->layernorm_backward(ctx, DX->dev, DG->dev, DB->dev, gdy, gx, gmu, grs, gg, n, c),
                "ln bwd");
    });
    expect(Y, y, TOL), expect(MU, mu, TOL), expect(RS, rs, TOL);
    expect(DX, dx, TOL), expect(DG, dg, TOL), expect(DB, db, TOL);
    case_end("layernorm");
    free(x), free(g), free(b), free(dy), free(dg0), free(db0), free(y), free(mu), free(rs);
    free(dx), free(dg), free(db);
}

static void test_activations(void) {
    const int64_t n = 100003;
    const double lam = 0.5;
    float *x = rnd(n, 21, -4, 4), *dy = rnd(n, 22, -1, 1), *b = rnd(n, 23, -1, 1);
    float *gx = dev_in(x, F(n), "x"), *gdy = dev_in(dy, F(n), "dy"), *gb = dev_in(b, F(n), "b");
    float *ref[10];
    for (int i = 0; i < 10; i++) ref[i] = zeros(n);
    cuda_ok(cpu->gelu_forward(ctx, ref[0], x, n), "cpu");
    cuda_ok(cpu->gelu_backward(ctx, ref[1], dy, x, n), "cpu");
    cuda_ok(cpu->silu_forward(ctx, ref[2], x, n), "cpu");
    cuda_ok(cpu->silu_backward(ctx, ref[3], dy, x, n), "cpu");
    cuda_ok(cpu->relu_forward(ctx, ref[4], x, n), "cpu");
    cuda_ok(cpu->relu_backward(ctx, ref[5], dy, x, n), "cpu");
    cuda_ok(cpu->softshrink_forward(ctx, ref[6], x, n, lam), "cpu");
    cuda_ok(cpu->softshrink_backward(ctx, ref[7], dy, x, n, lam), "cpu");
    cuda_ok(cpu->add_forward(ctx, ref[8], x, b, n), "cpu");
    cuda_ok(cpu->add_backward(ctx, ref[9], NULL, dy, n), "cpu");
    const char *names[10] = {"gelu y", "gelu dx", "silu y", "silu dx", "relu y", "relu dx",
                             "softshrink y", "softshrink dx", "add y", "add da"};
    dev_output *o[11];
    for (int i = 0; i < 10; i++) o[i] = dev_out(names[i], n, NULL);
    o[10] = dev_out("add db", n, NULL);
    GPU_RUNS("activations", {
        cuda_ok(cu->gelu_forward(ctx, o[0]->dev, gx, n), "gelu");
        cuda_ok(cu->gelu_backward(ctx, o[1]->dev, gdy, gx, n), "gelu bwd");
        cuda_ok(cu->silu_forward(ctx, o[2]->dev, gx, n), "silu");
        cuda_ok(cu->silu_backward(ctx, o[3]->dev, gdy, gx, n), "silu bwd");
        cuda_ok(cu->relu_forward(ctx, o[4]->dev, gx, n), "relu");
        cuda_ok(cu->relu_backward(ctx, o[5]->dev, gdy, gx, n), "relu bwd");
        cuda_ok(cu->softshrink_forward(ctx, o[6]->dev, gx, n, lam), "softshrink");
        cuda_ok(cu->softshrink_backward(ctx, o[7]->dev, gdy, gx, n, lam), "softshrink bwd");
        cuda_ok(cu->add_forward(ctx, o[8]->dev, gx, gb, n), "add");
        cuda_ok(cu->add_backward(ctx, o[9]->dev, o[10]->dev, gdy, n), "add bwd");
    });
    for (int i = 0; i < 4; i++) expect(o[i], ref[i], TOL); /* erff / expf: a few ulp apart */
    for (int i = 4; i < 10; i++) expect_exact(o[i], ref[i]);
    expect_exact(o[10], ref[9]);
    case_end("activations");
    free(x), free(dy), free(b);
    for (int i = 0; i < 10; i++) free(ref[i]);
}

static void test_concat(void) {
    enum { K = 3 };
    const int64_t n = 17, cs[K] = {3, 0, 5}, ctot = 8;
    float *xs[K], *gxs[K], *dy = rnd(n * ctot, 34, -1, 1), *y = zeros(n * ctot);
    float *dxs[K] = {zeros(n * cs[0]), NULL, zeros(n * cs[2])};
    for (int i = 0; i < K; i++) {
        xs[i] = rnd(n * cs[i], 31 + i, -1, 1);
        gxs[i] = dev_in(xs[i], F(n * cs[i]), "x_i");
    }
    float *gdy = dev_in(dy, F(n * ctot), "dy");
    cuda_ok(cpu->concat_forward(ctx, y, (const float *const *)xs, cs, K, n), "cpu concat");
    cuda_ok(cpu->concat_backward(ctx, dxs, dy, cs, K, n), "cpu concat bwd");
    dev_output *Y = dev_out("concat y", n * ctot, NULL);
    dev_output *D0 = dev_out("concat dx0", n * cs[0], NULL), *D2 = dev_out("concat dx2", n * cs[2], NULL);
    GPU_RUNS("concat", {
        float *gd[K] = {D0->dev, NULL, D2->dev};
        cuda_ok(cu->concat_forward(ctx, Y->dev, (const float *const *)gxs, cs, K, n), "concat");
        cuda_ok(cu->concat_backward(ctx, gd, gdy, cs, K, n), "concat bwd");
    });
    expect_exact(Y, y), expect_exact(D0, dxs[0]), expect_exact(D2, dxs[2]);
    case_end("concat");
    for (int i = 0; i < K; i++) free(xs[i]), free(dxs[i]);
    free(dy), free(y);
}

static void test_patch_ops(void) {
    const int64_t b = 2, cin = 3, h = 8, wd = 12, p = 4, d = 10, hp = h / p, wp = wd / p;
    const int64_t nx = b * cin * h * wd, ny = b * hp * wp * d, nw = d * cin * p * p;
    float *x = rnd(nx, 41, -1, 1), *w = rnd(nw, 42, -1, 1), *bias = rnd(d, 43, -1, 1);
    float *dy = rnd(ny, 44, -1, 1), *dw0 = rnd(nw, 45, -1, 1), *db0 = rnd(d, 46, -1, 1);
    float *y = zeros(ny), *dx = zeros(nx), *dw = dup(dw0, nw), *db = dup(db0, d);
    cuda_ok(cpu->patch_embed_forward(ctx, y, x, w, bias, b, cin, h, wd, p, d), "cpu patch");
    cuda_ok(cpu->patch_embed_backward(ctx, dx, dw, db, dy, x, w, b, cin, h, wd, p, d), "cpu bwd");
    /* unpatchify: y(B,Hp,Wp,p·p·C) → out(B,C,H,W), C = cin */
    const int64_t nu = b * hp * wp * p * p * cin;
    float *u = rnd(nu, 47, -1, 1), *dout = rnd(nu, 48, -1, 1), *uo = zeros(nu), *du = zeros(nu);
    cuda_ok(cpu->unpatchify_forward(ctx, uo, u, b, cin, hp, wp, p), "cpu unpatchify");
    cuda_ok(cpu->unpatchify_backward(ctx, du, dout, b, cin, hp, wp, p), "cpu unpatchify bwd");
    /* pos_embed over the tokens: x(B,N,D) + pos(N,D) */
    const int64_t nt = hp * wp, npe = b * nt * d;
    float *pos = rnd(nt * d, 49, -1, 1), *dp0 = rnd(nt * d, 50, -1, 1);
    float *pe = zeros(npe), *pdx = zeros(npe), *dpos = dup(dp0, nt * d);
    cuda_ok(cpu->pos_embed_forward(ctx, pe, dy, pos, b, nt, d), "cpu pos");
    cuda_ok(cpu->pos_embed_backward(ctx, pdx, dpos, dy, b, nt, d), "cpu pos bwd");

    float *gx = dev_in(x, F(nx), "x"), *gw = dev_in(w, F(nw), "w"), *gbias = dev_in(bias, F(d), "bias");
    float *gdy = dev_in(dy, F(ny), "dy"), *gu = dev_in(u, F(nu), "unpatch y");
    float *gdout = dev_in(dout, F(nu), "dout"), *gpos = dev_in(pos, F(nt * d), "pos");
    dev_output *Y = dev_out("patch_embed y", ny, NULL), *DX = dev_out("patch_embed dx", nx, NULL);
    dev_output *DW = dev_out("patch_embed dw", nw, dw0), *DB = dev_out("patch_embed dbias", d, db0);
    dev_output *UO = dev_out("unpatchify out", nu, NULL), *DU = dev_out("unpatchify dy", nu, NULL);
    dev_output *PE = dev_out("pos_embed y", npe, NULL), *PDX = dev_out("pos_embed dx", npe, NULL);
    dev_output *DPOS = dev_out("pos_embed dpos", nt * d, dp0);
    GPU_RUNS("patch ops", {
        cuda_ok(cu->patch_embed_forward(ctx, Y->dev, gx, gw, gbias, b, cin, h, wd, p, d), "patch");
        cuda_ok(cu->patch_embed_backward(ctx, DX->dev, DW->dev, DB->dev, gdy, gx, gw, b, cin, h, wd,
                                         p, d), "patch bwd");
        cuda_ok(cu->unpatchify_forward(ctx, UO->dev, gu, b, cin, hp, wp, p), "unpatchify");
        cuda_ok(cu->unpatchify_backward(ctx, DU->dev, gdout, b, cin, hp, wp, p), "unpatchify bwd");
        cuda_ok(cu->pos_embed_forward(ctx, PE->dev, gdy, gpos, b, nt, d), "pos");
        cuda_ok(cu->pos_embed_backward(ctx, PDX->dev, DPOS->dev, gdy, b, nt, d), "pos bwd");
    });
    expect(Y, y, TOL_GEMM), expect(DX, dx, TOL_GEMM), expect(DW, dw, TOL_GEMM);
    expect(DB, db, TOL);
    expect_exact(UO, uo), expect_exact(DU, du);
    expect_exact(PE, pe), expect_exact(PDX, pdx), expect(DPOS, dpos, TOL);
    case_end("patch ops");
    free(x), free(w), free(bias), free(dy), free(dw0), free(db0), free(y), free(dx), free(dw);
    free(db), free(u), free(dout), free(uo), free(du), free(pos), free(dp0), free(pe), free(pdx);
    free(dpos);
}

/* ---- spectral ---------------------------------------------------------------------------------- */

static void test_fft(int64_t b, int64_t h, int64_t w, int64_t c, uint64_t seed) {
    const int64_t wf = w / 2 + 1, nr = b * h * w * c, nc = b * h * wf * c * 2;
    /* X is a random one-sided spectrum, not Hermitian-consistent on kx = 0 / Nyquist: this is what
     * exercises the torch irfft2 semantics. */
    float *x = rnd(nr, seed, -1, 1), *X = rnd(nc, seed + 1, -1, 1);
    float *dX = rnd(nc, seed + 2, -1, 1), *dy = rnd(nr, seed + 3, -1, 1);
    float *rX = zeros(nc), *rdx = zeros(nr), *ry = zeros(nr), *rdX = zeros(nc);
    cuda_ok(cpu->rfft2_forward(ctx, rX, x, b, h, w, c), "cpu rfft2");
    cuda_ok(cpu->rfft2_backward(ctx, rdx, dX, b, h, w, c), "cpu rfft2 bwd");
    cuda_ok(cpu->irfft2_forward(ctx, ry, X, b, h, w, c), "cpu irfft2");
    cuda_ok(cpu->irfft2_backward(ctx, rdX, dy, b, h, w, c), "cpu irfft2 bwd");
    float *gx = dev_in(x, F(nr), "x"), *gX = dev_in(X, F(nc), "X");
    float *gdX = dev_in(dX, F(nc), "dX"), *gdy = dev_in(dy, F(nr), "dy");
    dev_output *oX = dev_out("rfft2 X", nc, NULL), *odx = dev_out("rfft2 dx", nr, NULL);
    dev_output *oy = dev_out("irfft2 y", nr, NULL), *odX = dev_out("irfft2 dX", nc, NULL);
    GPU_RUNS("fft", {
        cuda_ok(cu->rfft2_forward(ctx, oX->dev, gx, b, h, w, c), "rfft2");
        cuda_ok(cu->rfft2_backward(ctx, odx->dev, gdX, b, h, w, c), "rfft2 bwd");
        cuda_ok(cu->irfft2_forward(ctx, oy->dev, gX, b, h, w, c), "irfft2");
        cuda_ok(cu->irfft2_backward(ctx, odX->dev, gdy, b, h, w, c), "irfft2 bwd");
    });
    expect(oX, rX, TOL), expect(odx, rdx, TOL), expect(oy, ry, TOL), expect(odX, rdX, TOL);
    case_end("fft");
    free(x), free(X), free(dX), free(dy), free(rX), free(rdx), free(ry), free(rdX);
}

/* keep_every: mask[i] = 1 for a pseudo-random subset (or all / none for 1 / 0). */
static void test_afno(int keep, uint64_t seed) {
    const int64_t b = 2, h = 8, wf = 8, c = 8, nb = 2, factor = 2, bs = c / nb, hid = bs * factor;
    const double lam = 0.01;
    const int64_t ns = b * h * wf * c * 2, nw = 2 * nb * bs * hid, nb1 = 2 * nb * hid, nb2 = 2 * nb * bs;
    uint8_t mask[8 * 8];
    int64_t m = 0;
    for (int i = 0; i < h * wf; i++) {
        mask[i] = keep == 1 ? 1 : keep == 0 ? 0 : (uint8_t)((i * 7 + (int)seed) % 5 < 3);
        m += mask[i];
    }
    const int64_t nsaved = wx_afno_filter_saved_len(b, m, c, factor);
    float *X = rnd(ns, seed, -1, 1), *w1 = rnd(nw, seed + 1, -0.5, 0.5), *b1 = rnd(nb1, seed + 2, -0.2, 0.2);
    float *w2 = rnd(nw, seed + 3, -0.5, 0.5), *b2 = rnd(nb2, seed + 4, -0.2, 0.2);
    float *dY = rnd(ns, seed + 5, -1, 1);
    float *dw1_0 = rnd(nw, seed + 6, -1, 1), *db1_0 = rnd(nb1, seed + 7, -1, 1);
    float *dw2_0 = rnd(nw, seed + 8, -1, 1), *db2_0 = rnd(nb2, seed + 9, -1, 1);
    float *Y = zeros(ns), *saved = zeros(nsaved), *dX = zeros(ns);
    float *dw1 = dup(dw1_0, nw), *db1 = dup(db1_0, nb1), *dw2 = dup(dw2_0, nw), *db2 = dup(db2_0, nb2);
    cuda_ok(cpu->afno_filter_forward(ctx, Y, saved, X, w1, b1, w2, b2, mask, b, h, wf, c, nb,
                                     factor, lam), "cpu afno");
    cuda_ok(cpu->afno_filter_backward(ctx, dX, dw1, db1, dw2, db2, dY, saved, X, w1, w2, mask, b, h,
                                      wf, c, nb, factor, lam), "cpu afno bwd");
    float *gX = dev_in(X, F(ns), "X"), *gw1 = dev_in(w1, F(nw), "w1"), *gb1 = dev_in(b1, F(nb1), "b1");
    float *gw2 = dev_in(w2, F(nw), "w2"), *gb2 = dev_in(b2, F(nb2), "b2");
    float *gdY = dev_in(dY, F(ns), "dY");
    uint8_t *gmask = dev_in(mask, (size_t)(h * wf), "mask");
    /* The backward reads the CPU's saved buffer: ReLU / softshrink masks then agree exactly. */
    float *gsaved = dev_in(saved, F(nsaved), "saved (cpu)");
    dev_output *oY = dev_out("afno Y", ns, NULL), *oS = dev_out("afno saved", nsaved, NULL);
    dev_output *odX = dev_out("afno dX", ns, NULL);
    dev_output *odw1 = dev_out("afno dw1", nw, dw1_0), *odb1 = dev_out("afno db1", nb1, db1_0);
    dev_output *odw2 = dev_out("afno dw2", nw, dw2_0), *odb2 = dev_out("afno db2", nb2, db2_0);
    GPU_RUNS("afno", {
        cuda_ok(cu->afno_filter_forward(ctx, oY->dev, oS->dev, gX, gw1, gb1, gw2, gb2, gmask, b, h,
                                        wf, c, nb, factor, lam), "afno");
        cuda_ok(cu->afno_filter_backward(ctx, odX->dev, odw1->dev, odb1->dev, odw2->dev, odb2->dev,
                                         gdY, gsaved, gX, gw1, gw2, gmask, b, h, wf, c, nb, factor,
                                         lam), "afno bwd");
    });
    expect(oY, Y, TOL_GEMM), expect(oS, saved, TOL_GEMM), expect(odX, dX, TOL_GEMM);
    expect(odw1, dw1, TOL_GEMM), expect(odw2, dw2, TOL_GEMM);
    expect(odb1, db1, TOL), expect(odb2, db2, TOL);
    case_end("afno");
    free(X), free(w1), free(b1), free(w2), free(b2), free(dY), free(dw1_0), free(db1_0);
    free(dw2_0), free(db2_0), free(Y), free(saved), free(dX), free(dw1), free(db1), free(dw2);
    free(db2);
}

/* ---- graph ------------------------------------------------------------------------------------- */

static int32_t *rnd_index(int64_t e, int64_t n, uint64_t seed) {
    double *d = malloc(sizeof(double) * (size_t)e);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)e);
    wx_test_fill_uniform(d, e, seed, 0, (double)(n - 2)); /* the last two nodes get no edge */
    for (int64_t i = 0; i < e; i++) idx[i] = (int32_t)d[i];
    free(d);
    return idx;
}

static void test_graph(void) {
    const int64_t n = 23, e = 101, d = 7;
    int32_t *idx = rnd_index(e, n, 61), *recv = rnd_index(e, n, 62);
    int32_t row_ptr[24], perm[101];
    WX_CHECK(wx_graph_csr_build(recv, e, n, row_ptr, perm) == WX_OK, "csr: %s", wx_error_message());
    float *x = rnd(n * d, 63, -1, 1), *ye = rnd(e * d, 64, -1, 1), *dn = rnd(n * d, 65, -1, 1);
    float *g = zeros(e * d), *gdx = zeros(n * d), *s = zeros(n * d), *sdx = zeros(e * d);
    cuda_ok(cpu->gather_rows_forward(ctx, g, x, idx, e, d), "cpu gather");
    cuda_ok(cpu->gather_rows_backward(ctx, gdx, ye, idx, e, n, d), "cpu gather bwd");
    cuda_ok(cpu->segment_sum_forward(ctx, s, ye, row_ptr, perm, n, e, d), "cpu segsum");
    cuda_ok(cpu->segment_sum_backward(ctx, sdx, dn, row_ptr, perm, n, e, d), "cpu segsum bwd");
    float *gx = dev_in(x, F(n * d), "x"), *gye = dev_in(ye, F(e * d), "edge values");
    float *gdn = dev_in(dn, F(n * d), "node grads");
    int32_t *gidx = dev_in(idx, sizeof(int32_t) * (size_t)e, "idx");
    int32_t *grp = dev_in(row_ptr, sizeof row_ptr, "row_ptr"), *gperm = dev_in(perm, sizeof perm, "perm");
    dev_output *oG = dev_out("gather y", e * d, NULL), *oGdx = dev_out("gather dx", n * d, NULL);
    dev_output *oS = dev_out("segment_sum y", n * d, NULL), *oSdx = dev_out("segment_sum dx", e * d, NULL);
    GPU_RUNS("graph", {
        cuda_ok(cu->gather_rows_forward(ctx, oG->dev, gx, gidx, e, d), "gather");
        cuda_ok(cu->gather_rows_backward(ctx, oGdx->dev, gye, gidx, e, n, d), "gather bwd");
        cuda_ok(cu->segment_sum_forward(ctx, oS->dev, gye, grp, gperm, n, e, d), "segsum");
        cuda_ok(cu->segment_sum_backward(ctx, oSdx->dev, gdn, grp, gperm, n, e, d), "segsum bwd");
    });
    expect_exact(oG, g), expect_exact(oGdx, gdx), expect_exact(oS, s), expect_exact(oSdx, sdx);
    case_end("graph");

    /* Invalid indices are reported, not read: the CPU's messages, from device validation. */
    idx[17] = (int32_t)n;
    gidx = dev_in(idx, sizeof(int32_t) * (size_t)e, "bad idx");
    dev_output *o = dev_out("gather dx (bad idx)", n * d, NULL);
    outputs_poison();
    gye = dev_in(ye, F(e * d), "edge values");
    wx_status st = cu->gather_rows_backward(ctx, o->dev, gye, gidx, e, n, d);
    WX_CHECK(st == WX_ERR_RUN && strstr(wx_error_message(), "index[17]"),
             "gather backward with idx[17] = n: status %d, '%s'", st, wx_error_message());
    idx[17] = -1;
    int32_t *gneg = dev_in(idx, sizeof(int32_t) * (size_t)e, "negative idx");
    st = cu->gather_rows_forward(ctx, o->dev, gx = dev_in(x, F(n * d), "x"), gneg, e, d);
    WX_CHECK(st == WX_ERR_RUN && strstr(wx_error_message(), "index[17] = -1"),
             "gather forward with idx[17] = -1: status %d, '%s'", st, wx_error_message());
    row_ptr[5] = row_ptr[6] + 1;
    grp = dev_in(row_ptr, sizeof row_ptr, "bad row_ptr");
    gperm = dev_in(perm, sizeof perm, "perm");
    st = cu->segment_sum_forward(ctx, o->dev, gye, grp, gperm, n, e, d);
    WX_CHECK(st == WX_ERR_RUN && strstr(wx_error_message(), "row_ptr decreases"),
             "segment_sum with a decreasing row_ptr: status %d, '%s'", st, wx_error_message());
    case_end("graph errors");
    free(idx), free(recv), free(x), free(ye), free(dn), free(g), free(gdx), free(s), free(sdx);
}

/* ---- losses and optimizer ---------------------------------------------------------------------- */

static void test_losses(void) {
    const int64_t b = 2, c = 3, h = 5, w = 300, n = b * c * h * w;
    const int64_t rb = 2, rn = 20000; /* rel_l2: three chunks of 8192 per sample */
    float *p = rnd(n, 71, -1, 1), *t = rnd(n, 72, -1, 1), *wlat = rnd(h, 73, 0.2, 1.2);
    float *wch = rnd(c, 74, 0.5, 2), *rp = rnd(rb * rn, 75, -1, 1), *rt = rnd(rb * rn, 76, -1, 1);
    float l1, l2, l3, *d1 = zeros(n), *d2 = zeros(n), *d3 = zeros(rb * rn);
    cuda_ok(cpu->mse_latw_forward(ctx, &l1, p, t, wlat, wch, b, c, h, w), "cpu mse");
    cuda_ok(cpu->mse_latw_forward(ctx, &l2, p, t, wlat, NULL, b, c, h, w), "cpu mse");
    cuda_ok(cpu->mse_latw_backward(ctx, d1, 0.7, p, t, wlat, wch, b, c, h, w), "cpu mse bwd");
    cuda_ok(cpu->mse_latw_backward(ctx, d2, 0.7, p, t, wlat, NULL, b, c, h, w), "cpu mse bwd");
    cuda_ok(cpu->rel_l2_forward(ctx, &l3, rp, rt, rb, rn), "cpu rel_l2");
    cuda_ok(cpu->rel_l2_backward(ctx, d3, 1.3, rp, rt, rb, rn), "cpu rel_l2 bwd");
    float *gp = dev_in(p, F(n), "pred"), *gt = dev_in(t, F(n), "target");
    float *gwlat = dev_in(wlat, F(h), "wlat"), *gwch = dev_in(wch, F(c), "wch");
    float *grp = dev_in(rp, F(rb * rn), "pred"), *grt = dev_in(rt, F(rb * rn), "target");
    dev_output *L1 = dev_out("mse_latw loss", 1, NULL), *L2 = dev_out("mse_latw loss (no wch)", 1, NULL);
    dev_output *L3 = dev_out("rel_l2 loss", 1, NULL);
    dev_output *D1 = dev_out("mse_latw dpred", n, NULL), *D2 = dev_out("mse_latw dpred (no wch)", n, NULL);
    dev_output *D3 = dev_out("rel_l2 dpred", rb * rn, NULL);
    GPU_RUNS("losses", {
        cuda_ok(cu->mse_latw_forward(ctx, L1->dev, gp, gt, gwlat, gwch, b, c, h, w), "mse");
        cuda_ok(cu->mse_latw_forward(ctx, L2->dev, gp, gt, gwlat, NULL, b, c, h, w), "mse");
        cuda_ok(cu->mse_latw_backward(ctx, D1->dev, 0.7, gp, gt, gwlat, gwch, b, c, h, w), "mse bwd");
        cuda_ok(cu->mse_latw_backward(ctx, D2->dev, 0.7, gp, gt, gwlat, NULL, b, c, h, w), "mse bwd");
        cuda_ok(cu->rel_l2_forward(ctx, L3->dev, grp, grt, rb, rn), "rel_l2");
        cuda_ok(cu->rel_l2_backward(ctx, D3->dev, 1.3, grp, grt, rb, rn), "rel_l2 bwd");
    });
    expect(L1, &l1, TOL), expect(L2, &l2, TOL), expect(L3, &l3, TOL);
    expect(D1, d1, TOL), expect(D2, d2, TOL), expect(D3, d3, TOL);
    case_end("losses");

    /* A zero target sample is rejected, as on the CPU. */
    memset(rt + rn, 0, F(rn));
    grt = dev_in(rt, F(rb * rn), "zero target");
    grp = dev_in(rp, F(rb * rn), "pred");
    dev_output *L = dev_out("rel_l2 loss (zero target)", 1, NULL);
    outputs_poison();
    wx_status st = cu->rel_l2_forward(ctx, L->dev, grp, grt, rb, rn);
    WX_CHECK(st == WX_ERR_RUN && strstr(wx_error_message(), "target sample 1"),
             "rel_l2 with a zero target: status %d, '%s'", st, wx_error_message());
    case_end("losses errors");
    free(p), free(t), free(wlat), free(wch), free(rp), free(rt), free(d1), free(d2), free(d3);
}

static void test_optim(void) {
    const int64_t n = 50000; /* four chunks of 16384 for the sum of squares */
    float *p0 = rnd(n, 81, -1, 1), *m0 = rnd(n, 82, -0.1, 0.1), *v0 = rnd(n, 83, 0, 0.01);
    float *g = rnd(n, 84, -1, 1);
    float *p = dup(p0, n), *m = dup(m0, n), *v = dup(v0, n), *sc = dup(p0, n);
    cuda_ok(cpu->adamw_forward(ctx, p, m, v, g, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, 3), "cpu adamw");
    double sumsq = 1.5;
    cuda_ok(cpu->grad_norm_forward(ctx, &sumsq, g, n), "cpu grad_norm");
    cuda_ok(cpu->scale_forward(ctx, sc, n, 0.37), "cpu scale");
    float *gg = dev_in(g, F(n), "grad");
    dev_output *P = dev_out("adamw param", n, p0), *M = dev_out("adamw m", n, m0);
    dev_output *V = dev_out("adamw v", n, v0), *S = dev_out("scale x", n, p0);
    double init = 1.5;
    float init_f[2];
    memcpy(init_f, &init, sizeof init);
    dev_output *SS = dev_out("grad_norm sumsq", 2, init_f); /* one double in two float slots */
    GPU_RUNS("optim", {
        cuda_ok(cu->adamw_forward(ctx, P->dev, M->dev, V->dev, gg, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, 3),
                "adamw");
        cuda_ok(cu->grad_norm_forward(ctx, (double *)SS->dev, gg, n), "grad_norm");
        cuda_ok(cu->scale_forward(ctx, S->dev, n, 0.37), "scale");
    });
    expect(P, p, TOL), expect(M, m, TOL), expect(V, v, TOL), expect(S, sc, TOL);
    double got[2];
    memcpy(&got[0], SS->got[0], sizeof(double));
    memcpy(&got[1], SS->got[1], sizeof(double));
    WX_CHECK_CLOSE_F64("grad_norm sumsq", &got[0], &sumsq, 1, 1e-10, 0.0); /* double sums, two orders */
    WX_CHECK(memcmp(&got[0], &got[1], sizeof(double)) == 0, "grad_norm: two GPU runs differ");
    case_end("optim");
    free(p0), free(m0), free(v0), free(g), free(p), free(m), free(v), free(sc);
}

/* ---- host-side checks (run with or without a GPU) ---------------------------------------------- */

static void test_table(void) {
    const wx_backend *t = wx_backend_cuda();
    WX_CHECK(t && strcmp(t->name, "cuda") == 0, "CUDA table name");
#define WX_OP(op, family)                                                                   \
    WX_CHECK(t->op##_forward == wx_cuda_##op##_forward, "table: %s_forward", #op);          \
    WX_CHECK(t->op##_backward == wx_cuda_##op##_backward, "table: %s_backward", #op);
#define WX_OP_FWD(op, family) \
    WX_CHECK(t->op##_forward == wx_cuda_##op##_forward, "table: %s_forward", #op);
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD
}

/* The FFT ops' argument checks come before any device work (dummy pointers are safe), with or
 * without a GPU: a batch past the transposes' 65535, a sample past INT_MAX elements, a complex
 * array that is not 8-byte aligned. */
static void test_fft_arguments(void) {
    wx_ctx *c = wx_ctx_create(1);
    double buf[4] = {0}; /* 8-byte aligned; buf + 1 float is not */
    float *f = (float *)buf;
    wx_status s = wx_backend_cuda()->rfft2_forward(c, f, f, 70000, 2, 2, 1);
    WX_CHECK(s == WX_ERR_USAGE && strstr(wx_error_message(), "rfft2: batch 70000 exceeds 65535"),
             "rfft2 batch 70000: status %d, '%s'", s, wx_error_message());
    s = wx_backend_cuda()->irfft2_backward(c, f, f, 1, 50000, 50000, 1);
    WX_CHECK(s == WX_ERR_USAGE && strstr(wx_error_message(), "irfft2_backward: H·W·C = 50000·50000·1"),
             "irfft2_backward 50000x50000: status %d, '%s'", s, wx_error_message());
    s = wx_backend_cuda()->irfft2_forward(c, f, f + 1, 1, 2, 2, 1);
    WX_CHECK(s == WX_ERR_USAGE && strstr(wx_error_message(), "irfft2: complex array at") &&
             strstr(wx_error_message(), "not 8-byte aligned"),
             "irfft2 of a misaligned spectrum: status %d, '%s'", s, wx_error_message());
    WX_CHECK(c->cuda == NULL, "argument checks made no CUDA state");
    wx_ctx_destroy(c);
}

static void test_no_device(void) {
    wx_ctx *c = wx_ctx_create(1);
    float dummy = 0;
    /* No device is touched before the state exists, so dummy pointers are safe here. */
    wx_status s = wx_backend_cuda()->relu_forward(c, &dummy, &dummy, 1);
    WX_CHECK(s == WX_ERR_RUN && strstr(wx_error_message(), "no CUDA device"),
             "an op without a GPU: status %d, '%s'", s, wx_error_message());
    s = wx_backend_cuda()->layernorm_forward(c, &dummy, &dummy, &dummy, &dummy, &dummy, &dummy, 1,
                                             0, 1e-5);
    WX_CHECK(s == WX_ERR_USAGE && strstr(wx_error_message(), "C = 0"),
             "argument check before device work: status %d, '%s'", s, wx_error_message());
    s = wx_cuda_ctx_attach(c, 0);
    WX_CHECK(s == WX_ERR_RUN && c->cuda == NULL, "attach without a GPU: status %d", s);
    wx_ctx_destroy(c); /* with ctx->cuda NULL */
}

int main(void) {
    test_table();
    test_fft_arguments();
    int count = 0;
    WX_CHECK(wx_cuda_device_count(&count) == WX_OK, "device count: %s", wx_error_message());
    if (count == 0) {
        test_no_device();
        wx_test_summary();
        printf("no CUDA device visible: CUDA-vs-CPU op checks skipped (compiled, not run)\n");
        return wx_test_failed ? 1 : 77;
    }
    ctx = wx_ctx_create(1);
    cpu = wx_backend_cpu();
    cu = wx_backend_cuda();
    if (!cuda_ok(wx_cuda_ctx_attach(ctx, 0), "attach device 0")) return wx_test_summary();

    test_linear(37, 53, 29, 1, 100);
    test_linear(64, 64, 48, 0, 200);
    test_linear_bf16(1);
    test_linear_bf16(0);
    test_layernorm();
    test_activations();
    test_concat();
    test_patch_ops();
    test_fft(2, 12, 18, 5, 300); /* W even: a Nyquist column */
    test_fft(1, 9, 15, 3, 400);  /* H and W odd */
    test_fft(3, 20, 36, 70, 410); /* several 32x32 transpose tiles each way, partial edges */
    test_fft(1, 20, 36, 70, 420); /* the same planes at batch 1 after 3: its own plan, shared work */
    test_fft(1, 64, 65600, 1, 430); /* H·Wf > 65535·32: the transposes' grid-y stride loop */
    test_afno(2, 500);           /* a mixed mask ... */
    test_afno(2, 501);           /* ... another one (the kept-mode cache must follow) */
    test_afno(1, 502);           /* all modes */
    test_afno(0, 503);           /* none: Y and dX zero */
    test_graph();
    test_losses();
    test_optim();

    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
#else
int main(void) {
    printf("built without CUDA: skipped\n");
    return 77;
}
#endif
