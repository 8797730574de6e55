/* GraphCast model (src/models/graphcast*.c) against the independent PyTorch float64 model of
 * tests/ref/ref_graphcast.py (which also rebuilds the graphs from the published algorithm):
 * forward output, the GraphCast loss (composed from mse_latw), every parameter gradient and the
 * input gradient at batch 2; a 3-step rollout fed back through the normalised residual rule;
 * activation checkpointing bitwise identical to plain backward; predict == forward; parameter
 * grads accumulate; published parameter counts from the table without allocating.
 *
 * Tolerances. float32 model vs float64 reference. Forward ≤ 1e-5 · max|y_ref| (seen: 1.6e-6);
 * gradients ≤ 1e-4 · max|g_ref| per tensor (seen: 1.3e-5; dx 4e-6), looser because backward sums over
 * every edge and LayerNorm backward cancels terms. SiLU has no kinks, so no branch issues. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/graphcast.h"
#include "wx_fixture.h"
#include "gc_tiny.h"
#include "wx_test.h"

static double seen_fwd, seen_grad;

static wx_status parse(const char *yaml, wx_gc_config *c) {
    wx_yaml *root = NULL;
    WX_TRY(wx_yaml_load_string(yaml, "test", &root));
    wx_status st = wx_gc_config_parse(root, "", c);
    wx_yaml_free(root);
    return st;
}

static const char *const TINY = GC_TINY_YAML;

static void load_weights(wx_gc *m, const wx_fixture *f) {
    int loaded = 0;
    for (int i = 0; i < f->count; i++) {
        const wx_fixture_tensor *t = &f->t[i];
        if (strncmp(t->name, "param/", 6) != 0) continue;
        wx_status s = wx_params_set_f64(&m->params, "fixture", t->name + 6, t->ndim, t->dims,
                                        t->data);
        WX_CHECK(s == WX_OK, "load %s: %s", t->name, wx_error_message());
        loaded += s == WX_OK;
    }
    WX_CHECK(loaded == m->params.count, "loaded %d tensors, model has %d", loaded, m->params.count);
}

static void check_grads(const wx_gc *m, const wx_fixture *f, const char *what) {
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < m->params.count; i++) {
        char key[WX_PARAM_NAME_MAX + 8];
        snprintf(key, sizeof key, "grad/%s", m->params.t[i].name);
        const wx_fixture_tensor *g = wx_fixture_get(f, key);
        if (!WX_CHECK(g->size == m->params.t[i].size, "%s: %s size", what, key)) continue;
        const float *a = wx_params_grad(&m->params, i);
        char label[160];
        snprintf(label, sizeof label, "%s %s", what, key);
        WX_CHECK_CLOSE_F32(label, a, g->data, g->size, 1e-4, 1e-12);
        double e = wx_fixture_rel_err(a, g->data, g->size);
        if (e > worst) worst = e, worst_name = m->params.t[i].name;
    }
    printf("  %s: worst parameter-gradient error %.2e relative (%s)\n", what, worst, worst_name);
    if (worst > seen_grad) seen_grad = worst;
}

static void check_close(const char *what, const float *a, const wx_fixture_tensor *b, double tol,
                        double *seen) {
    WX_CHECK_CLOSE_F32(what, a, b->data, b->size, tol, 0.0);
    double e = wx_fixture_rel_err(a, b->data, b->size);
    printf("  %s: error %.2e relative to max\n", what, e);
    if (e > *seen) *seen = e;
}

/* Mesh→grid: each grid point's 3 senders must be the reference's face, except where the point
 * lies on a shared edge or vertex (the reference marks those: several faces contain it and the
 * choice is rounding); where they agree, the edge features must be the reference's (its receiver
 * frames come from the grid lat/lon, as GraphCast's, so this covers the pole rows). The models
 * then take the reference's senders and features, so that the network comparison runs on one
 * graph. */
static void use_reference_m2g(wx_gc **m, int count, const wx_fixture *f) {
    const wx_fixture_tensor *snd = wx_fixture_get(f, "graph/m2g_senders");
    const wx_fixture_tensor *feat = wx_fixture_get(f, "graph/m2g_features");
    const wx_fixture_tensor *tie = wx_fixture_get(f, "graph/m2g_tie");
    wx_edge_set *es = &m[0]->g.m2g;
    if (!WX_CHECK(snd->size == es->n_edges && tie->size == m[0]->ng, "m2g fixture sizes")) return;
    int differ = 0, differ_untied = 0, ties = 0, pole_edges = 0;
    int64_t nlon = m[0]->c.nlon;
    double worst = 0, worst_pole = 0;
    for (int64_t g = 0; g < m[0]->ng; g++) {
        int same = 1, pole = g < nlon || g >= m[0]->ng - nlon;
        for (int k = 0; k < 3; k++) {
            int found = -1;
            for (int j = 0; j < 3; j++)
                if (es->senders[3 * g + k] == (int32_t)snd->data[3 * g + j]) found = j;
            same &= found >= 0;
            if (found < 0 || tie->data[g] != 0) continue;
            for (int d = 0; d < 4; d++) {
                double e = fabs(es->features[4 * (3 * g + k) + d] -
                                feat->data[4 * (3 * g + found) + d]);
                worst = fmax(worst, e);
                if (pole) worst_pole = fmax(worst_pole, e);
            }
            pole_edges += pole;
        }
        ties += tie->data[g] != 0;
        differ += !same;
        differ_untied += !same && tie->data[g] == 0;
    }
    printf("  mesh->grid: %d of %lld grid points on shared edges/vertices, %d take another face\n",
           ties, (long long)m[0]->ng, differ);
    WX_CHECK(differ_untied == 0, "m2g senders differ from the reference at %d points inside one face",
             differ_untied);
    printf("  mesh->grid features vs reference: max err %.2e (pole rows %.2e over %d edges)\n",
           worst, worst_pole, pole_edges);
    WX_CHECK(pole_edges == 6 * nlon && worst < 1e-6,
             "m2g features equal the reference's where the faces agree, pole rows included "
             "(%d pole edges, max err %.2e)", pole_edges, worst);
    for (int k = 0; k < count; k++) {
        wx_edge_set *e = &m[k]->g.m2g;
        for (int64_t i = 0; i < e->n_edges; i++) {
            e->senders[i] = (int32_t)snd->data[i];
            for (int d = 0; d < 4; d++) e->features[4 * i + d] = (float)feat->data[4 * i + d];
        }
        WX_CHECK(wx_gc_static_refresh(m[k]) == WX_OK, "static refresh: %s", wx_error_message());
    }
}

typedef struct {
    float *wlat, *wch;
} loss_w;

static loss_w loss_weights(const wx_gc *m) {
    loss_w w = {malloc(sizeof(float) * (size_t)m->c.nlat), malloc(sizeof(float) * (size_t)m->cout)};
    double *lat = malloc(sizeof(double) * (size_t)m->c.nlat);
    for (int64_t j = 0; j < m->c.nlat; j++) lat[j] = 90.0 - (double)j * m->c.resolution;
    WX_CHECK(wx_gc_loss_weights(&m->c, lat, w.wlat, w.wch) == WX_OK, "loss weights");
    free(lat);
    return w;
}

/* Snapshot of every parameter gradient. */
static float *grads_copy(const wx_gc *m) {
    float *g = malloc(sizeof(float) * (size_t)m->params.len);
    memcpy(g, m->params.grad, sizeof(float) * (size_t)m->params.len);
    return g;
}

static void test_one_step(wx_ctx *ctx) {
    printf("gc_tiny\n");
    wx_fixture *f = wx_fixture_load("gc_tiny");
    if (!WX_CHECK(f != NULL, "fixture gc_tiny")) return;
    wx_gc_config c;
    if (!WX_CHECK(parse(TINY, &c) == WX_OK, "tiny config: %s", wx_error_message())) return;
    int64_t B = 2;
    wx_gc *m[2];
    for (int k = 0; k < 2; k++) {
        m[k] = wx_gc_create(ctx, wx_backend_cpu(), &c, 7, B, 1, k);
        if (!WX_CHECK(m[k] != NULL, "create: %s", wx_error_message())) return;
        load_weights(m[k], f);
    }
    /* The graphs the reference built independently have the same sizes. */
    WX_CHECK(m[0]->eg == (int64_t)wx_fixture_scalar(f, "graph/g2m_edges"), "g2m edges %lld vs %g",
             (long long)m[0]->eg, wx_fixture_scalar(f, "graph/g2m_edges"));
    WX_CHECK(m[0]->em == (int64_t)wx_fixture_scalar(f, "graph/mesh_edges"), "mesh edges %lld",
             (long long)m[0]->em);
    WX_CHECK(m[0]->ed == (int64_t)wx_fixture_scalar(f, "graph/m2g_edges"), "m2g edges %lld",
             (long long)m[0]->ed);
    use_reference_m2g(m, 2, f);
    loss_w w = loss_weights(m[0]);
    check_close("latitude weights", w.wlat, wx_fixture_get(f, "wlat"), 1e-6, &seen_fwd);

    const wx_fixture_tensor *xr = wx_fixture_get(f, "x"), *yr = wx_fixture_get(f, "y");
    float *x = wx_fixture_f32(f, "x"), *t = wx_fixture_f32(f, "t");
    float *y = malloc(sizeof *y * (size_t)yr->size), *y2 = malloc(sizeof *y2 * (size_t)yr->size);
    float *dy = malloc(sizeof *dy * (size_t)yr->size);
    float *dx[2] = {malloc(sizeof(float) * (size_t)xr->size), malloc(sizeof(float) * (size_t)xr->size)};
    float *g[2];
    const int64_t H = c.nlat, W = c.nlon;
    for (int k = 0; k < 2; k++) {
        /* k = 0: plain; k = 1: activation checkpointing */
        WX_CHECK(wx_gc_forward(m[k], y, x, B) == WX_OK, "forward: %s", wx_error_message());
        if (k == 0) check_close("forward y", y, yr, 1e-5, &seen_fwd);
        else WX_CHECK(memcmp(y, y2, sizeof *y * (size_t)yr->size) == 0,
                      "checkpointing: forward bitwise identical");
        memcpy(y2, y, sizeof *y * (size_t)yr->size);
        float loss = 0;
        WX_CHECK(wx_gc_loss_forward(ctx, m[k]->be, &loss, y, t, w.wlat, w.wch, B, c.out_channels,
                                    H, W, 1) == WX_OK, "loss");
        WX_CHECK(wx_gc_loss_backward(ctx, m[k]->be, dy, 1.0, y, t, w.wlat, w.wch, B,
                                     c.out_channels, H, W, 1) == WX_OK, "loss backward");
        double lref = wx_fixture_scalar(f, "loss");
        if (k == 0) printf("  loss %.8f vs reference %.8f\n", loss, lref);
        WX_CHECK(fabs(loss - lref) <= 1e-5 * fabs(lref), "loss %.8f vs reference %.8f", loss, lref);
        wx_gc_zero_grad(m[k]);
        WX_CHECK(wx_gc_backward(m[k], dx[k], dy) == WX_OK, "backward: %s", wx_error_message());
        g[k] = grads_copy(m[k]);
    }
    check_grads(m[0], f, "one step");
    check_close("dx", dx[0], wx_fixture_get(f, "dx"), 1e-4, &seen_grad);
    WX_CHECK(memcmp(g[0], g[1], sizeof(float) * (size_t)m[0]->params.len) == 0,
             "checkpointing: every parameter gradient bitwise identical");
    WX_CHECK(memcmp(dx[0], dx[1], sizeof(float) * (size_t)xr->size) == 0,
             "checkpointing: dx bitwise identical");
    int unused = wx_params_find(&m[0]->params,
                                "mesh2grid_gnn.processor_nodes_0_mesh_nodes_mlp.linear_0.weight");
    WX_CHECK(unused >= 0 && (m[0]->params.t[unused].flags & WX_PARAM_UNUSED),
             "decoder mesh-node MLP flagged unused");

    /* predict computes the same numbers, bit for bit, without a tape. */
    WX_CHECK(wx_gc_predict(m[0], y2, x, B) == WX_OK, "predict");
    WX_CHECK(wx_gc_forward(m[0], y, x, B) == WX_OK, "forward again");
    WX_CHECK(memcmp(y, y2, sizeof *y * (size_t)yr->size) == 0, "predict == forward bitwise");
    /* A second backward of the same step doubles the parameter grads (accumulation). */
    WX_CHECK(wx_gc_backward(m[0], NULL, dy) == WX_OK, "backward 2");
    double worst = 0;
    for (int64_t i = 0; i < m[0]->params.len; i++) {
        double d = fabs(m[0]->params.grad[i] - 2.0 * g[0][i]);
        if (d > worst) worst = d;
    }
    WX_CHECK(worst <= 1e-6, "second backward accumulates (max |g2 − 2 g1| = %.2e)", worst);
    WX_CHECK(wx_gc_backward(m[0], NULL, dy) != WX_OK, "backward without a tape fails");
    /* Batch 1 gives the first sample's output. */
    WX_CHECK(wx_gc_predict(m[0], y2, x, 1) == WX_OK, "predict b=1");
    double e = 0;
    for (int64_t i = 0; i < yr->size / 2; i++) e = fmax(e, fabs(y2[i] - y[i]));
    WX_CHECK(e <= 1e-6, "batch 1 == first sample of batch 2 (%.2e)", e);

    for (int k = 0; k < 2; k++) {
        free(g[k]);
        free(dx[k]);
        wx_gc_destroy(m[k]);
    }
    free(x), free(t), free(y), free(y2), free(dy), free(w.wlat), free(w.wch);
    wx_fixture_free(f);
}

/* One 3-step rollout (forward ×3, loss, backward ×3) at checkpointing ck; checks it against the
 * reference and returns the loss, a copy of the parameter grads, their count and dx0 (caller
 * frees). */
static void rollout_once(wx_ctx *ctx, wx_fixture *wf, wx_fixture *f, const wx_gc_config *cp,
                         int ck, double *total_out, float **grads, float **dx_out,
                         int64_t *nparams) {
    wx_gc_config c = *cp;
    *grads = NULL, *dx_out = NULL;
    wx_gc *m = wx_gc_create(ctx, wx_backend_cpu(), &c, 7, 1, 3, ck);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) return;
    load_weights(m, wf);
    use_reference_m2g(&m, 1, wf);
    loss_w w = loss_weights(m);
    const int64_t cin = c.in_channels, cout = c.out_channels, hw = c.nlat * c.nlon;
    int32_t prev[4] = {0, 1, 2, 3}, last[4] = {4, 5, 6, 7};
    float *scale = wx_fixture_f32(f, "scale");
    wx_gc_rollout_map r = {cin, cout, prev, last, scale};
    float *xs[3], *ys[3], *ts[3], *dys[3], *base[2];
    xs[0] = wx_fixture_f32(f, "x0");
    base[0] = wx_fixture_f32(f, "base1");
    base[1] = wx_fixture_f32(f, "base2");
    ts[0] = wx_fixture_f32(f, "t1"), ts[1] = wx_fixture_f32(f, "t2"), ts[2] = wx_fixture_f32(f, "t3");
    for (int k = 0; k < 3; k++) {
        if (k) xs[k] = malloc(sizeof(float) * (size_t)(cin * hw));
        ys[k] = malloc(sizeof(float) * (size_t)(cout * hw));
        dys[k] = malloc(sizeof(float) * (size_t)(cout * hw));
    }
    double total = 0;
    for (int k = 0; k < 3; k++) {
        if (k) wx_gc_rollout_next(&r, xs[k], xs[k - 1], ys[k - 1], base[k - 1], 1, hw);
        WX_CHECK(wx_gc_forward(m, ys[k], xs[k], 1) == WX_OK, "forward %d: %s", k, wx_error_message());
        float l = 0;
        wx_gc_loss_forward(ctx, m->be, &l, ys[k], ts[k], w.wlat, w.wch, 1, cout, c.nlat, c.nlon, 3);
        total += l;
        wx_gc_loss_backward(ctx, m->be, dys[k], 1.0, ys[k], ts[k], w.wlat, w.wch, 1, cout, c.nlat,
                            c.nlon, 3);
    }
    double lref = wx_fixture_scalar(f, "loss");
    printf("  rollout (checkpointing %s) loss %.8f vs reference %.8f\n", ck ? "on" : "off", total,
           lref);
    WX_CHECK(fabs(total - lref) <= 1e-5 * fabs(lref), "rollout loss %.8f vs %.8f", total, lref);
    wx_gc_zero_grad(m);
    float *dx = malloc(sizeof(float) * (size_t)(cin * hw));
    float *carry = calloc((size_t)(cin * hw), sizeof(float)); /* ∂L/∂x_k through x_{k+1} */
    for (int k = 2; k >= 0; k--) {
        /* dys[k] = ∂loss_k/∂y_k plus what x_{k+1} sent back */
        WX_CHECK(wx_gc_backward(m, dx, dys[k]) == WX_OK, "backward %d", k);
        for (int64_t i = 0; i < cin * hw; i++) dx[i] += carry[i];
        if (k) {
            memset(carry, 0, sizeof(float) * (size_t)(cin * hw));
            wx_gc_rollout_next_backward(&r, carry, dys[k - 1], dx, 1, hw);
        }
    }
    check_grads(m, f, "3-step rollout");
    check_close("rollout dx0", dx, wx_fixture_get(f, "dx0"), 1e-4, &seen_grad);
    *total_out = total, *grads = grads_copy(m), *dx_out = dx, *nparams = m->params.len;
    for (int k = 0; k < 3; k++) free(xs[k]), free(ys[k]), free(ts[k]), free(dys[k]);
    free(base[0]), free(base[1]), free(scale), free(carry), free(w.wlat), free(w.wch);
    wx_gc_destroy(m);
}

static void test_rollout(wx_ctx *ctx) {
    printf("gc_rollout\n");
    wx_fixture *wf = wx_fixture_load("gc_tiny");
    wx_fixture *f = wx_fixture_load("gc_rollout");
    if (!WX_CHECK(f != NULL && wf != NULL, "fixtures")) return;
    wx_gc_config c;
    if (!WX_CHECK(parse(TINY, &c) == WX_OK, "config")) return;
    /* with checkpointing (every MLP recomputed in backward) and without: both against the
     * reference, and to each other bit for bit (loss, every parameter gradient, dx0) */
    double loss[2];
    float *g[2], *dx[2];
    int64_t np = 0;
    for (int ck = 1; ck >= 0; ck--)
        rollout_once(ctx, wf, f, &c, ck, &loss[ck], &g[ck], &dx[ck], &np);
    if (g[0] && g[1] && dx[0] && dx[1]) {
        WX_CHECK(loss[0] == loss[1], "rollout, checkpointing on/off: loss %.9g vs %.9g", loss[1],
                 loss[0]);
        WX_CHECK(memcmp(g[0], g[1], sizeof(float) * (size_t)np) == 0,
                 "rollout, checkpointing on/off: every parameter gradient bitwise identical");
        WX_CHECK(memcmp(dx[0], dx[1], sizeof(float) * (size_t)(c.in_channels * c.nlat * c.nlon)) ==
                     0,
                 "rollout, checkpointing on/off: dx0 bitwise identical");
    }
    for (int k = 0; k < 2; k++) free(g[k]), free(dx[k]);
    wx_fixture_free(f);
    wx_fixture_free(wf);
}

static void test_counts(void) {
    printf("parameter counts\n");
    wx_gc_config c;
    if (!WX_CHECK(parse("type: graphcast\n", &c) == WX_OK, "defaults: %s", wx_error_message()))
        return;
    wx_gc_param_counts n;
    wx_gc_param_count(&c, &n);
    /* reference §1.7 (published GraphCast_small: 183 + 3 inputs, 83 outputs) */
    WX_CHECK(c.in_channels == 183 && c.out_channels == 83, "channels %lld -> %lld",
             (long long)c.in_channels, (long long)c.out_channels);
    WX_CHECK(n.total == 35979347, "GraphCast_small %lld", (long long)n.total);
    WX_CHECK(n.encoder == 3350528 && n.processor == 29691904 && n.decoder == 2936915,
             "breakdown %lld / %lld / %lld", (long long)n.encoder, (long long)n.processor,
             (long long)n.decoder);
    wx_params p;
    wx_params_init(&p);
    wx_gc_param_table(&p, &c, NULL);
    WX_CHECK(wx_params_total(&p) == 35979347 && p.data == NULL,
             "table total %lld without allocating", (long long)wx_params_total(&p));
    wx_params_free(&p);
    /* GraphCast_operational: 0.25°, 13 levels, no precipitation input (35,977,299). */
    WX_CHECK(parse("type: graphcast\nresolution: 0.25\nmesh_max_level: 6\n"
                   "target_only_variables: [total_precipitation_6hr]\n", &c) == WX_OK, "operational");
    wx_gc_param_count(&c, &n);
    WX_CHECK(c.in_channels == 181 && n.total == 35977299, "operational %lld channels, %lld",
             (long long)c.in_channels, (long long)n.total);
    /* GraphCast 0.25°, 37 levels (474 input features, 227 outputs, 36,348,131). */
    WX_CHECK(parse("type: graphcast\nresolution: 0.25\nmesh_max_level: 6\npressure_levels: [1, 2, "
                   "3, 5, 7, 10, 20, 30, 50, 70, 100, 125, 150, 175, 200, 225, 250, 300, 350, 400, "
                   "450, 500, 550, 600, 650, 700, 750, 775, 800, 825, 850, 875, 900, 925, 950, "
                   "975, 1000]\n", &c) == WX_OK, "37 levels");
    wx_gc_param_count(&c, &n);
    WX_CHECK(c.in_channels + 3 == 474 && c.out_channels == 227 && n.total == 36348131,
             "GraphCast %lld+3 -> %lld, %lld", (long long)c.in_channels,
             (long long)c.out_channels, (long long)n.total);
    WX_CHECK(parse("type: graphcast\nresolution: 0.7\n", &c) != WX_OK, "resolution 0.7 rejected");
    WX_CHECK(parse("type: graphcast\ntarget_only_variables: [nope]\n", &c) != WX_OK,
             "unknown target_only variable rejected");
}

static void test_loss_weights(void) {
    printf("loss weights\n");
    /* 1° with poles: weights are cell areas (sin-band differences) normalised to mean 1. */
    double lat[181], w[181];
    for (int j = 0; j < 181; j++) lat[j] = 90.0 - j;
    WX_CHECK(wx_gc_latitude_weights(lat, 181, w) == WX_OK, "latw");
    double sum = 0, e = 0;
    for (int j = 0; j < 181; j++) {
        double hi = fmin(90.0, lat[j] + 0.5), lo = fmax(-90.0, lat[j] - 0.5);
        double area = sin(hi * M_PI / 180) - sin(lo * M_PI / 180);
        sum += w[j];
        e = fmax(e, fabs(w[j] - area * 181.0 / 2.0));
    }
    WX_CHECK(fabs(sum - 181.0) < 1e-9, "mean 1 (%.12f)", sum / 181);
    WX_CHECK(e < 1e-9, "equal to exact cell areas (%.2e)", e);
    WX_CHECK(wx_gc_variable_weight("2m_temperature") == 1.0 && wx_gc_variable_weight("10u") == 0.1 &&
             wx_gc_variable_weight("mean_sea_level_pressure") == 0.1 &&
             wx_gc_variable_weight("total_precipitation_6hr") == 0.1 &&
             wx_gc_variable_weight("geopotential") == 1.0, "variable weights");
}

/* Directional derivative of the one-step loss with respect to the input in float32 (a
 * finite-difference check the model can afford: float64 FD at model level would need a double
 * build of the whole network). Directions of ±1 entries over every channel of (a) the two pole
 * rows and (b) the grid points sending into the mesh node of highest multi-mesh degree; central
 * difference with step 3e-3 per entry, which balances the float32 rounding of the loss (the
 * derivatives are ~0.02, so 1e-3 steps lose digits) against the O(step²) truncation (1e-2 steps
 * give 8e-3). Bound 1e-2 relative; seen 1.2e-3 (poles), 1.0e-3 (mesh node). It confirms the
 * backward of this very forward independently of the PyTorch reference (which gives dx to 4e-6). */
static void test_directional(wx_ctx *ctx) {
    wx_fixture *f = wx_fixture_load("gc_tiny");
    if (!WX_CHECK(f != NULL, "fixture gc_tiny")) return;
    wx_gc_config c;
    if (!WX_CHECK(parse(TINY, &c) == WX_OK, "tiny config: %s", wx_error_message())) return;
    wx_gc *m = wx_gc_create(ctx, wx_backend_cpu(), &c, 7, 1, 1, 0);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) return;
    load_weights(m, f);
    use_reference_m2g(&m, 1, f);
    loss_w w = loss_weights(m);
    const int64_t H = c.nlat, W = c.nlon, hw = H * W, cin = c.in_channels, cout = c.out_channels;
    float *x = wx_fixture_f32(f, "x"), *t = wx_fixture_f32(f, "t"); /* sample 0 of batch 2 */
    float *y = malloc(sizeof(float) * (size_t)(cout * hw)), *dy = malloc(sizeof(float) * (size_t)(cout * hw));
    float *dx = malloc(sizeof(float) * (size_t)(cin * hw)), *xp = malloc(sizeof(float) * (size_t)(cin * hw));
    float *d = calloc((size_t)(cin * hw), sizeof(float));
    float loss;
    WX_CHECK(wx_gc_forward(m, y, x, 1) == WX_OK, "forward");
    wx_gc_loss_forward(ctx, m->be, &loss, y, t, w.wlat, w.wch, 1, cout, H, W, 1);
    wx_gc_loss_backward(ctx, m->be, dy, 1.0, y, t, w.wlat, w.wch, 1, cout, H, W, 1);
    WX_CHECK(wx_gc_backward(m, dx, dy) == WX_OK, "backward");
    /* the mesh node with the most multi-mesh edges in, and the grid points it receives from */
    int32_t best = 0;
    for (int32_t r = 0; r < m->g.mesh.n_receivers; r++)
        if (m->g.mesh.row_ptr[r + 1] - m->g.mesh.row_ptr[r] >
            m->g.mesh.row_ptr[best + 1] - m->g.mesh.row_ptr[best])
            best = r;
    for (int which = 0; which < 2; which++) {
        memset(d, 0, sizeof(float) * (size_t)(cin * hw));
        uint32_t h = 12345u + (uint32_t)which;
        int npts = 0;
        for (int64_t p = 0; p < hw; p++) {
            int on = 0;
            if (which == 0) on = p < W || p >= hw - W;
            else
                for (int64_t e = 0; e < m->g.g2m.n_edges && !on; e++)
                    on = m->g.g2m.receivers[e] == best && m->g.g2m.senders[e] == p;
            if (!on) continue;
            npts++;
            for (int64_t k = 0; k < cin; k++) {
                h = h * 1664525u + 1013904223u;
                d[k * hw + p] = (h >> 31) ? 1.0f : -1.0f;
            }
        }
        double an = 0, eps = 3e-3, l[2];
        for (int64_t i = 0; i < cin * hw; i++) an += (double)dx[i] * d[i];
        for (int sgn = 0; sgn < 2; sgn++) {
            for (int64_t i = 0; i < cin * hw; i++) xp[i] = x[i] + (float)(sgn ? -eps : eps) * d[i];
            float v;
            wx_gc_predict(m, y, xp, 1);
            wx_gc_loss_forward(ctx, m->be, &v, y, t, w.wlat, w.wch, 1, cout, H, W, 1);
            l[sgn] = v;
        }
        double fd = (l[0] - l[1]) / (2 * eps), rel = fabs(fd - an) / fmax(fabs(an), 1e-6);
        printf("  directional derivative at %s (%d grid points): analytic %.6g, FD %.6g, rel %.1e\n",
               which ? "the senders of the highest-degree mesh node" : "the pole rows", npts, an, fd, rel);
        WX_CHECK(npts > 0 && rel < 1e-2, "directional derivative (%s): %g vs %g",
                 which ? "highest-degree mesh node" : "poles", an, fd);
    }
    free(x), free(t), free(y), free(dy), free(dx), free(xp), free(d), free(w.wlat), free(w.wch);
    wx_gc_destroy(m);
    wx_fixture_free(f);
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    test_counts();
    test_loss_weights();
    test_one_step(ctx);
    test_rollout(ctx);
    test_directional(ctx);
    printf("worst errors seen: forward %.2e, gradients %.2e\n", seen_fwd, seen_grad);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
