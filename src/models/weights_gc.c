/* GraphCast checkpoints of google-deepmind/graphcast (.npz, checkpoint.dump of a CheckPoint) into
 * wxcast's GraphCast parameter table (models/weights.h). The file's keys:
 *
 *   params:<gnn>/~_networks_builder/<module>_mlp/~/linear_<i>:w   (in, out)  -> .weight (out, in)
 *   params:<gnn>/~_networks_builder/<module>_mlp/~/linear_<i>:b   (out)      -> .bias
 *   params:<gnn>/~_networks_builder/<module>_layer_norm:scale     (out)      -> _layer_norm.weight
 *   params:<gnn>/~_networks_builder/<module>_layer_norm:offset    (out)      -> _layer_norm.bias
 *   model_config:<field>, task_config:<field>[:<i>] (tuples element by element), description,
 *   license
 *
 * The output MLP's last layer is permuted: GraphCast's outputs are the target variables sorted
 * by name, level inner (model_utils.stacked_to_dataset); wxcast's are the config's surface
 * variables, then its atmospheric variables × levels. The inputs need no permutation as long as
 * the names are GraphCast's: wxcast stacks them as dataset_to_stacked does (train_model_gc.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/weights.h"

/* A numeric scalar key; *found = 0 when absent. */
static wx_status num_key(const wx_npz *z, const char *key, double *v, int *found) {
    int i = wx_npz_find(z, key);
    *found = i >= 0;
    if (i < 0) return WX_OK;
    wx_npy a;
    WX_TRY(wx_npz_array(z, i, WX_NPY_INT, &a));
    wx_status s = WX_OK;
    if (a.count != 1)
        s = wx_error_set(WX_ERR_RUN, "%s: key '%s': %lld values, expected a scalar", z->path, key,
                         (long long)a.count);
    else
        *v = a.values[0];
    wx_npy_free(&a);
    return s;
}

static wx_status need_num(const wx_npz *z, const char *key, double *v) {
    int found = 0;
    WX_TRY(num_key(z, key, v, &found));
    return found ? WX_OK : wx_error_set(WX_ERR_RUN, "%s: missing key '%s' (not a GraphCast "
                                        "checkpoint?)", z->path, key);
}

/* task_config:<field>:0, :1, ... as strings (names) or numbers (levels); n = count. */
static wx_status list_key(const wx_npz *z, const char *field, char (*names)[WX_GC_VAR_NAME],
                          double *nums, int max, int *n) {
    *n = 0;
    for (;;) {
        char key[96];
        snprintf(key, sizeof key, "task_config:%s:%d", field, *n);
        int i = wx_npz_find(z, key);
        if (i < 0) break;
        if (*n == max)
            return wx_error_set(WX_ERR_RUN, "%s: key '%s': more than %d entries", z->path, key, max);
        wx_npy a;
        WX_TRY(wx_npz_array(z, i, names ? WX_NPY_STR : WX_NPY_INT, &a));
        wx_status s = WX_OK;
        if (names && (!a.str || strlen(a.str) >= WX_GC_VAR_NAME))
            s = wx_error_set(WX_ERR_RUN, "%s: key '%s': expected a name of at most %d characters",
                             z->path, key, WX_GC_VAR_NAME - 1);
        else if (names)
            snprintf(names[*n], WX_GC_VAR_NAME, "%s", a.str);
        else if (a.count != 1)
            s = wx_error_set(WX_ERR_RUN, "%s: key '%s': expected a number", z->path, key);
        else
            nums[*n] = a.values[0];
        wx_npy_free(&a);
        WX_TRY(s);
        (*n)++;
    }
    if (*n == 0)
        return wx_error_set(WX_ERR_RUN, "%s: missing key 'task_config:%s:0' (not a GraphCast "
                            "checkpoint?)", z->path, field);
    return WX_OK;
}

/* Name lists are rows of WX_GC_VAR_NAME characters (as in wx_gc_config). */
static int in_list(const char *list, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(list + (size_t)i * WX_GC_VAR_NAME, name)) return 1;
    return 0;
}

/* The set {a} == the set {b} (no duplicates expected); else an exit-2 error naming the key. */
static wx_status same_set(const wx_npz *z, const char *cfg_path, const char *key,
                          const char *a, int na, const char *b, int nb, const char *cfg_what) {
    for (int i = 0; i < na; i++)
        if (!in_list(b, nb, a + (size_t)i * WX_GC_VAR_NAME))
            return wx_error_set(WX_ERR_USAGE, "%s: key '%s': '%s' is not among %s of %s (names "
                                "must be GraphCast's: they fix the channel order)", z->path, key,
                                a + (size_t)i * WX_GC_VAR_NAME, cfg_what, cfg_path);
    for (int i = 0; i < nb; i++)
        if (!in_list(a, na, b + (size_t)i * WX_GC_VAR_NAME))
            return wx_error_set(WX_ERR_USAGE, "%s: key '%s' lacks '%s', which %s of %s include",
                                z->path, key, b + (size_t)i * WX_GC_VAR_NAME, cfg_what, cfg_path);
    return WX_OK;
}

static wx_status check_model(const wx_npz *z, const wx_gc_config *c, const char *cfg) {
    struct {
        const char *key, *cfg_key;
        double want;
        int exact;
    } k[] = {
        {"model_config:resolution", "resolution", c->resolution, 0},
        {"model_config:mesh_size", "mesh_max_level", (double)c->mesh_max_level, 1},
        {"model_config:latent_size", "latent_size", (double)c->latent_size, 1},
        {"model_config:gnn_msg_steps", "gnn_msg_steps", (double)c->gnn_msg_steps, 1},
        {"model_config:hidden_layers", "hidden_layers", (double)c->hidden_layers, 1},
        {"model_config:radius_query_fraction_edge_length", "radius_query_fraction_edge_length",
         c->radius_fraction, 0},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        double v = 0;
        WX_TRY(need_num(z, k[i].key, &v));
        /* float64 values written from the same decimal literal are equal; 1e-12 covers a config
         * that prints fewer digits */
        if (k[i].exact ? v != k[i].want : fabs(v - k[i].want) > 1e-12 * fabs(k[i].want))
            return wx_error_set(WX_ERR_USAGE, "%s: key '%s' is %.17g; %s has %s: %.17g", z->path,
                                k[i].key, v, cfg, k[i].cfg_key, k[i].want);
    }
    if (c->mesh_min_level != 0)
        return wx_error_set(WX_ERR_USAGE, "%s: GraphCast checkpoints use the multi-mesh of M0.."
                            "M%lld; %s has mesh_min_level %lld (expected 0)", z->path,
                            (long long)c->mesh_max_level, cfg, (long long)c->mesh_min_level);
    double f = 0;
    int found = 0;
    const char *fk = "model_config:mesh2grid_edge_normalization_factor";
    WX_TRY(num_key(z, fk, &f, &found));
    /* absent = None: the longest mesh->grid edge, which wxcast's config writes as 0 */
    if (!found ? c->m2g_norm > 0 : fabs(f - c->m2g_norm) > 1e-12 * fabs(f))
        return wx_error_set(WX_ERR_USAGE, "%s: key '%s' is %s; %s has "
                            "mesh2grid_edge_normalization_factor %.17g%s", z->path, fk,
                            found ? "set" : "absent (None: the longest edge)", cfg, c->m2g_norm,
                            found ? "" : " (expected 0)");
    return WX_OK;
}

static wx_status check_task(const wx_npz *z, const wx_gc_config *c, const char *cfg) {
    static char tgt[WX_GC_MAX_VARS * 2][WX_GC_VAR_NAME], in[WX_GC_MAX_VARS * 4][WX_GC_VAR_NAME],
        frc[WX_GC_MAX_VARS][WX_GC_VAR_NAME], want[WX_GC_MAX_VARS * 4][WX_GC_VAR_NAME];
    double lev[WX_GC_MAX_LEVELS];
    int nt = 0, ni = 0, nf = 0, nl = 0, nw = 0;
    WX_TRY(list_key(z, "target_variables", tgt, NULL, WX_GC_MAX_VARS * 2, &nt));
    WX_TRY(list_key(z, "input_variables", in, NULL, WX_GC_MAX_VARS * 4, &ni));
    WX_TRY(list_key(z, "forcing_variables", frc, NULL, WX_GC_MAX_VARS, &nf));
    WX_TRY(list_key(z, "pressure_levels", NULL, lev, WX_GC_MAX_LEVELS, &nl));
    for (int i = 0; i < c->n_surface; i++) snprintf(want[nw++], WX_GC_VAR_NAME, "%s", c->surface[i]);
    for (int i = 0; i < c->n_atmos; i++) snprintf(want[nw++], WX_GC_VAR_NAME, "%s", c->atmos[i]);
    WX_TRY(same_set(z, cfg, "task_config:target_variables", tgt[0], nt, want[0], nw,
                    "the surface_variables and atmospheric_variables"));
    WX_TRY(same_set(z, cfg, "task_config:forcing_variables", frc[0], nf, c->forcings[0],
                    c->n_forcings, "the forcings"));
    nw = 0;
    for (int i = 0; i < c->n_surface + c->n_atmos; i++) {
        const char *v = i < c->n_surface ? c->surface[i] : c->atmos[i - c->n_surface];
        if (!in_list(c->target_only[0], c->n_target_only, v))
            snprintf(want[nw++], WX_GC_VAR_NAME, "%s", v);
    }
    for (int i = 0; i < c->n_forcings; i++) snprintf(want[nw++], WX_GC_VAR_NAME, "%s", c->forcings[i]);
    for (int i = 0; i < c->n_static; i++) snprintf(want[nw++], WX_GC_VAR_NAME, "%s", c->statics[i]);
    WX_TRY(same_set(z, cfg, "task_config:input_variables", in[0], ni, want[0], nw,
                    "the inputs (targets less target_only_variables, forcings, "
                    "static_variables)"));
    /* levels stack inner in the order of the data's level axis, which is this list's */
    int same = nl == c->n_levels;
    for (int i = 0; same && i < nl; i++) same = lev[i] == c->levels[i];
    if (!same)
        return wx_error_set(WX_ERR_USAGE, "%s: key 'task_config:pressure_levels' (%d levels, "
                            "first %g) differs from pressure_levels of %s (%d levels, in the same "
                            "order)", z->path, nl, lev[0], cfg, c->n_levels);
    int di = wx_npz_find(z, "task_config:input_duration");
    if (di < 0)
        return wx_error_set(WX_ERR_RUN, "%s: missing key 'task_config:input_duration'", z->path);
    wx_npy a;
    WX_TRY(wx_npz_array(z, di, WX_NPY_STR, &a));
    char *end = NULL;
    long h = a.str ? strtol(a.str, &end, 10) : 0;
    /* "12h": inputs at t - 6 h and t (the window (t - 12 h, t]) */
    wx_status s = WX_OK;
    if (!a.str || !end || strcmp(end, "h") || h != 6 * c->input_steps)
        s = wx_error_set(WX_ERR_USAGE, "%s: key 'task_config:input_duration' is '%s'; %s has "
                         "input_steps %lld (expected '%lldh' at the 6-hour step)", z->path,
                         a.str ? a.str : "?", cfg, (long long)c->input_steps,
                         (long long)(6 * c->input_steps));
    wx_npy_free(&a);
    return s;
}

wx_status wx_weights_check_graphcast(const wx_npz *z, const wx_gc_config *c, const char *cfg_path) {
    WX_TRY(check_model(z, c, cfg_path));
    return check_task(z, c, cfg_path);
}

/* "params:<gnn>/~_networks_builder/<module>_mlp/~/linear_<i>:w" -> wxcast's name and whether
 * the value is transposed; 0 when the key has no wxcast form. */
static int wx_name(const char *key, char *name, size_t len, int *transpose) {
    const char *p = key + strlen("params:");
    const char *slash = strchr(p, '/');
    if (!slash || strncmp(slash, "/~_networks_builder/", 20)) return 0;
    const char *mod = slash + 20, *colon = strrchr(mod, ':');
    if (!colon) return 0;
    const char *lin = strstr(mod, "_mlp/~/linear_");
    *transpose = 0;
    int n;
    if (lin && lin < colon) {
        const char *suffix = !strcmp(colon, ":w") ? "weight" : !strcmp(colon, ":b") ? "bias" : NULL;
        if (!suffix) return 0;
        *transpose = suffix[0] == 'w';
        n = snprintf(name, len, "%.*s.%.*s_mlp.%.*s.%s", (int)(slash - p), p, (int)(lin - mod),
                     mod, (int)(colon - lin - 7), lin + 7, suffix);
    } else {
        const char *ln = strstr(mod, "_layer_norm:");
        const char *suffix = !ln ? NULL : !strcmp(colon, ":scale") ? "weight"
                                        : !strcmp(colon, ":offset") ? "bias" : NULL;
        if (!suffix || ln + 11 != colon) return 0;
        n = snprintf(name, len, "%.*s.%.*s.%s", (int)(slash - p), p, (int)(colon - mod), mod,
                     suffix);
    }
    return n > 0 && (size_t)n < len;
}

/* The .npz key of a wxcast parameter name (the inverse of wx_name). */
static void npz_key(const char *name, char *key, size_t len) {
    const char *dot = strchr(name, '.'), *last = strrchr(name, '.');
    const char *lin = strstr(name, "_mlp.linear_");
    int w = !strcmp(last, ".weight");
    if (lin)
        snprintf(key, len, "params:%.*s/~_networks_builder/%.*s_mlp/~/%.*s:%s", (int)(dot - name),
                 name, (int)(lin - dot - 1), dot + 1, (int)(last - lin - 5), lin + 5,
                 w ? "w" : "b");
    else
        snprintf(key, len, "params:%.*s/~_networks_builder/%.*s:%s", (int)(dot - name), name,
                 (int)(last - dot - 1), dot + 1, w ? "scale" : "offset");
}

/* perm[r] = GraphCast's output channel for wxcast's output channel r. */
static void output_perm(const wx_gc_config *c, int64_t *perm) {
    int64_t r = 0;
    for (int i = 0; i < c->n_surface + c->n_atmos; i++) {
        const char *v = i < c->n_surface ? c->surface[i] : c->atmos[i - c->n_surface];
        int atm = i >= c->n_surface;
        /* channels of the variables sorting before v */
        int64_t before = 0;
        for (int k = 0; k < c->n_surface + c->n_atmos; k++) {
            const char *u = k < c->n_surface ? c->surface[k] : c->atmos[k - c->n_surface];
            if (strcmp(u, v) < 0) before += k >= c->n_surface ? c->n_levels : 1;
        }
        for (int l = 0; l < (atm ? c->n_levels : 1); l++) perm[r++] = before + l;
    }
}

wx_status wx_weights_import_graphcast(wx_params *p, const wx_gc_config *c, const wx_npz *z) {
    WX_ASSERT(p->data != NULL);
    int *src = wx_malloc(sizeof(int) * (size_t)(p->count ? p->count : 1));
    int *tr = wx_calloc((size_t)(p->count ? p->count : 1), sizeof(int));
    for (int i = 0; i < p->count; i++) src[i] = -1;
    wx_status s = WX_OK;
    for (int k = 0; k < z->count && s == WX_OK; k++) {
        const char *key = z->m[k].key;
        if (strncmp(key, "params:", 7)) continue;
        char name[WX_PARAM_NAME_MAX + 8];
        int t = 0, i = wx_name(key, name, sizeof name, &t) ? wx_params_find(p, name) : -1;
        if (i < 0) {
            s = wx_error_set(WX_ERR_RUN, "%s: key '%s' is not a parameter of this model (wrong "
                             "model config?)", z->path, key);
            break;
        }
        src[i] = k, tr[i] = t;
    }
    char key[160];
    for (int i = 0; i < p->count && s == WX_OK; i++) {
        const wx_param_info *t = &p->t[i];
        if (src[i] < 0) {
            char shape[96];
            wx_params_shape_str(t, shape, sizeof shape);
            npz_key(t->name, key, sizeof key);
            s = wx_error_set(WX_ERR_RUN, "%s: missing key '%s' (parameter %s %s)", z->path, key,
                             t->name, shape);
            break;
        }
        snprintf(key, sizeof key, "%s", z->m[src[i]].key);
        wx_npy a;
        s = wx_npz_array(z, src[i], 0, &a);
        if (s != WX_OK) break;
        /* Haiku's w is (in, out): our (out, in) transposed */
        int same = a.ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = a.dims[d] == t->dims[tr[i] ? t->ndim - 1 - d : d];
        if (!same) {
            char want[96], got[128];
            wx_params_shape_str(t, want, sizeof want);
            size_t n = (size_t)snprintf(got, sizeof got, "(");
            for (int d = 0; d < a.ndim && n < sizeof got; d++)
                n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", d ? ", " : "",
                                      (long long)a.dims[d]);
            if (n < sizeof got) snprintf(got + n, sizeof got - n, ")");
            s = wx_error_set(WX_ERR_RUN, "%s: key '%s' has shape %s; the model expects %s%s",
                             z->path, key, got, want,
                             tr[i] ? " transposed (Haiku's w is (in, out))" : "");
            wx_npy_free(&a);
            break;
        }
        float *dst = wx_params_tensor(p, i);
        if (tr[i]) {
            const int64_t out = t->dims[0], in = t->dims[1];
            for (int64_t o = 0; o < out; o++)
                for (int64_t q = 0; q < in; q++) dst[o * in + q] = (float)a.values[q * out + o];
        } else {
            for (int64_t q = 0; q < t->size; q++) dst[q] = (float)a.values[q];
        }
        wx_npy_free(&a);
    }
    if (s == WX_OK) {
        /* the output MLP's last linear: rows (and bias) into wxcast's channel order */
        char wn[WX_PARAM_NAME_MAX], bn[WX_PARAM_NAME_MAX];
        snprintf(wn, sizeof wn, "mesh2grid_gnn.decoder_nodes_grid_nodes_mlp.linear_%lld.weight",
                 (long long)c->hidden_layers);
        snprintf(bn, sizeof bn, "mesh2grid_gnn.decoder_nodes_grid_nodes_mlp.linear_%lld.bias",
                 (long long)c->hidden_layers);
        int iw = wx_params_find(p, wn), ib = wx_params_find(p, bn);
        WX_ASSERT(iw >= 0 && ib >= 0);
        const int64_t cout = c->out_channels, D = p->t[iw].dims[1];
        int64_t *perm = wx_malloc(sizeof(int64_t) * (size_t)cout);
        output_perm(c, perm);
        float *w = wx_params_tensor(p, iw), *b = wx_params_tensor(p, ib);
        float *cw = wx_malloc(sizeof(float) * (size_t)(cout * D)), *cb = wx_malloc(sizeof(float) * (size_t)cout);
        memcpy(cw, w, sizeof(float) * (size_t)(cout * D));
        memcpy(cb, b, sizeof(float) * (size_t)cout);
        for (int64_t r = 0; r < cout; r++) {
            memcpy(w + r * D, cw + perm[r] * D, sizeof(float) * (size_t)D);
            b[r] = cb[perm[r]];
        }
        free(cw), free(cb), free(perm);
    }
    free(src);
    free(tr);
    if (s == WX_OK) s = wx_params_check_finite(p, z->path);
    return s;
}
