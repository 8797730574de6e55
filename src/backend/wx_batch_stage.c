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
    if (s->pending) (void)s->be->copy_wait(s->ctx); /* no copy may read freed host memory */
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
    if (s->pending) {
        WX_TRY(s->be->copy_wait(s->ctx));
        s->pending = 0;
    }
    *x = s->hx[s->next], *t = s->ht[s->next];
    return WX_OK;
}

wx_status wx_batch_stage_upload(wx_batch_stage *s, float **dx, float **dt) {
    const int k = s->next;
    if (s->be->on_device) {
        WX_TRY(s->be->copy_h2d_async(s->ctx, s->dx[k], s->hx[k], sizeof(float) * (size_t)s->nx));
        WX_TRY(s->be->copy_h2d_async(s->ctx, s->dt[k], s->ht[k], sizeof(float) * (size_t)s->nt));
        s->pending = 1;
    }
    *dx = s->dx[k], *dt = s->dt[k];
    s->next = 1 - k;
    return WX_OK;
}
