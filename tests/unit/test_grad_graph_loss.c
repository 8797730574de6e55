/* Graph and loss ops: receiver CSR builder, finite-difference gradient checks in double, the
 * overwrite rule for activation gradients, bit-identical results for 1, 2 and 3 threads, and
 * errors on bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "backend/wx_backend.h"
#include "ops/graph_csr.h"
#include "wx_test.h"

/* Random indices in [0, n) from a fixed seed, node `hub` taking every third slot and node `empty`
 * never used (the cases the graph ops must get right: many edges, no edges). */
static void fill_indices(int32_t *idx, int64_t e, int64_t n, int32_t hub, int32_t empty,
                         uint64_t seed) {
    double *u = malloc(sizeof(double) * e);
    wx_test_fill_uniform(u, e, seed, 0, 1);
    for (int64_t i = 0; i < e; i++) {
        int32_t v = (int32_t)(u[i] * n);
        if (v >= n) v = (int32_t)n - 1;
        if (v == empty) v = (v + 1) % (int32_t)n;
        idx[i] = i % 3 == 0 ? hub : v;
    }
    free(u);
}

/* ---- CSR builder ---- */

static void test_csr_build(void) {
    enum { E = 30, N = 7 };
    int32_t recv[E], row_ptr[N + 1], perm[E];
    fill_indices(recv, E, N, 5, 2, 11);
    WX_CHECK(wx_graph_csr_build(recv, E, N, row_ptr, perm) == WX_OK, "csr build ok");
    /* Expected order by a direct scan: for each receiver, its edges in increasing e. */
    int32_t want[E];
    int k = 0, ok = 1;
    for (int r = 0; r < N; r++) {
        ok &= row_ptr[r] == k;
        for (int i = 0; i < E; i++)
            if (recv[i] == r) want[k++] = i;
    }
    ok &= row_ptr[N] == E;
    WX_CHECK(ok, "csr row_ptr matches the per-receiver edge counts");
    WX_CHECK(!memcmp(want, perm, sizeof want), "csr perm is the stable order by receiver");
    WX_CHECK(row_ptr[3] == row_ptr[2], "node with no incoming edges has an empty row");
    WX_CHECK(row_ptr[6] - row_ptr[5] >= E / 3, "hub node holds its %d edges", row_ptr[6] - row_ptr[5]);

    recv[4] = N;
    WX_CHECK(wx_graph_csr_build(recv, E, N, row_ptr, perm) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "index[4]"),
             "receiver out of range is an error naming the edge: %s", wx_error_message());
    recv[4] = -1;
    WX_CHECK(wx_graph_csr_build(recv, E, N, row_ptr, perm) == WX_ERR_RUN, "negative receiver");
    WX_CHECK(wx_graph_csr_build(recv, 0, N, row_ptr, perm) == WX_OK && row_ptr[N] == 0,
             "no edges: all rows empty");
}

/* ---- finite differences (double) ---- */

typedef struct {
    wx_ctx *ctx;
    const int32_t *idx, *row_ptr, *perm;
    const double *r, *target, *wlat, *wch;
    int64_t n, e, d, b, c, h, w;
} fd_case;

static double gather_loss(void *ud, const double *x) {
    fd_case *k = ud;
    double *y = malloc(sizeof(double) * k->e * k->d), s = 0;
    WX_ASSERT(wx_cpu_gather_rows_forward_f64(k->ctx, y, x, k->idx, k->e, k->d) == WX_OK);
    for (int64_t i = 0; i < k->e * k->d; i++) s += y[i] * k->r[i];
    free(y);
    return s;
}

static double segsum_loss(void *ud, const double *x) {
    fd_case *k = ud;
    double *y = malloc(sizeof(double) * k->n * k->d), s = 0;
    WX_ASSERT(wx_cpu_segment_sum_forward_f64(k->ctx, y, x, k->row_ptr, k->perm, k->n, k->e, k->d) ==
              WX_OK);
    for (int64_t i = 0; i < k->n * k->d; i++) s += y[i] * k->r[i];
    free(y);
    return s;
}

static double mse_loss(void *ud, const double *x) {
    fd_case *k = ud;
    double l;
    WX_ASSERT(wx_cpu_mse_latw_forward_f64(k->ctx, &l, x, k->target, k->wlat, k->wch, k->b, k->c,
                                          k->h, k->w) == WX_OK);
    return l;
}

static double rel_l2_loss(void *ud, const double *x) {
    fd_case *k = ud;
    double l;
    WX_ASSERT(wx_cpu_rel_l2_forward_f64(k->ctx, &l, x, k->target, k->b, k->c * k->h * k->w) ==
              WX_OK);
    return l;
}

/* Overwrite rule: a backward into a buffer full of garbage, twice, gives the clean result. */
static void check_overwrite(const char *what, const double *clean, double *buf, int64_t n) {
    WX_CHECK(!memcmp(clean, buf, sizeof(double) * n), "%s: backward overwrites its output", what);
}

static void test_fd_graph(wx_ctx *ctx) {
    enum { N = 9, E = 25, D = 4 };
    int32_t idx[E], row_ptr[N + 1], perm[E];
    fill_indices(idx, E, N, 6, 1, 21);
    WX_ASSERT(wx_graph_csr_build(idx, E, N, row_ptr, perm) == WX_OK);
    double x_node[N * D], x_edge[E * D], r_edge[E * D], r_node[N * D];
    double g_node[N * D], g_edge[E * D], again[E * D];
    wx_test_fill_uniform(x_node, N * D, 1, -1, 1);
    wx_test_fill_uniform(x_edge, E * D, 2, -1, 1);
    wx_test_fill_uniform(r_edge, E * D, 3, -1, 1);
    wx_test_fill_uniform(r_node, N * D, 4, -1, 1);

    /* gather_rows: L(x) = Σ r ⊙ x[idx]; spots at the hub node and the node without edges. */
    fd_case k = {.ctx = ctx, .idx = idx, .r = r_edge, .n = N, .e = E, .d = D};
    WX_CHECK(wx_cpu_gather_rows_backward_f64(ctx, g_node, r_edge, idx, E, N, D) == WX_OK, "gather bwd");
    int64_t spots_g[] = {6 * D + 0, 6 * D + 3, 1 * D + 2, 0};
    WX_CHECK_FD("gather_rows dx", gather_loss, &k, x_node, g_node, N * D, 3, spots_g, 4, 1e-3, 1e-9);
    WX_CHECK(g_node[1 * D] == 0 && g_node[1 * D + 3] == 0, "gather: node without edges gets 0");
    for (int i = 0; i < N * D; i++) again[i] = 1e30;
    WX_CHECK(wx_cpu_gather_rows_backward_f64(ctx, again, r_edge, idx, E, N, D) == WX_OK &&
                 wx_cpu_gather_rows_backward_f64(ctx, again, r_edge, idx, E, N, D) == WX_OK,
             "gather bwd twice");
    check_overwrite("gather_rows", g_node, again, N * D);

    /* segment_sum: L(x) = Σ r ⊙ segsum(x). */
    k.r = r_node;
    k.row_ptr = row_ptr;
    k.perm = perm;
    WX_CHECK(wx_cpu_segment_sum_backward_f64(ctx, g_edge, r_node, row_ptr, perm, N, E, D) == WX_OK,
             "segsum bwd");
    int64_t spots_s[] = {0, 3 * D + 1, (E - 1) * D + 3};
    WX_CHECK_FD("segment_sum dx", segsum_loss, &k, x_edge, g_edge, E * D, 3, spots_s, 3, 1e-3, 1e-9);
    for (int i = 0; i < E * D; i++) again[i] = 1e30;
    WX_CHECK(wx_cpu_segment_sum_backward_f64(ctx, again, r_node, row_ptr, perm, N, E, D) == WX_OK &&
                 wx_cpu_segment_sum_backward_f64(ctx, again, r_node, row_ptr, perm, N, E, D) == WX_OK,
             "segsum bwd twice");
    check_overwrite("segment_sum", g_edge, again, E * D);
}

static void test_fd_loss(wx_ctx *ctx) {
    enum { B = 2, C = 3, H = 5, W = 4, T = B * C * H * W };
    double pred[T], target[T], wlat[H], wch[C], g[T], again[T];
    wx_test_fill_uniform(pred, T, 31, -2, 2);
    wx_test_fill_uniform(target, T, 32, -2, 2);
    for (int h = 0; h < H; h++) wlat[h] = cos((-80.0 + 40.0 * h) * M_PI / 180);
    wx_test_fill_uniform(wch, C, 33, 0.5, 1.5);
    fd_case k = {.ctx = ctx, .target = target, .wlat = wlat, .wch = wch, .b = B, .c = C, .h = H, .w = W};

    /* Spots at the two pole rows (h = 0 and h = H−1), where latitude weights are smallest. */
    int64_t spots[] = {0, (H - 1) * W + 2, ((1 * C + 2) * H + 0) * W + 3, T - 1};
    for (int with_wch = 1; with_wch >= 0; with_wch--) {
        k.wch = with_wch ? wch : NULL;
        WX_CHECK(wx_cpu_mse_latw_backward_f64(ctx, g, 1.0, pred, target, wlat, k.wch, B, C, H, W) ==
                 WX_OK, "mse bwd");
        WX_CHECK_FD(with_wch ? "mse_latw dpred" : "mse_latw dpred (no wch)", mse_loss, &k, pred, g,
                    T, 3, spots, 4, 1e-4, 1e-8);
    }
    for (int i = 0; i < T; i++) again[i] = -7;
    WX_CHECK(wx_cpu_mse_latw_backward_f64(ctx, again, 1.0, pred, target, wlat, NULL, B, C, H, W) ==
                 WX_OK && wx_cpu_mse_latw_backward_f64(ctx, again, 1.0, pred, target, wlat, NULL, B,
                                                        C, H, W) == WX_OK, "mse bwd twice");
    check_overwrite("mse_latw", g, again, T);

    WX_CHECK(wx_cpu_rel_l2_backward_f64(ctx, g, 1.0, pred, target, B, C * H * W) == WX_OK, "rel_l2 bwd");
    WX_CHECK_FD("rel_l2 dpred", rel_l2_loss, &k, pred, g, T, 3, spots, 4, 1e-5, 1e-7);
    for (int i = 0; i < T; i++) again[i] = 99;
    WX_CHECK(wx_cpu_rel_l2_backward_f64(ctx, again, 1.0, pred, target, B, C * H * W) == WX_OK &&
                 wx_cpu_rel_l2_backward_f64(ctx, again, 1.0, pred, target, B, C * H * W) == WX_OK,
             "rel_l2 bwd twice");
    check_overwrite("rel_l2", g, again, T);
}

/* ---- determinism across thread counts (float32, the product) ---- */

typedef struct {
    float *gather_dx, *segsum_y, loss_mse, loss_rel;
} det_out;

static void run_threads(int threads, const float *x_edge, const float *dy,
                        const int32_t *idx, const int32_t *row_ptr, const int32_t *perm,
                        const float *wlat, int64_t n, int64_t e, int64_t d, det_out *o) {
    omp_set_num_threads(threads);
    wx_ctx *ctx = wx_ctx_create(threads);
    o->gather_dx = malloc(sizeof(float) * n * d);
    o->segsum_y = malloc(sizeof(float) * n * d);
    WX_ASSERT(wx_cpu_gather_rows_backward(ctx, o->gather_dx, dy, idx, e, n, d) == WX_OK);
    WX_ASSERT(wx_cpu_segment_sum_forward(ctx, o->segsum_y, x_edge, row_ptr, perm, n, e, d) == WX_OK);
    /* Losses over the (E, D) buffers read as one (1, 1, E, D) field and as two samples. */
    WX_ASSERT(wx_cpu_mse_latw_forward(ctx, &o->loss_mse, x_edge, dy, wlat, NULL, 1, 1, e, d) == WX_OK);
    WX_ASSERT(wx_cpu_rel_l2_forward(ctx, &o->loss_rel, x_edge, dy, 2, e * d / 2) == WX_OK);
    wx_ctx_destroy(ctx);
}

static void test_determinism(void) {
    const int64_t n = 3000, e = 20000, d = 40;
    int32_t *idx = malloc(sizeof(int32_t) * e), *row_ptr = malloc(sizeof(int32_t) * (n + 1));
    int32_t *perm = malloc(sizeof(int32_t) * e);
    fill_indices(idx, e, n, 17, 5, 41);
    WX_ASSERT(wx_graph_csr_build(idx, e, n, row_ptr, perm) == WX_OK);
    double *tmp = malloc(sizeof(double) * e * d);
    float *x_edge = malloc(sizeof(float) * e * d), *dy = malloc(sizeof(float) * e * d);
    float *wlat = malloc(sizeof(float) * e);
    wx_test_fill_uniform(tmp, e * d, 51, -1, 1);
    wx_test_f64_to_f32(x_edge, tmp, e * d);
    wx_test_fill_uniform(tmp, e * d, 52, -1, 1);
    wx_test_f64_to_f32(dy, tmp, e * d);
    wx_test_fill_uniform(tmp, e, 53, 0.1, 1);
    wx_test_f64_to_f32(wlat, tmp, e);

    int saved = omp_get_max_threads();
    det_out o[3];
    for (int t = 0; t < 3; t++)
        run_threads(t + 1, x_edge, dy, idx, row_ptr, perm, wlat, n, e, d, &o[t]);
    omp_set_num_threads(saved);
    for (int t = 1; t < 3; t++) {
        WX_CHECK(!memcmp(o[0].gather_dx, o[t].gather_dx, sizeof(float) * n * d),
                 "gather_rows backward bit-identical with 1 and %d threads", t + 1);
        WX_CHECK(!memcmp(o[0].segsum_y, o[t].segsum_y, sizeof(float) * n * d),
                 "segment_sum forward bit-identical with 1 and %d threads", t + 1);
        WX_CHECK(o[0].loss_mse == o[t].loss_mse && o[0].loss_rel == o[t].loss_rel,
                 "losses bit-identical with 1 and %d threads", t + 1);
    }

    /* The big case is also right: hub node 17 and node 5 (no edges) against a double sum. */
    double hub_g[40] = {0}, hub_s[40] = {0}, got_max = 0, err = 0;
    for (int64_t i = 0; i < e; i++)
        if (idx[i] == 17)
            for (int64_t c = 0; c < d; c++) hub_g[c] += dy[i * d + c], hub_s[c] += x_edge[i * d + c];
    for (int64_t c = 0; c < d; c++) {
        err = fmax(err, fabs(o[0].gather_dx[17 * d + c] - hub_g[c]));
        err = fmax(err, fabs(o[0].segsum_y[17 * d + c] - hub_s[c]));
        got_max = fmax(got_max, fabs(o[0].gather_dx[5 * d + c]) + fabs(o[0].segsum_y[5 * d + c]));
    }
    WX_CHECK(err < 1e-3, "gather backward and segment sum at the hub (%lld edges) match double sums: %.2e",
             (long long)(row_ptr[18] - row_ptr[17]), err);
    WX_CHECK(got_max == 0, "node without edges is zero in gather backward and segment sum");

    for (int t = 0; t < 3; t++) free(o[t].gather_dx), free(o[t].segsum_y);
    free(idx), free(row_ptr), free(perm), free(tmp), free(x_edge), free(dy), free(wlat);
}

/* ---- bad input ---- */

static void test_errors(wx_ctx *ctx) {
    int32_t idx[3] = {0, 4, 1}, row_ptr[3] = {0, 2, 2}, perm[3] = {0, 1, 2};
    double x[12] = {0}, y[12], t0[4] = {0, 0, 0, 0}, p[4] = {1, 2, 3, 4}, l;
    WX_CHECK(wx_cpu_gather_rows_backward_f64(ctx, y, x, idx, 3, 3, 2) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "index[1] = 4"),
             "gather backward: index out of range named: %s", wx_error_message());
    idx[1] = -2;
    WX_CHECK(wx_cpu_gather_rows_forward_f64(ctx, y, x, idx, 3, 2) == WX_ERR_RUN, "negative index");
    WX_CHECK(wx_cpu_segment_sum_forward_f64(ctx, y, x, row_ptr, perm, 2, 3, 2) == WX_ERR_RUN,
             "segment sum: row_ptr not ending at E: %s", wx_error_message());
    WX_CHECK(wx_cpu_rel_l2_forward_f64(ctx, &l, p, t0, 2, 2) == WX_ERR_RUN &&
                 strstr(wx_error_message(), "target sample 0"),
             "rel_l2: zero-norm target is an error: %s", wx_error_message());
    WX_CHECK(wx_cpu_mse_latw_forward_f64(ctx, &l, p, t0, NULL, NULL, 1, 1, 2, 2) == WX_ERR_USAGE,
             "mse_latw without latitude weights");
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(2);
    test_csr_build();
    test_fd_graph(ctx);
    test_fd_loss(ctx);
    test_determinism();
    test_errors(ctx);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
