/* Serial GELU passes over one range (ops/dense.c), internal to src/ops: the fused ops
 * (ops/dense_fused.c) run them inside their own parallel regions, with the same bits as
 * gelu_forward / gelu_backward. */
#ifndef WX_DENSE_ACT_H
#define WX_DENSE_ACT_H

#include <stdint.h>

/* y(n) = GELU(x(n)) */
void wx_dense_gelu_range(float *y, const float *x, int64_t n);
void wx_dense_gelu_range_f64(double *y, const double *x, int64_t n);
/* dx(n) = dy(n)·GELU'(x(n)) (dx may alias dy) */
void wx_dense_gelu_grad_range(float *dx, const float *dy, const float *x, int64_t n);
void wx_dense_gelu_grad_range_f64(double *dx, const double *dy, const double *x, int64_t n);
/* dx(n) = dy(n)·GELU'(x(n)) and y(n) = GELU(x(n)) in one pass (dx may alias dy; same bits as
 * the two functions above) */
void wx_dense_gelu_both_range(float *dx, float *y, const float *dy, const float *x, int64_t n);
void wx_dense_gelu_both_range_f64(double *dx, double *y, const double *dy, const double *x,
                                  int64_t n);

#endif
