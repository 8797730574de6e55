/* Optimizer helpers: global-norm clipping against torch.nn.utils.clip_grad_norm_, the warmup +
 * cosine schedule against values computed in tests/ref/ref_optim.py, the gradient sum of squares
 * over many chunks (thread-count independent), and argument errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "backend/wx_backend.h"
#include "wx_fixture.h"
#include "wx_test.h"

static void test_clip(wx_ctx *ctx) {
    wx_fixture *f = wx_fixture_load("optim_clip_grad_norm");
    if (!WX_CHECK(f, "optim_clip_grad_norm fixture loads")) return;
    const char *cases[] = {"clip", "noclip"};
    for (int k = 0; k < 2; k++) {
        float *g[3];
        int64_t lens[3];
        char name[64];
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof name, "g%d", i);
            g[i] = wx_fixture_f32(f, name);
            lens[i] = wx_fixture_get(f, name)->size;
        }
        snprintf(name, sizeof name, "%s_max_norm", cases[k]);
        double max_norm = wx_fixture_scalar(f, name);
        snprintf(name, sizeof name, "%s_norm", cases[k]);
        double norm_ref = wx_fixture_scalar(f, name);
        double norm = wx_clip_grad_norm(ctx, g, lens, 3, max_norm);
        WX_CHECK(fabs(norm - norm_ref) <= 1e-6 * norm_ref,
                 "clip_grad_norm (%s): returned norm %.9g, torch %.9g", cases[k], norm, norm_ref);
        WX_CHECK(k == 0 ? norm_ref > max_norm : norm_ref < max_norm,
                 "fixture case %s is on the intended side of max_norm", cases[k]);
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof name, "%s_g%d", cases[k], i);
            char what[64];
            snprintf(what, sizeof what, "clip_grad_norm (%s) g%d", cases[k], i);
            WX_CHECK_CLOSE_F32(what, g[i], wx_fixture_get(f, name)->data, lens[i], 1e-6, 0);
            free(g[i]);
        }
    }
    wx_fixture_free(f);
}

static void test_lr(void) {
    wx_fixture *f = wx_fixture_load("optim_lr_warmup_cosine");
    if (!WX_CHECK(f, "optim_lr_warmup_cosine fixture loads")) return;
    const wx_fixture_tensor *cfg = wx_fixture_get(f, "configs"), *steps = wx_fixture_get(f, "steps");
    const wx_fixture_tensor *lr = wx_fixture_get(f, "lr");
    int64_t ns = steps->size;
    double *got = malloc(sizeof(double) * ns);
    for (int64_t k = 0; k < cfg->dims[0]; k++) {
        const double *c = cfg->data + k * 4;
        for (int64_t s = 0; s < ns; s++)
            got[s] = wx_lr_warmup_cosine((int64_t)steps->data[s], (int64_t)c[0], (int64_t)c[1], c[2],
                                         c[3]);
        char what[96];
        snprintf(what, sizeof what, "lr warmup %g total %g lr_max %g lr_min %g", c[0], c[1], c[2],
                 c[3]);
        WX_CHECK_CLOSE_F64(what, got, lr->data + k * ns, ns, 1e-14, 0);
    }
    WX_CHECK(wx_lr_warmup_cosine(-3, 5, 30, 1e-3, 1e-5) == wx_lr_warmup_cosine(0, 5, 30, 1e-3, 1e-5),
             "negative step counts as step 0");
    free(got);
    wx_fixture_free(f);
}

/* Many chunks (so the partial-sum path is used): equal to a long double sum, and bit-identical
 * for 1, 2 and 3 threads. */
static void test_grad_norm_chunks(void) {
    const int64_t n = 100003;
    double *tmp = malloc(sizeof(double) * n);
    float *g = malloc(sizeof(float) * n);
    wx_test_fill_uniform(tmp, n, 77, -3, 3);
    wx_test_f64_to_f32(g, tmp, n);
    long double want = 0;
    for (int64_t i = 0; i < n; i++) want += (long double)g[i] * g[i];
    double s[3];
    int saved = omp_get_max_threads();
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(t + 1);
        wx_ctx *ctx = wx_ctx_create(t + 1);
        s[t] = 0;
        WX_CHECK(wx_cpu_grad_norm_forward(ctx, &s[t], g, n) == WX_OK, "grad_norm %d threads", t + 1);
        wx_ctx_destroy(ctx);
    }
    omp_set_num_threads(saved);
    WX_CHECK(fabs(s[0] - (double)want) <= 1e-12 * (double)want,
             "grad_norm over %lld elements: %.17g vs long double %.17g", (long long)n, s[0],
             (double)want);
    WX_CHECK(s[0] == s[1] && s[0] == s[2], "grad_norm bit-identical with 1, 2, 3 threads");
    free(tmp), free(g);
}

static void test_errors(wx_ctx *ctx) {
    float p[2] = {1, 2}, m[2] = {0}, v[2] = {0}, g[2] = {1, 1};
    WX_CHECK(wx_cpu_adamw_forward(ctx, p, m, v, g, 2, 1e-3, 0.9, 0.95, 1e-8, 0.1, 0) ==
                 WX_ERR_USAGE && strstr(wx_error_message(), "step = 0"),
             "adamw step 0 is an error: %s", wx_error_message());
    WX_CHECK(p[0] == 1 && m[0] == 0, "adamw leaves state untouched on error");
    WX_CHECK(wx_cpu_adamw_forward(ctx, p, m, v, g, 2, 1e-3, 1.0, 0.95, 1e-8, 0.1, 1) == WX_ERR_USAGE,
             "adamw beta1 = 1 is an error");
    double s = 2.5;
    WX_CHECK(wx_cpu_grad_norm_forward(ctx, &s, g, 0) == WX_OK && s == 2.5,
             "grad_norm of an empty buffer adds nothing");
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(2);
    test_clip(ctx);
    test_lr();
    test_grad_norm_chunks();
    test_errors(ctx);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
