/* Training checkpoints (GUIDE §7): everything a run needs to continue bit-identically, in one
 * checksummed file written atomically (temporary in the same folder, fsync, rename).
 *
 * Layout (integers little-endian):
 *   0   8  magic "WXCKPT\0\1"
 *   8   4  u32 format version (1)
 *   12  4  u32 section count
 *   16  8  u64 file size in bytes (the trailing crc included): catches truncation by name
 *   24  …  sections, each: u32 tag (4 ASCII chars), u32 0, u64 payload bytes, payload
 *   end 4  u32 zlib crc32 of every byte before it
 * Sections:
 *   CONF  the training config file's text          MODL  the effective model config (YAML)
 *   DATA  channels, normalisation and time step (YAML: what a forecast needs to use the model)
 *   STAT  u64 step, epoch, batches done in the epoch, total steps, best step; f64 best validation
 *         loss; the stage name (16 bytes, NUL-padded)
 *   RNGS  data-order state at the start of the epoch, then the noise stream (wx_rng_pack, 32 B each)
 *   TENS  u32 count, then per tensor: u16 name length, name, u8 kind (0 param, 1 AdamW m,
 *         2 AdamW v), u8 ndim, u64 dims[ndim], f32 values (product of dims)
 *   FLDS  (only when the model has static input fields, GraphCast) u32 count, u64 nlat, u64 nlon,
 *         f32 values (count, nlat, nlon): the normalised static fields the model was trained
 *         with, so a forecast needs nothing but the checkpoint
 * Readers skip unknown sections, so later versions can add some without breaking this one. */
#ifndef WX_TRAIN_CHECKPOINT_H
#define WX_TRAIN_CHECKPOINT_H

#include <stdint.h>
#include <stdio.h>

#include "core/wx_rng.h"
#include "meteo/wx_grid.h"
#include "models/params.h"

#define WX_CKPT_VERSION 1

typedef enum { WX_CKPT_PARAM = 0, WX_CKPT_ADAM_M = 1, WX_CKPT_ADAM_V = 2 } wx_ckpt_kind;

typedef struct {
    char name[WX_PARAM_NAME_MAX];
    wx_ckpt_kind kind;
    int ndim;
    int64_t dims[WX_PARAM_MAX_DIMS];
    int64_t size;
    const uint8_t *data; /* size little-endian f32, inside the file buffer */
} wx_ckpt_tensor;

typedef struct {
    char stage[16];
    int64_t step, epoch, epoch_pos, total_steps, best_step;
    double best_loss;        /* +inf before the first validation */
    wx_rng order;            /* data-order state at the start of `epoch` */
    wx_rng noise;
} wx_ckpt_state;

/* A checkpoint in memory (read side). */
typedef struct {
    char *path;
    uint8_t *buf;            /* the whole file */
    size_t len;
    uint32_t version;
    char *config_text, *model_text, *data_text; /* NUL-terminated copies */
    wx_ckpt_state st;
    int has_state;
    int ntensors;
    wx_ckpt_tensor *t;
    int nfields;             /* FLDS: static fields (0 when absent) */
    int64_t field_h, field_w;
    float *fields;           /* (nfields, field_h, field_w) copy */
} wx_checkpoint;

/* What the writer takes: params always; m and v (params->len each, the params' layout) when the
 * optimizer state is saved (NULL otherwise). */
typedef struct {
    const char *config_text, *model_text, *data_text;
    const wx_ckpt_state *st;
    const wx_params *params;
    const float *adam_m, *adam_v;
    int nfields;             /* static fields (0: no FLDS section) */
    int64_t field_h, field_w;
    const float *fields;     /* (nfields, field_h, field_w) */
} wx_ckpt_out;

wx_status wx_checkpoint_write(const char *path, const wx_ckpt_out *c);

/* Reads and checks the whole file: magic, version, size, crc32, section bounds. Every failure is
 * WX_ERR_RUN naming the file and what failed ("checksum mismatch", "truncated: ..."); c is then
 * left empty (nothing to free). */
wx_status wx_checkpoint_read(const char *path, wx_checkpoint *c);
void wx_checkpoint_free(wx_checkpoint *c);

/* Copies the tensors of `kind` into the matching params by name ("module." accepted) after
 * checking that both sides have the same names and shapes. For WX_CKPT_PARAM dst = NULL means
 * p->data (in device memory when p is: staged on the host, uploaded once); for m/v, dst is a buffer of p->len elements laid out as p. */
wx_status wx_checkpoint_load(const wx_checkpoint *c, wx_ckpt_kind kind, const wx_params *p,
                             float *dst);

/* DATA section writers (one format for the trainer and import-weights; read by infer/rollout.c
 * and train/train_model.c): a channel list `key:` of {name, units, mean, std, diff_std} lines, and
 * the grid line {nlat, nlon, lat0, dlat, lon0, dlon}. */
typedef struct {
    const char *name, *units;
    double mean, std, diff_std;
    int64_t accum_s; /* an accumulated field's period (tp: the training archive's), 0 otherwise */
} wx_ckpt_channel;

void wx_ckpt_data_channels(FILE *f, const char *key, const wx_ckpt_channel *c, int n);
void wx_ckpt_data_grid(FILE *f, const wx_grid *g);
/* `key: "value"` with the value escaped (paths may hold quotes or backslashes). */
void wx_ckpt_data_string(FILE *f, const char *key, const char *value);

#endif
