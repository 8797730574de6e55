/* LayerNorm row kernels for ops/dense.c (contract: ops/wx_ln_rows.h). Compiled twice (float32
 * and float64) through ops/wx_real.h.
 *
 * Sums are in double over 8 fixed lanes (two 4-double vectors, lane j mod 8, then one fixed
 * combining tree), written with GCC vector types so that the baseline build (two SSE2 registers
 * per vector) and the AVX2 build (one register) do the same operations in the same order: same
 * bits on every x86-64 machine, any thread count (each row is one thread's). No FMA is enabled in
 * either, so nothing is contracted. */
#include <math.h>
#include <string.h>

#include "ops/wx_ln_rows.h"
#include "ops/wx_real.h"

#define WXR wx_real

/* The 32-byte vector helpers below are always inlined, so no call passes one through the ABI that
 * GCC warns about for non-AVX builds. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef double ln_v4d __attribute__((vector_size(32)));
#ifndef WX_REAL_DOUBLE
typedef float ln_v4f __attribute__((vector_size(16)));
#endif

/* 4 consecutive elements as doubles; st4 stores 4 doubles rounded to the working precision. */
static inline __attribute__((always_inline)) ln_v4d ld4(const WXR *p) {
#ifdef WX_REAL_DOUBLE
    ln_v4d v;
    memcpy(&v, p, sizeof v);
    return v;
#else
    ln_v4f f;
    memcpy(&f, p, sizeof f);
    return __builtin_convertvector(f, ln_v4d);
#endif
}

static inline __attribute__((always_inline)) void st4(WXR *p, ln_v4d v) {
#ifdef WX_REAL_DOUBLE
    memcpy(p, &v, sizeof v);
#else
    ln_v4f f = __builtin_convertvector(v, ln_v4f);
    memcpy(p, &f, sizeof f);
#endif
}

static inline __attribute__((always_inline)) double hsum(ln_v4d a, ln_v4d b) {
    return ((a[0] + b[0]) + (a[1] + b[1])) + ((a[2] + b[2]) + (a[3] + b[3]));
}

static inline __attribute__((always_inline)) ln_v4d splat(double v) {
    return (ln_v4d){v, v, v, v};
}

/* Rows [r0, r1): y = (x − mean)·rstd·gamma + beta; two passes in double for mean and variance
 * (the one-pass E[x²]−E[x]² loses digits when |mean| ≫ std). */
#define LN_FWD_BODY                                                                            \
    const int64_t c8 = c / 8 * 8;                                                              \
    for (int64_t r = r0; r < r1; r++) {                                                        \
        const WXR *xr = x + r * c;                                                             \
        WXR *yr = y + r * c;                                                                   \
        ln_v4d a0 = splat(0), a1 = splat(0);                                                   \
        double t = 0;                                                                          \
        for (int64_t j = 0; j < c8; j += 8) a0 += ld4(xr + j), a1 += ld4(xr + j + 4);          \
        for (int64_t j = c8; j < c; j++) t += xr[j];                                           \
        double mu = (hsum(a0, a1) + t) / (double)c;                                            \
        ln_v4d m = splat(mu);                                                                  \
        a0 = splat(0), a1 = splat(0), t = 0;                                                   \
        for (int64_t j = 0; j < c8; j += 8) {                                                  \
            ln_v4d d0 = ld4(xr + j) - m, d1 = ld4(xr + j + 4) - m;                             \
            a0 += d0 * d0, a1 += d1 * d1;                                                      \
        }                                                                                      \
        for (int64_t j = c8; j < c; j++) t += (xr[j] - mu) * (xr[j] - mu);                     \
        double rs = 1.0 / sqrt((hsum(a0, a1) + t) / (double)c + eps);                          \
        ln_v4d s = splat(rs);                                                                  \
        for (int64_t j = 0; j < c8; j += 4)                                                    \
            st4(yr + j, (ld4(xr + j) - m) * s * ld4(gamma + j) + ld4(beta + j));               \
        for (int64_t j = c8; j < c; j++) yr[j] = (WXR)((xr[j] - mu) * rs * gamma[j] + beta[j]); \
        mean[r] = (WXR)mu;                                                                     \
        rstd[r] = (WXR)rs;                                                                     \
    }

/* Rows [r0, r1): with g = dy·gamma and x̂ = (x − mean)·rstd,
 * dx = rstd·(g − mean(g) − x̂·mean(g·x̂)). */
#define LN_BWD_BODY                                                                            \
    const int64_t c8 = c / 8 * 8;                                                              \
    for (int64_t r = r0; r < r1; r++) {                                                        \
        const WXR *xr = x + r * c, *dyr = dy + r * c;                                          \
        WXR *dxr = dx + r * c;                                                                 \
        double mu = mean[r], rs = rstd[r];                                                     \
        ln_v4d m = splat(mu), s = splat(rs);                                                   \
        ln_v4d g0 = splat(0), g1 = splat(0), h0 = splat(0), h1 = splat(0);                     \
        double tg = 0, th = 0;                                                                 \
        for (int64_t j = 0; j < c8; j += 8) {                                                  \
            ln_v4d ga = ld4(dyr + j) * ld4(gamma + j);                                         \
            ln_v4d gb = ld4(dyr + j + 4) * ld4(gamma + j + 4);                                 \
            g0 += ga, g1 += gb;                                                                \
            h0 += ga * ((ld4(xr + j) - m) * s), h1 += gb * ((ld4(xr + j + 4) - m) * s);        \
        }                                                                                      \
        for (int64_t j = c8; j < c; j++) {                                                     \
            double g = (double)dyr[j] * gamma[j];                                              \
            tg += g;                                                                           \
            th += g * ((xr[j] - mu) * rs);                                                     \
        }                                                                                      \
        double sg = (hsum(g0, g1) + tg) / (double)c, sgx = (hsum(h0, h1) + th) / (double)c;    \
        ln_v4d vg = splat(sg), vx = splat(sgx);                                                \
        for (int64_t j = 0; j < c8; j += 4) {                                                  \
            ln_v4d g = ld4(dyr + j) * ld4(gamma + j);                                          \
            st4(dxr + j, s * (g - vg - ((ld4(xr + j) - m) * s) * vx));                         \
        }                                                                                      \
        for (int64_t j = c8; j < c; j++) {                                                     \
            double g = (double)dyr[j] * gamma[j];                                              \
            dxr[j] = (WXR)(rs * (g - sg - ((xr[j] - mu) * rs) * sgx));                         \
        }                                                                                      \
    }

#define LN_FWD_ARGS                                                                            \
    (WXR *y, WXR *mean, WXR *rstd, const WXR *x, const WXR *gamma, const WXR *beta, int64_t r0, \
     int64_t r1, int64_t c, double eps)
#define LN_BWD_ARGS                                                                            \
    (WXR *dx, const WXR *dy, const WXR *x, const WXR *mean, const WXR *rstd, const WXR *gamma, \
     int64_t r0, int64_t r1, int64_t c)

static void ln_fwd_base LN_FWD_ARGS { LN_FWD_BODY }
static void ln_bwd_base LN_BWD_ARGS { LN_BWD_BODY }
__attribute__((target("avx2"))) static void ln_fwd_avx2 LN_FWD_ARGS { LN_FWD_BODY }
__attribute__((target("avx2"))) static void ln_bwd_avx2 LN_BWD_ARGS { LN_BWD_BODY }

void WX_FN(wx_ln_rows_forward)(WXR *y, WXR *mean, WXR *rstd, const WXR *x, const WXR *gamma,
                               const WXR *beta, int64_t r0, int64_t r1, int64_t c, double eps) {
    if (__builtin_cpu_supports("avx2"))
        ln_fwd_avx2(y, mean, rstd, x, gamma, beta, r0, r1, c, eps);
    else
        ln_fwd_base(y, mean, rstd, x, gamma, beta, r0, r1, c, eps);
}

void WX_FN(wx_ln_rows_backward)(WXR *dx, const WXR *dy, const WXR *x, const WXR *mean,
                                const WXR *rstd, const WXR *gamma, int64_t r0, int64_t r1,
                                int64_t c) {
    if (__builtin_cpu_supports("avx2"))
        ln_bwd_avx2(dx, dy, x, mean, rstd, gamma, r0, r1, c);
    else
        ln_bwd_base(dx, dy, x, mean, rstd, gamma, r0, r1, c);
}
