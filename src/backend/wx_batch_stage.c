#include "backend/wx_batch_stage.h"

#include <string.h>

wx_status wx_batch_stage_init(wx_batch_stage *s, const wx_backend *be, wx_ctx *ctx, int64_t nx,
                              int64_t nt) {
    memset(s, 0, sizeof *s);
    s->be = be, s->ctx = ctx, s->nx = nx, s->nt = nt;
    const size_t bx = sizeof(float) * (size_t)nx, bt = sizeof(float) * (size_t)nt;
    for (int k = 0; k < 2; k++) {
        wx_status st = be->host_alloc(ctx, (void **)&s->hx[k], bx);
        if (st == WX_OK) st = be->host_alloc(ctx, (void **)&s->ht[k], bt);
        if (st == WX_OK && be->on_device) {
            s->dx[k] = wx_backend_alloc(be, ctx, bx, "batch input");
            s->dt[k] = s->dx[k] ? wx_backend_alloc(be, ctx, bt, "batch targets") : NULL;
            if (!s->dt[k]) st = WX_ERR_RUN;
        } else if (st == WX_OK) {
            s->dx[k] = s->hx[k], s->dt[k] = s->ht[k];
        }
        /* The new device slot was zeroed on the compute stream, and the context may keep a release
         * of this slot from an earlier stage: the first upload must wait for all queued work. */
        if (st == WX_OK && be->on_device) st = be->slot_ready(ctx, k);
        if (st != WX_OK) {
            wx_batch_stage_free(s);
            return wx_error_wrap(st, "batch staging (%lld + %lld floats): ", (long long)nx,
                                 (long long)nt);
        }
    }
    return WX_OK;
}

void wx_batch_stage_free(wx_batch_stage *s) {
    if (!s->be) return;
    for (int k = 0; k < 2; k++) /* no copy may read freed host memory */
        if (s->pending[k]) (void)s->be->copy_wait(s->ctx, k);
    for (int k = 0; k < 2; k++) {
        if (s->be->on_device) {
            s->be->mem_free(s->ctx, s->dx[k]);
            s->be->mem_free(s->ctx, s->dt[k]);
        }
        s->be->host_free(s->ctx, s->hx[k]);
        s->be->host_free(s->ctx, s->ht[k]);
    }
    memset(s, 0, sizeof *s);
}

wx_status wx_batch_stage_host(wx_batch_stage *s, float **x, float **t) {
    /* Slot `next` was last uploaded two batches ago; its copy is normally long done, but the
     * host must not write it before that copy has read it. */
    const int k = s->next;
    if (s->pending[k]) {
        WX_TRY(s->be->copy_wait(s->ctx, k));
        s->pending[k] = 0;
    }
    *x = s->hx[k], *t = s->ht[k];
    return WX_OK;
}

wx_status wx_batch_stage_upload(wx_batch_stage *s, float **dx, float **dt) {
    const int k = s->next;
    if (s->be->on_device) {
        /* The previous batch's step is queued by now: its ops are the last readers of that slot,
         * so the upload into it after this one needs to wait for nothing later. */
        if (s->in_use) WX_TRY(s->be->slot_release(s->ctx, 1 - k));
        WX_TRY(s->be->copy_h2d_async(s->ctx, k, s->dx[k], s->hx[k], sizeof(float) * (size_t)s->nx));
        WX_TRY(s->be->copy_h2d_async(s->ctx, k, s->dt[k], s->ht[k], sizeof(float) * (size_t)s->nt));
        s->pending[k] = 1;
        WX_TRY(s->be->slot_ready(s->ctx, k)); /* this batch's step waits for its copies */
        s->in_use = 1;
    }
    *dx = s->dx[k], *dt = s->dt[k];
    s->next = 1 - k;
    return WX_OK;
}
