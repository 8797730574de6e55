/* What the trainer and the forecast rollout need from a model, so FourCastNet and GraphCast share
 * one loop: create from a model config, the loss and gradient of a batch, the parameter table,
 * one-step prediction and the construction of the next step's input.
 *
 * Memory. A model made on backend `be` keeps params->data/grad in be's memory (wx_params_alloc_on;
 * device memory when be->on_device). Then every tensor argument of loss_backward (x, targets),
 * predict (y, x) and next_input (x1, x0, y0), and the loss functions' pred/target/dpred, is in
 * be's memory too; ops->make_input is the data layer's: states and x are host memory on every
 * backend (the dataset builds x on the host, the trainer uploads it; wx_train_model_make_input of
 * a model without a builder is the copy next_input needs, in backend memory). Times (t1, t2) and the loss value are host. A model that cannot run
 * on a device backend must fail at creation with a WX_ERR_USAGE naming the backend; the trainer
 * refuses one whose parameters are not in be's memory. FourCastNet+ computes its extra channels
 * on the host (make_input writes them in place; next_input uploads them after a device copy of
 * the state), the precip stage keeps PrecipNet, its head and the frozen wind model in be's memory.
 *
 * States. Every model predicts a *state*: its out_channels fields at one valid time, normalised
 * per channel as (physical − mean)/std with the training archive's statistics (m->data). A
 * model's input x (B, Cin, H, W) is built from its last `window` states (1 for FourCastNet; 2,
 * t−dt and t, for GraphCast) plus what the model adds itself (GraphCast: forcings at the input
 * times and at the target time, static fields, in its own channel layout):
 *
 *   x_1     = make_input(states (window, B, Cout, H, W) oldest first, target times t_1 (B))
 *   ŷ_k     = predict(x_k)                      the state at t_k (normalised), (B, Cout, H, W)
 *   x_{k+1} = next_input(x_k, ŷ_k, t_{k+1})     shifts the window, adds forcings at t_{k+1}
 *
 * This is the whole contract of a rollout (src/infer/rollout.c): normalise the analysis states
 * with m->data.mean/std, make_input once, then predict/next_input per step, de-normalise each ŷ.
 * Memory does not grow with the lead: only x_k, x_{k+1} and ŷ_k live at a time. Target times are
 * valid times (wx_time, UTC seconds); t_{k+1} = t_k + m->data.dt_s.
 *
 * FourCastNet: window 1, x = the state (its in and out channels must be the same for a rollout;
 * a model trained with other channels_in can only be scored one step). FourCastNet+ (the model
 * config's extra_inputs): x = [state, extras] with the extras computed by make_input at the input
 * time t_1 − dt (time, location; models/forcings.h) or taken from m->data.statics. GraphCast: ŷ = x[last] +
 * (diff_std/std)·out, out being the network's normalised residual (graphcast normalization.py).
 *
 * Training: targets (K, B, Cout, H, W) are the true states at t_1..t_K, normalised like the
 * inputs; loss_backward runs the K-step rollout with predictions fed back through next_input and
 * adds ∂loss/∂θ to the parameter grads (gradient through every step). FourCastNet sums the K
 * step losses (NVlabs); GraphCast averages them (autoregressive.py) and computes each step's loss
 * in its normalised-residual space relative to the (predicted) input, as the published training. */
#ifndef WX_TRAIN_MODEL_H
#define WX_TRAIN_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"
#include "models/params.h"
#include "train/train_config.h"

/* The training loss on one step's output. wlat (H) and wch (Cout) are set for lat_weighted_mse
 * and graphcast (the model's loss_weights fill them); relative_l2 is the NVlabs LpLoss (per sample
 * over all channels and points, batch mean). */
typedef struct {
    wx_loss_kind kind;
    wx_ctx *ctx;
    const wx_backend *be;
    int64_t c, h, w;
    float *wlat; /* (H), mean 1 */
    float *wch;  /* (C) */
    /* On-device backends: device copies of wlat and wch (uploaded again whenever the host arrays
     * differ from shadow, the values last uploaded: callers may rewrite wlat/wch after init);
     * NULL on the CPU. */
    float *dwlat, *dwch, *shadow;
    /* (WX_TRAIN_LOSS_SLOTS) loss values in backend memory: a K-step rollout queues one per step
     * and copies them back in one transfer (wx_train_loss_queue / _fetch). */
    float *slots;
} wx_train_loss;

#define WX_TRAIN_LOSS_SLOTS 64

/* wlat_area (H) in double: the model grid's cell-area weights; weights (C) nullable = all 1. */
void wx_train_loss_init(wx_train_loss *l, wx_loss_kind kind, wx_ctx *ctx, const wx_backend *be,
                        int64_t c, int64_t h, int64_t w, const double *wlat_area,
                        const double *weights);
void wx_train_loss_free(wx_train_loss *l);
/* loss of pred/target (B, C, H, W). */
wx_status wx_train_loss_value(const wx_train_loss *l, double *loss, const float *pred,
                              const float *target, int64_t b);
/* The loss of pred/target (B, C, H, W) into slots[slot] (backend memory), nothing copied back:
 * a K-step rollout queues its step losses and fetches them together. slot < WX_TRAIN_LOSS_SLOTS. */
wx_status wx_train_loss_queue(const wx_train_loss *l, int64_t slot, const float *pred,
                              const float *target, int64_t b);
/* *sum = Σ of slots[0, n) in double (one copy back on device backends; waits for the queue). */
wx_status wx_train_loss_fetch(const wx_train_loss *l, int64_t n, double *sum);
/* dpred (B, C, H, W) = dloss · ∂loss/∂pred (overwrite). */
wx_status wx_train_loss_grad(const wx_train_loss *l, float *dpred, double dloss, const float *pred,
                             const float *target, int64_t b);

typedef struct wx_train_model wx_train_model;

#define WX_TRAIN_NAME_MAX 64

/* A state or static channel a model asks the data layer for (GraphCast: its config variables). */
typedef struct {
    char name[WX_TRAIN_NAME_MAX]; /* model variable name ("2m_temperature", "geopotential") */
    double level;                 /* hPa; 0 for single-level and static fields */
    int kind;                     /* wx_level_kind: WX_LEVEL_PRESSURE, _SINGLE or _STATIC */
    int output_only;              /* a target the model never reads (GraphCast's target-only
                                   * variables): an initial state may lack it */
} wx_train_channel;

/* What the data layer tells a model (owned copies in m->data once attached). */
typedef struct {
    int nstate;                     /* = out_channels */
    char (*names)[WX_TRAIN_NAME_MAX]; /* (nstate) archive channel names of the state ("z500") */
    double *mean, *std;             /* (nstate) physical = mean + std · normalised */
    double *diff_std;               /* (nstate) std of dt-differences; 0 = unknown */
    int nstatic;
    float *statics;                 /* (nstatic, H, W) normalised static fields (zeros if absent) */
    int64_t dt_s;                   /* model step in seconds (t_{k+1} − t_k) */
    int has_grid;                   /* grid is set (FourCastNet+ location and local-time inputs) */
    wx_grid grid;                   /* the model grid (rows and columns of the states) */
    /* Forcing normalisation given by the data (0: the model's own; GraphCast computes it). A
     * checkpoint imported from DeepMind's GraphCast carries the published statistics here. */
    int nforcing;
    char (*forcing_names)[WX_TRAIN_NAME_MAX]; /* (nforcing) model forcing names */
    double *forcing_mean, *forcing_std;       /* (nforcing) */
} wx_train_data;

typedef struct {
    /* loss over the K-step rollout from x (B, Cin, H, W) (= make_input of the sample's states)
     * against targets (K, B, Cout, H, W) at t1 + (k−1)·dt (t1 (B): valid time of the first
     * target; NULL for FourCastNet); parameter grads += ∂loss/∂θ. */
    wx_status (*loss_backward)(wx_train_model *m, const wx_train_loss *loss, const float *x,
                               const float *targets, const wx_time *t1, int64_t k, int64_t b,
                               double *loss_out);
    /* y (B, Cout, H, W) = the predicted state from x (B, Cin, H, W), nothing recorded. */
    wx_status (*predict)(wx_train_model *m, float *y, const float *x, int64_t b);
    /* The effective model config as YAML (stored in checkpoints; re-reads as the same model). */
    void (*print_config)(const wx_train_model *m, FILE *out);
    void (*destroy)(wx_train_model *m);
    /* Optional (NULL: window 1 and x = the state, as FourCastNet with equal channels). */
    /* x (B, Cin, H, W) from states (window, B, Cout, H, W), oldest first, and the target times. */
    wx_status (*make_input)(wx_train_model *m, float *x, const float *states, const wx_time *t1,
                            int64_t b);
    /* x1 (B, Cin, H, W): the input of the step after the one that read x0 (B, Cin, H, W) and
     * predicted y0 (B, Cout, H, W); t2 (B): the new target times. x1 must not alias x0. */
    wx_status (*next_input)(wx_train_model *m, float *x1, const float *x0, const float *y0,
                            const wx_time *t2, int64_t b);
    /* Called by wx_train_model_attach after m->data is set (GraphCast: residual scales). */
    wx_status (*attach_data)(wx_train_model *m);
    /* The model's own loss (loss.type graphcast): wlat (H), wch (Cout) for mse_latw on states. */
    wx_status (*loss_weights)(wx_train_model *m, float *wlat, float *wch);
} wx_train_model_ops;

struct wx_train_model {
    const wx_train_model_ops *ops;
    const char *family;          /* "fourcastnet", "graphcast" */
    wx_params *params;           /* flat data/grad buffers and the named table */
    int64_t in_channels, out_channels, h, w;
    void *impl;
    /* Data interface (zero for FourCastNet: the training config's channels are the state). */
    int64_t window;              /* states in the input (0 or 1: one) */
    int nstate;                  /* channels the data layer must find: (nstate = out_channels) */
    const wx_train_channel *state;
    int nstatic;
    const wx_train_channel *statics;
    int64_t dt_s;                /* required model step in seconds (0: any) */
    /* Named-channel data (the precip model, train_model_precip.c; nin_names 0: unused): the
     * states are the archive channels in_names (z-scored with the archive statistics, which must
     * equal in_mean/in_std, the normalisation the frozen model was trained with) and the target
     * is the archive channel target_name as log1p(max(v, 0)/target_log_eps), not z-scored. */
    int nin_names;
    const char (*in_names)[WX_TRAIN_NAME_MAX];
    const double *in_mean, *in_std;
    const char *target_name;
    double target_log_eps;       /* > 0: targets (and predictions) are log1p(v/eps) */
    wx_train_data data;          /* set by wx_train_model_attach */
};

/* Copies d into m->data and lets the model derive what it needs. */
wx_status wx_train_model_attach(wx_train_model *m, const wx_train_data *d);
void wx_train_data_free(wx_train_data *d);

/* Input of the first step / of the next step for either family (FourCastNet: copies, which needs
 * in_channels == out_channels). Arguments as the ops above. */
wx_status wx_train_model_make_input(wx_train_model *m, float *x, const float *states,
                                    const wx_time *t1, int64_t b);
wx_status wx_train_model_next_input(wx_train_model *m, float *x1, const float *x0,
                                    const float *y0, const wx_time *t2, int64_t b);

/* Creates the model described by the `model` mapping (its `type:` picks the family; `path` names
 * the mapping in messages: "model" inline, "" for a file of its own) with weights initialised
 * from `seed`, room for batches of max_batch and rollouts of max_rollout steps (0: inference only,
 * no activation tapes: predict/make_input/next_input work, loss_backward does not). */
wx_status wx_train_model_create(const wx_yaml *model, const char *path, wx_ctx *ctx,
                                const wx_backend *be, uint64_t seed, int64_t max_batch,
                                int64_t max_rollout, wx_train_model **out);
/* As wx_train_model_create, with activation checkpointing (recompute in backward; GraphCast's
 * processor steps; FourCastNet ignores it). */
wx_status wx_train_model_create_ex(const wx_yaml *model, const char *path, wx_ctx *ctx,
                                   const wx_backend *be, uint64_t seed, int64_t max_batch,
                                   int64_t max_rollout, int act_checkpoint, wx_train_model **out);
/* A trained model from a checkpoint (train/checkpoint.h), ready for make_input/predict/
 * next_input: the model config, the parameters and the data (state names, normalisation,
 * diff_std, static fields, time step) are the checkpoint's. */
wx_status wx_train_model_load(const char *ckpt_path, wx_ctx *ctx, const wx_backend *be,
                              int64_t max_batch, wx_train_model **out);
void wx_train_model_destroy(wx_train_model *m);

/* The precip stage's model (train_model_precip.c): a PrecipNet (models/precipnet.h) on the state
 * the frozen wind model (c->wind_ckpt, loaded read-only; its parameters are not in m->params, so
 * they never change) predicts at t + dt: predict(x) = precip(wind(x)) in log1p(tp/eps) space;
 * next_input advances the wind model, so validation scores tp at any lead. */
wx_status wx_train_model_precip_create(const wx_train_config *c, wx_ctx *ctx, const wx_backend *be,
                                       uint64_t seed, int64_t max_batch, wx_train_model **out);
/* The same from a precip checkpoint's MODL mapping (type: precipnet; wx_train_model_load). */
wx_status wx_train_model_precip_create_map(const wx_yaml *map, wx_ctx *ctx, const wx_backend *be,
                                           uint64_t seed, int64_t max_batch, wx_train_model **out);

/* A trained PrecipNet as a forecast diagnostic, without its wind model: tp from the states a
 * rollout predicts. */
typedef struct wx_precip_diag wx_precip_diag;
/* Loads the precip checkpoint and maps each of its input channels to the rollout's state
 * channel of the same name: names/mean/std (nstate) are the rollout's state channels and their
 * normalisation. WX_ERR_USAGE names a missing channel; a checkpoint of another type is
 * WX_ERR_USAGE too. */
wx_status wx_precip_diag_open(const char *ckpt, wx_ctx *ctx, const wx_backend *be,
                              int64_t max_batch, int nstate, const char *const *names,
                              const double *mean, const double *std, wx_precip_diag **out);
/* tp (b, H, W) in the archive's units (m of 6-h accumulation), >= 0, from the normalised
 * predicted states y (b, nstate, H, W). y and tp are host memory on every backend (the network
 * runs in be's memory: its input is uploaded and its output copied back). */
wx_status wx_precip_diag_run(wx_precip_diag *d, float *tp, const float *y, int64_t b);
/* The archive channel name the model was trained on ("tp"). */
const char *wx_precip_diag_channel(const wx_precip_diag *d);
void wx_precip_diag_close(wx_precip_diag *d);

#endif
