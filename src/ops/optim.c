/* TEMPORARY scaffold for the optim family: replaced by the real implementation. */
#include <math.h>
#include "ops/wx_ops.h"
#include "ops/wx_real.h"
#define WXR wx_real
#define WXF WX_FN

wx_status WXF(wx_cpu_adamw_forward)(wx_ctx *ctx, WXR *param, WXR *m, WXR *v, const WXR *grad,
                                    int64_t n, double lr, double beta1, double beta2, double eps,
                                    double weight_decay, int64_t step) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_grad_norm_forward)(wx_ctx *ctx, double *sumsq, const WXR *g, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_scale_forward)(wx_ctx *ctx, WXR *x, int64_t n, double s) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

#ifndef WX_REAL_DOUBLE
double wx_clip_grad_norm(wx_ctx *ctx, float *const *g, const int64_t *l, int n, double m) { return 0; }
double wx_lr_warmup_cosine(int64_t s, int64_t w, int64_t t, double a, double b) { return a; }
#endif
