/* GraphCast behind wx_train_model, per step: the input (make_input, next_input), the state map,
 * predict, and the K-step rollout loss with its gradient. The channel layout, normalisation and
 * creation are train_model_gc.c.
 *
 * State map (normalization.py InputsAndResiduals): for a target that is also an input,
 *   ŷ_c = x[last_c] + S_c · out_c,   S_c = diff_std_c / std_c
 * (out is the network's normalised residual); a target-only variable is predicted normalised
 * directly, ŷ_c = out_c. The loss of a step (losses.py) is the weighted MSE of out against the
 * residual target (T − x[last])/S — with the input x[last] being the *predicted* one after the
 * first step, as autoregressive.py feeds predictions back — which equals the weighted MSE of ŷ
 * against T with channel weights / S². So the trainer's mse_latw on states, with the weights of
 * loss_weights, is exactly the published loss, and its gradient flows through x[last] too.
 *
 * Backends: the network runs where the model was created (device memory on CUDA, through the ops
 * path of graphcast_ops.h). The adapter's glue (forcings, the window shift, the state map and its
 * gradient) stays host code on host buffers; with the ops path (always on a device) the
 * interface's backend-memory arrays (loss_backward's x and targets, predict's and next_input's
 * tensors; make_input is the data layer's and stays on the host, train_model.h) are staged
 * through host copies, and the network's input, output and gradients through backend buffers
 * (d_*): a few (B, C, H, W) copies per step, small beside the network. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/forcings.h"
#include "models/graphcast.h"
#include "models/graphcast_ops.h"
#include "train/train_model.h"
#include "train/train_model_gc_priv.h"

/* ---- staging between the host glue and the backend (ops path) ---- */

static wx_status to_be(const gc_impl *im, float *dst, const float *src, int64_t n) {
    return im->be->copy_h2d(im->ctx, dst, src, sizeof(float) * (size_t)n);
}

static wx_status to_host(const gc_impl *im, float *dst, const float *src, int64_t n) {
    return im->be->copy_d2h(im->ctx, dst, src, sizeof(float) * (size_t)n);
}

/* out (B, Cout, HW) = network(in (B, Cin, HW)), host buffers; recording a tape unless `predict`. */
static wx_status net_forward(gc_impl *im, float *out, const float *in, int64_t b, int predict) {
    if (!im->be) return predict ? wx_gc_predict(im->gc, out, in, b) : wx_gc_forward(im->gc, out, in, b);
    const int64_t nx = b * im->c.in_channels * im->hw, ny = b * im->c.out_channels * im->hw;
    WX_TRY(to_be(im, im->d_in, in, nx));
    WX_TRY(predict ? wx_gc_run_predict(im->gc, im->d_out, im->d_in, b)
                   : wx_gc_run_forward(im->gc, im->d_out, im->d_in, b));
    return to_host(im, out, im->d_out, ny);
}

/* dx (B, Cin, HW; nullable) from dout (B, Cout, HW), host buffers. */
static wx_status net_backward(gc_impl *im, float *dx, const float *dout, int64_t b) {
    if (!im->be) return wx_gc_backward(im->gc, dx, dout);
    WX_TRY(to_be(im, im->d_dout, dout, b * im->c.out_channels * im->hw));
    WX_TRY(wx_gc_run_backward(im->gc, dx ? im->d_dx : NULL, im->d_dout));
    return dx ? to_host(im, dx, im->d_dx, b * im->c.in_channels * im->hw) : WX_OK;
}

/* The loss of a host prediction against backend targets. */
static wx_status loss_value(gc_impl *im, const wx_train_loss *l, double *v, const float *pred,
                            const float *target, int64_t b) {
    if (!im->be) return wx_train_loss_value(l, v, pred, target, b);
    WX_TRY(to_be(im, im->d_out, pred, b * im->c.out_channels * im->hw));
    return wx_train_loss_value(l, v, im->d_out, target, b);
}

/* dpred (host) = dloss · ∂loss/∂pred for a host prediction against backend targets. */
static wx_status loss_grad(gc_impl *im, const wx_train_loss *l, float *dpred, double dloss,
                           const float *pred, const float *target, int64_t b) {
    if (!im->be) return wx_train_loss_grad(l, dpred, dloss, pred, target, b);
    const int64_t n = b * im->c.out_channels * im->hw;
    WX_TRY(to_be(im, im->d_out, pred, n));
    WX_TRY(wx_train_loss_grad(l, im->d_dout, dloss, im->d_out, target, b));
    return to_host(im, dpred, im->d_dout, n);
}

/* Forcing q at time t, normalised, into x channel ch of one sample (x points at the sample). */
static wx_status put_forcing(gc_impl *im, float *xs, int q, int32_t ch, wx_time t) {
    WX_TRY(wx_forcing_fill(im->c.forcings[q], t, im->lat, im->c.nlat, im->lon, im->c.nlon, im->fbuf));
    float *dst = xs + ch * im->hw;
    const double mu = im->fmean[q], sd = im->fstd[q];
    for (int64_t p = 0; p < im->hw; p++) dst[p] = (float)(((double)im->fbuf[p] - mu) / sd);
    return WX_OK;
}

static void put_statics(gc_impl *im, const wx_train_model *tm, float *xs) {
    for (int i = 0; i < im->c.n_static; i++)
        memcpy(xs + im->stat_ch[i] * im->hw, tm->data.statics + i * im->hw,
               sizeof(float) * (size_t)im->hw);
}

wx_status wx_train_gc_make_input(wx_train_model *tm, float *x, const float *states,
                                 const wx_time *t1, int64_t b) {
    gc_impl *im = tm->impl;
    const int64_t cin = tm->in_channels, cout = tm->out_channels, hw = im->hw, W = im->W;
    const int64_t dt = tm->data.dt_s;
    if (dt <= 0) return wx_error_set(WX_ERR_USAGE, "graphcast: no data attached (time step unknown)");
    for (int64_t q = 0; q < b; q++) {
        float *xs = x + q * cin * hw;
        for (int64_t s = 0; s < W; s++) {
            for (int64_t c = 0; c < cout; c++) {
                int32_t ch = im->state_ch[s * cout + c];
                if (ch >= 0)
                    memcpy(xs + ch * hw, states + ((s * b + q) * cout + c) * hw,
                           sizeof(float) * (size_t)hw);
            }
        }
        for (int64_t s = 0; s <= W; s++)
            for (int f = 0; f < im->nf; f++)
                WX_TRY(put_forcing(im, xs, f, im->forc_ch[s * im->nf + f], t1[q] - (W - s) * dt));
        put_statics(im, tm, xs);
    }
    return WX_OK;
}

static wx_status gc_next_input(wx_train_model *tm, float *x1, const float *x0, const float *y0,
                               const wx_time *t2, int64_t b) {
    gc_impl *im = tm->impl;
    const int64_t cin = tm->in_channels, cout = tm->out_channels, hw = im->hw, W = im->W;
    const size_t row = sizeof(float) * (size_t)hw;
    for (int64_t q = 0; q < b; q++) {
        float *d = x1 + q * cin * hw;
        const float *s0 = x0 + q * cin * hw;
        /* the window moves one step: slot s ← slot s+1; the newest slot ← the prediction */
        for (int64_t c = 0; c < cout; c++) {
            for (int64_t s = 0; s + 1 < W; s++) {
                int32_t a = im->state_ch[s * cout + c], n = im->state_ch[(s + 1) * cout + c];
                if (a >= 0) memcpy(d + a * hw, s0 + n * hw, row);
            }
            int32_t l = im->state_ch[(W - 1) * cout + c];
            if (l >= 0) memcpy(d + l * hw, y0 + (q * cout + c) * hw, row);
        }
        /* forcings: input slots from the old ones (slot W−1 ← the old target time) */
        for (int f = 0; f < im->nf; f++) {
            for (int64_t s = 0; s < W; s++)
                memcpy(d + im->forc_ch[s * im->nf + f] * hw,
                       s0 + im->forc_ch[(s + 1) * im->nf + f] * hw, row);
            WX_TRY(put_forcing(im, d, f, im->forc_ch[W * im->nf + f], t2[q]));
        }
        put_statics(im, tm, d);
    }
    return WX_OK;
}

/* ŷ (B, Cout, HW) from the input x and the network output out. */
static void to_state(const gc_impl *im, const wx_train_model *tm, float *y, const float *x,
                     const float *out, int64_t b) {
    const int64_t cin = tm->in_channels, cout = tm->out_channels, hw = im->hw;
    for (int64_t q = 0; q < b; q++)
        for (int64_t c = 0; c < cout; c++) {
            int32_t l = im->state_ch[(im->W - 1) * cout + c];
            const float *o = out + (q * cout + c) * hw;
            float *yy = y + (q * cout + c) * hw;
            if (l < 0) {
                memcpy(yy, o, sizeof(float) * (size_t)hw);
                continue;
            }
            const float *xl = x + (q * cin + l) * hw, s = im->scale[c];
            for (int64_t p = 0; p < hw; p++) yy[p] = xl[p] + s * o[p];
        }
}

wx_status wx_train_gc_predict(wx_train_model *tm, float *y, const float *x, int64_t b) {
    gc_impl *im = tm->impl;
    if (!im->be) {
        WX_TRY(wx_gc_predict(im->gc, im->out, x, b));
        to_state(im, tm, y, x, im->out, b);
        return WX_OK;
    }
    const int64_t nx = b * tm->in_channels * im->hw, ny = b * tm->out_channels * im->hw;
    WX_TRY(to_host(im, im->hx, x, nx));
    WX_TRY(net_forward(im, im->out, im->hx, b, 1));
    to_state(im, tm, im->hy, im->hx, im->out, b);
    return to_be(im, y, im->hy, ny);
}

/* The interface's next_input on backend memory (staged on the ops path). make_input stays
 * wx_train_gc_make_input on host memory on every backend: the data layer builds x on the host and
 * the trainer uploads it (train_model.h, "Memory"). */
wx_status wx_train_gc_next_input_be(wx_train_model *tm, float *x1, const float *x0,
                                    const float *y0, const wx_time *t2, int64_t b) {
    gc_impl *im = tm->impl;
    if (!im->be) return gc_next_input(tm, x1, x0, y0, t2, b);
    const int64_t nx = b * tm->in_channels * im->hw, ny = b * tm->out_channels * im->hw;
    WX_TRY(to_host(im, im->hx, x0, nx));
    WX_TRY(to_host(im, im->out, y0, ny));
    WX_TRY(gc_next_input(tm, im->hy, im->hx, im->out, t2, b));
    return to_be(im, x1, im->hy, nx);
}

/* Loss averaged over the k steps; gradient through the fed-back predictions:
 *   x_1 = x;  out_j = f(x_j);  ŷ_j = x_j[last] + S·out_j;  x_{j+1} = next(x_j, ŷ_j, t_{j+1})
 *   L = (1/k) Σ_j mse_latw(ŷ_j, T_j). */
wx_status wx_train_gc_loss_backward(wx_train_model *tm, const wx_train_loss *loss, const float *x,
                                    const float *targets, const wx_time *t1, int64_t k, int64_t b,
                                    double *loss_out) {
    gc_impl *im = tm->impl;
    if (im->max_rollout < 1)
        return wx_error_set(WX_ERR_USAGE, "graphcast: this model was made for prediction only "
                            "(no rollout steps to train)");
    WX_ASSERT(k >= 1 && k <= im->max_rollout && b >= 1 && b <= im->maxb);
    if (loss->kind == WX_LOSS_REL_L2)
        return wx_error_set(WX_ERR_USAGE, "graphcast trains with loss.type graphcast (or "
                            "lat_weighted_mse), not relative_l2");
    const int64_t cin = tm->in_channels, cout = tm->out_channels, hw = im->hw, W = im->W;
    const int64_t n = b * cout * hw, nx = b * cin * hw;
    wx_time *tt = wx_malloc(sizeof(wx_time) * (size_t)b);
    wx_status st = WX_OK;
    wx_gc_tapes_clear(im->gc);
    if (im->be && (st = to_host(im, im->hx, x, nx)) != WX_OK) {
        free(tt);
        return st;
    }
    const float *in = im->be ? im->hx : x;
    float *bufs[2] = {im->xa, im->xb};
    double total = 0;
    for (int64_t j = 0; st == WX_OK && j < k; j++) {
        float *pj = im->pred + j * n;
        st = net_forward(im, im->out, in, b, 0);
        if (st != WX_OK) break;
        to_state(im, tm, pj, in, im->out, b);
        double v = 0;
        st = loss_value(im, loss, &v, pj, targets + j * n, b);
        total += v;
        if (st == WX_OK && j + 1 < k) {
            for (int64_t q = 0; q < b; q++) tt[q] = t1[q] + (j + 1) * tm->data.dt_s;
            float *nx1 = bufs[j % 2];
            st = gc_next_input(tm, nx1, in, pj, tt, b);
            in = nx1;
        }
    }
    /* Backward, last step first. ga = ∂L/∂x_{j+1} (state channels only) from the later steps. */
    for (int64_t j = k - 1; st == WX_OK && j >= 0; j--) {
        st = loss_grad(im, loss, im->dpred, 1.0 / (double)k, im->pred + j * n, targets + j * n, b);
        if (st != WX_OK) break;
        if (j < k - 1) /* x_{j+1}[newest slot] = ŷ_j */
            for (int64_t q = 0; q < b; q++)
                for (int64_t c = 0; c < cout; c++) {
                    int32_t l = im->state_ch[(W - 1) * cout + c];
                    if (l < 0) continue;
                    const float *g = im->ga + (q * cin + l) * hw;
                    float *dp = im->dpred + (q * cout + c) * hw;
                    for (int64_t p = 0; p < hw; p++) dp[p] += g[p];
                }
        /* ŷ = x[last] + S·out  →  ∂/∂out = S·∂/∂ŷ (target-only: ∂/∂out = ∂/∂ŷ) */
        for (int64_t q = 0; q < b; q++)
            for (int64_t c = 0; c < cout; c++) {
                int32_t l = im->state_ch[(W - 1) * cout + c];
                const float s = l < 0 ? 1.0f : im->scale[c];
                const float *dp = im->dpred + (q * cout + c) * hw;
                float *d = im->dout + (q * cout + c) * hw;
                for (int64_t p = 0; p < hw; p++) d[p] = s * dp[p];
            }
        if (j == 0) {
            st = net_backward(im, NULL, im->dout, b);
            break;
        }
        /* ∂L/∂x_j = network part + ŷ's direct x[last] term + the window shift of x_{j+1} */
        st = net_backward(im, im->gb, im->dout, b);
        if (st != WX_OK) break;
        for (int64_t q = 0; q < b; q++)
            for (int64_t c = 0; c < cout; c++) {
                int32_t l = im->state_ch[(W - 1) * cout + c];
                if (l < 0) continue;
                float *g = im->gb + (q * cin + l) * hw;
                const float *dp = im->dpred + (q * cout + c) * hw;
                for (int64_t p = 0; p < hw; p++) g[p] += dp[p];
                if (j < k - 1) /* x_{j+1}[slot s] = x_j[slot s+1] */
                    for (int64_t s = 0; s + 1 < W; s++) {
                        int32_t a = im->state_ch[s * cout + c], nn = im->state_ch[(s + 1) * cout + c];
                        if (a < 0) continue;
                        const float *ga = im->ga + (q * cin + a) * hw;
                        float *gn = im->gb + (q * cin + nn) * hw;
                        for (int64_t p = 0; p < hw; p++) gn[p] += ga[p];
                    }
            }
        float *t = im->ga;
        im->ga = im->gb, im->gb = t;
    }
    free(tt);
    if (st != WX_OK) wx_gc_tapes_clear(im->gc);
    *loss_out = total / (double)k;
    return st;
}
