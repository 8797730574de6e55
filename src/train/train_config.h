/* Training config (`wxcast train CONFIG.yaml`): schema and the parsed form.
 *
 *   model: ../model/fourcastnet_tiny.yaml   # a model config file (relative to this file) or an
 *                                           # inline mapping with the model schema
 *   data: {archive, channels_in, channels_out, time_step, train_years, valid_years, test_years,
 *          read_threads}
 *   seed, threads, checkpoint_dir, log_every, activation_checkpointing
 *   validation: {leads, max_samples, batch_size}
 *   pretrain: {epochs | steps, batch_size, rollout_steps, rollout_start, rollout_every, init_from,
 *              checkpoint_every,
 *              optimizer: {lr, betas, weight_decay, eps, warmup, lr_min, grad_clip},
 *              loss: {type, channel_weights}}
 *   finetune: same keys; defaults rollout_steps 2, lr 1e-4, 50 epochs (NVlabs AFNO.yaml)
 *   precip: same keys (rollout_steps 1 only; lr 2.5e-4, 25 epochs: NVlabs precip) plus
 *           wind_checkpoint (the frozen FourCastNet), channel (archive tp channel), eps (1e-5),
 *           model (the PrecipNet backbone: a file or mapping; default the `model` above with
 *           out_channels 1)
 *
 * Relative paths are resolved against the config file's folder (as ingest recipes). Every error
 * is WX_ERR_USAGE naming the file, key and line. Defaults are the NVlabs recipe
 * (shared/reference/fourcastnet.md §2.5) and live only in the schema tables. */
#ifndef WX_TRAIN_CONFIG_H
#define WX_TRAIN_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "core/wx_config.h"

#define WX_TRAIN_MAX_LEADS 16
#define WX_TRAIN_PATH_MAX 4096

typedef enum { WX_STAGE_PRETRAIN = 0, WX_STAGE_FINETUNE = 1, WX_STAGE_PRECIP = 2 } wx_train_stage;
/* AUTO: the model family's own (FourCastNet relative_l2, GraphCast graphcast). */
typedef enum {
    WX_LOSS_REL_L2 = 0, WX_LOSS_LATW_MSE = 1, WX_LOSS_GRAPHCAST = 2, WX_LOSS_AUTO = 3
} wx_loss_kind;

typedef struct {
    double lr, beta1, beta2, weight_decay, eps, lr_min, grad_clip; /* grad_clip 0 = off */
    int64_t warmup;                                                  /* steps */
} wx_optim_config;

typedef struct {
    /* whole file */
    char path[WX_TRAIN_PATH_MAX];    /* the config file */
    char dir[WX_TRAIN_PATH_MAX];     /* its folder ("" = cwd) */
    char *text;                      /* file text (stored in checkpoints) */
    wx_yaml *root;
    const wx_yaml *model;            /* the model mapping (in root or in model_root) */
    wx_yaml *model_root;             /* loaded model file, or NULL when inline */
    char model_path[WX_TRAIN_PATH_MAX]; /* "" when inline */
    /* data */
    char archive[WX_TRAIN_PATH_MAX];
    int nin, nout;                   /* 0 = every archive channel */
    char **chan_in, **chan_out;      /* names, [nin] / [nout]; nout 0 = same as in */
    int64_t time_step_s;             /* model step (6 h) */
    int64_t train_years[2], valid_years[2], test_years[2];
    int read_threads;
    /* run */
    uint64_t seed;
    int threads;
    char checkpoint_dir[WX_TRAIN_PATH_MAX]; /* <checkpoint_dir>/<stage> */
    int64_t log_every;
    int act_checkpoint;              /* activation_checkpointing */
    char device[8];                  /* "cpu" or "cuda" (key device) */
    int device_line;                 /* its line in the file (0: default) */
    int bf16;                        /* precision: bf16 (bf16 GEMM inputs, fp32 accumulation) */
    /* validation */
    int nleads;
    int64_t leads[WX_TRAIN_MAX_LEADS]; /* model steps, ascending, unique */
    int64_t valid_max_samples;         /* 0 = all */
    int64_t valid_batch;
    /* the selected stage */
    wx_train_stage stage;
    int64_t epochs, steps;             /* steps > 0 overrides epochs */
    int64_t batch_size, rollout_steps, checkpoint_every;
    int64_t rollout_start, rollout_every; /* curriculum: rollout_start + step / rollout_every */
    char init_from[WX_TRAIN_PATH_MAX]; /* "" = fresh initialisation */
    wx_optim_config opt;
    wx_loss_kind loss;
    int loss_line;                     /* line of <stage>.loss.type (0: the default) */
    int nweights;                      /* 0 = all 1 */
    double *channel_weights;           /* [nweights], must match the output channels */
    /* precip stage */
    char wind_ckpt[WX_TRAIN_PATH_MAX]; /* the frozen wind model (resolved path) */
    char precip_channel[64];           /* archive channel of the 6-h accumulated precipitation */
    double precip_eps;                 /* target transform log1p(tp/eps) */
    const wx_yaml *precip_model;       /* PrecipNet backbone mapping (NULL: `model`, 1 output) */
    wx_yaml *precip_model_root;        /* loaded file of precip.model, or NULL */
} wx_train_config;

/* Loads and validates `path` for `stage` ("pretrain", "finetune", "precip"; NULL = the file's `stage:` key,
 * default pretrain). */
wx_status wx_train_config_load(const char *path, const char *stage, wx_train_config *c);
void wx_train_config_free(wx_train_config *c);

const char *wx_train_stage_name(wx_train_stage s);

/* The effective config (defaults filled in) as YAML, for --print-config. */
void wx_train_config_print(FILE *out, const wx_train_config *c);

#endif
