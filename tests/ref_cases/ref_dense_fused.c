/* Reference cases for the fused dense ops (src/ops/dense_fused.c) against
 * tests/ref/ref_dense_fused.py fixtures (PyTorch float64 autograd of the unfused composition).
 * Float32 ops within 1e-5 of each tensor's max abs, float64 within 1e-12 (accumulation checked).
 * One more case runs the float ops above the parallel threshold (FourCastNet's row width) against
 * the unfused ops they replace, with 1 thread and with 2: the row blocks and chunked partials
 * must not depend on the thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wx_ops.h"
#include "ref_cases.h"
#include "wx_fixture.h"
#include "wx_test.h"

#define REF_IMPL "ref_dense_fused_impl.h"
#define REF_FAMILY ref_fused
#include "ref_precisions.h"

static float *ref_fused_rnd(int64_t n, uint32_t seed, float scale, float shift) {
    float *o = malloc(sizeof(float) * (size_t)n);
    uint32_t st = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        st = st * 1664525u + 1013904223u;
        o[i] = shift + scale * ((float)(st >> 8) / 16777216.0f - 0.5f);
    }
    return o;
}

/* max |a − b| / max |b| */
static double ref_fused_rel(const float *a, const float *b, int64_t n) {
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0 ? d / m : d;
}

/* Fused vs unfused on (300, 256) rows / a (300,256)→(300,1024) layer, threads 1 and 2. */
static void ref_fused_large(void) {
    const int64_t n = 300, c = 256, hid = 1024;
    float *a = ref_fused_rnd(n * c, 1, 4, 1), *r = ref_fused_rnd(n * c, 2, 1, 0);
    float *gm = ref_fused_rnd(c, 3, 1, 1), *bt = ref_fused_rnd(c, 4, 1, 0);
    float *dy = ref_fused_rnd(n * c, 5, 2, 0), *dz = ref_fused_rnd(n * c, 6, 2, 0);
    float *w = ref_fused_rnd(hid * c, 7, 0.2f, 0), *b = ref_fused_rnd(hid, 8, 1, 0);
    float *dgin = ref_fused_rnd(n * hid, 9, 2, 0);
    /* Unfused: s = a + r, y = LN(s), z = s + y; ds = dz + LN_bwd(dy + dz). */
    float *s0 = malloc(sizeof(float) * n * c), *y0 = malloc(sizeof(float) * n * c);
    float *z0 = malloc(sizeof(float) * n * c), *m0 = malloc(sizeof(float) * n);
    float *rs0 = malloc(sizeof(float) * n), *t0 = malloc(sizeof(float) * n * c);
    float *ds0 = malloc(sizeof(float) * n * c), *dg0 = calloc(c, sizeof(float));
    float *db0 = calloc(c, sizeof(float));
    float *h0 = malloc(sizeof(float) * n * hid), *g0 = malloc(sizeof(float) * n * hid);
    float *dh0 = malloc(sizeof(float) * n * hid), *dx0 = malloc(sizeof(float) * n * c);
    float *dw0 = calloc(hid * c, sizeof(float)), *dbb0 = calloc(hid, sizeof(float));
    wx_ctx *ctx1 = wx_ctx_create(1);
    wx_cpu_add_forward(ctx1, s0, a, r, n * c);
    wx_cpu_layernorm_forward(ctx1, y0, m0, rs0, s0, gm, bt, n, c, 1e-6);
    wx_cpu_add_forward(ctx1, z0, s0, y0, n * c);
    wx_cpu_add_forward(ctx1, t0, dy, dz, n * c);
    wx_cpu_layernorm_backward(ctx1, ds0, dg0, db0, t0, s0, m0, rs0, gm, n, c);
    wx_cpu_add_forward(ctx1, ds0, dz, ds0, n * c);
    wx_cpu_linear_forward(ctx1, h0, y0, w, b, n, c, hid);
    wx_cpu_gelu_forward(ctx1, g0, h0, n * hid);
    wx_cpu_gelu_backward(ctx1, dh0, dgin, h0, n * hid);
    wx_cpu_linear_backward(ctx1, dx0, dw0, dbb0, dh0, y0, w, n, c, hid);
    wx_ctx_destroy(ctx1);
    float *keep[8] = {0};
    for (int threads = 1; threads <= 2; threads++) {
        wx_ctx *ctx = wx_ctx_create(threads);
        float *s = malloc(sizeof(float) * n * c), *y = malloc(sizeof(float) * n * c);
        float *z = malloc(sizeof(float) * n * c), *m = malloc(sizeof(float) * n);
        float *rs = malloc(sizeof(float) * n), *ds = malloc(sizeof(float) * n * c);
        float *dg = calloc(c, sizeof(float)), *db = calloc(c, sizeof(float));
        float *h = malloc(sizeof(float) * n * hid), *g = malloc(sizeof(float) * n * hid);
        float *dh = malloc(sizeof(float) * n * hid), *dx = malloc(sizeof(float) * n * c);
        float *dw = calloc(hid * c, sizeof(float)), *dbb = calloc(hid, sizeof(float));
        WX_CHECK(wx_cpu_layernorm_residual_forward(ctx, s, y, z, m, rs, a, r, gm, bt, n, c,
                                                   1e-6) == WX_OK, "fused ln fwd");
        WX_CHECK(wx_cpu_layernorm_residual_backward(ctx, ds, dg, db, dy, dz, NULL, s, m, rs, gm, n,
                                                    c) == WX_OK, "fused ln bwd");
        WX_CHECK(wx_cpu_linear_gelu_forward(ctx, h, g, y, w, b, n, c, hid) == WX_OK, "fused fwd");
        float *g2 = malloc(sizeof(float) * n * hid);
        WX_CHECK(wx_cpu_linear_gelu_backward(ctx, dx, dw, dbb, dh, g2, dgin, h, y, w, n, c, hid) ==
                 WX_OK, "fused bwd");
        WX_CHECK(!memcmp(g2, g0, sizeof(float) * n * hid), "threads %d: the backward's recomputed "
                 "g differs from gelu_forward", threads);
        free(g2);
        /* Same formulas, same order element-wise: forward values equal the unfused ones. */
        WX_CHECK(!memcmp(s, s0, sizeof(float) * n * c) && !memcmp(y, y0, sizeof(float) * n * c) &&
                 !memcmp(z, z0, sizeof(float) * n * c), "threads %d: fused s, y, z differ from "
                 "add + layernorm + add", threads);
        WX_CHECK(!memcmp(ds, ds0, sizeof(float) * n * c), "threads %d: fused ds differs from the "
                 "unfused backward", threads);
        WX_CHECK(!memcmp(g, g0, sizeof(float) * n * hid) && !memcmp(dh, dh0, sizeof(float) * n * hid),
                 "threads %d: fused g or dh differ from gelu_forward / gelu_backward", threads);
        /* Partials in chunks instead of one chain per column: equal to float rounding. */
        WX_CHECK(ref_fused_rel(dg, dg0, c) < 1e-6 && ref_fused_rel(db, db0, c) < 1e-6 &&
                 ref_fused_rel(dbb, dbb0, hid) < 1e-6, "threads %d: parameter sums (rel %.2e %.2e "
                 "%.2e)", threads, ref_fused_rel(dg, dg0, c), ref_fused_rel(db, db0, c),
                 ref_fused_rel(dbb, dbb0, hid));
        WX_CHECK(ref_fused_rel(h, h0, n * hid) < 1e-6 && ref_fused_rel(dx, dx0, n * c) < 1e-6 &&
                 ref_fused_rel(dw, dw0, hid * c) < 1e-6, "threads %d: fused GEMM results", threads);
        float *cur[8] = {dg, db, dbb, h, dx, dw, ds, g};
        int64_t len[8] = {c, c, hid, n * hid, n * c, hid * c, n * c, n * hid};
        for (int k = 0; k < 8; k++) {
            if (threads == 1) {
                keep[k] = malloc(sizeof(float) * len[k]);
                memcpy(keep[k], cur[k], sizeof(float) * len[k]);
            } else {
                WX_CHECK(!memcmp(keep[k], cur[k], sizeof(float) * len[k]) || k >= 3,
                         "fused parameter sums differ between 1 and 2 threads (tensor %d)", k);
                free(keep[k]);
            }
        }
        free(s), free(y), free(z), free(m), free(rs), free(ds), free(dg), free(db), free(h);
        free(g), free(dh), free(dx), free(dw), free(dbb);
        wx_ctx_destroy(ctx);
    }
    free(a), free(r), free(gm), free(bt), free(dy), free(dz), free(w), free(b), free(dgin);
    free(s0), free(y0), free(z0), free(m0), free(rs0), free(t0), free(ds0), free(dg0), free(db0);
    free(h0), free(g0), free(dh0), free(dx0), free(dw0), free(dbb0);
}

#define REF_FUSED_CASE(op, body)                                                     \
    static void ref_fused_run_##op(void) {                                           \
        wx_fixture *f = wx_fixture_load("dense_fused_" #op);                         \
        if (!WX_CHECK(f != NULL, "fixture dense_fused_" #op " missing")) return;     \
        wx_ctx *ctx = wx_ctx_create(0);                                              \
        body;                                                                        \
        wx_ctx_destroy(ctx);                                                         \
        wx_fixture_free(f);                                                          \
    }                                                                                \
    static const wx_ref_case ref_fused_case_##op = {#op, ref_fused_run_##op};

REF_FUSED_CASE(layernorm_residual, (ref_fused_f32_layernorm_residual(ctx, f),
                                    ref_fused_f64_layernorm_residual(ctx, f), ref_fused_large()))
REF_FUSED_CASE(linear_gelu, (ref_fused_f32_linear_gelu(ctx, f), ref_fused_f64_linear_gelu(ctx, f)))

const wx_ref_case *const wx_ref_cases_dense_fused[] = {&ref_fused_case_layernorm_residual,
                                                       &ref_fused_case_linear_gelu, NULL};
