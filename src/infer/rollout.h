/* Autoregressive rollout of a trained model from a checkpoint (src/train/checkpoint.h): the
 * checkpoint's MODL section rebuilds the network (inference only: no tapes), its DATA section
 * gives the channels, their normalisation (the archive statistics the model was trained with),
 * the model grid and the time step.
 *
 *   x_0 = (state − mean_in) / std_in            (physical → normalised, per input channel)
 *   y_k = f(x_{k−1});  x_k[i] = y_k[next_in[i]]  (each input channel fed by the output channel of
 *                                                the same name)
 *   field_k = y_k · std_out + mean_out          (normalised → physical)
 *
 * Memory is flat in the number of steps: only the current state x and the last output y are
 * kept, for up to max_batch initial times rolled out together. */
#ifndef WX_ROLLOUT_H
#define WX_ROLLOUT_H

#include <stdint.h>

#include "backend/wx_backend.h"
#include "core/wx_error.h"
#include "io/archive.h"
#include "meteo/wx_grid.h"

typedef struct {
    char name[64];  /* channel name ("z500"), as in the archive the model was trained on */
    char units[32];
    double mean, std;
} wx_rollout_channel;

typedef struct wx_rollout {
    char path[1024];          /* the checkpoint */
    wx_ctx *ctx;
    const wx_backend *be;
    void *model;              /* the network (wx_fcn for type fourcastnet) */
    char family[32];          /* model type: "fourcastnet" */
    int nin, nout;
    wx_rollout_channel *in, *out; /* [nin], [nout] */
    int *next_in;             /* [nin] output channel that becomes input channel i next step */
    int64_t h, w;             /* model grid size */
    wx_grid grid;             /* model grid (north→south as trained) */
    int64_t step_s;           /* seconds per model step */
    int64_t max_batch, b;     /* capacity; initial times in the current state */
    int64_t steps;            /* steps done since the state was set */
    float *x, *y;             /* (max_batch, Cin, H, W) state; (max_batch, Cout, H, W) output */
} wx_rollout;

/* Loads the checkpoint (checksum checked) and builds the model for batches of up to max_batch
 * initial times with `threads` compute threads (<= 0: all cores). Errors name the checkpoint and
 * the section or key at fault. */
wx_status wx_rollout_open(const char *ckpt_path, int threads, int64_t max_batch, wx_rollout **out);
void wx_rollout_close(wx_rollout *r);

/* Archive channel index of every input channel (map_in [nin]) and output channel (map_out
 * [nout], nullable), matched by name, and a check that the archive grid is the model grid or the
 * model grid plus one more (south-pole) row. WX_ERR_USAGE names the missing channel or the grids. */
wx_status wx_rollout_match_archive(const wx_rollout *r, const wx_archive_meta *m, int *map_in,
                                   int *map_out);

/* Sets the state of b initial times from archive records: rec (b, archive nchan, archive nlat,
 * nlon) physical, map_in from wx_rollout_match_archive; rows beyond the model grid are dropped.
 * Resets the step count. */
wx_status wx_rollout_set_state(wx_rollout *r, const float *rec, const wx_archive_meta *m,
                               const int *map_in, int64_t b);
/* One model step of every initial time: y = f(x), then x = y for the next step. */
wx_status wx_rollout_step(wx_rollout *r);
/* The last step's output in physical units: out (b, Cout, H, W). */
void wx_rollout_output(const wx_rollout *r, float *out);

#endif
