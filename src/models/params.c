#include "models/params.h"

#include "backend/wx_backend.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void wx_params_init(wx_params *p) { memset(p, 0, sizeof *p); }

static int on_backend(const wx_params *p) { return p->be && p->be->on_device; }

void wx_params_free(wx_params *p) {
    free(p->t);
    if (on_backend(p)) {
        p->be->mem_free(p->be_ctx, p->data);
        p->be->mem_free(p->be_ctx, p->grad);
        p->data = p->grad = NULL;
    }
    free(p->data);
    if (!p->grad_borrowed) free(p->grad);
    memset(p, 0, sizeof *p);
}

int wx_params_add(wx_params *p, const char *name, int ndim, const int64_t *dims, unsigned flags) {
    WX_ASSERT(p->data == NULL);
    WX_ASSERT(ndim >= 1 && ndim <= WX_PARAM_MAX_DIMS);
    WX_ASSERT(strlen(name) < WX_PARAM_NAME_MAX);
    WX_ASSERT(wx_params_find(p, name) < 0);
    if (p->count == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 32;
        wx_param_info *t = realloc(p->t, sizeof *t * (size_t)p->cap);
        WX_ASSERT(t != NULL);
        p->t = t;
    }
    wx_param_info *t = &p->t[p->count];
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    t->ndim = ndim;
    t->size = 1;
    for (int i = 0; i < ndim; i++) {
        WX_ASSERT(dims[i] >= 1);
        t->dims[i] = dims[i];
        t->size *= dims[i];
    }
    t->offset = p->len;
    t->flags = flags;
    p->len += (t->size + WX_PARAMS_ALIGN - 1) / WX_PARAMS_ALIGN * WX_PARAMS_ALIGN;
    return p->count++;
}

wx_status wx_params_alloc(wx_params *p) {
    WX_ASSERT(p->data == NULL);
    size_t bytes = sizeof(float) * (size_t)(p->len ? p->len : 1);
    p->data = calloc(1, bytes);
    p->grad = calloc(1, bytes);
    if (!p->data || !p->grad) {
        free(p->data), free(p->grad);
        p->data = p->grad = NULL;
        return wx_error_set(WX_ERR_RUN, "model parameters: cannot allocate 2 x %zu bytes", bytes);
    }
    return WX_OK;
}

wx_status wx_params_alloc_on(wx_params *p, const wx_backend *be, wx_ctx *ctx) {
    if (!be || !be->on_device) return wx_params_alloc(p);
    WX_ASSERT(p->data == NULL);
    size_t bytes = sizeof(float) * (size_t)(p->len ? p->len : 1);
    p->be = be, p->be_ctx = ctx;
    p->data = wx_backend_alloc(be, ctx, bytes, "model parameters");
    p->grad = p->data ? wx_backend_alloc(be, ctx, bytes, "model gradients") : NULL;
    if (!p->grad) {
        be->mem_free(ctx, p->data);
        p->data = NULL;
        return WX_ERR_RUN;
    }
    return WX_OK;
}

void wx_params_borrow_grad(wx_params *p, float *buf) {
    WX_ASSERT(!on_backend(p) && p->grad && buf);
    if (buf == p->grad) return;
    memcpy(buf, p->grad, sizeof(float) * (size_t)(p->len ? p->len : 1));
    if (!p->grad_borrowed) free(p->grad);
    p->grad = buf;
    p->grad_borrowed = 1;
}

wx_status wx_params_host_begin(wx_params *p, float **host) {
    *host = p->data;
    if (!on_backend(p)) return WX_OK;
    size_t bytes = sizeof(float) * (size_t)p->len;
    *host = wx_malloc(bytes ? bytes : 1);
    return p->be->copy_d2h(p->be_ctx, *host, p->data, bytes);
}

wx_status wx_params_host_end(wx_params *p, float *host) {
    if (!on_backend(p) || host == p->data) return WX_OK;
    wx_status s = p->be->copy_h2d(p->be_ctx, p->data, host, sizeof(float) * (size_t)p->len);
    free(host);
    return s;
}

int64_t wx_params_total(const wx_params *p) {
    int64_t n = 0;
    for (int i = 0; i < p->count; i++) n += p->t[i].size;
    return n;
}

int wx_params_find(const wx_params *p, const char *name) {
    if (strncmp(name, "module.", 7) == 0) name += 7;
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->t[i].name, name) == 0) return i;
    return -1;
}

void wx_params_zero_grad(wx_params *p) {
    /* A device memset only fails after an earlier fault, which the next checked op reports. */
    if (p->grad && on_backend(p))
        (void)p->be->mem_zero(p->be_ctx, p->grad, sizeof(float) * (size_t)p->len);
    else if (p->grad) memset(p->grad, 0, sizeof(float) * (size_t)p->len);
}

void wx_params_shape_str(const wx_param_info *t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < t->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
}

wx_status wx_params_set_f64(wx_params *p, const char *what, const char *name, int ndim,
                            const int64_t *dims, const double *src) {
    int i = wx_params_find(p, name);
    if (i < 0) return wx_error_set(WX_ERR_RUN, "%s: tensor '%s' is not a parameter of this model",
                                   what, name);
    const wx_param_info *t = &p->t[i];
    int same = ndim == t->ndim;
    for (int k = 0; same && k < ndim; k++) same = dims[k] == t->dims[k];
    if (!same) {
        char want[96], got[96];
        wx_params_shape_str(t, want, sizeof want);
        wx_param_info g = {.ndim = ndim > WX_PARAM_MAX_DIMS ? WX_PARAM_MAX_DIMS : ndim};
        for (int k = 0; k < g.ndim; k++) g.dims[k] = dims[k];
        wx_params_shape_str(&g, got, sizeof got);
        return wx_error_set(WX_ERR_RUN, "%s: tensor '%s' has shape %s%s; the model expects %s",
                            what, name, got, ndim > WX_PARAM_MAX_DIMS ? "..." : "", want);
    }
    WX_ASSERT(p->data != NULL);
    if (on_backend(p)) { /* device: convert on the host, copy the tensor */
        float *h = wx_malloc(sizeof(float) * (size_t)t->size);
        for (int64_t k = 0; k < t->size; k++) h[k] = (float)src[k];
        wx_status s = p->be->copy_h2d(p->be_ctx, p->data + t->offset, h,
                                      sizeof(float) * (size_t)t->size);
        free(h);
        return s;
    }
    float *dst = p->data + t->offset;
    for (int64_t k = 0; k < t->size; k++) dst[k] = (float)src[k];
    return WX_OK;
}

wx_status wx_params_check_finite(const wx_params *p, const char *what) {
    for (int i = 0; i < p->count; i++) {
        const float *x = wx_params_tensor(p, i);
        int64_t bad = 0, first = -1;
        for (int64_t k = 0; k < p->t[i].size; k++)
            if (!isfinite(x[k])) bad++, first = first < 0 ? k : first;
        if (bad)
            return wx_error_set(WX_ERR_RUN, "%s: tensor '%s' has %lld NaN or infinite values of %lld "
                                "(the first at element %lld): weights that cannot forecast", what,
                                p->t[i].name, (long long)bad, (long long)p->t[i].size, (long long)first);
    }
    return WX_OK;
}
