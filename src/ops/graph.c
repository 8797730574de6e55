/* TEMPORARY scaffold for the graph family: replaced by the real implementation. */
#include <math.h>
#include "ops/wx_ops.h"
#include "ops/wx_real.h"
#define WXR wx_real
#define WXF WX_FN

wx_status WXF(wx_cpu_gather_rows_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const int32_t *idx,
                                          int64_t e, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_gather_rows_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const int32_t *idx,
                                           int64_t e, int64_t n, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_segment_sum_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const int32_t *row_ptr,
                                          const int32_t *perm, int64_t n, int64_t e, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}

wx_status WXF(wx_cpu_segment_sum_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy,
                                           const int32_t *row_ptr, const int32_t *perm, int64_t n,
                                           int64_t e, int64_t d) {
    return wx_error_set(WX_ERR_RUN, "op not built yet");
}
