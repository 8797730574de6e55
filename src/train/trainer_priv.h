/* The trainer's state, shared by trainer.c (the loop: steps, validation, checkpoints) and
 * trainer_setup.c (backend, model, data, buffers, the starting point, teardown). Private to
 * src/train. */
#ifndef WX_TRAINER_PRIV_H
#define WX_TRAINER_PRIV_H

#include "backend/wx_backend.h"
#include "backend/wx_batch_stage.h"
#include "core/wx_metrics.h"
#include "train/checkpoint.h"
#include "train/dataset.h"
#include "train/distributed.h"
#include "train/train_model.h"
#include "train/trainer.h"
#include "wx_build_config.h"
#if WX_HAVE_CUDA
#include "train/distributed_nccl.h"
#endif

/* A run of consecutive tensors with one weight-decay setting: one AdamW call each. */
typedef struct {
    int64_t offset, len;
    double wd;
} decay_group;

typedef struct {
    const wx_train_config *c;
    const wx_train_opts *o;
    wx_ctx *ctx;
    const wx_backend *be;
    wx_train_model *m;
    wx_dataset ds;
    wx_train_loss loss;
    int rank, nranks;
    int zero1;                /* m and v hold only this rank's shard [shard_off, +shard_len) */
    int64_t shard_off, shard_len;
    wx_grad_sync *sync;       /* MPI all-reduce of the host gradient (of hgrad on a device) */
    int failed_alone;         /* this rank failed without the others knowing: the CLI aborts the job */
    double comm_s;            /* seconds in MPI during the last step */
    int64_t first_step;       /* the step this run started from */
    float *adam_m, *adam_v;   /* (shard_len) in the backend's memory */
    /* Device backends (be->on_device): parameters, gradients, AdamW moments, the batch and the
     * gradient norm live in device memory; the host sees copies (checkpoints, broadcasts). */
    int dev;
    double *dsumsq;           /* (1) device gradient sum of squares */
    float *hgrad;             /* (len) host copy of the gradient for MPI (a device backend without
                               * NCCL or dcoll): the sync's buffer */
    float *hdata;             /* (len) host copy of the parameters for ZeRO-1's all-gather there */
    wx_train_dev_coll dcoll;  /* ZeRO-1 on a device without host copies, when reduce_scatter is set */
#if WX_HAVE_CUDA
    wx_nccl_sync *nccl;       /* CUDA under MPI: the gradient all-reduce on the device */
#endif
    wx_batch_stage stage;     /* batches: pinned host slots, uploaded to the backend's memory */
    decay_group *groups;
    int ngroups;
    wx_ckpt_state st;
    int64_t bpe, total, batch, valid_batch; /* batch: this rank's part of the global batch */
    char *model_text, *data_text;
    wx_metrics *metrics;
    char last_path[WX_TRAIN_PATH_MAX + 32], best_path[WX_TRAIN_PATH_MAX + 32];
} wx_trainer;

/* Every rank builds its model, data and buffers; rank 0 decides the starting point (fresh,
 * init_from or --resume) and broadcasts it; on a device backend it is then uploaded. */
wx_status wx_trainer_setup(wx_trainer *t);
void wx_trainer_teardown(wx_trainer *t);
/* trainer_resume.c. A warning line when the run's archive normalises a channel differently from
 * the checkpoint `what` names (its DATA section ck_data): how many channels, and the largest
 * difference with its channel and statistic. */
/* A checkpoint's channels (DATA channels_in/out, names and order) against the run's: a usage
 * error naming both lists when they differ (old checkpoints without DATA pass). */
wx_status wx_trainer_check_channels(const wx_trainer *t, const char *what, const char *ck_data);
void wx_trainer_warn_stats(const wx_trainer *t, const char *what, const char *ck_data);
/* --resume from a checkpoint at `step`: drops the rows of the metrics file at `path` past that
 * step (and an unfinished last row), by an atomic rewrite, with an info line saying how many. */
wx_status wx_trainer_metrics_trim(const char *path, int64_t step);
/* The number after "key": in a metrics row (any spacing, as a JSON tool may rewrite it); 0 when
 * the row has none. */
int wx_trainer_row_number(const char *line, const char *key, double *v);
/* A host copy of n floats of backend memory (src itself on a host backend); free it with
 * wx_trainer_host_put(t, h, src). */
wx_status wx_trainer_host_get(const wx_trainer *t, const float *src, int64_t n, float **out);
void wx_trainer_host_put(const wx_trainer *t, float *h, const float *src);

#endif
