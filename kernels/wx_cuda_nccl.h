/* NCCL all-reduce of the flat gradient buffer in device memory, bucketed like the MPI path
 * (train/distributed.h, wx_grad_sync_*) and with the same calls: ready(lo) says grad[lo, len) is
 * final and starts every bucket inside it on a side stream (after the compute stream's work so
 * far, via an event), so the reductions overlap the rest of the backward; finish starts the rest
 * and makes the compute stream wait for all of them. ncclAvg divides by the rank count inside the
 * reduction. Sums use NCCL's fixed ring/tree order for a given rank count and message split, the
 * same every step (no atomics).
 *
 * The communicator needs one ncclUniqueId shared by every rank: wx_cuda_nccl_unique_id makes it
 * on rank 0 and the caller broadcasts its bytes (train/distributed_nccl.c does it through MPI). */
#ifndef WX_CUDA_NCCL_H
#define WX_CUDA_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "core/wx_error.h"
#include "ops/wx_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WX_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) (NCCL_UNIQUE_ID_BYTES) */

typedef struct wx_nccl_sync wx_nccl_sync;

/* id (WX_NCCL_ID_BYTES) = a new ncclUniqueId (call on rank 0 only). */
wx_status wx_cuda_nccl_unique_id(unsigned char *id);
/* A communicator of nranks over the ranks holding the same id, on ctx's device, for the device
 * buffer grad (len). bucket_bytes <= 0: 25 MB. */
wx_status wx_nccl_sync_create(wx_ctx *ctx, float *grad, int64_t len, int64_t bucket_bytes, int rank,
                              int nranks, const unsigned char *id, wx_nccl_sync **out);
void wx_nccl_sync_destroy(wx_nccl_sync *s);
int wx_nccl_sync_buckets(const wx_nccl_sync *s);
wx_status wx_nccl_sync_ready(wx_nccl_sync *s, int64_t lo);
/* Starts what is left; the compute stream waits for every reduction (host does not block). */
wx_status wx_nccl_sync_finish(wx_nccl_sync *s);
/* Buckets per finish that were started by ready (overlapped the backward), on average. */
double wx_nccl_sync_started_early(const wx_nccl_sync *s);
/* ZeRO-1 on the device, instead of finish (train/zero1_shard.h's shard layout, as the host path):
 * reduce_scatter leaves in rank r's grad[off_r, off_r + cnt_r) the mean over the ranks of that
 * shard — one ncclReduce (sum) to each shard's owner, grouped, then × (1.0f / nranks) on the
 * owner, the host path's float operation; the rest of grad is left as it was. allgather gives
 * every rank each owner's shard of data (len floats: the updated parameters; one ncclBroadcast
 * per shard, grouped, in place). Both run on the side stream after the compute stream's work so
 * far, and the compute stream waits for them (the host does not block). Unequal shards are why
 * this is not ncclReduceScatter / ncclAllGather (equal counts only). */
wx_status wx_nccl_sync_reduce_scatter(wx_nccl_sync *s);
wx_status wx_nccl_sync_allgather(wx_nccl_sync *s, float *data);

#ifdef __cplusplus
}
#endif

#endif
