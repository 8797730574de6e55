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

static wx_ctx *ctx;
static const wx_backend *cpu, *cu;

/* ---- host data ------------------------------------------------------------------------------- */

static float *rnd(int64_t n, uint64_t seed, double lo, double hi) {
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    float *f = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    wx_test_fill_uniform(d, n, seed, lo, hi);
    wx_test_f64_to_f32(f, d, n);
    free(d);
    return f;
}

static float *dup(const float *a, int64_t n) {
    float *b = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    memcpy(b, a, sizeof(float) * (size_t)n);
    return b;
}

static float *zeros(int64_t n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(float)); }

static int cuda_ok(wx_status s, const char *what) {
    return WX_CHECK(s == WX_OK, "%s: %s", what, wx_error_message());
}

/* ---- device inputs: copied in, checked unchanged at the end of each case ------------------- */

typedef struct {
    void *dev, *host;
    size_t bytes;
    const char *name;
} dev_input;

static dev_input inputs[64];
static int ninputs;

static void *dev_in(const void *host, size_t bytes, const char *name) {
    WX_ASSERT(ninputs < 64);
    dev_input *in = &inputs[ninputs++];
    in->bytes = bytes;
    in->name = name;
    in->host = malloc(bytes ? bytes : 1);
    memcpy(in->host, host, bytes);
    WX_ASSERT(wx_cuda_malloc(&in->dev, bytes) == WX_OK);
    WX_ASSERT(wx_cuda_copy_to_device(in->dev, host, bytes) == WX_OK);
    return in->dev;
}

static void inputs_check_free(const char *op) {
    for (int i = 0; i < ninputs; i++) {
        dev_input *in = &inputs[i];
        void *back = malloc(in->bytes ? in->bytes : 1);
        if (cuda_ok(wx_cuda_copy_to_host(back, in->dev, in->bytes), "copy input back"))
            WX_CHECK(memcmp(back, in->host, in->bytes) == 0, "%s: input %s was modified", op,
                     in->name);
        free(back);
        free(in->host);
        wx_cuda_free(in->dev);
    }
    ninputs = 0;
}

/* ---- device outputs: guarded, poisoned, fetched once per run ---------------------------------- */

static const uint32_t poison_bits = 0x7fc5a5a5u; /* a quiet NaN with a recognisable payload */

typedef struct {
    const char *name;
    int64_t n;          /* floats in the body */
    float *base, *dev;  /* device: base = front guard, dev = body */
    const float *init;  /* body before each run (accumulating outputs), or NULL = poison */
    float *got[2];      /* host copies of the body after run 0 and run 1 */
} dev_output;

static dev_output outputs[32];
static int noutputs;

static dev_output *dev_out(const char *name, int64_t n, const float *init) {
    WX_ASSERT(noutputs < 32);
    dev_output *o = &outputs[noutputs++];
    memset(o, 0, sizeof *o);
    o->name = name;
    o->n = n;
    o->init = init;
    WX_ASSERT(wx_cuda_malloc((void **)&o->base, sizeof(float) * (size_t)(n + 2 * GUARD)) == WX_OK);
    o->dev = o->base + GUARD;
    o->got[0] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    o->got[1] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    return o;
}

static void outputs_poison(void) {
    for (int i = 0; i < noutputs; i++) {
        dev_output *o = &outputs[i];
        int64_t total = o->n + 2 * GUARD;
        float *h = malloc(sizeof(float) * (size_t)total);
        for (int64_t j = 0; j < total; j++) memcpy(&h[j], &poison_bits, sizeof(float));
        if (o->init) memcpy(h + GUARD, o->init, sizeof(float) * (size_t)o->n);
        WX_ASSERT(wx_cuda_copy_to_device(o->base, h, sizeof(float) * (size_t)total) == WX_OK);
        free(h);
    }
}

static void outputs_fetch(int rep, const char *op) {
    cuda_ok(wx_cuda_ctx_synchronize(ctx), "synchronize after the op");
    for (int i = 0; i < noutputs; i++) {
        dev_output *o = &outputs[i];
        int64_t total = o->n + 2 * GUARD;
        float *h = malloc(sizeof(float) * (size_t)total);
        if (cuda_ok(wx_cuda_copy_to_host(h, o->base, sizeof(float) * (size_t)total), "copy back")) {
            int bad = 0;
            for (int64_t j = 0; j < GUARD; j++) {
                bad += memcmp(&h[j], &poison_bits, sizeof(float)) != 0;
                bad += memcmp(&h[GUARD + o->n + j], &poison_bits, sizeof(float)) != 0;
            }
            WX_CHECK(bad == 0, "%s: %s: %d guard values overwritten (run %d)", op, o->name, bad, rep);
            memcpy(o->got[rep], h + GUARD, sizeof(float) * (size_t)o->n);
        }
        free(h);
    }
}

static void outputs_free(void) {
    for (int i = 0; i < noutputs; i++) {
        wx_cuda_free(outputs[i].base);
        free(outputs[i].got[0]);
        free(outputs[i].got[1]);
    }
    noutputs = 0;
}

/* GPU result of run 0 vs the CPU's within rtol·max|cpu|, and run 0 vs run 1 bit for bit. */
static void expect(const dev_output *o, const float *cpu_val, double rtol) {
    double *ref = malloc(sizeof(double) * (size_t)(o->n > 0 ? o->n : 1));
    for (int64_t i = 0; i < o->n; i++) ref[i] = cpu_val[i];
    WX_CHECK_CLOSE_F32(o->name, o->got[0], ref, o->n, rtol, 0.0);
    WX_CHECK(memcmp(o->got[0], o->got[1], sizeof(float) * (size_t)o->n) == 0,
             "%s: two GPU runs differ bitwise", o->name);
    free(ref);
}

static void case_end(const char *op) {
    inputs_check_free(op);
    outputs_free();
}

/* Two GPU runs of `body` with fresh poison; results fetched after each. */
#define GPU_RUNS(op, ...)                           \
    for (int rep_ = 0; rep_ < 2; rep_++) {          \
        outputs_poison();                           \
        __VA_ARGS__;                                \
        outputs_fetch(rep_, op);                    \
    }

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
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
#else
int main(void) {
    printf("built without CUDA: skipped\n");
    return 77;
}
#endif
