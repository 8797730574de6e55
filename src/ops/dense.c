/* TEMPORARY scaffold for the dense family: replaced by the real implementation. */
#include <math.h>
#include "ops/wx_ops.h"
#include "ops/wx_real.h"
#define WXR wx_real
#define WXF WX_FN

wx_status WXF(wx_cpu_linear_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const WXR *w, const WXR *b,
                                     int64_t n, int64_t in, int64_t out) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_linear_backward)(wx_ctx *ctx, WXR *dx, WXR *dw, WXR *db, const WXR *dy,
                                      const WXR *x, const WXR *w, int64_t n, int64_t in, int64_t out) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_layernorm_forward)(wx_ctx *ctx, WXR *y, WXR *mean, WXR *rstd, const WXR *x,
                                        const WXR *gamma, const WXR *beta, int64_t n, int64_t c,
                                        double eps) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_layernorm_backward)(wx_ctx *ctx, WXR *dx, WXR *dgamma, WXR *dbeta,
                                         const WXR *dy, const WXR *x, const WXR *mean,
                                         const WXR *rstd, const WXR *gamma, int64_t n, int64_t c) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_gelu_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_gelu_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const WXR *x, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_silu_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_silu_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const WXR *x, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_relu_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_relu_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const WXR *x, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_softshrink_forward)(wx_ctx *ctx, WXR *y, const WXR *x, int64_t n,
                                         double lambda) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_softshrink_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const WXR *x,
                                          int64_t n, double lambda) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_add_forward)(wx_ctx *ctx, WXR *y, const WXR *a, const WXR *b, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_add_backward)(wx_ctx *ctx, WXR *da, WXR *db, const WXR *dy, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_concat_forward)(wx_ctx *ctx, WXR *y, const WXR *const *xs, const int64_t *cs,
                                     int k, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_concat_backward)(wx_ctx *ctx, WXR *const *dxs, const WXR *dy,
                                      const int64_t *cs, int k, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_patch_embed_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const WXR *w,
                                          const WXR *bias, int64_t b, int64_t cin, int64_t h,
                                          int64_t wd, int64_t p, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_patch_embed_backward)(wx_ctx *ctx, WXR *dx, WXR *dw, WXR *dbias, const WXR *dy,
                                           const WXR *x, const WXR *w, int64_t b, int64_t cin,
                                           int64_t h, int64_t wd, int64_t p, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_unpatchify_forward)(wx_ctx *ctx, WXR *out, const WXR *y, int64_t b, int64_t c,
                                         int64_t hp, int64_t wp, int64_t p) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_unpatchify_backward)(wx_ctx *ctx, WXR *dy, const WXR *dout, int64_t b,
                                          int64_t c, int64_t hp, int64_t wp, int64_t p) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_pos_embed_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const WXR *pos,
                                        int64_t b, int64_t n, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_pos_embed_backward)(wx_ctx *ctx, WXR *dx, WXR *dpos, const WXR *dy, int64_t b,
                                         int64_t n, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}
