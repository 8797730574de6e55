/* PrecipNet: AFNO backbone → periodic 3×3 conv → ReLU (models/precipnet.h), through the backend
 * table: the padding (periodic in longitude, zero in latitude) is the conv3x3 op's own, so the
 * head runs on any backend, its buffers in the backend's memory. */
#include "models/precipnet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_rng.h"

/* The table in NVlabs PrecipNet state_dict order: backbone.* (AFNONet's order), conv.weight,
 * conv.bias. Returns the index of conv.weight (conv.bias follows). */
static int precip_table(wx_params *p, const wx_fcn_config *d) {
    wx_params bb;
    wx_params_init(&bb);
    wx_fcn_param_table(&bb, d);
    char name[WX_PARAM_NAME_MAX];
    for (int i = 0; i < bb.count; i++) {
        int n = snprintf(name, sizeof name, "backbone.%s", bb.t[i].name);
        WX_ASSERT(n > 0 && n < (int)sizeof name);
        wx_params_add(p, name, bb.t[i].ndim, bb.t[i].dims, bb.t[i].flags);
    }
    wx_params_free(&bb);
    const int64_t c = d->out_channels;
    int w = wx_params_add(p, "conv.weight", 4, (const int64_t[]){c, c, 3, 3}, 0);
    wx_params_add(p, "conv.bias", 1, (const int64_t[]){c}, WX_PARAM_NO_DECAY);
    return w;
}

void wx_precip_param_table(wx_params *p, const wx_fcn_config *d) { (void)precip_table(p, d); }

wx_precip *wx_precip_create(wx_ctx *ctx, const wx_backend *be, const wx_fcn_config *d,
                            uint64_t seed, int64_t max_batch, int max_tapes) {
    wx_fcn *bb = wx_fcn_create(ctx, be, d, seed, max_batch, max_tapes);
    if (!bb) return NULL;
    wx_precip *m = wx_calloc(1, sizeof *m);
    m->ctx = ctx, m->be = be, m->backbone = bb;
    m->c = d->out_channels, m->h = d->img_h, m->w = d->img_w;
    m->max_batch = max_batch, m->max_tapes = max_tapes;
    wx_params_init(&m->params);
    m->conv_w = precip_table(&m->params, d);
    m->conv_b = m->conv_w + 1;
    /* The backbone's tensors come first in the same order and sizes, hence at the same offsets:
     * its table can view this buffer. */
    WX_ASSERT(m->conv_w == bb->params.count);
    for (int i = 0; i < bb->params.count; i++)
        WX_ASSERT(m->params.t[i].offset == bb->params.t[i].offset);
    /* The head's buffers, as the parameters, in the backend's memory (device memory on CUDA). */
    const size_t one = sizeof(float) * (size_t)(max_batch * m->c * m->h * m->w);
    m->tape_b = wx_calloc((size_t)(max_tapes + 1), sizeof *m->tape_b);
    m->z = wx_backend_alloc(be, ctx, one * (size_t)(max_tapes + 1), "precipnet backbone outputs");
    m->a = m->z ? wx_backend_alloc(be, ctx, one * (size_t)(max_tapes + 1), "precipnet conv outputs")
                : NULL;
    m->dz = m->a ? wx_backend_alloc(be, ctx, one, "precipnet gradient") : NULL;
    m->da = m->dz ? wx_backend_alloc(be, ctx, one, "precipnet gradient") : NULL;
    if (!m->da || wx_params_alloc_on(&m->params, be, ctx) != WX_OK) {
        wx_precip_destroy(m);
        return NULL;
    }
    /* Move the backbone's (initialised) weights into the shared buffer, then view it. */
    const size_t bbytes = sizeof(float) * (size_t)bb->params.len;
    wx_status st = WX_OK;
    if (be->on_device) {
        st = be->copy_d2d(ctx, m->params.data, bb->params.data, bbytes);
        be->mem_free(ctx, bb->params.data);
        be->mem_free(ctx, bb->params.grad);
    } else {
        memcpy(m->params.data, bb->params.data, bbytes);
        free(bb->params.data);
        free(bb->params.grad);
    }
    bb->params.data = m->params.data;
    bb->params.grad = m->params.grad;
    /* The conv's init on the host (same stream and order on every backend), then into place. */
    const int64_t nw = m->params.t[m->conv_w].size, nb = m->params.t[m->conv_b].size;
    float *hw = wx_malloc(sizeof(float) * (size_t)(nw + nb));
    wx_rng r;
    wx_rng_init(&r, seed, 3);
    float bound = (float)(1.0 / sqrt((double)(m->c * 9)));
    wx_rng_fill_uniform_f32(&r, hw, nw, -bound, bound);
    wx_rng_fill_uniform_f32(&r, hw + nw, nb, -bound, bound);
    float *dw = wx_params_tensor(&m->params, m->conv_w), *db = wx_params_tensor(&m->params, m->conv_b);
    if (be->on_device) {
        if (st == WX_OK) st = be->copy_h2d(ctx, dw, hw, sizeof(float) * (size_t)nw);
        if (st == WX_OK) st = be->copy_h2d(ctx, db, hw + nw, sizeof(float) * (size_t)nb);
    } else {
        memcpy(dw, hw, sizeof(float) * (size_t)nw);
        memcpy(db, hw + nw, sizeof(float) * (size_t)nb);
    }
    free(hw);
    if (st != WX_OK) { /* message set by the copy */
        wx_precip_destroy(m);
        return NULL;
    }
    return m;
}

void wx_precip_destroy(wx_precip *m) {
    if (!m) return;
    if (m->backbone && m->params.data) {
        /* The backbone views our buffers: detach them so it does not free them. */
        m->backbone->params.data = NULL;
        m->backbone->params.grad = NULL;
    }
    wx_fcn_destroy(m->backbone);
    wx_params_free(&m->params);
    free(m->tape_b);
    m->be->mem_free(m->ctx, m->z); /* NULL is a no-op */
    m->be->mem_free(m->ctx, m->a);
    m->be->mem_free(m->ctx, m->dz);
    m->be->mem_free(m->ctx, m->da);
    free(m);
}

void wx_precip_tapes_clear(wx_precip *m) {
    m->ntapes = 0;
    wx_fcn_tapes_clear(m->backbone);
}

/* Backbone output z, conv output a and y = ReLU(a), slot `slot` of z/a; records when tape. */
static wx_status precip_run(wx_precip *m, float *y, const float *x, int64_t b, int slot,
                            int tape) {
    if (b < 1 || b > m->max_batch)
        return wx_error_set(WX_ERR_USAGE, "precipnet: batch %lld: expected 1..%lld", (long long)b,
                            (long long)m->max_batch);
    const int64_t n = b * m->c * m->h * m->w, stride = m->max_batch * m->c * m->h * m->w;
    float *z = m->z + slot * stride, *a = m->a + slot * stride;
    if (tape) WX_TRY(wx_fcn_forward(m->backbone, z, x, b));
    else WX_TRY(wx_fcn_predict(m->backbone, z, x, b));
    /* a = conv(ppad(z)) */
    WX_TRY(m->be->conv3x3_forward(m->ctx, a, z, wx_params_tensor(&m->params, m->conv_w),
                                  wx_params_tensor(&m->params, m->conv_b), b, m->c, m->h, m->w,
                                  m->c));
    /* y = ReLU(a) */
    return m->be->relu_forward(m->ctx, y, a, n);
}

wx_status wx_precip_forward(wx_precip *m, float *y, const float *x, int64_t b) {
    if (m->ntapes >= m->max_tapes)
        return wx_error_set(WX_ERR_USAGE, "precipnet: forward with backward recording needs a "
                            "free tape; all %d are in use", m->max_tapes);
    wx_status s = precip_run(m, y, x, b, m->ntapes, 1);
    if (s != WX_OK) {
        /* Keep the backbone's tape stack in step with ours when the head failed. */
        m->backbone->ntapes = m->ntapes;
        return s;
    }
    m->tape_b[m->ntapes++] = b;
    return WX_OK;
}

wx_status wx_precip_predict(wx_precip *m, float *y, const float *x, int64_t b) {
    return precip_run(m, y, x, b, m->max_tapes, 0);
}

/* Differentiates y = ReLU(conv(ppad(backbone(x)))). */
wx_status wx_precip_backward(wx_precip *m, float *dx, const float *dy) {
    if (m->ntapes < 1)
        return wx_error_set(WX_ERR_USAGE, "precipnet: backward without a recorded forward");
    int slot = --m->ntapes;
    const int64_t b = m->tape_b[slot], n = b * m->c * m->h * m->w;
    const int64_t stride = m->max_batch * m->c * m->h * m->w;
    const float *z = m->z + slot * stride, *a = m->a + slot * stride;
    /* da = dy·[a > 0]   (y = ReLU(a)) */
    WX_TRY(m->be->relu_backward(m->ctx, m->da, dy, a, n));
    /* dz, dconv: a = conv(ppad(z)) */
    WX_TRY(m->be->conv3x3_backward(m->ctx, m->dz, wx_params_grad(&m->params, m->conv_w),
                                   wx_params_grad(&m->params, m->conv_b), m->da, z,
                                   wx_params_tensor(&m->params, m->conv_w), b, m->c, m->h, m->w,
                                   m->c));
    /* z = backbone(x). The backbone views our gradient buffer, which a data-parallel trainer
     * may have moved (wx_params_borrow_grad) since the view was made. */
    m->backbone->params.grad = m->params.grad;
    return wx_fcn_backward(m->backbone, dx, m->dz);
}

void wx_precip_to_log(float *out, const float *tp, int64_t n, double eps) {
    for (int64_t i = 0; i < n; i++) {
        double v = tp[i] > 0 ? (double)tp[i] : 0.0;
        out[i] = (float)log1p(v / eps);
    }
}

void wx_precip_from_log(float *out, const float *x, int64_t n, double eps) {
    for (int64_t i = 0; i < n; i++) out[i] = (float)(eps * expm1((double)x[i]));
}
