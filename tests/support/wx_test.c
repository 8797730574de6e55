#include "wx_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

int wx_test_passed = 0, wx_test_failed = 0;

int wx_test_check(int cond, const char *file, int line, const char *fmt, ...) {
    if (cond) {
        wx_test_passed++;
        return 1;
    }
    wx_test_failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "FAIL %s:%d: ", file, line);
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    va_end(ap);
    fflush(stdout);
    return 0;
}

static int close_impl(const char *what, double (*get)(const void *, int64_t), const void *a,
                      const double *b, int64_t n, double rtol, double atol, const char *file,
                      int line) {
    double scale = 0, worst = 0;
    int64_t wi = 0;
    int finite = 1;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (int64_t i = 0; i < n; i++) {
        double ai = get(a, i);
        if (!isfinite(ai)) finite = 0;
        double d = fabs(ai - b[i]);
        if (d > worst || !isfinite(ai)) { worst = isfinite(ai) ? d : INFINITY; wi = i; }
    }
    double bound = atol + rtol * scale;
    return wx_test_check(finite && worst <= bound, file, line,
                         "%s: max |diff| %.3e at [%lld] (got %.9g, want %.9g) > bound %.3e "
                         "(rtol %.1e x scale %.3e + atol %.1e)",
                         what, worst, (long long)wi, n ? get(a, wi) : 0.0, n ? b[wi] : 0.0, bound,
                         rtol, scale, atol);
}
static double get_f32(const void *p, int64_t i) { return ((const float *)p)[i]; }
static double get_f64(const void *p, int64_t i) { return ((const double *)p)[i]; }

int wx_test_close_f32(const char *what, const float *a, const double *b, int64_t n, double rtol,
                      double atol, const char *file, int line) {
    return close_impl(what, get_f32, a, b, n, rtol, atol, file, line);
}
int wx_test_close_f64(const char *what, const double *a, const double *b, int64_t n, double rtol,
                      double atol, const char *file, int line) {
    return close_impl(what, get_f64, a, b, n, rtol, atol, file, line);
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void wx_test_fill_uniform(double *x, int64_t n, uint64_t seed, double lo, double hi) {
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * ((splitmix(&s) >> 11) * 0x1.0p-53);
}

void wx_test_f64_to_f32(float *dst, const double *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i];
}

static int fd_one(const char *what, const char *kind, wx_test_loss_fn loss, void *ud, double *x,
                  const double *grad, int64_t n, const double *v, double eps, double rtol,
                  const char *file, int line) {
    double *xp = malloc(sizeof(double) * n), *xm = malloc(sizeof(double) * n);
    double analytic = 0, vnorm = 0, gnorm = 0;
    for (int64_t i = 0; i < n; i++) {
        xp[i] = x[i] + eps * v[i];
        xm[i] = x[i] - eps * v[i];
        analytic += grad[i] * v[i];
        vnorm += v[i] * v[i];
        gnorm += grad[i] * grad[i];
    }
    double numeric = (loss(ud, xp) - loss(ud, xm)) / (2 * eps);
    free(xp);
    free(xm);
    /* Relative to the size the directional derivative could have (|g|·|v|), so that directions
     * nearly orthogonal to the gradient are not held to an impossible relative bound. */
    double scale = sqrt(gnorm * vnorm) + 1e-300;
    return wx_test_check(fabs(numeric - analytic) <= rtol * scale, file, line,
                         "%s: finite difference (%s): numeric %.12g vs analytic %.12g "
                         "(|diff|/scale %.3e > %.1e)",
                         what, kind, numeric, analytic, fabs(numeric - analytic) / scale, rtol);
}

int wx_test_fd_check(const char *what, wx_test_loss_fn loss, void *ud, double *x, const double *grad,
                     int64_t n, int dirs, const int64_t *spots, int nspots, double eps, double rtol,
                     const char *file, int line) {
    int ok = 1;
    double *v = malloc(sizeof(double) * n);
    for (int d = 0; d < dirs; d++) {
        wx_test_fill_uniform(v, n, 1000 + d, -1, 1);
        ok &= fd_one(what, "random direction", loss, ud, x, grad, n, v, eps, rtol, file, line);
    }
    for (int s = 0; s < nspots; s++) {
        for (int64_t i = 0; i < n; i++) v[i] = 0;
        v[spots[s]] = 1;
        char kind[64];
        snprintf(kind, sizeof kind, "spot %lld", (long long)spots[s]);
        /* A single coordinate: compare against the scale of the whole gradient. */
        double numeric, analytic = grad[spots[s]];
        double old = x[spots[s]];
        x[spots[s]] = old + eps;
        double lp = loss(ud, x);
        x[spots[s]] = old - eps;
        double lm = loss(ud, x);
        x[spots[s]] = old;
        numeric = (lp - lm) / (2 * eps);
        double gmax = 0;
        for (int64_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(grad[i]));
        ok &= wx_test_check(fabs(numeric - analytic) <= rtol * (gmax + 1e-300), file, line,
                            "%s: finite difference (%s): numeric %.12g vs analytic %.12g", what,
                            kind, numeric, analytic);
    }
    free(v);
    return ok;
}

int wx_test_summary(void) {
    printf("%d passed, %d failed\n", wx_test_passed, wx_test_failed);
    return wx_test_failed ? 1 : 0;
}

double wx_test_rel_diff_f32(const float *a, const float *ref, int64_t n) {
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)ref[i]));
        s = fmax(s, fabs((double)ref[i]));
    }
    return s > 0 ? d / s : d;
}
