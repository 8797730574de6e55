/* PrecipNet (src/models/precipnet.c) against the independent PyTorch float64 model of
 * tests/ref/ref_precipnet.py (NVlabs PrecipNet: AFNONet backbone → PeriodicPad2d → Conv2d 3×3 →
 * ReLU): forward output, every parameter gradient (NVlabs names backbone.*, conv.*) and the input
 * gradient for a random upstream gradient; the target transform and its inverse; the paper
 * configuration's size (73,757,962, reference sheet §1.6); shared parameter buffer; accumulation.
 *
 * Tolerances as test_fourcastnet.c (float32 model vs float64 reference): forward ≤ 1e-5 of
 * max|y_ref|, gradients ≤ 1e-4 of max|g_ref| per tensor. The fixture keeps every ReLU/softshrink
 * input ≥ 3e-4 from its kink, so float32 takes the same branch as float64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/precipnet.h"
#include "wx_fcn_fixture.h"
#include "wx_fixture.h"
#include "wx_test.h"

static void test_reference(wx_ctx *ctx) {
    wx_fixture *f = wx_fixture_load("precip_tiny");
    if (!WX_CHECK(f != NULL, "fixture precip_tiny")) return;
    wx_fcn_config c = wx_fixture_fcn_config(f);
    wx_precip *m = wx_precip_create(ctx, wx_backend_cpu(), &c, 5, 2, 1);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) return;
    /* Every fixture parameter by its NVlabs name; the sets must match exactly. */
    int loaded = 0;
    for (int i = 0; i < f->count; i++) {
        const wx_fixture_tensor *t = &f->t[i];
        if (strncmp(t->name, "param/", 6)) continue;
        wx_status s = wx_params_set_f64(&m->params, "fixture", t->name + 6, t->ndim, t->dims,
                                        t->data);
        loaded += WX_CHECK(s == WX_OK, "load %s: %s", t->name, wx_error_message());
    }
    WX_CHECK(loaded == m->params.count, "loaded %d tensors, model has %d", loaded,
             m->params.count);
    WX_CHECK(!strcmp(m->params.t[0].name, "backbone.pos_embed") &&
             !strcmp(m->params.t[m->conv_w].name, "conv.weight") &&
             !strcmp(m->params.t[m->conv_b].name, "conv.bias") &&
             m->conv_b == m->params.count - 1, "NVlabs names and order");

    const wx_fixture_tensor *xr = wx_fixture_get(f, "x"), *yr = wx_fixture_get(f, "y");
    const wx_fixture_tensor *dxr = wx_fixture_get(f, "dx");
    int64_t b = xr->dims[0];
    float *x = wx_fixture_f32(f, "x"), *dy = wx_fixture_f32(f, "dy");
    float *y = malloc(sizeof(float) * (size_t)yr->size), *y2 = malloc(sizeof(float) * (size_t)yr->size);
    float *dx = malloc(sizeof(float) * (size_t)xr->size);
    wx_precip_zero_grad(m);
    WX_CHECK(wx_precip_forward(m, y, x, b) == WX_OK, "forward: %s", wx_error_message());
    WX_CHECK_CLOSE_F32("precip y", y, yr->data, yr->size, 1e-5, 0.0);
    int zeros = 0;
    for (int64_t i = 0; i < yr->size; i++) zeros += y[i] == 0.0f;
    WX_CHECK(zeros > 0 && zeros < yr->size, "ReLU active on part of the grid (%d zeros)", zeros);
    printf("  forward: error %.2e relative to max\n", wx_fixture_rel_err(y, yr->data, yr->size));
    WX_CHECK(wx_precip_backward(m, dx, dy) == WX_OK, "backward: %s", wx_error_message());
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < m->params.count; i++) {
        char key[WX_PARAM_NAME_MAX + 8];
        snprintf(key, sizeof key, "grad/%s", m->params.t[i].name);
        const wx_fixture_tensor *g = wx_fixture_get(f, key);
        const float *a = wx_params_grad(&m->params, i);
        WX_CHECK(g->size == m->params.t[i].size, "%s size", key);
        WX_CHECK_CLOSE_F32(key, a, g->data, g->size, 1e-4, 0.0);
        double e = wx_fixture_rel_err(a, g->data, g->size);
        if (e > worst) worst = e, worst_name = m->params.t[i].name;
    }
    printf("  worst parameter-gradient error %.2e relative (%s)\n", worst, worst_name);
    WX_CHECK_CLOSE_F32("precip dx", dx, dxr->data, dxr->size, 1e-4, 0.0);
    printf("  dx: error %.2e relative\n", wx_fixture_rel_err(dx, dxr->data, dxr->size));

    /* predict == forward bit for bit; a second backward (dx NULL) doubles every gradient. */
    WX_CHECK(wx_precip_predict(m, y2, x, b) == WX_OK, "predict");
    WX_CHECK(!memcmp(y, y2, sizeof(float) * (size_t)yr->size), "predict == forward bitwise");
    float *g1 = malloc(sizeof(float) * (size_t)m->params.len);
    memcpy(g1, m->params.grad, sizeof(float) * (size_t)m->params.len);
    WX_CHECK(wx_precip_forward(m, y, x, b) == WX_OK && wx_precip_backward(m, NULL, dy) == WX_OK,
             "second forward/backward");
    int doubled = 1;
    for (int64_t i = 0; i < m->params.len; i++)
        if (fabsf(m->params.grad[i] - 2 * g1[i]) > 1e-6f * fabsf(2 * g1[i]) + 1e-30f) doubled = 0;
    WX_CHECK(doubled, "second backward accumulates");
    WX_CHECK(wx_precip_backward(m, NULL, dy) == WX_ERR_USAGE, "backward without a tape refused");
    /* The backbone views the same buffer: a change through one table shows in the other. */
    WX_CHECK(m->backbone->params.data == m->params.data &&
             m->backbone->params.grad == m->params.grad, "one shared parameter buffer");

    /* Transform and inverse vs torch. */
    const wx_fixture_tensor *tpr = wx_fixture_get(f, "tp");
    float *tp = wx_fixture_f32(f, "tp"), *lg = malloc(sizeof(float) * (size_t)tpr->size);
    float *un = malloc(sizeof(float) * (size_t)tpr->size);
    wx_precip_to_log(lg, tp, tpr->size, WX_PRECIP_EPS);
    WX_CHECK_CLOSE_F32("log1p(tp/eps)", lg, wx_fixture_get(f, "logtp")->data, tpr->size, 1e-6, 0);
    wx_precip_from_log(un, lg, tpr->size, WX_PRECIP_EPS);
    WX_CHECK_CLOSE_F32("eps*(exp(x)-1)", un, wx_fixture_get(f, "unlog")->data, tpr->size, 1e-5,
                       1e-12);
    float neg = -3e-6f, out;
    wx_precip_to_log(&out, &neg, 1, WX_PRECIP_EPS);
    WX_CHECK(out == 0.0f, "negative tp (packing noise) maps to 0");
    free(tp), free(lg), free(un), free(g1);
    free(x), free(dy), free(y), free(y2), free(dx);
    wx_precip_destroy(m);
    wx_fixture_free(f);
}

static void test_paper_size(void) {
    wx_yaml *y = NULL;
    const char *path = WX_FIXTURE_DIR "/../../../configs/model/fourcastnet_paper.yaml";
    if (!WX_CHECK(wx_yaml_load_file(path, &y) == WX_OK, "load %s", path)) return;
    wx_fcn_config c;
    WX_CHECK(wx_fcn_config_parse(y, "", &c) == WX_OK, "parse: %s", wx_error_message());
    c.out_channels = 1; /* the precipitation backbone: 20 in, 1 out */
    wx_params p;
    wx_params_init(&p);
    wx_precip_param_table(&p, &c);
    /* §1.6: PrecipNet = backbone with a 1-output head (49,152) plus the 3x3 conv (10). */
    WX_CHECK(wx_params_total(&p) == 73757962, "PrecipNet paper size %lld, want 73,757,962",
             (long long)wx_params_total(&p));
    int i = wx_params_find(&p, "module.backbone.head.weight");
    WX_CHECK(i >= 0 && p.t[i].dims[0] == 64 && p.t[i].dims[1] == 768, "backbone.head.weight (64, 768)");
    WX_CHECK(wx_params_find(&p, "backbone.norm.weight") >= 0, "backbone.norm kept (unused)");
    wx_params_free(&p);
    wx_yaml_free(y);
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(0);
    test_reference(ctx);
    test_paper_size();
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
