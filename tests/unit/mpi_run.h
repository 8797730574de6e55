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
#include "train/distributed.h"
#include "train_toy.h"
#include "wx_build_config.h"
#include "wx_test.h"

static char mpi_tmp[] = "/tmp/wx_mpi_XXXXXX";
static char mpi_archive[512];

/* 77 (skip) when this build has no MPI or mpirun is missing; else sets up the temp dir and the
 * toy archive (64 records by `write`: toy_archive_write or another toy's) and returns 0. */
__attribute__((unused)) static int mpi_setup(int (*write)(const char *dir, int64_t count)) {
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
    return write(mpi_archive, 64) == 0 ? 0 : 1;
}

/* <tmp>/<name>/{model.yaml, train.yaml} with learning rate lr and clipping norm clip (YAML
 * numbers); `extra` is appended to the pretrain stage. */
__attribute__((unused)) static void mpi_write_run_dir_opt(const char *name, const char *model_yaml,
                                                          int64_t steps, int64_t batch, const char *lr,
                                                          const char *clip, const char *extra) {
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
             "  optimizer: {lr: %s, warmup: 2, lr_min: 1.0e-5, grad_clip: %s, weight_decay: 0.01, "
             "betas: [0.9, 0.95]}\n%s",
             mpi_archive, (long long)steps, (long long)batch, lr, clip, extra ? extra : "");
    snprintf(path, sizeof path, "%s/%s/train.yaml", mpi_tmp, name);
    WX_CHECK(toy_write_text(path, text) == 0, "write %s", path);
}

/* <tmp>/<name>/{model.yaml, train.yaml}; `extra` is appended to the pretrain stage. */
__attribute__((unused)) static void mpi_write_run_dir(const char *name, const char *model_yaml,
                                                      int64_t steps, int64_t batch, const char *extra) {
    mpi_write_run_dir_opt(name, model_yaml, steps, batch, "1.0e-3", "1.0", extra);
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
/* The value of metric `key` (e.g. "\"loss\":") of every training step 1..max of a metrics file
 * (NAN where missing). */
__attribute__((unused)) static void mpi_metric(const char *dir, const char *file, const char *key,
                                               double *v, int max) {
    for (int i = 0; i <= max; i++) v[i] = NAN;
    char *s = mpi_slurp(dir, file);
    size_t kl = strlen(key);
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "\"phase\":\"train\"")) continue;
        const char *p = strstr(line, "\"step\":"), *q = strstr(line, key);
        if (!p || !q) continue;
        int step = atoi(p + 7);
        if (step >= 1 && step <= max) v[step] = atof(q + kl);
    }
    free(s);
}

__attribute__((unused)) static void mpi_losses(const char *dir, const char *file, double *loss, int max) {
    mpi_metric(dir, file, "\"loss\":", loss, max);
}

/* Every rank's dump <dir>/dump/<what>.rank<r> (WXCAST_DEBUG_DUMP) has the same bytes. */
__attribute__((unused)) static int mpi_same_bits(const char *dir, const char *what, int np) {
    int64_t n0, n;
    char f[64];
    snprintf(f, sizeof f, "dump/%s.rank0", what);
    float *a = mpi_floats(dir, f, &n0);
    int ok = a != NULL && n0 > 0;
    for (int r = 1; ok && r < np; r++) {
        snprintf(f, sizeof f, "dump/%s.rank%d", what, r);
        float *b = mpi_floats(dir, f, &n);
        ok = b && n == n0 && !memcmp(a, b, sizeof(float) * (size_t)n);
        free(b);
    }
    free(a);
    return ok;
}

/* Rank 0's dump of `what` in dir a vs dir b: relative L2 difference (inf if missing). */
__attribute__((unused)) static double mpi_dump_diff(const char *a, const char *b, const char *what) {
    char f[64];
    snprintf(f, sizeof f, "dump/%s.rank0", what);
    int64_t na, nb;
    float *x = mpi_floats(a, f, &na), *y = mpi_floats(b, f, &nb);
    double d = x && y && na == nb && na > 0 ? mpi_rel_l2(x, y, na) : INFINITY;
    if (x && y && na == nb)
        printf("  %s %s vs %s: rel L2 %.3g, rel max %.3g, %s\n", what, a, b, d, mpi_rel_max(x, y, na),
               memcmp(x, y, sizeof(float) * (size_t)na) ? "not bitwise" : "bitwise equal");
    free(x);
    free(y);
    return d;
}

/* mpi_train with WXCAST_DEBUG_DUMP=<tmp>/<dir>/dump; prints the time, and stderr on failure. */
__attribute__((unused)) static int mpi_run_dumped_env(const char *dir, int np, const char *extra_env,
                                                      const char *args, const char *tag) {
    char env[1400], path[1024];
    snprintf(path, sizeof path, "%s/%s/dump", mpi_tmp, dir);
    wx_mkdir_p(path);
    snprintf(env, sizeof env, "WXCAST_DEBUG_DUMP=%s %s", path, extra_env ? extra_env : "");
    double secs;
    int rc = mpi_train(np, dir, env, args, tag, &secs);
    printf("%s/%s: %d rank(s), exit %d, %.1f s\n", dir, tag, np ? np : 1, rc, secs);
    if (rc != 0) {
        char f[64];
        snprintf(f, sizeof f, "%s.err", tag);
        char *e = mpi_slurp(dir, f);
        printf("%s\n", e);
        free(e);
    }
    return rc;
}

/* mpi_run_dumped_env without extra environment. */
__attribute__((unused)) static int mpi_run_dumped(const char *dir, int np, const char *args, const char *tag) {
    return mpi_run_dumped_env(dir, np, NULL, args, tag);
}

__attribute__((unused)) static void mpi_cleanup(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", mpi_tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0)
        printf("could not remove %s\n", mpi_tmp);
}

#endif
