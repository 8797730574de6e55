/* Staging of training batches into a backend's memory: two pinned host slots that the data
 * layer fills (e.g. wx_dataset_batch writes straight into them) and two device slots that the
 * upload fills asynchronously (copy_h2d_async on the CUDA copy stream). Slots alternate, so the
 * next batch can be written on the host while the previous upload is still in flight, and a
 * batch's device copy is not overwritten while the step that reads it may still be queued.
 *
 *   wx_batch_stage_host(s, &x, &t);       fill x (nx floats) and t (nt floats) on the host
 *   wx_batch_stage_upload(s, &dx, &dt);   queue their upload; ops queued after it see the data
 *
 * Contract: ops that read a batch's device copy are queued before the next _upload call (the
 * trainer's step); that call marks them as the last readers of the slot (slot_release).
 *
 * Ordering (CUDA, per slot, with events): the upload of batch N + 1 into slot k waits only for
 * the step that last read slot k (batch N − 1), not for the step N still queued on the compute
 * stream, so the copy overlaps it (AdamW and whatever else of step N runs while the host reads
 * batch N + 1); the compute stream then waits for the copy before step N + 1's ops. The host
 * waits before rewriting a host slot only for that slot's copy (two batches ago).
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
    int pending[2];       /* an upload may still be reading host slot k */
    int in_use;           /* slot 1 - next holds the batch handed out last (its step's ops) */
} wx_batch_stage;

wx_status wx_batch_stage_init(wx_batch_stage *s, const wx_backend *be, wx_ctx *ctx, int64_t nx,
                              int64_t nt);
void wx_batch_stage_free(wx_batch_stage *s);
/* The host buffers to fill for the next batch (waits until no upload still reads them). */
wx_status wx_batch_stage_host(wx_batch_stage *s, float **x, float **t);
/* Queues the upload of the buffers last returned by _host; *dx, *dt: their backend copies. */
wx_status wx_batch_stage_upload(wx_batch_stage *s, float **dx, float **dt);

#endif
