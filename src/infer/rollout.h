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
 * for up to max_batch initial times rolled out together.
 *
 * Backends (wx_rollout_opts.device): on a device backend (CUDA) the model, its inputs, the state
 * fed back and the prediction stay in device memory across steps; each step copies back only the
 * prediction (r->y, the lead's output) and builds the host state r->x from it on the host. The
 * initial condition goes up once, at the first step after wx_rollout_set_state (or after
 * wx_rollout_state_edited). make_input runs on the host (train_model.h): a builder model's first
 * input is made there and uploaded; next_input runs on the device. */
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
    int nonnegative; /* a catalogue field that is physically >= 0 (tp, tcwv, q, r) */
    int64_t accum_s; /* an accumulated field's period as trained (checkpoint DATA
                        accumulation_s), 0 when the checkpoint predates it or not accumulated */
} wx_rollout_channel;

typedef struct wx_rollout wx_rollout;

typedef struct {
    int threads;        /* compute threads (<= 0: all cores) */
    int64_t max_batch;  /* initial times rolled out together (>= 1) */
    const char *device; /* "cpu" (NULL) or "cuda" (wx_backend_by_name) */
    int bf16;           /* CUDA only: bf16 GEMM inputs, fp32 accumulation (wx_cuda_set_precision) */
    /* Tests only (the device simulator), never set by the CLI: this backend instead of device. */
    const wx_backend *backend;
} wx_rollout_opts;

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
    float *x;                 /* host memory, always current (edit: wx_rollout_state_edited) */
    float *y;                 /* (max_batch, Cout, H, W) the last prediction (host memory) */
    float *prev;              /* (W − 1, b, Cout, H, W) earlier analysis states (builder models) */
    float *xm, *xm2;          /* (max_batch, model Cin, H, W) model inputs (builder models; on a
                               * device backend xm is the host staging of make_input, xm2 unused) */
    /* Backend memory: dx (max_batch, Cin, H, W), dy (max_batch, Cout, H, W), dxm, dxm2 (max_batch,
     * model Cin, H, W). On the CPU backend they are x, y, xm, xm2 themselves. */
    float *dx, *dy, *dxm, *dxm2;
    int dev;                  /* be->on_device */
    int x_dirty;              /* x was set or edited on the host: upload before the next step */
    wx_rollout_hook hook;     /* nullable: per-step callback (diagnostics) */
    void *hook_user;
};

/* Loads the checkpoint (checksum checked) and builds the model for batches of up to max_batch
 * initial times with `threads` compute threads (<= 0: all cores). Errors name the checkpoint and
 * the section or key at fault. */
wx_status wx_rollout_open(const char *ckpt_path, int threads, int64_t max_batch, wx_rollout **out);
/* The same on the backend o->device names (o->backend in tests). "no CUDA device" and a build
 * without CUDA come from wx_backend_by_name; bf16 on a backend other than CUDA is WX_ERR_USAGE; a
 * model without a device path fails at creation with WX_ERR_USAGE naming the backend (every
 * family has one now: FourCastNet, FourCastNet+, GraphCast's ops path; the precip diagnostic of
 * infer/forecast_precip.h runs on the rollout's backend). */
wx_status wx_rollout_open_opts(const char *ckpt_path, const wx_rollout_opts *o, wx_rollout **out);
void wx_rollout_close(wx_rollout *r);

/* 1 when state channel i (of r->in) is one the model never reads (GraphCast's target-only tp):
 * an initial state may lack it, and ensembles leave it unperturbed. */
int wx_rollout_input_unread(const wx_rollout *r, int i);

/* Archive channel index of every input channel (map_in [nin]) and output channel (map_out
 * [nout], nullable), matched by name, and a check that the archive grid is the model grid or the
 * model grid plus one more (south-pole) row. WX_ERR_USAGE names the missing channel or the grids;
 * callers prefix the data's source (archive path, --init files). */
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
/* The host state r->x was edited (ensemble perturbations): the next step uploads it. */
void wx_rollout_state_edited(wx_rollout *r);
/* The last step's output in physical units: out (b, Cout, H, W). Channels that are physically
 * >= 0 (tp, tcwv, q, r) are clamped at 0, as anemoi bounds tp and ECMWF's users treat negative
 * precipitation as 0; the state fed back to the model is its own unclamped output. */
void wx_rollout_output(const wx_rollout *r, float *out);

#endif
