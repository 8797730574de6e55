/* Helpers of the MPI training tests (test_mpi_*.c): the toy archive of train_toy.h, a run folder
 * with a training config, `wxcast train` under `mpirun -np N` (or plain, N = 0) with
 * OMP_NUM_THREADS=1 and a 60 s guard, and float32 buffer comparisons. Header-only. */
#ifndef MPI_RUN_H
#define MPI_RUN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/wx_timer.h"
#include "train/checkpoint.h"
#include "train_toy.h"
#include "wx_build_config.h"
#include "wx_test.h"

static char mpi_tmp[] = "/tmp/wx_mpi_XXXXXX";
static char mpi_archive[512];

/* 77 (skip) when this build has no MPI or mpirun is missing; else sets up the temp dir and the
 * toy archive and returns 0. */
__attribute__((unused)) static int mpi_setup(void) {
    if (!WX_HAVE_MPI) {
        printf("built without MPI: skipped\n");
        return 77;
    }
    if (system("mpirun --version >/dev/null 2>&1") != 0) {
        printf("mpirun not found: skipped\n");
        return 77;
    }
    if (!mkdtemp(mpi_tmp)) return 1;
    snprintf(mpi_archive, sizeof mpi_archive, "%s/archive", mpi_tmp);
    return toy_archive_write(mpi_archive, 64) == 0 ? 0 : 1;
}

/* <tmp>/<name>/{model.yaml, train.yaml}; `extra` is appended to the pretrain stage. */
__attribute__((unused)) static void mpi_write_run_dir(const char *name, const char *model_yaml,
                                                      int64_t steps, int64_t batch, const char *extra) {
    char path[1024], text[4096];
    snprintf(path, sizeof path, "%s/%s", mpi_tmp, name);
    WX_CHECK(wx_mkdir_p(path) == WX_OK, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/model.yaml", mpi_tmp, name);
    WX_CHECK(toy_write_text(path, model_yaml) == 0, "write %s", path);
    snprintf(text, sizeof text,
             "model: model.yaml\n"
             "data:\n  archive: %s\n  train_years: [2019, 2019]\n  valid_years: [2020, 2020]\n"
             "seed: 11\nthreads: 1\ncheckpoint_dir: ckpt\nlog_every: 1\n"
             "validation: {leads: [1, 2]}\n"
             "pretrain:\n  steps: %lld\n  batch_size: %lld\n"
             "  optimizer: {lr: 1.0e-3, warmup: 2, lr_min: 1.0e-5, grad_clip: 1.0, weight_decay: 0.01, "
             "betas: [0.9, 0.95]}\n%s",
             mpi_archive, (long long)steps, (long long)batch, extra ? extra : "");
    snprintf(path, sizeof path, "%s/%s/train.yaml", mpi_tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

/* Runs `[env] mpirun -np np wxcast train <args>` in <tmp>/<dir> (np 0: wxcast alone), output in
 * <tmp>/<dir>/<tag>.{out,err}. Returns the exit code (−1 if killed), *secs the wall time. */
__attribute__((unused)) static int mpi_train(int np, const char *dir, const char *env, const char *args,
                                             const char *tag, double *secs) {
    char cmd[8192], launch[256] = "";
    if (np > 0)
        snprintf(launch, sizeof launch, "mpirun --allow-run-as-root --oversubscribe --bind-to none "
                 "-np %d ", np);
    snprintf(cmd, sizeof cmd, "cd %s/%s && env OMP_NUM_THREADS=1 %s timeout -s KILL 60 %s%s train %s "
             "--threads 1 >%s.out 2>%s.err", mpi_tmp, dir, env ? env : "", launch, WX_BINARY, args,
             tag, tag);
    double t0 = wx_time_now();
    int rc = system(cmd);
    if (secs) *secs = wx_time_now() - t0;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

__attribute__((unused)) static char *mpi_slurp(const char *dir, const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", mpi_tmp, dir, file);
    char *buf = NULL;
    size_t len;
    if (wx_read_file(path, &buf, &len) != WX_OK) return wx_strdup("");
    return buf;
}

/* A raw float32 file <tmp>/<dir>/<file> (its element count in *n), NULL if missing. */
__attribute__((unused)) static float *mpi_floats(const char *dir, const char *file, int64_t *n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", mpi_tmp, dir, file);
    char *buf = NULL;
    size_t len = 0;
    *n = 0;
    if (wx_read_file(path, &buf, &len) != WX_OK) return NULL;
    *n = (int64_t)(len / sizeof(float));
    return (float *)buf;
}

/* ‖a − b‖₂ / ‖b‖₂ over n values. */
__attribute__((unused)) static double mpi_rel_l2(const float *a, const float *b, int64_t n) {
    double d = 0, r = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)b[i];
        d += e * e;
        r += (double)b[i] * (double)b[i];
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* max |a − b| / max |b|. */
__attribute__((unused)) static double mpi_rel_max(const float *a, const float *b, int64_t n) {
    double d = 0, r = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (e > d) d = e;
        if (fabs((double)b[i]) > r) r = fabs((double)b[i]);
    }
    return r > 0 ? d / r : d;
}

/* The per-step training losses of a metrics file: loss[step] for step 1..max (NaN where absent). */
__attribute__((unused)) static void mpi_losses(const char *dir, const char *file, double *loss, int max) {
    for (int i = 0; i <= max; i++) loss[i] = NAN;
    char *s = mpi_slurp(dir, file);
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "\"phase\":\"train\"")) continue;
        const char *p = strstr(line, "\"step\":"), *q = strstr(line, "\"loss\":");
        if (!p || !q) continue;
        int step = atoi(p + 7);
        if (step >= 1 && step <= max) loss[step] = atof(q + 7);
    }
    free(s);
}

__attribute__((unused)) static void mpi_cleanup(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", mpi_tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0)
        printf("could not remove %s\n", mpi_tmp);
}

#endif
