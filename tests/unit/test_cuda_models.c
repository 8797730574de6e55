/* Whole models on the device: a tiny FourCastNet training step (forward, lat-weighted MSE,
 * backward, global gradient norm, AdamW over the flat parameter buffer) with every tensor in
 * device memory, against the same step on the CPU backend; two GPU steps must be bitwise
 * identical; the bf16 GEMM mode stays within 1e-2 of the fp32 CPU loss.
 *
 * The step is written once against a `const wx_backend *` (backend memory for the model, the
 * inputs, the loss scalar, the optimizer state), so the CPU and CUDA runs execute the same code.
 *
 * Tolerances (relative to the largest |CPU value| of the tensor, as test_cuda_ops):
 *   loss 1e-4 and gradients 1e-3: the op tests hold GEMM ops to 1e-4 each; a 2-block model chains
 *   ~20 of them, forward and backward (errors add, not multiply, at these sizes);
 *   parameters after AdamW: Adam's first step moves each parameter by ~lr·sign(g), so a gradient
 *   within rounding of 0 may flip its step: at most 2·lr anywhere, and fewer than 1 in 1000
 *   parameters further than 1e-3·lr from the CPU's.
 * These bounds are from the op tests' analysis; the test passed on an H200 (2026-11-30).
 *
 * GraphCast: on the CUDA backend it takes the ops path (models/graphcast_ops.h: every MLP through
 * backend ops, graphs and tapes in device memory). A tiny GraphCast training step (forward,
 * GraphCast loss, backward with dx, gradient norm, AdamW) on the GPU against the same step on the
 * CPU's fused path, same tolerances as FourCastNet's (the CPU ops path agrees with the fused one
 * to 3e-6, test_graphcast_ops, so the bounds are the GPU ops' own); two GPU steps bitwise equal.
 * Without a GPU, creating it fails cleanly with "no CUDA device".
 *
 * Without a GPU: the host-side checks run (clean "no CUDA device" errors from the model's
 * allocations) and the test exits 77. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "backend/wx_backend.h"
#include "backend/wx_batch_stage.h"
#include "models/fourcastnet.h"
#include "models/graphcast.h"
#include "models/graphcast_ops.h"
#include "train/train_model.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"

#define LR 1e-3

static wx_fcn_config tiny_cfg(void) {
    wx_fcn_config c = {.img_h = 16, .img_w = 32, .patch = 4, .in_channels = 3, .out_channels = 3,
                       .embed_dim = 32, .depth = 2, .num_blocks = 4, .hidden_size_factor = 1,
                       .mlp_ratio = 2.0, .sparsity_threshold = 0.01,
                       .hard_thresholding_fraction = 1.0, .count_unused_norm = 1};
    return c;
}

/* What one step leaves behind, copied to the host. */
typedef struct {
    double loss, sumsq;
    float *grad, *param; /* (len) */
    int64_t len;
} step_result;

static void result_free(step_result *r) {
    free(r->grad);
    free(r->param);
    memset(r, 0, sizeof *r);
}

#define STEP_TRY(expr)                                                                   \
    do {                                                                                 \
        if (!WX_CHECK((expr) == WX_OK, "%s: %s: %s", be->name, #expr, wx_error_message())) \
            goto done;                                                                   \
    } while (0)

/* One training step of a fresh tiny model (seed 11) on backend be, batch 2. */
static int fcn_step(wx_ctx *ctx, const wx_backend *be, step_result *r) {
    memset(r, 0, sizeof *r);
    wx_fcn_config c = tiny_cfg();
    const int64_t b = 2, n = b * c.in_channels * c.img_h * c.img_w;
    float *hx = malloc(sizeof(float) * (size_t)n), *ht = malloc(sizeof(float) * (size_t)n);
    float *hw = malloc(sizeof(float) * (size_t)c.img_h);
    double *tmp = malloc(sizeof(double) * (size_t)n);
    wx_test_fill_uniform(tmp, n, 21, -1.0, 1.0);
    wx_test_f64_to_f32(hx, tmp, n);
    wx_test_fill_uniform(tmp, n, 22, -1.0, 1.0);
    wx_test_f64_to_f32(ht, tmp, n);
    for (int64_t j = 0; j < c.img_h; j++) hw[j] = (float)(0.5 + (double)j / (double)c.img_h);
    free(tmp);
    int ok = 0;
    float *x = NULL, *t = NULL, *wl = NULL, *y = NULL, *dy = NULL, *lv = NULL, *am = NULL,
          *av = NULL;
    double *ss = NULL;
    wx_fcn *m = wx_fcn_create(ctx, be, &c, 11, b, 1);
    if (!WX_CHECK(m != NULL, "%s: create: %s", be->name, wx_error_message())) goto done;
    const int64_t len = m->params.len;
    x = wx_backend_upload_f32(be, ctx, hx, n, "x");
    t = wx_backend_upload_f32(be, ctx, ht, n, "target");
    wl = wx_backend_upload_f32(be, ctx, hw, c.img_h, "wlat");
    y = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)n, "y");
    dy = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)n, "dy");
    lv = wx_backend_alloc(be, ctx, sizeof(float), "loss");
    ss = wx_backend_alloc(be, ctx, sizeof(double), "sumsq");
    am = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)len, "adam m");
    av = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)len, "adam v");
    if (!WX_CHECK(x && t && wl && y && dy && lv && ss && am && av, "%s: buffers: %s", be->name,
                  wx_error_message()))
        goto done;
    float loss = 0;
    STEP_TRY(wx_fcn_forward(m, y, x, b));
    STEP_TRY(be->mse_latw_forward(ctx, lv, y, t, wl, NULL, b, c.out_channels, c.img_h, c.img_w));
    STEP_TRY(be->mse_latw_backward(ctx, dy, 1.0, y, t, wl, NULL, b, c.out_channels, c.img_h,
                                   c.img_w));
    STEP_TRY(wx_fcn_backward(m, NULL, dy));
    STEP_TRY(be->grad_norm_forward(ctx, ss, m->params.grad, len));
    r->len = len;
    r->grad = malloc(sizeof(float) * (size_t)len);
    r->param = malloc(sizeof(float) * (size_t)len);
    STEP_TRY(be->copy_d2h(ctx, r->grad, m->params.grad, sizeof(float) * (size_t)len));
    STEP_TRY(be->adamw_forward(ctx, m->params.data, am, av, m->params.grad, len, LR, 0.9, 0.95,
                               1e-8, 0.1, 1));
    STEP_TRY(be->synchronize(ctx));
    STEP_TRY(be->copy_d2h(ctx, &loss, lv, sizeof loss));
    STEP_TRY(be->copy_d2h(ctx, &r->sumsq, ss, sizeof r->sumsq));
    STEP_TRY(be->copy_d2h(ctx, r->param, m->params.data, sizeof(float) * (size_t)len));
    r->loss = loss;
    ok = 1;
done:
    be->mem_free(ctx, x), be->mem_free(ctx, t), be->mem_free(ctx, wl), be->mem_free(ctx, y);
    be->mem_free(ctx, dy), be->mem_free(ctx, lv), be->mem_free(ctx, ss);
    be->mem_free(ctx, am), be->mem_free(ctx, av);
    wx_fcn_destroy(m);
    free(hx), free(ht), free(hw);
    return ok;
}

static double max_abs(const float *a, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i]));
    return m;
}

static void test_fcn_step(void) {
    wx_ctx *cc = wx_ctx_create(1), *gc = wx_ctx_create(1);
    step_result cpu, gpu, gpu2;
    int ok = fcn_step(cc, wx_backend_cpu(), &cpu);
    ok = ok && WX_CHECK(wx_cuda_ctx_attach(gc, 0) == WX_OK, "attach: %s", wx_error_message());
    ok = ok && fcn_step(gc, wx_backend_cuda(), &gpu) && fcn_step(gc, wx_backend_cuda(), &gpu2);
    if (ok) {
        const int64_t n = cpu.len;
        WX_CHECK(fabs(gpu.loss - cpu.loss) <= 1e-4 * fabs(cpu.loss), "loss GPU %.9g CPU %.9g",
                 gpu.loss, cpu.loss);
        WX_CHECK(fabs(gpu.sumsq - cpu.sumsq) <= 2e-3 * cpu.sumsq, "grad sumsq GPU %.9g CPU %.9g",
                 gpu.sumsq, cpu.sumsq);
        double gs = max_abs(cpu.grad, n), gworst = 0;
        for (int64_t i = 0; i < n; i++)
            gworst = fmax(gworst, fabs((double)gpu.grad[i] - cpu.grad[i]));
        WX_CHECK(gs > 0 && gworst <= 1e-3 * gs, "grads: worst %.3e of scale %.3e", gworst, gs);
        double pworst = 0;
        int64_t far = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = fabs((double)gpu.param[i] - cpu.param[i]);
            pworst = fmax(pworst, e);
            far += e > 1e-3 * LR;
        }
        WX_CHECK(pworst <= 2 * LR * 1.001 && far * 1000 < n,
                 "params after AdamW: worst %.3e, %lld of %lld beyond 1e-3 lr", pworst,
                 (long long)far, (long long)n);
        /* two GPU runs: the same bits (no atomics, fixed reduction orders) */
        WX_CHECK(gpu.loss == gpu2.loss && gpu.sumsq == gpu2.sumsq &&
                     !memcmp(gpu.grad, gpu2.grad, sizeof(float) * (size_t)n) &&
                     !memcmp(gpu.param, gpu2.param, sizeof(float) * (size_t)n),
                 "two identical GPU steps differ");
        printf("fcn step: loss CPU %.9g GPU %.9g; grad worst %.3e of %.3e; param worst %.3e\n",
               cpu.loss, gpu.loss, gworst, gs, pworst);
        /* bf16 GEMM inputs, fp32 accumulation, fp32 master weights */
        step_result bf;
        if (WX_CHECK(wx_cuda_set_precision(gc, WX_CUDA_BF16) == WX_OK, "bf16: %s",
                     wx_error_message()) &&
            fcn_step(gc, wx_backend_cuda(), &bf)) {
            WX_CHECK(fabs(bf.loss - cpu.loss) <= 1e-2 * fabs(cpu.loss),
                     "bf16 loss %.9g vs fp32 CPU %.9g", bf.loss, cpu.loss);
            WX_CHECK(fabs(bf.sumsq - cpu.sumsq) <= 5e-2 * cpu.sumsq,
                     "bf16 grad sumsq %.9g vs fp32 CPU %.9g", bf.sumsq, cpu.sumsq);
            printf("fcn step bf16: loss %.9g (fp32 CPU %.9g)\n", bf.loss, cpu.loss);
            result_free(&bf);
        }
        (void)wx_cuda_set_precision(gc, WX_CUDA_FP32);
    }
    result_free(&cpu), result_free(&gpu), result_free(&gpu2);
    wx_ctx_destroy(cc);
    wx_ctx_destroy(gc);
}

/* The trainer's model interface on the device: a 2-step FourCastNet rollout loss (lat-weighted
 * MSE, gradient through the fed-back prediction) with the adapter's buffers, the loss weights and
 * the loss value in device memory, against the CPU. Same tolerances as the step above. */
static const char *tiny_yaml =
    "type: fourcastnet\nimg_size: [16, 32]\npatch_size: 4\nin_channels: 3\nout_channels: 3\n"
    "embed_dim: 32\ndepth: 2\nnum_blocks: 4\nmlp_ratio: 2.0\n";

static int tm_step(wx_ctx *ctx, const wx_backend *be, double *loss, float **grad, int64_t *len) {
    wx_yaml *y = NULL;
    wx_train_model *m = NULL;
    wx_train_loss l;
    memset(&l, 0, sizeof l);
    const int64_t b = 2, k = 2, C = 3, H = 16, W = 32, n = b * C * H * W;
    double wl[16], tmp[3 * 2 * 3 * 16 * 32];
    float hx[2 * 3 * 16 * 32], ht[2 * 2 * 3 * 16 * 32];
    for (int j = 0; j < H; j++) wl[j] = 0.5 + (double)j / H;
    wx_test_fill_uniform(tmp, n, 31, -1.0, 1.0);
    wx_test_f64_to_f32(hx, tmp, n);
    wx_test_fill_uniform(tmp, k * n, 32, -1.0, 1.0);
    wx_test_f64_to_f32(ht, tmp, k * n);
    float *x = NULL, *t = NULL;
    int ok = 0;
    if (!WX_CHECK(wx_yaml_load_string(tiny_yaml, "tiny", &y) == WX_OK &&
                      wx_train_model_create(y, "model", ctx, be, 5, b, k, &m) == WX_OK,
                  "%s: train model: %s", be->name, wx_error_message()))
        goto done;
    wx_train_loss_init(&l, WX_LOSS_LATW_MSE, ctx, be, C, H, W, wl, NULL);
    x = wx_backend_upload_f32(be, ctx, hx, n, "x");
    t = wx_backend_upload_f32(be, ctx, ht, k * n, "targets");
    *len = m->params->len;
    *grad = malloc(sizeof(float) * (size_t)*len);
    ok = WX_CHECK(x && t && m->ops->loss_backward(m, &l, x, t, NULL, k, b, loss) == WX_OK &&
                      be->copy_d2h(ctx, *grad, m->params->grad, sizeof(float) * (size_t)*len) ==
                          WX_OK,
                  "%s: loss_backward: %s", be->name, wx_error_message());
done:
    be->mem_free(ctx, x), be->mem_free(ctx, t);
    wx_train_loss_free(&l);
    wx_train_model_destroy(m);
    wx_yaml_free(y);
    return ok;
}

static void test_train_model(void) {
    wx_ctx *cc = wx_ctx_create(1), *gc = wx_ctx_create(1);
    double lc = 0, lg = 0;
    float *gcpu = NULL, *ggpu = NULL;
    int64_t n = 0;
    if (tm_step(cc, wx_backend_cpu(), &lc, &gcpu, &n) && tm_step(gc, wx_backend_cuda(), &lg, &ggpu, &n)) {
        WX_CHECK(fabs(lg - lc) <= 1e-4 * fabs(lc), "2-step loss GPU %.9g CPU %.9g", lg, lc);
        double gs = max_abs(gcpu, n), worst = 0;
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)ggpu[i] - gcpu[i]));
        WX_CHECK(gs > 0 && worst <= 1e-3 * gs, "2-step grads: worst %.3e of %.3e", worst, gs);
    }
    free(gcpu), free(ggpu);
    wx_ctx_destroy(cc);
    wx_ctx_destroy(gc);
}

/* Batches through pinned host slots and async uploads: each device slot holds its batch after
 * the upload, while the next batch is being written on the host. */
static void test_stage_gpu(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    const wx_backend *cu = wx_backend_cuda();
    wx_batch_stage s;
    const int64_t nx = 1 << 16, nt = 3 << 16;
    float *x, *t, *dx, *dt, *back = malloc(sizeof(float) * (size_t)nt);
    if (WX_CHECK(wx_batch_stage_init(&s, cu, ctx, nx, nt) == WX_OK, "stage: %s",
                 wx_error_message())) {
        WX_CHECK(wx_cuda_host_is_pinned(s.hx[0]) && wx_cuda_host_is_pinned(s.ht[1]),
                 "host slots are pinned");
        for (int i = 0; i < 4; i++) {
            WX_CHECK(wx_batch_stage_host(&s, &x, &t) == WX_OK, "host %d", i);
            for (int64_t j = 0; j < nx; j++) x[j] = (float)(i * nx + j);
            for (int64_t j = 0; j < nt; j++) t[j] = (float)(-i * nt - j);
            WX_CHECK(wx_batch_stage_upload(&s, &dx, &dt) == WX_OK, "upload %d: %s", i,
                     wx_error_message());
            /* a blocking read on the compute stream is ordered after the upload */
            WX_CHECK(cu->copy_d2h(ctx, back, dt, sizeof(float) * (size_t)nt) == WX_OK &&
                         back[0] == (float)(-i * nt) && back[nt - 1] == (float)(-i * nt - nt + 1),
                     "batch %d arrived", i);
        }
    }
    wx_batch_stage_free(&s);
    free(back);
    wx_ctx_destroy(ctx);
}

static int gc_step(wx_ctx *ctx, const wx_backend *be, int ops, int ckpt, step_result *r);
static int gc_tm_step(wx_ctx *ctx, const wx_backend *be, double *loss, float **grad,
                      int64_t *len);

/* The CPU halves of the comparisons, so their set-up is exercised without a GPU too: a finite
 * positive loss, nonzero gradients, and two CPU runs with the same bits. */
static void test_cpu_halves(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    step_result a, b;
    if (fcn_step(ctx, wx_backend_cpu(), &a) && fcn_step(ctx, wx_backend_cpu(), &b)) {
        WX_CHECK(isfinite(a.loss) && a.loss > 0 && a.sumsq > 0, "cpu step loss %g sumsq %g",
                 a.loss, a.sumsq);
        WX_CHECK(a.loss == b.loss && !memcmp(a.param, b.param, sizeof(float) * (size_t)a.len),
                 "two CPU steps bitwise");
    }
    result_free(&a), result_free(&b);
    double l = 0;
    float *g = NULL;
    int64_t n = 0;
    if (tm_step(ctx, wx_backend_cpu(), &l, &g, &n))
        WX_CHECK(isfinite(l) && l > 0 && max_abs(g, n) > 0, "cpu 2-step loss %g", l);
    free(g);
    g = NULL;
    /* GraphCast: the CPU ops path against the CPU fused path with the GPU test's bounds */
    step_result f, o;
    memset(&f, 0, sizeof f), memset(&o, 0, sizeof o);
    if (gc_step(ctx, wx_backend_cpu(), 0, 0, &f) && gc_step(ctx, wx_backend_cpu(), 1, 1, &o)) {
        double gs = max_abs(f.grad, f.len), worst = 0;
        for (int64_t i = 0; i < f.len; i++) worst = fmax(worst, fabs((double)o.grad[i] - f.grad[i]));
        WX_CHECK(isfinite(f.loss) && f.loss > 0 && fabs(o.loss - f.loss) <= 1e-4 * f.loss &&
                     gs > 0 && worst <= 1e-3 * gs,
                 "cpu gc step: loss ops %.9g fused %.9g, grads worst %.3e of %.3e", o.loss, f.loss,
                 worst, gs);
    }
    result_free(&f), result_free(&o);
    if (gc_tm_step(ctx, wx_backend_cpu(), &l, &g, &n))
        WX_CHECK(isfinite(l) && l > 0 && max_abs(g, n) > 0, "cpu gc 2-step loss %g", l);
    free(g);
    wx_ctx_destroy(ctx);
}

/* ---- GraphCast ---- */

static const char *gc_tiny_yaml =
    "type: graphcast\nresolution: 22.5\nmesh_max_level: 1\nlatent_size: 16\ngnn_msg_steps: 2\n"
    "surface_variables: [2m_temperature, mean_sea_level_pressure]\n"
    "atmospheric_variables: [geopotential]\npressure_levels: [500, 850]\n"
    "forcings: [toa_incident_solar_radiation, day_progress_sin, day_progress_cos]\n"
    "static_variables: [land_sea_mask]\n";

static int gc_config(wx_gc_config *c) {
    wx_yaml *y = NULL;
    int ok = WX_CHECK(wx_yaml_load_string(gc_tiny_yaml, "gc tiny", &y) == WX_OK &&
                          wx_gc_config_parse(y, "", c) == WX_OK,
                      "gc config: %s", wx_error_message());
    wx_yaml_free(y);
    return ok;
}

/* One GraphCast training step of a fresh tiny model (seed 13) on backend be (CPU: path `ops`),
 * batch 2, with activation checkpointing `ckpt`; r->grad also holds dx after the parameters. */
static int gc_step(wx_ctx *ctx, const wx_backend *be, int ops, int ckpt, step_result *r) {
    memset(r, 0, sizeof *r);
    wx_gc_config c;
    if (!gc_config(&c)) return 0;
    const int64_t b = 2, H = c.nlat, W = c.nlon, nx = b * c.in_channels * H * W;
    const int64_t ny = b * c.out_channels * H * W;
    float *hx = malloc(sizeof(float) * (size_t)nx), *ht = malloc(sizeof(float) * (size_t)ny);
    float *hwl = malloc(sizeof(float) * (size_t)H), *hwc = malloc(sizeof(float) * (size_t)c.out_channels);
    double *tmp = malloc(sizeof(double) * (size_t)nx), lat[64];
    wx_test_fill_uniform(tmp, nx, 41, -1.0, 1.0);
    wx_test_f64_to_f32(hx, tmp, nx);
    wx_test_fill_uniform(tmp, ny, 42, -1.0, 1.0);
    wx_test_f64_to_f32(ht, tmp, ny);
    free(tmp);
    for (int64_t j = 0; j < H; j++) lat[j] = 90.0 - (double)j * c.resolution;
    int ok = 0;
    float *x = NULL, *t = NULL, *wl = NULL, *wc = NULL, *y = NULL, *dy = NULL, *dx = NULL,
          *lv = NULL, *am = NULL, *av = NULL;
    double *ss = NULL;
    wx_gc *m = wx_gc_create_path(ctx, be, &c, 13, b, 1, ckpt, ops || be->on_device);
    if (!WX_CHECK(m != NULL, "%s: gc create: %s", be->name, wx_error_message())) goto done;
    if (!WX_CHECK(H <= 64 && wx_gc_loss_weights(&c, lat, hwl, hwc) == WX_OK, "gc loss weights"))
        goto done;
    const int64_t len = m->params.len;
    x = wx_backend_upload_f32(be, ctx, hx, nx, "x");
    t = wx_backend_upload_f32(be, ctx, ht, ny, "target");
    wl = wx_backend_upload_f32(be, ctx, hwl, H, "wlat");
    wc = wx_backend_upload_f32(be, ctx, hwc, c.out_channels, "wch");
    y = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)ny, "y");
    dy = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)ny, "dy");
    dx = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)nx, "dx");
    lv = wx_backend_alloc(be, ctx, sizeof(float), "loss");
    ss = wx_backend_alloc(be, ctx, sizeof(double), "sumsq");
    am = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)len, "adam m");
    av = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)len, "adam v");
    if (!WX_CHECK(x && t && wl && wc && y && dy && dx && lv && ss && am && av, "%s: buffers: %s",
                  be->name, wx_error_message()))
        goto done;
    float loss = 0;
    STEP_TRY(wx_gc_run_forward(m, y, x, b));
    STEP_TRY(wx_gc_loss_forward(ctx, be, lv, y, t, wl, wc, b, c.out_channels, H, W, 1));
    STEP_TRY(wx_gc_loss_backward(ctx, be, dy, 1.0, y, t, wl, wc, b, c.out_channels, H, W, 1));
    STEP_TRY(wx_gc_run_backward(m, dx, dy));
    STEP_TRY(be->grad_norm_forward(ctx, ss, m->params.grad, len));
    r->len = len + nx;
    r->grad = malloc(sizeof(float) * (size_t)r->len);
    r->param = malloc(sizeof(float) * (size_t)len);
    STEP_TRY(be->copy_d2h(ctx, r->grad, m->params.grad, sizeof(float) * (size_t)len));
    STEP_TRY(be->copy_d2h(ctx, r->grad + len, dx, sizeof(float) * (size_t)nx));
    STEP_TRY(be->adamw_forward(ctx, m->params.data, am, av, m->params.grad, len, LR, 0.9, 0.95,
                               1e-8, 0.1, 1));
    STEP_TRY(be->synchronize(ctx));
    STEP_TRY(be->copy_d2h(ctx, &loss, lv, sizeof loss));
    STEP_TRY(be->copy_d2h(ctx, &r->sumsq, ss, sizeof r->sumsq));
    STEP_TRY(be->copy_d2h(ctx, r->param, m->params.data, sizeof(float) * (size_t)len));
    r->loss = loss;
    ok = 1;
done:
    be->mem_free(ctx, x), be->mem_free(ctx, t), be->mem_free(ctx, wl), be->mem_free(ctx, wc);
    be->mem_free(ctx, y), be->mem_free(ctx, dy), be->mem_free(ctx, dx), be->mem_free(ctx, lv);
    be->mem_free(ctx, ss), be->mem_free(ctx, am), be->mem_free(ctx, av);
    wx_gc_destroy(m);
    free(hx), free(ht), free(hwl), free(hwc);
    return ok;
}

/* GPU (ops path) vs CPU (fused path): loss, every gradient and dx (r.grad), params after AdamW;
 * two GPU steps and the GPU step with checkpointing bitwise equal. */
static void test_gc_step(void) {
    wx_ctx *cc = wx_ctx_create(1), *gc = wx_ctx_create(1);
    step_result cpu, gpu, gpu2, gck;
    memset(&cpu, 0, sizeof cpu), memset(&gpu, 0, sizeof gpu);
    memset(&gpu2, 0, sizeof gpu2), memset(&gck, 0, sizeof gck);
    int ok = gc_step(cc, wx_backend_cpu(), 0, 0, &cpu);
    ok = ok && WX_CHECK(wx_cuda_ctx_attach(gc, 0) == WX_OK, "attach: %s", wx_error_message());
    ok = ok && gc_step(gc, wx_backend_cuda(), 1, 0, &gpu) &&
         gc_step(gc, wx_backend_cuda(), 1, 0, &gpu2) && gc_step(gc, wx_backend_cuda(), 1, 1, &gck);
    if (ok) {
        const int64_t n = cpu.len; /* parameter gradients, then dx */
        WX_CHECK(fabs(gpu.loss - cpu.loss) <= 1e-4 * fabs(cpu.loss), "gc loss GPU %.9g CPU %.9g",
                 gpu.loss, cpu.loss);
        WX_CHECK(fabs(gpu.sumsq - cpu.sumsq) <= 2e-3 * cpu.sumsq, "gc sumsq GPU %.9g CPU %.9g",
                 gpu.sumsq, cpu.sumsq);
        double gs = max_abs(cpu.grad, n), gworst = 0;
        for (int64_t i = 0; i < n; i++)
            gworst = fmax(gworst, fabs((double)gpu.grad[i] - cpu.grad[i]));
        WX_CHECK(gs > 0 && gworst <= 1e-3 * gs, "gc grads: worst %.3e of scale %.3e", gworst, gs);
        /* params: the AdamW bound of the FourCastNet step (batch 2: dx is 2·Cin·H·W) */
        wx_gc_config c;
        int64_t len = 0;
        if (gc_config(&c)) len = n - 2 * c.in_channels * c.nlat * c.nlon;
        double pworst = 0;
        int64_t far = 0;
        for (int64_t i = 0; i < len; i++) {
            double e = fabs((double)gpu.param[i] - cpu.param[i]);
            pworst = fmax(pworst, e);
            far += e > 1e-3 * LR;
        }
        WX_CHECK(len > 0 && pworst <= 2 * LR * 1.001 && far * 1000 < len,
                 "gc params after AdamW: worst %.3e, %lld of %lld beyond 1e-3 lr", pworst,
                 (long long)far, (long long)len);
        WX_CHECK(gpu.loss == gpu2.loss && gpu.sumsq == gpu2.sumsq &&
                     !memcmp(gpu.grad, gpu2.grad, sizeof(float) * (size_t)n) &&
                     !memcmp(gpu.param, gpu2.param, sizeof(float) * (size_t)len),
                 "two identical GPU GraphCast steps differ");
        WX_CHECK(gpu.loss == gck.loss && !memcmp(gpu.grad, gck.grad, sizeof(float) * (size_t)n),
                 "GPU GraphCast step with checkpointing differs from plain");
        printf("gc step: loss CPU %.9g GPU %.9g; grad worst %.3e of %.3e; param worst %.3e\n",
               cpu.loss, gpu.loss, gworst, gs, pworst);
    }
    result_free(&cpu), result_free(&gpu), result_free(&gpu2), result_free(&gck);
    wx_ctx_destroy(cc);
    wx_ctx_destroy(gc);
}

/* The trainer's GraphCast interface on backend be (CUDA: ops path with staged glue; CPU: fused):
 * make_input on the host (the data layer's, train_model.h), x uploaded, then the 2-step rollout
 * loss_backward at batch 2, with
 * hand-made data (test_graphcast_ops.c runs the same on the CPU ops path). */
static int gc_tm_step(wx_ctx *ctx, const wx_backend *be, double *loss, float **grad,
                      int64_t *len) {
    wx_yaml *y = NULL;
    wx_train_model *m = NULL;
    wx_train_loss l;
    memset(&l, 0, sizeof l);
    const int64_t b = 2, k = 2, H = 9, W = 16, hw = H * W, ns = 2 * b * 4 * hw;
    static double tmp[2 * 2 * 4 * 9 * 16];
    static float hs[2 * 2 * 4 * 9 * 16], ht[2 * 2 * 4 * 9 * 16], statics[9 * 16];
    double wl[9];
    for (int64_t i = 0; i < hw; i++) statics[i] = (float)((i % 7) / 7.0 - 0.4);
    for (int j = 0; j < H; j++) wl[j] = 0.5 + j / 9.0;
    wx_test_fill_uniform(tmp, ns, 61, -1.0, 1.0);
    wx_test_f64_to_f32(hs, tmp, ns);
    wx_test_fill_uniform(tmp, ns, 62, -1.0, 1.0);
    wx_test_f64_to_f32(ht, tmp, ns);
    wx_time t1[2] = {wx_time_make(2020, 1, 1, 6, 0, 0), wx_time_make(2020, 3, 5, 12, 0, 0)};
    float *x = NULL, *tg = NULL, *hx = NULL;
    int ok = 0;
    if (!WX_CHECK(wx_yaml_load_string(gc_tiny_yaml, "gc tiny", &y) == WX_OK &&
                      wx_train_model_create(y, "", ctx, be, 5, b, k, &m) == WX_OK,
                  "%s: gc train model: %s", be->name, wx_error_message()))
        goto done;
    char names[4][WX_TRAIN_NAME_MAX] = {"t2m", "msl", "z500", "z850"};
    double mean[4] = {0, 0, 0, 0}, sd[4] = {1, 2, 1, 0.5}, dd[4] = {0.5, 0.7, 0.3, 0.2};
    wx_train_data d = {.nstate = 4, .names = names, .mean = mean, .std = sd, .diff_std = dd,
                       .nstatic = 1, .statics = statics, .dt_s = 21600};
    if (!WX_CHECK(m->out_channels == 4 && m->h == H && m->w == W &&
                      wx_train_model_attach(m, &d) == WX_OK,
                  "%s: gc attach: %s", be->name, wx_error_message()))
        goto done;
    wx_train_loss_init(&l, WX_LOSS_LATW_MSE, ctx, be, 4, H, W, wl, NULL);
    l.kind = WX_LOSS_GRAPHCAST;
    const int64_t nx = b * m->in_channels * hw;
    hx = malloc(sizeof(float) * (size_t)nx);
    if (!WX_CHECK(m->ops->make_input(m, hx, hs, t1, b) == WX_OK, "%s: gc make_input: %s",
                  be->name, wx_error_message()))
        goto done;
    x = wx_backend_upload_f32(be, ctx, hx, nx, "x");
    tg = wx_backend_upload_f32(be, ctx, ht, ns, "targets");
    *len = m->params->len;
    *grad = malloc(sizeof(float) * (size_t)*len);
    ok = WX_CHECK(x && tg && m->ops->loss_weights(m, l.wlat, l.wch) == WX_OK &&
                      m->ops->loss_backward(m, &l, x, tg, t1, k, b, loss) == WX_OK &&
                      be->copy_d2h(ctx, *grad, m->params->grad, sizeof(float) * (size_t)*len) ==
                          WX_OK,
                  "%s: gc loss_backward: %s", be->name, wx_error_message());
done:
    be->mem_free(ctx, x), be->mem_free(ctx, tg);
    free(hx);
    wx_train_loss_free(&l);
    wx_train_model_destroy(m);
    wx_yaml_free(y);
    return ok;
}

static void test_gc_train_model(void) {
    wx_ctx *cc = wx_ctx_create(1), *gc = wx_ctx_create(1);
    double lc = 0, lg = 0;
    float *gcpu = NULL, *ggpu = NULL;
    int64_t n = 0;
    if (gc_tm_step(cc, wx_backend_cpu(), &lc, &gcpu, &n) &&
        gc_tm_step(gc, wx_backend_cuda(), &lg, &ggpu, &n)) {
        WX_CHECK(fabs(lg - lc) <= 1e-4 * fabs(lc), "gc 2-step loss GPU %.9g CPU %.9g", lg, lc);
        double gs = max_abs(gcpu, n), worst = 0;
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)ggpu[i] - gcpu[i]));
        WX_CHECK(gs > 0 && worst <= 1e-3 * gs, "gc 2-step grads: worst %.3e of %.3e", worst, gs);
        printf("gc train model 2-step: loss CPU %.9g GPU %.9g; grad worst %.3e of %.3e\n", lc, lg,
               worst, gs);
    }
    free(gcpu), free(ggpu);
    wx_ctx_destroy(cc);
    wx_ctx_destroy(gc);
}

/* GraphCast on CUDA without a GPU: the ops path's first device allocation fails cleanly. */
static void test_gc_no_device(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    wx_gc_config c;
    if (gc_config(&c)) {
        wx_gc *m = wx_gc_create(ctx, wx_backend_cuda(), &c, 1, 1, 1, 0);
        WX_CHECK(m == NULL && strstr(wx_error_message(), "no CUDA device"),
                 "graphcast on cuda without a GPU: '%s'", wx_error_message());
        wx_gc_destroy(m);
    }
    wx_ctx_destroy(ctx);
}

/* No GPU: the model's first device allocation fails with the clean error. */
static void test_no_device(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    wx_fcn_config c = tiny_cfg();
    wx_fcn *m = wx_fcn_create(ctx, wx_backend_cuda(), &c, 1, 1, 1);
    WX_CHECK(m == NULL && strstr(wx_error_message(), "no CUDA device"),
             "fcn on cuda without a GPU: '%s'", wx_error_message());
    wx_fcn_destroy(m);
    wx_ctx_destroy(ctx);
}

int main(void) {
    int count = 0;
    WX_CHECK(wx_cuda_device_count(&count) == WX_OK, "device count: %s", wx_error_message());
    if (count == 0) {
        test_no_device();
        test_gc_no_device();
        test_cpu_halves();
        wx_test_summary();
        printf("no CUDA device visible: model GPU-vs-CPU checks skipped (compiled, not run)\n");
        return wx_test_failed ? 1 : 77;
    }
    test_fcn_step();
    test_train_model();
    test_gc_step();
    test_gc_train_model();
    test_stage_gpu();
    return wx_test_summary();
}
#else
int main(void) {
    printf("built without CUDA: skipped\n");
    return 77;
}
#endif
