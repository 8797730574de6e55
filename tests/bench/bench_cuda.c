/* GPU benchmarks of issue 8 (run by scripts/device_check.sh), wxcast side; the PyTorch peer on the
 * same GPU is tests/bench/bench_cuda_torch.py.
 *
 *   bench_cuda gemm                      measured cuBLAS rate, 8192³: bf16 inputs + fp32
 *                                        accumulation, and plain fp32 (TFLOP/s)
 *   bench_cuda train   [options]         FourCastNet training step (zero grad, forward with tape,
 *                                        rel-L2 loss + backward, model backward, AdamW over the
 *                                        flat buffer), median of --steps after 2 warm-up steps;
 *                                        samples/s and achieved GEMM TFLOP/s
 *   bench_cuda rollout [options]         --steps autoregressive predicts at batch 1 (default 56:
 *                                        14 days), total seconds after one warm-up predict
 *   bench_cuda gc_rollout [options]      GraphCast_small at 1° (the config defaults: mesh 5,
 *                                        latent 512, 16 steps, 13 levels) on its ops path
 *                                        (models/graphcast_ops.h): --steps predicts at batch 1
 *                                        (default 40: 10 days), total seconds after one warm-up
 *                                        predict; between steps the output is copied on the device
 *                                        into the input's first Cout channels (a stand-in for the
 *                                        state window update, which is host glue in the trainer);
 *                                        index checks off after the warm-up validated the graphs;
 *                                        model creation (graphs, upload) timed apart; --precision
 *                                        bf16 rounds the linear ops' GEMM inputs, as for FourCastNet
 * Options: --device cuda|cpu (default cuda), --precision fp32|bf16 (default bf16; cuda only),
 *          --batch N (train; 0 = the largest that fits in free GPU memory, at most 64),
 *          --steps N, --tiny (a 32×64 model / a 22.5° GraphCast: exercises the program, e.g. on
 *          the CPU).
 * Default model: the paper configuration (720×1440, 20 channels, patch 8, embed 768, depth 12,
 * 8 blocks, MLP ratio 4, hard-thresholding fraction 1), every tensor in device memory.
 * Output: one JSON object on stdout; errors: "bench_cuda: ..." on stderr, exit 1 (2 for usage).
 * Not a test: nothing asserts a time.
 *
 * FLOPs per training sample (as tests/bench/bench_fcn.c; 1 MAC = 2 FLOPs, N tokens, D embed,
 * Hm = 4D, K = Cin·p², P = Cout·p², M kept modes, bs = D/blocks):
 *   F = 2·N·K·D + depth·(4·N·D·Hm + 16·M·D·bs·factor) + 2·N·D·P;  step = 3·F − 2·N·K·D.
 * FFTs and element-wise passes are not counted (so "achieved TFLOP/s" is GEMM work only). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/fourcastnet.h"
#include "models/graphcast.h"
#include "models/graphcast_ops.h"
#include "wx_build_config.h"
#if WX_HAVE_CUDA
#include "wx_cuda_backend.h"
#endif

typedef struct {
    const char *mode, *device;
    int bf16, tiny;
    int64_t batch;
    int steps;
} opts;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what) {
    fprintf(stderr, "bench_cuda: %s: %s\n", what, wx_error_message());
    exit(1);
}

static wx_fcn_config model_config(int tiny) {
    wx_fcn_config d = {0};
    if (tiny) {
        d.img_h = 32, d.img_w = 64, d.patch = 4, d.in_channels = 4, d.out_channels = 4;
        d.embed_dim = 64, d.depth = 2, d.num_blocks = 4;
    } else {
        d.img_h = 720, d.img_w = 1440, d.patch = 8, d.in_channels = 20, d.out_channels = 20;
        d.embed_dim = 768, d.depth = 12, d.num_blocks = 8;
    }
    d.hidden_size_factor = 1, d.mlp_ratio = 4.0, d.sparsity_threshold = 0.01;
    d.hard_thresholding_fraction = 1.0, d.count_unused_norm = 1;
    return d;
}

static double step_flops(const wx_fcn *m, int64_t b) {
    const wx_fcn_config *d = &m->d;
    double N = (double)m->ntok, D = (double)d->embed_dim, hm = (double)m->mlp_hidden;
    double K = (double)(d->in_channels * d->patch * d->patch);
    double P = (double)(d->out_channels * d->patch * d->patch);
    double bs = (double)(d->embed_dim / d->num_blocks), M = (double)m->kept;
    double pe = 2 * N * K * D;
    double f = pe + (double)d->depth * (4 * N * D * hm + 16 * M * D * bs * d->hidden_size_factor) +
               2 * N * D * P;
    return (double)b * (3 * f - pe);
}

/* Host random values in [-1, 1) copied to backend memory. */
static float *upload_random(const wx_backend *be, wx_ctx *ctx, int64_t n, uint32_t seed) {
    float *h = malloc(sizeof(float) * (size_t)n);
    if (!h) die("host memory");
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
    }
    float *d = wx_backend_upload_f32(be, ctx, h, n, "input");
    free(h);
    if (!d) die("upload");
    return d;
}

/* The largest batch whose arena, inputs and optimizer state fit in 85% of free GPU memory. */
static int64_t auto_batch(wx_ctx *ctx, const opts *o, const wx_fcn_config *d) {
    if (strcmp(o->device, "cuda") != 0) return 2;
#if WX_HAVE_CUDA
    size_t fr = 0, tot = 0;
    if (wx_cuda_mem_info(ctx, &fr, &tot) != WX_OK) die("memory info");
    int64_t tape, scratch;
    wx_fcn_arena_bytes(d, &tape, &scratch);
    wx_params p;
    wx_params_init(&p);
    wx_fcn_param_table(&p, d);
    double fixed = 4.0 * 4.0 * (double)p.len + 2.0 * 1073741824.0; /* params, grads, m, v; cuFFT */
    wx_params_free(&p);
    double io = 4.0 * 4.0 * (double)(d->in_channels * d->img_h * d->img_w);
    double per = (double)tape + (double)scratch + io;
    int64_t b = (int64_t)((0.85 * (double)fr - fixed) / per);
    return b < 1 ? 1 : (b > 64 ? 64 : b);
#else
    (void)ctx, (void)d;
    return 1;
#endif
}

static void mode_train(wx_ctx *ctx, const wx_backend *be, const opts *o) {
    wx_fcn_config d = model_config(o->tiny);
    int64_t b = o->batch > 0 ? o->batch : auto_batch(ctx, o, &d);
    wx_fcn *m = wx_fcn_create(ctx, be, &d, 1234, b, 1);
    if (!m) die("create model");
    const int64_t nin = b * d.in_channels * d.img_h * d.img_w;
    const int64_t nout = b * d.out_channels * d.img_h * d.img_w;
    float *x = upload_random(be, ctx, nin, 1), *tg = upload_random(be, ctx, nout, 2);
    float *y = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)nout, "y");
    float *dy = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)nout, "dy");
    float *lv = wx_backend_alloc(be, ctx, sizeof(float), "loss");
    wx_params *p = &m->params;
    float *am = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)p->len, "adam m");
    float *av = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)p->len, "adam v");
    if (!y || !dy || !lv || !am || !av) die("buffers");
    const int warm = 2;
    double *t = malloc(sizeof(double) * (size_t)o->steps);
    for (int s = 0; s < warm + o->steps; s++) {
        double t0 = now_s();
        wx_fcn_zero_grad(m);
        if (wx_fcn_forward(m, y, x, b) != WX_OK) die("forward");
        if (be->rel_l2_forward(ctx, lv, y, tg, b, nout / b) != WX_OK) die("loss");
        if (be->rel_l2_backward(ctx, dy, 1.0, y, tg, b, nout / b) != WX_OK) die("loss backward");
        if (wx_fcn_backward(m, NULL, dy) != WX_OK) die("backward");
        if (be->adamw_forward(ctx, p->data, am, av, p->grad, p->len, 1e-4, 0.9, 0.95, 1e-8, 0.1,
                              s + 1) != WX_OK)
            die("adamw");
        if (be->synchronize(ctx) != WX_OK) die("synchronize");
        if (s >= warm) t[s - warm] = now_s() - t0;
    }
    float loss = 0;
    if (be->copy_d2h(ctx, &loss, lv, sizeof loss) != WX_OK) die("loss read-back");
    qsort(t, (size_t)o->steps, sizeof *t, cmp_double);
    double sec = t[o->steps / 2], fl = step_flops(m, b);
    printf("{\"mode\": \"train\", \"device\": \"%s\", \"precision\": \"%s\", \"batch\": %lld, "
           "\"params\": %lld, \"steps\": %d, \"step_s\": %.6f, \"samples_per_s\": %.4f, "
           "\"gemm_tflop_per_step\": %.4f, \"achieved_tflops\": %.3f, \"loss\": %.6f}\n",
           be->name, o->bf16 ? "bf16" : "fp32", (long long)b, (long long)wx_fcn_param_total(m),
           o->steps, sec, (double)b / sec, fl / 1e12, fl / sec / 1e12, loss);
    free(t);
    be->mem_free(ctx, x), be->mem_free(ctx, tg), be->mem_free(ctx, y), be->mem_free(ctx, dy);
    be->mem_free(ctx, lv), be->mem_free(ctx, am), be->mem_free(ctx, av);
    wx_fcn_destroy(m);
}

static void mode_rollout(wx_ctx *ctx, const wx_backend *be, const opts *o) {
    wx_fcn_config d = model_config(o->tiny);
    wx_fcn *m = wx_fcn_create(ctx, be, &d, 1234, 1, 0);
    if (!m) die("create model");
    const int64_t n = d.in_channels * d.img_h * d.img_w;
    float *a = upload_random(be, ctx, n, 3);
    float *c = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)n, "state");
    if (!c) die("buffers");
    if (wx_fcn_predict(m, c, a, 1) != WX_OK || be->synchronize(ctx) != WX_OK) die("warm-up");
    double t0 = now_s();
    for (int s = 0; s < o->steps; s++) {
        if (wx_fcn_predict(m, c, a, 1) != WX_OK) die("predict");
        float *sw = a;
        a = c, c = sw;
    }
    if (be->synchronize(ctx) != WX_OK) die("synchronize");
    double sec = now_s() - t0;
    float probe = 0;
    if (be->copy_d2h(ctx, &probe, a, sizeof probe) != WX_OK) die("read-back");
    printf("{\"mode\": \"rollout\", \"device\": \"%s\", \"precision\": \"%s\", \"steps\": %d, "
           "\"total_s\": %.4f, \"step_ms\": %.3f, \"finite\": %s}\n",
           be->name, o->bf16 ? "bf16" : "fp32", o->steps, sec, 1e3 * sec / o->steps,
           isfinite(probe) ? "true" : "false");
    be->mem_free(ctx, a), be->mem_free(ctx, c);
    wx_fcn_destroy(m);
}

static void mode_gc_rollout(wx_ctx *ctx, const wx_backend *be, const opts *o) {
    const char *yaml = o->tiny ? "type: graphcast\nresolution: 22.5\nmesh_max_level: 1\n"
                                 "latent_size: 16\ngnn_msg_steps: 2\n"
                               : "type: graphcast\n";
    wx_yaml *root = NULL;
    wx_gc_config c;
    if (wx_yaml_load_string(yaml, "gc_rollout", &root) != WX_OK ||
        wx_gc_config_parse(root, "", &c) != WX_OK)
        die("graphcast config");
    wx_yaml_free(root);
    double t0 = now_s();
    /* the ops path on every backend, so --device cpu times the same code */
    wx_gc *m = wx_gc_create_path(ctx, be, &c, 1234, 1, 0, 0, 1);
    if (!m) die("create graphcast");
    if (be->synchronize(ctx) != WX_OK) die("synchronize");
    const double create_s = now_s() - t0;
    const int64_t hw = c.nlat * c.nlon, nin = c.in_channels * hw, nout = c.out_channels * hw;
    float *x = upload_random(be, ctx, nin, 4);
    float *y = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)nout, "output");
    if (!y) die("buffers");
    if (wx_gc_run_predict(m, y, x, 1) != WX_OK || be->synchronize(ctx) != WX_OK) die("warm-up");
#if WX_HAVE_CUDA
    if (be->on_device && wx_cuda_set_index_checks(ctx, 0) != WX_OK) die("index checks");
#endif
    t0 = now_s();
    for (int s = 0; s < o->steps; s++) {
        if (wx_gc_run_predict(m, y, x, 1) != WX_OK) die("predict");
        if (be->copy_d2d(ctx, x, y, sizeof(float) * (size_t)nout) != WX_OK) die("feed back");
    }
    if (be->synchronize(ctx) != WX_OK) die("synchronize");
    double sec = now_s() - t0;
    float probe = 0;
    if (be->copy_d2h(ctx, &probe, y, sizeof probe) != WX_OK) die("read-back");
    printf("{\"mode\": \"gc_rollout\", \"device\": \"%s\", \"precision\": \"%s\", "
           "\"resolution\": %g, \"mesh_level\": %lld, \"latent\": %lld, \"msg_steps\": %lld, "
           "\"params\": %lld, \"steps\": %d, \"create_s\": %.3f, \"total_s\": %.4f, "
           "\"step_ms\": %.3f, \"finite\": %s}\n",
           be->name, o->bf16 ? "bf16" : "fp32", c.resolution, (long long)c.mesh_max_level, (long long)c.latent_size,
           (long long)c.gnn_msg_steps, (long long)wx_params_total(&m->params), o->steps, create_s,
           sec, 1e3 * sec / o->steps, isfinite(probe) ? "true" : "false");
    be->mem_free(ctx, x), be->mem_free(ctx, y);
    wx_gc_destroy(m);
}

static void mode_gemm(wx_ctx *ctx) {
#if WX_HAVE_CUDA
    double bf = 0, f32 = 0;
    if (wx_cuda_gemm_rate(ctx, 8192, 1, 20, &bf) != WX_OK) die("bf16 GEMM");
    if (wx_cuda_gemm_rate(ctx, 8192, 0, 5, &f32) != WX_OK) die("fp32 GEMM");
    printf("{\"mode\": \"gemm\", \"n\": 8192, \"bf16_tflops\": %.2f, \"fp32_tflops\": %.2f}\n", bf,
           f32);
#else
    (void)ctx;
    fprintf(stderr, "bench_cuda: gemm: this wxcast was built without CUDA\n");
    exit(1);
#endif
}

static int usage(const char *msg) {
    fprintf(stderr, "bench_cuda: %s\nusage: bench_cuda gemm|train|rollout|gc_rollout [--device cuda|cpu] "
            "[--precision fp32|bf16] [--batch N] [--steps N] [--tiny]\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage("no mode");
    opts o = {argv[1], "cuda", 1, 0, 0, 0};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--tiny")) o.tiny = 1;
        else if (!v) return usage("option without a value");
        else if (!strcmp(a, "--device")) o.device = v, i++;
        else if (!strcmp(a, "--precision")) o.bf16 = !strcmp(v, "bf16"), i++;
        else if (!strcmp(a, "--batch")) o.batch = atoll(v), i++;
        else if (!strcmp(a, "--steps")) o.steps = atoi(v), i++;
        else return usage("unknown option");
    }
    int train = !strcmp(o.mode, "train"), roll = !strcmp(o.mode, "rollout");
    int gcroll = !strcmp(o.mode, "gc_rollout");
    if (!train && !roll && !gcroll && strcmp(o.mode, "gemm") != 0) return usage("unknown mode");
    if (o.steps <= 0) o.steps = roll ? 56 : (gcroll ? 40 : 5);
    const wx_backend *be = NULL;
    if (wx_backend_by_name(o.device, "--device", &be) != WX_OK) die("device");
    if (o.bf16 && !be->on_device) o.bf16 = 0; /* the CPU backend is fp32 only */
    wx_ctx *ctx = wx_ctx_create(0);
#if WX_HAVE_CUDA
    if (be->on_device &&
        wx_cuda_set_precision(ctx, o.bf16 ? WX_CUDA_BF16 : WX_CUDA_FP32) != WX_OK)
        die("precision");
#endif
    if (train) mode_train(ctx, be, &o);
    else if (roll) mode_rollout(ctx, be, &o);
    else if (gcroll) mode_gc_rollout(ctx, be, &o);
    else mode_gemm(ctx);
    wx_ctx_destroy(ctx);
    return 0;
}
