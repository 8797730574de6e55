/* NCCL gradient all-reduce for device-resident gradients, set up over MPI (CUDA builds only). */
#ifndef WX_DISTRIBUTED_NCCL_H
#define WX_DISTRIBUTED_NCCL_H

#include "wx_build_config.h"

#if WX_HAVE_CUDA
#include "wx_cuda_nccl.h"

/* A wx_nccl_sync over every MPI rank (rank 0's ncclUniqueId broadcast through MPI) for the device
 * buffer grad (len); then wx_nccl_sync_ready/finish as wx_grad_sync_ready/finish. Collective:
 * every rank calls it; a failure on any rank fails it on all (wx_dist_agree). */
wx_status wx_grad_sync_nccl_create(wx_ctx *ctx, float *grad, int64_t len, int64_t bucket_bytes,
                                   wx_nccl_sync **out);
#endif

#endif
