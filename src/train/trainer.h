/* The training loop: data (dataset.h) → model loss and gradient (train_model.h) → global-norm
 * clipping → AdamW with warmup + cosine per step → metrics, progress, validation each epoch
 * (validate.h) and checkpoints (checkpoint.h) as <checkpoint_dir>/<stage>/{last,best}.ckpt.
 *
 * Bit-identical resume on the CPU: everything the next step depends on — parameters, AdamW m and
 * v, the step (lr schedule, Adam bias correction), the epoch, the data-order RNG state at the
 * epoch's start and the batches done in it — is in the checkpoint, and nothing else (no wall
 * clock, no thread timing) enters the computation. So K steps, a checkpoint, and K more from
 * --resume give the same losses and the same parameters bit for bit as 2K steps in one run (with
 * the same thread count).
 *
 * Under MPI (docs/distributed.md) every rank runs this loop on batch_size / ranks samples of each
 * global batch (the config's batch_size), the gradients are averaged over the ranks, and every
 * rank takes the same optimizer step; rank 0 initialises or loads the parameters and broadcasts
 * them, prints, and writes the metrics and checkpoints. The checkpoint holds the global state
 * only (step, epoch, global batches done, data order), so it resumes at any rank count that
 * divides the global batch. */
#ifndef WX_TRAINER_H
#define WX_TRAINER_H

#include <stdint.h>

#include "train/train_config.h"

/* ZeRO-1's collectives on device buffers, so the shards need no host copies: NCCL on the CUDA
 * backend (trainer_setup.c); tests inject their own through wx_train_opts.dev_coll. Shard layout:
 * train/zero1_shard.h (wx_dist_split's). Collective: every rank calls them in the same order. */
typedef struct wx_train_dev_coll {
    const char *name; /* for the log */
    void *state;
    /* grad (len, device): on each rank its own shard becomes the mean over the ranks of that shard */
    wx_status (*reduce_scatter)(void *state, float *grad, int64_t len);
    /* data (len, device): every rank's shard from its owner, on every rank */
    wx_status (*allgather)(void *state, float *data, int64_t len);
} wx_train_dev_coll;

typedef struct {
    const char *resume;         /* checkpoint to continue from (full state), or NULL */
    const char *metrics;        /* JSON-lines file (appended to on resume), or NULL */
    int64_t max_steps;          /* stop once this many steps are done (0 = run to the end) */
    int threads;                /* > 0 overrides the config */
    int zero1;                  /* shard the AdamW state over the MPI ranks (ZeRO stage 1) */
    int overwrite;              /* a fresh run may replace an earlier run's checkpoints */
    int64_t bucket_bytes;       /* gradient all-reduce bucket size (0 = 25 MB) */
    /* Test hook (the CLI never sets it): train on this backend instead of the config's device,
     * e.g. the device simulator of tests/support/wx_devsim.h. NULL: the config's device. */
    const struct wx_backend *backend;
    /* Test hook: ZeRO-1 on a device backend through these collectives instead of host copies
     * (NULL: NCCL on CUDA, host copies on other device backends). */
    const wx_train_dev_coll *dev_coll;
} wx_train_opts;

typedef struct {
    int64_t first_step, step, total_steps; /* this run went from first_step to step */
    double last_loss;                      /* training loss of the last step (NaN if none) */
    double best_loss;                      /* best validation loss so far (+inf if none) */
    int64_t best_step;
    char last_path[WX_TRAIN_PATH_MAX + 32], best_path[WX_TRAIN_PATH_MAX + 32];
} wx_train_summary;

wx_status wx_train_run(const wx_train_config *c, const wx_train_opts *o, wx_train_summary *sum);

#endif
