/* FourCastNet training-step and rollout benchmark (issue 5), wxcast side; the PyTorch peer is
 * tests/bench/bench_fcn_torch.py and tests/bench/run_fcn_bench.sh runs both and prints the table.
 *
 *   bench_fcn train   [steps]  one training step = zero grad, forward (tape), rel-L2 loss and its
 *                              backward, model backward, AdamW on the whole parameter buffer;
 *                              median of `steps` (default 10) after 3 warm-up steps
 *   bench_fcn rollout [reps]   40 autoregressive wx_fcn_predict steps (batch 1, no tapes); median
 *                              of `reps` (default 3) after one warm-up predict
 *   bench_fcn peak             OpenBLAS sgemm on 2048³ (the machine's GEMM peak for the FLOP rate)
 * Each mode is meant to run in its own process, so its peak RSS (getrusage ru_maxrss, printed at
 * the end) is that measurement's alone. Output: one JSON object on stdout. Threads: OMP_NUM_THREADS
 * (OpenBLAS and FFTW get the same count). Not a test: nothing here asserts a time.
 *
 * Mid-size configuration of the issue: 64×128 grid, 20 in/out channels, patch 4, embed 256,
 * depth 6, 8 blocks, MLP ratio 4, hidden factor 1, λ 0.01, fraction 1 (NVlabs mode slicing),
 * training batch 2.
 *
 * FLOPs per training step (fcn_flops below; 1 MAC = 2 FLOPs, N = Hp·Wp tokens, D embed,
 * Hm = 4D, K = Cin·p², P = Cout·p², M kept modes, bs = D/blocks, per sample):
 *   forward GEMMs   F = 2·N·K·D (patch embed) + depth·(2·2·N·D·Hm (fc1, fc2) + 16·M·D·bs·factor
 *                   (AFNO: two complex block-diagonal layers, 4 real MACs per complex MAC))
 *                   + 2·N·D·P (head)
 *   step            3·F − 2·N·K·D  (backward = dX and dW GEMMs, 2× forward; the input needs no
 *                   gradient, so patch embed's backward has no dX GEMM)
 * FFTs are listed separately (4 per block and step: rfft2, irfft2 and their backwards), each
 * counted as the usual 2.5·n·log2(n) per real 2-D transform of n = Hp·Wp points and channel.
 * Element-wise passes (LayerNorm, GELU, adds, AdamW) are not counted. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "backend/wx_backend.h"
#include "models/fourcastnet.h"

#define ROLLOUT_STEPS 40
#define TRAIN_BATCH 2
#define ROLLOUT_BATCH 1

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* CPU time of the whole process (all threads), seconds. */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

/* Resident size now (MiB), from /proc/self/statm. */
static double rss_now_mb(void) {
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static float *rnd(int64_t n, uint32_t seed, float scale) {
    float *p = malloc(sizeof(float) * (size_t)n);
    if (!p) {
        fprintf(stderr, "bench_fcn: out of memory\n");
        exit(1);
    }
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = scale * ((float)(s >> 8) / 8388608.0f - 1.0f);
    }
    return p;
}

static wx_fcn_config mid_config(void) {
    wx_fcn_config d = {0};
    d.img_h = 64, d.img_w = 128, d.patch = 4;
    d.in_channels = 20, d.out_channels = 20;
    d.embed_dim = 256, d.depth = 6, d.num_blocks = 8, d.hidden_size_factor = 1;
    d.mlp_ratio = 4.0, d.sparsity_threshold = 0.01, d.hard_thresholding_fraction = 1.0;
    d.count_unused_norm = 1, d.two_sided_modes = 0;
    return d;
}

/* GEMM FLOPs of one training step (gemm) and FFT FLOPs (fft), for b samples; formula at the top. */
static void fcn_flops(const wx_fcn *m, int64_t b, double *gemm, double *fft) {
    const wx_fcn_config *d = &m->d;
    double N = (double)m->ntok, D = (double)d->embed_dim, hm = (double)m->mlp_hidden;
    double K = (double)(d->in_channels * d->patch * d->patch);
    double P = (double)(d->out_channels * d->patch * d->patch);
    double bs = (double)(d->embed_dim / d->num_blocks), M = (double)m->kept;
    double pe = 2 * N * K * D;
    double f = pe + (double)d->depth * (4 * N * D * hm + 16 * M * D * bs * d->hidden_size_factor) +
               2 * N * D * P;
    *gemm = b * (3 * f - pe);
    *fft = b * (double)d->depth * 4 * D * 2.5 * N * log2(N);
}

static void die(const char *what) {
    fprintf(stderr, "bench_fcn: %s: %s\n", what, wx_error_message());
    exit(1);
}

static int threads_env(void) {
    const char *s = getenv("OMP_NUM_THREADS");
    int t = s ? atoi(s) : 0;
    return t > 0 ? t : omp_get_max_threads();
}

static void mode_train(wx_ctx *ctx, int steps) {
    const wx_backend *be = wx_backend_cpu();
    wx_fcn_config d = mid_config();
    const int64_t b = TRAIN_BATCH;
    wx_fcn *m = wx_fcn_create(ctx, be, &d, 1234, b, 1);
    if (!m) die("create");
    const int64_t nin = b * d.in_channels * d.img_h * d.img_w;
    const int64_t nout = b * d.out_channels * d.img_h * d.img_w;
    float *x = rnd(nin, 1, 1.0f), *tg = rnd(nout, 2, 1.0f);
    float *y = malloc(sizeof(float) * (size_t)nout), *dy = malloc(sizeof(float) * (size_t)nout);
    wx_params *p = &m->params;
    float *am = calloc((size_t)p->len, sizeof(float)), *av = calloc((size_t)p->len, sizeof(float));
    if (!y || !dy || !am || !av) die("allocation");
    double base = rss_now_mb();
    const int warm = 3;
    double *t = malloc(sizeof(double) * (size_t)steps);
    double *tf = malloc(sizeof(double) * (size_t)steps), *tb = malloc(sizeof(double) * (size_t)steps);
    double *tc = malloc(sizeof(double) * (size_t)steps), *ta = malloc(sizeof(double) * (size_t)steps);
    float loss = 0;
    for (int s = 0; s < warm + steps; s++) {
        double t0 = now_s(), c0 = cpu_s();
        wx_fcn_zero_grad(m);
        if (wx_fcn_forward(m, y, x, b) != WX_OK) die("forward");
        if (be->rel_l2_forward(ctx, &loss, y, tg, b, nout / b) != WX_OK) die("loss");
        if (be->rel_l2_backward(ctx, dy, 1.0, y, tg, b, nout / b) != WX_OK) die("loss backward");
        double t1 = now_s();
        if (wx_fcn_backward(m, NULL, dy) != WX_OK) die("backward");
        double t2 = now_s();
        if (be->adamw_forward(ctx, p->data, am, av, p->grad, p->len, 1e-4, 0.9, 0.999, 1e-8, 0.01,
                              s + 1) != WX_OK)
            die("adamw");
        double t3 = now_s(), c3 = cpu_s();
        if (s >= warm) {
            t[s - warm] = (t3 - t0) * 1e3;
            tc[s - warm] = (c3 - c0) * 1e3;
            tf[s - warm] = (t1 - t0) * 1e3;
            tb[s - warm] = (t2 - t1) * 1e3;
            ta[s - warm] = (t3 - t2) * 1e3;
        }
    }
    double gemm, fft;
    fcn_flops(m, b, &gemm, &fft);
    double ms = median(t, steps);
    /* FNV-1a of the parameter bytes after the last step: equal across runs with the same steps
     * and threads when training is bit-for-bit deterministic (run_fcn_bench.sh compares rounds). */
    uint64_t hash = 1469598103934665603ull;
    const unsigned char *bytes = (const unsigned char *)p->data;
    for (size_t i = 0; i < sizeof(float) * (size_t)p->len; i++)
        hash = (hash ^ bytes[i]) * 1099511628211ull;
    printf("{\"mode\": \"train\", \"batch\": %lld, \"params\": %lld, \"step_ms\": %.3f, "
           "\"fwd_loss_ms\": %.3f, \"bwd_ms\": %.3f, \"adamw_ms\": %.3f, \"step_cpu_ms\": %.3f, "
           "\"steps\": %d, "
           "\"loss\": %.6f, "
           "\"gemm_gflop\": %.4f, \"fft_gflop\": %.4f, \"rss_base_mb\": %.1f, "
           "\"peak_rss_mb\": %.1f, \"param_hash\": \"%016llx\"}\n",
           (long long)b, (long long)wx_fcn_param_total(m), ms, median(tf, steps),
           median(tb, steps), median(ta, steps), median(tc, steps), steps, loss, gemm / 1e9, fft / 1e9, base, peak_rss_mb(),
           (unsigned long long)hash);
    free(t), free(tf), free(tb), free(tc), free(ta), free(x), free(tg), free(y), free(dy), free(am), free(av);
    wx_fcn_destroy(m);
}

static void mode_rollout(wx_ctx *ctx, int reps) {
    const wx_backend *be = wx_backend_cpu();
    wx_fcn_config d = mid_config();
    const int64_t b = ROLLOUT_BATCH, n = b * d.in_channels * d.img_h * d.img_w;
    wx_fcn *m = wx_fcn_create(ctx, be, &d, 1234, b, 0);
    if (!m) die("create");
    float *x0 = rnd(n, 3, 1.0f), *a = malloc(sizeof(float) * (size_t)n);
    float *c = malloc(sizeof(float) * (size_t)n);
    if (!a || !c) die("allocation");
    double base = rss_now_mb();
    if (wx_fcn_predict(m, a, x0, b) != WX_OK) die("predict"); /* plans, first touch */
    double *t = malloc(sizeof(double) * (size_t)reps), *tc = malloc(sizeof(double) * (size_t)reps);
    double sum = 0;
    for (int r = 0; r < reps; r++) {
        memcpy(a, x0, sizeof(float) * (size_t)n);
        double t0 = now_s(), c0 = cpu_s();
        for (int s = 0; s < ROLLOUT_STEPS; s++) {
            if (wx_fcn_predict(m, c, a, b) != WX_OK) die("predict");
            float *sw = a;
            a = c, c = sw;
        }
        t[r] = (now_s() - t0) * 1e3;
        tc[r] = (cpu_s() - c0) * 1e3;
    }
    for (int64_t i = 0; i < n; i++) sum += fabs(a[i]);
    printf("{\"mode\": \"rollout\", \"batch\": %lld, \"steps\": %d, \"rollout_ms\": %.3f, "
           "\"rollout_cpu_ms\": %.3f, "
           "\"reps\": %d, \"mean_abs\": %.6g, \"rss_base_mb\": %.1f, \"peak_rss_mb\": %.1f}\n",
           (long long)b, ROLLOUT_STEPS, median(t, reps), median(tc, reps), reps, sum / (double)n,
           base, peak_rss_mb());
    free(t), free(tc), free(x0), free(a), free(c);
    wx_fcn_destroy(m);
}

static void mode_peak(void) {
    const int n = 2048, reps = 5;
    float *A = rnd((int64_t)n * n, 4, 1), *B = rnd((int64_t)n * n, 5, 1);
    float *C = calloc((size_t)n * n, sizeof(float));
    double t[5];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, A, n, B, n, 0, C, n);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, A, n, B, n, 0, C, n);
        t[r] = now_s() - t0;
    }
    double s = median(t, reps);
    printf("{\"mode\": \"peak\", \"sgemm_gflops\": %.2f}\n", 2.0 * n * n * n / s / 1e9);
    free(A), free(B), free(C);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_fcn train [steps] | rollout [reps] | peak\n");
        return 2;
    }
    int threads = threads_env();
    openblas_set_num_threads(threads); /* the trainer fixes the GEMM split the same way */
    wx_ctx *ctx = wx_ctx_create(threads);
    int k = argc > 2 ? atoi(argv[2]) : 0;
    if (!strcmp(argv[1], "train"))
        mode_train(ctx, k > 0 ? k : 10);
    else if (!strcmp(argv[1], "rollout"))
        mode_rollout(ctx, k > 0 ? k : 3);
    else if (!strcmp(argv[1], "peak"))
        mode_peak();
    else {
        fprintf(stderr, "bench_fcn: unknown mode '%s'\n", argv[1]);
        return 2;
    }
    wx_ctx_destroy(ctx);
    return 0;
}
