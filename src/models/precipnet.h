/* PrecipNet: the FourCastNet precipitation model (NVlabs networks/afnonet.py PrecipNet,
 * shared/reference/fourcastnet.md §1.5).
 *
 *   x(B,Cin,H,W) → backbone: AFNONet (models/fourcastnet.h) with Cout output channels (1 in the
 *   paper) → z(B,Cout,H,W) → PeriodicPad2d(1) + Conv2d(Cout→Cout, 3×3, bias) (the conv3x3 op)
 *   → a → ReLU → y(B,Cout,H,W)
 *
 * The model predicts precipitation in the transformed space x = log1p(tp/ε), ε = 1e-5 (NVlabs
 * precip_eps); wx_precip_to_log / wx_precip_from_log convert (the inverse is NVlabs unlog_tp).
 *
 * Parameters: one flat table with the NVlabs state_dict names, "backbone.<AFNONet name>" for the
 * backbone (backbone.pos_embed, backbone.blocks.0.filter.w1, ..., backbone.norm.weight,
 * backbone.head.weight) followed by conv.weight (Cout,Cout,3,3) and conv.bias (Cout); `ppad` has
 * no parameters. The backbone's own table views the same buffers (same tensors, same offsets), so
 * optimizers and checkpoints work on params alone. Initialisation: the backbone as wx_fcn_create
 * (stream 0 of the seed), the conv as PyTorch's default Conv2d init, U(±1/√(Cout·9)) for weight
 * and bias (stream 3 of the seed).
 *
 * Tapes work as in fourcastnet.h: each wx_precip_forward records one, each wx_precip_backward pops
 * the latest. Parameters, tapes and scratch are in the backend's memory (device memory on CUDA),
 * as the backbone's; so are x, y, dx and dy of the functions below. */
#ifndef WX_PRECIPNET_H
#define WX_PRECIPNET_H

#include <stdint.h>

#include "models/fourcastnet.h"

#define WX_PRECIP_EPS 1e-5

typedef struct {
    wx_ctx *ctx;
    const wx_backend *be;
    wx_fcn *backbone;
    wx_params params;    /* backbone.* then conv.weight, conv.bias */
    int conv_w, conv_b;  /* indices in params */
    int64_t c, h, w;     /* Cout, H, W */
    int64_t max_batch;
    int max_tapes, ntapes;
    int64_t *tape_b;     /* (max_tapes) batch of each recorded forward */
    float *z, *a;        /* (max_tapes + 1, max_batch, Cout, H, W): backbone and conv outputs;
                          * the last slot serves wx_precip_predict */
    float *dz, *da;      /* (max_batch, Cout, H, W) scratch */
} wx_precip;

/* The parameter table of a PrecipNet on backbone config d, into p (initialised by the caller, not
 * allocated): counts the size of any configuration (paper: 73,757,962). */
void wx_precip_param_table(wx_params *p, const wx_fcn_config *d);

/* Creates the model for backbone config d (d->out_channels output channels), max_batch samples and
 * max_tapes recorded forwards. NULL with the error set on bad sizes or no memory. */
wx_precip *wx_precip_create(wx_ctx *ctx, const wx_backend *be, const wx_fcn_config *d,
                            uint64_t seed, int64_t max_batch, int max_tapes);
void wx_precip_destroy(wx_precip *m);

/* y(B,Cout,H,W) = PrecipNet(x(B,Cin,H,W)) in log1p(tp/ε) space, recording a tape. */
wx_status wx_precip_forward(wx_precip *m, float *y, const float *x, int64_t b);
/* The same output without recording. */
wx_status wx_precip_predict(wx_precip *m, float *y, const float *x, int64_t b);
/* Pops the latest tape: parameter grads += ∂L/∂θ; dx(B,Cin,H,W) = ∂L/∂x (overwrite, nullable)
 * from dy(B,Cout,H,W) = ∂L/∂y. */
wx_status wx_precip_backward(wx_precip *m, float *dx, const float *dy);
void wx_precip_tapes_clear(wx_precip *m);

static inline void wx_precip_zero_grad(wx_precip *m) { wx_params_zero_grad(&m->params); }

/* out(n) = log1p(max(tp, 0)/eps): the training target transform (NVlabs reshape_precip). Negative
 * tp (packing noise in GRIB accumulations) is taken as 0 so the log stays defined. out may be tp. */
void wx_precip_to_log(float *out, const float *tp, int64_t n, double eps);
/* out(n) = eps·(exp(x) − 1): the inverse (NVlabs unlog_tp), in physical units. out may be x. */
void wx_precip_from_log(float *out, const float *x, int64_t n, double eps);

#endif
