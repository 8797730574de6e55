/* conv3x3 on the CUDA backend (kernels/conv.cu) against the CPU backend (src/ops/conv.c), through
 * the backend tables: forward with and without bias, backward into accumulating dwt/dbias and an
 * overwritten dx, each grad alone (the others NULL, x NULL when dwt is not wanted), on a
 * multi-channel shape, the head's 1 → 1 shape, W = 2 (both wrap neighbours one column) and a grid
 * large enough for several reduction chunks. Outputs sit between NaN-poisoned guard regions that
 * must come back untouched; two GPU runs must agree bit for bit.
 *
 * Tolerances, relative to max|CPU|: 1e-5 for y, dx and dbias (sums of ≤ cin·cout·9 products, or
 * double sums on both sides); 1e-4 for dwt (the CPU sums B·H·W products in OpenBLAS's float GEMM,
 * the GPU in double). Exits 77 without a GPU, after checking the table entry and the argument
 * check that runs before any device work. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "backend/wx_backend.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"

#define GUARD 64
static const uint32_t poison = 0x7fc5a5a5u;

static float *rnd(int64_t n, uint64_t seed) {
    double *d = malloc(sizeof(double) * (size_t)n);
    float *f = malloc(sizeof(float) * (size_t)n);
    wx_test_fill_uniform(d, n, seed, -1, 1);
    wx_test_f64_to_f32(f, d, n);
    free(d);
    return f;
}

static float *to_dev(const float *h, int64_t n) {
    void *d;
    WX_ASSERT(wx_cuda_malloc(&d, sizeof(float) * (size_t)n) == WX_OK);
    WX_ASSERT(wx_cuda_copy_to_device(d, h, sizeof(float) * (size_t)n) == WX_OK);
    return d;
}

/* A guarded device output: body initialised from init (NULL: poison). */
static float *out_make(int64_t n, const float *init) {
    float *h = malloc(sizeof(float) * (size_t)(n + 2 * GUARD)), *d;
    for (int64_t i = 0; i < n + 2 * GUARD; i++) memcpy(&h[i], &poison, 4);
    if (init) memcpy(h + GUARD, init, sizeof(float) * (size_t)n);
    WX_ASSERT(wx_cuda_malloc((void **)&d, sizeof(float) * (size_t)(n + 2 * GUARD)) == WX_OK);
    WX_ASSERT(wx_cuda_copy_to_device(d, h, sizeof(float) * (size_t)(n + 2 * GUARD)) == WX_OK);
    free(h);
    return d + GUARD;
}

/* Copies the body back into got after checking the guards; frees the device buffer. */
static void out_take(wx_ctx *ctx, float *d, int64_t n, float *got, const char *what) {
    float *h = malloc(sizeof(float) * (size_t)(n + 2 * GUARD));
    WX_CHECK(wx_cuda_ctx_synchronize(ctx) == WX_OK, "%s: synchronize: %s", what, wx_error_message());
    WX_ASSERT(wx_cuda_copy_to_host(h, d - GUARD, sizeof(float) * (size_t)(n + 2 * GUARD)) == WX_OK);
    int bad = 0;
    for (int64_t i = 0; i < GUARD; i++)
        bad += memcmp(&h[i], &poison, 4) != 0 || memcmp(&h[GUARD + n + i], &poison, 4) != 0;
    WX_CHECK(bad == 0, "%s: %d guard values overwritten", what, bad);
    memcpy(got, h + GUARD, sizeof(float) * (size_t)n);
    free(h);
    wx_cuda_free(d - GUARD);
}

static void close_to(const char *what, const float *got, const float *cpu, int64_t n, double rtol) {
    double *ref = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) ref[i] = cpu[i];
    WX_CHECK_CLOSE_F32(what, got, ref, n, rtol, 0.0);
    free(ref);
}

static void run_case(wx_ctx *ctx, int64_t b, int64_t cin, int64_t h, int64_t wd, int64_t cout,
                     uint64_t seed) {
    const wx_backend *cpu = wx_backend_cpu(), *cu = wx_backend_cuda();
    int64_t nx = b * cin * h * wd, ny = b * cout * h * wd, nw = cout * cin * 9;
    float *x = rnd(nx, seed), *wt = rnd(nw, seed + 1), *bias = rnd(cout, seed + 2);
    float *dy = rnd(ny, seed + 3), *w0 = rnd(nw, seed + 4), *b0 = rnd(cout, seed + 5);
    float *y = malloc(sizeof(float) * (size_t)ny), *yn = malloc(sizeof(float) * (size_t)ny);
    float *dx = malloc(sizeof(float) * (size_t)nx);
    float *dw = malloc(sizeof(float) * (size_t)nw), *db = malloc(sizeof(float) * (size_t)cout);
    memcpy(dw, w0, sizeof(float) * (size_t)nw);
    memcpy(db, b0, sizeof(float) * (size_t)cout);
    WX_ASSERT(cpu->conv3x3_forward(ctx, y, x, wt, bias, b, cin, h, wd, cout) == WX_OK);
    WX_ASSERT(cpu->conv3x3_forward(ctx, yn, x, wt, NULL, b, cin, h, wd, cout) == WX_OK);
    WX_ASSERT(cpu->conv3x3_backward(ctx, dx, dw, db, dy, x, wt, b, cin, h, wd, cout) == WX_OK);
    float *gx = to_dev(x, nx), *gw = to_dev(wt, nw), *gb = to_dev(bias, cout), *gdy = to_dev(dy, ny);
    char tag[96];
    snprintf(tag, sizeof tag, "conv3x3 B=%lld cin=%lld %lldx%lld cout=%lld", (long long)b,
             (long long)cin, (long long)h, (long long)wd, (long long)cout);
    float *got[2][5];
    for (int rep = 0; rep < 2; rep++) {
        int64_t len[5] = {ny, ny, nx, nw, cout};
        for (int k = 0; k < 5; k++) got[rep][k] = malloc(sizeof(float) * (size_t)len[k]);
        float *Y = out_make(ny, NULL), *YN = out_make(ny, NULL), *DX = out_make(nx, NULL);
        float *DW = out_make(nw, w0), *DB = out_make(cout, b0);
        WX_CHECK(cu->conv3x3_forward(ctx, Y, gx, gw, gb, b, cin, h, wd, cout) == WX_OK, "fwd: %s",
                 wx_error_message());
        WX_CHECK(cu->conv3x3_forward(ctx, YN, gx, gw, NULL, b, cin, h, wd, cout) == WX_OK, "fwd");
        WX_CHECK(cu->conv3x3_backward(ctx, DX, DW, DB, gdy, gx, gw, b, cin, h, wd, cout) == WX_OK,
                 "bwd: %s", wx_error_message());
        out_take(ctx, Y, ny, got[rep][0], "y");
        out_take(ctx, YN, ny, got[rep][1], "y (no bias)");
        out_take(ctx, DX, nx, got[rep][2], "dx");
        out_take(ctx, DW, nw, got[rep][3], "dwt");
        out_take(ctx, DB, cout, got[rep][4], "dbias");
    }
    const char *names[5] = {"y", "y no bias", "dx", "dwt (+=)", "dbias (+=)"};
    const float *cpuv[5] = {y, yn, dx, dw, db};
    const int64_t len[5] = {ny, ny, nx, nw, cout};
    for (int k = 0; k < 5; k++) {
        char what[160];
        snprintf(what, sizeof what, "%s %s", tag, names[k]);
        close_to(what, got[0][k], cpuv[k], len[k], k == 3 ? 1e-4 : 1e-5);
        WX_CHECK(!memcmp(got[0][k], got[1][k], sizeof(float) * (size_t)len[k]),
                 "%s: two GPU runs differ bitwise", what);
        free(got[0][k]), free(got[1][k]);
    }
    /* Each grad alone: the same values as with all three. */
    float *DX = out_make(nx, NULL), *DW = out_make(nw, w0), *DB = out_make(cout, b0);
    WX_CHECK(cu->conv3x3_backward(ctx, DX, NULL, NULL, gdy, NULL, gw, b, cin, h, wd, cout) == WX_OK &&
             cu->conv3x3_backward(ctx, NULL, DW, NULL, gdy, gx, gw, b, cin, h, wd, cout) == WX_OK &&
             cu->conv3x3_backward(ctx, NULL, NULL, DB, gdy, NULL, gw, b, cin, h, wd, cout) == WX_OK,
             "single-grad backward: %s", wx_error_message());
    float *t = malloc(sizeof(float) * (size_t)(nx > nw ? nx : nw));
    out_take(ctx, DX, nx, t, "dx alone");
    close_to("dx alone", t, dx, nx, 1e-5);
    out_take(ctx, DW, nw, t, "dwt alone");
    close_to("dwt alone", t, dw, nw, 1e-4);
    out_take(ctx, DB, cout, t, "dbias alone");
    close_to("dbias alone", t, db, cout, 1e-5);
    free(t);
    wx_cuda_free(gx), wx_cuda_free(gw), wx_cuda_free(gb), wx_cuda_free(gdy);
    free(x), free(wt), free(bias), free(dy), free(w0), free(b0), free(y), free(yn), free(dx);
    free(dw), free(db);
}

int main(void) {
    const wx_backend *cu = wx_backend_cuda();
    WX_CHECK(cu->conv3x3_forward == wx_cuda_conv3x3_forward &&
             cu->conv3x3_backward == wx_cuda_conv3x3_backward, "table entries");
    wx_ctx *c1 = wx_ctx_create(1);
    float dummy = 0;
    WX_CHECK(cu->conv3x3_forward(c1, &dummy, &dummy, &dummy, NULL, 1, 0, 1, 1, 1) == WX_ERR_USAGE,
             "cin = 0 refused before device work: %s", wx_error_message());
    wx_ctx_destroy(c1);
    int count = 0;
    WX_CHECK(wx_cuda_device_count(&count) == WX_OK, "device count: %s", wx_error_message());
    if (count == 0) {
        wx_test_summary();
        printf("no CUDA device visible: conv3x3 GPU checks skipped (compiled, not run)\n");
        return wx_test_failed ? 1 : 77;
    }
    wx_ctx *ctx = wx_ctx_create(1);
    if (!WX_CHECK(wx_cuda_ctx_attach(ctx, 0) == WX_OK, "attach: %s", wx_error_message()))
        return wx_test_summary();
    run_case(ctx, 2, 3, 5, 7, 4, 10);
    run_case(ctx, 1, 2, 3, 2, 1, 20);    /* W = 2 */
    run_case(ctx, 2, 1, 40, 72, 1, 30);  /* the head; 5760 positions: two reduction chunks */
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
#else
#include <stdio.h>
int main(void) {
    printf("built without CUDA: skipped\n");
    return 77;
}
#endif
