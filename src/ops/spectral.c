/* TEMPORARY scaffold for the spectral family: replaced by the real implementation. */
#include <math.h>
#include "ops/wx_ops.h"
#include "ops/wx_real.h"
#define WXR wx_real
#define WXF WX_FN

wx_status WXF(wx_cpu_rfft2_forward)(wx_ctx *ctx, WXR *X, const WXR *x, int64_t b, int64_t h,
                                    int64_t w, int64_t c) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_rfft2_backward)(wx_ctx *ctx, WXR *dx, const WXR *dX, int64_t b, int64_t h,
                                     int64_t w, int64_t c) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_irfft2_forward)(wx_ctx *ctx, WXR *y, const WXR *X, int64_t b, int64_t h,
                                     int64_t w, int64_t c) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_irfft2_backward)(wx_ctx *ctx, WXR *dX, const WXR *dy, int64_t b, int64_t h,
                                      int64_t w, int64_t c) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_afno_filter_forward)(wx_ctx *ctx, WXR *Y, WXR *saved, const WXR *X,
                                          const WXR *w1, const WXR *b1, const WXR *w2,
                                          const WXR *b2, const uint8_t *mask, int64_t b, int64_t h,
                                          int64_t wf, int64_t c, int64_t nb, int64_t factor,
                                          double lambda) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_afno_filter_backward)(wx_ctx *ctx, WXR *dX, WXR *dw1, WXR *db1, WXR *dw2,
                                           WXR *db2, const WXR *dY, const WXR *saved, const WXR *X,
                                           const WXR *w1, const WXR *w2, const uint8_t *mask,
                                           int64_t b, int64_t h, int64_t wf, int64_t c, int64_t nb,
                                           int64_t factor, double lambda) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

void WX_FN(wx_cpu_fft_cache_free)(wx_ctx *ctx) { (void)ctx; }

#ifndef WX_REAL_DOUBLE
int64_t wx_afno_filter_saved_len(int64_t b, int64_t m, int64_t c, int64_t f) { return b*m*c*(2*f+2); }
#endif
