/* Training samples from an archive (io/archive.h).
 *
 * A sample is an initial time t (a record index): input = record t, targets = records t + k·dt,
 * k = 1..K (dt = model step / archive step). A sample belongs to a split when t and t + K·dt both
 * lie in the split's years, so no target crosses into another split (NVlabs instead repeats the
 * last sample of a year; we simply do not form samples across a split boundary).
 *
 * Fields are normalised per channel with the archive statistics, (x − mean) / std. The model grid
 * is the archive grid, or the archive grid without its last row when the archive has one row more
 * (ERA5's 721 rows → the 720 FourCastNet uses: the south pole is dropped).
 *
 * Order: each epoch is a permutation of the training samples drawn from a Philox stream (stream 1
 * of the seed) that continues from epoch to epoch; the state at the start of an epoch plus the
 * number of batches done in it is the whole data-order state, so a resumed run continues the exact
 * same sequence. Batches are read with the archive's background prefetch: batch i+1 loads while
 * batch i computes. The last partial batch of an epoch is dropped (NVlabs drop_last).
 *
 * Models that build their own input (GraphCast: train_model.h make_input) name their state and
 * static channels (m->state, m->statics); wx_dataset_open_model finds them in the archive by
 * channel name or by catalogue variable (any of its names: "2m_temperature" = 2t = t2m) and level,
 * reads window = m->window states per sample (t − (window−1)·dt … t), and builds x with the
 * model's make_input from them and the target times. The archive grid must then be the model's
 * (GraphCast: poles included). A static field the archive lacks is fed as zeros (with a warning),
 * as is done for the synthetic world's archives, which have no lsm/z channel unless ingested.
 *
 * A FourCastNet with extra inputs (make_input, static fields) reads its out_channels state
 * channels (channels_in; default: every non-static archive channel) and the model adds the rest.
 * The precip model (m->nin_names) names its state channels and its target channel itself. */
#ifndef WX_TRAIN_DATASET_H
#define WX_TRAIN_DATASET_H

#include <stdint.h>

#include "core/wx_rng.h"
#include "io/archive.h"
#include "meteo/wx_grid.h"
#include "train/train_config.h"
#include "train/train_model.h"

typedef struct {
    wx_archive *ar;
    const wx_archive_meta *meta;
    int nin, nout;
    int *cin, *cout;        /* archive channel index of each model channel */
    int64_t h, w;           /* model grid: archive rows [0, h) */
    wx_grid grid;           /* the model grid */
    double *wlat;           /* (h) cell-area weights, mean 1 */
    int64_t dt;             /* archive records per model step */
    double *mean, *std;     /* (nchan) archive statistics, std > 0 */
    int64_t *train, *valid; /* sample initial times (record indices) */
    int64_t ntrain, nvalid;
    int64_t rollout;        /* K for training samples */
    int64_t window;         /* states per input (1; GraphCast 2) */
    struct wx_train_model *model; /* builds x from states (NULL: x = record t's channels_in) */
    float *states;          /* (window, batch, nout, H, W) scratch for model inputs */
    wx_time *t1;            /* (batch) valid time of the first target of each sample */
    float *statics;         /* (model nstatic, H, W) normalised static fields */
    int *cstatic;           /* (model nstatic) archive channel, −1: zeros */
    int64_t max_lead;       /* validation samples reach t + max_lead·dt */
    double target_log_eps;  /* > 0: targets are log1p(max(v, 0)/eps) (precip), not z-scored */
    /* the batch pipeline */
    int64_t batch;          /* this rank's samples of each batch */
    int64_t global_batch;   /* batch · ranks: batch i of an epoch is perm[i·global_batch, +global_batch) */
    int64_t part;           /* this rank reads perm[i·global_batch + part, +batch) */
    float *raw[2];          /* (batch·(K+1), nchan, nlat, nlon) double buffer */
    int64_t *times;         /* (batch·(K+1)) */
    int64_t pending;        /* batch index being prefetched, −1 none */
    int64_t *perm;          /* (ntrain) this epoch's order */
    wx_rng next_order;      /* data-order state after this epoch's permutation */
} wx_dataset;

/* Opens the archive and checks it against the config and the model's channels and grid (usage
 * errors name the config key; an archive without statistics is a run error). */
wx_status wx_dataset_open(wx_dataset *ds, const wx_train_config *c, int64_t model_in,
                          int64_t model_out, int64_t model_h, int64_t model_w, int64_t batch,
                          int64_t rollout);
/* The same for a model (its channels, grid, window; train_model.h). */
wx_status wx_dataset_open_model(wx_dataset *ds, const wx_train_config *c, wx_train_model *m,
                                int64_t batch, int64_t rollout);
/* What the model must know of the data (normalisation, diff_std, statics, dt): d's arrays point
 * into ds (valid while it is open). */
void wx_dataset_model_data(const wx_dataset *ds, wx_train_data *d, double *mean, double *std,
                           double *diff_std, char (*names)[WX_TRAIN_NAME_MAX]);
void wx_dataset_close(wx_dataset *ds);

/* Draws the epoch's permutation from `order` (the state at the epoch's start; not modified). */
void wx_dataset_epoch_begin(wx_dataset *ds, const wx_rng *order);
int64_t wx_dataset_batches_per_epoch(const wx_dataset *ds);
/* Data parallelism (train/distributed.h): this process is `rank` of `size`, each reading its own
 * `batch` samples of every global batch of batch·size; every rank draws the same permutation from
 * the shared seed, so together they read each global batch once and no sample twice. */
wx_status wx_dataset_set_ranks(wx_dataset *ds, const wx_train_config *c, int rank, int size);

/* Starts reading batch i of the current epoch in the background. */
wx_status wx_dataset_prefetch(wx_dataset *ds, int64_t i);
/* Waits for batch i (prefetching it first if it was not) and writes the normalised
 * x (B, Cin, H, W) and targets (K, B, Cout, H, W); ds->t1 holds the samples' first target times. */
wx_status wx_dataset_batch(wx_dataset *ds, int64_t i, float *x, float *targets);
/* Waits for an outstanding prefetch (before validation, a checkpoint exit or close). */
void wx_dataset_drain(wx_dataset *ds);

/* Reads validation samples (initial-time record indices) at model steps leads[0..nl)
 * (ascending): x (n, Cin, H, W) and targets (nl, n, Cout, H, W), normalised; t1 (n, nullable):
 * valid times of lead 1. Synchronous. */
wx_status wx_dataset_read_valid(wx_dataset *ds, const int64_t *samples, int64_t n,
                                const int64_t *leads, int nl, float *x, float *targets,
                                wx_time *t1);

#endif
