/* TEMPORARY scaffold for the loss family: replaced by the real implementation. */
#include <math.h>
#include "ops/wx_ops.h"
#include "ops/wx_real.h"
#define WXR wx_real
#define WXF WX_FN

wx_status WXF(wx_cpu_mse_latw_forward)(wx_ctx *ctx, WXR *loss, const WXR *pred, const WXR *target,
                                       const WXR *wlat, const WXR *wch, int64_t b, int64_t c,
                                       int64_t h, int64_t w) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_mse_latw_backward)(wx_ctx *ctx, WXR *dpred, double dloss, const WXR *pred,
                                        const WXR *target, const WXR *wlat, const WXR *wch,
                                        int64_t b, int64_t c, int64_t h, int64_t w) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_rel_l2_forward)(wx_ctx *ctx, WXR *loss, const WXR *pred, const WXR *target,
                                     int64_t b, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_rel_l2_backward)(wx_ctx *ctx, WXR *dpred, double dloss, const WXR *pred,
                                      const WXR *target, int64_t b, int64_t n) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}
