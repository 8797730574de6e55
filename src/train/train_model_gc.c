/* GraphCast behind wx_train_model (train_model.h): input layout, forcings, the state/residual map,
 * the K-step rollout loss and its gradient.
 *
 * Input channels, in the published order (graphcast.md reference §1.7, model_utils
 * dataset_to_stacked): every input variable — state variables fed as inputs, forcings, statics —
 * sorted by name; each variable time outer (t − (W−1)·dt … t; statics have no time), level inner;
 * then the forcings at the target time, sorted by name. W = input_steps. in_channels therefore
 * matches wx_gc_config's count.
 *
 * Normalisation: states (x − mean)/std with the archive's statistics (m->data); statics likewise
 * (done by the data layer); forcings here: TISR by a mean and std computed once from the same
 * ERA5-style formula (10° grid, 146 times over a year, every 61 h so all hours are sampled),
 * year/day progress sin/cos by their exact mean 0 and std 1/√2 — unless the data gives forcing
 * statistics (m->data.forcing_*: a DeepMind checkpoint imported with --data), used as given.
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

#include "meteo/wx_catalogue.h"
#include "models/forcings.h"
#include "models/graphcast.h"
#include "models/graphcast_ops.h"
#include "train/train_model.h"

enum { SLOT_STATE, SLOT_FORCING, SLOT_STATIC };

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

/* Input variable v of the sorted list. */
typedef struct {
    const char *name;
    int kind, idx; /* SLOT_*, index into states (first channel)/forcings/statics */
    int levels;    /* 1, or n_levels for atmospheric variables */
} in_var;

static int in_var_cmp(const void *a, const void *b) {
    return strcmp(((const in_var *)a)->name, ((const in_var *)b)->name);
}

static int is_target_only(const wx_gc_config *c, const char *name) {
    for (int i = 0; i < c->n_target_only; i++)
        if (!strcmp(c->target_only[i], name)) return 1;
    return 0;
}

static void build_layout(gc_impl *im) {
    const wx_gc_config *c = &im->c;
    const int64_t W = im->W, cout = c->out_channels;
    in_var *v = wx_calloc((size_t)(c->n_surface + c->n_atmos + c->n_forcings + c->n_static) + 1,
                          sizeof *v);
    int nv = 0;
    for (int i = 0; i < c->n_surface; i++)
        if (!is_target_only(c, c->surface[i])) v[nv++] = (in_var){c->surface[i], SLOT_STATE, i, 1};
    for (int i = 0; i < c->n_atmos; i++)
        if (!is_target_only(c, c->atmos[i]))
            v[nv++] = (in_var){c->atmos[i], SLOT_STATE, c->n_surface + i * c->n_levels, c->n_levels};
    for (int i = 0; i < c->n_forcings; i++) v[nv++] = (in_var){c->forcings[i], SLOT_FORCING, i, 1};
    for (int i = 0; i < c->n_static; i++) v[nv++] = (in_var){c->statics[i], SLOT_STATIC, i, 1};
    qsort(v, (size_t)nv, sizeof *v, in_var_cmp);
    for (int64_t i = 0; i < W * cout; i++) im->state_ch[i] = -1;
    int32_t k = 0;
    for (int i = 0; i < nv; i++) {
        if (v[i].kind == SLOT_STATIC) {
            im->stat_ch[v[i].idx] = k++;
            continue;
        }
        for (int64_t s = 0; s < W; s++)
            for (int l = 0; l < v[i].levels; l++) {
                if (v[i].kind == SLOT_STATE) im->state_ch[s * cout + v[i].idx + l] = k++;
                else im->forc_ch[s * im->nf + v[i].idx] = k++;
            }
    }
    /* target-time forcings, sorted by name */
    int *fo = wx_calloc((size_t)im->nf + 1, sizeof(int));
    for (int i = 0; i < im->nf; i++) fo[i] = i;
    for (int i = 1; i < im->nf; i++)
        for (int j = i; j > 0 && strcmp(c->forcings[fo[j - 1]], c->forcings[fo[j]]) > 0; j--) {
            int t = fo[j];
            fo[j] = fo[j - 1], fo[j - 1] = t;
        }
    for (int i = 0; i < im->nf; i++) im->forc_ch[W * im->nf + fo[i]] = k++;
    WX_ASSERT(k == c->in_channels);
    free(fo);
    free(v);
}

/* Forcing normalisation constants (see the header comment). */
static wx_status forcing_stats(gc_impl *im) {
    const int nlat = 19, nlon = 36, nt = 146;
    double lat[19], lon[36];
    for (int j = 0; j < nlat; j++) lat[j] = 90.0 - 10.0 * j;
    for (int i = 0; i < nlon; i++) lon[i] = 10.0 * i;
    float *f = wx_malloc(sizeof(float) * nlat * nlon);
    for (int q = 0; q < im->nf; q++) {
        const char *name = im->c.forcings[q];
        if (strcmp(name, "toa_incident_solar_radiation") && strcmp(name, "tisr")) {
            /* sin/cos of a uniformly advancing phase: mean 0, std 1/√2; checks the name */
            wx_status st = wx_forcing_fill(name, 0, lat, 1, lon, 1, f);
            if (st != WX_OK) {
                free(f);
                return wx_error_wrap(WX_ERR_USAGE, "graphcast forcings: ");
            }
            im->fmean[q] = 0.0, im->fstd[q] = sqrt(0.5);
            continue;
        }
        /* area-weighted moments (cos lat) over the sample */
        double s0 = 0, s1 = 0, s2 = 0;
        wx_time t0 = wx_time_make(2001, 1, 1, 0, 0, 0);
        for (int k = 0; k < nt; k++) {
            wx_forcing_toa_radiation(t0 + (wx_time)k * 61 * 3600, lat, nlat, lon, nlon, f);
            for (int j = 0; j < nlat; j++) {
                double w = cos(lat[j] * M_PI / 180.0);
                for (int i = 0; i < nlon; i++) {
                    double x = f[j * nlon + i];
                    s0 += w, s1 += w * x, s2 += w * x * x;
                }
            }
        }
        im->fmean[q] = s1 / s0;
        im->fstd[q] = sqrt(s2 / s0 - im->fmean[q] * im->fmean[q]);
    }
    free(f);
    return WX_OK;
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

static wx_status gc_make_input(wx_train_model *tm, float *x, const float *states, const wx_time *t1,
                               int64_t b) {
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

static wx_status gc_predict(wx_train_model *tm, float *y, const float *x, int64_t b) {
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
 * gc_make_input on host memory on every backend: the data layer builds x on the host and the
 * trainer uploads it (train_model.h, "Memory"). */
static wx_status gc_next_input_be(wx_train_model *tm, float *x1, const float *x0, const float *y0,
                                  const wx_time *t2, int64_t b) {
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
static wx_status gc_loss_backward(wx_train_model *tm, const wx_train_loss *loss, const float *x,
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

static wx_status gc_attach(wx_train_model *tm) {
    gc_impl *im = tm->impl;
    const int64_t cout = tm->out_channels;
    /* Forcing statistics given with the data (a DeepMind checkpoint imported with --data: its
     * stats files) replace the computed ones, every forcing by name. */
    for (int q = 0; tm->data.nforcing && q < im->nf; q++) {
        int k = 0;
        while (k < tm->data.nforcing && strcmp(tm->data.forcing_names[k], im->c.forcings[q])) k++;
        if (k == tm->data.nforcing || !(tm->data.forcing_std[k] > 0))
            return wx_error_set(WX_ERR_RUN, "graphcast: the data's forcing statistics %s forcing "
                                "%s", k == tm->data.nforcing ? "lack" : "have std <= 0 for",
                                im->c.forcings[q]);
        im->fmean[q] = tm->data.forcing_mean[k], im->fstd[q] = tm->data.forcing_std[k];
    }
    for (int64_t c = 0; c < cout; c++) {
        if (im->state_ch[(im->W - 1) * cout + c] < 0) {
            im->scale[c] = 0;
            continue;
        }
        double sd = tm->data.std[c], dd = tm->data.diff_std[c];
        if (!(sd > 0) || !(dd > 0))
            return wx_error_set(WX_ERR_RUN, "graphcast: state channel %s has std %g and 6-hour "
                                "difference std %g; the residual output needs both > 0 (archive "
                                "statistics with diff_std)", tm->data.names[c], sd, dd);
        im->scale[c] = (float)(dd / sd);
    }
    return WX_OK;
}

static wx_status gc_loss_weights(wx_train_model *tm, float *wlat, float *wch) {
    gc_impl *im = tm->impl;
    WX_TRY(wx_gc_loss_weights(&im->c, im->lat, wlat, wch));
    for (int64_t c = 0; c < tm->out_channels; c++)
        if (im->scale[c] > 0) wch[c] = (float)((double)wch[c] / ((double)im->scale[c] * im->scale[c]));
    return WX_OK;
}

static void gc_print_config(const wx_train_model *tm, FILE *out) {
    const gc_impl *im = tm->impl;
    fputs(im->config_text, out);
}

static void gc_destroy(wx_train_model *tm) {
    gc_impl *im = tm->impl;
    wx_gc_destroy(im->gc);
    free(im->state_ch), free(im->forc_ch), free(im->stat_ch);
    free(im->lat), free(im->lon), free(im->fmean), free(im->fstd), free(im->scale);
    free(im->state_desc), free(im->static_desc);
    free(im->out), free(im->pred), free(im->xa), free(im->xb), free(im->dout), free(im->dpred);
    free(im->ga), free(im->gb), free(im->fbuf);
    free(im->config_text);
    free(im->hx), free(im->hy);
    if (im->be) {
        im->be->mem_free(im->ctx, im->d_in), im->be->mem_free(im->ctx, im->d_out);
        im->be->mem_free(im->ctx, im->d_dout), im->be->mem_free(im->ctx, im->d_dx);
    }
    free(im);
}

static const wx_train_model_ops gc_ops = {gc_loss_backward, gc_predict,       gc_print_config,
                                          gc_destroy,       gc_make_input,    gc_next_input_be,
                                          gc_attach,        gc_loss_weights};

/* "total_precipitation_6hr" names the 6-hour accumulation of total_precipitation. */
static void desc(wx_train_channel *d, const char *name, double level, int kind) {
    snprintf(d->name, sizeof d->name, "%s", name);
    d->level = level, d->kind = kind;
}

wx_status wx_train_model_gc_create(const wx_yaml *map, const char *path, wx_ctx *ctx,
                                   const wx_backend *be, uint64_t seed, int64_t max_batch,
                                   int64_t max_rollout, int act_checkpoint, wx_train_model **out);
wx_status wx_train_model_gc_create(const wx_yaml *map, const char *path, wx_ctx *ctx,
                                   const wx_backend *be, uint64_t seed, int64_t max_batch,
                                   int64_t max_rollout, int act_checkpoint, wx_train_model **out) {
    wx_gc_config c;
    WX_TRY(wx_gc_config_parse(map, path, &c));
    gc_impl *im = wx_calloc(1, sizeof *im);
    im->c = c, im->W = c.input_steps, im->maxb = max_batch, im->max_rollout = max_rollout;
    im->hw = c.nlat * c.nlon, im->nf = c.n_forcings;
    const int64_t cout = c.out_channels, cin = c.in_channels, hw = im->hw;
    im->state_ch = wx_calloc((size_t)(im->W * cout), sizeof(int32_t));
    im->forc_ch = wx_calloc((size_t)((im->W + 1) * im->nf) + 1, sizeof(int32_t));
    im->stat_ch = wx_calloc((size_t)c.n_static + 1, sizeof(int32_t));
    build_layout(im);
    im->lat = wx_malloc(sizeof(double) * (size_t)c.nlat);
    im->lon = wx_malloc(sizeof(double) * (size_t)c.nlon);
    for (int64_t j = 0; j < c.nlat; j++) im->lat[j] = 90.0 - (double)j * c.resolution;
    for (int64_t i = 0; i < c.nlon; i++) im->lon[i] = (double)i * c.resolution;
    im->fmean = wx_calloc((size_t)im->nf + 1, sizeof(double));
    im->fstd = wx_calloc((size_t)im->nf + 1, sizeof(double));
    im->scale = wx_calloc((size_t)cout, sizeof(float));
    im->fbuf = wx_malloc(sizeof(float) * (size_t)hw);
    im->config_text = NULL;
    wx_train_model *tm = wx_calloc(1, sizeof *tm);
    tm->ops = &gc_ops, tm->family = "graphcast", tm->impl = im;
    wx_status st = forcing_stats(im);
    if (st == WX_OK) {
        im->gc = wx_gc_create(ctx, be, &c, seed, max_batch, (int)max_rollout, act_checkpoint);
        if (!im->gc) st = wx_error_wrap(WX_ERR_RUN, "model: ");
    }
    if (st != WX_OK) {
        gc_destroy(tm);
        free(tm);
        return st;
    }
    size_t n = (size_t)(max_batch * cout * hw), nx = (size_t)(max_batch * cin * hw);
    /* A model made for prediction only (max_rollout 0: forecasts, rollouts) has no gradient
     * buffers, host or device: at 0.25° each is 0.3–0.5 GB per sample. */
    const int train = max_rollout > 0;
    im->out = wx_malloc(sizeof(float) * n);
    im->pred = train ? wx_malloc(sizeof(float) * n * (size_t)max_rollout) : NULL;
    im->dout = train ? wx_malloc(sizeof(float) * n) : NULL;
    im->dpred = train ? wx_malloc(sizeof(float) * n) : NULL;
    im->xa = wx_malloc(sizeof(float) * nx);
    im->xb = wx_malloc(sizeof(float) * nx);
    im->ga = train ? wx_malloc(sizeof(float) * nx) : NULL;
    im->gb = train ? wx_malloc(sizeof(float) * nx) : NULL;
    if (im->gc->ops) { /* staging for the ops path (device memory on CUDA) */
        im->be = be, im->ctx = ctx;
        im->hx = wx_malloc(sizeof(float) * nx);
        im->hy = wx_malloc(sizeof(float) * (nx > n ? nx : n));
        im->d_in = wx_backend_alloc(be, ctx, sizeof(float) * nx, "graphcast input");
        im->d_out = wx_backend_alloc(be, ctx, sizeof(float) * n, "graphcast output");
        if (train) {
            im->d_dout = wx_backend_alloc(be, ctx, sizeof(float) * n, "graphcast output gradient");
            im->d_dx = wx_backend_alloc(be, ctx, sizeof(float) * nx, "graphcast input gradient");
        }
        if (!im->d_in || !im->d_out || (train && (!im->d_dout || !im->d_dx))) {
            gc_destroy(tm);
            free(tm);
            return WX_ERR_RUN; /* message set by wx_backend_alloc */
        }
    }
    /* what the data layer must find */
    im->state_desc = wx_calloc((size_t)cout, sizeof *im->state_desc);
    int64_t k = 0;
    for (int i = 0; i < c.n_surface; i++) desc(&im->state_desc[k++], c.surface[i], 0, WX_LEVEL_SINGLE);
    for (int i = 0; i < c.n_atmos; i++)
        for (int l = 0; l < c.n_levels; l++)
            desc(&im->state_desc[k++], c.atmos[i], c.levels[l], WX_LEVEL_PRESSURE);
    for (int64_t j = 0; j < k; j++)
        im->state_desc[j].output_only = is_target_only(&c, im->state_desc[j].name);
    im->static_desc = wx_calloc((size_t)c.n_static + 1, sizeof *im->static_desc);
    for (int i = 0; i < c.n_static; i++) desc(&im->static_desc[i], c.statics[i], 0, WX_LEVEL_STATIC);
    size_t len = 0;
    FILE *mem = open_memstream(&im->config_text, &len);
    WX_ASSERT(mem != NULL);
    wx_gc_config_print(mem, map, 0);
    fclose(mem);
    tm->params = &im->gc->params;
    tm->in_channels = cin, tm->out_channels = cout, tm->h = c.nlat, tm->w = c.nlon;
    tm->window = im->W;
    tm->nstate = (int)cout, tm->state = im->state_desc;
    tm->nstatic = c.n_static, tm->statics = im->static_desc;
    *out = tm;
    return WX_OK;
}
