/* Reference cases for the losses against tests/ref/ref_loss.py (torch float64 autograd):
 * mse_latw with and without channel weights, rel_l2 as NVlabs LpLoss(p=2). float32 within 1e-5 of
 * the tensor's max |value|, float64 within 1e-12. */
#include <stdlib.h>

#include "backend/wx_backend.h"
#include "ref_cases.h"
#include "wx_fixture.h"
#include "wx_test.h"

static void run_mse_latw(void) {
    wx_fixture *f = wx_fixture_load("loss_mse_latw");
    if (!WX_CHECK(f, "loss_mse_latw fixture loads")) return;
    const wx_fixture_tensor *pred = wx_fixture_get(f, "pred");
    int64_t b = pred->dims[0], c = pred->dims[1], h = pred->dims[2], w = pred->dims[3];
    int64_t total = b * c * h * w;
    const double *t64 = wx_fixture_get(f, "target")->data, *wlat64 = wx_fixture_get(f, "wlat")->data;
    const double *wch64 = wx_fixture_get(f, "wch")->data;
    double dloss = wx_fixture_scalar(f, "dloss");
    float *p32 = wx_fixture_f32(f, "pred"), *t32 = wx_fixture_f32(f, "target");
    float *wlat32 = wx_fixture_f32(f, "wlat"), *wch32 = wx_fixture_f32(f, "wch");
    float *dp32 = malloc(sizeof(float) * total);
    double *dp64 = malloc(sizeof(double) * total);
    wx_ctx *ctx = wx_ctx_create(2);

    /* Once with channel weights, once with wch = NULL (all ones). */
    for (int k = 0; k < 2; k++) {
        const char *sfx = k ? "_nowch" : "";
        char name[64];
        snprintf(name, sizeof name, "loss%s", sfx);
        double loss_ref = wx_fixture_scalar(f, name);
        snprintf(name, sizeof name, "dpred%s", sfx);
        const double *dp_ref = wx_fixture_get(f, name)->data;
        const float *wc32 = k ? NULL : wch32;
        const double *wc64 = k ? NULL : wch64;

        float l32 = 0;
        WX_CHECK(wx_cpu_mse_latw_forward(ctx, &l32, p32, t32, wlat32, wc32, b, c, h, w) == WX_OK,
                 "mse_latw f32 fwd%s", sfx);
        WX_CHECK_CLOSE_F32(k ? "mse_latw loss f32 (no wch)" : "mse_latw loss f32", &l32, &loss_ref,
                           1, 1e-5, 0);
        WX_CHECK(wx_cpu_mse_latw_backward(ctx, dp32, dloss, p32, t32, wlat32, wc32, b, c, h, w) ==
                 WX_OK, "mse_latw f32 bwd%s", sfx);
        WX_CHECK_CLOSE_F32(k ? "mse_latw dpred f32 (no wch)" : "mse_latw dpred f32", dp32, dp_ref,
                           total, 1e-5, 0);

        double l64 = 0;
        WX_CHECK(wx_cpu_mse_latw_forward_f64(ctx, &l64, pred->data, t64, wlat64, wc64, b, c, h, w) ==
                 WX_OK, "mse_latw f64 fwd%s", sfx);
        WX_CHECK_CLOSE_F64(k ? "mse_latw loss f64 (no wch)" : "mse_latw loss f64", &l64, &loss_ref,
                           1, 1e-12, 0);
        WX_CHECK(wx_cpu_mse_latw_backward_f64(ctx, dp64, dloss, pred->data, t64, wlat64, wc64, b, c,
                                              h, w) == WX_OK, "mse_latw f64 bwd%s", sfx);
        WX_CHECK_CLOSE_F64(k ? "mse_latw dpred f64 (no wch)" : "mse_latw dpred f64", dp64, dp_ref,
                           total, 1e-12, 0);
    }
    free(p32), free(t32), free(wlat32), free(wch32), free(dp32), free(dp64);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

static void run_rel_l2(void) {
    wx_fixture *f = wx_fixture_load("loss_rel_l2");
    if (!WX_CHECK(f, "loss_rel_l2 fixture loads")) return;
    const wx_fixture_tensor *pred = wx_fixture_get(f, "pred");
    int64_t b = pred->dims[0], n = pred->dims[1];
    const double *t64 = wx_fixture_get(f, "target")->data, *dp_ref = wx_fixture_get(f, "dpred")->data;
    double loss_ref = wx_fixture_scalar(f, "loss"), dloss = wx_fixture_scalar(f, "dloss");
    float *p32 = wx_fixture_f32(f, "pred"), *t32 = wx_fixture_f32(f, "target");
    float *dp32 = malloc(sizeof(float) * b * n);
    double *dp64 = malloc(sizeof(double) * b * n);
    wx_ctx *ctx = wx_ctx_create(2);

    float l32 = 0;
    WX_CHECK(wx_cpu_rel_l2_forward(ctx, &l32, p32, t32, b, n) == WX_OK, "rel_l2 f32 fwd");
    WX_CHECK_CLOSE_F32("rel_l2 loss f32", &l32, &loss_ref, 1, 1e-5, 0);
    WX_CHECK(wx_cpu_rel_l2_backward(ctx, dp32, dloss, p32, t32, b, n) == WX_OK, "rel_l2 f32 bwd");
    WX_CHECK_CLOSE_F32("rel_l2 dpred f32", dp32, dp_ref, b * n, 1e-5, 0);

    double l64 = 0;
    WX_CHECK(wx_cpu_rel_l2_forward_f64(ctx, &l64, pred->data, t64, b, n) == WX_OK, "rel_l2 f64 fwd");
    WX_CHECK_CLOSE_F64("rel_l2 loss f64", &l64, &loss_ref, 1, 1e-12, 0);
    WX_CHECK(wx_cpu_rel_l2_backward_f64(ctx, dp64, dloss, pred->data, t64, b, n) == WX_OK,
             "rel_l2 f64 bwd");
    WX_CHECK_CLOSE_F64("rel_l2 dpred f64", dp64, dp_ref, b * n, 1e-12, 0);

    free(p32), free(t32), free(dp32), free(dp64);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

static const wx_ref_case mse_latw_case = {"mse_latw", run_mse_latw};
static const wx_ref_case rel_l2_case = {"rel_l2", run_rel_l2};
const wx_ref_case *const wx_ref_cases_loss[] = {&mse_latw_case, &rel_l2_case, NULL};
