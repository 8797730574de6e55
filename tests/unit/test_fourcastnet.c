/* FourCastNet model (src/models/fourcastnet*.c) against the independent PyTorch float64 model of
 * tests/ref/ref_fourcastnet.py: forward output, relative-L2 loss, every parameter gradient and the
 * input gradient, one step and two autoregressive steps; kept-mode masks; the paper configuration's
 * parameter table (74,691,840, published count); initialisation statistics; error paths.
 *
 * Tolerances. The model runs in float32 with float32 FFTs and GEMMs; the reference is float64.
 * Forward: max|y − y_ref| ≤ 1e-5 · max|y_ref|. Each output is a chain of a few hundred float32
 * roundings (unit 6e-8) through 2 blocks whose LayerNorms rescale by O(1), so ~1e-7..1e-6 is
 * expected (seen: 3.0e-7); 1e-5 leaves a 30x margin for other BLAS kernels and thread counts and
 * still catches subtle errors (a dropped imaginary part or one wrong mode column moves the output
 * by far more). Gradients: ≤ 1e-4 · max|g_ref| per tensor (seen: 4.5e-7), looser because
 * backward sums over every token and mode and LayerNorm backward cancels terms. The fixture's activations keep ≥ 1e-4 away from every ReLU/softshrink kink, so
 * float32 and float64 take the same branch everywhere. No model-level finite differences: the ops
 * are float32 here and each has float64 FD tests of its own. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/fourcastnet.h"
#include "wx_fcn_fixture.h"
#include "wx_fixture.h"
#include "wx_test.h"

static double max_rel_seen_fwd, max_rel_seen_grad;

/* Loads every "param/<name>" of the fixture into the model by name; checks that the fixture and
 * the model have the same tensor set. */
static void load_weights(wx_fcn *m, const wx_fixture *f) {
    int loaded = 0;
    for (int i = 0; i < f->count; i++) {
        const wx_fixture_tensor *t = &f->t[i];
        if (strncmp(t->name, "param/", 6) != 0) continue;
        wx_status s = wx_params_set_f64(&m->params, "fixture", t->name + 6, t->ndim, t->dims,
                                        t->data);
        WX_CHECK(s == WX_OK, "load %s: %s", t->name, wx_error_message());
        loaded += s == WX_OK;
    }
    WX_CHECK(loaded == m->params.count, "loaded %d tensors, model has %d", loaded,
             m->params.count);
}

/* Every parameter gradient against "grad/<name>". */
static void check_grads(const wx_fcn *m, const wx_fixture *f, const char *what) {
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < m->params.count; i++) {
        char key[WX_PARAM_NAME_MAX + 8];
        snprintf(key, sizeof key, "grad/%s", m->params.t[i].name);
        const wx_fixture_tensor *g = wx_fixture_get(f, key);
        WX_CHECK(g->size == m->params.t[i].size, "%s: %s size", what, key);
        const float *a = wx_params_grad(&m->params, i);
        char label[160];
        snprintf(label, sizeof label, "%s %s", what, key);
        WX_CHECK_CLOSE_F32(label, a, g->data, g->size, 1e-4, 0.0);
        double e = wx_fixture_rel_err(a, g->data, g->size);
        if (e > worst) worst = e, worst_name = m->params.t[i].name;
    }
    printf("  %s: worst parameter-gradient error %.2e relative (%s)\n", what, worst, worst_name);
    if (worst > max_rel_seen_grad) max_rel_seen_grad = worst;
}

static void check_fwd(const char *what, const float *a, const wx_fixture_tensor *b) {
    WX_CHECK_CLOSE_F32(what, a, b->data, b->size, 1e-5, 0.0);
    double e = wx_fixture_rel_err(a, b->data, b->size);
    printf("  %s: error %.2e relative to max\n", what, e);
    if (e > max_rel_seen_fwd) max_rel_seen_fwd = e;
}

/* loss = rel_l2(y, t) and dy = ∂loss/∂y through the backend's loss op. */
static double loss_and_grad(wx_fcn *m, float *dy, const float *y, const float *t, int64_t b,
                            int64_t n) {
    float loss = 0;
    WX_CHECK(m->be->rel_l2_forward(m->ctx, &loss, y, t, b, n) == WX_OK, "rel_l2 forward");
    WX_CHECK(m->be->rel_l2_backward(m->ctx, dy, 1.0, y, t, b, n) == WX_OK, "rel_l2 backward");
    return loss;
}

static void test_one_step(wx_ctx *ctx, const char *fixture) {
    printf("%s\n", fixture);
    wx_fixture *f = wx_fixture_load(fixture);
    if (!WX_CHECK(f != NULL, "fixture %s", fixture)) return;
    wx_fcn_config c = wx_fixture_fcn_config(f);
    wx_fcn *m = wx_fcn_create(ctx, wx_backend_cpu(), &c, 1, 2, 1);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) return;
    load_weights(m, f);
    const wx_fixture_tensor *xr = wx_fixture_get(f, "x"), *yr = wx_fixture_get(f, "y");
    int64_t b = xr->dims[0], nout = yr->size / b;
    float *x = wx_fixture_f32(f, "x"), *t = wx_fixture_f32(f, "t");
    float *y = malloc(sizeof *y * (size_t)yr->size), *y2 = malloc(sizeof *y2 * (size_t)yr->size);
    float *dy = malloc(sizeof *dy * (size_t)yr->size), *dx = malloc(sizeof *dx * (size_t)xr->size);

    WX_CHECK(wx_fcn_forward(m, y, x, b) == WX_OK, "forward: %s", wx_error_message());
    check_fwd("forward y", y, yr);
    double loss = loss_and_grad(m, dy, y, t, b, nout);
    double lref = wx_fixture_scalar(f, "loss");
    WX_CHECK(fabs(loss - lref) <= 1e-5 * fabs(lref), "loss %.8f vs reference %.8f", loss, lref);
    wx_fcn_zero_grad(m);
    WX_CHECK(wx_fcn_backward(m, dx, dy) == WX_OK, "backward: %s", wx_error_message());
    check_grads(m, f, "one step");
    const wx_fixture_tensor *dxr = wx_fixture_get(f, "dx");
    WX_CHECK_CLOSE_F32("dx", dx, dxr->data, dxr->size, 1e-4, 0.0);
    double e = wx_fixture_rel_err(dx, dxr->data, dxr->size);
    printf("  dx: error %.2e relative\n", e);
    if (e > max_rel_seen_grad) max_rel_seen_grad = e;

    /* predict (no tape) computes the same numbers as forward, bit for bit. */
    WX_CHECK(wx_fcn_predict(m, y2, x, b) == WX_OK, "predict");
    WX_CHECK(memcmp(y, y2, sizeof *y * (size_t)yr->size) == 0, "predict == forward bitwise");

    /* Accumulation: a second forward/backward without zeroing doubles every gradient. */
    float *g1 = malloc(sizeof(float) * (size_t)m->params.len);
    memcpy(g1, m->params.grad, sizeof(float) * (size_t)m->params.len);
    WX_CHECK(wx_fcn_forward(m, y, x, b) == WX_OK, "forward again");
    WX_CHECK(wx_fcn_backward(m, NULL, dy) == WX_OK, "backward again, dx NULL");
    int doubled = 1;
    for (int64_t i = 0; i < m->params.len; i++)
        if (fabsf(m->params.grad[i] - 2 * g1[i]) > 1e-6f * fabsf(2 * g1[i]) + 1e-30f) doubled = 0;
    WX_CHECK(doubled, "second backward accumulates (grad == 2 x first)");
    /* Run to run: a fresh forward/backward gives the first gradients bit for bit. */
    wx_fcn_zero_grad(m);
    WX_CHECK(wx_fcn_forward(m, y, x, b) == WX_OK && wx_fcn_backward(m, NULL, dy) == WX_OK,
             "third forward/backward");
    WX_CHECK(memcmp(m->params.grad, g1, sizeof(float) * (size_t)m->params.len) == 0,
             "gradients identical run to run");
    /* Batch of 1 (first sample) gives the first sample's output of the batch-2 run. */
    WX_CHECK(wx_fcn_predict(m, y2, x, 1) == WX_OK, "predict B=1");
    WX_CHECK(wx_fixture_rel_err(y2, yr->data, nout) <= 1e-5,
             "B=1 output equals sample 0 of the batch");

    free(g1), free(x), free(t), free(y), free(y2), free(dy), free(dx);
    wx_fcn_destroy(m);
    wx_fixture_free(f);
}

static void test_finetune(wx_ctx *ctx) {
    printf("fcn_finetune\n");
    wx_fixture *fw = wx_fixture_load("fcn_tiny"), *f = wx_fixture_load("fcn_finetune");
    if (!WX_CHECK(fw && f, "fixtures fcn_tiny, fcn_finetune")) return;
    wx_fcn_config c = wx_fixture_fcn_config(fw);
    wx_fcn *m = wx_fcn_create(ctx, wx_backend_cpu(), &c, 1, 2, 2);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) return;
    load_weights(m, fw);
    const wx_fixture_tensor *yr = wx_fixture_get(f, "y1");
    int64_t b = yr->dims[0], nout = yr->size / b, ny = yr->size;
    float *x = wx_fixture_f32(fw, "x"), *t1 = wx_fixture_f32(f, "t1"), *t2 = wx_fixture_f32(f, "t2");
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    float *dy1 = malloc(sizeof(float) * (size_t)ny), *dy2 = malloc(sizeof(float) * (size_t)ny);
    float *dy1b = malloc(sizeof(float) * (size_t)ny);
    wx_fcn_zero_grad(m);
    WX_CHECK(wx_fcn_forward(m, y1, x, b) == WX_OK, "step 1: %s", wx_error_message());
    WX_CHECK(wx_fcn_forward(m, y2, y1, b) == WX_OK, "step 2: %s", wx_error_message());
    WX_CHECK(wx_fcn_forward(m, dy1, x, b) == WX_ERR_USAGE, "third forward with 2 tapes refused");
    check_fwd("y1", y1, yr);
    check_fwd("y2", y2, wx_fixture_get(f, "y2"));
    double loss = loss_and_grad(m, dy1, y1, t1, b, nout) + loss_and_grad(m, dy2, y2, t2, b, nout);
    double lref = wx_fixture_scalar(f, "loss");
    WX_CHECK(fabs(loss - lref) <= 1e-5 * fabs(lref), "loss %.8f vs reference %.8f", loss, lref);
    /* Backward through step 2, then step 1 with both contributions to ∂L/∂y1. */
    WX_CHECK(wx_fcn_backward(m, dy1b, dy2) == WX_OK, "backward 2: %s", wx_error_message());
    for (int64_t i = 0; i < ny; i++) dy1[i] += dy1b[i];
    WX_CHECK(wx_fcn_backward(m, NULL, dy1) == WX_OK, "backward 1: %s", wx_error_message());
    WX_CHECK(wx_fcn_backward(m, NULL, dy1) == WX_ERR_USAGE, "backward with no tape refused");
    check_grads(m, f, "two steps");
    free(x), free(t1), free(t2), free(y1), free(y2), free(dy1), free(dy2), free(dy1b);
    wx_fcn_destroy(m);
    wx_fixture_free(fw);
    wx_fixture_free(f);
}

static void test_masks(void) {
    wx_fixture *f = wx_fixture_load("fcn_masks");
    if (!WX_CHECK(f != NULL, "fixture fcn_masks")) return;
    int count = (int)wx_fixture_scalar(f, "count");
    for (int i = 0; i < count; i++) {
        char key[64];
        snprintf(key, sizeof key, "case%d/dims", i);
        const double *dd = wx_fixture_get(f, key)->data;
        snprintf(key, sizeof key, "case%d/mask", i);
        const wx_fixture_tensor *mr = wx_fixture_get(f, key);
        int64_t h = (int64_t)dd[0], w = (int64_t)dd[1], wf = w / 2 + 1;
        uint8_t *mask = malloc((size_t)(h * wf));
        int64_t kept = wx_fcn_mode_mask(mask, h, w, dd[2], (int)dd[3]);
        int64_t same = 0, want = 0;
        for (int64_t k = 0; k < h * wf; k++) {
            same += mask[k] == (uint8_t)mr->data[k];
            want += mr->data[k] != 0;
        }
        WX_CHECK(same == h * wf && kept == want, "mask %lldx%lld fraction %g %s: %lld of %lld "
                 "match, kept %lld vs %lld", (long long)h, (long long)w, dd[2],
                 dd[3] != 0 ? "two-sided" : "NVlabs", (long long)same, (long long)(h * wf),
                 (long long)kept, (long long)want);
        free(mask);
    }
    /* The paper grid: kx = 0..45 of 91 kept, all 90 rows (reference sheet §1.3). */
    uint8_t mask[90 * 91];
    WX_CHECK(wx_fcn_mode_mask(mask, 90, 180, 1.0, 0) == 90 * 46, "paper grid keeps 90 x 46 modes");
    WX_CHECK(mask[89 * 91 + 45] == 1 && mask[0 * 91 + 46] == 0, "paper grid: kx 45 in, kx 46 out");
    wx_fixture_free(f);
}

static void test_paper_table(void) {
    wx_yaml *y = NULL;
    const char *path = WX_FIXTURE_DIR "/../../../configs/model/fourcastnet_paper.yaml";
    wx_status s = wx_yaml_load_file(path, &y);
    if (!WX_CHECK(s == WX_OK, "load %s: %s", path, wx_error_message())) return;
    wx_fcn_config c;
    s = wx_fcn_config_parse(y, "", &c);
    WX_CHECK(s == WX_OK, "parse paper config: %s", wx_error_message());
    wx_params p;
    wx_params_init(&p);
    wx_fcn_param_table(&p, &c); /* table only: nothing allocated */
    WX_CHECK(p.data == NULL, "table built without allocating");
    /* 74,691,840: FourCastNet's published parameter count (reference sheet §1.6). */
    WX_CHECK(wx_params_total(&p) == 74691840, "paper parameter table totals %lld, want 74,691,840",
             (long long)wx_params_total(&p));
    WX_CHECK(p.count == 3 + 12 * 12 + 2 + 1, "paper tensor count %d", p.count);
    int i = wx_params_find(&p, "module.blocks.11.filter.w1");
    WX_CHECK(i >= 0 && p.t[i].ndim == 4 && p.t[i].dims[0] == 2 && p.t[i].dims[1] == 8 &&
             p.t[i].dims[2] == 96 && p.t[i].dims[3] == 96, "blocks.11.filter.w1 (2, 8, 96, 96)");
    i = wx_params_find(&p, "pos_embed");
    WX_CHECK(i == 0 && p.t[i].dims[1] == 16200 && p.t[i].dims[2] == 768, "pos_embed (1,16200,768)");
    i = wx_params_find(&p, "head.weight");
    WX_CHECK(i == p.count - 1 && p.t[i].dims[0] == 1280 && p.t[i].dims[1] == 768,
             "head.weight (1280, 768), last");
    WX_CHECK(wx_params_find(&p, "head.bias") < 0, "no head bias");
    WX_CHECK(wx_params_find(&p, "norm.weight") >= 0 && wx_params_find(&p, "norm.bias") >= 0,
             "unused norm present");
    int64_t tape, scratch;
    wx_fcn_arena_bytes(&c, &tape, &scratch);
    printf("paper config: %lld parameters; activations per sample: %.2f GiB per recorded forward "
           "+ %.2f GiB scratch\n", (long long)wx_params_total(&p), tape / 1073741824.0,
           scratch / 1073741824.0);
    wx_params_free(&p);
    c.count_unused_norm = 0;
    wx_params_init(&p);
    wx_fcn_param_table(&p, &c);
    WX_CHECK(wx_params_total(&p) == 74691840 - 1536, "without the unused norm: %lld",
             (long long)wx_params_total(&p));
    wx_params_free(&p);
    wx_yaml_free(y);
}

static void moments(const float *x, int64_t n, double *mean, double *sd, double *amax) {
    double s = 0, s2 = 0, a = 0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i], s2 += (double)x[i] * x[i];
        if (fabs(x[i]) > a) a = fabs(x[i]);
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
    *amax = a;
}

static void test_init(wx_ctx *ctx) {
    wx_fcn_config c = {.img_h = 32, .img_w = 64, .patch = 4, .in_channels = 4, .out_channels = 4,
                       .embed_dim = 64, .depth = 2, .num_blocks = 4, .hidden_size_factor = 1,
                       .mlp_ratio = 4.0, .sparsity_threshold = 0.01,
                       .hard_thresholding_fraction = 1.0, .count_unused_norm = 1};
    wx_fcn *m = wx_fcn_create(ctx, wx_backend_cpu(), &c, 7, 1, 1);
    wx_fcn *m2 = wx_fcn_create(ctx, wx_backend_cpu(), &c, 7, 1, 0);
    wx_fcn *m3 = wx_fcn_create(ctx, wx_backend_cpu(), &c, 8, 1, 0);
    if (!WX_CHECK(m && m2 && m3, "create: %s", wx_error_message())) return;
    const wx_params *p = &m->params;
    WX_CHECK(memcmp(p->data, m2->params.data, sizeof(float) * (size_t)p->len) == 0,
             "same seed, same parameters");
    WX_CHECK(memcmp(p->data, m3->params.data, sizeof(float) * (size_t)p->len) != 0,
             "another seed, other parameters");
    for (int i = 0; i < p->count; i++) {
        const wx_param_info *t = &p->t[i];
        const float *x = wx_params_tensor(p, i);
        double mean, sd, amax;
        moments(x, t->size, &mean, &sd, &amax);
        const char *nm = t->name;
        size_t L = strlen(nm);
        int is_bias = L > 5 && strcmp(nm + L - 5, ".bias") == 0;
        if (strstr(nm, "norm") && !is_bias) {
            WX_CHECK(mean == 1.0 && sd == 0.0, "%s: LayerNorm weight all 1", nm);
        } else if (strstr(nm, "filter.")) {
            /* 0.02·randn: sd within 4 standard errors (n ≥ 256). */
            double se = 0.02 / sqrt(2.0 * (double)t->size);
            WX_CHECK(fabs(sd - 0.02) < 4 * se + 1e-4 && fabs(mean) < 4 * 0.02 / sqrt(t->size),
                     "%s: mean %.4g sd %.4g, want 0, 0.02", nm, mean, sd);
        } else if (strstr(nm, "patch_embed")) {
            double bound = 1.0 / sqrt(4.0 * 16.0);
            WX_CHECK(amax <= bound && amax > 0.5 * bound, "%s: |x| <= %.4f (max %.4f)", nm, bound,
                     amax);
            if (!is_bias)
                WX_CHECK(fabs(sd - bound / sqrt(3.0)) < 0.1 * bound / sqrt(3.0),
                         "%s: uniform sd %.4g, want %.4g", nm, sd, bound / sqrt(3.0));
        } else if (is_bias) {
            WX_CHECK(amax == 0.0, "%s: zero", nm);
        } else { /* pos_embed, fc1/fc2, head: trunc normal std 0.02 */
            double se = 0.02 / sqrt(2.0 * (double)t->size);
            WX_CHECK(fabs(sd - 0.02) < 4 * se + 1e-4 && amax < 0.15,
                     "%s: sd %.4g (want 0.02), max %.3g", nm, sd, amax);
        }
    }
    /* pos 128·64 + patch 64·4·16+64 + 2 blocks × (norms 256 + filter 4352 + mlp 33088)
     * + norm 128 + head 64·64; and the config module's independent formula. */
    wx_fcn_param_counts pc;
    wx_fcn_param_count(&m->d, &pc);
    WX_CHECK(wx_fcn_param_total(m) == 91968 && pc.total == 91968, "tiny count %lld (config "
             "formula %lld), want 91968", (long long)wx_fcn_param_total(m), (long long)pc.total);
    /* Models without tapes still predict; backward has nothing to pop. */
    float *x = calloc((size_t)(4 * 32 * 64), sizeof(float)), *y = calloc((size_t)(4 * 32 * 64), 4);
    WX_CHECK(wx_fcn_predict(m2, y, x, 1) == WX_OK, "predict with 0 tapes: %s", wx_error_message());
    WX_CHECK(wx_fcn_forward(m2, y, x, 1) == WX_ERR_USAGE, "forward with 0 tapes refused");
    WX_CHECK(wx_fcn_predict(m2, y, x, 2) == WX_ERR_USAGE, "batch above max refused");
    WX_CHECK(wx_fcn_backward(m, NULL, y) == WX_ERR_USAGE, "backward before forward refused");
    free(x), free(y);
    wx_fcn_destroy(m), wx_fcn_destroy(m2), wx_fcn_destroy(m3);

    c.hard_thresholding_fraction = 0.1; /* int(5 · 0.1) = 0 modes */
    wx_error_clear();
    WX_CHECK(wx_fcn_create(ctx, wx_backend_cpu(), &c, 7, 1, 1) == NULL &&
                 strstr(wx_error_message(), "hard_thresholding_fraction"),
             "no kept mode rejected naming the key: '%s'", wx_error_message());
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(2);
    test_masks();
    test_paper_table();
    test_init(ctx);
    test_one_step(ctx, "fcn_tiny");
    test_one_step(ctx, "fcn_variant");
    test_finetune(ctx);
    printf("max errors seen: forward %.2e, gradients %.2e (relative to max |reference|)\n",
           max_rel_seen_fwd, max_rel_seen_grad);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
