/* wxcast train with GraphCast on a tiny archive (tests/unit/train_toy_gc.h):
 *  - resume bit-identity through the real binary in the rollout fine-tuning stage (curriculum 1 →
 *    3 steps, one more every 2 optimizer steps, activation checkpointing on): 6 steps in one run
 *    vs 3 (--max-steps) + --resume for 3 more give byte-identical last.ckpt and best.ckpt and the
 *    same metrics; the same run with checkpointing off gives bitwise the same parameters;
 *  - the checkpoint carries what a forecast needs: DATA with diff_std per channel, the static
 *    fields (FLDS: lsm normalised by the archive statistics, surface geopotential zeros since the
 *    archive lacks it), and wx_train_model_load rebuilds a model that predicts the same numbers;
 *  - make_input's channel layout is the published one (variables sorted by name, time outer,
 *    level inner, target-time forcings last), checked channel by channel against the archive
 *    records, forcings recomputed with models/forcings.h at the times written out here;
 *  - the one-step loss equals GraphCast's loss written out here in physical units
 *    (Σ_v w_v · mean(w_lat · w_level · (out − (x_{t+6h} − x_t)/diff_std)²), out the normalised
 *    residual recovered from the prediction), relative error < 1e-4;
 *  - the gradient of the 3-step rollout loss (predictions fed back) along its own direction and a
 *    random one matches a central difference of the loss in float32 (step 1e-2 in parameter
 *    space, relative error < 2e-2; seen 8e-5 and 2e-4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/wx_rng.h"
#include "models/forcings.h"
#include "train/checkpoint.h"
#include "train/dataset.h"
#include "train/train_config.h"
#include "train/train_model.h"
#include "train_toy_gc.h"
#include "cli_check.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_train_gc_XXXXXX";

static int run(const char *args, const char *tag) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s train %s >%s/%s.out 2>%s/%s.err", WX_BINARY, args, tmp, tag, tmp, tag);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Metrics text without the timing fields. */
static char *metrics_untimed(const char *path) { return metrics_untimed_text(path); }

static void write_run_dir(const char *name, int ckpt) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", tmp, name);
    WX_CHECK(gct_write_text(path, gct_model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s/archive\n  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n"
             "seed: 5\nthreads: 1\ncheckpoint_dir: ckpt\nactivation_checkpointing: %s\n"
             "validation: {leads: [1, 2], max_samples: 4}\n"
             "pretrain:\n  steps: 4\n  batch_size: 2\n"
             "  optimizer: {lr: 3.0e-3, betas: [0.9, 0.95], weight_decay: 0.1, warmup: 1, "
             "lr_min: 1.0e-4, grad_clip: 32}\n"
             "finetune:\n  steps: 6\n  batch_size: 2\n  rollout_start: 1\n  rollout_every: 2\n"
             "  rollout_steps: 3\n  init_from: ../pre/ckpt/pretrain/best.ckpt\n"
             "  optimizer: {lr: 1.0e-3, lr_min: 1.0e-3, betas: [0.9, 0.95], weight_decay: 0.1, "
             "grad_clip: 32}\n",
             tmp, ckpt ? "true" : "false");
    snprintf(path, sizeof path, "%s/%s/train.yaml", tmp, name);
    WX_CHECK(gct_write_text(path, text) == 0, "write %s", path);
}

static void check_resume(void) {
    char args[2048], a[512], b[512];
    snprintf(args, sizeof args, "%s/pre/train.yaml --stage pretrain", tmp);
    if (!WX_CHECK(run(args, "pre") == 0, "pretrain run")) return;
    snprintf(args, sizeof args, "%s/A/train.yaml --stage finetune --metrics %s/A/m.jsonl", tmp, tmp);
    WX_CHECK(run(args, "A") == 0, "finetune: uninterrupted run");
    snprintf(args, sizeof args, "%s/B/train.yaml --stage finetune --metrics %s/B/m.jsonl "
             "--max-steps 3", tmp, tmp);
    WX_CHECK(run(args, "B1") == 0, "finetune: first half");
    snprintf(a, sizeof a, "%s/B/ckpt/finetune/last.ckpt", tmp);
    snprintf(b, sizeof b, "%s/B/half.ckpt", tmp);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp %s %s", a, b);
    WX_CHECK(system(cmd) == 0, "copy half");
    snprintf(args, sizeof args, "%s/B/train.yaml --stage finetune --metrics %s/B/m.jsonl "
             "--resume %s", tmp, tmp, a);
    WX_CHECK(run(args, "B2") == 0, "finetune: resumed half");
    const char *names[2] = {"last", "best"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/A/ckpt/finetune/%s.ckpt", tmp, names[i]);
        snprintf(b, sizeof b, "%s/B/ckpt/finetune/%s.ckpt", tmp, names[i]);
        WX_CHECK(files_equal(a, b), "finetune: %s.ckpt of the resumed run is byte-identical", names[i]);
    }
    snprintf(a, sizeof a, "%s/A/ckpt/finetune/last.ckpt", tmp);
    snprintf(b, sizeof b, "%s/B/half.ckpt", tmp);
    WX_CHECK(!files_equal(a, b), "the parameters changed after the half");
    snprintf(a, sizeof a, "%s/A/m.jsonl", tmp);
    snprintf(b, sizeof b, "%s/B/m.jsonl", tmp);
    char *ma = metrics_untimed(a), *mb = metrics_untimed(b);
    WX_CHECK(strlen(ma) > 100 && !strcmp(ma, mb), "same metrics (losses, lr, rmse) in both runs");
    /* the curriculum (rollout_start 1, every 2, up to 3) beside each training row's loss */
    for (int st = 1; st <= 6; st++) {
        char key[64], want[64];
        snprintf(key, sizeof key, "\"phase\":\"train\",\"step\":%d,", st);
        snprintf(want, sizeof want, "\"rollout_steps\":%d", 1 + (st - 1) / 2);
        const char *row = strstr(ma, key), *end = row ? strchr(row, '\n') : NULL;
        const char *got = row ? strstr(row, "\"rollout_steps\":") : NULL;
        WX_CHECK(row && got && (!end || got < end) && !strncmp(got, want, strlen(want)),
                 "metrics row of step %d: %s", st, want);
    }
    free(ma);
    free(mb);
    /* activation checkpointing off: the same parameters bit for bit */
    snprintf(args, sizeof args, "%s/C/train.yaml --stage finetune", tmp);
    WX_CHECK(run(args, "C") == 0, "finetune without checkpointing");
    wx_checkpoint ca, cc;
    snprintf(a, sizeof a, "%s/A/ckpt/finetune/last.ckpt", tmp);
    snprintf(b, sizeof b, "%s/C/ckpt/finetune/last.ckpt", tmp);
    if (WX_CHECK(wx_checkpoint_read(a, &ca) == WX_OK, "read A: %s", wx_error_message())) {
        if (WX_CHECK(wx_checkpoint_read(b, &cc) == WX_OK, "read C: %s", wx_error_message())) {
            int same = ca.ntensors == cc.ntensors && ca.ntensors > 0;
            for (int i = 0; same && i < ca.ntensors; i++)
                same = ca.t[i].size == cc.t[i].size &&
                       !memcmp(ca.t[i].data, cc.t[i].data, 4 * (size_t)ca.t[i].size);
            WX_CHECK(same, "checkpointing on/off: parameters and AdamW state bitwise identical");
            WX_CHECK(ca.st.step == 6, "6 finetune steps (%lld)", (long long)ca.st.step);
            wx_checkpoint_free(&cc);
        }
        wx_checkpoint_free(&ca);
    }
}

/* The DATA and FLDS sections of the pretrain best checkpoint. */
static void check_checkpoint_data(const wx_archive_meta *am) {
    char path[512];
    snprintf(path, sizeof path, "%s/pre/ckpt/pretrain/best.ckpt", tmp);
    wx_checkpoint ck;
    if (!WX_CHECK(wx_checkpoint_read(path, &ck) == WX_OK, "read: %s", wx_error_message())) return;
    char key[128];
    snprintf(key, sizeof key, "diff_std: %.17g", am->diff_std[2]);
    WX_CHECK(ck.data_text && strstr(ck.data_text, key) && strstr(ck.data_text, "window: 2"),
             "DATA has z500's diff_std and the window");
    int64_t hw = GCT_NLAT * GCT_NLON;
    if (WX_CHECK(ck.nfields == 2 && ck.field_h == GCT_NLAT && ck.field_w == GCT_NLON,
                 "FLDS: %d fields %lldx%lld", ck.nfields, (long long)ck.field_h, (long long)ck.field_w)) {
        double e0 = 0, e1 = 0;
        for (int j = 0; j < GCT_NLAT; j++)
            for (int i = 0; i < GCT_NLON; i++) {
                double want = (gct_value(4, 0, j, i) - am->mean[4]) / am->std[4];
                e0 = fmax(e0, fabs(ck.fields[j * GCT_NLON + i] - want));
                e1 = fmax(e1, fabs(ck.fields[hw + j * GCT_NLON + i]));
            }
        WX_CHECK(e0 < 1e-5 && e1 == 0, "statics: lsm normalised (error %g), surface z zeros (%g)", e0, e1);
    }
    wx_checkpoint_free(&ck);
}

/* Published input order for the test model (2 input times, t−6h then t):
 *   2m_temperature ×2, day_progress_cos ×2, day_progress_sin ×2, geopotential ×2×[500, 850],
 *   geopotential_at_surface, land_sea_mask, mean_sea_level_pressure ×2,
 *   toa_incident_solar_radiation ×2, then at the target time day_progress_cos, day_progress_sin,
 *   toa_incident_solar_radiation. kind: 0 state (archive channel a), 1 forcing (name), 2 static. */
typedef struct {
    int kind, a, time; /* time: −1 = t−6h, 0 = t, 1 = target */
    const char *forcing;
} slot;
static const slot layout[19] = {
    {0, 0, -1, NULL}, {0, 0, 0, NULL},
    {1, 0, -1, "day_progress_cos"}, {1, 0, 0, "day_progress_cos"},
    {1, 0, -1, "day_progress_sin"}, {1, 0, 0, "day_progress_sin"},
    {0, 2, -1, NULL}, {0, 3, -1, NULL}, {0, 2, 0, NULL}, {0, 3, 0, NULL},
    {2, -1, 0, NULL}, {2, 4, 0, NULL},
    {0, 1, -1, NULL}, {0, 1, 0, NULL},
    {1, 0, -1, "toa_incident_solar_radiation"}, {1, 0, 0, "toa_incident_solar_radiation"},
    {1, 0, 1, "day_progress_cos"}, {1, 0, 1, "day_progress_sin"},
    {1, 0, 1, "toa_incident_solar_radiation"}};

static void check_layout_and_loss(const wx_archive_meta *am, wx_train_model *m, const float *x,
                                  const wx_time *t1, int64_t t, const wx_train_loss *loss) {
    const int64_t hw = GCT_NLAT * GCT_NLON;
    double lat[GCT_NLAT], lon[GCT_NLON];
    for (int j = 0; j < GCT_NLAT; j++) lat[j] = gct_lat(j);
    for (int i = 0; i < GCT_NLON; i++) lon[i] = 11.25 * i;
    float *f = wx_malloc(sizeof(float) * (size_t)hw);
    int bad_state = 0, bad_static = 0;
    double fcorr[3] = {0};
    for (int k = 0; k < 19; k++) {
        const slot *s = &layout[k];
        const float *xc = x + k * hw;
        if (s->kind == 0 || (s->kind == 2 && s->a >= 0)) {
            int64_t rec = s->kind == 2 ? 0 : t + s->time;
            for (int p = 0; p < hw; p++) {
                double want = ((double)(float)gct_value(s->a, rec, p / GCT_NLON, p % GCT_NLON) -
                               am->mean[s->a]) / am->std[s->a];
                if (fabs(xc[p] - want) > 1e-4) {
                    if (s->kind) bad_static++;
                    else bad_state++;
                }
            }
        } else if (s->kind == 2) {
            for (int p = 0; p < hw; p++) bad_static += xc[p] != 0;
        } else {
            /* a forcing: the model's normalisation is affine, so the field must correlate
             * perfectly with the one recomputed here at the slot's time */
            wx_time when = t1[0] + (s->time - 1) * 21600;
            wx_forcing_fill(s->forcing, when, lat, GCT_NLAT, lon, GCT_NLON, f);
            double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
            for (int p = 0; p < hw; p++) {
                sa += xc[p], sb += f[p], saa += (double)xc[p] * xc[p], sbb += (double)f[p] * f[p];
                sab += (double)xc[p] * f[p];
            }
            double cov = sab / hw - sa / hw * sb / hw, va = saa / hw - sa * sa / hw / hw,
                   vb = sbb / hw - sb * sb / hw / hw;
            double r = cov / sqrt(va * vb);
            if (!(r > 1 - 1e-6)) printf("slot %d (%s at %+d): correlation %.9f\n", k, s->forcing, s->time, r);
            fcorr[s->time + 1] += r > 1 - 1e-6;
        }
    }
    WX_CHECK(bad_state == 0, "state channels in the published order (%d mismatches)", bad_state);
    WX_CHECK(bad_static == 0, "static channels (%d mismatches)", bad_static);
    WX_CHECK(fcorr[0] == 3 && fcorr[1] == 3 && fcorr[2] == 3,
             "forcings at t−6h, t and the target time where expected (%g %g %g of 3)", fcorr[0],
             fcorr[1], fcorr[2]);
    free(f);

    /* the one-step loss against GraphCast's formula in physical units */
    float *y = wx_malloc(sizeof(float) * (size_t)(GCT_NSTATE * hw));
    if (!WX_CHECK(m->ops->predict(m, y, x, 1) == WX_OK, "predict: %s", wx_error_message())) {
        free(y);
        return;
    }
    double wl[GCT_NLAT], ws = 0, d = 11.25 * M_PI / 180;
    for (int j = 0; j < GCT_NLAT; j++) {
        wl[j] = fabs(fabs(lat[j]) - 90) < 1e-9 ? sin(d / 4) * sin(d / 4) : cos(lat[j] * M_PI / 180) * sin(d / 2);
        ws += wl[j];
    }
    const double wvar[GCT_NSTATE] = {1.0, 0.1, 1.0, 1.0}, lev[GCT_NSTATE] = {1, 1, 500 / 675.0, 850 / 675.0};
    const double per[GCT_NSTATE] = {1, 1, 2, 2}; /* mean over levels */
    double want = 0;
    for (int c = 0; c < GCT_NSTATE; c++) {
        double acc = 0;
        for (int p = 0; p < hw; p++) {
            double xt = gct_value(c, t, p / GCT_NLON, p % GCT_NLON), xn = gct_value(c, t + 1, p / GCT_NLON, p % GCT_NLON);
            double yp = am->mean[c] + am->std[c] * y[c * hw + p];
            double out = (yp - (float)xt) / am->diff_std[c], r = ((float)xn - (float)xt) / am->diff_std[c];
            acc += wl[p / GCT_NLON] / ws * GCT_NLAT * lev[c] * (out - r) * (out - r);
        }
        want += wvar[c] * acc / hw / per[c];
    }
    free(y);
    double l1 = 0;
    wx_params_zero_grad(m->params);
    float *tg = wx_malloc(sizeof(float) * (size_t)(GCT_NSTATE * hw));
    for (int c = 0; c < GCT_NSTATE; c++)
        for (int p = 0; p < hw; p++)
            tg[c * hw + p] = (float)(((double)(float)gct_value(c, t + 1, p / GCT_NLON, p % GCT_NLON) -
                                      am->mean[c]) / am->std[c]);
    WX_CHECK(m->ops->loss_backward(m, loss, x, tg, t1, 1, 1, &l1) == WX_OK, "loss_backward: %s",
             wx_error_message());
    free(tg);
    WX_CHECK(fabs(l1 - want) <= 1e-4 * want, "one-step loss %.8g vs GraphCast's formula %.8g", l1, want);
}

/* Directional derivative of the 3-step rollout loss in float32. */
static void check_rollout_gradient(wx_train_model *m, const wx_train_loss *loss, const float *x,
                                   const float *tg, const wx_time *t1, int64_t b) {
    wx_params *p = m->params;
    double l0;
    wx_params_zero_grad(p);
    if (!WX_CHECK(m->ops->loss_backward(m, loss, x, tg, t1, 3, b, &l0) == WX_OK, "3-step: %s",
                  wx_error_message()))
        return;
    int64_t n = p->len;
    float *g = wx_malloc(sizeof(float) * (size_t)n), *th = wx_malloc(sizeof(float) * (size_t)n);
    float *dir = wx_malloc(sizeof(float) * (size_t)n);
    memcpy(g, p->grad, sizeof(float) * (size_t)n);
    memcpy(th, p->data, sizeof(float) * (size_t)n);
    wx_rng r;
    wx_rng_init(&r, 99, 0);
    for (int which = 0; which < 2; which++) {
        double nn = 0;
        for (int64_t i = 0; i < n; i++) {
            dir[i] = which == 0 ? g[i] : (float)wx_rng_normal(&r);
            nn += (double)dir[i] * dir[i];
        }
        double an = 0, eps = 1e-2, lp, lm;
        for (int64_t i = 0; i < n; i++) {
            dir[i] = (float)(dir[i] / sqrt(nn));
            an += (double)g[i] * dir[i];
        }
        for (int64_t i = 0; i < n; i++) p->data[i] = th[i] + (float)eps * dir[i];
        wx_params_zero_grad(p);
        m->ops->loss_backward(m, loss, x, tg, t1, 3, b, &lp);
        for (int64_t i = 0; i < n; i++) p->data[i] = th[i] - (float)eps * dir[i];
        wx_params_zero_grad(p);
        m->ops->loss_backward(m, loss, x, tg, t1, 3, b, &lm);
        memcpy(p->data, th, sizeof(float) * (size_t)n);
        double fd = (lp - lm) / (2 * eps), rel = fabs(fd - an) / fmax(fabs(an), 1e-3 * l0);
        printf("3-step rollout, %s direction: analytic %.6g, central difference %.6g (rel %.2e)\n",
               which ? "random" : "gradient", an, fd, rel);
        WX_CHECK(rel < 2e-2, "3-step rollout gradient along the %s direction: %g vs %g",
                 which ? "random" : "gradient", an, fd);
    }
    free(g), free(th), free(dir);
}

int main(void) {
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    char archive[512], path[600];
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    if (!WX_CHECK(gct_archive_write(archive, 64) == 0, "archive: %s", wx_error_message()))
        return wx_test_summary();
    const char *dirs[4] = {"pre", "A", "B", "C"};
    for (int i = 0; i < 4; i++) write_run_dir(dirs[i], i != 3);
    check_resume();

    wx_archive *ar;
    if (!WX_CHECK(wx_archive_open(archive, NULL, &ar) == WX_OK, "open: %s", wx_error_message()))
        return wx_test_summary();
    const wx_archive_meta *am = wx_archive_meta_of(ar);
    check_checkpoint_data(am);

    /* model + data through the library, as the trainer wires them */
    snprintf(path, sizeof path, "%s/A/train.yaml", tmp);
    wx_train_config c;
    wx_ctx *ctx = wx_ctx_create(1);
    if (WX_CHECK(wx_train_config_load(path, "finetune", &c) == WX_OK, "config: %s", wx_error_message())) {
        wx_yaml *my = NULL;
        wx_train_model *m = NULL;
        wx_dataset ds;
        memset(&ds, 0, sizeof ds);
        if (WX_CHECK(wx_train_model_create_ex(c.model, "", ctx, wx_backend_cpu(), 11, 2, 3, 0, &m) == WX_OK,
                     "model: %s", wx_error_message()) &&
            WX_CHECK(wx_dataset_open_model(&ds, &c, m, 2, 3) == WX_OK, "dataset: %s", wx_error_message())) {
            double mean[4], sd[4], dd[4];
            char names[4][WX_TRAIN_NAME_MAX];
            wx_train_data d;
            wx_dataset_model_data(&ds, &d, mean, sd, dd, names);
            WX_CHECK(wx_train_model_attach(m, &d) == WX_OK, "attach: %s", wx_error_message());
            wx_train_loss loss;
            wx_train_loss_init(&loss, WX_LOSS_LATW_MSE, ctx, wx_backend_cpu(), 4, GCT_NLAT, GCT_NLON,
                               ds.wlat, NULL);
            loss.kind = WX_LOSS_GRAPHCAST;
            WX_CHECK(m->ops->loss_weights(m, loss.wlat, loss.wch) == WX_OK, "weights");
            const int64_t hw = GCT_NLAT * GCT_NLON;
            float *x = wx_malloc(sizeof(float) * (size_t)(2 * 19 * hw));
            float *tg = wx_malloc(sizeof(float) * (size_t)(3 * 2 * 4 * hw));
            wx_rng order;
            wx_rng_init(&order, 1, 1);
            wx_dataset_epoch_begin(&ds, &order);
            if (WX_CHECK(wx_dataset_batch(&ds, 0, x, tg) == WX_OK, "batch: %s", wx_error_message())) {
                int64_t t = ds.train[ds.perm[0]];
                WX_CHECK(ds.t1[0] == am->start + (t + 1) * am->step, "t1 is the first target time");
                check_layout_and_loss(am, m, x, ds.t1, t, &loss);
                check_rollout_gradient(m, &loss, x, tg, ds.t1, 2);
            }
            /* the trained model from its checkpoint predicts like the trainer's */
            wx_train_model *lm = NULL;
            snprintf(path, sizeof path, "%s/A/ckpt/finetune/last.ckpt", tmp);
            if (WX_CHECK(wx_train_model_load(path, ctx, wx_backend_cpu(), 2, &lm) == WX_OK, "load: %s",
                         wx_error_message())) {
                wx_checkpoint ck;
                wx_checkpoint_read(path, &ck);
                wx_checkpoint_load(&ck, WX_CKPT_PARAM, m->params, NULL);
                wx_checkpoint_free(&ck);
                float *ya = wx_malloc(sizeof(float) * (size_t)(2 * 4 * hw));
                float *yb = wx_malloc(sizeof(float) * (size_t)(2 * 4 * hw));
                WX_CHECK(m->ops->predict(m, ya, x, 2) == WX_OK && lm->ops->predict(lm, yb, x, 2) == WX_OK,
                         "predict");
                WX_CHECK(!memcmp(ya, yb, sizeof(float) * (size_t)(2 * 4 * hw)) &&
                             lm->data.dt_s == 21600 && !strcmp(lm->data.names[2], "z500"),
                         "wx_train_model_load: same prediction, dt and channel names");
                /* loaded for prediction (no rollout steps, no gradient buffers): training is refused */
                double lv = 0;
                wx_status ts = lm->ops->loss_backward(lm, &loss, x, tg, ds.t1, 1, 2, &lv);
                WX_CHECK(ts == WX_ERR_USAGE && strstr(wx_error_message(), "prediction only"),
                         "a loaded (predict-only) model refuses loss_backward: %s", wx_error_message());
                free(ya), free(yb);
                wx_train_model_destroy(lm);
            }
            free(x), free(tg);
            wx_train_loss_free(&loss);
        }
        wx_dataset_close(&ds);
        wx_train_model_destroy(m);
        wx_yaml_free(my);
        wx_train_config_free(&c);
    }
    wx_ctx_destroy(ctx);
    wx_archive_close(ar);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
