/* GraphCast models created for prediction only (max_tapes 0: rollouts and forecasts,
 * wx_train_model_load), which allocate no backward scratch and no gradients and, on the ops path,
 * run every MLP and every per-receiver sum in row chunks (graphcast_ops_pred.c):
 *   - ops path: predictions bitwise equal to a training model's predict (the unchunked path,
 *     1 thread; within 1e-5 where the BLAS's rows depend on the call's row count, see
 *     blas_rows_invariant) for chunk sizes from the smallest (WX_GC_CHUNK_ALIGN rows: the tiny model's m2g
 *     edges in 3 chunks at batch 2, the mid one's in 19) to unchunked, at batch 2 and at batch 1
 *     of a batch-2 model (the last chunk cut short), on two configurations (one with 2 hidden
 *     layers);
 *   - fused CPU path: predict-only bitwise equal to the training model's predict;
 *   - training refused (forward with recording, backward), every training buffer absent;
 *   - wx_gc_count_bytes (the dry count docs/graphcast.md quotes) equal to what the model holds,
 *     and on the device simulator (tests/support/wx_devsim.h: device memory unmapped between ops,
 *     every op argument a live allocation) equal to the bytes really allocated; the simulated
 *     prediction gives the CPU's bits with no violation and no leak;
 *   - GraphCast_small at 1° (counted only): predict-only under a fifth of a 1-tape training
 *     model. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/graphcast.h"
#include "models/graphcast_ops.h"
#include "wx_devsim.h"
#include "gc_tiny.h"
#include "wx_test.h"

static const char *const TINY = GC_TINY_YAML;

/* more rows per edge set (m2g 3,600 edges), wider latents, 2 hidden layers per MLP */
static const char *MID =
    "type: graphcast\nresolution: 7.5\nmesh_max_level: 2\nlatent_size: 48\ngnn_msg_steps: 3\n"
    "hidden_layers: 2\nsurface_variables: [2m_temperature]\n"
    "atmospheric_variables: [temperature]\npressure_levels: [500, 850]\n"
    "forcings: [toa_incident_solar_radiation]\nstatic_variables: [land_sea_mask]\n";

static int config(const char *text, wx_gc_config *c) {
    wx_yaml *root = NULL;
    int ok = WX_CHECK(wx_yaml_load_string(text, "test", &root) == WX_OK &&
                          wx_gc_config_parse(root, "", c) == WX_OK,
                      "config: %s", wx_error_message());
    wx_yaml_free(root);
    return ok;
}

static float *inputs(const wx_gc *m, int64_t b, uint64_t seed) {
    const int64_t n = b * m->cin * m->c.nlat * m->c.nlon;
    double *d = malloc(sizeof(double) * (size_t)n);
    float *x = malloc(sizeof(float) * (size_t)n);
    wx_test_fill_uniform(d, n, seed, -1.0, 1.0);
    wx_test_f64_to_f32(x, d, n);
    free(d);
    return x;
}

/* Whether this BLAS computes a row of C = A·Bᵀ bitwise the same whatever the call's row count,
 * for calls cut at multiples of WX_GC_CHUNK_ALIGN rows, on the shapes of the mid model's MLPs
 * (latent 48) and of its decoder's last layer (3 outputs). OpenBLAS's AVX2 kernels (Haswell, Zen)
 * do; its AVX-512 ones (SkylakeX, Cooperlake) do not: below a size threshold (M·N·K) a call goes
 * to the small-matrix kernels, which sum in another order, so a short chunk's rows differ in the
 * last bits from the same rows of a long call. */
static int blas_rows_invariant(void) {
    const int m = 2400, k = 48, ns[] = {3, 48};
    int same = 1;
    for (size_t q = 0; q < sizeof ns / sizeof *ns && same; q++) {
        const int n = ns[q];
        double *d = malloc(sizeof(double) * (size_t)(m * k + n * k));
        float *a = malloc(sizeof(float) * (size_t)(m * k + n * k)), *b = a + m * k;
        float *c1 = calloc((size_t)(m * n), sizeof(float)), *c2 = calloc((size_t)(m * n), sizeof(float));
        wx_test_fill_uniform(d, m * k + n * k, 5 + q, -1.0, 1.0);
        wx_test_f64_to_f32(a, d, m * k + n * k);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1, a, k, b, k, 0, c1, n);
        for (int lo = 0; lo < m; lo += WX_GC_CHUNK_ALIGN) {
            const int len = m - lo < WX_GC_CHUNK_ALIGN ? m - lo : WX_GC_CHUNK_ALIGN;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, n, k, 1, a + lo * k, k, b,
                        k, 0, c2 + lo * n, n);
        }
        same = !memcmp(c1, c2, sizeof(float) * (size_t)(m * n));
        free(d), free(a), free(c1), free(c2);
    }
    return same;
}

/* z equals y bitwise where the BLAS allows it, else within float rounding through the network. */
static int check_equal(const float *z, const float *y, int64_t n, int bitwise, const char *what,
                       long long rows) {
    if (bitwise) return WX_CHECK(!memcmp(z, y, sizeof(float) * (size_t)n), "%s (rows %lld) bitwise",
                                 what, rows);
    const double r = wx_test_rel_diff_f32(z, y, n);
    printf("  %s (rows %lld): %.2g of the scale\n", what, rows, r);
    return WX_CHECK(r <= 1e-5, "%s (rows %lld): within %.2g of the scale (bound 1e-5)", what, rows,
                    r);
}

/* No backward scratch, no gradients, no ops-path training arrays; training calls refused. */
static void check_no_training(wx_gc *m, const float *x, float *y, const char *what) {
    WX_CHECK(m->predict_only && m->params.grad == NULL && !m->s.dh && !m->s.dupd && !m->s.dz &&
                 !m->s.dem && !m->s.dvg && !m->s.dvm && !m->s.dtmp && !m->s.dcat,
             "%s: no gradients, no backward scratch", what);
    if (m->ops)
        WX_CHECK(!m->ops->dw3 && !m->ops->sptr[0] && !m->ops->sperm[1] && !m->ops->sperm[2] &&
                     m->chunk_rows > 0,
                 "%s: no weight-gradient blocks, no senders' CSR (backward only)", what);
    WX_CHECK(wx_gc_run_forward(m, y, x, 1) == WX_ERR_USAGE &&
                 wx_gc_run_backward(m, NULL, y) == WX_ERR_USAGE,
             "%s: forward with recording and backward refused", what);
}

/* The dry count equals what the model holds. */
static void check_count(const wx_gc_config *c, wx_gc *m, int ops, int64_t rows) {
    wx_gc_bytes n = {0};
    WX_CHECK(wx_gc_count_bytes(c, m->max_batch, m->max_tapes, m->checkpoint, ops, rows, &n) ==
                     WX_OK &&
                 n.arena == m->arena_len * 4 && n.ops == (ops ? wx_gc_ops_bytes(m) : 0) &&
                 n.params == (m->predict_only ? 1 : 2) * m->params.len * 4 &&
                 n.total == n.arena + n.ops + n.params,
             "count (ops %d, tapes %d, rows %lld): arena %lld vs %lld", ops, m->max_tapes,
             (long long)rows, (long long)n.arena, (long long)m->arena_len * 4);
}

static void test_config(wx_ctx *ctx, const char *name, const char *text, int bitwise) {
    printf("%s\n", name);
    wx_gc_config c;
    if (!config(text, &c)) return;
    const int64_t B = 2;
    wx_gc *tr = wx_gc_create_path(ctx, wx_backend_cpu(), &c, 7, B, 1, 0, 1);
    wx_gc *tf = wx_gc_create_path(ctx, wx_backend_cpu(), &c, 7, B, 1, 0, 0);
    if (!WX_CHECK(tr && tf, "training models: %s", wx_error_message())) {
        wx_gc_destroy(tr), wx_gc_destroy(tf);
        return;
    }
    const int64_t ny = B * c.out_channels * c.nlat * c.nlon, ny1 = ny / B;
    float *x = inputs(tr, B, 11), *y2 = malloc(sizeof(float) * (size_t)ny);
    float *y1 = malloc(sizeof(float) * (size_t)ny1), *yf = malloc(sizeof(float) * (size_t)ny);
    float *z = malloc(sizeof(float) * (size_t)ny);
    WX_CHECK(wx_gc_run_predict(tr, y2, x, B) == WX_OK && wx_gc_run_predict(tr, y1, x, 1) == WX_OK &&
                 wx_gc_run_predict(tf, yf, x, B) == WX_OK,
             "training models predict: %s", wx_error_message());
    check_count(&c, tr, 1, 0);
    printf("  edges g2m %lld, mesh %lld, m2g %lld; nodes grid %lld, mesh %lld\n",
           (long long)tr->eg, (long long)tr->em, (long long)tr->ed, (long long)tr->ng,
           (long long)tr->nm);
    const int64_t rows[] = {0, 1, WX_GC_CHUNK_ALIGN, 500, 5000};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        wx_gc *p = wx_gc_create_chunked(ctx, wx_backend_cpu(), &c, 7, B, 0, 0, 1, rows[i]);
        if (!WX_CHECK(p && p->ops, "predict-only model (rows %lld): %s", (long long)rows[i],
                      wx_error_message())) {
            wx_gc_destroy(p);
            continue;
        }
        memset(z, 0xff, sizeof(float) * (size_t)ny);
        if (WX_CHECK(wx_gc_run_predict(p, z, x, B) == WX_OK, "predict (rows %lld): %s",
                     (long long)rows[i], wx_error_message()))
            check_equal(z, y2, ny, bitwise, "predict-only ops == training model, batch 2",
                        (long long)p->chunk_rows);
        memset(z, 0xff, sizeof(float) * (size_t)ny);
        if (WX_CHECK(wx_gc_run_predict(p, z, x, 1) == WX_OK, "predict batch 1 (rows %lld): %s",
                     (long long)rows[i], wx_error_message()))
            check_equal(z, y1, ny1, bitwise, "predict-only ops: batch 1 of 2",
                        (long long)p->chunk_rows);
        /* chunk sizes: multiples of the alignment, never beyond the largest set of rows */
        const int64_t most = B * (tr->ed > tr->ng ? tr->ed : tr->ng);
        WX_CHECK(p->chunk_rows % WX_GC_CHUNK_ALIGN == 0 &&
                     p->chunk_rows >= (rows[i] < most ? rows[i] : most) &&
                     p->chunk_rows < most + WX_GC_CHUNK_ALIGN,
                 "chunk rows %lld for %lld requested", (long long)p->chunk_rows,
                 (long long)rows[i]);
        const int64_t n2 = (B * tr->ed + p->chunk_rows - 1) / p->chunk_rows;
        printf("  rows %lld -> %lld: m2g edges in %lld chunks; arena %.1f KiB (training model "
               "%.1f KiB)\n", (long long)rows[i], (long long)p->chunk_rows, (long long)n2,
               p->arena_len / 256.0, tr->arena_len / 256.0);
        if (rows[i] == 1) WX_CHECK(n2 >= 3, "smallest chunks: m2g in %lld chunks", (long long)n2);
        WX_CHECK(p->arena_len < tr->arena_len, "predict-only arena smaller");
        check_count(&c, p, 1, rows[i]);
        if (i == 0) check_no_training(p, x, z, "predict-only ops");
        wx_gc_destroy(p);
    }
    wx_gc *pf = wx_gc_create_path(ctx, wx_backend_cpu(), &c, 7, B, 0, 0, 0);
    if (WX_CHECK(pf && !pf->ops, "predict-only fused model: %s", wx_error_message())) {
        WX_CHECK(wx_gc_run_predict(pf, z, x, B) == WX_OK &&
                     !memcmp(z, yf, sizeof(float) * (size_t)ny),
                 "predict-only fused == training model, bitwise");
        WX_CHECK(pf->arena_len < tf->arena_len, "fused predict-only arena smaller");
        check_count(&c, pf, 0, 0);
        check_no_training(pf, x, z, "predict-only fused");
    }
    wx_gc_destroy(pf);
    free(x), free(y1), free(y2), free(yf), free(z);
    wx_gc_destroy(tr), wx_gc_destroy(tf);
}

/* On the simulator: exactly the counted bytes, the CPU's bits, no violation, no leak. */
static void test_devsim(wx_ctx *ctx) {
    printf("device simulator\n");
    wx_gc_config c;
    if (!config(MID, &c)) return;
    const wx_backend *ds = wx_devsim_backend();
    const int64_t B = 2, rows = WX_GC_CHUNK_ALIGN;
    size_t b0 = 0, live0 = wx_devsim_live(&b0), a1 = 0;
    long v0 = wx_devsim_violations(), ops0 = wx_devsim_ops_run();
    wx_gc *h = wx_gc_create_chunked(ctx, wx_backend_cpu(), &c, 7, B, 0, 0, 1, rows);
    wx_gc *d = wx_gc_create_chunked(ctx, ds, &c, 7, B, 0, 0, 1, rows);
    wx_devsim_live(&a1);
    wx_gc_bytes n = {0};
    if (!WX_CHECK(h && d && d->ops && d->params.be == ds, "models: %s", wx_error_message()) ||
        !WX_CHECK(wx_gc_count_bytes(&c, B, 0, 0, 1, rows, &n) == WX_OK, "count")) {
        wx_gc_destroy(h), wx_gc_destroy(d);
        return;
    }
    WX_CHECK(a1 - b0 == (size_t)n.total, "device bytes %zu = count %lld (arena %lld + ops %lld + "
             "params %lld, no gradients)", a1 - b0, (long long)n.total, (long long)n.arena,
             (long long)n.ops, (long long)n.params);
    const int64_t ny = B * c.out_channels * c.nlat * c.nlon, nx = B * h->cin * c.nlat * c.nlon;
    float *x = inputs(h, B, 12), *yh = malloc(sizeof(float) * (size_t)ny);
    float *yd = malloc(sizeof(float) * (size_t)ny);
    float *dx = wx_backend_upload_f32(ds, ctx, x, nx, "x");
    float *dy = wx_backend_alloc(ds, ctx, sizeof(float) * (size_t)ny, "y");
    WX_CHECK(dx && dy && wx_gc_run_predict(h, yh, x, B) == WX_OK &&
                 wx_gc_run_predict(d, dy, dx, B) == WX_OK &&
                 ds->copy_d2h(ctx, yd, dy, sizeof(float) * (size_t)ny) == WX_OK &&
                 !memcmp(yh, yd, sizeof(float) * (size_t)ny),
             "devsim predict-only == CPU bitwise: %s", wx_error_message());
    WX_CHECK(wx_gc_run_forward(d, dy, dx, 1) == WX_ERR_USAGE && d->params.grad == NULL &&
                 !d->ops->dw3,
             "devsim: no training path, no gradient buffers");
    ds->mem_free(ctx, dx), ds->mem_free(ctx, dy);
    free(x), free(yh), free(yd);
    wx_gc_destroy(h), wx_gc_destroy(d);
    size_t b1 = 0, live1 = wx_devsim_live(&b1);
    long ops = wx_devsim_ops_run() - ops0;
    printf("  %ld simulated device ops, %lld bytes, violations %ld\n", ops, (long long)n.total,
           wx_devsim_violations() - v0);
    WX_CHECK(ops > 100 && wx_devsim_protecting(), "ran through the simulator (%ld ops)", ops);
    WX_CHECK(wx_devsim_check() == v0 && wx_devsim_violations() == v0, "no violation: %s",
             wx_devsim_first_violation());
    WX_CHECK(live1 == live0 && b1 == b0, "no device leak (%zu -> %zu)", live0, live1);
}

/* GraphCast_small's own configuration, counted (graphs built, nothing allocated). */
static void test_small_count(void) {
    printf("GraphCast_small, 1 deg, M5, latent 512, batch 1 (dry count)\n");
    wx_yaml *root = NULL;
    wx_gc_config c;
    if (!WX_CHECK(wx_yaml_load_file(WX_FIXTURE_DIR "/../../../configs/model/graphcast_small.yaml", &root) ==
                          WX_OK &&
                      wx_gc_config_parse(root, "", &c) == WX_OK,
                  "graphcast_small.yaml: %s", wx_error_message())) {
        wx_yaml_free(root);
        return;
    }
    wx_yaml_free(root);
    wx_gc_bytes p, t;
    if (!WX_CHECK(wx_gc_count_bytes(&c, 1, 0, 0, 1, 0, &p) == WX_OK &&
                      wx_gc_count_bytes(&c, 1, 1, 1, 1, 0, &t) == WX_OK,
                  "count: %s", wx_error_message()))
        return;
    printf("  ops path: predict-only %.3f GiB, training (1 tape, checkpointing) %.3f GiB\n",
           p.total / 1073741824.0, t.total / 1073741824.0);
    WX_CHECK(5 * p.total < t.total && p.params * 2 == t.params,
             "predict-only under a fifth of training, parameters without gradients");
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    const int bitwise = blas_rows_invariant();
    printf("OpenBLAS %s: rows of a GEMM %s the call's row count%s\n", openblas_get_corename(),
           bitwise ? "independent of" : "dependent on",
           bitwise ? "; chunked predictions compared bitwise" : " (small-matrix kernels); chunked "
                     "predictions compared within 1e-5");
    test_config(ctx, "tiny (22.5 deg, M1, latent 8)", TINY, bitwise);
    test_config(ctx, "mid (7.5 deg, M2, latent 48, 2 hidden layers)", MID, bitwise);
    test_devsim(ctx);
    test_small_count();
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
