/* LayerNorm row kernels (ops/layernorm_rows.c), internal to src/ops: rows [r0, r1) of an (N, C)
 * matrix, run by one thread. Same bits with or without AVX2 (chosen at run time). */
#ifndef WX_LN_ROWS_H
#define WX_LN_ROWS_H

#include <stdint.h>

/* y, x (N,C); mean, rstd (N) written; gamma, beta (C) */
void wx_ln_rows_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma,
                        const float *beta, int64_t r0, int64_t r1, int64_t c, double eps);
void wx_ln_rows_forward_f64(double *y, double *mean, double *rstd, const double *x,
                            const double *gamma, const double *beta, int64_t r0, int64_t r1,
                            int64_t c, double eps);
/* dx (N,C) overwritten from dy, x (N,C), mean, rstd (N), gamma (C) */
void wx_ln_rows_backward(float *dx, const float *dy, const float *x, const float *mean,
                         const float *rstd, const float *gamma, int64_t r0, int64_t r1, int64_t c);
void wx_ln_rows_backward_f64(double *dx, const double *dy, const double *x, const double *mean,
                             const double *rstd, const double *gamma, int64_t r0, int64_t r1,
                             int64_t c);

#endif
