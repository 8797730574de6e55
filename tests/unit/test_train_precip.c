/* The precip stage (wxcast train CONFIG --stage precip) on the toy archive with a tp channel
 * (train_toy.h), through the real binary:
 *  - a wind FourCastNet (z500, t850, u850) is pretrained, then the PrecipNet is trained on its
 *    frozen prediction: the mean training loss of the last 5 of 80 steps is below 0.7× that of
 *    the first 5;
 *  - 80 steps in one run vs 40 + --resume 40 give byte-identical last/best checkpoints and the
 *    same metrics (losses, lr, validation RMSE of tp);
 *  - the wind checkpoint file is byte-identical before and after; the precip checkpoint holds
 *    exactly the PrecipNet's tensors (backbone.*, conv.*, their count from the parameter table);
 *    in process, the wind model's next state (next_input) is bitwise the same before and after
 *    the PrecipNet's parameters are updated from a loss gradient;
 *  - the validation RMSE of tp is in physical units: it equals the area-weighted RMSE computed
 *    here from the analytic toy tp and the model's un-logged prediction;
 *  - stage config errors (no precip section, rollout_steps 2, unknown channel, missing wind
 *    checkpoint) exit 2 or 1 with one error line naming the key or file;
 *  - wxcast forecast --precip adds a tp variable (units m, >= 0 and not all zero at leads 1..3;
 *    lead 1 = the PrecipNet applied in process to the wind model's first step). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netcdf.h>

#include "meteo/wx_grid.h"
#include "models/precipnet.h"
#include "ops/wx_ctx.h"
#include "train/checkpoint.h"
#include "wx_build_config.h"
#include "train/train_config.h"
#include "train/train_model.h"
#include "train_toy.h"
#include "cli_check.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_precip_XXXXXX";
static char archive[256];

static int run(const char *cmd_args, const char *tag) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s >%s/%s.out 2>%s/%s.err", WX_BINARY, cmd_args, tmp, tag, tmp, tag);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void check_one_error(const char *tag, const char *what) {
    check_one_error_in(tmp, tag, what);
}

static void copy_file(const char *from, const char *to) {
    char *x;
    size_t n;
    if (wx_read_file(from, &x, &n) != WX_OK) return;
    FILE *f = fopen(to, "wb");
    if (f) fwrite(x, 1, n, f), fclose(f);
    free(x);
}

/* The metrics with the timing fields removed. */
static char *metrics_untimed(const char *path) { return metrics_untimed_text(path); }

static const char *data_block =
    "data:\n  archive: %s\n  channels_in: [z500, t850, u850]\n  train_years: [2019, 2019]\n"
    "  valid_years: [2020, 2020]\n";

static void write_dir(const char *name, const char *wind) {
    char path[512], text[4096], data[1024];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, toy_model_yaml) == 0, "write %s", path);
    snprintf(data, sizeof data, data_block, archive);
    snprintf(text, sizeof text,
             "model: model.yaml\n%s"
             "seed: 3\nthreads: 1\ncheckpoint_dir: ckpt\n"
             "validation: {leads: [1, 2]}\n"
             "pretrain:\n  steps: 60\n  batch_size: 4\n"
             "  optimizer: {lr: 2.0e-3, warmup: 5, lr_min: 1.0e-5, grad_clip: 1.0}\n"
             "precip:\n  wind_checkpoint: %s\n  channel: tp\n  steps: 80\n  batch_size: 4\n"
             "  optimizer: {lr: 3.0e-3, warmup: 2, lr_min: 1.0e-4, grad_clip: 1.0}\n",
             data, wind);
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

static void mean_losses(const char *path, double *first5, double *last5, int *n) {
    char *s = slurp(path);
    double l[256];
    *n = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, "\"phase\":\"train\"") && *n < 256) l[(*n)++] = num_after(line, "\"loss\":");
    *first5 = *last5 = 0;
    for (int i = 0; i < 5 && *n >= 10; i++) *first5 += l[i] / 5, *last5 += l[*n - 5 + i] / 5;
    free(s);
}

/* The last validation line's tp RMSE at 6 h. */
static double last_rmse(const char *path) {
    char *s = slurp(path);
    double v = NAN;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, "\"phase\":\"valid\"")) v = num_after(line, "\"rmse.tp.6h\":");
    free(s);
    return v;
}

static void check_stage(const char *wind) {
    char args[2048], a[512], b[512], wind_copy[512];
    snprintf(wind_copy, sizeof wind_copy, "%s/wind_before.ckpt", tmp);
    copy_file(wind, wind_copy);
    snprintf(args, sizeof args, "train --quiet %s/A/train.yaml --stage precip --metrics %s/A/m.jsonl",
             tmp, tmp);
    WX_CHECK(run(args, "A") == 0, "precip: uninterrupted run");
    snprintf(args, sizeof args, "train --quiet %s/B/train.yaml --stage precip --metrics %s/B/m.jsonl "
             "--max-steps 40", tmp, tmp);
    WX_CHECK(run(args, "B1") == 0, "precip: first half");
    snprintf(args, sizeof args, "train --quiet %s/B/train.yaml --stage precip --metrics %s/B/m.jsonl "
             "--resume %s/B/ckpt/precip/last.ckpt", tmp, tmp, tmp);
    WX_CHECK(run(args, "B2") == 0, "precip: resumed");
    const char *names[2] = {"last", "best"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/A/ckpt/precip/%s.ckpt", tmp, names[i]);
        snprintf(b, sizeof b, "%s/B/ckpt/precip/%s.ckpt", tmp, names[i]);
        WX_CHECK(files_equal(a, b), "precip: %s.ckpt of the resumed run is byte-identical", names[i]);
    }
    snprintf(a, sizeof a, "%s/A/m.jsonl", tmp);
    snprintf(b, sizeof b, "%s/B/m.jsonl", tmp);
    char *ma = metrics_untimed(a), *mb = metrics_untimed(b);
    WX_CHECK(strlen(ma) > 100 && !strcmp(ma, mb), "precip: same metrics in both runs");
    free(ma), free(mb);
    double f5, l5;
    int n;
    mean_losses(a, &f5, &l5, &n);
    WX_CHECK(n == 80 && l5 < 0.7 * f5, "precip loss falls: first 5 steps %.4f, last 5 %.4f (%d steps)",
             f5, l5, n);
    printf("precip loss: first 5 steps %.4f, last 5 %.4f\n", f5, l5);
    WX_CHECK(files_equal(wind, wind_copy), "the wind checkpoint is unchanged by the stage");
    /* the precip checkpoint: the PrecipNet's tensors only */
    snprintf(a, sizeof a, "%s/A/ckpt/precip/last.ckpt", tmp);
    wx_checkpoint ck;
    if (WX_CHECK(wx_checkpoint_read(a, &ck) == WX_OK, "read %s: %s", a, wx_error_message())) {
        int64_t total = 0;
        int bad = 0;
        for (int i = 0; i < ck.ntensors; i++) {
            if (ck.t[i].kind != WX_CKPT_PARAM) continue;
            total += ck.t[i].size;
            bad += strncmp(ck.t[i].name, "backbone.", 9) && strncmp(ck.t[i].name, "conv.", 5);
        }
        wx_yaml *my = NULL;
        wx_fcn_config d;
        WX_CHECK(wx_yaml_load_string(toy_model_yaml, "toy", &my) == WX_OK &&
                     wx_fcn_config_parse(my, "", &d) == WX_OK, "toy model config");
        d.out_channels = 1;
        wx_params p;
        memset(&p, 0, sizeof p);
        wx_precip_param_table(&p, &d);
        WX_CHECK(bad == 0 && total == wx_params_total(&p),
                 "precip checkpoint: %lld parameters (table %lld), %d foreign tensors",
                 (long long)total, (long long)wx_params_total(&p), bad);
        WX_CHECK(!strcmp(ck.st.stage, "precip"), "stage 'precip' in the checkpoint");
        WX_CHECK(ck.model_text && strstr(ck.model_text, "type: precipnet") &&
                     strstr(ck.model_text, "eps: 1.0000000000000001e-05"),
                 "MODL: precipnet with eps 1e-5: %s", ck.model_text ? ck.model_text : "(none)");
        wx_params_free(&p);
        wx_yaml_free(my);
        wx_checkpoint_free(&ck);
    }
}

/* In process: the frozen wind model's next state is bitwise the same after the PrecipNet's
 * parameters move; the validation RMSE of tp equals the one computed here. */
static void check_frozen_and_rmse(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/A/train.yaml", tmp);
    wx_train_config c;
    if (!WX_CHECK(wx_train_config_load(path, "precip", &c) == WX_OK, "config: %s", wx_error_message()))
        return;
    wx_ctx *ctx = wx_ctx_create(1);
    const wx_backend *be = wx_backend_cpu();
    wx_train_model *m = NULL;
    if (!WX_CHECK(wx_train_model_precip_create(&c, ctx, be, 5, 2, &m) == WX_OK, "create: %s",
                  wx_error_message())) {
        wx_train_config_free(&c);
        wx_ctx_destroy(ctx);
        return;
    }
    const int64_t B = 2, H = 16, W = 32, hw = H * W;
    float *x = wx_malloc(sizeof(float) * (size_t)(B * 3 * hw));
    float *n0 = wx_malloc(sizeof(float) * (size_t)(B * 3 * hw)), *n1 = wx_malloc(sizeof(float) * (size_t)(B * 3 * hw));
    float *tg = wx_malloc(sizeof(float) * (size_t)(B * hw));
    float *y0 = wx_malloc(sizeof(float) * (size_t)(B * hw)), *y1 = wx_malloc(sizeof(float) * (size_t)(B * hw));
    for (int64_t i = 0; i < B * 3 * hw; i++) x[i] = (float)sin(0.37 * (double)i);
    for (int64_t i = 0; i < B * hw; i++) tg[i] = (float)(2.0 + 2.0 * cos(0.11 * (double)i));
    WX_CHECK(wx_train_model_next_input(m, n0, x, NULL, NULL, B) == WX_OK, "next_input");
    WX_CHECK(m->ops->predict(m, y0, x, B) == WX_OK, "predict");
    wx_train_loss loss;
    double *wl = wx_malloc(sizeof(double) * (size_t)H);
    for (int j = 0; j < H; j++) wl[j] = 1;
    wx_train_loss_init(&loss, WX_LOSS_REL_L2, ctx, be, 1, H, W, wl, NULL);
    wx_params_zero_grad(m->params);
    double l = 0;
    WX_CHECK(m->ops->loss_backward(m, &loss, x, tg, NULL, 1, B, &l) == WX_OK && l > 0, "loss %g", l);
    double gn = 0;
    for (int64_t i = 0; i < m->params->len; i++) gn += (double)m->params->grad[i] * m->params->grad[i];
    for (int64_t i = 0; i < m->params->len; i++) m->params->data[i] -= 0.05f * m->params->grad[i];
    WX_CHECK(wx_train_model_next_input(m, n1, x, NULL, NULL, B) == WX_OK, "next_input after");
    WX_CHECK(m->ops->predict(m, y1, x, B) == WX_OK, "predict after");
    WX_CHECK(gn > 0 && !memcmp(n0, n1, sizeof(float) * (size_t)(B * 3 * hw)),
             "the wind model's next state is bitwise unchanged (PrecipNet grad norm %g)", sqrt(gn));
    WX_CHECK(memcmp(y0, y1, sizeof(float) * (size_t)(B * hw)) != 0, "the PrecipNet output moved");
    wx_train_loss_free(&loss);
    free(wl), free(x), free(n0), free(n1), free(tg), free(y0), free(y1);
    wx_train_model_destroy(m);
    wx_ctx_destroy(ctx);
    wx_train_config_free(&c);
}

/* Validation's tp RMSE (A's last validation, every valid sample at lead 1) against the RMSE of
 * the trained model's un-logged output vs the analytic tp, with cell-area weights. */
static void check_valid_rmse(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/A/m.jsonl", tmp);
    double want = last_rmse(path);
    snprintf(path, sizeof path, "%s/A/ckpt/precip/last.ckpt", tmp);
    wx_ctx *ctx = wx_ctx_create(1);
    wx_train_model *m = NULL;
    if (!WX_CHECK(wx_train_model_load(path, ctx, wx_backend_cpu(), 1, &m) == WX_OK, "load: %s",
                  wx_error_message())) {
        wx_ctx_destroy(ctx);
        return;
    }
    const int H = 16, W = 32, hw = H * W;
    /* archive: 2019-12-20T00 + 6 h · t; valid year 2020 starts at record 48; a sample at t needs
     * t + 2 (lead 2) inside 2020 */
    double wsum = 0, w[16];
    /* cell areas of the 16 model rows: bands lat ± 5.625°, the first up to 90°N, the last (the
     * south-pole row dropped) down to 90°S */
    for (int j = 0; j < H; j++) {
        double hi = j == 0 ? 90.0 : toy_lat(j) + 5.625, lo = j == H - 1 ? -90.0 : toy_lat(j) - 5.625;
        w[j] = sin(hi * M_PI / 180) - sin(lo * M_PI / 180), wsum += w[j];
    }
    for (int j = 0; j < H; j++) w[j] *= H / wsum;
    float x[3 * 16 * 32], y[16 * 32];
    double mu[3] = {0}, sd[3] = {1, 1, 1};
    /* the inputs are normalised with the archive statistics the stage used (DATA channels_in) */
    wx_checkpoint ck;
    if (wx_checkpoint_read(path, &ck) == WX_OK) {
        wx_yaml *dy = NULL;
        if (wx_yaml_load_string(ck.data_text, path, &dy) == WX_OK) {
            const wx_yaml *ci = wx_yaml_get(dy, "channels_in");
            for (int c = 0; ci && c < 3 && c < ci->count; c++) {
                wx_yaml_as_double(wx_yaml_get(ci->items[c], "mean"), "mean", &mu[c]);
                wx_yaml_as_double(wx_yaml_get(ci->items[c], "std"), "std", &sd[c]);
            }
            wx_yaml_free(dy);
        }
        wx_checkpoint_free(&ck);
    }
    double acc = 0;
    int n = 0;
    for (int64_t t = 48; t + 2 < 64; t++, n++) {
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < hw; p++)
                x[c * hw + p] = (float)(((double)(float)toy_value(c, t, p / W, p % W) - mu[c]) / sd[c]);
        if (m->ops->predict(m, y, x, 1) != WX_OK) break;
        for (int p = 0; p < hw; p++) {
            double pred = 1e-5 * (exp((double)y[p]) - 1.0);
            double d = pred - (double)(float)toy_tp(t + 1, p / W, p % W);
            acc += w[p / W] * d * d / hw;
        }
    }
    double got = sqrt(acc / n);
    WX_CHECK(n == 14 && fabs(got - want) <= 1e-4 * want + 1e-9,
             "validation tp RMSE %.6g m vs %.6g computed here (%d samples)", want, got, n);
    printf("validation tp RMSE at 6 h: %.4g m (toy tp std ~1e-3)\n", want);
    wx_train_model_destroy(m);
    wx_ctx_destroy(ctx);
}

static void check_errors(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/A/train.yaml", tmp);
    char *good = slurp(path);
    struct { const char *from, *to, *what; int rc; } cases[] = {
        {"precip:\n", "other:\n", "precip", 2},
        {"  steps: 80\n", "  steps: 80\n  rollout_steps: 2\n", "precip.rollout_steps", 2},
        {"  channel: tp\n", "  channel: rain\n", "precip.channel", 2},
        {"  wind_checkpoint: ", "  wind_checkpoint: /nonexistent", "/nonexistent", 1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char *p = strstr(good, cases[i].from);
        if (!WX_CHECK(p != NULL, "case %d: pattern", i)) continue;
        char text[8192];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(p - good), good, cases[i].to,
                 p + strlen(cases[i].from));
        snprintf(path, sizeof path, "%s/A/bad.yaml", tmp);
        toy_write_text(path, text);
        char args[1024];
        snprintf(args, sizeof args, "train --quiet %s --stage precip", path);
        int rc = run(args, "cfg");
        WX_CHECK(rc == cases[i].rc, "config case %d (%s) exits %d, got %d", i, cases[i].what,
                 cases[i].rc, rc);
        check_one_error("cfg", cases[i].what);
    }
    free(good);
}

/* wxcast forecast --precip: a tp variable in m, >= 0 at every lead >= 1; lead 1 equals the
 * precip model applied in process to the wind model's first step. */
static void check_forecast(const char *wind) {
    char args[2048], out[512];
    snprintf(out, sizeof out, "%s/fc.nc", tmp);
    snprintf(args, sizeof args, "forecast --model %s --precip %s/A/ckpt/precip/last.ckpt --init %s "
             "--time 2020-01-01T00:00 --steps 3 --output %s --threads 1", wind, tmp, archive, out);
    int rc = run(args, "fc");
    if (!WX_CHECK(rc == 0, "forecast --precip exits 0 (got %d)", rc)) return;
    int nc, var, nd, dims[8];
    if (!WX_CHECK(nc_open(out, NC_NOWRITE, &nc) == NC_NOERR, "open %s", out)) return;
    if (WX_CHECK(nc_inq_varid(nc, "tp", &var) == NC_NOERR, "tp variable in the forecast")) {
        char units[64] = "";
        size_t ul = 0;
        nc_inq_attlen(nc, var, "units", &ul);
        if (ul < sizeof units) nc_get_att_text(nc, var, "units", units);
        WX_CHECK(!strcmp(units, "m"), "tp units 'm', got '%s'", units);
        nc_inq_varndims(nc, var, &nd);
        nc_inq_vardimid(nc, var, dims);
        size_t len[8], total = 1;
        for (int d = 0; d < nd; d++) nc_inq_dimlen(nc, dims[d], &len[d]), total *= len[d];
        float *v = wx_malloc(sizeof(float) * total);
        WX_CHECK(nc_get_var_float(nc, var, v) == NC_NOERR, "read tp");
        size_t per = total / len[0];
        int neg = 0, pos = 0;
        for (size_t i = per; i < total; i++) neg += !(v[i] >= 0), pos += v[i] > 0;
        WX_CHECK(len[0] == 4 && neg == 0 && pos > 0, "tp at leads 1..3: %d negative/NaN, %d positive "
                 "of %zu", neg, pos, total - per);
        /* lead 1 = the precip model on the wind model's first step, computed here in process
         * from the analytic toy state at 2020-01-01T00 (record 48) */
        wx_ctx *ctx = wx_ctx_create(1);
        wx_train_model *w = NULL;
        wx_precip_diag *dg = NULL;
        char pc[600];
        snprintf(pc, sizeof pc, "%s/A/ckpt/precip/last.ckpt", tmp);
        if (WX_CHECK(wx_train_model_load(wind, ctx, wx_backend_cpu(), 1, &w) == WX_OK, "load wind")) {
            const char *names[3] = {w->data.names[0], w->data.names[1], w->data.names[2]};
            if (WX_CHECK(wx_precip_diag_open(pc, ctx, wx_backend_cpu(), 1, 3, names, w->data.mean,
                                             w->data.std, &dg) == WX_OK, "diag open: %s",
                         wx_error_message())) {
                float x[3 * 512], y[3 * 512], tp1[512];
                for (int c = 0; c < 3; c++)
                    for (int q = 0; q < 512; q++)
                        x[c * 512 + q] = (float)(((double)(float)toy_value(c, 48, q / 32, q % 32) -
                                                  w->data.mean[c]) / w->data.std[c]);
                w->ops->predict(w, y, x, 1);
                wx_precip_diag_run(dg, tp1, y, 1);
                double worst = 0, mx = 0;
                for (int q = 0; q < 512; q++) {
                    double e = fabs((double)v[per + (size_t)q] - tp1[q]);
                    if (e > worst) worst = e;
                    if (tp1[q] > mx) mx = tp1[q];
                }
                printf("forecast tp lead 1 vs in process: max difference %.3g m (max %.3g m)\n", worst, mx);
                WX_CHECK(per == 512 && worst <= 1e-4 * mx, "forecast tp at lead 1 vs in-process "
                         "PrecipNet(wind(x)): max difference %.3g m (max tp %.3g m)", worst, mx);
                wx_precip_diag_close(dg);
            }
            wx_train_model_destroy(w);
        }
        wx_ctx_destroy(ctx);
        free(v);
    }
    nc_close(nc);
}

/* The precip stage data parallel (2 ranks × 2 samples vs 1 × 4): the PrecipNet's backbone views
 * the model's gradient buffer, which the trainer moves into node shared memory under MPI; the
 * losses of 10 steps must follow the one-process run within 1e-6. */
static void check_mpi(void) {
#if WX_HAVE_MPI
    char args[1024];
    double l1[16], l2[16];
    int n1 = 0, n2 = 0;
    char wind[512];
    snprintf(wind, sizeof wind, "%s/W/ckpt/pretrain/best.ckpt", tmp);
    write_dir("M1", wind);
    write_dir("M2", wind);
    const char *dirs[] = {"M1", "M2"};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "cd %s/%s && env OMP_NUM_THREADS=1 %s %s --quiet train train.yaml "
                 "--stage precip --max-steps 10 --threads 1 --metrics m.jsonl >run.out 2>run.err", tmp,
                 dirs[k], k ? "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2" : "",
                 WX_BINARY);
        int rc = system(args);
        WX_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "precip stage on %d rank(s)", k + 1);
        snprintf(args, sizeof args, "%s/%s/m.jsonl", tmp, dirs[k]);
        char *s = slurp(args);
        int *n = k ? &n2 : &n1;
        double *l = k ? l2 : l1;
        for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
            if (strstr(line, "\"phase\":\"train\"") && *n < 16) l[(*n)++] = num_after(line, "\"loss\":");
        free(s);
    }
    double worst = n1 == 10 && n2 == 10 ? 0 : INFINITY;
    for (int i = 0; i < n1 && i < n2; i++) worst = fmax(worst, fabs(l2[i] - l1[i]) / fabs(l1[i]));
    WX_CHECK(worst <= 1e-6, "precip stage, 2 ranks vs 1: 10 losses within %.3g relative (<= 1e-6)", worst);
#endif
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    WX_CHECK(toy_ext_archive_write(archive, 64, TOY_EXT_TP) == 0, "write archive: %s",
             wx_error_message());
    char wind[512], args[1024];
    snprintf(wind, sizeof wind, "%s/W/ckpt/pretrain/best.ckpt", tmp);
    write_dir("W", wind);
    write_dir("A", wind);
    write_dir("B", wind);
    snprintf(args, sizeof args, "train --quiet %s/W/train.yaml", tmp);
    if (WX_CHECK(run(args, "W") == 0, "wind pretrain")) {
        check_stage(wind);
        check_frozen_and_rmse();
        check_valid_rmse();
        check_errors();
        check_forecast(wind);
        check_mpi();
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
