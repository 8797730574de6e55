/* Autoregressive rollout of any trained model from a checkpoint (src/train/checkpoint.h), through
 * the model-agnostic contract of train/train_model.h (FourCastNet, GraphCast): the checkpoint's
 * MODL section rebuilds the network (wx_train_model_load: inference only, no tapes), its DATA
 * section gives the channels, their normalisation (the archive statistics the model was trained
 * with), the model grid, the time step and the window (states per input: 1 for FourCastNet; 2,
 * t − dt and t, for GraphCast).
 *
 *   s_w = (state at t0 − (W−1−w)·dt − mean) / std     the W analysis states, normalised
 *   FourCastNet (no input builder):  x_1 = s_{W−1};   x_{k+1}[i] = ŷ_k[next_in[i]]
 *   models with make_input:          x_1 = make_input(s_0..s_{W−1}, t_1);
 *                                    x_{k+1} = next_input(x_k, ŷ_k, t_{k+1})
 *   ŷ_k = predict(x_k), the state at t_k = t0 + k·dt;   field_k = ŷ_k · std_out + mean_out
 *
 * Memory is flat in the number of steps: the current model input, the next one, the last output
 * and the current state are kept (plus, until the first step, the W − 1 earlier analysis states),
 * for up to max_batch initial times rolled out together. */
#ifndef WX_ROLLOUT_H
#define WX_ROLLOUT_H

#include <stdint.h>

#include "backend/wx_backend.h"
#include "core/wx_error.h"
#include "io/archive.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"

typedef struct {
    char name[64];  /* channel name ("z500"), as in the archive the model was trained on */
    char units[32];
    double mean, std;
} wx_rollout_channel;

typedef struct wx_rollout wx_rollout;

/* Called by wx_rollout_step after each prediction, before the state moves on: r->y holds the
 * predicted state (b, Cout, H, W), normalised, valid at r->t0 + r->steps·step_s (steps already
 * counted). The place where a diagnostic model (precipitation) turns the predicted state into
 * extra output fields. A non-OK return stops the rollout with that status. */
typedef wx_status (*wx_rollout_hook)(wx_rollout *r, void *user);

struct wx_rollout {
    char path[1024];          /* the checkpoint */
    wx_ctx *ctx;
    const wx_backend *be;
    struct wx_train_model *model; /* the network behind the train_model.h contract */
    char family[32];          /* model type: "fourcastnet", "graphcast" */
    int nin, nout;
    wx_rollout_channel *in, *out; /* [nin], [nout] */
    int *next_in;             /* [nin] output channel that becomes input channel i next step */
    int64_t h, w;             /* model grid size */
    wx_grid grid;             /* model grid (north→south as trained) */
    int64_t step_s;           /* seconds per model step */
    int64_t window;           /* analysis states per initial condition (1; GraphCast 2) */
    int builder;              /* 1: the model builds its own input (make_input/next_input) */
    int64_t max_batch, b;     /* capacity; initial times in the current state */
    int64_t steps;            /* steps done since the state was set (0: x may still be edited) */
    wx_time *t0;              /* [max_batch] valid time of each initial state (+ scratch) */
    /* x (max_batch, Cin, H, W): the current state, normalised (after a step: the prediction fed
     * back). Before the first step it is the initial condition, which ensembles perturb. */
    float *x;
    float *y;                 /* (max_batch, Cout, H, W) the last prediction */
    float *prev;              /* (W − 1, b, Cout, H, W) earlier analysis states (builder models) */
    float *xm, *xm2;          /* (max_batch, model Cin, H, W) model inputs (builder models) */
    wx_rollout_hook hook;     /* nullable: per-step callback (diagnostics) */
    void *hook_user;
};

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

/* Sets the initial condition of b initial times from archive records: rec (window, b, archive
 * nchan, archive nlat, nlon) physical, oldest first — the records at t0 − (window−1)·step_s .. t0
 * (window 1: (b, nchan, nlat, nlon), one record each); t0 (b) the valid times of the newest (for
 * the forcings of models that have them; may be NULL for window-1 models without an input
 * builder). map_in from wx_rollout_match_archive; rows beyond the model grid are dropped. Resets
 * the step count. */
wx_status wx_rollout_set_state(wx_rollout *r, const float *rec, const wx_archive_meta *m,
                               const int *map_in, const wx_time *t0, int64_t b);
/* One model step of every initial time: ŷ = f(x), the hook, then ŷ becomes the state. */
wx_status wx_rollout_step(wx_rollout *r);
/* The last step's output in physical units: out (b, Cout, H, W). */
void wx_rollout_output(const wx_rollout *r, float *out);

#endif
