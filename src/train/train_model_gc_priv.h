/* The GraphCast adapter's state, shared by train_model_gc.c (channel layout, normalisation,
 * creation) and train_model_gc_rollout.c (inputs, the state map, predict, the rollout loss and its
 * gradient). Private to src/train. */
#ifndef WX_TRAIN_MODEL_GC_PRIV_H
#define WX_TRAIN_MODEL_GC_PRIV_H

#include "models/graphcast.h"
#include "train/train_model.h"

typedef struct {
    wx_gc *gc;
    wx_gc_config c;
    int64_t W, maxb, max_rollout, hw;
    int nf;                     /* forcings */
    int32_t *state_ch;          /* (W, Cout): input channel of state c at time slot s; −1 none */
    int32_t *forc_ch;           /* (W + 1, nf): slot W is the target time */
    int32_t *stat_ch;           /* (n_static) */
    double *lat, *lon;          /* (H), (W) degrees */
    double *fmean, *fstd;       /* (nf) forcing normalisation */
    float *scale;               /* (Cout) S_c; 0 for target-only channels */
    wx_train_channel *state_desc, *static_desc;
    float *out, *pred, *xa, *xb, *dout, *dpred, *ga, *gb, *fbuf;
    char *config_text;
    /* staging (ops path only, else NULL): the backend and its buffers */
    const wx_backend *be;
    wx_ctx *ctx;
    float *hx, *hy;             /* host (B, Cin, HW), (B, max(Cin, Cout), HW) */
    float *d_in, *d_out, *d_dout, *d_dx; /* backend (B, Cin|Cout, HW) */
} gc_impl;

/* The adapter's wx_train_model_ops entries that train_model_gc_rollout.c defines. */
wx_status wx_train_gc_make_input(wx_train_model *tm, float *x, const float *states,
                                 const wx_time *t1, int64_t b);
wx_status wx_train_gc_next_input_be(wx_train_model *tm, float *x1, const float *x0,
                                    const float *y0, const wx_time *t2, int64_t b);
wx_status wx_train_gc_predict(wx_train_model *tm, float *y, const float *x, int64_t b);
wx_status wx_train_gc_loss_backward(wx_train_model *tm, const wx_train_loss *loss, const float *x,
                                    const float *targets, const wx_time *t1, int64_t k, int64_t b,
                                    double *loss_out);

#endif
