/* The NCCL gradient all-reduce (kernels/wx_cuda_nccl.h) set up over MPI: rank 0 makes the
 * ncclUniqueId and broadcasts it with wx_dist_bcast, every rank joins the communicator of
 * wx_dist_size() ranks on its context's device. The counterpart of wx_grad_sync_create for a
 * gradient buffer in device memory; size 1 (no MPI) gives a one-rank communicator. */
#include "train/distributed_nccl.h"

#include "backend/wx_cuda_api.h"
#include "train/distributed.h"
#include "wx_build_config.h"

#if WX_HAVE_CUDA
wx_status wx_grad_sync_nccl_create(wx_ctx *ctx, float *grad, int64_t len, int64_t bucket_bytes,
                                   wx_nccl_sync **out) {
    *out = NULL;
    unsigned char id[WX_NCCL_ID_BYTES] = {0};
    const wx_cuda_api *cuda = wx_cuda();
    wx_status s = !cuda ? WX_ERR_RUN : wx_dist_rank() == 0 ? cuda->nccl_unique_id(id) : WX_OK;
    /* every rank learns whether rank 0 could make the id before anyone waits on the bcast */
    WX_TRY(wx_dist_agree(s));
    WX_TRY(wx_dist_bcast(id, sizeof id, 0));
    return wx_dist_agree(cuda->nccl_sync_create(ctx, grad, len, bucket_bytes, wx_dist_rank(),
                                                wx_dist_size(), id, out));
}
#else
typedef int wx_distributed_nccl_empty; /* ISO C: a translation unit is not empty */
#endif
