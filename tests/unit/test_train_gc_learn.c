/* GraphCast learns through the trainer: on the advected toy archive (train_toy_gc.h), where the
 * next state follows from the last two, AdamW steps of a tiny GraphCast through wx_train_run must
 * lower the training loss (mean of the last 5 steps below 0.5 × mean of the first 5) and the
 * validation loss, and the trained model must beat persistence on the held-out year: its
 * validation RMSE (from the metrics file) below 0.7 × the persistence RMSE at 6 h and 0.8 × at
 * 12 h (a two-step rollout through next_input), for every channel, persistence being computed
 * here from the analytic fields with cell-area weights written out in this file. Seen: loss 3.50
 * → 0.69; RMSE/persistence 0.45–0.54 at 6 h, 0.46–0.63 at 12 h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/trainer.h"
#include "train_toy_gc.h"
#include "wx_test.h"

/* Persistence RMSE of channel c at lead l (steps) over the validation initial times t0..t1,
 * weights: the band between the cell edges (±5.625° around each row, clipped at the poles). */
static double persistence_rmse(int c, int lead, int64_t t0, int64_t t1) {
    double w[GCT_NLAT], ws = 0;
    for (int j = 0; j < GCT_NLAT; j++) {
        double up = fmin(90, gct_lat(j) + 5.625), lo = fmax(-90, gct_lat(j) - 5.625);
        w[j] = sin(up * M_PI / 180) - sin(lo * M_PI / 180);
        ws += w[j];
    }
    double acc = 0;
    for (int64_t t = t0; t <= t1; t++) {
        double mse = 0;
        for (int j = 0; j < GCT_NLAT; j++)
            for (int i = 0; i < GCT_NLON; i++) {
                double d = (double)(float)gct_value(c, t, j, i) - (double)(float)gct_value(c, t + lead, j, i);
                mse += w[j] / ws * d * d / GCT_NLON;
            }
        acc += mse;
    }
    return sqrt(acc / (double)(t1 - t0 + 1));
}

int main(void) {
    char tmp[] = "/tmp/wx_train_gc_learn_XXXXXX";
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    char path[512], text[4096], archive[512], metrics[512];
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    WX_CHECK(gct_archive_write(archive, 64) == 0, "archive: %s", wx_error_message());
    snprintf(path, sizeof path, "%s/model.yaml", tmp);
    gct_write_text(path, gct_model_yaml);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data: {archive: archive, train_years: [2019, 2019], valid_years: [2020, 2020]}\n"
             "seed: 3\nthreads: 1\n"
             "validation: {leads: [1, 2]}\n"
             "pretrain:\n  steps: 40\n  batch_size: 4\n"
             "  optimizer: {lr: 1.0e-2, betas: [0.9, 0.95], weight_decay: 0.1, warmup: 4, "
             "lr_min: 1.0e-4, grad_clip: 32}\n");
    snprintf(path, sizeof path, "%s/train.yaml", tmp);
    gct_write_text(path, text);
    snprintf(metrics, sizeof metrics, "%s/m.jsonl", tmp);

    wx_train_config c;
    if (!WX_CHECK(wx_train_config_load(path, NULL, &c) == WX_OK, "config: %s", wx_error_message()))
        return wx_test_summary();
    wx_train_opts o;
    memset(&o, 0, sizeof o);
    o.metrics = metrics;
    wx_train_summary sum;
    WX_CHECK(wx_train_run(&c, &o, &sum) == WX_OK, "train: %s", wx_error_message());
    wx_train_config_free(&c);
    WX_CHECK(sum.step == 40, "40 steps done (%lld)", (long long)sum.step);

    char *s = NULL;
    size_t len;
    double loss[64], valid[8], rmse[8][2][GCT_NSTATE];
    int n = 0, nv = 0;
    if (WX_CHECK(wx_read_file(metrics, &s, &len) == WX_OK, "metrics")) {
        for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
            const char *p = strstr(line, "\"loss\":");
            if (!p) continue;
            if (strstr(line, "\"phase\":\"train\"") && n < 64) loss[n++] = atof(p + 7);
            if (strstr(line, "\"phase\":\"valid\"") && nv < 8) {
                for (int l = 0; l < 2; l++)
                    for (int ch = 0; ch < GCT_NSTATE; ch++) {
                        char key[64];
                        snprintf(key, sizeof key, "\"rmse.%s.%dh\":", gct_names[ch], 6 * (l + 1));
                        const char *q = strstr(line, key);
                        rmse[nv][l][ch] = q ? atof(q + strlen(key)) : NAN;
                    }
                valid[nv++] = atof(p + 7);
            }
        }
        free(s);
    }
    WX_CHECK(n == 40, "40 train lines, got %d", n);
    WX_CHECK(nv >= 2, "validations: got %d", nv);
    if (n == 40 && nv >= 2) {
        double first = 0, last = 0;
        for (int i = 0; i < 5; i++) first += loss[i] / 5, last += loss[35 + i] / 5;
        printf("loss: first 5 steps %.4f, last 5 %.4f; valid %.4f -> %.4f (%d validations)\n", first,
               last, valid[0], valid[nv - 1], nv);
        WX_CHECK(last < 0.5 * first, "training loss falls: %.4f -> %.4f", first, last);
        WX_CHECK(valid[nv - 1] < valid[0], "validation loss falls: %.4f -> %.4f", valid[0],
                 valid[nv - 1]);
        /* validation: 2020-01-01T00 is record 48; samples with t−1 ≥ 48 and t + 2 ≤ 63 */
        for (int ch = 0; ch < GCT_NSTATE; ch++)
            for (int l = 0; l < 2; l++) {
                double pers = persistence_rmse(ch, l + 1, 49, 61), got = rmse[nv - 1][l][ch];
                printf("%s +%dh: model %.4g, persistence %.4g (ratio %.3f)\n", gct_names[ch],
                       6 * (l + 1), got, pers, got / pers);
                WX_CHECK(got < (l == 0 ? 0.7 : 0.8) * pers, "%s at %dh beats persistence: %g vs %g",
                         gct_names[ch], 6 * (l + 1), got, pers);
            }
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
