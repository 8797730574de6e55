/* Reference cases for the conv ops (src/ops/conv.c) against tests/ref/ref_conv.py fixtures
 * (PyTorch float64 autograd: circular pad in W, zero pad in H, F.conv2d). Each fixture runs the
 * float32 ops (tolerance 1e-5 of the tensor's max abs) and the float64 _f64 ops (1e-12). The f64
 * run calls backward twice into parameter grads prefilled with 0.25 (expects 0.25 + 2·grad: +=)
 * and dx prefilled with garbage before each call (expects 1·grad: overwrite); both runs check
 * the no-bias forward and each nullable grad alone. */
#include <stdio.h>
#include <stdlib.h>

#include "ops/wx_ops.h"
#include "ref_cases.h"
#include "wx_fixture.h"
#include "wx_test.h"

#define CONV_GARBAGE 777.0
#define CONV_RUN(call) WX_CHECK((call) == WX_OK, "%s: %s", #call, wx_error_message())

/* One precision: R the element type, OP(name) the op name, CLOSE the comparison, REPS backward
 * calls, PRE the parameter-grad prefill. */
#define CONV_REF_FN(fname, R, OP, CLOSE, PREC, RTOL, ATOL, REPS, PRE)                            \
    static R *fname##_load(const wx_fixture *f, const char *n) {                                 \
        const wx_fixture_tensor *t = wx_fixture_get(f, n);                                       \
        R *o = malloc(sizeof(R) * (size_t)t->size);                                             \
        for (int64_t i = 0; i < t->size; i++) o[i] = (R)t->data[i];                              \
        return o;                                                                                \
    }                                                                                            \
    static R *fname##_fill(int64_t n, double v) {                                                \
        R *o = malloc(sizeof(R) * (size_t)n);                                                    \
        for (int64_t i = 0; i < n; i++) o[i] = (R)v;                                             \
        return o;                                                                                \
    }                                                                                            \
    static void fname##_check(const char *fx, const char *n, const R *a, const wx_fixture *f,    \
                              double pre, int reps) {                                            \
        const wx_fixture_tensor *t = wx_fixture_get(f, n);                                       \
        double *want = malloc(sizeof(double) * (size_t)t->size);                                 \
        for (int64_t i = 0; i < t->size; i++) want[i] = pre + reps * t->data[i];                 \
        char what[128];                                                                          \
        snprintf(what, sizeof what, "conv3x3 %s %s %s", fx, PREC, n);                            \
        CLOSE(what, a, want, t->size, RTOL, ATOL);                                               \
        free(want);                                                                              \
    }                                                                                            \
    static void fname(wx_ctx *ctx, const wx_fixture *f, const char *fx) {                        \
        const wx_fixture_tensor *tx = wx_fixture_get(f, "x"), *tw = wx_fixture_get(f, "wt");     \
        int64_t b = tx->dims[0], cin = tx->dims[1], h = tx->dims[2], wd = tx->dims[3];           \
        int64_t cout = tw->dims[0], nx = tx->size, ny = b * cout * h * wd, nw = tw->size;        \
        R *x = fname##_load(f, "x"), *wt = fname##_load(f, "wt"), *bias = fname##_load(f, "bias"); \
        R *dy = fname##_load(f, "dy"), *y = fname##_fill(ny, CONV_GARBAGE);                      \
        CONV_RUN(OP(wx_cpu_conv3x3_forward)(ctx, y, x, wt, bias, b, cin, h, wd, cout));          \
        fname##_check(fx, "y", y, f, 0, 1);                                                      \
        for (int64_t i = 0; i < ny; i++) y[i] = (R)CONV_GARBAGE;                                 \
        CONV_RUN(OP(wx_cpu_conv3x3_forward)(ctx, y, x, wt, NULL, b, cin, h, wd, cout));          \
        fname##_check(fx, "y_nobias", y, f, 0, 1);                                               \
        R *dx = fname##_fill(nx, 0), *dw = fname##_fill(nw, PRE), *db = fname##_fill(cout, PRE); \
        for (int r = 0; r < REPS; r++) {                                                         \
            for (int64_t i = 0; i < nx; i++) dx[i] = (R)CONV_GARBAGE;                            \
            CONV_RUN(OP(wx_cpu_conv3x3_backward)(ctx, dx, dw, db, dy, x, wt, b, cin, h, wd,      \
                                                 cout));                                         \
        }                                                                                        \
        fname##_check(fx, "dx", dx, f, 0, 1);                                                    \
        fname##_check(fx, "dwt", dw, f, PRE, REPS);                                              \
        fname##_check(fx, "dbias", db, f, PRE, REPS);                                            \
        /* Each grad alone (the others NULL; x NULL when dwt is not wanted) gives the same. */   \
        R *dx1 = fname##_fill(nx, CONV_GARBAGE), *dw1 = fname##_fill(nw, 0);                     \
        R *db1 = fname##_fill(cout, 0);                                                          \
        CONV_RUN(OP(wx_cpu_conv3x3_backward)(ctx, dx1, NULL, NULL, dy, NULL, wt, b, cin, h, wd,  \
                                             cout));                                             \
        CONV_RUN(OP(wx_cpu_conv3x3_backward)(ctx, NULL, dw1, NULL, dy, x, wt, b, cin, h, wd,     \
                                             cout));                                             \
        CONV_RUN(OP(wx_cpu_conv3x3_backward)(ctx, NULL, NULL, db1, dy, NULL, wt, b, cin, h, wd,  \
                                             cout));                                             \
        fname##_check(fx, "dx", dx1, f, 0, 1);                                                   \
        fname##_check(fx, "dwt", dw1, f, 0, 1);                                                  \
        fname##_check(fx, "dbias", db1, f, 0, 1);                                                \
        free(x), free(wt), free(bias), free(dy), free(y), free(dx), free(dw), free(db);          \
        free(dx1), free(dw1), free(db1);                                                         \
    }

#define CONV_F32(name) name
#define CONV_F64(name) name##_f64
CONV_REF_FN(conv_ref_f32, float, CONV_F32, WX_CHECK_CLOSE_F32, "f32", 1e-5, 1e-7, 1, 0.0)
CONV_REF_FN(conv_ref_f64, double, CONV_F64, WX_CHECK_CLOSE_F64, "f64", 1e-12, 1e-14, 2, 0.25)

static void ref_conv_run_conv3x3(void) {
    static const char *const fixtures[] = {"conv_main", "conv_narrow", "conv_head"};
    wx_ctx *ctx = wx_ctx_create(0);
    for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++) {
        wx_fixture *f = wx_fixture_load(fixtures[i]);
        if (!WX_CHECK(f != NULL, "fixture %s missing", fixtures[i])) continue;
        conv_ref_f32(ctx, f, fixtures[i]);
        conv_ref_f64(ctx, f, fixtures[i]);
        wx_fixture_free(f);
    }
    /* Bad sizes are usage errors, not crashes. */
    float one = 0;
    WX_CHECK(wx_cpu_conv3x3_forward(ctx, &one, &one, &one, NULL, 1, 0, 1, 1, 1) == WX_ERR_USAGE,
             "cin = 0 refused");
    wx_ctx_destroy(ctx);
}

static const wx_ref_case ref_conv_case_conv3x3 = {"conv3x3", ref_conv_run_conv3x3};

const wx_ref_case *const wx_ref_cases_conv[] = {&ref_conv_case_conv3x3, NULL};
