/* The training loss behind wx_train_loss (train_model.h): latitude/channel-weighted MSE or relative
 * L2 through the backend's loss ops, step losses kept in backend memory and fetched together. */
#include "train/train_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void wx_train_loss_init(wx_train_loss *l, wx_loss_kind kind, wx_ctx *ctx, const wx_backend *be,
                        int64_t c, int64_t h, int64_t w, const double *wlat_area,
                        const double *weights) {
    memset(l, 0, sizeof *l);
    l->kind = kind, l->ctx = ctx, l->be = be, l->c = c, l->h = h, l->w = w;
    l->wlat = wx_malloc(sizeof(float) * (size_t)h);
    l->wch = wx_malloc(sizeof(float) * (size_t)c);
    for (int64_t j = 0; j < h; j++) l->wlat[j] = (float)wlat_area[j];
    for (int64_t i = 0; i < c; i++) l->wch[i] = weights ? (float)weights[i] : 1.0f;
    /* A failed allocation leaves NULL: loss_dev / queue report it (the message is set). */
    l->slots = wx_backend_alloc(be, ctx, sizeof(float) * WX_TRAIN_LOSS_SLOTS, "loss values");
    if (be->on_device) {
        l->dwlat = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)h, "loss latitude weights");
        l->dwch = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)c, "loss channel weights");
        l->shadow = wx_calloc((size_t)(h + c), sizeof(float)); /* uploaded at the first use */
        l->shadow[0] = NAN;                                  /* never equal: forces it */
    }
}

void wx_train_loss_free(wx_train_loss *l) {
    if (l->be) {
        l->be->mem_free(l->ctx, l->slots);
        if (l->be->on_device) {
            l->be->mem_free(l->ctx, l->dwlat);
            l->be->mem_free(l->ctx, l->dwch);
        }
    }
    free(l->shadow);
    free(l->wlat);
    free(l->wch);
    memset(l, 0, sizeof *l);
}

/* The weights the ops read: the host arrays, or their device copies, uploaded again only when the
 * host arrays changed since the last upload (a blocking copy per loss call would stall the
 * device's queue twice per rollout step). */
static wx_status loss_dev(const wx_train_loss *l, const float **wl, const float **wc) {
    *wl = l->wlat, *wc = l->wch;
    if (!l->slots) return WX_ERR_RUN; /* message set at init */
    if (!l->be->on_device) return WX_OK;
    if (!l->dwlat || !l->dwch) return WX_ERR_RUN;
    const size_t bh = sizeof(float) * (size_t)l->h, bc = sizeof(float) * (size_t)l->c;
    if (memcmp(l->shadow, l->wlat, bh) || memcmp(l->shadow + l->h, l->wch, bc)) {
        WX_TRY(l->be->copy_h2d(l->ctx, l->dwlat, l->wlat, bh));
        WX_TRY(l->be->copy_h2d(l->ctx, l->dwch, l->wch, bc));
        memcpy(l->shadow, l->wlat, bh);
        memcpy(l->shadow + l->h, l->wch, bc);
    }
    *wl = l->dwlat, *wc = l->dwch;
    return WX_OK;
}

wx_status wx_train_loss_queue(const wx_train_loss *l, int64_t slot, const float *pred,
                              const float *target, int64_t b) {
    WX_ASSERT(slot >= 0 && slot < WX_TRAIN_LOSS_SLOTS);
    const float *wl, *wc;
    WX_TRY(loss_dev(l, &wl, &wc));
    float *out = l->slots + slot;
    if (l->kind == WX_LOSS_REL_L2)
        return l->be->rel_l2_forward(l->ctx, out, pred, target, b, l->c * l->h * l->w);
    return l->be->mse_latw_forward(l->ctx, out, pred, target, wl, wc, b, l->c, l->h, l->w);
}

wx_status wx_train_loss_fetch(const wx_train_loss *l, int64_t n, double *sum) {
    WX_ASSERT(n >= 0 && n <= WX_TRAIN_LOSS_SLOTS);
    float v[WX_TRAIN_LOSS_SLOTS];
    const float *src = l->slots;
    if (l->be->on_device && n > 0) {
        WX_TRY(l->be->copy_d2h(l->ctx, v, l->slots, sizeof(float) * (size_t)n));
        src = v;
    }
    double total = 0; /* in step order, as the per-step sum it replaces */
    for (int64_t i = 0; i < n; i++) total += src[i];
    *sum = total;
    return WX_OK;
}

wx_status wx_train_loss_value(const wx_train_loss *l, double *loss, const float *pred,
                              const float *target, int64_t b) {
    WX_TRY(wx_train_loss_queue(l, 0, pred, target, b));
    return wx_train_loss_fetch(l, 1, loss);
}

wx_status wx_train_loss_grad(const wx_train_loss *l, float *dpred, double dloss, const float *pred,
                             const float *target, int64_t b) {
    if (l->kind == WX_LOSS_REL_L2)
        return l->be->rel_l2_backward(l->ctx, dpred, dloss, pred, target, b, l->c * l->h * l->w);
    const float *wl, *wc;
    WX_TRY(loss_dev(l, &wl, &wc));
    return l->be->mse_latw_backward(l->ctx, dpred, dloss, pred, target, wl, wc, b, l->c, l->h,
                                    l->w);
}
