/* CUDA backend vs CPU backend for the fused dense ops (ops/dense_fused.inc): layernorm_residual and
 * linear_gelu, forward and backward, through the two backend tables, with the harness of
 * test_cuda_ops.c (guarded outputs poisoned with NaN before each run, inputs checked unchanged,
 * two runs bit for bit). Tolerances relative to the largest |CPU value| of each tensor: 1e-5 for
 * the LayerNorm and GELU parts (double reductions on both sides, different orders), 1e-4 for
 * outputs that go through a GEMM (cuBLAS vs OpenBLAS blockings; see test_cuda_ops.c).
 * Without a GPU: the table entries and the argument checks before device work, then exit 77. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "backend/wx_backend.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"

#define TOL 1e-5
#define TOL_GEMM 1e-4
#define GUARD 64

#include "cuda_op_harness.h"

#define F(n) (sizeof(float) * (size_t)(n))

/* ---- layernorm_residual ------------------------------------------------------------------- */

static void test_layernorm_residual(int64_t n, int64_t c, int with_r, int with_z, uint64_t seed) {
    float *a = rnd(n * c, seed, 1, 3), *r = rnd(n * c, seed + 1, -1, 1);
    float *g = rnd(c, seed + 2, 0.5, 1.5), *b = rnd(c, seed + 3, -1, 1);
    float *dy = rnd(n * c, seed + 4, -1, 1), *dz = rnd(n * c, seed + 5, -1, 1);
    float *dres = rnd(n * c, seed + 6, -1, 1);
    float *dg0 = rnd(c, seed + 7, -1, 1), *db0 = rnd(c, seed + 8, -1, 1);
    float *s = zeros(n * c), *y = zeros(n * c), *z = zeros(n * c), *mu = zeros(n), *rs = zeros(n);
    float *ds = zeros(n * c), *dg = dup(dg0, c), *db = dup(db0, c), *ds2 = dup(dres, n * c);
    const float *rr = with_r ? r : NULL, *dzz = with_z ? dz : NULL;
    cuda_ok(cpu->layernorm_residual_forward(ctx, s, y, with_z ? z : NULL, mu, rs, a, rr, g, b, n, c,
                                            1e-6), "cpu fwd");
    cuda_ok(cpu->layernorm_residual_backward(ctx, ds, dg, db, dy, dzz, dres, s, mu, rs, g, n, c),
            "cpu bwd");
    cuda_ok(cpu->layernorm_residual_backward(ctx, ds2, NULL, NULL, dy, dzz, ds2, s, mu, rs, g, n, c),
            "cpu bwd in place");
    float *ga = dev_in(a, F(n * c), "a"), *gr = with_r ? dev_in(r, F(n * c), "r") : NULL;
    float *gg = dev_in(g, F(c), "gamma"), *gb = dev_in(b, F(c), "beta");
    float *gdy = dev_in(dy, F(n * c), "dy"), *gdz = with_z ? dev_in(dz, F(n * c), "dz") : NULL;
    float *gdres = dev_in(dres, F(n * c), "dres");
    /* The backward reads the CPU's saved s, mean and rstd, so it is tested on its own. */
    float *gs = dev_in(s, F(n * c), "s"), *gmu = dev_in(mu, F(n), "mean");
    float *grs = dev_in(rs, F(n), "rstd");
    dev_output *S = dev_out("ln_res s", n * c, NULL), *Y = dev_out("ln_res y", n * c, NULL);
    dev_output *Z = dev_out("ln_res z", n * c, NULL), *MU = dev_out("ln_res mean", n, NULL);
    dev_output *RS = dev_out("ln_res rstd", n, NULL), *DS = dev_out("ln_res ds", n * c, NULL);
    dev_output *DG = dev_out("ln_res dgamma", c, dg0), *DB = dev_out("ln_res dbeta", c, db0);
    dev_output *DS2 = dev_out("ln_res ds (in place over dres)", n * c, dres);
    GPU_RUNS("layernorm_residual", {
        cuda_ok(cu->layernorm_residual_forward(ctx, S->dev, Y->dev, with_z ? Z->dev : NULL, MU->dev,
                                               RS->dev, ga, gr, gg, gb, n, c, 1e-6), "fwd");
        cuda_ok(cu->layernorm_residual_backward(ctx, DS->dev, DG->dev, DB->dev, gdy, gdz, gdres, gs,
                                                gmu, grs, gg, n, c), "bwd");
        cuda_ok(cu->layernorm_residual_backward(ctx, DS2->dev, NULL, NULL, gdy, gdz, DS2->dev, gs,
                                                gmu, grs, gg, n, c), "bwd in place");
    });
    expect(S, s, TOL), expect(Y, y, TOL), expect(MU, mu, TOL), expect(RS, rs, TOL);
    if (with_z) expect(Z, z, TOL);
    expect(DS, ds, TOL), expect(DG, dg, TOL), expect(DB, db, TOL), expect(DS2, ds2, TOL);
    case_end("layernorm_residual");
    free(a), free(r), free(g), free(b), free(dy), free(dz), free(dres), free(dg0), free(db0);
    free(s), free(y), free(z), free(mu), free(rs), free(ds), free(dg), free(db), free(ds2);
}

/* ---- linear_gelu -------------------------------------------------------------------------- */

static void test_linear_gelu(int64_t n, int64_t in, int64_t out, int bias, uint64_t seed) {
    float *x = rnd(n * in, seed, -1, 1), *w = rnd(out * in, seed + 1, -1, 1);
    float *b = rnd(out, seed + 2, -1, 1), *dg = rnd(n * out, seed + 3, -1, 1);
    float *dw0 = rnd(out * in, seed + 4, -1, 1), *db0 = rnd(out, seed + 5, -1, 1);
    float *h = zeros(n * out), *g = zeros(n * out), *dh = zeros(n * out), *dx = zeros(n * in);
    float *dw = dup(dw0, out * in), *db = dup(db0, out);
    const float *bb = bias ? b : NULL;
    cuda_ok(cpu->linear_gelu_forward(ctx, h, g, x, w, bb, n, in, out), "cpu fwd");
    float *g2 = zeros(n * out);
    cuda_ok(cpu->linear_gelu_backward(ctx, dx, dw, bias ? db : NULL, dh, g2, dg, h, x, w, n, in,
                                      out), "cpu bwd");
    float *gx = dev_in(x, F(n * in), "x"), *gw = dev_in(w, F(out * in), "w");
    float *gb = bias ? dev_in(b, F(out), "b") : NULL, *gdg = dev_in(dg, F(n * out), "dg");
    float *gh = dev_in(h, F(n * out), "h (CPU's)");
    dev_output *H = dev_out("linear_gelu h", n * out, NULL);
    dev_output *G = dev_out("linear_gelu g", n * out, NULL);
    dev_output *DH = dev_out("linear_gelu dh", n * out, NULL);
    dev_output *DX = dev_out("linear_gelu dx", n * in, NULL);
    dev_output *DW = dev_out("linear_gelu dw", out * in, dw0);
    dev_output *DB = dev_out("linear_gelu db", out, db0);
    dev_output *DH2 = dev_out("linear_gelu dh (in place over dg)", n * out, dg);
    dev_output *G2 = dev_out("linear_gelu g (backward's)", n * out, NULL);
    GPU_RUNS("linear_gelu", {
        cuda_ok(cu->linear_gelu_forward(ctx, H->dev, G->dev, gx, gw, gb, n, in, out), "fwd");
        cuda_ok(cu->linear_gelu_backward(ctx, DX->dev, DW->dev, bias ? DB->dev : NULL, DH->dev,
                                         G2->dev, gdg, gh, gx, gw, n, in, out), "bwd");
        cuda_ok(cu->linear_gelu_backward(ctx, NULL, NULL, NULL, DH2->dev, NULL, DH2->dev, gh, gx,
                                         gw, n, in, out), "bwd in place");
    });
    expect(H, h, TOL_GEMM), expect(G, g, TOL_GEMM); /* g: GELU of a GEMM result */
    expect(DH, dh, TOL), expect(DH2, dh, TOL);      /* from the CPU's h: element-wise only */
    expect(G2, g2, TOL);
    expect(DX, dx, TOL_GEMM), expect(DW, dw, TOL_GEMM);
    expect(DB, db, TOL); /* a column sum; without bias it must stay at db0 */
    case_end("linear_gelu");
    free(x), free(w), free(b), free(dg), free(dw0), free(db0), free(h), free(g), free(dh), free(dx);
    free(dw), free(db), free(g2);
}

/* bf16 GEMM inputs (the training precision): the GEMM, its bias and the GELU against the fp32 CPU
 * within the bf16 bound (1e-2, as test_cuda_ops' bf16 linear). */
static void test_linear_gelu_bf16(uint64_t seed) {
    const int64_t n = 48, in = 40, out = 64;
    float *x = rnd(n * in, seed, -1, 1), *w = rnd(out * in, seed + 1, -1, 1);
    float *b = rnd(out, seed + 2, -1, 1), *dg = rnd(n * out, seed + 3, -1, 1);
    float *h = zeros(n * out), *g = zeros(n * out), *dh = zeros(n * out), *dx = zeros(n * in);
    float *dw = zeros(out * in), *db = zeros(out), *g2 = zeros(n * out);
    cuda_ok(cpu->linear_gelu_forward(ctx, h, g, x, w, b, n, in, out), "cpu fwd");
    cuda_ok(cpu->linear_gelu_backward(ctx, dx, dw, db, dh, g2, dg, h, x, w, n, in, out), "cpu bwd");
    float *gx = dev_in(x, F(n * in), "x"), *gw = dev_in(w, F(out * in), "w");
    float *gb = dev_in(b, F(out), "b"), *gdg = dev_in(dg, F(n * out), "dg");
    float *gh = dev_in(h, F(n * out), "h (CPU's)");
    float *dw0 = zeros(out * in), *db0 = zeros(out);
    dev_output *H = dev_out("bf16 linear_gelu h", n * out, NULL);
    dev_output *G = dev_out("bf16 linear_gelu g", n * out, NULL);
    dev_output *DX = dev_out("bf16 linear_gelu dx", n * in, NULL);
    dev_output *DW = dev_out("bf16 linear_gelu dw", out * in, dw0);
    dev_output *DB = dev_out("bf16 linear_gelu db", out, db0);
    dev_output *DH = dev_out("bf16 linear_gelu dh", n * out, NULL);
    cuda_ok(wx_cuda_set_precision(ctx, WX_CUDA_BF16), "set bf16");
    GPU_RUNS("linear_gelu bf16", {
        cuda_ok(cu->linear_gelu_forward(ctx, H->dev, G->dev, gx, gw, gb, n, in, out), "fwd");
        cuda_ok(cu->linear_gelu_backward(ctx, DX->dev, DW->dev, DB->dev, DH->dev, NULL, gdg, gh,
                                         gx, gw, n, in, out), "bwd");
    });
    cuda_ok(wx_cuda_set_precision(ctx, WX_CUDA_FP32), "set fp32");
    expect(H, h, 1e-2), expect(G, g, 1e-2);
    expect(DH, dh, TOL);                      /* element-wise from the CPU's h */
    expect(DX, dx, 1e-2), expect(DW, dw, 1e-2);
    expect(DB, db, TOL);                      /* a column sum of dh */
    case_end("linear_gelu bf16");
    free(x), free(w), free(b), free(dg), free(h), free(g), free(dh), free(dx), free(dw), free(db);
    free(g2), free(dw0), free(db0);
}

/* ---- host-side checks ----------------------------------------------------------------------- */

static void test_table(void) {
    const wx_backend *t = wx_backend_cuda();
    WX_CHECK(t->layernorm_residual_forward == wx_cuda_layernorm_residual_forward &&
             t->layernorm_residual_backward == wx_cuda_layernorm_residual_backward,
             "table: layernorm_residual");
    WX_CHECK(t->linear_gelu_forward == wx_cuda_linear_gelu_forward &&
             t->linear_gelu_backward == wx_cuda_linear_gelu_backward, "table: linear_gelu");
}

static void test_no_device(void) {
    wx_ctx *c = wx_ctx_create(1);
    float dummy = 0;
    wx_status s = wx_backend_cuda()->layernorm_residual_forward(c, &dummy, &dummy, NULL, &dummy,
                                                                &dummy, &dummy, NULL, &dummy,
                                                                &dummy, 1, 0, 1e-6);
    WX_CHECK(s == WX_ERR_USAGE && strstr(wx_error_message(), "C = 0"),
             "argument check before device work: status %d, '%s'", s, wx_error_message());
    s = wx_backend_cuda()->linear_gelu_forward(c, &dummy, &dummy, &dummy, &dummy, NULL, 1, 1, 1);
    WX_CHECK(s == WX_ERR_RUN && strstr(wx_error_message(), "no CUDA device"),
             "an op without a GPU: status %d, '%s'", s, wx_error_message());
    wx_ctx_destroy(c);
}

int main(void) {
    test_table();
    int count = 0;
    WX_CHECK(wx_cuda_device_count(&count) == WX_OK, "device count: %s", wx_error_message());
    if (count == 0) {
        test_no_device();
        wx_test_summary();
        printf("no CUDA device visible: CUDA-vs-CPU fused op checks skipped (compiled, not run)\n");
        return wx_test_failed ? 1 : 77;
    }
    ctx = wx_ctx_create(1);
    cpu = wx_backend_cpu();
    cu = wx_backend_cuda();
    if (!cuda_ok(wx_cuda_ctx_attach(ctx, 0), "attach device 0")) return wx_test_summary();
    test_layernorm_residual(300, 300, 1, 1, 100); /* > one chunk of rows, > one block per row */
    test_layernorm_residual(37, 256, 0, 0, 200);  /* r and z NULL: plain LN + dres */
    test_linear_gelu(37, 53, 29, 1, 300);
    test_linear_gelu(64, 64, 48, 0, 400);
    test_linear_gelu(40, 32, 96, 1, 500); /* bias with out % 4 == 0: the 16-byte bias+GELU path */
    test_linear_gelu_bf16(500);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
#else
int main(void) {
    printf("built without CUDA: skipped\n");
    return 77;
}
#endif
