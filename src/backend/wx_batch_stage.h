/* Staging of training batches into a backend's memory: two pinned host slots that the data
 * layer fills (e.g. wx_dataset_batch writes straight into them) and two device slots that the
 * upload fills asynchronously (copy_h2d_async on the CUDA copy stream). Slots alternate, so the
 * next batch can be written on the host while the previous upload is still in flight, and a
 * batch's device copy is not overwritten while the step that reads it may still be queued.
 *
 *   wx_batch_stage_host(s, &x, &t);       fill x (nx floats) and t (nt floats) on the host
 *   wx_batch_stage_upload(s, &dx, &dt);   queue their upload; ops queued after it see the data
 *
 * Ordering (CUDA): the upload waits for every op queued before it (it must not overwrite a slot
 * still being read), then the compute stream waits for the upload; the overlap is with host work
 * (reading and normalising the next batch, bookkeeping), not with kernels queued earlier.
 * On the CPU backend nothing is copied: the device slots are the host slots. */
#ifndef WX_BATCH_STAGE_H
#define WX_BATCH_STAGE_H

#include "backend/wx_backend.h"

typedef struct {
    const wx_backend *be;
    wx_ctx *ctx;
    int64_t nx, nt;      /* floats per batch input / targets */
    float *hx[2], *ht[2]; /* host slots (pinned on CUDA when possible) */
    float *dx[2], *dt[2]; /* backend slots (= host slots on the CPU) */
    int next;             /* slot the next host fill uses */
    int pending;          /* an upload may still be reading a host slot */
} wx_batch_stage;

wx_status wx_batch_stage_init(wx_batch_stage *s, const wx_backend *be, wx_ctx *ctx, int64_t nx,
                              int64_t nt);
void wx_batch_stage_free(wx_batch_stage *s);
/* The host buffers to fill for the next batch (waits until no upload still reads them). */
wx_status wx_batch_stage_host(wx_batch_stage *s, float **x, float **t);
/* Queues the upload of the buffers last returned by _host; *dx, *dt: their backend copies. */
wx_status wx_batch_stage_upload(wx_batch_stage *s, float **dx, float **dt);

#endif
