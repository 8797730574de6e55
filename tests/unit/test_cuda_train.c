/* wxcast train on the GPU (device: cuda): the tiny FourCastNet trained through wx_train_run on the
 * toy archive (train_toy.h) — batches staged through pinned memory, parameters, gradients and
 * AdamW moments in device memory, clipping and validation on the device — against the same run
 * on the CPU backend.
 *
 *  - fp32: the first step's loss and gradient norm (before any update) within 1e-5 relative of
 *    the CPU's (the loss is a mean over 6144 values, whose per-element GEMM rounding differences
 *    average out; issue 8's bound); the later steps' losses within 1e-3 and the final parameters
 *    within 1e-3 relative L2 and 2·lr per step in any element: AdamW moves a parameter by ~lr
 *    whatever the gradient's size, so a gradient within rounding of 0 may step the other way
 *    (test_cuda_models.c has the per-op analysis);
 *  - bf16 (precision: bf16): the first step's loss within 1e-2 relative of the fp32 CPU's;
 *  - two identical GPU runs write byte-identical checkpoints and metrics; 3 steps + --resume give
 *    the same bytes as 6 steps in one run;
 *  - the GPU's checkpoint resumes on the CPU (same file format);
 *  - GraphCast (tiny, ops path on both: WX_GC_OPS=1 for the CPU): 3 pretrain steps, the first
 *    step's loss and gradient norm within 1e-5 relative, two GPU runs byte-identical.
 *  - FourCastNet+ (extra_inputs [time, location, static], extras built on the host and uploaded)
 *    on the toy archive with tp and statics: 3 pretrain steps, then the precip stage (PrecipNet
 *    with its periodic conv3x3 head, the frozen wind model on the GPU) on the CPU run's wind
 *    checkpoint, 3 steps: each stage's first-step loss and gradient norm within 1e-5 relative.
 * These bounds are from the op tests' analysis; the test passed on an H200 (2026-11-30).
 *
 * Without a GPU: a CUDA build checks that device: cuda fails with one clean "no CUDA device"
 * error before anything is written, then exits 77 (skipped); a build without CUDA exits 77. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "cli_check.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "train_toy.h"
#include "train_toy_gc.h"
#include "wx_cuda_basic.h"

#define STEPS 6
#define LR 2.0e-3

static char tmp[] = "/tmp/wx_cuda_train_XXXXXX";
static char archive[256];

static void write_run_dir(const char *name, const char *device) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, toy_model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s\n  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n"
             "seed: 3\nthreads: 1\ncheckpoint_dir: ckpt\n%s"
             "validation: {leads: [1, 2], max_samples: 6}\n"
             "pretrain:\n  steps: %d\n  batch_size: 4\n"
             "  optimizer: {lr: %g, warmup: 2, lr_min: 1.0e-5, grad_clip: 1.0, weight_decay: 0.01}\n",
             archive, device, STEPS, LR);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

static wx_status train(const char *dir, int64_t max_steps, const char *resume) {
    char path[512], metrics[512], res[512];
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, dir);
    snprintf(metrics, sizeof metrics, "%s/%s/m.jsonl", tmp, dir);
    if (resume) snprintf(res, sizeof res, "%s/%s/ckpt/pretrain/%s", tmp, dir, resume);
    wx_train_config c;
    wx_status s = wx_train_config_load(path, "pretrain", &c);
    if (s != WX_OK) return s;
    wx_train_opts o;
    memset(&o, 0, sizeof o);
    o.metrics = metrics, o.max_steps = max_steps, o.resume = resume ? res : NULL;
    wx_train_summary sum;
    s = wx_train_run(&c, &o, &sum);
    wx_train_config_free(&c);
    return s;
}

/* loss and grad_norm of each train line of dir's metrics; returns the count. */
static int read_metrics(const char *dir, double *loss, double *gnorm) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/m.jsonl", tmp, dir);
    char *s = slurp(path);
    int n = 0;
    for (char *line = strtok(s, "\n"); line && n < STEPS; line = strtok(NULL, "\n"))
        if (strstr(line, "\"phase\":\"train\"")) {
            loss[n] = num_after(line, "\"loss\":");
            gnorm[n++] = num_after(line, "\"grad_norm\":");
        }
    free(s);
    return n;
}

/* The parameters of dir's last.ckpt (NULL on failure). */
static float *read_params(const char *dir, int64_t *n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/ckpt/pretrain/last.ckpt", tmp, dir);
    wx_checkpoint ck;
    if (wx_checkpoint_read(path, &ck) != WX_OK) return NULL;
    int64_t total = 0;
    for (int i = 0; i < ck.ntensors; i++) total += ck.t[i].kind == WX_CKPT_PARAM ? ck.t[i].size : 0;
    float *p = malloc(sizeof(float) * (size_t)(total + 1)), *q = p;
    for (int i = 0; i < ck.ntensors; i++)
        if (ck.t[i].kind == WX_CKPT_PARAM) {
            memcpy(q, ck.t[i].data, sizeof(float) * (size_t)ck.t[i].size);
            q += ck.t[i].size;
        }
    wx_checkpoint_free(&ck);
    *n = total;
    return p;
}

static void same_files(const char *a, const char *b, const char *what) {
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/%s/ckpt/pretrain/last.ckpt", tmp, a);
    snprintf(pb, sizeof pb, "%s/%s/ckpt/pretrain/last.ckpt", tmp, b);
    WX_CHECK(files_equal(pa, pb), "%s: last.ckpt byte-identical", what);
}

static void test_training(void) {
    write_run_dir("cpu", "");
    write_run_dir("gpu", "device: cuda\n");
    write_run_dir("gpu2", "device: cuda\n");
    write_run_dir("gpu_resume", "device: cuda\n");
    write_run_dir("bf16", "device: cuda\nprecision: bf16\n");
    if (!WX_CHECK(train("cpu", 0, NULL) == WX_OK, "cpu: %s", wx_error_message())) return;
    if (!WX_CHECK(train("gpu", 0, NULL) == WX_OK, "gpu: %s", wx_error_message())) return;
    double lc[STEPS], gc[STEPS], lg[STEPS], gg[STEPS];
    int nc = read_metrics("cpu", lc, gc), ng = read_metrics("gpu", lg, gg);
    if (WX_CHECK(nc == STEPS && ng == STEPS, "train lines: cpu %d gpu %d", nc, ng)) {
        WX_CHECK(fabs(lg[0] - lc[0]) <= 1e-5 * fabs(lc[0]), "step 1 loss GPU %.9g CPU %.9g", lg[0],
                 lc[0]);
        WX_CHECK(fabs(gg[0] - gc[0]) <= 1e-5 * fabs(gc[0]), "step 1 grad norm GPU %.9g CPU %.9g",
                 gg[0], gc[0]);
        double worst = 0;
        for (int i = 1; i < STEPS; i++) worst = fmax(worst, fabs(lg[i] - lc[i]) / fabs(lc[i]));
        WX_CHECK(worst <= 1e-3, "steps 2..%d: losses within %.3e relative", STEPS, worst);
        printf("cuda train: step 1 loss CPU %.9g GPU %.9g; later steps worst rel %.3e\n", lc[0],
               lg[0], worst);
    }
    int64_t n = 0, n2 = 0;
    float *pc = read_params("cpu", &n), *pg = read_params("gpu", &n2);
    if (WX_CHECK(pc && pg && n == n2 && n > 0, "parameters of both checkpoints")) {
        double num = 0, den = 0, worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double d = (double)pg[i] - pc[i];
            num += d * d, den += (double)pc[i] * pc[i], worst = fmax(worst, fabs(d));
        }
        WX_CHECK(sqrt(num / den) <= 1e-3 && worst <= 2 * LR * STEPS,
                 "final parameters: rel L2 %.3e, worst %.3e", sqrt(num / den), worst);
    }
    free(pc), free(pg);
    /* determinism and resume on the GPU */
    WX_CHECK(train("gpu2", 0, NULL) == WX_OK, "gpu2: %s", wx_error_message());
    same_files("gpu", "gpu2", "two identical GPU runs");
    double l2[STEPS], g2[STEPS];
    if (WX_CHECK(read_metrics("gpu2", l2, g2) == STEPS, "gpu2 metrics")) {
        int same = 1;
        for (int i = 0; i < STEPS; i++) same &= l2[i] == lg[i] && g2[i] == gg[i];
        WX_CHECK(same, "two identical GPU runs: the same losses and gradient norms");
    }
    /* 3 steps, a checkpoint, 3 more from --resume; the half-way checkpoint also goes to the CPU */
    write_run_dir("cross", "");
    WX_CHECK(train("gpu_resume", STEPS / 2, NULL) == WX_OK, "gpu half: %s", wx_error_message());
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/cross/ckpt/pretrain && cp %s/gpu_resume/ckpt/pretrain/"
             "last.ckpt %s/cross/ckpt/pretrain/half.ckpt", tmp, tmp, tmp);
    WX_CHECK(system(cmd) == 0, "copy the GPU's half-way checkpoint");
    WX_CHECK(train("gpu_resume", 0, "last.ckpt") == WX_OK, "gpu resume: %s", wx_error_message());
    same_files("gpu", "gpu_resume", "GPU resume");
    WX_CHECK(train("cross", 0, "half.ckpt") == WX_OK, "the GPU's checkpoint resumes on the CPU: %s",
             wx_error_message());
    double lx[STEPS], gx[STEPS];
    int nx = read_metrics("cross", lx, gx);
    WX_CHECK(nx == STEPS - STEPS / 2 && fabs(lx[nx - 1] - lc[STEPS - 1]) <= 1e-3 * fabs(lc[STEPS - 1]),
             "CPU steps after the GPU's checkpoint: %d, last loss %.9g (CPU run %.9g)", nx,
             nx ? lx[nx - 1] : NAN, lc[STEPS - 1]);
    /* bf16 GEMM inputs, fp32 accumulation and master weights */
    if (WX_CHECK(train("bf16", 1, NULL) == WX_OK, "bf16: %s", wx_error_message())) {
        double lb[STEPS], gb[STEPS];
        if (WX_CHECK(read_metrics("bf16", lb, gb) == 1, "bf16: one train line"))
            WX_CHECK(fabs(lb[0] - lc[0]) <= 1e-2 * fabs(lc[0]), "bf16 step 1 loss %.9g vs fp32 CPU "
                     "%.9g", lb[0], lc[0]);
    }
}

static void write_gc_dir(const char *name, const char *device) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(gct_write_text(path, gct_model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s/gc_archive\n  train_years: [2019, 2019]\n"
             "  valid_years: [2020, 2020]\n"
             "seed: 5\nthreads: 1\ncheckpoint_dir: ckpt\n%s"
             "validation: {leads: [1], max_samples: 4}\n"
             "pretrain:\n  steps: 3\n  batch_size: 2\n"
             "  optimizer: {lr: 3.0e-3, weight_decay: 0.1, warmup: 1, lr_min: 1.0e-4}\n",
             tmp, device);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(gct_write_text(path, text) == 0, "write %s", path);
}

static void test_graphcast(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/gc_archive", tmp);
    if (!WX_CHECK(gct_archive_write(dir, 64) == 0, "GraphCast archive")) return;
    write_gc_dir("gc_cpu", "");
    write_gc_dir("gc_gpu", "device: cuda\n");
    write_gc_dir("gc_gpu2", "device: cuda\n");
    setenv("WX_GC_OPS", "1", 1); /* the CPU on the path the GPU takes */
    int ok = WX_CHECK(train("gc_cpu", 0, NULL) == WX_OK, "gc cpu: %s", wx_error_message());
    unsetenv("WX_GC_OPS");
    ok = ok && WX_CHECK(train("gc_gpu", 0, NULL) == WX_OK, "gc gpu: %s", wx_error_message());
    ok = ok && WX_CHECK(train("gc_gpu2", 0, NULL) == WX_OK, "gc gpu2: %s", wx_error_message());
    if (!ok) return;
    double lc[STEPS], gc[STEPS], lg[STEPS], gg[STEPS];
    if (WX_CHECK(read_metrics("gc_cpu", lc, gc) == 3 && read_metrics("gc_gpu", lg, gg) == 3,
                 "GraphCast train lines")) {
        WX_CHECK(fabs(lg[0] - lc[0]) <= 1e-5 * fabs(lc[0]) && fabs(gg[0] - gc[0]) <= 1e-5 * gc[0],
                 "GraphCast step 1: loss GPU %.9g CPU %.9g, grad norm GPU %.9g CPU %.9g", lg[0],
                 lc[0], gg[0], gc[0]);
        printf("cuda train GraphCast: step 1 loss CPU %.9g GPU %.9g\n", lc[0], lg[0]);
    }
    same_files("gc_gpu", "gc_gpu2", "GraphCast: two identical GPU runs");
}

static void write_plus_dir(const char *name, const char *device) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, "type: fourcastnet\nimg_size: [16, 32]\npatch_size: 4\n"
                            "out_channels: 3\nembed_dim: 32\ndepth: 2\nmlp_ratio: 2.0\n"
                            "num_blocks: 4\nextra_inputs: [time, location, static]\n") == 0,
             "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s/ext_archive\n  channels_in: [z500, t850, u850]\n"
             "  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n"
             "seed: 7\nthreads: 1\ncheckpoint_dir: ckpt\n%s"
             "validation: {leads: [1, 2], max_samples: 4}\n"
             "pretrain:\n  steps: 3\n  batch_size: 2\n  optimizer: {lr: 2.0e-3, warmup: 1}\n"
             "precip:\n  wind_checkpoint: %s/plus_cpu/ckpt/pretrain/last.ckpt\n  steps: 3\n"
             "  batch_size: 2\n  optimizer: {lr: 1.0e-3, warmup: 1}\n", tmp, device, tmp);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

/* wxcast train DIR --stage STAGE, metrics in DIR/STAGE.jsonl; the first train line's loss and
 * gradient norm into l, g. */
static wx_status train_stage(const char *dir, const char *stage, double *l, double *g) {
    char path[512], metrics[512];
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, dir);
    snprintf(metrics, sizeof metrics, "%s/%s/%s.jsonl", tmp, dir, stage);
    wx_train_config c;
    WX_TRY(wx_train_config_load(path, stage, &c));
    wx_train_opts o;
    memset(&o, 0, sizeof o);
    o.metrics = metrics;
    wx_train_summary sum;
    wx_status s = wx_train_run(&c, &o, &sum);
    wx_train_config_free(&c);
    if (s != WX_OK) return s;
    char *text = slurp(metrics), *line = strstr(text, "\"phase\":\"train\"");
    *l = line ? num_after(line, "\"loss\":") : NAN;
    *g = line ? num_after(line, "\"grad_norm\":") : NAN;
    free(text);
    return WX_OK;
}

static void test_plus_precip(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ext_archive", tmp);
    if (!WX_CHECK(toy_ext_archive_write(dir, 64, TOY_EXT_STATIC | TOY_EXT_TP) == 0,
                  "archive with tp and statics"))
        return;
    write_plus_dir("plus_cpu", "");
    write_plus_dir("plus_gpu", "device: cuda\n");
    const char *stages[2] = {"pretrain", "precip"};
    for (int k = 0; k < 2; k++) {
        double lc = NAN, gc = NAN, lg = NAN, gg = NAN;
        if (!WX_CHECK(train_stage("plus_cpu", stages[k], &lc, &gc) == WX_OK, "FourCastNet+ cpu %s: %s",
                      stages[k], wx_error_message()) ||
            !WX_CHECK(train_stage("plus_gpu", stages[k], &lg, &gg) == WX_OK, "FourCastNet+ gpu %s: %s",
                      stages[k], wx_error_message()))
            return;
        WX_CHECK(isfinite(lc) && fabs(lg - lc) <= 1e-5 * fabs(lc) && fabs(gg - gc) <= 1e-5 * fabs(gc),
                 "FourCastNet+ %s step 1: loss GPU %.9g CPU %.9g, grad norm GPU %.9g CPU %.9g",
                 stages[k], lg, lc, gg, gc);
        printf("cuda train FourCastNet+ %s: step 1 loss CPU %.9g GPU %.9g\n", stages[k], lc, lg);
    }
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    WX_CHECK(toy_archive_write(archive, 64) == 0, "write archive: %s", wx_error_message());
    int count = 0;
    int gpu = wx_cuda_device_count(&count) == WX_OK && count > 0;
    if (!gpu) { /* the host side: a clean error, nothing written */
        write_run_dir("nogpu", "device: cuda\n");
        wx_status s = train("nogpu", 0, NULL);
        WX_CHECK(s == WX_ERR_RUN && strstr(wx_error_message(), "no CUDA device"),
                 "device cuda without a GPU: run error naming it (%d: %s)", (int)s,
                 wx_error_message());
        char ck[512];
        snprintf(ck, sizeof ck, "%s/nogpu/ckpt", tmp);
        WX_CHECK(access(ck, F_OK) != 0, "nothing written");
    } else {
        test_training();
        test_graphcast();
        test_plus_precip();
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    int rc = wx_test_summary();
    if (!gpu && rc == 0) {
        printf("no CUDA device: GPU training checks skipped\n");
        return 77;
    }
    return rc;
}
#else
int main(void) {
    printf("built without CUDA: skipped\n");
    int rc = wx_test_summary();
    return rc ? rc : 77;
}
#endif
