#include "train/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/precipnet.h"
#include "train/distributed.h"

void wx_valid_result_free(wx_valid_result *r) {
    free(r->rmse);
    r->rmse = NULL;
}

/* Σ over samples of the area-weighted MSE of each channel, in normalised units.
 * y, t (n, C, H, W); acc (C) += . */
static void add_mse(const wx_dataset *ds, const float *y, const float *t, int64_t n, int nch,
                    double *acc) {
    int64_t hw = ds->h * ds->w;
    for (int64_t s = 0; s < n; s++)
        for (int c = 0; c < nch; c++) {
            const float *a = y + (s * nch + c) * hw, *b = t + (s * nch + c) * hw;
            double sum = 0;
            for (int64_t j = 0; j < ds->h; j++) {
                double row = 0;
                for (int64_t i = 0; i < ds->w; i++) {
                    double d = (double)a[j * ds->w + i] - (double)b[j * ds->w + i];
                    row += d * d;
                }
                sum += ds->wlat[j] * row;
            }
            acc[c] += sum / (double)hw;
        }
}

/* Model-side buffers live in the loss's backend memory (device memory on a device backend); the
 * data are read on the host, uploaded, and the scored predictions copied back. */
static float *vbuf(const wx_train_loss *l, int64_t n, const char *what) {
    if (!l->be->on_device) return wx_malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    return wx_backend_alloc(l->be, l->ctx, sizeof(float) * (size_t)n, what);
}

static void vfree(const wx_train_loss *l, float *p) {
    if (l->be->on_device) l->be->mem_free(l->ctx, p);
    else free(p);
}

wx_status wx_validate(wx_train_model *m, wx_dataset *ds, const wx_train_loss *loss,
                      const int64_t *leads, int nleads, int64_t max_samples, int64_t batch,
                      wx_valid_result *out) {
    memset(out, 0, sizeof *out);
    /* Records read per sample: lead 1 (for the loss) and the scored leads. */
    int64_t rl[WX_TRAIN_MAX_LEADS + 1];
    int nl = 0;
    if (leads[0] != 1) rl[nl++] = 1;
    for (int i = 0; i < nleads; i++) rl[nl++] = leads[i];
    int64_t total = ds->nvalid;
    if (max_samples > 0 && max_samples < total) total = max_samples;
    int nch = ds->nout;
    int64_t hw = ds->h * ds->w, cin = m->in_channels;
    const int dev = loss->be->on_device;
    float *hx = wx_malloc(sizeof(float) * (size_t)(batch * cin * hw)); /* host */
    float *x = dev ? vbuf(loss, batch * cin * hw, "validation input") : hx;
    float *xn[2]; /* inputs of the later steps (next_input) */
    for (int i = 0; i < 2; i++) xn[i] = vbuf(loss, batch * cin * hw, "validation inputs");
    wx_time *tt = wx_malloc(sizeof(wx_time) * (size_t)batch);
    float *tg = wx_malloc(sizeof(float) * (size_t)(nl * batch * nch * hw));
    float *y[2];
    for (int i = 0; i < 2; i++) y[i] = vbuf(loss, batch * nch * hw, "validation outputs");
    /* device: the lead-1 targets for the loss, and a host copy of a scored prediction */
    float *dtg = dev ? vbuf(loss, batch * nch * hw, "validation targets") : NULL;
    float *yh = dev ? wx_malloc(sizeof(float) * (size_t)(batch * nch * hw)) : NULL;
    int64_t *smp = wx_malloc(sizeof(int64_t) * (size_t)batch);
    float *ty = ds->target_log_eps > 0 ? wx_malloc(sizeof(float) * (size_t)(2 * batch * nch * hw)) : NULL;
    double *acc = wx_calloc((size_t)(nleads * nch), sizeof(double));
    double loss_sum = 0;
    wx_status st = WX_OK;
    if (!x || !xn[0] || !xn[1] || !y[0] || !y[1] || (dev && !dtg))
        st = WX_ERR_RUN; /* message set by wx_backend_alloc */
    /* Under MPI each rank scores a contiguous share of the samples; the sums are reduced below. */
    int64_t lo = total * wx_dist_rank() / wx_dist_size(), hi = total * (wx_dist_rank() + 1) / wx_dist_size();
    for (int64_t first = lo; st == WX_OK && first < hi; first += batch) {
        int64_t n = hi - first < batch ? hi - first : batch;
        for (int64_t s = 0; s < n; s++)
            smp[s] = ds->valid[(first + s) * ds->nvalid / total];
        st = wx_dataset_read_valid(ds, smp, n, rl, nl, hx, tg, tt);
        if (st == WX_OK && dev)
            st = loss->be->copy_h2d(loss->ctx, x, hx, sizeof(float) * (size_t)(n * cin * hw));
        const float *cur = x;
        int li = 0, lo = 0;
        for (int64_t step = 1; st == WX_OK && step <= rl[nl - 1]; step++) {
            float *yy = y[step % 2];
            st = m->ops->predict(m, yy, cur, n);
            if (st != WX_OK) break;
            if (rl[li] == step) {
                const float *t = tg + li * n * nch * hw;
                const int64_t len = n * nch * hw;
                if (step == 1) {
                    double v = 0;
                    const float *td = t;
                    if (dev) {
                        st = loss->be->copy_h2d(loss->ctx, dtg, t, sizeof(float) * (size_t)len);
                        td = dtg;
                    }
                    if (st == WX_OK) st = wx_train_loss_value(loss, &v, yy, td, n);
                    loss_sum += v * (double)n;
                }
                const float *ys = yy; /* the scored prediction on the host */
                if (st == WX_OK && dev && lo < nleads && leads[lo] == step) {
                    st = loss->be->copy_d2h(loss->ctx, yh, yy, sizeof(float) * (size_t)len);
                    ys = yh;
                }
                if (st != WX_OK) break;
                if (lo < nleads && leads[lo] == step) {
                    if (ds->target_log_eps > 0) { /* tp: RMSE after the inverse transform */
                        wx_precip_from_log(ty, ys, len, ds->target_log_eps);
                        wx_precip_from_log(ty + len, t, len, ds->target_log_eps);
                        add_mse(ds, ty, ty + len, n, nch, acc + lo++ * nch);
                    } else {
                        add_mse(ds, ys, t, n, nch, acc + lo++ * nch);
                    }
                }
                li++;
            }
            if (st != WX_OK || step == rl[nl - 1]) break;
            for (int64_t s = 0; s < n; s++) tt[s] += m->data.dt_s; /* the next target time */
            st = wx_train_model_next_input(m, xn[step % 2], cur, yy, tt, n);
            cur = xn[step % 2];
        }
    }
    st = wx_dist_agree(st);
    if (st == WX_OK) st = wx_dist_allreduce_f64(acc, nleads * nch, WX_DIST_SUM);
    if (st == WX_OK) st = wx_dist_allreduce_f64(&loss_sum, 1, WX_DIST_SUM);
    if (st == WX_OK) {
        out->nleads = nleads;
        memcpy(out->leads, leads, sizeof(int64_t) * (size_t)nleads);
        out->nch = nch;
        out->samples = total;
        out->loss = loss_sum / (double)total;
        out->rmse = wx_malloc(sizeof(double) * (size_t)(nleads * nch));
        for (int l = 0; l < nleads; l++)
            for (int c = 0; c < nch; c++)
                out->rmse[l * nch + c] = sqrt(acc[l * nch + c] / (double)total) *
                                         (ds->target_log_eps > 0 ? 1.0 : ds->std[ds->cout[c]]);
    }
    if (dev) vfree(loss, x);
    free(hx);
    vfree(loss, xn[0]);
    vfree(loss, xn[1]);
    free(tt);
    free(tg);
    vfree(loss, y[0]);
    vfree(loss, y[1]);
    if (dev) vfree(loss, dtg);
    free(yh);
    free(smp);
    free(ty);
    free(acc);
    return st;
}
