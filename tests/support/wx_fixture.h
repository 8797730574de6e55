/* Reader for reference fixtures written by tests/ref/wxfixture.py.
 *
 * File layout (little-endian): magic "WXFX", u32 version (1), u32 tensor count, then per tensor:
 * u32 name length, name bytes (no NUL), u32 ndim, i64 dims[ndim], f64 data[prod(dims)].
 * All tensors are float64 (integer index tensors are stored as exact float64 values). */
#ifndef WX_FIXTURE_H
#define WX_FIXTURE_H

#include <stdint.h>

typedef struct {
    char *name;
    int ndim;
    int64_t dims[8];
    int64_t size;
    double *data;
} wx_fixture_tensor;

typedef struct {
    int count;
    wx_fixture_tensor *t;
} wx_fixture;

/* Loads WX_FIXTURE_DIR/<name>.wxfx. Returns NULL (and prints why) when missing or malformed. */
wx_fixture *wx_fixture_load(const char *name);
/* The tensor called `name`; aborts the test binary with a message if absent (a broken fixture). */
const wx_fixture_tensor *wx_fixture_get(const wx_fixture *f, const char *name);
/* Copy of a tensor as float32 / int32 (caller frees). */
float *wx_fixture_f32(const wx_fixture *f, const char *name);
int32_t *wx_fixture_i32(const wx_fixture *f, const char *name);
/* A scalar stored as a 1-element tensor. */
double wx_fixture_scalar(const wx_fixture *f, const char *name);
void wx_fixture_free(wx_fixture *f);
/* max|a − b| / max|b| (the absolute error when b vanishes): the error relative to the reference
 * tensor's scale, so tiny entries of a large tensor are not held to a relative bound. */
double wx_fixture_rel_err(const float *a, const double *b, int64_t n);

#endif
