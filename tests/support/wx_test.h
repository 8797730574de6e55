/* Minimal test harness. Each test binary counts checks and ends with wx_test_summary(), which
 * prints "N passed, N failed" on its own line and returns the exit code (0 only if none failed). */
#ifndef WX_TEST_H
#define WX_TEST_H

#include <stdint.h>
#include <stdio.h>

extern int wx_test_passed, wx_test_failed;

/* Prints a FAIL line with the location and message when cond is false. Returns cond. */
int wx_test_check(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define WX_CHECK(cond, ...) wx_test_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Compares arrays: passes when max|a−b| ≤ atol + rtol·max|b| (a single scale for the whole
 * tensor, so tiny entries of a large tensor are not held to a relative bound). Prints the worst
 * index on failure. Returns 1 on pass. */
int wx_test_close_f32(const char *what, const float *a, const double *b, int64_t n, double rtol,
                      double atol, const char *file, int line);
int wx_test_close_f64(const char *what, const double *a, const double *b, int64_t n, double rtol,
                      double atol, const char *file, int line);
#define WX_CHECK_CLOSE_F32(what, a, b, n, rtol, atol) \
    wx_test_close_f32(what, a, b, n, rtol, atol, __FILE__, __LINE__)
#define WX_CHECK_CLOSE_F64(what, a, b, n, rtol, atol) \
    wx_test_close_f64(what, a, b, n, rtol, atol, __FILE__, __LINE__)

/* Directional finite-difference check in double: compares <grad, v> with
 * (L(x + eps·v) − L(x − eps·v)) / (2·eps) for `dirs` random directions v (seeded), and also along
 * the unit vectors of the listed `spots` indices. loss(ud, x) must not modify x. */
typedef double (*wx_test_loss_fn)(void *ud, const double *x);
int wx_test_fd_check(const char *what, wx_test_loss_fn loss, void *ud, double *x, const double *grad,
                     int64_t n, int dirs, const int64_t *spots, int nspots, double eps, double rtol,
                     const char *file, int line);
#define WX_CHECK_FD(what, loss, ud, x, grad, n, dirs, spots, nspots, eps, rtol) \
    wx_test_fd_check(what, loss, ud, x, grad, n, dirs, spots, nspots, eps, rtol, __FILE__, __LINE__)

/* Deterministic test data: uniform in [lo, hi) from a fixed-seed generator. */
void wx_test_fill_uniform(double *x, int64_t n, uint64_t seed, double lo, double hi);
void wx_test_f64_to_f32(float *dst, const double *src, int64_t n);
/* Largest |a − ref| over the largest |ref| (the largest |a − ref| when ref is all 0). */
double wx_test_rel_diff_f32(const float *a, const float *ref, int64_t n);

int wx_test_summary(void);

#endif
