/* The trainer learns: on the toy archive (train_toy.h), where the next state is the current one
 * advected by one grid column, 30 AdamW steps of the tiny FourCastNet through wx_train_run must
 * lower the training loss (mean of the last 5 steps below 0.6 × mean of the first 5) and the
 * validation loss, the metrics file must hold one train object per step, and the final validation
 * loss must beat persistence: its relative-L2 loss over the same 15 validation samples is computed
 * here from the analytic fields (0.47; the trained model reaches about 0.34). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/trainer.h"
#include "train_toy.h"
#include "wx_test.h"

int main(void) {
    char tmp[] = "/tmp/wx_train_learn_XXXXXX";
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    char path[512], text[4096], archive[512], metrics[512];
    snprintf(archive, sizeof archive, "%s/archive", tmp);
    WX_CHECK(toy_archive_write(archive, 64) == 0, "archive: %s", wx_error_message());
    snprintf(path, sizeof path, "%s/model.yaml", tmp);
    toy_write_text(path, toy_model_yaml);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data: {archive: archive, train_years: [2019, 2019], valid_years: [2020, 2020]}\n"
             "seed: 1\nthreads: 1\n"
             "validation: {leads: [1]}\n"
             "pretrain:\n  steps: 30\n  batch_size: 4\n"
             "  optimizer: {lr: 3.0e-3, warmup: 3, lr_min: 1.0e-4, grad_clip: 1.0}\n");
    snprintf(path, sizeof path, "%s/train.yaml", tmp);
    toy_write_text(path, text);
    snprintf(metrics, sizeof metrics, "%s/m.jsonl", tmp);

    wx_train_config c;
    if (!WX_CHECK(wx_train_config_load(path, NULL, &c) == WX_OK, "config: %s", wx_error_message()))
        return wx_test_summary();
    wx_train_opts o = {.metrics = metrics};
    wx_train_summary sum;
    WX_CHECK(wx_train_run(&c, &o, &sum) == WX_OK, "train: %s", wx_error_message());
    wx_train_config_free(&c);
    WX_CHECK(sum.step == 30 && sum.first_step == 0, "30 steps done (%lld)", (long long)sum.step);

    char *s = NULL;
    size_t len;
    double loss[64];
    int n = 0;
    double valid[8];
    int nv = 0;
    if (WX_CHECK(wx_read_file(metrics, &s, &len) == WX_OK, "metrics")) {
        for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
            const char *p = strstr(line, "\"loss\":");
            if (!p) continue;
            if (strstr(line, "\"phase\":\"train\"") && n < 64) loss[n++] = atof(p + 7);
            if (strstr(line, "\"phase\":\"valid\"") && nv < 8) valid[nv++] = atof(p + 7);
        }
        free(s);
    }
    WX_CHECK(n == 30, "30 train lines, got %d", n);
    WX_CHECK(nv == 3, "validations at steps 11, 22, 30: got %d", nv);
    if (n == 30 && nv == 3) {
        double first = 0, last = 0;
        for (int i = 0; i < 5; i++) first += loss[i] / 5, last += loss[25 + i] / 5;
        /* Persistence: ‖x_t − x_{t+1}‖ / ‖x_{t+1}‖ in normalised units, averaged over the validation
         * samples (records 48..62: 2020, with t + 1 inside the archive). */
        wx_archive *a;
        double pers = 0;
        if (WX_CHECK(wx_archive_open(archive, NULL, &a) == WX_OK, "open: %s", wx_error_message())) {
            const wx_archive_meta *m = wx_archive_meta_of(a);
            for (int t = 48; t < 63; t++) {
                double num = 0, den = 0;
                for (int ch = 0; ch < 3; ch++)
                    for (int j = 0; j < 16; j++)
                        for (int i = 0; i < 32; i++) {
                            double x0 = ((float)toy_value(ch, t, j, i) - m->mean[ch]) / m->std[ch];
                            double x1 = ((float)toy_value(ch, t + 1, j, i) - m->mean[ch]) / m->std[ch];
                            num += (x0 - x1) * (x0 - x1), den += x1 * x1;
                        }
                pers += sqrt(num / den) / 15;
            }
            wx_archive_close(a);
        }
        printf("loss: first 5 steps %.4f, last 5 %.4f; valid %.4f -> %.4f -> %.4f; persistence %.4f\n",
               first, last, valid[0], valid[1], valid[2], pers);
        WX_CHECK(last < 0.6 * first, "training loss falls: %.4f -> %.4f", first, last);
        WX_CHECK(valid[2] < valid[0], "validation loss falls: %.4f -> %.4f", valid[0], valid[2]);
        WX_CHECK(valid[2] < 0.9 * pers, "beats persistence: %.4f vs %.4f", valid[2], pers);
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (wx_test_failed == 0 && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return wx_test_summary();
}
