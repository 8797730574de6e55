/* FourCastNet+ extra inputs (model config extra_inputs: [time, location, static]):
 *  - config: in_channels = out_channels + 4 + 3 + 2 computed; a disagreeing in_channels, an
 *    unknown or repeated name are usage errors naming the key;
 *  - make_input at a chosen point and time against the formulas written out here (local day
 *    progress from UTC seconds and longitude, year progress over 365.24219 days, sin lat,
 *    cos/sin lon, the static fields as given), at the input time t1 − dt;
 *  - a two-step finetune loss through next_input equals the sum of the two one-step losses
 *    computed here with predict and make_input at t1 + dt, and its gradient passes a central
 *    finite-difference check along a random direction;
 *  - through the binary on the toy archive with static lsm/zs channels: pretrain and a two-step
 *    finetune run; the checkpoint keeps the option (MODL extra_inputs and in_channels 12; loaded
 *    model builds its inputs, statics equal the archive's normalised lsm/zs); wxcast forecast
 *    rolls it out; the precip stage trains on it and forecast --precip runs with it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "ops/wx_ctx.h"
#include "train/checkpoint.h"
#include "train/train_model.h"
#include "train_toy.h"
#include "core/wx_fs.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_fcnplus_XXXXXX";

static const char *plus_yaml =
    "type: fourcastnet\nimg_size: [16, 32]\npatch_size: 4\nout_channels: 3\nembed_dim: 32\n"
    "depth: 2\nmlp_ratio: 2.0\nnum_blocks: 4\nextra_inputs: [time, location, static]\n";

static int run(const char *cmd_args, const char *tag) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s >%s/%s.out 2>%s/%s.err", WX_BINARY, cmd_args, tmp, tag, tmp, tag);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static wx_status create(const char *text, int64_t batch, int64_t rollout, wx_ctx *ctx,
                        wx_train_model **m) {
    wx_yaml *y = NULL;
    WX_TRY(wx_yaml_load_string(text, "plus.yaml", &y));
    wx_status st = wx_train_model_create(y, "", ctx, wx_backend_cpu(), 11, batch, rollout, m);
    wx_yaml_free(y);
    return st;
}

static void check_config(wx_ctx *ctx) {
    wx_train_model *m = NULL;
    if (WX_CHECK(create(plus_yaml, 1, 1, ctx, &m) == WX_OK, "create: %s", wx_error_message())) {
        WX_CHECK(m->in_channels == 12 && m->out_channels == 3 && m->nstatic == 2 && m->ops->make_input,
                 "in_channels %lld (3 + 9), %d statics", (long long)m->in_channels, m->nstatic);
        wx_train_model_destroy(m);
    }
    struct { const char *add, *what; } bad[] = {
        {"in_channels: 5\n", "in_channels"},
        {"extra_inputs: [time, wind]\n", "wind"},
        {"extra_inputs: [time, time]\n", "twice"},
    };
    for (int i = 0; i < 3; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", plus_yaml, bad[i].add);
        if (i) { /* replace the extra_inputs line */
            const char *line = "extra_inputs: [time, location, static]\n";
            char *p = strstr(text, line);
            memmove(p, p + strlen(line), strlen(p + strlen(line)) + 1);
        }
        m = NULL;
        wx_status st = create(text, 1, 1, ctx, &m);
        WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), bad[i].what),
                 "case %d: usage error naming '%s': %s", i, bad[i].what, wx_error_message());
        wx_train_model_destroy(m);
    }
    m = NULL;
    char text[1024];
    snprintf(text, sizeof text, "%sin_channels: 12\n", plus_yaml);
    WX_CHECK(create(text, 1, 1, ctx, &m) == WX_OK, "in_channels 12 given explicitly is accepted");
    wx_train_model_destroy(m);
}

/* Attaches data to m: toy grid (16 rows from 90°N, 11.25°), dt 6 h, statics 0.5·k + p/1000. */
static void attach(wx_train_model *m) {
    wx_train_data d;
    memset(&d, 0, sizeof d);
    d.nstate = 3;
    d.nstatic = 2;
    float *st = wx_malloc(sizeof(float) * 2 * 16 * 32);
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 512; p++) st[k * 512 + p] = 0.5f * (float)k + (float)p / 1000.0f;
    d.statics = st;
    d.dt_s = 21600;
    d.has_grid = 1;
    wx_grid_make(16, 32, 90.0, 11.25, 0.0, 11.25, &d.grid);
    WX_CHECK(wx_train_model_attach(m, &d) == WX_OK, "attach: %s", wx_error_message());
    free(st);
}

static void check_values(wx_ctx *ctx) {
    wx_train_model *m = NULL;
    if (!WX_CHECK(create(plus_yaml, 2, 1, ctx, &m) == WX_OK, "create")) return;
    attach(m);
    const int64_t hw = 512;
    float states[2 * 3 * 512], x[2 * 12 * 512];
    for (int i = 0; i < 2 * 3 * 512; i++) states[i] = (float)sin(0.1 * i);
    /* target times; the inputs are 6 h earlier: 2020-03-01T00:00Z = 1583020800 s, and
     * 2021-07-15T18:00Z = 1626372000 s */
    wx_time t1[2] = {1583020800 + 21600, 1626372000 + 21600};
    if (!WX_CHECK(wx_train_model_make_input(m, x, states, t1, 2) == WX_OK, "make_input: %s",
                  wx_error_message()))
        return;
    const int j = 3, i = 5, p = j * 32 + i; /* 56.25°N, 56.25°E */
    const double lat = 56.25 * M_PI / 180, lon = 56.25 * M_PI / 180;
    double worst = 0;
    for (int s = 0; s < 2; s++) {
        double sec = (double)(t1[s] - 21600);
        double day = fmod(fmod(sec / 86400.0, 1.0) + 56.25 / 360.0, 1.0);
        double year = fmod(sec / 86400.0 / 365.24219, 1.0);
        double want[9] = {sin(2 * M_PI * day), cos(2 * M_PI * day), sin(2 * M_PI * year),
                          cos(2 * M_PI * year), sin(lat), cos(lon), sin(lon),
                          0.0 + p / 1000.0, 0.5 + p / 1000.0};
        for (int k = 0; k < 9; k++) {
            double got = x[(s * 12 + 3 + k) * hw + p], e = fabs(got - want[k]);
            if (e > worst) worst = e;
            if (e > 1e-5) printf("sample %d extra %d: %.7f vs %.7f\n", s, k, got, want[k]);
        }
        WX_CHECK(!memcmp(x + s * 12 * hw, states + s * 3 * hw, sizeof(float) * 3 * hw),
                 "sample %d: the state channels are copied first", s);
    }
    printf("extra channels vs hand computation: max error %.2g\n", worst);
    WX_CHECK(worst <= 1e-5, "extra channels at 56.25N 56.25E vs hand computation: max error %.2g",
             worst);
    /* day progress at 2020-03-01T00Z, 56.25E: 0.15625 → sin 0.8314696 (an independent number) */
    WX_CHECK(fabs(x[(0 * 12 + 3) * hw + p] - 0.8314696) < 1e-5, "day_progress_sin = sin(2π·0.15625)");
    wx_train_model_destroy(m);
}

/* Two-step loss through next_input = Σ one-step losses built here; FD check of its gradient. */
static void check_two_step(wx_ctx *ctx) {
    wx_train_model *m = NULL;
    if (!WX_CHECK(create(plus_yaml, 2, 2, ctx, &m) == WX_OK, "create 2-step")) return;
    attach(m);
    const int64_t B = 2, hw = 512, n = B * 3 * hw;
    float *states = wx_malloc(sizeof(float) * (size_t)n), *x = wx_malloc(sizeof(float) * (size_t)(B * 12 * hw));
    float *x2 = wx_malloc(sizeof(float) * (size_t)(B * 12 * hw)), *y = wx_malloc(sizeof(float) * (size_t)n);
    float *tg = wx_malloc(sizeof(float) * (size_t)(2 * n));
    for (int64_t i = 0; i < n; i++) states[i] = (float)sin(0.05 * (double)i);
    for (int64_t i = 0; i < 2 * n; i++) tg[i] = (float)cos(0.03 * (double)i);
    wx_time t1[2] = {1583020800, 1583020800 + 3 * 3600}, t2[2];
    wx_train_model_make_input(m, x, states, t1, B);
    double *wl = wx_malloc(sizeof(double) * 16);
    for (int jj = 0; jj < 16; jj++) wl[jj] = 1;
    wx_train_loss loss;
    wx_train_loss_init(&loss, WX_LOSS_REL_L2, ctx, wx_backend_cpu(), 3, 16, 32, wl, NULL);
    wx_params_zero_grad(m->params);
    double l2 = 0, a = 0, b = 0;
    WX_CHECK(m->ops->loss_backward(m, &loss, x, tg, t1, 2, B, &l2) == WX_OK, "2-step loss_backward");
    /* by hand: ŷ1 = f(x), x2 = [ŷ1, extras at t1 (the new input time = t1 + dt − dt)], ŷ2 = f(x2) */
    m->ops->predict(m, y, x, B);
    wx_train_loss_value(&loss, &a, y, tg, B);
    for (int s = 0; s < 2; s++) t2[s] = t1[s] + 21600;
    wx_train_model_make_input(m, x2, y, t2, B);
    m->ops->predict(m, y, x2, B);
    wx_train_loss_value(&loss, &b, y, tg + n, B);
    WX_CHECK(fabs(l2 - (a + b)) <= 1e-6 * (a + b), "2-step loss %.9g = %.9g + %.9g", l2, a, b);
    /* the second input's extras are those of t1 + dt − dt = t1 + 0: day progress moved 0.25 */
    WX_CHECK(fabs(x2[3 * hw] - x[3 * hw]) > 0.1 || fabs(x2[4 * hw] - x[4 * hw]) > 0.1,
             "the second step's time inputs differ from the first's");
    /* central FD along a random direction v (float32 model: step 1e-2·|θ|-scaled, 5 % tolerance) */
    wx_params *p = m->params;
    float *v = wx_malloc(sizeof(float) * (size_t)p->len), *th = wx_malloc(sizeof(float) * (size_t)p->len);
    memcpy(th, p->data, sizeof(float) * (size_t)p->len);
    double gv = 0;
    uint64_t r = 12345;
    for (int64_t i = 0; i < p->len; i++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = (float)((double)(r >> 11) / 9007199254740992.0 - 0.5);
        gv += (double)v[i] * p->grad[i];
    }
    double h = 1e-2, lp = 0, lm = 0;
    for (int sgn = 0; sgn < 2; sgn++) {
        for (int64_t i = 0; i < p->len; i++) p->data[i] = th[i] + (float)((sgn ? -h : h) * v[i]);
        double tot = 0, u;
        m->ops->predict(m, y, x, B);
        wx_train_loss_value(&loss, &u, y, tg, B);
        tot += u;
        wx_train_model_make_input(m, x2, y, t2, B);
        m->ops->predict(m, y, x2, B);
        wx_train_loss_value(&loss, &u, y, tg + n, B);
        tot += u;
        if (sgn) lm = tot; else lp = tot;
    }
    double fd = (lp - lm) / (2 * h);
    printf("2-step directional derivative: gradient %.6g, central FD %.6g\n", gv, fd);
    WX_CHECK(fabs(fd - gv) <= 0.05 * fabs(gv) + 1e-6, "2-step directional derivative: grad %.6g, FD %.6g",
             gv, fd);
    memcpy(p->data, th, sizeof(float) * (size_t)p->len);
    free(v), free(th), free(wl);
    wx_train_loss_free(&loss);
    free(states), free(x), free(x2), free(y), free(tg);
    wx_train_model_destroy(m);
}

static void check_binary(void) {
    char path[1024], text[4096], archive[512];
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    if (!WX_CHECK(toy_ext_archive_write(archive, 64, TOY_EXT_STATIC | TOY_EXT_TP) == 0, "archive")) return;
    snprintf(path, sizeof path, "%s/model.yaml", tmp);
    toy_write_text(path, plus_yaml);
    snprintf(text, sizeof text,
             "model: model.yaml\ndata:\n  archive: archive\n  channels_in: [z500, t850, u850]\n"
             "  train_years: [2019, 2019]\n"
             "  valid_years: [2020, 2020]\nseed: 1\nthreads: 1\ncheckpoint_dir: ckpt\n"
             "validation: {leads: [1, 4]}\n"
             "pretrain:\n  steps: 12\n  batch_size: 4\n  optimizer: {lr: 1.0e-3, warmup: 2}\n"
             "finetune:\n  steps: 4\n  batch_size: 2\n  init_from: ckpt/pretrain/best.ckpt\n"
             "precip:\n  wind_checkpoint: ckpt/finetune/last.ckpt\n  steps: 6\n  batch_size: 2\n");
    snprintf(path, sizeof path, "%s/train.yaml", tmp);
    toy_write_text(path, text);
    char args[2048];
    snprintf(args, sizeof args, "train --quiet %s/train.yaml", tmp);
    WX_CHECK(run(args, "pre") == 0, "FourCastNet+ pretrain on the toy archive with statics");
    snprintf(args, sizeof args, "train --quiet %s/train.yaml --stage finetune", tmp);
    WX_CHECK(run(args, "fine") == 0, "FourCastNet+ two-step finetune");
    snprintf(path, sizeof path, "%s/ckpt/finetune/last.ckpt", tmp);
    wx_checkpoint ck;
    if (WX_CHECK(wx_checkpoint_read(path, &ck) == WX_OK, "read %s", path)) {
        WX_CHECK(ck.model_text && strstr(ck.model_text, "extra_inputs: [time, location, static]") &&
                     strstr(ck.model_text, "in_channels: 12"),
                 "MODL keeps extra_inputs and in_channels 12");
        WX_CHECK(ck.nfields == 2, "FLDS: 2 static fields, got %d", ck.nfields);
        wx_checkpoint_free(&ck);
    }
    wx_ctx *ctx = wx_ctx_create(1);
    wx_train_model *m = NULL;
    if (WX_CHECK(wx_train_model_load(path, ctx, wx_backend_cpu(), 1, &m) == WX_OK, "load: %s",
                 wx_error_message())) {
        WX_CHECK(m->in_channels == 12 && m->ops->make_input && m->nstatic == 2 && m->data.has_grid,
                 "loaded model: 12 inputs, builds its input, 2 statics, grid");
        /* statics = (lsm − mean)/std and (zs − mean)/std with the archive statistics */
        wx_archive *ar = NULL;
        wx_archive_opts o = {1, 1, 0};
        if (WX_CHECK(wx_archive_open(archive, &o, &ar) == WX_OK, "open archive")) {
            const wx_archive_meta *am = wx_archive_meta_of(ar);
            double worst = 0;
            for (int k = 0; k < 2; k++) {
                int c = k == 0 ? 5 : 4; /* geopotential_at_surface = zs (index 5), lsm (4) */
                for (int p = 0; p < 512; p++) {
                    double v = c == 4 ? toy_lsm(p / 32, p % 32) : toy_zs(p / 32, p % 32);
                    double want = ((double)(float)v - am->mean[c]) / am->std[c];
                    double e = fabs(m->data.statics[k * 512 + p] - want);
                    if (e > worst) worst = e;
                }
            }
            WX_CHECK(worst < 1e-5, "checkpoint statics = normalised zs, lsm (max error %.2g)", worst);
            wx_archive_close(ar);
        }
        wx_train_model_destroy(m);
    }
    wx_ctx_destroy(ctx);
    snprintf(args, sizeof args, "forecast --model %s --init %s --time 2020-01-01T00:00 --steps 4 "
             "--output %s/fc.nc --threads 1", path, archive, tmp);
    WX_CHECK(run(args, "fc") == 0, "wxcast forecast rolls the FourCastNet+ checkpoint out");
    /* the precip stage on the FourCastNet+ wind model (its inputs built by the wind model) */
    snprintf(args, sizeof args, "train --quiet %s/train.yaml --stage precip", tmp);
    WX_CHECK(run(args, "pr") == 0, "precip stage on a FourCastNet+ wind model");
    snprintf(args, sizeof args, "forecast --model %s --precip %s/ckpt/precip/last.ckpt --init %s "
             "--time 2020-01-01T00:00 --steps 2 --output %s/fcp.nc --threads 1", path, tmp, archive, tmp);
    WX_CHECK(run(args, "fcp") == 0, "forecast --precip with the FourCastNet+ wind model");
    /* a precip run resumed after its wind checkpoint was replaced (here by the pretrain one)
     * says so: the wind model's crc32 is in the precip model's description */
    snprintf(args, sizeof args, "train --quiet %s/train.yaml --stage precip --max-steps 3 --overwrite", tmp);
    WX_CHECK(run(args, "pr3") == 0, "precip stage, 3 steps");
    char cp[1400];
    snprintf(cp, sizeof cp, "cp %s/ckpt/pretrain/last.ckpt %s/ckpt/finetune/last.ckpt", tmp, tmp);
    WX_CHECK(system(cp) == 0, "the wind checkpoint replaced");
    snprintf(args, sizeof args, "train --quiet %s/train.yaml --stage precip --resume "
             "%s/ckpt/precip/last.ckpt --max-steps 4", tmp, tmp);
    WX_CHECK(run(args, "pr4") == 0, "precip resumed on another wind model");
    char errp[700], *err = NULL;
    size_t elen = 0;
    snprintf(errp, sizeof errp, "%s/pr4.err", tmp);
    WX_CHECK(wx_read_file(errp, &err, &elen) == WX_OK && strstr(err, "the model differs from the one it was "
                                                                 "trained as (`wind_crc32:"),
             "the resume warns about the replaced wind model: %s", err ? err : "(no stderr)");
    free(err);
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    wx_ctx *ctx = wx_ctx_create(1);
    check_config(ctx);
    check_values(ctx);
    check_two_step(ctx);
    wx_ctx_destroy(ctx);
    check_binary();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
