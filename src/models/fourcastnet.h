/* FourCastNet: the NVlabs AFNO network (networks/afnonet.py, AFNONet), forward and backward.
 *
 *   x(B,Cin,H,W) → patch_embed (conv, kernel = stride = p, bias) → tokens (B, Hp·Wp, D)
 *   → + pos_embed (Hp·Wp, D) → depth × Block → head (Linear D → Cout·p·p, no bias)
 *   → unpatchify (NVlabs order) → y(B,Cout,H,W)
 *   Block: u = LN1(x); x1 = x + u + irfft2(shrink(MLP(rfft2(u))))   (AFNO2D adds u: double skip)
 *          x2 = x1 + fc2(GELU(fc1(LN2(x1))))                         LayerNorm eps 1e-6
 * The final `norm` is allocated (its weights are in checkpoints) but, as in NVlabs, never applied.
 * Facts: shared/reference/fourcastnet.md §1.
 *
 * Every op goes through a `const wx_backend *`. Activations for backward are recorded on "tapes":
 * each wx_fcn_forward pushes one, each wx_fcn_backward pops the latest, so a two-step fine-tune is
 *   forward(y1, x); forward(y2, y1); backward(dy1b, dy2); dy1 += dy1b; backward(NULL, dy1).
 * Tapes and scratch live in one arena sized at create time for max_batch samples and max_tapes
 * tapes (see wx_fcn_arena_bytes for the sizes). wx_fcn_predict runs without recording.
 *
 * The parameter table uses the NVlabs state_dict names (pos_embed, patch_embed.proj.weight, ...,
 * blocks.{i}.filter.w1, ..., norm.weight, head.weight); see params.h. */
#ifndef WX_FOURCASTNET_H
#define WX_FOURCASTNET_H

#include <stdint.h>

#include "backend/wx_backend.h"
#include "models/fourcastnet_config.h"
#include "models/params.h"

/* The configuration (models/fourcastnet_config.h) is the model's size description. The model reads
 * only its primary fields and recomputes the derived ones, so a config filled by hand works too. */

/* Checks what the model needs beyond the schema (sizes, a non-empty kept-mode set); WX_ERR_USAGE
 * naming the key. */
wx_status wx_fcn_check(const wx_fcn_config *d);

/* Kept-mode mask (Hp, Wf = Wp/2+1), 1 = the mode goes through the spectral MLP.
 * NVlabs (two_sided = 0): total = Hp/2+1, kept = (int)(total·fraction); rows [total−kept,
 * total+kept) clipped to [0,Hp), columns kx in [0, kept) clipped to [0,Wf): kept is computed from
 * the H axis but applied to the rfft (W) axis, reproducing the released code.
 * Two-sided: kept_y = (int)((Hp/2+1)·fraction), kept_x = (int)(Wf·fraction); rows with
 * |frequency| < kept_y (ky < kept_y or ky > Hp − kept_y), columns kx < kept_x.
 * Returns the number of kept modes. */
int64_t wx_fcn_mode_mask(uint8_t *mask, int64_t hp, int64_t wp, double fraction, int two_sided);

/* Builds the parameter table of `d` into p (initialised by the caller, not allocated): lets the
 * size of any configuration be counted with wx_params_total without allocating it. */
void wx_fcn_param_table(wx_params *p, const wx_fcn_config *d);

/* What one block keeps for backward (each for max_batch samples; N = Hp·Wp tokens). LN outputs
 * and GELU outputs are recomputed in backward from these (cheap element-wise passes) instead of
 * being stored: that saves 2·N·D + N·mlp_hidden floats per block and sample. */
typedef struct {
    float *x1;                          /* (B, N, D) after the spectral half */
    float *spec;                        /* (B, Hp, Wf, D, 2) X = rfft2(LN1(x)) */
    float *fsaved;                      /* filter's saved buffer (wx_afno_filter_saved_len) */
    float *h;                           /* (B, N, mlp_hidden) fc1 output, pre-GELU */
    float *mean1, *rstd1, *mean2, *rstd2; /* (B·N) */
} wx_fcn_tape_block;

/* One recorded forward. tok[i] (B, N, D) is the input of block i; tok[depth] feeds the head. */
typedef struct {
    int64_t b;
    float *xin;  /* (B, Cin, H, W) copy of the input (the caller may reuse its buffer) */
    float **tok; /* (depth + 1) pointers */
    wx_fcn_tape_block *blk; /* (depth) */
} wx_fcn_tape;

typedef struct wx_fcn_block_idx {
    int norm1_w, norm1_b, w1, b1, w2, b2, norm2_w, norm2_b, fc1_w, fc1_b, fc2_w, fc2_b;
} wx_fcn_block_idx;

typedef struct {
    wx_ctx *ctx;
    const wx_backend *be;
    wx_fcn_config d;          /* derived fields filled */
    int64_t hp, wp, wf, ntok; /* patch grid Hp×Wp, rfft width Wf, tokens Hp·Wp */
    int64_t mlp_hidden;       /* (int64)(D·mlp_ratio) */
    int64_t kept;             /* kept modes M */
    int64_t filter_saved;     /* wx_afno_filter_saved_len for one sample */
    uint8_t *mask;            /* (Hp, Wf) host */
    uint8_t *mask_dev;        /* its device copy when the backend is on a device, else NULL */
    wx_params params;
    int pos, pe_w, pe_b, norm_w, norm_b, head;
    wx_fcn_block_idx *blk;    /* (depth) */
    int64_t max_batch;
    int max_tapes, ntapes;    /* capacity, recorded now */
    wx_fcn_tape *tapes;       /* (max_tapes) */
    float *arena;             /* tapes then scratch */
    int64_t arena_len;        /* elements */
    struct {                  /* scratch, each for max_batch samples */
        float *u, *f, *v, *dcur, *d1, *tmp; /* (B, N, D) */
        float *spec, *dspec;                /* (B, Hp, Wf, D, 2) */
        float *g, *dg;                      /* (B, N, mlp_hidden) */
        float *z;                           /* (B, N, Cout·p·p) */
        float *mean, *rstd;                 /* (B·N) */
        float *fsaved;                      /* filter saved buffer, for wx_fcn_predict */
    } s;
} wx_fcn;

/* Creates the model with parameters initialised as NVlabs (§1.4) from stream 0 of `seed`, an
 * arena for max_batch samples and max_tapes recorded forwards (1 for one-step training, 2 for
 * the two-step fine-tune). Returns NULL with the error set on bad sizes or no memory. */
wx_fcn *wx_fcn_create(wx_ctx *ctx, const wx_backend *be, const wx_fcn_config *d, uint64_t seed,
                      int64_t max_batch, int max_tapes);
void wx_fcn_destroy(wx_fcn *m);

/* Re-initialises the parameters as at create (§1.4) from stream 0 of `seed`. */
void wx_fcn_init_params(wx_fcn *m, uint64_t seed);

/* Arena size in bytes for one sample and one tape (tape_bytes) and for the per-sample scratch
 * (scratch_bytes); the arena is max_tapes·tape_bytes·B + scratch_bytes·B. In floats per sample,
 * with N = Hp·Wp, S = Hp·Wf·D·2 (spectrum), F = M·D·2·(factor+1) (filter saved), Hm = MLP hidden:
 *   tape    = Cin·H·W + (depth+1)·N·D + depth·(N·D + S + F + N·Hm + 4N)
 *   scratch = 6·N·D + 2·S + 2·N·Hm + Cout·H·W + 2N + F
 * Paper configuration: 4.59 GiB per recorded forward and 0.87 GiB scratch per sample (fp32). */
void wx_fcn_arena_bytes(const wx_fcn_config *d, int64_t *tape_bytes, int64_t *scratch_bytes);

/* y(B,Cout,H,W) = f(x(B,Cin,H,W)), recording a tape for backward. B ≤ max_batch. y must not alias
 * x. Fails (WX_ERR_USAGE) when every tape is in use. */
wx_status wx_fcn_forward(wx_fcn *m, float *y, const float *x, int64_t b);
/* Same output without recording (inference, validation); needs no free tape. */
wx_status wx_fcn_predict(wx_fcn *m, float *y, const float *x, int64_t b);
/* Pops the latest tape: parameter grads += ∂L/∂θ, dx(B,Cin,H,W) = ∂L/∂x (overwrite; nullable),
 * given dy(B,Cout,H,W) = ∂L/∂y of that forward's output. */
wx_status wx_fcn_backward(wx_fcn *m, float *dx, const float *dy);
/* Drops every recorded tape (e.g. after a forward whose backward is not wanted). */
void wx_fcn_tapes_clear(wx_fcn *m);

static inline void wx_fcn_zero_grad(wx_fcn *m) { wx_params_zero_grad(&m->params); }
static inline int64_t wx_fcn_param_total(const wx_fcn *m) { return wx_params_total(&m->params); }

#endif
