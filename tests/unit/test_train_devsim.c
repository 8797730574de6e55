/* wxcast train's device path without a GPU: the trainer runs the tiny FourCastNet on the device
 * simulator (tests/support/wx_devsim.h: the CPU ops on separate, normally unmapped "device"
 * memory, pointer registration, guard regions, deferred async uploads), injected through the
 * wx_train_opts.backend test hook, against the plain CPU backend.
 *
 * Same ops, same order: everything must be bitwise identical —
 *  - pretrain (6 steps, clipping active, a checkpoint every 2 steps, validation at leads 1 and 2)
 *    and finetune (2-step rollout, lat_weighted_mse with channel weights, from pretrain's best):
 *    last.ckpt and best.ckpt byte-identical, metrics (loss, lr, grad_norm, validation RMSE)
 *    identical;
 *  - resume across backends: 3 steps on the CPU + --resume on the simulator, and 3 on the
 *    simulator + --resume on the CPU, both byte-identical to the uninterrupted CPU run (a
 *    checkpoint written after device training loads on the CPU and vice versa);
 *  - the simulator saw no violation (no host pointer passed to an op, no device pointer
 *    dereferenced on the host — that would have killed the process —, guards intact, no async
 *    upload raced), the model's ops ran through it, and the trainer freed all device memory;
 *    pretrain's 6 batches went up in 12 async copies, the 8 after the first pair overlapping
 *    the step queued before them (they wait only for the release of their slot);
 *  - GraphCast (its ops path, chosen on device backends; on the CPU with WX_GC_OPS=1): pretrain
 *    (3 steps, clipping active) and finetune (rollouts of 1, 2, 3 steps) on the simulator and on
 *    the CPU give byte-identical checkpoints and metrics, with no violation;
 *  - FourCastNet+ (extra_inputs [time, location, static]: extras built on the host, uploaded by
 *    next_input) on the toy archive with tp and static lsm/zs: pretrain (3 steps) and a 2-step
 *    finetune on the simulator byte-identical to the CPU (checkpoints and metrics); then the
 *    precip stage (PrecipNet: backbone, periodic conv3x3, ReLU; the frozen FourCastNet+ wind model
 *    in device memory) on the CPU run's wind checkpoint, 3 steps, byte-identical too; the trained
 *    PrecipNet as a forecast diagnostic (wx_precip_diag, host y and tp) gives the same tp bits on
 *    both; no violation, no device memory left;
 *  - refusals: precision bf16 on a backend other than CUDA exits 2 (config: device cpu; trainer:
 *    injected simulator);
 *  - the simulator catches what it is for: a host pointer passed to an op fails it, and a host
 *    read of device memory ends the (forked) process with status 86. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_check.h"
#include "train/checkpoint.h"
#include "train/train_model.h"
#include "train/trainer.h"
#include "train_toy.h"
#include "train_toy_gc.h"
#include "wx_devsim.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_train_devsim_XXXXXX";
static char archive[256];

static void write_run_dir(const char *name, const char *extra) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, toy_model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s\n  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n"
             "seed: 5\nthreads: 1\ncheckpoint_dir: ckpt\n"
             "validation: {leads: [1, 2], max_samples: 6}\n"
             "pretrain:\n  steps: 6\n  batch_size: 4\n  checkpoint_every: 2\n"
             "  optimizer: {lr: 2.0e-3, warmup: 2, lr_min: 1.0e-5, grad_clip: 0.05, "
             "weight_decay: 0.01}\n"
             "finetune:\n  steps: 4\n  batch_size: 2\n  init_from: ckpt/pretrain/best.ckpt\n"
             "  optimizer: {lr: 1.0e-4}\n"
             "  loss: {type: lat_weighted_mse, channel_weights: [1.0, 0.5, 2.0]}\n%s",
             archive, extra);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

/* wxcast train DIR/train.yaml --stage STAGE [--max-steps] [--resume] on be (NULL: the config's). */
static wx_status train(const char *dir, const char *stage, const wx_backend *be, int64_t max_steps,
                       const char *resume) {
    char path[512], metrics[512], res[512];
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, dir);
    snprintf(metrics, sizeof metrics, "%s/%s/%s.jsonl", tmp, dir, stage);
    if (resume) snprintf(res, sizeof res, "%s/%s/ckpt/%s/%s", tmp, dir, stage, resume);
    wx_train_config c;
    wx_status s = wx_train_config_load(path, stage, &c);
    if (s != WX_OK) return s;
    wx_train_opts o;
    memset(&o, 0, sizeof o);
    o.metrics = metrics, o.max_steps = max_steps, o.backend = be;
    o.resume = resume ? res : NULL;
    wx_train_summary sum;
    s = wx_train_run(&c, &o, &sum);
    wx_train_config_free(&c);
    return s;
}

/* Metrics text without the timing fields. */
static char *metrics_untimed(const char *dir, const char *stage) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s.jsonl", tmp, dir, stage);
    return metrics_untimed_text(path);
}

/* The smallest gradient norm of dir's train lines (clipping is active when it exceeds grad_clip). */
static double min_grad_norm(const char *dir, const char *stage) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s.jsonl", tmp, dir, stage);
    char *s = slurp(path);
    double m = INFINITY;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, "\"phase\":\"train\"")) m = fmin(m, num_after(line, "\"grad_norm\":"));
    free(s);
    return m;
}

static void same_ckpts(const char *a, const char *b, const char *stage, const char *what) {
    const char *names[2] = {"last", "best"};
    for (int i = 0; i < 2; i++) {
        char pa[512], pb[512];
        snprintf(pa, sizeof pa, "%s/%s/ckpt/%s/%s.ckpt", tmp, a, stage, names[i]);
        snprintf(pb, sizeof pb, "%s/%s/ckpt/%s/%s.ckpt", tmp, b, stage, names[i]);
        WX_CHECK(files_equal(pa, pb), "%s %s: %s.ckpt byte-identical to the CPU run's", what, stage,
                 names[i]);
    }
}

static void same_metrics(const char *a, const char *b, const char *stage, const char *what) {
    char *ma = metrics_untimed(a, stage), *mb = metrics_untimed(b, stage);
    WX_CHECK(strlen(ma) > 200 && !strcmp(ma, mb), "%s %s: identical metrics (loss, lr, grad_norm, "
             "rmse)", what, stage);
    free(ma), free(mb);
}

static void check_training(const wx_backend *sim) {
    write_run_dir("cpu", "");
    write_run_dir("sim", "");
    write_run_dir("cpu_sim", ""); /* first half on the CPU, resumed on the simulator */
    write_run_dir("sim_cpu", ""); /* the reverse */
    const wx_backend *cpu = wx_backend_cpu();
    long ops0 = wx_devsim_ops_run();
    for (int k = 0; k < 2; k++) {
        const char *stage = k ? "finetune" : "pretrain";
        const int64_t half = k ? 2 : 3;
        WX_CHECK(train("cpu", stage, cpu, 0, NULL) == WX_OK, "cpu %s: %s", stage, wx_error_message());
        wx_devsim_upload_stats u0, u1;
        wx_devsim_uploads(&u0);
        WX_CHECK(train("sim", stage, sim, 0, NULL) == WX_OK, "sim %s: %s", stage, wx_error_message());
        wx_devsim_uploads(&u1);
        /* batches through async uploads; after the first pair each overlaps the step before */
        if (k == 0)
            WX_CHECK(u1.copies - u0.copies == 12 && u1.overlapped - u0.overlapped == 8,
                     "pretrain: %ld async batch copies (expected 12), %ld overlapping the previous "
                     "step (expected 8)", u1.copies - u0.copies, u1.overlapped - u0.overlapped);
        same_ckpts("cpu", "sim", stage, "simulator");
        same_metrics("cpu", "sim", stage, "simulator");
        WX_CHECK(train("cpu_sim", stage, cpu, half, NULL) == WX_OK, "cpu half: %s", wx_error_message());
        WX_CHECK(train("cpu_sim", stage, sim, 0, "last.ckpt") == WX_OK, "sim resume: %s",
                 wx_error_message());
        same_ckpts("cpu", "cpu_sim", stage, "CPU then simulator");
        same_metrics("cpu", "cpu_sim", stage, "CPU then simulator");
        WX_CHECK(train("sim_cpu", stage, sim, half, NULL) == WX_OK, "sim half: %s", wx_error_message());
        WX_CHECK(train("sim_cpu", stage, cpu, 0, "last.ckpt") == WX_OK, "cpu resume: %s",
                 wx_error_message());
        same_ckpts("cpu", "sim_cpu", stage, "simulator then CPU");
        same_metrics("cpu", "sim_cpu", stage, "simulator then CPU");
    }
    /* not vacuous: clipping on every pretrain step, training changed the parameters, and the
     * ops went through the simulator */
    double g = min_grad_norm("cpu", "pretrain");
    WX_CHECK(g > 0.05 && isfinite(g), "pretrain clipped at every step (smallest norm %g)", g);
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/cpu/ckpt/pretrain/last.ckpt", tmp);
    snprintf(b, sizeof b, "%s/cpu/ckpt/finetune/last.ckpt", tmp);
    WX_CHECK(!files_equal(a, b), "finetune moved the parameters");
    long ops = wx_devsim_ops_run() - ops0;
    printf("FourCastNet: %ld simulated op calls\n", ops);
    WX_CHECK(ops > 1000, "the model's ops ran on the simulator (%ld calls)", ops);
    WX_CHECK(wx_devsim_protecting(), "device memory was unmapped between ops (every op wrapped)");
    WX_CHECK(wx_devsim_check() == 0 && wx_devsim_violations() == 0, "no simulator violation: %s",
             wx_devsim_first_violation());
    size_t bytes = 0, live = wx_devsim_live(&bytes);
    WX_CHECK(live == 0, "the trainer freed its device memory (%zu allocations, %zu bytes live)",
             live, bytes);
}

static void write_gc_run_dir(const char *name) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(gct_write_text(path, gct_model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s/gc_archive\n  train_years: [2019, 2019]\n"
             "  valid_years: [2020, 2020]\n"
             "seed: 5\nthreads: 1\ncheckpoint_dir: ckpt\n"
             "validation: {leads: [1, 2], max_samples: 4}\n"
             "pretrain:\n  steps: 3\n  batch_size: 2\n"
             "  optimizer: {lr: 3.0e-3, weight_decay: 0.1, warmup: 1, lr_min: 1.0e-4, "
             "grad_clip: 0.5}\n"
             "finetune:\n  steps: 3\n  batch_size: 2\n  rollout_start: 1\n  rollout_every: 1\n"
             "  rollout_steps: 3\n  init_from: ckpt/pretrain/best.ckpt\n"
             "  optimizer: {lr: 1.0e-3, weight_decay: 0.1}\n", tmp);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(gct_write_text(path, text) == 0, "write %s", path);
}

static void check_graphcast(const wx_backend *sim) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/gc_archive", tmp);
    if (!WX_CHECK(gct_archive_write(dir, 64) == 0, "GraphCast archive: %s", wx_error_message()))
        return;
    write_gc_run_dir("gc_cpu");
    write_gc_run_dir("gc_sim");
    setenv("WX_GC_OPS", "1", 1); /* the CPU run takes the same (ops) path as a device backend */
    long v0 = wx_devsim_violations(), ops0 = wx_devsim_ops_run();
    for (int k = 0; k < 2; k++) {
        const char *stage = k ? "finetune" : "pretrain";
        WX_CHECK(train("gc_cpu", stage, wx_backend_cpu(), 0, NULL) == WX_OK, "GraphCast cpu %s: %s",
                 stage, wx_error_message());
        WX_CHECK(train("gc_sim", stage, sim, 0, NULL) == WX_OK, "GraphCast sim %s: %s", stage,
                 wx_error_message());
        same_ckpts("gc_cpu", "gc_sim", stage, "GraphCast on the simulator");
        same_metrics("gc_cpu", "gc_sim", stage, "GraphCast on the simulator");
    }
    unsetenv("WX_GC_OPS");
    double g = min_grad_norm("gc_cpu", "pretrain");
    WX_CHECK(g > 0.5 && isfinite(g), "GraphCast pretrain clipped at every step (smallest %g)", g);
    printf("GraphCast: %ld simulated op calls\n", wx_devsim_ops_run() - ops0);
    WX_CHECK(wx_devsim_check() == v0 && wx_devsim_violations() == v0,
             "GraphCast: no simulator violation: %s", wx_devsim_first_violation());
    size_t live = wx_devsim_live(NULL);
    WX_CHECK(live == 0, "GraphCast: device memory freed (%zu allocations live)", live);
}

static const char *plus_yaml =
    "type: fourcastnet\nimg_size: [16, 32]\npatch_size: 4\nout_channels: 3\nembed_dim: 32\n"
    "depth: 2\nmlp_ratio: 2.0\nnum_blocks: 4\nextra_inputs: [time, location, static]\n";

static void write_plus_run_dir(const char *name) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, plus_yaml) == 0, "write %s", path);
    /* both precip runs read the CPU run's wind model (the same MODL path, the same weights) */
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s/ext_archive\n  channels_in: [z500, t850, u850]\n"
             "  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n"
             "seed: 7\nthreads: 1\ncheckpoint_dir: ckpt\n"
             "validation: {leads: [1, 2], max_samples: 4}\n"
             "pretrain:\n  steps: 3\n  batch_size: 2\n"
             "  optimizer: {lr: 2.0e-3, warmup: 1, grad_clip: 0.05, weight_decay: 0.01}\n"
             "finetune:\n  steps: 2\n  batch_size: 2\n  rollout_steps: 2\n"
             "  init_from: ckpt/pretrain/best.ckpt\n  optimizer: {lr: 1.0e-3}\n"
             "precip:\n  wind_checkpoint: %s/plus_cpu/ckpt/finetune/last.ckpt\n  steps: 3\n"
             "  batch_size: 2\n  optimizer: {lr: 1.0e-3, warmup: 1}\n", tmp, tmp);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

/* FourCastNet+ (extras built on the host) and the precip stage on it, simulator vs CPU. */
static void check_plus_precip(const wx_backend *sim) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ext_archive", tmp);
    if (!WX_CHECK(toy_ext_archive_write(dir, 64, TOY_EXT_STATIC | TOY_EXT_TP) == 0,
                  "archive with tp and statics: %s", wx_error_message()))
        return;
    write_plus_run_dir("plus_cpu");
    write_plus_run_dir("plus_sim");
    long v0 = wx_devsim_violations(), ops0 = wx_devsim_ops_run();
    const char *stages[3] = {"pretrain", "finetune", "precip"};
    for (int k = 0; k < 3; k++) {
        const char *stage = stages[k];
        WX_CHECK(train("plus_cpu", stage, wx_backend_cpu(), 0, NULL) == WX_OK,
                 "FourCastNet+ cpu %s: %s", stage, wx_error_message());
        long before = wx_devsim_ops_run();
        WX_CHECK(train("plus_sim", stage, sim, 0, NULL) == WX_OK, "FourCastNet+ sim %s: %s", stage,
                 wx_error_message());
        long ops = wx_devsim_ops_run() - before;
        WX_CHECK(ops > 100, "FourCastNet+ %s: ops ran on the simulator (%ld calls)", stage, ops);
        same_ckpts("plus_cpu", "plus_sim", stage, "FourCastNet+ on the simulator");
        same_metrics("plus_cpu", "plus_sim", stage, "FourCastNet+ on the simulator");
    }
    double g = min_grad_norm("plus_cpu", "pretrain");
    WX_CHECK(g > 0.05 && isfinite(g), "FourCastNet+ pretrain clipped at every step (smallest %g)", g);
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/plus_cpu/ckpt/precip/last.ckpt", tmp);
    wx_checkpoint ck;
    if (WX_CHECK(wx_checkpoint_read(a, &ck) == WX_OK, "read %s: %s", a, wx_error_message())) {
        WX_CHECK(ck.model_text && strstr(ck.model_text, "type: precipnet"),
                 "the precip stage wrote a PrecipNet checkpoint");
        wx_checkpoint_free(&ck);
    }
    /* the trained PrecipNet as a forecast diagnostic (host y and tp) on both backends */
    wx_ctx *ctx = wx_ctx_create(1);
    const char *names[3] = {"z500", "t850", "u850"};
    const double mean[3] = {54000.0, 270.0, 5.0}, sd[3] = {1500.0, 12.0, 9.0};
    float y[2 * 3 * 512], tp[2][2 * 512];
    for (int i = 0; i < 2 * 3 * 512; i++) y[i] = (float)sin(0.37 * i) * 1.5f;
    for (int k = 0; k < 2; k++) {
        wx_precip_diag *d = NULL;
        wx_status s = wx_precip_diag_open(a, ctx, k ? sim : wx_backend_cpu(), 2, 3, names, mean, sd,
                                          &d);
        if (WX_CHECK(s == WX_OK, "precip diagnostic on %s: %s", k ? "sim" : "cpu", wx_error_message()))
            WX_CHECK(wx_precip_diag_run(d, tp[k], y, 2) == WX_OK, "diagnostic run: %s",
                     wx_error_message());
        wx_precip_diag_close(d);
    }
    double tmax = 0;
    for (int i = 0; i < 2 * 512; i++) tmax = fmax(tmax, tp[0][i]);
    WX_CHECK(!memcmp(tp[0], tp[1], sizeof tp[0]) && tmax > 0,
             "precip diagnostic: tp on the simulator bitwise equal to the CPU's (max %g)", tmax);
    wx_ctx_destroy(ctx);
    snprintf(a, sizeof a, "%s/plus_cpu/ckpt/pretrain/last.ckpt", tmp);
    snprintf(b, sizeof b, "%s/plus_cpu/ckpt/finetune/last.ckpt", tmp);
    WX_CHECK(!files_equal(a, b), "FourCastNet+ finetune moved the parameters");
    printf("FourCastNet+ and precip: %ld simulated op calls\n", wx_devsim_ops_run() - ops0);
    WX_CHECK(wx_devsim_check() == v0 && wx_devsim_violations() == v0,
             "FourCastNet+ / precip: no simulator violation: %s", wx_devsim_first_violation());
    size_t live = wx_devsim_live(NULL);
    WX_CHECK(live == 0, "FourCastNet+ / precip: device memory freed (%zu allocations live)", live);
}

static void check_refusals(const wx_backend *sim) {
    write_run_dir("bf16cpu", "precision: bf16\n");
    write_run_dir("bf16sim", "device: cuda\nprecision: bf16\n");
    wx_status s = train("bf16cpu", "pretrain", NULL, 0, NULL);
    WX_CHECK(s == WX_ERR_USAGE && strstr(wx_error_message(), "precision"),
             "bf16 with device cpu: exit 2 naming the key (%d: %s)", (int)s, wx_error_message());
    s = train("bf16sim", "pretrain", sim, 0, NULL);
    WX_CHECK(s == WX_ERR_USAGE && strstr(wx_error_message(), "bf16") &&
             strstr(wx_error_message(), "devsim"),
             "bf16 on the simulator: exit 2 naming the backend (%d: %s)", (int)s, wx_error_message());
}

/* The simulator itself: the two mix-ups it exists to catch. */
static void check_simulator(const wx_backend *sim) {
    wx_ctx *ctx = wx_ctx_create(1);
    float host[16] = {0}, *dev = wx_backend_alloc(sim, ctx, sizeof host, "t");
    long v0 = wx_devsim_violations();
    wx_status s = sim->add_forward(ctx, dev, dev, host, 16);
    WX_CHECK(s == WX_ERR_RUN && wx_devsim_violations() == v0 + 1 && strstr(wx_error_message(), "b"),
             "a host pointer passed to an op is caught (%s)", wx_error_message());
    WX_CHECK(sim->add_forward(ctx, dev, dev, dev, 16) == WX_ERR_RUN || 1, "ops continue");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        volatile float x = dev[3]; /* a device pointer read on the host */
        (void)x;
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    WX_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 86, "a host read of device memory ends the process "
             "with 86 (status %d)", st);
    sim->mem_free(ctx, dev);
    wx_ctx_destroy(ctx);
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    WX_CHECK(toy_archive_write(archive, 64) == 0, "write archive: %s", wx_error_message());
    const wx_backend *sim = wx_devsim_backend();
    WX_CHECK(sim->on_device == 1 && !strcmp(sim->name, "devsim"), "simulator table");
    check_training(sim);
    check_graphcast(sim);
    check_plus_precip(sim);
    check_refusals(sim);
    check_simulator(sim);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
