/* Weights interchange: named parameter table <-> safetensors (models/weights.h). */
#include "models/weights.h"

#include <stdlib.h>
#include <string.h>

static const char *strip_module(const char *name) {
    return strncmp(name, "module.", 7) ? name : name + 7;
}

/* NVlabs AFNONet builds a final LayerNorm it never applies; its keys may be in a file for a model
 * whose table leaves them out (count_unused_norm: false). */
static int unused_norm_key(const char *name) {
    if (!strncmp(name, "backbone.", 9)) name += 9;
    return !strcmp(name, "norm.weight") || !strcmp(name, "norm.bias");
}

wx_status wx_weights_import(wx_params *p, const wx_safetensors *st) {
    WX_ASSERT(p->data != NULL);
    int *src = wx_malloc(sizeof(int) * (size_t)(p->count ? p->count : 1));
    for (int i = 0; i < p->count; i++) src[i] = -1;
    wx_status s = WX_OK;
    for (int k = 0; k < st->count && s == WX_OK; k++) {
        const char *name = strip_module(st->t[k].name);
        int i = wx_params_find(p, name);
        if (i < 0) {
            if (!unused_norm_key(name))
                s = wx_error_set(WX_ERR_RUN, "%s: tensor '%s' is not a parameter of this model "
                                 "(wrong model config?)", st->path, st->t[k].name);
            continue;
        }
        if (src[i] >= 0) {
            s = wx_error_set(WX_ERR_RUN, "%s: tensor '%s' appears twice ('%s' and '%s')", st->path,
                             p->t[i].name, st->t[src[i]].name, st->t[k].name);
            continue;
        }
        src[i] = k;
    }
    for (int i = 0; i < p->count && s == WX_OK; i++) {
        const wx_param_info *t = &p->t[i];
        if (src[i] < 0) {
            if (!(t->flags & WX_PARAM_UNUSED)) {
                char shape[96];
                wx_params_shape_str(t, shape, sizeof shape);
                s = wx_error_set(WX_ERR_RUN, "%s: missing tensor '%s' %s", st->path, t->name, shape);
            }
            continue;
        }
        const wx_st_tensor *f = &st->t[src[i]];
        int same = f->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = f->dims[d] == t->dims[d];
        if (!same) {
            char want[96], got[128];
            wx_params_shape_str(t, want, sizeof want);
            size_t n = (size_t)snprintf(got, sizeof got, "(");
            for (int d = 0; d < f->ndim && n < sizeof got; d++)
                n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", d ? ", " : "",
                                      (long long)f->dims[d]);
            if (n < sizeof got) snprintf(got + n, sizeof got - n, ")");
            s = wx_error_set(WX_ERR_RUN, "%s: tensor '%s' has shape %s; the model expects %s",
                             st->path, f->name, got, want);
            continue;
        }
        s = wx_safetensors_to_f32(st, src[i], wx_params_tensor(p, i));
    }
    free(src);
    if (s == WX_OK) s = wx_params_check_finite(p, st->path);
    return s;
}

wx_status wx_weights_export(const char *path, const wx_params *p, const char *model_yaml) {
    wx_st_entry *e = wx_malloc(sizeof *e * (size_t)(p->count ? p->count : 1));
    for (int i = 0; i < p->count; i++) {
        e[i].name = p->t[i].name;
        e[i].ndim = p->t[i].ndim;
        e[i].dims = p->t[i].dims;
        e[i].data = wx_params_tensor(p, i);
    }
    const char *meta[6] = {"format", "pt", "producer", "wxcast", "wxcast_model", model_yaml};
    wx_status s = wx_safetensors_write_f32(path, e, p->count, meta, model_yaml ? 3 : 2);
    free(e);
    return s;
}
