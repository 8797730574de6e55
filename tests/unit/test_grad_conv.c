/* Finite-difference gradient checks for conv3x3 (src/ops/conv.c), float64 (_f64 ops).
 *
 * L = Σ r ⊙ conv3x3(x, wt, bias) with a fixed random r; the analytic gradients (backward with
 * dy = r) of x, wt and bias are compared with central differences along random directions and at
 * spots on the padding: the first and last column (wrap-around in longitude) and the first and
 * last row (zero padding at the poles). L is linear in each tensor, so the differences are exact
 * up to rounding (tolerance 1e-7 relative). Also: a constant field is preserved up to the weight
 * sum away from the poles (periodic in W: no edge effect across the date line). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wx_ops.h"
#include "wx_test.h"

enum { T_X, T_W, T_B };

typedef struct {
    wx_ctx *ctx;
    int64_t b, cin, h, wd, cout;
    double *t[3];
    int64_t len[3];
    double *r;
    int which;
} conv_case;

static double conv_loss(void *ud, const double *v) {
    const conv_case *c = ud;
    const double *a[3] = {c->t[0], c->t[1], c->t[2]};
    a[c->which] = v;
    int64_t ny = c->b * c->cout * c->h * c->wd;
    double *y = malloc(sizeof(double) * (size_t)ny), s = 0;
    WX_ASSERT(wx_cpu_conv3x3_forward_f64(c->ctx, y, a[0], a[1], a[2], c->b, c->cin, c->h, c->wd,
                                         c->cout) == WX_OK);
    for (int64_t i = 0; i < ny; i++) s += c->r[i] * y[i];
    free(y);
    return s;
}

static void run(wx_ctx *ctx, int64_t b, int64_t cin, int64_t h, int64_t wd, int64_t cout,
                uint64_t seed) {
    conv_case c = {ctx, b, cin, h, wd, cout, {0}, {0}, NULL, 0};
    c.len[T_X] = b * cin * h * wd, c.len[T_W] = cout * cin * 9, c.len[T_B] = cout;
    for (int i = 0; i < 3; i++) {
        c.t[i] = malloc(sizeof(double) * (size_t)c.len[i]);
        wx_test_fill_uniform(c.t[i], c.len[i], seed + (uint64_t)i, -1, 1);
    }
    int64_t ny = b * cout * h * wd;
    c.r = malloc(sizeof(double) * (size_t)ny);
    wx_test_fill_uniform(c.r, ny, seed + 7, -1, 1);
    double *g[3];
    for (int i = 0; i < 3; i++) g[i] = calloc((size_t)c.len[i], sizeof(double));
    WX_CHECK(wx_cpu_conv3x3_backward_f64(ctx, g[T_X], g[T_W], g[T_B], c.r, c.t[T_X], c.t[T_W], b,
                                         cin, h, wd, cout) == WX_OK, "backward");
    static const char *names[3] = {"dx", "dwt", "dbias"};
    /* x spots: corners of the last sample's last channel plane and the first column mid-grid. */
    int64_t plane = (b * cin - 1) * h * wd;
    int64_t xs[6] = {0, wd - 1, plane + (h - 1) * wd, plane + h * wd - 1, (h / 2) * wd,
                     (h / 2) * wd + wd - 1};
    int64_t ws[3] = {0, 4, c.len[T_W] - 1};
    int64_t bs[1] = {cout - 1};
    for (int i = 0; i < 3; i++) {
        char what[96];
        snprintf(what, sizeof what, "conv3x3 B=%lld cin=%lld H=%lld W=%lld cout=%lld %s",
                 (long long)b, (long long)cin, (long long)h, (long long)wd, (long long)cout,
                 names[i]);
        c.which = i;
        const int64_t *sp = i == T_X ? xs : i == T_W ? ws : bs;
        int nsp = i == T_X ? 6 : i == T_W ? 3 : 1;
        WX_CHECK_FD(what, conv_loss, &c, c.t[i], g[i], c.len[i], 3, sp, nsp, 1e-6, 1e-7);
        free(g[i]);
    }
    for (int i = 0; i < 3; i++) free(c.t[i]);
    free(c.r);
}

/* A constant field of 1 through a kernel of all ones: 9 inside, 6 on the first and last row
 * (zero padding there), never an edge at the first or last column (periodic). */
static void constant_field(wx_ctx *ctx) {
    const int64_t h = 4, wd = 5;
    double x[20], wt[9], y[20];
    for (int i = 0; i < 20; i++) x[i] = 1;
    for (int i = 0; i < 9; i++) wt[i] = 1;
    WX_CHECK(wx_cpu_conv3x3_forward_f64(ctx, y, x, wt, NULL, 1, 1, h, wd, 1) == WX_OK, "forward");
    int ok = 1;
    for (int64_t r = 0; r < h; r++)
        for (int64_t q = 0; q < wd; q++)
            ok &= y[r * wd + q] == (r == 0 || r == h - 1 ? 6.0 : 9.0);
    WX_CHECK(ok, "constant field: 9 inside, 6 on the pole rows, no edge in longitude");
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(0);
    run(ctx, 2, 3, 5, 7, 2, 100);
    run(ctx, 1, 1, 4, 2, 1, 200); /* W = 2: both wrap neighbours are the same column */
    run(ctx, 2, 1, 6, 8, 1, 300); /* the head's 1 -> 1 */
    constant_field(ctx);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
