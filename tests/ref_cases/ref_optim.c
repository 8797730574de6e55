/* Reference cases for the optimizer ops against tests/ref/ref_optim.py (torch float64):
 * ten steps of torch.optim.AdamW, torch.linalg.vector_norm², torch.mul. AdamW float32 within 1e-6
 * of the tensor's max |value| (after every step), float64 within 1e-12. */
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "ref_cases.h"
#include "wx_fixture.h"
#include "wx_test.h"

static void run_adamw(void) {
    wx_fixture *f = wx_fixture_load("optim_adamw");
    if (!WX_CHECK(f, "optim_adamw fixture loads")) return;
    const wx_fixture_tensor *p0 = wx_fixture_get(f, "p0"), *grads = wx_fixture_get(f, "grads");
    const double *params_ref = wx_fixture_get(f, "params")->data;
    const double *m_ref = wx_fixture_get(f, "m")->data, *v_ref = wx_fixture_get(f, "v")->data;
    int64_t n = p0->size, steps = grads->dims[0];
    double lr = wx_fixture_scalar(f, "lr"), b1 = wx_fixture_scalar(f, "beta1");
    double b2 = wx_fixture_scalar(f, "beta2"), eps = wx_fixture_scalar(f, "eps");
    double wd = wx_fixture_scalar(f, "weight_decay");
    wx_ctx *ctx = wx_ctx_create(2);

    float *p32 = wx_fixture_f32(f, "p0"), *g32 = wx_fixture_f32(f, "grads");
    float *m32 = calloc(n, sizeof(float)), *v32 = calloc(n, sizeof(float));
    double *p64 = malloc(sizeof(double) * n);
    double *m64 = calloc(n, sizeof(double)), *v64 = calloc(n, sizeof(double));
    memcpy(p64, p0->data, sizeof(double) * n);
    int ok32 = 1, ok64 = 1;
    for (int64_t s = 0; s < steps; s++) {
        ok32 &= wx_cpu_adamw_forward(ctx, p32, m32, v32, g32 + s * n, n, lr, b1, b2, eps, wd,
                                     s + 1) == WX_OK;
        ok64 &= wx_cpu_adamw_forward_f64(ctx, p64, m64, v64, grads->data + s * n, n, lr, b1, b2,
                                         eps, wd, s + 1) == WX_OK;
        char what[64];
        snprintf(what, sizeof what, "adamw param f32 after step %lld", (long long)(s + 1));
        WX_CHECK_CLOSE_F32(what, p32, params_ref + s * n, n, 1e-6, 0);
        snprintf(what, sizeof what, "adamw param f64 after step %lld", (long long)(s + 1));
        WX_CHECK_CLOSE_F64(what, p64, params_ref + s * n, n, 1e-12, 0);
    }
    WX_CHECK(ok32 && ok64, "adamw steps return WX_OK");
    WX_CHECK_CLOSE_F32("adamw m f32", m32, m_ref, n, 1e-6, 0);
    WX_CHECK_CLOSE_F32("adamw v f32", v32, v_ref, n, 1e-6, 0);
    WX_CHECK_CLOSE_F64("adamw m f64", m64, m_ref, n, 1e-12, 0);
    WX_CHECK_CLOSE_F64("adamw v f64", v64, v_ref, n, 1e-12, 0);

    free(p32), free(g32), free(m32), free(v32), free(p64), free(m64), free(v64);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

static void run_grad_norm(void) {
    wx_fixture *f = wx_fixture_load("optim_grad_norm");
    if (!WX_CHECK(f, "optim_grad_norm fixture loads")) return;
    const wx_fixture_tensor *g = wx_fixture_get(f, "g");
    double ref = wx_fixture_scalar(f, "sumsq");
    float *g32 = wx_fixture_f32(f, "g");
    wx_ctx *ctx = wx_ctx_create(2);
    /* The op accumulates (+=): start from a prior value from other tensors. */
    double prior = 1.5, want = prior + ref;
    double s32 = prior, s64 = prior;
    WX_CHECK(wx_cpu_grad_norm_forward(ctx, &s32, g32, g->size) == WX_OK, "grad_norm f32");
    WX_CHECK(wx_cpu_grad_norm_forward_f64(ctx, &s64, g->data, g->size) == WX_OK, "grad_norm f64");
    /* float32 inputs are the fixture rounded to float: ~1e-7 relative per element. */
    WX_CHECK_CLOSE_F64("grad_norm sumsq f32 (+= prior)", &s32, &want, 1, 1e-6, 0);
    WX_CHECK_CLOSE_F64("grad_norm sumsq f64 (+= prior)", &s64, &want, 1, 1e-12, 0);
    free(g32);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

static void run_scale(void) {
    wx_fixture *f = wx_fixture_load("optim_scale");
    if (!WX_CHECK(f, "optim_scale fixture loads")) return;
    const wx_fixture_tensor *x = wx_fixture_get(f, "x");
    const double *y_ref = wx_fixture_get(f, "y")->data;
    double s = wx_fixture_scalar(f, "s");
    float *x32 = wx_fixture_f32(f, "x");
    double *x64 = malloc(sizeof(double) * x->size);
    memcpy(x64, x->data, sizeof(double) * x->size);
    wx_ctx *ctx = wx_ctx_create(2);
    WX_CHECK(wx_cpu_scale_forward(ctx, x32, x->size, s) == WX_OK, "scale f32");
    WX_CHECK(wx_cpu_scale_forward_f64(ctx, x64, x->size, s) == WX_OK, "scale f64");
    WX_CHECK_CLOSE_F32("scale f32", x32, y_ref, x->size, 1e-6, 0);
    WX_CHECK_CLOSE_F64("scale f64", x64, y_ref, x->size, 1e-15, 0);
    free(x32), free(x64);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

static const wx_ref_case adamw_case = {"adamw", run_adamw};
static const wx_ref_case grad_norm_case = {"grad_norm", run_grad_norm};
static const wx_ref_case scale_case = {"scale", run_scale};
const wx_ref_case *const wx_ref_cases_optim[] = {&adamw_case, &grad_norm_case, &scale_case, NULL};
