/* Per-op CPU microbenchmarks: prints one JSON object per op with median forward and backward
 * times (ms), for tests/bench/run_ops_bench.sh to set against PyTorch on the same shapes and thread
 * count. Also measures OpenBLAS's own sgemm peak and the linear op's GEMM efficiency against a bare
 * cblas_sgemm of the same shape. Not a test: nothing here asserts a time. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/wx_ops.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define REPS 15
/* Median wall time (ms) of REPS runs of `stmt` after 3 warm-up runs. */
#define TIME_MS(out, stmt)                                      \
    do {                                                        \
        double t_[REPS];                                        \
        for (int r_ = 0; r_ < 3; r_++) { stmt; }                \
        for (int r_ = 0; r_ < REPS; r_++) {                     \
            double s_ = now_s();                                \
            stmt;                                               \
            t_[r_] = (now_s() - s_) * 1e3;                      \
        }                                                       \
        qsort(t_, REPS, sizeof(double), cmp_double);            \
        out = t_[REPS / 2];                                     \
    } while (0)

static float *rnd(int64_t n, unsigned seed, float scale) {
    float *p = malloc(sizeof(float) * (size_t)n);
    srand(seed);
    for (int64_t i = 0; i < n; i++) p[i] = scale * ((float)rand() / RAND_MAX * 2 - 1);
    return p;
}

static void emit(const char *op, const char *shape, double fwd, double bwd, double gflop) {
    printf("{\"op\": \"%s\", \"shape\": \"%s\", \"fwd_ms\": %.4f, \"bwd_ms\": %.4f, \"gflop\": %.4f}\n",
           op, shape, fwd, bwd, gflop);
    fflush(stdout);
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(0);
    double f, b;

    /* OpenBLAS's own sgemm peak on a large square product. */
    {
        int64_t n = 2048;
        float *A = rnd(n * n, 1, 1), *B = rnd(n * n, 2, 1), *C = calloc(n * n, sizeof(float));
        TIME_MS(f, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, A, n, B, n, 0, C, n));
        emit("sgemm_peak", "2048x2048x2048", f, 0, 2.0 * n * n * n / 1e9);
        free(A), free(B), free(C);
    }
    /* linear: tokens of a 64x128 grid at patch 4 (B=2): N=1024, 256 -> 1024 (the MLP's fc1). */
    {
        int64_t n = 1024, in = 256, out = 1024;
        float *x = rnd(n * in, 3, 1), *w = rnd(out * in, 4, 0.05f), *bias = rnd(out, 5, 0.1f);
        float *y = malloc(sizeof(float) * n * out), *dy = rnd(n * out, 6, 1);
        float *dx = malloc(sizeof(float) * n * in), *dw = calloc(out * in, sizeof(float)),
              *db = calloc(out, sizeof(float));
        double bare;
        TIME_MS(bare, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1, x, in, w, in, 0, y, out));
        TIME_MS(f, wx_cpu_linear_forward(ctx, y, x, w, bias, n, in, out));
        TIME_MS(b, wx_cpu_linear_backward(ctx, dx, dw, db, dy, x, w, n, in, out));
        emit("sgemm_same_shape", "1024x256->1024", bare, 0, 2.0 * n * in * out / 1e9);
        emit("linear", "1024x256->1024", f, b, 2.0 * n * in * out / 1e9);
        free(x), free(w), free(bias), free(y), free(dy), free(dx), free(dw), free(db);
    }
    /* layernorm and gelu on (B*H*W, C) = (2048, 256). */
    {
        int64_t n = 2048, c = 256;
        float *x = rnd(n * c, 7, 1), *g = rnd(c, 8, 1), *be = rnd(c, 9, 1), *y = malloc(sizeof(float) * n * c);
        float *mean = malloc(sizeof(float) * n), *rstd = malloc(sizeof(float) * n), *dy = rnd(n * c, 10, 1);
        float *dx = malloc(sizeof(float) * n * c), *dg = calloc(c, sizeof(float)), *db = calloc(c, sizeof(float));
        TIME_MS(f, wx_cpu_layernorm_forward(ctx, y, mean, rstd, x, g, be, n, c, 1e-6));
        TIME_MS(b, wx_cpu_layernorm_backward(ctx, dx, dg, db, dy, x, mean, rstd, g, n, c));
        emit("layernorm", "2048x256", f, b, 0);
        TIME_MS(f, wx_cpu_gelu_forward(ctx, y, x, n * c));
        TIME_MS(b, wx_cpu_gelu_backward(ctx, dx, dy, x, n * c));
        emit("gelu", "2048x256", f, b, 0);
        free(x), free(g), free(be), free(y), free(mean), free(rstd), free(dy), free(dx), free(dg), free(db);
    }
    /* rfft2 / irfft2 and the AFNO filter at (B=2, H=32, W=64, C=256, 8 blocks). */
    {
        int64_t B = 2, H = 32, W = 64, C = 256, nb = 8, Wf = W / 2 + 1, bs = C / nb;
        int64_t nx = B * H * W * C, nX = B * H * Wf * C * 2;
        float *x = rnd(nx, 11, 1), *X = malloc(sizeof(float) * nX), *dX = rnd(nX, 12, 1);
        float *y = malloc(sizeof(float) * nx), *dx = malloc(sizeof(float) * nx);
        TIME_MS(f, wx_cpu_rfft2_forward(ctx, X, x, B, H, W, C));
        TIME_MS(b, wx_cpu_rfft2_backward(ctx, dx, dX, B, H, W, C));
        emit("rfft2", "2x32x64x256", f, b, 0);
        TIME_MS(f, wx_cpu_irfft2_forward(ctx, y, dX, B, H, W, C));
        TIME_MS(b, wx_cpu_irfft2_backward(ctx, dX, x, B, H, W, C));
        emit("irfft2", "2x32x64x256", f, b, 0);

        /* NVlabs mask: kept = H/2+1 applied to the kx axis, all ky rows. */
        uint8_t *mask = calloc(H * Wf, 1);
        int64_t kept = H / 2 + 1, M = 0;
        for (int64_t ky = 0; ky < H; ky++)
            for (int64_t kx = 0; kx < Wf; kx++) {
                mask[ky * Wf + kx] = kx < kept;
                M += kx < kept;
            }
        float *w1 = rnd(2 * nb * bs * bs, 13, 0.02f), *b1 = rnd(2 * nb * bs, 14, 0.02f);
        float *w2 = rnd(2 * nb * bs * bs, 15, 0.02f), *b2 = rnd(2 * nb * bs, 16, 0.02f);
        float *dw1 = calloc(2 * nb * bs * bs, 4), *db1 = calloc(2 * nb * bs, 4);
        float *dw2 = calloc(2 * nb * bs * bs, 4), *db2 = calloc(2 * nb * bs, 4);
        float *Y = malloc(sizeof(float) * nX), *dY = rnd(nX, 17, 1), *dXo = malloc(sizeof(float) * nX);
        wx_cpu_rfft2_forward(ctx, X, x, B, H, W, C);
        float *saved = malloc(sizeof(float) * wx_afno_filter_saved_len(B, M, C, 1));
        TIME_MS(f, wx_cpu_afno_filter_forward(ctx, Y, saved, X, w1, b1, w2, b2, mask, B, H, Wf, C, nb, 1, 0.01));
        TIME_MS(b, wx_cpu_afno_filter_backward(ctx, dXo, dw1, db1, dw2, db2, dY, saved, X, w1, w2, mask, B, H, Wf, C, nb, 1, 0.01));
        /* 2 complex layers = 8 real (M x bs x bs) GEMMs per block and sample, forward. */
        emit("afno_filter", "2x32x64x256/8", f, b, 2.0 * 8 * B * M * bs * bs * nb / 1e9);
        free(mask), free(w1), free(b1), free(w2), free(b2), free(dw1), free(db1), free(dw2), free(db2);
        free(Y), free(dY), free(dXo), free(saved), free(x), free(X), free(dX), free(y), free(dx);
    }
    /* segment_sum: 40,962 receivers, 4 edges each on average (E=163,848), D=128. */
    {
        int64_t n = 40962, e = 163848, d = 128;
        int32_t *recv = malloc(sizeof(int32_t) * e), *row = malloc(sizeof(int32_t) * (n + 1)), *perm = malloc(sizeof(int32_t) * e);
        srand(18);
        for (int64_t i = 0; i < e; i++) recv[i] = rand() % n;
        /* CSR by counting sort (the bench does not depend on the graph helper's API). */
        memset(row, 0, sizeof(int32_t) * (n + 1));
        for (int64_t i = 0; i < e; i++) row[recv[i] + 1]++;
        for (int64_t i = 0; i < n; i++) row[i + 1] += row[i];
        int32_t *fill = malloc(sizeof(int32_t) * n);
        memcpy(fill, row, sizeof(int32_t) * n);
        for (int64_t i = 0; i < e; i++) perm[fill[recv[i]]++] = (int32_t)i;
        float *x = rnd(e * d, 19, 1), *y = malloc(sizeof(float) * n * d), *dx = malloc(sizeof(float) * e * d);
        TIME_MS(f, wx_cpu_segment_sum_forward(ctx, y, x, row, perm, n, e, d));
        TIME_MS(b, wx_cpu_segment_sum_backward(ctx, dx, y, row, perm, n, e, d));
        emit("segment_sum", "E163848->N40962xD128", f, b, 0);
        float *g = malloc(sizeof(float) * e * d);
        TIME_MS(f, wx_cpu_gather_rows_forward(ctx, g, y, recv, e, d));
        TIME_MS(b, wx_cpu_gather_rows_backward(ctx, y, g, recv, e, n, d));
        emit("gather_rows", "N40962->E163848xD128", f, b, 0);
        free(recv), free(row), free(perm), free(fill), free(x), free(y), free(dx), free(g);
    }
    wx_ctx_destroy(ctx);
    return 0;
}
