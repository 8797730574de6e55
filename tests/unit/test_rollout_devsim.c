/* The forecast rollout's device path without a GPU: a checkpoint rolled out on the device
 * simulator (tests/support/wx_devsim.h: the CPU ops on separate, normally unmapped "device"
 * memory), injected through wx_rollout_opts.backend (a test hook the CLI cannot reach), against
 * the same checkpoint on the plain CPU backend.
 *
 * Same ops, same order: everything must be bitwise identical —
 *  - FourCastNet (tiny, trained 2 steps here), 2 initial times as one batch: the prediction r->y
 *    (the one copy back per step), the host state r->x fed back and the physical output of
 *    wx_rollout_output at leads 1..5;
 *  - a bred 3-member ensemble (wx_forecast_perturb: 2 breeding cycles, each a step then host
 *    edits of the state that must reach the device) and 3 leads after it;
 *  - GraphCast (window 2, make_input on the host then uploaded, next_input on the device; its
 *    device path is the ops path, which the CPU takes with WX_GC_OPS=1), 2 initial times: leads
 *    1..4, and again after wx_rollout_set_state restarts the window;
 *  - FourCastNet+ (extra inputs time, location, static built on the host) with the --precip
 *    diagnostic hooked in (a PrecipNet trained 2 steps on it; the hook reads the host prediction,
 *    the network runs on the backend), 2 initial times: leads 1..4, and tp at each lead (> 0);
 *  - the simulator saw no violation (a device pointer read on the host would have killed the
 *    process with status 86), the model's ops ran through it, and closing the rollouts freed
 *    every device allocation;
 *  - --precision bf16 on a backend other than CUDA and --device bogus are WX_ERR_USAGE.
 * The CLI side (--device cuda without a GPU: one error line, no output file) is
 * tests/cli/forecast_device.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "infer/forecast_ens.h"
#include "infer/forecast_precip.h"
#include "infer/rollout.h"
#include "io/archive.h"
#include "train/trainer.h"
#include "train_toy.h"
#include "train_toy_gc.h"
#include "wx_devsim.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_rollout_devsim_XXXXXX";

/* Trains a stage on the CPU in tmp/name from its train.yaml; the last.ckpt path. */
static int train_stage(const char *name, const char *stage, char *ckpt, size_t cap) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    wx_train_config c;
    if (!WX_CHECK(wx_train_config_load(path, stage, &c) == WX_OK, "%s config: %s", name,
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

static int train_ckpt(const char *name, char *ckpt, size_t cap) {
    return train_stage(name, "pretrain", ckpt, cap);
}

/* data_extra: more lines of the data mapping (indented 2), or "". */
static void write_run(const char *name, const char *model_yaml, const char *archive,
                      const char *data_extra) {
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
}

static wx_rollout *open_on(const char *ckpt, const wx_backend *be, int64_t batch) {
    wx_rollout_opts o = {.threads = 1, .max_batch = batch, .backend = be};
    wx_rollout *r = NULL;
    WX_CHECK(wx_rollout_open_opts(ckpt, &o, &r) == WX_OK, "open on %s: %s", be->name,
             wx_error_message());
    return r;
}

/* Both rollouts' prediction, state and physical output bitwise equal (n = b·Cout·H·W). */
static void same(const wx_rollout *c, const wx_rollout *s, const char *what, int lead) {
    size_t ny = (size_t)(c->b * c->nout * c->h * c->w), nx = (size_t)(c->b * c->nin * c->h * c->w);
    float *oc = malloc(sizeof(float) * ny), *os = malloc(sizeof(float) * ny);
    wx_rollout_output(c, oc);
    wx_rollout_output(s, os);
    int finite = 1;
    for (size_t i = 0; i < ny; i++) finite &= isfinite(oc[i]) != 0;
    WX_CHECK(!memcmp(c->y, s->y, sizeof(float) * ny) && !memcmp(c->x, s->x, sizeof(float) * nx) &&
                 !memcmp(oc, os, sizeof(float) * ny) && finite,
             "%s lead %d: simulator == CPU bitwise (prediction, state, output)", what, lead);
    free(oc), free(os);
}

/* Records idx[k] (k < n) of the archive at dir into a new buffer (n, nchan, P); meta kept open. */
static float *read_records(const char *dir, const int64_t *idx, int n, wx_archive **ar) {
    wx_archive_opts ao = {.threads = 1, .check_crc = 1};
    if (!WX_CHECK(wx_archive_open(dir, &ao, ar) == WX_OK, "archive %s: %s", dir, wx_error_message()))
        return NULL;
    const wx_archive_meta *m = wx_archive_meta_of(*ar);
    float *rec = malloc(sizeof(float) * (size_t)n * (size_t)m->nchan * (size_t)wx_archive_points(m));
    WX_CHECK(wx_archive_read(*ar, idx, n, rec) == WX_OK, "read: %s", wx_error_message());
    return rec;
}

static void check_fourcastnet(const wx_backend *sim) {
    char archive[512], ckpt[4200];
    snprintf(archive, sizeof archive, "%s/fcn_archive", tmp);
    if (!WX_CHECK(toy_archive_write(archive, 64) == 0, "archive: %s", wx_error_message())) return;
    write_run("fcn", toy_model_yaml, archive, "");
    if (!train_ckpt("fcn", ckpt, sizeof ckpt)) return;
    long ops0 = wx_devsim_ops_run();
    wx_rollout *c = open_on(ckpt, wx_backend_cpu(), 3), *s = open_on(ckpt, sim, 3);
    if (!c || !s) {
        wx_rollout_close(c), wx_rollout_close(s);
        return;
    }
    WX_CHECK(s->dev == 1 && s->dx != s->x && s->dy != s->y && c->dev == 0 && c->dx == c->x,
             "the simulator's rollout keeps its state in device memory, the CPU's in host memory");
    wx_archive *ar = NULL;
    int64_t idx[3] = {10, 20, 30};
    float *rec = read_records(archive, idx, 3, &ar);
    if (rec) {
        const wx_archive_meta *m = wx_archive_meta_of(ar);
        int map_in[TOY_NCH], map_out[TOY_NCH];
        WX_CHECK(wx_rollout_match_archive(c, m, map_in, map_out) == WX_OK, "match: %s",
                 wx_error_message());
        wx_rollout *r[2] = {c, s};
        for (int k = 0; k < 2; k++)
            WX_CHECK(wx_rollout_set_state(r[k], rec, m, map_in, NULL, 2) == WX_OK, "set: %s",
                     wx_error_message());
        for (int lead = 1; lead <= 5; lead++) {
            for (int k = 0; k < 2; k++)
                WX_CHECK(wx_rollout_step(r[k]) == WX_OK, "step: %s", wx_error_message());
            same(c, s, "FourCastNet", lead);
        }
        /* bred ensemble: 3 copies of one initial time, 2 breeding cycles */
        float *rec3 = malloc(sizeof(float) * 3 * (size_t)m->nchan * (size_t)wx_archive_points(m));
        size_t R = (size_t)m->nchan * (size_t)wx_archive_points(m);
        for (int b = 0; b < 3; b++) memcpy(rec3 + b * R, rec, sizeof(float) * R);
        for (int k = 0; k < 2; k++) {
            WX_CHECK(wx_rollout_set_state(r[k], rec3, m, map_in, NULL, 3) == WX_OK, "set 3");
            WX_CHECK(wx_forecast_perturb(r[k], WX_PERTURB_BRED, 0.05, 7, 2) == WX_OK, "bred: %s",
                     wx_error_message());
        }
        size_t nx = (size_t)(3 * c->nin * c->h * c->w);
        WX_CHECK(!memcmp(c->x, s->x, sizeof(float) * nx), "bred: the perturbed states are equal");
        WX_CHECK(memcmp(c->x, c->x + nx / 3, sizeof(float) * nx / 3) != 0, "bred: member 1 moved");
        for (int lead = 1; lead <= 3; lead++) {
            for (int k = 0; k < 2; k++)
                WX_CHECK(wx_rollout_step(r[k]) == WX_OK, "step: %s", wx_error_message());
            same(c, s, "FourCastNet bred ensemble", lead);
        }
        free(rec3);
    }
    free(rec);
    if (ar) wx_archive_close(ar);
    wx_rollout_close(c);
    wx_rollout_close(s);
    long ops = wx_devsim_ops_run() - ops0;
    printf("FourCastNet rollouts: %ld simulated op calls\n", ops);
    WX_CHECK(ops > 100, "the FourCastNet rollout ran through the simulator (%ld op calls)", ops);
}

static void check_graphcast(const wx_backend *sim) {
    char archive[512], ckpt[4200];
    snprintf(archive, sizeof archive, "%s/gc_archive", tmp);
    if (!WX_CHECK(gct_archive_write(archive, 64) == 0, "GraphCast archive: %s", wx_error_message()))
        return;
    write_run("gc", gct_model_yaml, archive, "");
    if (!train_ckpt("gc", ckpt, sizeof ckpt)) return;
    long ops0 = wx_devsim_ops_run();
    setenv("WX_GC_OPS", "1", 1); /* the CPU takes the ops path, as a device backend does */
    wx_rollout *c = open_on(ckpt, wx_backend_cpu(), 2), *s = open_on(ckpt, sim, 2);
    unsetenv("WX_GC_OPS");
    if (!c || !s) {
        wx_rollout_close(c), wx_rollout_close(s);
        return;
    }
    WX_CHECK(c->window == 2 && c->builder && s->dxm != s->xm, "GraphCast: window 2, model input "
             "in device memory on the simulator");
    wx_archive *ar = NULL;
    int64_t idx[4] = {9, 19, 10, 20}; /* (window, B): t − 6 h of both, then t of both */
    float *rec = read_records(archive, idx, 4, &ar);
    if (rec) {
        const wx_archive_meta *m = wx_archive_meta_of(ar);
        int map_in[GCT_NSTATE], map_out[GCT_NSTATE];
        WX_CHECK(wx_rollout_match_archive(c, m, map_in, map_out) == WX_OK, "match: %s",
                 wx_error_message());
        wx_time t0[2] = {m->start + 10 * m->step, m->start + 20 * m->step};
        wx_rollout *r[2] = {c, s};
        for (int round = 0; round < 2; round++) { /* the second: a restarted window */
            for (int k = 0; k < 2; k++)
                WX_CHECK(wx_rollout_set_state(r[k], rec, m, map_in, t0, 2) == WX_OK, "set: %s",
                         wx_error_message());
            for (int lead = 1; lead <= 4; lead++) {
                for (int k = 0; k < 2; k++)
                    WX_CHECK(wx_rollout_step(r[k]) == WX_OK, "step: %s", wx_error_message());
                same(c, s, round ? "GraphCast (restarted)" : "GraphCast", lead);
            }
        }
    }
    free(rec);
    if (ar) wx_archive_close(ar);
    wx_rollout_close(c);
    wx_rollout_close(s);
    long ops = wx_devsim_ops_run() - ops0;
    printf("GraphCast rollouts: %ld simulated op calls\n", ops);
    WX_CHECK(ops > 100, "the GraphCast rollout ran through the simulator (%ld op calls)", ops);
}

/* FourCastNet+ (extra inputs time, location, static: made on the host by make_input, uploaded;
 * next_input copies the state on the device and uploads the new extras): 2 initial times, leads
 * 1..4. */
static void check_plus(const wx_backend *sim) {
    static const char *plus_yaml =
        "type: fourcastnet\nimg_size: [16, 32]\npatch_size: 4\nout_channels: 3\nembed_dim: 32\n"
        "depth: 2\nmlp_ratio: 2.0\nnum_blocks: 4\nextra_inputs: [time, location, static]\n";
    char archive[512], ckpt[4200];
    snprintf(archive, sizeof archive, "%s/ext_archive", tmp);
    char pck[4200], path[512];
    if (!WX_CHECK(toy_ext_archive_write(archive, 64, TOY_EXT_STATIC | TOY_EXT_TP) == 0,
                  "archive: %s", wx_error_message()))
        return;
    write_run("plus", plus_yaml, archive, "  channels_in: [z500, t850, u850]\n");
    snprintf(path, sizeof path, "%s/plus/train.yaml", tmp);
    FILE *f = fopen(path, "a"); /* a PrecipNet on the pretrained wind model */
    if (f) fprintf(f, "precip:\n  wind_checkpoint: %s/plus/ck/pretrain/last.ckpt\n  steps: 2\n"
                      "  batch_size: 2\n", tmp);
    if (!WX_CHECK(f && fclose(f) == 0, "append %s", path)) return;
    if (!train_ckpt("plus", ckpt, sizeof ckpt) || !train_stage("plus", "precip", pck, sizeof pck))
        return;
    long ops0 = wx_devsim_ops_run();
    wx_rollout *c = open_on(ckpt, wx_backend_cpu(), 2), *s = open_on(ckpt, sim, 2);
    if (!c || !s) {
        wx_rollout_close(c), wx_rollout_close(s);
        return;
    }
    WX_CHECK(c->builder && s->dxm != s->xm, "FourCastNet+: the model builds its input, in device "
             "memory on the simulator");
    /* --precip: the diagnostic's hook reads the host prediction; its network runs on the backend */
    wx_forecast_precip pc[2];
    memset(pc, 0, sizeof pc);
    int precip = WX_CHECK(wx_forecast_precip_open(&pc[0], pck, c) == WX_OK &&
                              wx_forecast_precip_open(&pc[1], pck, s) == WX_OK,
                          "precip diagnostic on both: %s", wx_error_message());
    wx_archive *ar = NULL;
    int64_t idx[2] = {10, 20};
    float *rec = read_records(archive, idx, 2, &ar);
    if (rec) {
        const wx_archive_meta *m = wx_archive_meta_of(ar);
        int map_in[TOY_NCH], map_out[TOY_NCH];
        WX_CHECK(wx_rollout_match_archive(c, m, map_in, map_out) == WX_OK, "match: %s",
                 wx_error_message());
        wx_time t0[2] = {m->start + 10 * m->step, m->start + 20 * m->step};
        wx_rollout *r[2] = {c, s};
        for (int k = 0; k < 2; k++)
            WX_CHECK(wx_rollout_set_state(r[k], rec, m, map_in, t0, 2) == WX_OK, "set: %s",
                     wx_error_message());
        for (int lead = 1; lead <= 4; lead++) {
            for (int k = 0; k < 2; k++)
                WX_CHECK(wx_rollout_step(r[k]) == WX_OK, "step: %s", wx_error_message());
            same(c, s, "FourCastNet+", lead);
            size_t nt = (size_t)(2 * c->h * c->w);
            double tmax = 0;
            for (size_t i = 0; precip && i < nt; i++) tmax = fmax(tmax, pc[0].tp[i]);
            WX_CHECK(precip && !memcmp(pc[0].tp, pc[1].tp, sizeof(float) * nt) && tmax > 0,
                     "--precip lead %d: tp on the simulator bitwise equal to the CPU's (max %g)",
                     lead, tmax);
        }
    }
    free(rec);
    if (ar) wx_archive_close(ar);
    wx_forecast_precip_close(&pc[0]);
    wx_forecast_precip_close(&pc[1]);
    wx_rollout_close(c);
    wx_rollout_close(s);
    long ops = wx_devsim_ops_run() - ops0;
    printf("FourCastNet+ rollouts: %ld simulated op calls\n", ops);
    WX_CHECK(ops > 50, "the FourCastNet+ rollout ran through the simulator (%ld op calls)", ops);
}

static void check_refusals(const wx_backend *sim) {
    char ckpt[4200];
    snprintf(ckpt, sizeof ckpt, "%s/fcn/ck/pretrain/last.ckpt", tmp);
    wx_rollout *r = NULL;
    wx_rollout_opts o = {.threads = 1, .max_batch = 1, .backend = sim, .bf16 = 1};
    wx_status st = wx_rollout_open_opts(ckpt, &o, &r);
    WX_CHECK(st == WX_ERR_USAGE && !r && strstr(wx_error_message(), "bf16") &&
                 strstr(wx_error_message(), "devsim"),
             "bf16 on the simulator: usage error naming the backend (%d: %s)", (int)st,
             wx_error_message());
    wx_rollout_opts b = {.threads = 1, .max_batch = 1, .device = "bogus"};
    st = wx_rollout_open_opts(ckpt, &b, &r);
    WX_CHECK(st == WX_ERR_USAGE && !r && strstr(wx_error_message(), "bogus"),
             "device bogus: usage error naming it (%d: %s)", (int)st, wx_error_message());
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    const wx_backend *sim = wx_devsim_backend();
    WX_CHECK(sim->on_device == 1, "simulator table");
    check_fourcastnet(sim);
    check_graphcast(sim);
    check_plus(sim);
    check_refusals(sim);
    WX_CHECK(wx_devsim_check() == 0 && wx_devsim_violations() == 0,
             "no simulator violation: %s", wx_devsim_first_violation());
    WX_CHECK(wx_devsim_protecting(), "host access to device memory faults (every op wrapped)");
    size_t bytes = 0, live = wx_devsim_live(&bytes);
    WX_CHECK(live == 0, "every device allocation freed (%zu live, %zu bytes)", live, bytes);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return wx_test_summary();
}
