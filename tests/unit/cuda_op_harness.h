/* The GPU-vs-CPU op harness of the cuda-labelled op tests (test_cuda_ops.c, test_cuda_fused.c):
 * host random data, device inputs checked unchanged after each case, device outputs between NaN-
 * poisoned guard regions fetched after each of two runs, and the comparisons (within rtol of the
 * largest |CPU value|, two GPU runs bit for bit, or bit for bit against the CPU). Include it inside
 * `#if WX_HAVE_CUDA` after defining GUARD; it defines the file-scope ctx / cpu / cu the tests set. */
#ifndef CUDA_OP_HARNESS_H
#define CUDA_OP_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"
#include "wx_test.h"

static wx_ctx *ctx;
static const wx_backend *cpu, *cu;

/* ---- host data ------------------------------------------------------------------------------- */

static float *rnd(int64_t n, uint64_t seed, double lo, double hi) {
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    float *f = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    wx_test_fill_uniform(d, n, seed, lo, hi);
    wx_test_f64_to_f32(f, d, n);
    free(d);
    return f;
}

static float *dup(const float *a, int64_t n) {
    float *b = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    memcpy(b, a, sizeof(float) * (size_t)n);
    return b;
}

static float *zeros(int64_t n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(float)); }

static int cuda_ok(wx_status s, const char *what) {
    return WX_CHECK(s == WX_OK, "%s: %s", what, wx_error_message());
}

/* ---- device inputs: copied in, checked unchanged at the end of each case ------------------- */

typedef struct {
    void *dev, *host;
    size_t bytes;
    const char *name;
} dev_input;

static dev_input inputs[64];
static int ninputs;

static void *dev_in(const void *host, size_t bytes, const char *name) {
    WX_ASSERT(ninputs < 64);
    dev_input *in = &inputs[ninputs++];
    in->bytes = bytes;
    in->name = name;
    in->host = malloc(bytes ? bytes : 1);
    memcpy(in->host, host, bytes);
    WX_ASSERT(wx_cuda_malloc(&in->dev, bytes) == WX_OK);
    WX_ASSERT(wx_cuda_copy_to_device(in->dev, host, bytes) == WX_OK);
    return in->dev;
}

static void inputs_check_free(const char *op) {
    for (int i = 0; i < ninputs; i++) {
        dev_input *in = &inputs[i];
        void *back = malloc(in->bytes ? in->bytes : 1);
        if (cuda_ok(wx_cuda_copy_to_host(back, in->dev, in->bytes), "copy input back"))
            WX_CHECK(memcmp(back, in->host, in->bytes) == 0, "%s: input %s was modified", op,
                     in->name);
        free(back);
        free(in->host);
        wx_cuda_free(in->dev);
    }
    ninputs = 0;
}

/* ---- device outputs: guarded, poisoned, fetched once per run ---------------------------------- */

static const uint32_t poison_bits = 0x7fc5a5a5u; /* a quiet NaN with a recognisable payload */

typedef struct {
    const char *name;
    int64_t n;          /* floats in the body */
    float *base, *dev;  /* device: base = front guard, dev = body */
    const float *init;  /* body before each run (accumulating outputs), or NULL = poison */
    float *got[2];      /* host copies of the body after run 0 and run 1 */
} dev_output;

static dev_output outputs[32];
static int noutputs;

static dev_output *dev_out(const char *name, int64_t n, const float *init) {
    WX_ASSERT(noutputs < 32);
    dev_output *o = &outputs[noutputs++];
    memset(o, 0, sizeof *o);
    o->name = name;
    o->n = n;
    o->init = init;
    WX_ASSERT(wx_cuda_malloc((void **)&o->base, sizeof(float) * (size_t)(n + 2 * GUARD)) == WX_OK);
    o->dev = o->base + GUARD;
    o->got[0] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    o->got[1] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    return o;
}

static void outputs_poison(void) {
    for (int i = 0; i < noutputs; i++) {
        dev_output *o = &outputs[i];
        int64_t total = o->n + 2 * GUARD;
        float *h = malloc(sizeof(float) * (size_t)total);
        for (int64_t j = 0; j < total; j++) memcpy(&h[j], &poison_bits, sizeof(float));
        if (o->init) memcpy(h + GUARD, o->init, sizeof(float) * (size_t)o->n);
        WX_ASSERT(wx_cuda_copy_to_device(o->base, h, sizeof(float) * (size_t)total) == WX_OK);
        free(h);
    }
}

static void outputs_fetch(int rep, const char *op) {
    cuda_ok(wx_cuda_ctx_synchronize(ctx), "synchronize after the op");
    for (int i = 0; i < noutputs; i++) {
        dev_output *o = &outputs[i];
        int64_t total = o->n + 2 * GUARD;
        float *h = malloc(sizeof(float) * (size_t)total);
        if (cuda_ok(wx_cuda_copy_to_host(h, o->base, sizeof(float) * (size_t)total), "copy back")) {
            int bad = 0;
            for (int64_t j = 0; j < GUARD; j++) {
                bad += memcmp(&h[j], &poison_bits, sizeof(float)) != 0;
                bad += memcmp(&h[GUARD + o->n + j], &poison_bits, sizeof(float)) != 0;
            }
            WX_CHECK(bad == 0, "%s: %s: %d guard values overwritten (run %d)", op, o->name, bad, rep);
            memcpy(o->got[rep], h + GUARD, sizeof(float) * (size_t)o->n);
        }
        free(h);
    }
}

static void outputs_free(void) {
    for (int i = 0; i < noutputs; i++) {
        wx_cuda_free(outputs[i].base);
        free(outputs[i].got[0]);
        free(outputs[i].got[1]);
    }
    noutputs = 0;
}

/* GPU result of run 0 vs the CPU's within rtol·max|cpu|, and run 0 vs run 1 bit for bit. */
static void expect(const dev_output *o, const float *cpu_val, double rtol) {
    double *ref = malloc(sizeof(double) * (size_t)(o->n > 0 ? o->n : 1));
    for (int64_t i = 0; i < o->n; i++) ref[i] = cpu_val[i];
    WX_CHECK_CLOSE_F32(o->name, o->got[0], ref, o->n, rtol, 0.0);
    WX_CHECK(memcmp(o->got[0], o->got[1], sizeof(float) * (size_t)o->n) == 0,
             "%s: two GPU runs differ bitwise", o->name);
    free(ref);
}

/* As expect(), and equal to the CPU bit for bit (same summation order, or pure data movement). */
__attribute__((unused)) static void expect_exact(const dev_output *o, const float *cpu_val) {
    expect(o, cpu_val, 0.0);
    WX_CHECK(memcmp(o->got[0], cpu_val, sizeof(float) * (size_t)o->n) == 0,
             "%s: not bitwise equal to the CPU", o->name);
}

static void case_end(const char *op) {
    inputs_check_free(op);
    outputs_free();
}

/* Two GPU runs of `body` with fresh poison; results fetched after each. */
#define GPU_RUNS(op, ...)                           \
    for (int rep_ = 0; rep_ < 2; rep_++) {          \
        outputs_poison();                           \
        __VA_ARGS__;                                \
        outputs_fetch(rep_, op);                    \
    }

#endif
