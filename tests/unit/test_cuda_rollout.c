/* wxcast forecast's rollout on the GPU (--device cuda): checkpoints of the tiny FourCastNet
 * (train_toy.h) and the tiny GraphCast (train_toy_gc.h), trained 2 steps on the CPU, rolled out
 * on the CUDA backend (model, states and model inputs in device memory; one copy back per lead)
 * against the same rollout on the CPU backend.
 *
 *  - fp32: FourCastNet (2 initial times), GraphCast (2 initial times, window 2, ops path on
 *    both: WX_GC_OPS=1 for the CPU) and FourCastNet+ (extra inputs time, location, static made on
 *    the host) at leads 1..4: the normalised prediction within 1e-5 of the
 *    largest |CPU value| of the lead (issue 8's fp32 bound; the GEMMs are fp32 without TF32);
 *  - two GPU rollouts give bitwise-identical predictions (deterministic kernels, no atomics);
 *  - bf16 (--precision bf16): FourCastNet lead 1 within 1e-2 of the fp32 CPU's.
 * These bounds are from the op tests' analysis; the test passed on an H200 (2026-11-30).
 *
 * Without a GPU: a CUDA build checks that the rollout fails with one clean "no CUDA device"
 * error, then exits 77 (skipped); a build without CUDA exits 77. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "core/wx_fs.h"
#include "infer/rollout.h"
#include "io/archive.h"
#include "train/trainer.h"
#include "train_toy.h"
#include "train_toy_gc.h"
#include "wx_cuda_basic.h"

#define LEADS 4

static char tmp[] = "/tmp/wx_cuda_rollout_XXXXXX";

/* tmp/name: the model and a 2-step pretrain config on archive (data_extra: more lines of the
 * data mapping); trains on the CPU; ckpt path. */
static int train_ckpt(const char *name, const char *model_yaml, const char *archive,
                      const char *data_extra, char *ckpt, size_t cap) {
    char path[512], text[2048];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s\n  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n%s"
             "seed: 5\nthreads: 1\ncheckpoint_dir: ck\nvalidation: {leads: [1], max_samples: 2}\n"
             "pretrain:\n  steps: 2\n  batch_size: 2\n",
             archive, data_extra);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
    wx_train_config c;
    if (!WX_CHECK(wx_train_config_load(path, "pretrain", &c) == WX_OK, "%s config: %s", name,
                  wx_error_message()))
        return 0;
    wx_train_opts o;
    memset(&o, 0, sizeof o);
    wx_train_summary sum;
    int ok = WX_CHECK(wx_train_run(&c, &o, &sum) == WX_OK, "%s train: %s", name, wx_error_message());
    wx_train_config_free(&c);
    if (ok) snprintf(ckpt, cap, "%s", sum.last_path);
    return ok;
}

/* LEADS predictions (LEADS, b, Cout, H, W) of the rollout of ckpt on device from archive records
 * idx (window, b) at times t0 (NULL: FourCastNet); NULL on failure. */
static float *roll(const char *ckpt, const char *device, int bf16, const char *archive,
                   const int64_t *idx, int64_t b, const wx_time *t0, size_t *n) {
    wx_rollout_opts o = {.threads = 1, .max_batch = b, .device = device, .bf16 = bf16};
    wx_rollout *r = NULL;
    if (!WX_CHECK(wx_rollout_open_opts(ckpt, &o, &r) == WX_OK, "open on %s: %s", device,
                  wx_error_message()))
        return NULL;
    wx_archive *ar = NULL;
    wx_archive_opts ao = {.threads = 1, .check_crc = 1};
    float *out = NULL, *rec = NULL;
    if (!WX_CHECK(wx_archive_open(archive, &ao, &ar) == WX_OK, "archive: %s", wx_error_message()))
        goto done;
    const wx_archive_meta *m = wx_archive_meta_of(ar);
    rec = malloc(sizeof(float) * (size_t)(r->window * b) * (size_t)m->nchan *
                 (size_t)wx_archive_points(m));
    int map_in[8], map_out[8];
    if (!WX_CHECK(r->nin <= 8 && wx_rollout_match_archive(r, m, map_in, map_out) == WX_OK &&
                      wx_archive_read(ar, idx, r->window * b, rec) == WX_OK &&
                      wx_rollout_set_state(r, rec, m, map_in, t0, b) == WX_OK,
                  "%s: initial state: %s", device, wx_error_message()))
        goto done;
    *n = (size_t)(b * r->nout * r->h * r->w);
    out = malloc(sizeof(float) * *n * LEADS);
    for (int k = 0; k < LEADS; k++) {
        if (!WX_CHECK(wx_rollout_step(r) == WX_OK, "%s step %d: %s", device, k + 1,
                      wx_error_message())) {
            free(out);
            out = NULL;
            break;
        }
        memcpy(out + (size_t)k * *n, r->y, sizeof(float) * *n);
    }
done:
    free(rec);
    if (ar) wx_archive_close(ar);
    wx_rollout_close(r);
    return out;
}

static void compare(const char *what, const char *ckpt, const char *archive, const int64_t *idx,
                    const wx_time *t0, int gc_ops) {
    size_t n = 0, n2 = 0, n3 = 0;
    if (gc_ops) setenv("WX_GC_OPS", "1", 1);
    float *c = roll(ckpt, "cpu", 0, archive, idx, 2, t0, &n);
    unsetenv("WX_GC_OPS");
    float *g = roll(ckpt, "cuda", 0, archive, idx, 2, t0, &n2);
    float *g2 = roll(ckpt, "cuda", 0, archive, idx, 2, t0, &n3);
    if (c && g && g2 && WX_CHECK(n == n2 && n == n3, "%s: sizes", what)) {
        for (int k = 0; k < LEADS; k++) {
            double e = wx_test_rel_diff_f32(g + (size_t)k * n, c + (size_t)k * n, (int64_t)(n));
            printf("%s lead %d: GPU vs CPU %.3e relative\n", what, k + 1, e);
            WX_CHECK(e <= 1e-5, "%s lead %d: GPU within 1e-5 of the CPU (%.3e)", what, k + 1, e);
        }
        WX_CHECK(!memcmp(g, g2, sizeof(float) * n * LEADS), "%s: two GPU rollouts bitwise equal", what);
    }
    if (c && !t0) { /* FourCastNet: bf16 GEMM inputs */
        float *bf = roll(ckpt, "cuda", 1, archive, idx, 2, t0, &n2);
        if (bf) {
            double e = wx_test_rel_diff_f32(bf, c, (int64_t)(n));
            printf("%s lead 1 bf16: %.3e relative\n", what, e);
            WX_CHECK(e <= 1e-2 && e > 0, "%s bf16 lead 1 within 1e-2 of the fp32 CPU (%.3e)", what, e);
        }
        free(bf);
    }
    free(c), free(g), free(g2);
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    char fa[512], ga[512], fck[4200], gck[4200];
    snprintf(fa, sizeof fa, "%s/fcn_archive", tmp);
    snprintf(ga, sizeof ga, "%s/gc_archive", tmp);
    int count = 0;
    int gpu = wx_cuda_device_count(&count) == WX_OK && count > 0;
    if (!gpu) { /* the host side: a clean error before the checkpoint is read */
        wx_rollout_opts o = {.threads = 1, .max_batch = 1, .device = "cuda"};
        wx_rollout *r = NULL;
        wx_status s = wx_rollout_open_opts("/nonexistent.ckpt", &o, &r);
        WX_CHECK(s == WX_ERR_RUN && !r && strstr(wx_error_message(), "no CUDA device"),
                 "--device cuda without a GPU: run error naming it (%d: %s)", (int)s,
                 wx_error_message());
    } else {
        WX_CHECK(toy_archive_write(fa, 64) == 0, "archive: %s", wx_error_message());
        WX_CHECK(gct_archive_write(ga, 64) == 0, "GraphCast archive: %s", wx_error_message());
        if (train_ckpt("fcn", toy_model_yaml, fa, "", fck, sizeof fck)) {
            int64_t idx[2] = {10, 20};
            compare("FourCastNet", fck, fa, idx, NULL, 0);
        }
        if (train_ckpt("gc", gct_model_yaml, ga, "", gck, sizeof gck)) {
            wx_archive *ar = NULL;
            wx_archive_opts ao = {.threads = 1, .check_crc = 1};
            if (WX_CHECK(wx_archive_open(ga, &ao, &ar) == WX_OK, "archive: %s", wx_error_message())) {
                const wx_archive_meta *m = wx_archive_meta_of(ar);
                wx_time t0[2] = {m->start + 10 * m->step, m->start + 20 * m->step};
                int64_t idx[4] = {9, 19, 10, 20};
                compare("GraphCast", gck, ga, idx, t0, 1);
                wx_archive_close(ar);
            }
        }
        static const char *plus_yaml =
            "type: fourcastnet\nimg_size: [16, 32]\npatch_size: 4\nout_channels: 3\n"
            "embed_dim: 32\ndepth: 2\nmlp_ratio: 2.0\nnum_blocks: 4\n"
            "extra_inputs: [time, location, static]\n";
        char pa[512], pck[4200];
        snprintf(pa, sizeof pa, "%s/ext_archive", tmp);
        WX_CHECK(toy_ext_archive_write(pa, 64, TOY_EXT_STATIC) == 0, "archive: %s", wx_error_message());
        if (train_ckpt("plus", plus_yaml, pa, "  channels_in: [z500, t850, u850]\n", pck, sizeof pck)) {
            wx_time t0[2] = {wx_time_make(2019, 12, 20, 0, 0, 0) + 10 * 21600,
                             wx_time_make(2019, 12, 20, 0, 0, 0) + 20 * 21600};
            int64_t idx[2] = {10, 20};
            compare("FourCastNet+", pck, pa, idx, t0, 0);
        }
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!getenv("WX_KEEP") && system(cmd) != 0) printf("could not remove %s\n", tmp);
    int rc = wx_test_summary();
    if (!gpu && rc == 0) {
        printf("no CUDA device: GPU rollout checks skipped\n");
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
