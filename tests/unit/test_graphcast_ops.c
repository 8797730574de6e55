/* GraphCast's ops path (models/graphcast_ops*.c: every MLP through backend-table ops, graphs and
 * tapes in backend memory) on the CPU backend, against
 *   - the fused CPU path (graphcast_mlp.c) on the same weights and graphs: forward output, loss,
 *     every parameter gradient and dx, for one step at batch 2 and a 3-step rollout;
 *   - the independent PyTorch float64 model (fixtures gc_tiny, gc_rollout of
 *     tests/ref/ref_graphcast.py), as test_graphcast does for the fused path;
 * plus: activation checkpointing on the ops path bitwise equal to plain; two runs bitwise equal;
 * predict == forward bitwise; batch 1 in a model made for batch 2 (index-array prefixes) bitwise
 * equal to a batch-1 model; the WX_GC_OPS=1 switch selects the path; the trainer's model
 * interface (train_model_gc_rollout.c: make_input, next_input, predict, 2-step loss_backward) on the ops
 * path, which stages its host glue through backend buffers, against the fused path; and the
 * whole ops path on the test device simulator (tests/support/wx_devsim.h: device memory unmapped
 * between ops, pointer checks, guard regions), which must give the CPU ops path's bits with no
 * violation and no leak: a host pointer where device memory is expected would fault there as it
 * would on a GPU; there the bytes allocated must equal the arena, wx_gc_ops_bytes and the
 * parameters (the dry count docs/graphcast.md's memory figures come from).
 *
 * Tolerances. Ops vs fused: both float32, differing only in summation order (the fused path
 * splits layer 0 into column blocks and sums them, and uses its own exp in SiLU): 1e-5 relative to
 * the largest |value| of each tensor for outputs and loss; 3e-5 for parameter gradients, whose
 * LayerNorm-weight sums run over every edge in a different order on each path (seen 6.3e-6 in
 * Release, 1.33e-5 in the -O1 sanitizer build, where the compiler contracts differently; the
 * float64 PyTorch bound below is 1e-4). Vs PyTorch float64: forward
 * 1e-5, gradients 1e-4 (test_graphcast's bounds and reasons). Worst errors are printed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/graphcast.h"
#include "models/graphcast_ops.h"
#include "train/train_model.h"
#include "wx_devsim.h"
#include "wx_fixture.h"
#include "gc_tiny.h"
#include "wx_test.h"

#define GRAD_TOL 3e-5 /* ops vs fused parameter gradients: see the header comment */

static double seen_vs_fused, seen_vs_ref_fwd, seen_vs_ref_grad;

static const char *const TINY = GC_TINY_YAML;

static double rel_d(const float *a, const double *b, int64_t n) {
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return s > 0 ? e / s : e;
}

/* The tiny model on the CPU backend, path `ops`, with the fixture's weights and the reference's
 * mesh→grid senders (test_graphcast.c explains why). */
static wx_gc *make_on(wx_ctx *ctx, const wx_backend *be, const wx_fixture *f, int ops, int ckpt,
                      int64_t b, int tapes) {
    wx_yaml *root = NULL;
    wx_gc_config c;
    if (!WX_CHECK(wx_yaml_load_string(TINY, "test", &root) == WX_OK &&
                      wx_gc_config_parse(root, "", &c) == WX_OK,
                  "config: %s", wx_error_message())) {
        wx_yaml_free(root);
        return NULL;
    }
    wx_yaml_free(root);
    wx_gc *m = wx_gc_create_path(ctx, be, &c, 7, b, tapes, ckpt, ops);
    if (!WX_CHECK(m != NULL && (m->ops != NULL) == ops, "create (ops %d): %s", ops,
                  wx_error_message())) {
        wx_gc_destroy(m);
        return NULL;
    }
    int loaded = 0;
    for (int i = 0; i < f->count; i++) {
        const wx_fixture_tensor *t = &f->t[i];
        if (strncmp(t->name, "param/", 6)) continue;
        loaded += wx_params_set_f64(&m->params, "fixture", t->name + 6, t->ndim, t->dims,
                                    t->data) == WX_OK;
    }
    WX_CHECK(loaded == m->params.count, "loaded %d of %d tensors", loaded, m->params.count);
    const wx_fixture_tensor *snd = wx_fixture_get(f, "graph/m2g_senders");
    const wx_fixture_tensor *feat = wx_fixture_get(f, "graph/m2g_features");
    wx_edge_set *e = &m->g.m2g;
    if (WX_CHECK(snd->size == e->n_edges, "m2g fixture size")) {
        for (int64_t i = 0; i < e->n_edges; i++) {
            e->senders[i] = (int32_t)snd->data[i];
            for (int d = 0; d < 4; d++) e->features[4 * i + d] = (float)feat->data[4 * i + d];
        }
        WX_CHECK(wx_gc_static_refresh(m) == WX_OK, "static refresh: %s", wx_error_message());
    }
    return m;
}

static wx_gc *make(wx_ctx *ctx, const wx_fixture *f, int ops, int ckpt, int64_t b, int tapes) {
    return make_on(ctx, wx_backend_cpu(), f, ops, ckpt, b, tapes);
}

static void loss_weights(const wx_gc *m, float *wlat, float *wch) {
    double lat[64];
    for (int64_t j = 0; j < m->c.nlat; j++) lat[j] = 90.0 - (double)j * m->c.resolution;
    WX_CHECK(m->c.nlat <= 64 && wx_gc_loss_weights(&m->c, lat, wlat, wch) == WX_OK, "weights");
}

/* What one run leaves: outputs, loss, input gradient, parameter gradients. */
typedef struct {
    float *y, *dx, *grad;
    double loss;
    int64_t ny, nx, len;
} run;

static void run_free(run *r) {
    free(r->y), free(r->dx), free(r->grad);
    memset(r, 0, sizeof *r);
}

/* One step at batch b: forward, GraphCast loss, backward with dx. */
static int one_step(wx_ctx *ctx, wx_gc *m, const wx_fixture *f, int64_t b, run *r) {
    const int64_t H = m->c.nlat, W = m->c.nlon, cout = m->cout;
    float *x = wx_fixture_f32(f, "x"), *t = wx_fixture_f32(f, "t");
    float wlat[64], wch[64];
    loss_weights(m, wlat, wch);
    r->ny = b * cout * H * W, r->nx = b * m->cin * H * W, r->len = m->params.len;
    r->y = malloc(sizeof(float) * (size_t)r->ny), r->dx = malloc(sizeof(float) * (size_t)r->nx);
    r->grad = malloc(sizeof(float) * (size_t)r->len);
    float *dy = malloc(sizeof(float) * (size_t)r->ny), loss = 0;
    wx_gc_zero_grad(m);
    int ok = WX_CHECK(wx_gc_run_forward(m, r->y, x, b) == WX_OK, "forward: %s", wx_error_message()) &&
             WX_CHECK(wx_gc_loss_forward(ctx, m->be, &loss, r->y, t, wlat, wch, b, cout, H, W, 1) ==
                          WX_OK &&
                          wx_gc_loss_backward(ctx, m->be, dy, 1.0, r->y, t, wlat, wch, b, cout, H,
                                              W, 1) == WX_OK,
                      "loss") &&
             WX_CHECK(wx_gc_run_backward(m, r->dx, dy) == WX_OK, "backward: %s",
                      wx_error_message());
    r->loss = loss;
    memcpy(r->grad, m->params.grad, sizeof(float) * (size_t)r->len);
    free(x), free(t), free(dy);
    return ok;
}

/* Every parameter gradient of a against b (per tensor, relative to max |b|) ≤ tol. */
static double cmp_grads(const wx_gc *m, const float *a, const float *b, double tol,
                        const char *what) {
    double worst = 0;
    const char *wn = "";
    for (int i = 0; i < m->params.count; i++) {
        const wx_param_info *p = &m->params.t[i];
        double e = wx_test_rel_diff_f32(a + p->offset, b + p->offset, p->size);
        if (e > worst) worst = e, wn = p->name;
    }
    WX_CHECK(worst <= tol, "%s: worst parameter gradient %.2e > %.0e (%s)", what, worst, tol, wn);
    printf("  %s: worst parameter-gradient difference %.2e (%s)\n", what, worst, wn);
    return worst;
}

static double cmp_grads_ref(const wx_gc *m, const float *a, const wx_fixture *f, double tol,
                            const char *what) {
    double worst = 0;
    for (int i = 0; i < m->params.count; i++) {
        const wx_param_info *p = &m->params.t[i];
        char key[WX_PARAM_NAME_MAX + 8];
        snprintf(key, sizeof key, "grad/%s", p->name);
        const wx_fixture_tensor *g = wx_fixture_get(f, key);
        if (!WX_CHECK(g->size == p->size, "%s size", key)) continue;
        worst = fmax(worst, rel_d(a + p->offset, g->data, g->size));
    }
    WX_CHECK(worst <= tol, "%s: worst gradient vs PyTorch %.2e > %.0e", what, worst, tol);
    printf("  %s: worst parameter-gradient error vs PyTorch %.2e\n", what, worst);
    return worst;
}

static void test_one_step(wx_ctx *ctx) {
    printf("one step, batch 2\n");
    wx_fixture *f = wx_fixture_load("gc_tiny");
    if (!WX_CHECK(f != NULL, "fixture gc_tiny")) return;
    const int64_t B = 2;
    wx_gc *fu = make(ctx, f, 0, 0, B, 1), *op = make(ctx, f, 1, 0, B, 1);
    wx_gc *op2 = make(ctx, f, 1, 0, B, 1), *ck = make(ctx, f, 1, 1, B, 1);
    run rf = {0}, ro = {0}, ro2 = {0}, rc = {0};
    if (fu && op && op2 && ck && one_step(ctx, fu, f, B, &rf) && one_step(ctx, op, f, B, &ro) &&
        one_step(ctx, op2, f, B, &ro2) && one_step(ctx, ck, f, B, &rc)) {
        double ey = wx_test_rel_diff_f32(ro.y, rf.y, rf.ny), edx = wx_test_rel_diff_f32(ro.dx, rf.dx, rf.nx);
        double el = fabs(ro.loss - rf.loss) / fabs(rf.loss);
        printf("  ops vs fused: y %.2e, loss %.2e, dx %.2e\n", ey, el, edx);
        WX_CHECK(ey <= 1e-5 && el <= 1e-5 && edx <= 1e-5, "ops vs fused: y %.2e loss %.2e dx %.2e",
                 ey, el, edx);
        double eg = cmp_grads(op, ro.grad, rf.grad, GRAD_TOL, "ops vs fused");
        seen_vs_fused = fmax(seen_vs_fused, fmax(fmax(ey, el), fmax(edx, eg)));
        const wx_fixture_tensor *yr = wx_fixture_get(f, "y"), *dxr = wx_fixture_get(f, "dx");
        double fy = rel_d(ro.y, yr->data, yr->size), fdx = rel_d(ro.dx, dxr->data, dxr->size);
        double lref = wx_fixture_scalar(f, "loss");
        printf("  ops vs PyTorch: y %.2e, loss %.8f vs %.8f, dx %.2e\n", fy, ro.loss, lref, fdx);
        WX_CHECK(fy <= 1e-5 && fabs(ro.loss - lref) <= 1e-5 * fabs(lref) && fdx <= 1e-4,
                 "ops vs PyTorch: y %.2e dx %.2e", fy, fdx);
        seen_vs_ref_fwd = fmax(seen_vs_ref_fwd, fy);
        seen_vs_ref_grad = fmax(seen_vs_ref_grad, fmax(fdx, cmp_grads_ref(op, ro.grad, f, 1e-4,
                                                                            "ops one step")));
        WX_CHECK(!memcmp(ro.y, ro2.y, sizeof(float) * (size_t)ro.ny) && ro.loss == ro2.loss &&
                     !memcmp(ro.dx, ro2.dx, sizeof(float) * (size_t)ro.nx) &&
                     !memcmp(ro.grad, ro2.grad, sizeof(float) * (size_t)ro.len),
                 "two ops-path runs bitwise identical");
        WX_CHECK(!memcmp(ro.y, rc.y, sizeof(float) * (size_t)ro.ny) &&
                     !memcmp(ro.dx, rc.dx, sizeof(float) * (size_t)ro.nx) &&
                     !memcmp(ro.grad, rc.grad, sizeof(float) * (size_t)ro.len),
                 "ops path: checkpointing bitwise identical to plain backward");
        /* predict gives the forward's bits; the unused decoder mesh MLP keeps a zero gradient */
        float *yp = malloc(sizeof(float) * (size_t)ro.ny), *x = wx_fixture_f32(f, "x");
        WX_CHECK(wx_gc_run_predict(op, yp, x, B) == WX_OK &&
                     !memcmp(yp, ro.y, sizeof(float) * (size_t)ro.ny),
                 "ops predict == forward bitwise");
        int u = wx_params_find(&op->params,
                               "mesh2grid_gnn.processor_nodes_0_mesh_nodes_mlp.linear_0.weight");
        int nz = 0;
        for (int64_t i = 0; u >= 0 && i < op->params.t[u].size; i++)
            nz += ro.grad[op->params.t[u].offset + i] != 0.0f;
        WX_CHECK(u >= 0 && nz == 0, "unused decoder mesh-node MLP: gradient 0 (%d nonzero)", nz);
        /* a second backward without a tape fails cleanly */
        WX_CHECK(wx_gc_run_backward(op, NULL, ro.y) != WX_OK &&
                     strstr(wx_error_message(), "without a recorded forward"),
                 "backward without a tape: '%s'", wx_error_message());
        free(yp), free(x);
    }
    run_free(&rf), run_free(&ro), run_free(&ro2), run_free(&rc);
    wx_gc_destroy(fu), wx_gc_destroy(op), wx_gc_destroy(op2), wx_gc_destroy(ck);
    wx_fixture_free(f);
}

/* The 3-step rollout of test_graphcast (fixture gc_rollout): loss, every gradient and dx0. */
/* A batch below max_batch runs on the prefix of the batched index and CSR arrays (graphcast_ops.h):
 * one step at b = 1 in a model made for 2 samples must give the bits of a model made for 1. */
static void test_batch_prefix(wx_ctx *ctx) {
    printf("batch 1 in a batch-2 model\n");
    wx_fixture *f = wx_fixture_load("gc_tiny");
    if (!WX_CHECK(f != NULL, "fixture gc_tiny")) return;
    wx_gc *m1 = make(ctx, f, 1, 0, 1, 1), *m2 = make(ctx, f, 1, 0, 2, 1);
    run r1 = {0}, r2 = {0};
    if (m1 && m2 && one_step(ctx, m1, f, 1, &r1) && one_step(ctx, m2, f, 1, &r2))
        WX_CHECK(r1.loss == r2.loss && !memcmp(r1.y, r2.y, sizeof(float) * (size_t)r1.ny) &&
                     !memcmp(r1.dx, r2.dx, sizeof(float) * (size_t)r1.nx) &&
                     !memcmp(r1.grad, r2.grad, sizeof(float) * (size_t)r1.len),
                 "b = 1 with max_batch 2 == max_batch 1 bitwise (loss %.8f vs %.8f)", r2.loss,
                 r1.loss);
    run_free(&r1), run_free(&r2);
    wx_gc_destroy(m1), wx_gc_destroy(m2);
    wx_fixture_free(f);
}

static int rollout(wx_ctx *ctx, wx_gc *m, const wx_fixture *f, run *r) {
    const int64_t cin = m->cin, cout = m->cout, H = m->c.nlat, W = m->c.nlon, hw = H * W;
    int32_t prev[4] = {0, 1, 2, 3}, last[4] = {4, 5, 6, 7};
    float *scale = wx_fixture_f32(f, "scale"), wlat[64], wch[64];
    loss_weights(m, wlat, wch);
    wx_gc_rollout_map map = {cin, cout, prev, last, scale};
    float *xs[3], *ys[3], *ts[3], *dys[3], *base[2];
    xs[0] = wx_fixture_f32(f, "x0");
    base[0] = wx_fixture_f32(f, "base1"), base[1] = wx_fixture_f32(f, "base2");
    ts[0] = wx_fixture_f32(f, "t1"), ts[1] = wx_fixture_f32(f, "t2"), ts[2] = wx_fixture_f32(f, "t3");
    for (int k = 0; k < 3; k++) {
        if (k) xs[k] = malloc(sizeof(float) * (size_t)(cin * hw));
        ys[k] = malloc(sizeof(float) * (size_t)(cout * hw));
        dys[k] = malloc(sizeof(float) * (size_t)(cout * hw));
    }
    int ok = 1;
    r->loss = 0;
    for (int k = 0; k < 3 && ok; k++) {
        if (k) wx_gc_rollout_next(&map, xs[k], xs[k - 1], ys[k - 1], base[k - 1], 1, hw);
        float l = 0;
        ok = WX_CHECK(wx_gc_run_forward(m, ys[k], xs[k], 1) == WX_OK, "rollout forward %d: %s", k,
                      wx_error_message()) &&
             WX_CHECK(wx_gc_loss_forward(ctx, m->be, &l, ys[k], ts[k], wlat, wch, 1, cout, H, W,
                                         3) == WX_OK &&
                          wx_gc_loss_backward(ctx, m->be, dys[k], 1.0, ys[k], ts[k], wlat, wch, 1,
                                              cout, H, W, 3) == WX_OK,
                      "rollout loss %d", k);
        r->loss += l;
    }
    wx_gc_zero_grad(m);
    r->nx = cin * hw, r->len = m->params.len;
    r->dx = malloc(sizeof(float) * (size_t)r->nx), r->grad = malloc(sizeof(float) * (size_t)r->len);
    float *carry = calloc((size_t)(cin * hw), sizeof(float));
    for (int k = 2; k >= 0 && ok; k--) {
        ok = WX_CHECK(wx_gc_run_backward(m, r->dx, dys[k]) == WX_OK, "rollout backward %d", k);
        for (int64_t i = 0; i < cin * hw; i++) r->dx[i] += carry[i];
        if (k) {
            memset(carry, 0, sizeof(float) * (size_t)(cin * hw));
            wx_gc_rollout_next_backward(&map, carry, dys[k - 1], r->dx, 1, hw);
        }
    }
    memcpy(r->grad, m->params.grad, sizeof(float) * (size_t)r->len);
    for (int k = 0; k < 3; k++) free(xs[k]), free(ys[k]), free(ts[k]), free(dys[k]);
    free(base[0]), free(base[1]), free(scale), free(carry);
    return ok;
}

static void test_rollout(wx_ctx *ctx) {
    printf("3-step rollout\n");
    wx_fixture *wf = wx_fixture_load("gc_tiny"), *f = wx_fixture_load("gc_rollout");
    if (!WX_CHECK(wf && f, "fixtures")) {
        wx_fixture_free(wf), wx_fixture_free(f);
        return;
    }
    wx_gc *fu = make(ctx, wf, 0, 1, 1, 3), *op = make(ctx, wf, 1, 1, 1, 3);
    wx_gc *op2 = make(ctx, wf, 1, 0, 1, 3);
    run rf = {0}, ro = {0}, ro2 = {0};
    if (fu && op && op2 && rollout(ctx, fu, f, &rf) && rollout(ctx, op, f, &ro) &&
        rollout(ctx, op2, f, &ro2)) {
        double el = fabs(ro.loss - rf.loss) / fabs(rf.loss), edx = wx_test_rel_diff_f32(ro.dx, rf.dx, rf.nx);
        double lref = wx_fixture_scalar(f, "loss");
        const wx_fixture_tensor *dxr = wx_fixture_get(f, "dx0");
        double fdx = rel_d(ro.dx, dxr->data, dxr->size);
        printf("  ops vs fused: loss %.2e, dx0 %.2e; vs PyTorch: loss %.8f vs %.8f, dx0 %.2e\n",
               el, edx, ro.loss, lref, fdx);
        WX_CHECK(el <= 1e-5 && edx <= 1e-5, "rollout ops vs fused: loss %.2e dx0 %.2e", el, edx);
        WX_CHECK(fabs(ro.loss - lref) <= 1e-5 * fabs(lref) && fdx <= 1e-4,
                 "rollout ops vs PyTorch: loss %.8f vs %.8f, dx0 %.2e", ro.loss, lref, fdx);
        double eg = cmp_grads(op, ro.grad, rf.grad, GRAD_TOL, "rollout ops vs fused");
        seen_vs_fused = fmax(seen_vs_fused, fmax(fmax(el, edx), eg));
        seen_vs_ref_grad = fmax(seen_vs_ref_grad, fmax(fdx, cmp_grads_ref(op, ro.grad, f, 1e-4,
                                                                            "rollout ops")));
        WX_CHECK(ro.loss == ro2.loss && !memcmp(ro.dx, ro2.dx, sizeof(float) * (size_t)ro.nx) &&
                     !memcmp(ro.grad, ro2.grad, sizeof(float) * (size_t)ro.len),
                 "rollout: ops path with and without checkpointing bitwise identical");
    }
    run_free(&rf), run_free(&ro), run_free(&ro2);
    wx_gc_destroy(fu), wx_gc_destroy(op), wx_gc_destroy(op2);
    wx_fixture_free(wf), wx_fixture_free(f);
}

/* wx_gc_create takes the ops path on the CPU only under WX_GC_OPS=1. */
static void test_switch(wx_ctx *ctx) {
    wx_yaml *root = NULL;
    wx_gc_config c;
    if (!WX_CHECK(wx_yaml_load_string(TINY, "test", &root) == WX_OK &&
                      wx_gc_config_parse(root, "", &c) == WX_OK, "config"))
        return;
    wx_yaml_free(root);
    unsetenv("WX_GC_OPS");
    wx_gc *a = wx_gc_create(ctx, wx_backend_cpu(), &c, 7, 1, 1, 0);
    setenv("WX_GC_OPS", "1", 1);
    wx_gc *b = wx_gc_create(ctx, wx_backend_cpu(), &c, 7, 1, 1, 0);
    unsetenv("WX_GC_OPS");
    WX_CHECK(a && b && !a->ops && b->ops, "WX_GC_OPS switch: default fused, =1 ops");
    /* same initial parameters on both paths */
    WX_CHECK(a && b && a->params.len == b->params.len &&
                 !memcmp(a->params.data, b->params.data, sizeof(float) * (size_t)a->params.len),
             "both paths initialise the same parameters");
    wx_gc_destroy(a), wx_gc_destroy(b);
}

/* The GraphCast train model (ops path under WX_GC_OPS=1) with hand-made data attached. */
static wx_train_model *tm_make(wx_ctx *ctx, const wx_backend *be, int ops, float *statics) {
    wx_yaml *root = NULL;
    wx_train_model *m = NULL;
    if (ops) setenv("WX_GC_OPS", "1", 1);
    int ok = WX_CHECK(wx_yaml_load_string(TINY, "test", &root) == WX_OK &&
                          wx_train_model_create_ex(root, "", ctx, be, 5, 2, 2, ops, &m) == WX_OK,
                      "train model (ops %d): %s", ops, wx_error_message());
    unsetenv("WX_GC_OPS");
    wx_yaml_free(root);
    if (!ok) return NULL;
    char names[4][WX_TRAIN_NAME_MAX] = {"t2m", "msl", "z500", "z850"};
    double mean[4] = {0, 0, 0, 0}, sd[4] = {1, 2, 1, 0.5}, dd[4] = {0.5, 0.7, 0.3, 0.2};
    wx_train_data d = {.nstate = 4, .names = names, .mean = mean, .std = sd, .diff_std = dd,
                       .nstatic = 1, .statics = statics, .dt_s = 21600};
    WX_CHECK(m->out_channels == 4 && wx_train_model_attach(m, &d) == WX_OK, "attach: %s",
             wx_error_message());
    return m;
}

/* one_step with every tensor in the memory of m->be (uploads, copies back). */
static int one_step_be(wx_ctx *ctx, wx_gc *m, const wx_fixture *f, int64_t b, run *r) {
    const wx_backend *be = m->be;
    const int64_t H = m->c.nlat, W = m->c.nlon, cout = m->cout;
    float *hx = wx_fixture_f32(f, "x"), *ht = wx_fixture_f32(f, "t"), hwl[64], hwc[64];
    loss_weights(m, hwl, hwc);
    r->ny = b * cout * H * W, r->nx = b * m->cin * H * W, r->len = m->params.len;
    r->y = malloc(sizeof(float) * (size_t)r->ny), r->dx = malloc(sizeof(float) * (size_t)r->nx);
    r->grad = malloc(sizeof(float) * (size_t)r->len);
    float *x = wx_backend_upload_f32(be, ctx, hx, r->nx, "x");
    float *t = wx_backend_upload_f32(be, ctx, ht, r->ny, "t");
    float *wl = wx_backend_upload_f32(be, ctx, hwl, H, "wlat");
    float *wc = wx_backend_upload_f32(be, ctx, hwc, cout, "wch");
    float *y = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)r->ny, "y");
    float *dy = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)r->ny, "dy");
    float *dx = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)r->nx, "dx");
    float *lv = wx_backend_alloc(be, ctx, sizeof(float), "loss"), loss = 0;
    wx_gc_zero_grad(m);
    int ok = WX_CHECK(x && t && wl && wc && y && dy && dx && lv, "%s buffers", be->name) &&
             WX_CHECK(wx_gc_run_forward(m, y, x, b) == WX_OK &&
                          wx_gc_loss_forward(ctx, be, lv, y, t, wl, wc, b, cout, H, W, 1) == WX_OK &&
                          wx_gc_loss_backward(ctx, be, dy, 1.0, y, t, wl, wc, b, cout, H, W, 1) ==
                              WX_OK &&
                          wx_gc_run_backward(m, dx, dy) == WX_OK &&
                          be->copy_d2h(ctx, &loss, lv, sizeof loss) == WX_OK &&
                          be->copy_d2h(ctx, r->y, y, sizeof(float) * (size_t)r->ny) == WX_OK &&
                          be->copy_d2h(ctx, r->dx, dx, sizeof(float) * (size_t)r->nx) == WX_OK &&
                          be->copy_d2h(ctx, r->grad, m->params.grad,
                                       sizeof(float) * (size_t)r->len) == WX_OK,
                      "%s step: %s", be->name, wx_error_message());
    r->loss = loss;
    be->mem_free(ctx, x), be->mem_free(ctx, t), be->mem_free(ctx, wl), be->mem_free(ctx, wc);
    be->mem_free(ctx, y), be->mem_free(ctx, dy), be->mem_free(ctx, dx), be->mem_free(ctx, lv);
    free(hx), free(ht);
    return ok;
}

/* The ops path on the device simulator gives the CPU ops path's bits, with checkpointing too. */
static void test_devsim(wx_ctx *ctx) {
    printf("device simulator\n");
    wx_fixture *f = wx_fixture_load("gc_tiny");
    if (!WX_CHECK(f != NULL, "fixture gc_tiny")) return;
    const wx_backend *ds = wx_devsim_backend();
    size_t b0 = 0, live0 = wx_devsim_live(&b0);
    long v0 = wx_devsim_violations(), ops0 = wx_devsim_ops_run();
    const int64_t B = 2;
    for (int ck = 0; ck < 2; ck++) {
        size_t a0 = 0, a1 = 0;
        wx_devsim_live(&a0);
        wx_gc *c = make(ctx, f, 1, ck, B, 1), *d = make_on(ctx, ds, f, 1, ck, B, 1);
        wx_devsim_live(&a1);
        /* wx_gc_ops_bytes (the dry count behind docs/graphcast.md's memory table) is what
         * the ops path really allocates: arena + ops buffers + parameters and gradients */
        if (d)
            WX_CHECK(a1 - a0 == (size_t)(d->arena_len * 4 + wx_gc_ops_bytes(d) +
                                         2 * (int64_t)d->params.len * 4),
                     "device bytes %zu = arena %lld + ops %lld + 2 x params %lld", a1 - a0,
                     (long long)d->arena_len * 4, (long long)wx_gc_ops_bytes(d),
                     (long long)d->params.len * 4);
        run rc = {0}, rd = {0};
        if (c && d && WX_CHECK(d->ops && d->params.be == ds, "devsim model on the ops path") &&
            one_step(ctx, c, f, B, &rc) && one_step_be(ctx, d, f, B, &rd))
            WX_CHECK(rc.loss == rd.loss && !memcmp(rc.y, rd.y, sizeof(float) * (size_t)rc.ny) &&
                         !memcmp(rc.dx, rd.dx, sizeof(float) * (size_t)rc.nx) &&
                         !memcmp(rc.grad, rd.grad, sizeof(float) * (size_t)rc.len),
                     "devsim (checkpointing %d) == CPU ops path bitwise", ck);
        run_free(&rc), run_free(&rd);
        wx_gc_destroy(c), wx_gc_destroy(d);
    }
    size_t b1 = 0, live1 = wx_devsim_live(&b1);
    long ops = wx_devsim_ops_run() - ops0;
    printf("  %ld simulated device ops, violations %ld, live allocations %zu -> %zu\n", ops,
           wx_devsim_violations() - v0, live0, live1);
    WX_CHECK(ops > 100 && wx_devsim_protecting(), "ran through the simulator (%ld ops)", ops);
    WX_CHECK(wx_devsim_check() == v0 && wx_devsim_violations() == v0, "no violation: %s",
             wx_devsim_first_violation());
    WX_CHECK(live1 == live0 && b1 == b0, "no device leak (%zu -> %zu allocations)", live0, live1);
    wx_fixture_free(f);
}

static void test_train_model(wx_ctx *ctx) {
    printf("train model interface, 2-step rollout, batch 2\n");
    const int64_t b = 2, k = 2, H = 9, W = 16, hw = H * W;
    float statics[9 * 16];
    double tmp[2 * 2 * 4 * 9 * 16];
    for (int64_t i = 0; i < hw; i++) statics[i] = (float)((i % 7) / 7.0 - 0.4);
    /* fused CPU; ops path on the CPU; ops path on the device simulator (both checkpointing) */
    const wx_backend *bes[3] = {wx_backend_cpu(), wx_backend_cpu(), wx_devsim_backend()};
    size_t b0 = 0, live0 = wx_devsim_live(&b0);
    long v0 = wx_devsim_violations();
    wx_train_model *m[3] = {tm_make(ctx, bes[0], 0, statics), tm_make(ctx, bes[1], 1, statics),
                            tm_make(ctx, bes[2], 1, statics)};
    if (!m[0] || !m[1] || !m[2] || !WX_CHECK(m[0]->h == H && m[0]->w == W, "grid %lldx%lld",
                                             (long long)m[0]->h, (long long)m[0]->w)) {
        for (int i = 0; i < 3; i++) wx_train_model_destroy(m[i]);
        return;
    }
    const int64_t cin = m[0]->in_channels, ns = 2 * b * 4 * hw, nx = b * cin * hw;
    float *states = malloc(sizeof(float) * (size_t)ns), *tg = malloc(sizeof(float) * (size_t)ns);
    wx_test_fill_uniform(tmp, ns, 51, -1.0, 1.0);
    wx_test_f64_to_f32(states, tmp, ns);
    wx_test_fill_uniform(tmp, ns, 52, -1.0, 1.0);
    wx_test_f64_to_f32(tg, tmp, ns); /* (K, B, Cout, HW) */
    wx_time t1[2] = {wx_time_make(2020, 1, 1, 6, 0, 0), wx_time_make(2020, 3, 5, 12, 0, 0)};
    float *x[3], *x1[3], *y[3], *grad[3];
    double loss[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        /* the interface's arrays in the model backend's memory, copied back to compare */
        const wx_backend *be = bes[i];
        const size_t bx = sizeof(float) * (size_t)nx, by = sizeof(float) * (size_t)(b * 4 * hw);
        const size_t bg = sizeof(float) * (size_t)m[i]->params->len;
        x[i] = malloc(bx), x1[i] = malloc(bx), y[i] = malloc(by), grad[i] = malloc(bg);
        /* make_input is the data layer's: host states and x on every backend (train_model.h) */
        WX_CHECK(m[i]->ops->make_input(m[i], x[i], states, t1, b) == WX_OK, "make_input (%d): %s",
                 i, wx_error_message());
        float *dtg = wx_backend_upload_f32(be, ctx, tg, ns, "targets");
        float *dx = wx_backend_upload_f32(be, ctx, x[i], nx, "x");
        float *dx1 = wx_backend_alloc(be, ctx, bx, "x1"), *dy = wx_backend_alloc(be, ctx, by, "y");
        wx_train_loss l;
        double wl[9];
        for (int j = 0; j < H; j++) wl[j] = 0.5 + j / 9.0;
        wx_train_loss_init(&l, WX_LOSS_LATW_MSE, ctx, be, 4, H, W, wl, NULL);
        l.kind = WX_LOSS_GRAPHCAST;
        WX_CHECK(m[i]->ops->loss_weights(m[i], l.wlat, l.wch) == WX_OK, "loss weights");
        wx_time t2[2] = {t1[0] + 21600, t1[1] + 21600};
        WX_CHECK(dtg && dx && dx1 && dy && m[i]->ops->predict(m[i], dy, dx, b) == WX_OK &&
                     m[i]->ops->next_input(m[i], dx1, dx, dy, t2, b) == WX_OK,
                 "predict / next_input (%d): %s", i, wx_error_message());
        wx_params_zero_grad(m[i]->params);
        WX_CHECK(m[i]->ops->loss_backward(m[i], &l, dx, dtg, t1, k, b, &loss[i]) == WX_OK &&
                     be->copy_d2h(ctx, x1[i], dx1, bx) == WX_OK &&
                     be->copy_d2h(ctx, y[i], dy, by) == WX_OK &&
                     be->copy_d2h(ctx, grad[i], m[i]->params->grad, bg) == WX_OK,
                 "loss_backward (%d): %s", i, wx_error_message());
        wx_train_loss_free(&l);
        be->mem_free(ctx, dtg), be->mem_free(ctx, dx);
        be->mem_free(ctx, dx1), be->mem_free(ctx, dy);
    }
    WX_CHECK(loss[2] == loss[1] && !memcmp(x[2], x[1], sizeof(float) * (size_t)nx) &&
                 !memcmp(x1[2], x1[1], sizeof(float) * (size_t)nx) &&
                 !memcmp(y[2], y[1], sizeof(float) * (size_t)(b * 4 * hw)) &&
                 !memcmp(grad[2], grad[1], sizeof(float) * (size_t)m[1]->params->len),
             "train model on the device simulator == CPU ops path bitwise");
    WX_CHECK(!memcmp(x[0], x[1], sizeof(float) * (size_t)nx), "make_input identical");
    double ey = wx_test_rel_diff_f32(y[1], y[0], b * 4 * hw), ex1 = wx_test_rel_diff_f32(x1[1], x1[0], nx);
    double el = fabs(loss[1] - loss[0]) / fabs(loss[0]);
    printf("  ops vs fused: predict %.2e, next_input %.2e, loss %.2e (%.8f)\n", ey, ex1, el,
           loss[0]);
    WX_CHECK(ey <= 1e-5 && ex1 <= 1e-5 && el <= 1e-5 && loss[0] > 0,
             "train model ops vs fused: predict %.2e next %.2e loss %.2e", ey, ex1, el);
    seen_vs_fused = fmax(seen_vs_fused, fmax(fmax(ey, ex1), el));
    wx_gc *g = ((wx_gc **)m[1]->impl)[0]; /* gc_impl starts with the model */
    WX_CHECK(g->ops != NULL, "the train model took the ops path");
    seen_vs_fused = fmax(seen_vs_fused, cmp_grads(g, grad[1], grad[0], GRAD_TOL,
                                                  "train model 2-step ops vs fused"));
    for (int i = 0; i < 3; i++) free(x[i]), free(x1[i]), free(y[i]), free(grad[i]);
    free(states), free(tg);
    for (int i = 0; i < 3; i++) wx_train_model_destroy(m[i]);
    size_t b1 = 0, live1 = wx_devsim_live(&b1);
    WX_CHECK(wx_devsim_check() == v0 && wx_devsim_violations() == v0, "devsim train model: no "
             "violation: %s", wx_devsim_first_violation());
    WX_CHECK(live1 == live0 && b1 == b0, "devsim train model: no leak (%zu -> %zu)", live0, live1);
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    test_switch(ctx);
    test_train_model(ctx);
    test_one_step(ctx);
    test_rollout(ctx);
    test_batch_prefix(ctx);
    test_devsim(ctx);
    printf("worst seen: ops vs fused %.2e; vs PyTorch forward %.2e, gradients %.2e\n",
           seen_vs_fused, seen_vs_ref_fwd, seen_vs_ref_grad);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
