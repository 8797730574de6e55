/* wxcast train on a tiny archive (tests/unit/train_toy.h) through the real binary:
 *  - resume bit-identity: 14 steps in one run vs 7 steps (--max-steps) + --resume for 7 more give
 *    byte-identical last.ckpt and best.ckpt (parameters, AdamW state, step, RNG and data order)
 *    and the same per-step losses, learning rates and validation RMSEs in the metrics file; the
 *    same for the two-step finetune started from the pretrain best checkpoint;
 *  - the metrics file: one JSON object per step (step, loss, lr, samples_per_s) with lr following
 *    warmup + cosine (recomputed here from the formula), one per validation with an rmse per
 *    channel and lead;
 *  - validation against an independent computation: a persistence model plugged into the model
 *    interface must score the RMSE computed here from the analytic toy fields with cell-area
 *    weights written out in this file;
 *  - checkpoint corruption (flipped byte, truncated file) → exit 1 with one error line naming the
 *    file; config errors → exit 2 with one error line naming the key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "train/dataset.h"
#include "train/train_config.h"
#include "train/validate.h"
#include "train_toy.h"
#include "cli_check.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_train_XXXXXX";
static char archive[256];

static int run(const char *args, const char *tag) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s train %s >%s/%s.out 2>%s/%s.err", WX_BINARY, args, tmp, tag, tmp, tag);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void check_one_error(const char *tag, const char *what) {
    check_one_error_in(tmp, tag, what);
}

/* Metrics text without the timing fields, which legitimately differ. */
static char *metrics_untimed(const char *path) { return metrics_untimed_text(path); }

static void write_run_dir(const char *name) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, toy_model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s\n  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n"
             "seed: 7\nthreads: 1\ncheckpoint_dir: ckpt\n"
             "validation: {leads: [1, 2]}\n"
             "pretrain:\n  steps: 14\n  batch_size: 4\n"
             "  optimizer: {lr: 1.0e-3, warmup: 2, lr_min: 1.0e-5, grad_clip: 1.0, weight_decay: 0.01, "
             "betas: [0.9, 0.95]}\n"
             "finetune:\n  steps: 6\n  batch_size: 2\n  init_from: ckpt/pretrain/best.ckpt\n"
             "  optimizer: {lr: 1.0e-4}\n"
             "  loss: {type: lat_weighted_mse, channel_weights: [1.0, 0.5, 2.0]}\n",
             archive);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

static void check_resume(const char *stage, int64_t total, int64_t half) {
    char args[2048], a[512], b[512];
    snprintf(args, sizeof args, "%s/A/train.yaml --stage %s --metrics %s/A/%s.jsonl", tmp, stage, tmp,
             stage);
    WX_CHECK(run(args, "A") == 0, "%s: uninterrupted run", stage);
    snprintf(args, sizeof args, "%s/B/train.yaml --stage %s --metrics %s/B/%s.jsonl --max-steps %lld",
             tmp, stage, tmp, stage, (long long)half);
    WX_CHECK(run(args, "B1") == 0, "%s: first half", stage);
    snprintf(a, sizeof a, "%s/B/ckpt/%s/last.ckpt", tmp, stage);
    snprintf(b, sizeof b, "%s/B/half.ckpt", tmp);
    char *x;
    size_t nx;
    WX_CHECK(wx_read_file(a, &x, &nx) == WX_OK, "read %s", a);
    FILE *f = fopen(b, "wb");
    fwrite(x, 1, nx, f);
    fclose(f);
    free(x);
    wx_checkpoint ck;
    if (WX_CHECK(wx_checkpoint_read(b, &ck) == WX_OK, "read half: %s", wx_error_message())) {
        WX_CHECK(ck.st.step == half && !strcmp(ck.st.stage, stage), "%s: half checkpoint at step %lld",
                 stage, (long long)ck.st.step);
        wx_checkpoint_free(&ck);
    }
    snprintf(args, sizeof args, "%s/B/train.yaml --stage %s --metrics %s/B/%s.jsonl --resume %s",
             tmp, stage, tmp, stage, a);
    WX_CHECK(run(args, "B2") == 0, "%s: resumed half", stage);
    const char *names[2] = {"last", "best"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/A/ckpt/%s/%s.ckpt", tmp, stage, names[i]);
        snprintf(b, sizeof b, "%s/B/ckpt/%s/%s.ckpt", tmp, stage, names[i]);
        WX_CHECK(files_equal(a, b), "%s: %s.ckpt of the resumed run is byte-identical", stage, names[i]);
    }
    /* Non-trivial: training moved the parameters since the half-way checkpoint. */
    snprintf(a, sizeof a, "%s/A/ckpt/%s/last.ckpt", tmp, stage);
    snprintf(b, sizeof b, "%s/B/half.ckpt", tmp);
    WX_CHECK(!files_equal(a, b), "%s: the parameters changed after the half", stage);
    if (WX_CHECK(wx_checkpoint_read(a, &ck) == WX_OK, "read last: %s", wx_error_message())) {
        WX_CHECK(ck.st.step == total, "%s: last at step %lld", stage, (long long)ck.st.step);
        wx_checkpoint_free(&ck);
    }
    snprintf(a, sizeof a, "%s/A/%s.jsonl", tmp, stage);
    snprintf(b, sizeof b, "%s/B/%s.jsonl", tmp, stage);
    char *ma = metrics_untimed(a), *mb = metrics_untimed(b);
    WX_CHECK(strlen(ma) > 100 && !strcmp(ma, mb), "%s: same metrics (losses, lr, rmse) in both runs",
             stage);
    free(ma);
    free(mb);
}

/* Metrics of the pretrain run A: one train line per step with the schedule's lr; valid lines. */
static void check_metrics(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/A/pretrain.jsonl", tmp);
    char *s = slurp(path);
    int train = 0, valid = 0, lr_ok = 0, keys_ok = 0;
    double first_loss = NAN;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"phase\":\"train\"")) {
            train++;
            double step = num_after(line, "\"step\":"), lr = num_after(line, "\"lr\":");
            if (train == 1) first_loss = num_after(line, "\"loss\":");
            keys_ok += step == train && strstr(line, "\"loss\":") && strstr(line, "\"samples_per_s\":");
            /* warmup 2 then cosine from 1e-3 to 1e-5 over steps 2..14 (0-based step = step − 1) */
            int64_t k = (int64_t)step - 1;
            double want = k < 2 ? 1e-3 * (double)(k + 1) / 2
                                : 1e-5 + 0.5 * (1e-3 - 1e-5) * (1 + cos(M_PI * (double)(k - 2) / 12.0));
            lr_ok += fabs(lr - want) <= 1e-8 * want;
        } else if (strstr(line, "\"phase\":\"valid\"")) {
            valid++;
            int all = 1;
            for (int c = 0; c < TOY_NCH; c++)
                for (int l = 1; l <= 2; l++) {
                    char key[64];
                    snprintf(key, sizeof key, "\"rmse.%s.%dh\":", toy_names[c], 6 * l);
                    double v = num_after(line, key);
                    all &= isfinite(v) && v > 0;
                }
            keys_ok += all;
        }
    }
    WX_CHECK(train == 14, "14 train lines, got %d", train);
    WX_CHECK(valid == 2, "2 validations (epoch end at step 11, run end at 14), got %d", valid);
    WX_CHECK(lr_ok == 14, "lr follows warmup + cosine on %d of 14 steps", lr_ok);
    WX_CHECK(keys_ok == 16, "keys present on %d of 16 lines", keys_ok);
    WX_CHECK(first_loss > 0.05 && first_loss < 10, "first relative-L2 loss %g plausible", first_loss);
    free(s);
}

/* Persistence through the model interface. */
static wx_status id_predict(wx_train_model *m, float *y, const float *x, int64_t b) {
    memcpy(y, x, sizeof(float) * (size_t)(b * m->in_channels * m->h * m->w));
    return WX_OK;
}

static void check_validation(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/A/train.yaml", tmp);
    wx_train_config c;
    if (!WX_CHECK(wx_train_config_load(path, NULL, &c) == WX_OK, "config: %s", wx_error_message()))
        return;
    wx_dataset ds;
    if (!WX_CHECK(wx_dataset_open(&ds, &c, 3, 3, 16, 32, 4, 1) == WX_OK, "dataset: %s",
                  wx_error_message())) {
        wx_train_config_free(&c);
        return;
    }
    /* 2020-01-01T00 is record 48; samples need t + 2 inside 2020 and the 64-record archive. */
    WX_CHECK(ds.ntrain == 47 && ds.nvalid == 14 && ds.valid[0] == 48,
             "splits: %lld train, %lld valid from %lld", (long long)ds.ntrain, (long long)ds.nvalid,
             (long long)(ds.nvalid ? ds.valid[0] : -1));
    wx_train_model_ops ops = {.predict = id_predict};
    wx_train_model pm = {.ops = &ops, .family = "persistence", .in_channels = 3, .out_channels = 3,
                         .h = 16, .w = 32};
    wx_ctx *ctx = wx_ctx_create(2);
    wx_train_loss loss;
    wx_train_loss_init(&loss, WX_LOSS_REL_L2, ctx, wx_backend_cpu(), 3, 16, 32, ds.wlat, NULL);
    int64_t leads[2] = {1, 2};
    wx_valid_result r;
    if (WX_CHECK(wx_validate(&pm, &ds, &loss, leads, 2, 0, 4, &r) == WX_OK, "validate: %s",
                 wx_error_message())) {
        /* Independent: WB2 cell-area weights of the 16 model rows (products-and-metrics.md §2.1):
         * bounds at the midpoints between rows, ±90 at the ends, so the last row (−78.75°) also
         * covers the dropped pole row's band. */
        double w[16], ws = 0;
        for (int j = 0; j < 16; j++) {
            double up = j == 0 ? 90 : toy_lat(j) + 5.625, lo = j == 15 ? -90 : toy_lat(j) - 5.625;
            w[j] = sin(up * M_PI / 180) - sin(lo * M_PI / 180);
            ws += w[j];
        }
        double worst = 0;
        for (int l = 0; l < 2; l++)
            for (int ch = 0; ch < 3; ch++) {
                double acc = 0;
                for (int s = 0; s < 14; s++) {
                    int64_t t = 48 + s;
                    double mse = 0;
                    for (int j = 0; j < 16; j++)
                        for (int i = 0; i < 32; i++) {
                            double d = (double)(float)toy_value(ch, t, j, i) -
                                       (double)(float)toy_value(ch, t + l + 1, j, i);
                            mse += w[j] / ws * 16 * d * d;
                        }
                    acc += mse / (16 * 32);
                }
                double want = sqrt(acc / 14), got = r.rmse[l * 3 + ch];
                double rel = fabs(got - want) / want;
                if (rel > worst) worst = rel;
            }
        /* float32 normalisation round trip: ~1e-6 relative; 1e-4 leaves margin. */
        WX_CHECK(worst < 1e-4, "persistence RMSE vs independent computation: worst rel %.2e", worst);
        printf("persistence RMSE (z500 6h/12h: %.1f / %.1f m2/s2) matches within rel %.1e\n",
               r.rmse[0], r.rmse[3], worst);
        WX_CHECK(r.rmse[3] > r.rmse[0], "persistence error grows with lead");
        wx_valid_result_free(&r);
    }
    wx_train_loss_free(&loss);
    wx_ctx_destroy(ctx);
    wx_dataset_close(&ds);
    wx_train_config_free(&c);
}

static void flip(const char *path, long off) {
    FILE *f = fopen(path, "r+b");
    fseek(f, off, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(ch ^ 0x04, f);
    fclose(f);
}

static void check_corruption(void) {
    char src[512], bad[512], args[2048];
    snprintf(src, sizeof src, "%s/A/ckpt/pretrain/last.ckpt", tmp);
    char *x;
    size_t n;
    if (!WX_CHECK(wx_read_file(src, &x, &n) == WX_OK, "read last")) return;
    struct { const char *name, *what; size_t len; long off; } cases[] = {
        {"flip_data.ckpt", "checksum mismatch", n, (long)(n * 2 / 3)},
        {"flip_header.ckpt", "not a wxcast checkpoint", n, 3},
        {"truncated.ckpt", "truncated", n - 1000, -1},
        {"empty.ckpt", "truncated", 0, -1},
    };
    for (int i = 0; i < 4; i++) {
        snprintf(bad, sizeof bad, "%s/%s", tmp, cases[i].name);
        FILE *f = fopen(bad, "wb");
        fwrite(x, 1, cases[i].len, f);
        fclose(f);
        if (cases[i].off >= 0) flip(bad, cases[i].off);
        wx_checkpoint ck;
        WX_CHECK(wx_checkpoint_read(bad, &ck) == WX_ERR_RUN && strstr(wx_error_message(), bad) &&
                     strstr(wx_error_message(), cases[i].what),
                 "%s: read fails naming the file and '%s': %s", cases[i].name, cases[i].what,
                 wx_error_message());
        wx_checkpoint_free(&ck);
        snprintf(args, sizeof args, "--quiet %s/A/train.yaml --resume %s", tmp, bad);
        WX_CHECK(run(args, "bad") == 1, "%s: --resume exits 1", cases[i].name);
        check_one_error("bad", cases[i].what);
    }
    free(x);
}

static void check_config_errors(void) {
    struct { const char *from, *to, *what; } cases[] = {
        {"  optimizer: {lr: 1.0e-3,", "  optimiser: {lr: 1.0e-3,", "optimiser"},
        {"  batch_size: 4\n", "  batch_size: four\n", "batch_size"},
        {"train_years: [2019, 2019]", "train_years: [2019, 2020]", "overlap"},
        {"model: model.yaml", "model: missing.yaml", "missing.yaml"},
        {"valid_years: [2020, 2020]\n", "valid_years: [2020, 2020]\n  channels_in: [z500, q700]\n",
         "q700"},
        {"  steps: 14\n", "  steps: 14\n  loss: {channel_weights: [1, 2, 3]}\n", "channel_weights"},
    };
    char path[512];
    snprintf(path, sizeof path, "%s/A/train.yaml", tmp);
    char *good = slurp(path);
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char *p = strstr(good, cases[i].from);
        if (!WX_CHECK(p != NULL, "case %d: pattern", i)) continue;
        char text[8192];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(p - good), good, cases[i].to,
                 p + strlen(cases[i].from));
        snprintf(path, sizeof path, "%s/A/bad.yaml", tmp);
        toy_write_text(path, text);
        char args[1024];
        snprintf(args, sizeof args, "--quiet %s", path);
        WX_CHECK(run(args, "cfg") == 2, "config case %d (%s) exits 2", i, cases[i].what);
        check_one_error("cfg", cases[i].what);
    }
    char args[1024];
    snprintf(args, sizeof args, "%s/A/train.yaml --stage precip", tmp);
    WX_CHECK(run(args, "cfg") == 2, "--stage precip exits 2");
    check_one_error("cfg", "precip");
    snprintf(args, sizeof args, "%s/A/train.yaml --max-steps x", tmp);
    WX_CHECK(run(args, "cfg") == 2, "--max-steps x exits 2");
    /* The shipped configs validate; the paper one carries the NVlabs AFNO.yaml values. */
    snprintf(args, sizeof args, "%s/../../../configs/train/fourcastnet_paper.yaml --stage finetune "
             "--print-config", WX_FIXTURE_DIR);
    WX_CHECK(run(args, "pc") == 0, "paper config --print-config");
    snprintf(path, sizeof path, "%s/pc.out", tmp);
    char *pc = slurp(path);
    WX_CHECK(strstr(pc, "rollout_steps: 2") && strstr(pc, "lr: 1.0e-4") && strstr(pc, "epochs: 50") &&
                 strstr(pc, "batch_size: 64") && strstr(pc, "type: relative_l2"),
             "paper finetune: rollout 2, lr 1e-4, 50 epochs, batch 64, relative L2");
    free(pc);
    snprintf(args, sizeof args, "%s/../../../configs/train/fourcastnet_tiny.yaml --print-config",
             WX_FIXTURE_DIR);
    WX_CHECK(run(args, "pc") == 0, "tiny config --print-config");
    /* resuming a finetune from a pretrain checkpoint is refused */
    snprintf(args, sizeof args, "--quiet %s/A/train.yaml --stage finetune --resume %s/A/ckpt/pretrain/last.ckpt",
             tmp, tmp);
    WX_CHECK(run(args, "cfg") == 2, "stage mismatch on resume exits 2");
    check_one_error("cfg", "stage");
    free(good);
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    WX_CHECK(toy_archive_write(archive, 64) == 0, "write archive: %s", wx_error_message());
    write_run_dir("A");
    write_run_dir("B");
    check_resume("pretrain", 14, 7);
    check_metrics();
    check_resume("finetune", 6, 3);
    check_validation();
    check_corruption();
    check_config_errors();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
