/* What the trainer needs from a model, so FourCastNet and (later) GraphCast share one loop:
 * create from a model config, the loss and gradient of a batch, the parameter table, predict.
 *
 * A batch is normalised tensors: x (B, Cin, H, W) at time t and targets (K, B, Cout, H, W) at
 * t + k·dt, k = 1..K. loss_backward runs the K-step autoregressive rollout (the prediction of
 * step k is the input of step k+1), sums the K losses (NVlabs two-step fine-tune), and adds
 * ∂L/∂θ to the parameter grads (gradient through every step). The loss itself is the trainer's
 * (wx_train_loss), so every model family is trained on the same definition. */
#ifndef WX_TRAIN_MODEL_H
#define WX_TRAIN_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/params.h"
#include "train/train_config.h"

/* The training loss on one step's output. wlat (H) and wch (Cout) are set for lat_weighted_mse;
 * relative_l2 is the NVlabs LpLoss (per sample over all channels and points, batch mean). */
typedef struct {
    wx_loss_kind kind;
    wx_ctx *ctx;
    const wx_backend *be;
    int64_t c, h, w;
    float *wlat; /* (H), mean 1 */
    float *wch;  /* (C) */
} wx_train_loss;

/* wlat_area (H) in double: the model grid's cell-area weights; weights (C) nullable = all 1. */
void wx_train_loss_init(wx_train_loss *l, wx_loss_kind kind, wx_ctx *ctx, const wx_backend *be,
                        int64_t c, int64_t h, int64_t w, const double *wlat_area,
                        const double *weights);
void wx_train_loss_free(wx_train_loss *l);
/* loss of pred/target (B, C, H, W). */
wx_status wx_train_loss_value(const wx_train_loss *l, double *loss, const float *pred,
                              const float *target, int64_t b);
/* dpred (B, C, H, W) = dloss · ∂loss/∂pred (overwrite). */
wx_status wx_train_loss_grad(const wx_train_loss *l, float *dpred, double dloss, const float *pred,
                             const float *target, int64_t b);

typedef struct wx_train_model wx_train_model;

typedef struct {
    /* loss = Σ_k L(ŷ_k, targets[k]) with ŷ_1 = f(x), ŷ_k = f(ŷ_{k−1}); parameter grads += ∂loss/∂θ.
     * x (B, Cin, H, W), targets (K, B, Cout, H, W). */
    wx_status (*loss_backward)(wx_train_model *m, const wx_train_loss *loss, const float *x,
                               const float *targets, int64_t k, int64_t b, double *loss_out);
    /* y (B, Cout, H, W) = f(x (B, Cin, H, W)), nothing recorded. */
    wx_status (*predict)(wx_train_model *m, float *y, const float *x, int64_t b);
    /* The effective model config as YAML (stored in checkpoints; re-reads as the same model). */
    void (*print_config)(const wx_train_model *m, FILE *out);
    void (*destroy)(wx_train_model *m);
} wx_train_model_ops;

struct wx_train_model {
    const wx_train_model_ops *ops;
    const char *family;          /* "fourcastnet" */
    wx_params *params;           /* flat data/grad buffers and the named table */
    int64_t in_channels, out_channels, h, w;
    void *impl;
};

/* Creates the model described by the `model` mapping (its `type:` picks the family; `path` names
 * the mapping in messages: "model" inline, "" for a file of its own) with weights initialised
 * from `seed`, room for batches of max_batch and rollouts of max_rollout steps. */
wx_status wx_train_model_create(const wx_yaml *model, const char *path, wx_ctx *ctx,
                                const wx_backend *be, uint64_t seed, int64_t max_batch,
                                int64_t max_rollout, wx_train_model **out);
void wx_train_model_destroy(wx_train_model *m);

#endif
