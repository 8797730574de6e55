/* The ZeRO-1 shard of rank r (wx_dist_split's layout: contiguous, the first n % size ranks one
 * element longer), as one inline function: the NCCL path (kernels/wx_cuda_nccl.cu, built into a
 * module that does not link the MPI code) and the host path must cut the same shards, or a
 * checkpoint gathered from the device shards would mix up the AdamW moments
 * (test_batch_stage_devsim checks it against wx_dist_split). */
#ifndef WX_ZERO1_SHARD_H
#define WX_ZERO1_SHARD_H

#include <stdint.h>

static inline void wx_zero1_shard(int64_t n, int size, int r, int64_t *off, int64_t *cnt) {
    const int64_t q = n / size, rem = n % size;
    *cnt = q + (r < rem);
    *off = r * q + (r < rem ? r : rem);
}

#endif
