/* The forecast rollout (infer/rollout.h) runs a GraphCast checkpoint through the train_model.h
 * contract: on the toy archive (train_toy_gc.h), a checkpoint from 2 training steps; two initial
 * times rolled out together for 2 steps from the archive records at t − 6 h and t must equal the
 * model driven by hand (wx_train_model_load, states normalised here with the checkpoint's
 * statistics, make_input → predict → next_input → predict) within 1e-5 in normalised units; the
 * t − 6 h state must matter (changing it changes the first prediction); the physical output is the
 * prediction de-normalised; the initial times come from the archive records; and the heap in use
 * does not grow from step 2 to step 40 (only the window of states is kept). Forecast files
 * (wx_forecast_run_ext): a forecast from two one-time files (--init at t, --init-prev at t − 6 h,
 * written from the archive) equals the archive-initialised one exactly; one from a forecast file
 * alone starts at its second time (the window = its first two times) with lead 0 = that file's
 * lead 1; --init-prev with an archive is a usage error; a bred 3-member ensemble (rollout steps,
 * edits of the newest state, a restarted window) runs and writes a mean file that moved. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>

#include "infer/forecast.h"
#include "infer/rollout.h"
#include "io/archive.h"
#include "ops/wx_ctx.h"
#include "train/train_model.h"
#include "train/trainer.h"
#include "train_toy_gc.h"
#include "wx_test.h"

#define B 2
#define HW (GCT_NLAT * GCT_NLON)

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}


/* Variable z (time, level, lat, lon) of a forecast file, ntime·2 levels·HW values; 0 on success. */
static int read_z(const char *path, float *z, size_t *ntime) {
    int nc, v, d[4];
    if (nc_open(path, NC_NOWRITE, &nc) != NC_NOERR) return -1;
    int ok = nc_inq_varid(nc, "z", &v) == NC_NOERR && nc_inq_vardimid(nc, v, d) == NC_NOERR &&
             nc_inq_dimlen(nc, d[0], ntime) == NC_NOERR && nc_get_var_float(nc, v, z) == NC_NOERR;
    nc_close(nc);
    return ok ? 0 : -1;
}

static wx_status forecast(const char *ckpt, const char *init, const char *prev, wx_time t,
                          int has_time, int64_t steps, const char *out) {
    wx_forecast_opts fo = {.model = ckpt, .init = init, .time = t, .steps = steps, .output = out,
                           .threads = 1};
    wx_forecast_ext x;
    memset(&x, 0, sizeof x);
    x.has_time = has_time, x.init_prev = prev;
    return wx_forecast_run_ext(&fo, &x);
}

int main(void) {
    char tmp[] = "/tmp/wx_rollout_gc_XXXXXX";
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    char path[512], text[2048], archive[512];
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    WX_CHECK(gct_archive_write(archive, 64) == 0, "archive: %s", wx_error_message());
    snprintf(path, sizeof path, "%s/model.yaml", tmp);
    gct_write_text(path, gct_model_yaml);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data: {archive: archive, train_years: [2019, 2019], valid_years: [2020, 2020]}\n"
             "seed: 5\nthreads: 1\ncheckpoint_dir: ck\nvalidation: {leads: [1], max_samples: 2}\n"
             "pretrain:\n  steps: 2\n  batch_size: 2\n");
    snprintf(path, sizeof path, "%s/train.yaml", tmp);
    gct_write_text(path, text);
    wx_train_config c;
    if (!WX_CHECK(wx_train_config_load(path, NULL, &c) == WX_OK, "config: %s", wx_error_message()))
        return wx_test_summary();
    wx_train_opts o;
    memset(&o, 0, sizeof o);
    wx_train_summary sum;
    int trained = WX_CHECK(wx_train_run(&c, &o, &sum) == WX_OK, "train: %s", wx_error_message());
    wx_train_config_free(&c);
    if (!trained) return wx_test_summary();

    wx_rollout *r = NULL;
    if (!WX_CHECK(wx_rollout_open(sum.last_path, 1, B, &r) == WX_OK, "open: %s", wx_error_message()))
        return wx_test_summary();
    WX_CHECK(!strcmp(r->family, "graphcast") && r->window == 2 && r->builder, "graphcast, window 2");
    WX_CHECK(r->nin == GCT_NSTATE && r->nout == GCT_NSTATE && r->h == GCT_NLAT && r->w == GCT_NLON,
             "4 state channels on 17x32 (%d, %d, %lldx%lld)", r->nin, r->nout, (long long)r->h,
             (long long)r->w);
    wx_archive *ar = NULL;
    wx_archive_opts ao = {.threads = 1, .check_crc = 1};
    WX_CHECK(wx_archive_open(archive, &ao, &ar) == WX_OK, "archive open: %s", wx_error_message());
    const wx_archive_meta *m = wx_archive_meta_of(ar);
    int map_in[GCT_NSTATE], map_out[GCT_NSTATE];
    WX_CHECK(wx_rollout_match_archive(r, m, map_in, map_out) == WX_OK, "match: %s", wx_error_message());
    /* (window, B, nchan, P): records 9, 19 (t − 6 h) then 10, 20 (t) */
    const size_t R = (size_t)GCT_NCH * HW;
    float *rec = malloc(sizeof(float) * R * 2 * B);
    int64_t idx[2 * B] = {9, 19, 10, 20};
    WX_CHECK(wx_archive_read(ar, idx, 2 * B, rec) == WX_OK, "read: %s", wx_error_message());
    wx_time t0[B] = {m->start + 10 * m->step, m->start + 20 * m->step};
    const size_t n = (size_t)B * GCT_NSTATE * HW;
    float *y1 = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
    float *phys = malloc(sizeof(float) * n);
    WX_CHECK(wx_rollout_set_state(r, rec, m, map_in, t0, B) == WX_OK, "set: %s", wx_error_message());
    WX_CHECK(wx_rollout_step(r) == WX_OK, "step 1: %s", wx_error_message());
    memcpy(y1, r->y, sizeof(float) * n);
    WX_CHECK(max_diff(r->x, r->y, n) == 0, "the prediction becomes the state");
    WX_CHECK(wx_rollout_step(r) == WX_OK, "step 2: %s", wx_error_message());
    memcpy(y2, r->y, sizeof(float) * n);
    wx_rollout_output(r, phys);

    /* by hand */
    wx_ctx *ctx = wx_ctx_create(1);
    wx_train_model *tm = NULL;
    WX_CHECK(wx_train_model_load(sum.last_path, ctx, wx_backend_cpu(), B, &tm) == WX_OK, "load: %s",
             wx_error_message());
    if (tm) {
        const size_t nx = (size_t)B * (size_t)tm->in_channels * HW;
        float *states = malloc(sizeof(float) * n * 2), *xa = malloc(sizeof(float) * nx);
        float *xb = malloc(sizeof(float) * nx), *h1 = malloc(sizeof(float) * n), *h2 = malloc(sizeof(float) * n);
        for (int w = 0; w < 2; w++)
            for (int q = 0; q < B; q++)
                for (int ch = 0; ch < GCT_NSTATE; ch++) {
                    int a = -1;
                    for (int k = 0; k < m->nchan; k++)
                        if (!strcmp(m->chan[k].name, tm->data.names[ch])) a = k;
                    WX_CHECK(a >= 0, "state %s in the archive", tm->data.names[ch]);
                    const float *src = rec + ((size_t)(w * B + q) * GCT_NCH + (size_t)(a < 0 ? 0 : a)) * HW;
                    float *dst = states + ((size_t)(w * B + q) * GCT_NSTATE + (size_t)ch) * HW;
                    for (int p = 0; p < HW; p++)
                        dst[p] = (float)((src[p] - tm->data.mean[ch]) / tm->data.std[ch]);
                }
        wx_time t1[B] = {t0[0] + 21600, t0[1] + 21600}, t2[B] = {t0[0] + 43200, t0[1] + 43200};
        WX_CHECK(wx_train_model_make_input(tm, xa, states, t1, B) == WX_OK, "make_input");
        WX_CHECK(tm->ops->predict(tm, h1, xa, B) == WX_OK, "predict 1");
        WX_CHECK(wx_train_model_next_input(tm, xb, xa, h1, t2, B) == WX_OK, "next_input");
        WX_CHECK(tm->ops->predict(tm, h2, xb, B) == WX_OK, "predict 2");
        double d1 = max_diff(y1, h1, n), d2 = max_diff(y2, h2, n), dd = max_diff(y1, y2, n);
        printf("rollout vs by hand: step 1 %.3g, step 2 %.3g (steps differ by %.3g)\n", d1, d2, dd);
        WX_CHECK(d1 <= 1e-5 && d2 <= 1e-5, "rollout = by hand: %g, %g", d1, d2);
        WX_CHECK(dd > 1e-3, "the two steps differ (%g)", dd);
        double dp = 0;
        for (size_t i = 0; i < n; i++) {
            int ch = (int)((i / HW) % GCT_NSTATE);
            dp = fmax(dp, fabs(phys[i] - (h2[i] * tm->data.std[ch] + tm->data.mean[ch])) /
                              tm->data.std[ch]);
        }
        WX_CHECK(dp < 1e-5, "physical output = prediction x std + mean (%g std)", dp);
        free(states), free(xa), free(xb), free(h1), free(h2);
    }
    wx_train_model_destroy(tm);
    wx_ctx_destroy(ctx);

    /* the t − 6 h state is read: shift it by 1000 units and the first prediction moves */
    for (size_t p = 0; p < R * B; p++) rec[p] += 1000.0f;
    WX_CHECK(wx_rollout_set_state(r, rec, m, map_in, t0, B) == WX_OK, "set again");
    WX_CHECK(wx_rollout_step(r) == WX_OK, "step");
    double dw = max_diff(y1, r->y, n);
    printf("first prediction moved by %.3g when t-6h changed\n", dw);
    WX_CHECK(dw > 1e-3, "the earlier state changes the prediction (%g)", dw);
    WX_CHECK(wx_rollout_set_state(r, rec, m, map_in, NULL, B) != WX_OK, "graphcast needs the times");

    /* flat memory: the heap in use after step 2 and after step 40 */
    WX_CHECK(wx_rollout_set_state(r, rec, m, map_in, t0, B) == WX_OK, "set");
    size_t used2 = 0;
    int ok = 1;
    for (int k = 1; k <= 40 && ok; k++) {
        ok = wx_rollout_step(r) == WX_OK;
        if (k == 2) used2 = mallinfo2().uordblks;
    }
    size_t used40 = mallinfo2().uordblks;
    printf("heap in use: %zu bytes after step 2, %zu after step 40\n", used2, used40);
    WX_CHECK(ok, "40 steps");
    WX_CHECK(used40 <= used2 + 4096, "no growth with the lead (%zu -> %zu)", used2, used40);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(r->y[i])) {
            WX_CHECK(0, "finite after 40 steps");
            break;
        }
    /* forecast files: the window from files */
    char fa[600], fb[600], fc[600], fd[600], fe[600];
    snprintf(fa, sizeof fa, "%s/a.nc", tmp), snprintf(fb, sizeof fb, "%s/b.nc", tmp);
    snprintf(fc, sizeof fc, "%s/c.nc", tmp), snprintf(fd, sizeof fd, "%s/d.nc", tmp);
    snprintf(fe, sizeof fe, "%s/e.nc", tmp);
    const wx_time t = t0[0];
    WX_CHECK(forecast(sum.last_path, archive, NULL, t - 21600, 1, 0, fa) == WX_OK, "a: %s", wx_error_message());
    WX_CHECK(forecast(sum.last_path, archive, NULL, t, 1, 0, fb) == WX_OK, "b: %s", wx_error_message());
    WX_CHECK(forecast(sum.last_path, archive, NULL, t, 1, 2, fc) == WX_OK, "c: %s", wx_error_message());
    WX_CHECK(forecast(sum.last_path, fb, fa, 0, 0, 2, fd) == WX_OK, "d: %s", wx_error_message());
    WX_CHECK(forecast(sum.last_path, fc, NULL, 0, 0, 1, fe) == WX_OK, "e: %s", wx_error_message());
    WX_CHECK(forecast(sum.last_path, archive, fa, t, 1, 1, fe) == WX_ERR_USAGE, "--init-prev with an archive");
    const size_t Z = 2 * HW; /* one time of z: 2 levels */
    float *zc = malloc(sizeof(float) * 3 * Z), *zd = malloc(sizeof(float) * 3 * Z), *ze = malloc(sizeof(float) * 2 * Z);
    size_t nc_ = 0, nd = 0, ne = 0;
    if (WX_CHECK(read_z(fc, zc, &nc_) == 0 && read_z(fd, zd, &nd) == 0 && read_z(fe, ze, &ne) == 0,
                 "read z") && WX_CHECK(nc_ == 3 && nd == 3 && ne == 2, "times %zu %zu %zu", nc_, nd, ne)) {
        double dd = max_diff(zc, zd, 3 * Z), d0 = max_diff(ze, zc + Z, Z), d1 = max_diff(ze + Z, zc + 2 * Z, Z);
        printf("files: init+prev vs archive %.3g; from c.nc: lead 0 vs c lead 1 %.3g, lead 1 vs c lead 2 %.3g\n",
               dd, d0, d1);
        WX_CHECK(dd == 0, "--init + --init-prev = the archive forecast (%g)", dd);
        WX_CHECK(d0 == 0, "a forecast file's first two times: lead 0 = its lead 1 (%g)", d0);
        WX_CHECK(d1 < 1.0, "and lead 1 = its lead 2 up to the float rounding of the file (%g)", d1);
    }
    free(zc), free(zd), free(ze);
    /* a bred ensemble (steps, then edits of the newest state and a restart of the window) runs
     * and writes its mean and spread; its control's lead 0 is the archive's */
    {
        char fens[600];
        snprintf(fens, sizeof fens, "%s/ens.nc", tmp);
        wx_forecast_opts fo = {.model = sum.last_path, .init = archive, .time = t, .steps = 2,
                               .output = fens, .threads = 1};
        wx_forecast_ext x;
        memset(&x, 0, sizeof x);
        x.has_time = 1, x.members = 3, x.perturbation = WX_PERTURB_BRED, x.seed = 4;
        WX_CHECK(wx_forecast_run_ext(&fo, &x) == WX_OK, "bred ensemble: %s", wx_error_message());
        float *zm = malloc(sizeof(float) * 3 * Z), *zb = malloc(sizeof(float) * 3 * Z);
        size_t nm = 0, nb = 0;
        if (WX_CHECK(x.mean_path[0] && read_z(x.mean_path, zm, &nm) == 0 && read_z(fb, zb, &nb) == 0 &&
                     nm == 3, "mean file with 3 times")) {
            double dm = max_diff(zm + 2 * Z, zb, Z); /* members spread: the mean moved from t */
            WX_CHECK(isfinite(dm) && dm > 0, "ensemble mean at +12 h differs from the analysis (%g)", dm);
        }
        free(zm), free(zb);
    }
    wx_rollout_close(r);
    wx_archive_close(ar);
    free(rec), free(y1), free(y2), free(phys);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
