/* Reference cases for the graph ops against tests/ref/ref_graph.py (torch index_select and
 * index_add_ in float64, autograd). float32 within 1e-5 of the tensor's max |value|, float64 within
 * 1e-12. The fixture graphs hold a node with no edges and a node with many. */
#include <stdlib.h>

#include "backend/wx_backend.h"
#include "ops/graph_csr.h"
#include "ref_cases.h"
#include "wx_fixture.h"
#include "wx_test.h"

static void run_gather_rows(void) {
    wx_fixture *f = wx_fixture_load("graph_gather_rows");
    if (!WX_CHECK(f, "graph_gather_rows fixture loads")) return;
    const wx_fixture_tensor *x = wx_fixture_get(f, "x");
    int64_t n = x->dims[0], d = x->dims[1], e = wx_fixture_get(f, "idx")->size;
    int32_t *idx = wx_fixture_i32(f, "idx");
    const double *y_ref = wx_fixture_get(f, "y")->data, *dx_ref = wx_fixture_get(f, "dx")->data;
    const double *dy64 = wx_fixture_get(f, "dy")->data;
    wx_ctx *ctx = wx_ctx_create(2);

    float *x32 = wx_fixture_f32(f, "x"), *dy32 = wx_fixture_f32(f, "dy");
    float *y32 = malloc(sizeof(float) * e * d), *dx32 = malloc(sizeof(float) * n * d);
    WX_CHECK(wx_cpu_gather_rows_forward(ctx, y32, x32, idx, e, d) == WX_OK, "gather_rows f32 fwd");
    WX_CHECK_CLOSE_F32("gather_rows y f32", y32, y_ref, e * d, 1e-5, 0);
    WX_CHECK(wx_cpu_gather_rows_backward(ctx, dx32, dy32, idx, e, n, d) == WX_OK, "gather_rows f32 bwd");
    WX_CHECK_CLOSE_F32("gather_rows dx f32", dx32, dx_ref, n * d, 1e-5, 0);

    double *y64 = malloc(sizeof(double) * e * d), *dx64 = malloc(sizeof(double) * n * d);
    WX_CHECK(wx_cpu_gather_rows_forward_f64(ctx, y64, x->data, idx, e, d) == WX_OK, "gather f64 fwd");
    WX_CHECK_CLOSE_F64("gather_rows y f64", y64, y_ref, e * d, 1e-12, 0);
    WX_CHECK(wx_cpu_gather_rows_backward_f64(ctx, dx64, dy64, idx, e, n, d) == WX_OK, "gather f64 bwd");
    WX_CHECK_CLOSE_F64("gather_rows dx f64", dx64, dx_ref, n * d, 1e-12, 0);

    free(x32), free(dy32), free(y32), free(dx32), free(y64), free(dx64), free(idx);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

static void run_segment_sum(void) {
    wx_fixture *f = wx_fixture_load("graph_segment_sum");
    if (!WX_CHECK(f, "graph_segment_sum fixture loads")) return;
    const wx_fixture_tensor *x = wx_fixture_get(f, "x");
    int64_t e = x->dims[0], d = x->dims[1], n = wx_fixture_get(f, "y")->dims[0];
    int32_t *recv = wx_fixture_i32(f, "receivers");
    int32_t *row_ptr = malloc(sizeof(int32_t) * (n + 1)), *perm = malloc(sizeof(int32_t) * e);
    WX_CHECK(wx_graph_csr_build(recv, e, n, row_ptr, perm) == WX_OK, "segment_sum CSR build");
    const double *y_ref = wx_fixture_get(f, "y")->data, *dx_ref = wx_fixture_get(f, "dx")->data;
    const double *dy64 = wx_fixture_get(f, "dy")->data;
    wx_ctx *ctx = wx_ctx_create(2);

    float *x32 = wx_fixture_f32(f, "x"), *dy32 = wx_fixture_f32(f, "dy");
    float *y32 = malloc(sizeof(float) * n * d), *dx32 = malloc(sizeof(float) * e * d);
    WX_CHECK(wx_cpu_segment_sum_forward(ctx, y32, x32, row_ptr, perm, n, e, d) == WX_OK, "segsum fwd");
    WX_CHECK_CLOSE_F32("segment_sum y f32", y32, y_ref, n * d, 1e-5, 0);
    WX_CHECK(wx_cpu_segment_sum_backward(ctx, dx32, dy32, row_ptr, perm, n, e, d) == WX_OK, "segsum bwd");
    WX_CHECK_CLOSE_F32("segment_sum dx f32", dx32, dx_ref, e * d, 1e-5, 0);

    double *y64 = malloc(sizeof(double) * n * d), *dx64 = malloc(sizeof(double) * e * d);
    WX_CHECK(wx_cpu_segment_sum_forward_f64(ctx, y64, x->data, row_ptr, perm, n, e, d) == WX_OK,
             "segsum f64 fwd");
    WX_CHECK_CLOSE_F64("segment_sum y f64", y64, y_ref, n * d, 1e-12, 0);
    WX_CHECK(wx_cpu_segment_sum_backward_f64(ctx, dx64, dy64, row_ptr, perm, n, e, d) == WX_OK,
             "segsum f64 bwd");
    WX_CHECK_CLOSE_F64("segment_sum dx f64", dx64, dx_ref, e * d, 1e-12, 0);

    free(x32), free(dy32), free(y32), free(dx32), free(y64), free(dx64);
    free(recv), free(row_ptr), free(perm);
    wx_ctx_destroy(ctx);
    wx_fixture_free(f);
}

static const wx_ref_case gather_rows_case = {"gather_rows", run_gather_rows};
static const wx_ref_case segment_sum_case = {"segment_sum", run_segment_sum};
const wx_ref_case *const wx_ref_cases_graph[] = {&gather_rows_case, &segment_sum_case, NULL};
