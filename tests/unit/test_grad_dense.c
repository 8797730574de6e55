/* Finite-difference gradient checks for every dense op, in float64 (_f64 ops).
 *
 * For each op, L = Σ r ⊙ op(inputs, params) with a fixed random r; the analytic gradient of L with
 * respect to every input and parameter tensor is the op's backward with dy = r, and WX_CHECK_FD
 * compares it with central differences along random directions and at single spots. Inputs are
 * kept away from kinks (ReLU at 0, softshrink at ±λ) by more than the step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wx_ops.h"
#include "wx_test.h"

#define FD_EPS 1e-6
#define FD_RTOL 1e-7
#define FD_DIRS 3
#define FD_MAXT 4

enum { OP_LINEAR, OP_LAYERNORM, OP_GELU, OP_SILU, OP_RELU, OP_SOFTSHRINK, OP_ADD, OP_CONCAT,
       OP_PATCH_EMBED, OP_UNPATCHIFY, OP_POS_EMBED };

/* One op instance: its tensors (inputs then parameters), the output length and the weights r. */
typedef struct {
    int op;
    const char *name;
    int nt;                      /* number of differentiable tensors */
    const char *tname[FD_MAXT];
    double *t[FD_MAXT];
    int64_t len[FD_MAXT];
    int64_t ny;
    double *r;                   /* dL/dy, (ny) */
    int64_t d0, d1, d2, d3, d4, d5; /* op sizes, meaning per op (see make_case) */
    double scalar;               /* layernorm eps / softshrink lambda */
    int which;                   /* tensor being perturbed by the FD loss */
    wx_ctx *ctx;
} fd_case;

#define OK(call) WX_ASSERT((call) == WX_OK)

static void fd_forward(const fd_case *c, const double *const *a, double *y) {
    wx_ctx *ctx = c->ctx;
    switch (c->op) {
    case OP_LINEAR: OK(wx_cpu_linear_forward_f64(ctx, y, a[0], a[1], a[2], c->d0, c->d1, c->d2)); break;
    case OP_LAYERNORM: {
        double *mean = malloc(sizeof(double) * c->d0), *rstd = malloc(sizeof(double) * c->d0);
        OK(wx_cpu_layernorm_forward_f64(ctx, y, mean, rstd, a[0], a[1], a[2], c->d0, c->d1,
                                        c->scalar));
        free(mean), free(rstd);
        break;
    }
    case OP_GELU: OK(wx_cpu_gelu_forward_f64(ctx, y, a[0], c->ny)); break;
    case OP_SILU: OK(wx_cpu_silu_forward_f64(ctx, y, a[0], c->ny)); break;
    case OP_RELU: OK(wx_cpu_relu_forward_f64(ctx, y, a[0], c->ny)); break;
    case OP_SOFTSHRINK: OK(wx_cpu_softshrink_forward_f64(ctx, y, a[0], c->ny, c->scalar)); break;
    case OP_ADD: OK(wx_cpu_add_forward_f64(ctx, y, a[0], a[1], c->ny)); break;
    case OP_CONCAT: {
        int64_t cs[3] = {c->d1, c->d2, c->d3};
        OK(wx_cpu_concat_forward_f64(ctx, y, a, cs, 3, c->d0));
        break;
    }
    case OP_PATCH_EMBED:
        OK(wx_cpu_patch_embed_forward_f64(ctx, y, a[0], a[1], a[2], c->d0, c->d1, c->d2, c->d3,
                                          c->d4, c->d5));
        break;
    case OP_UNPATCHIFY:
        OK(wx_cpu_unpatchify_forward_f64(ctx, y, a[0], c->d0, c->d1, c->d2, c->d3, c->d4));
        break;
    case OP_POS_EMBED: OK(wx_cpu_pos_embed_forward_f64(ctx, y, a[0], a[1], c->d0, c->d1, c->d2)); break;
    }
}

/* Gradients of L at the unperturbed point into g[i] (len[i]), zeroed first (param grads +=). */
static void fd_backward(const fd_case *c, double **g) {
    wx_ctx *ctx = c->ctx;
    const double *const *a = (const double *const *)c->t;
    const double *r = c->r;
    for (int i = 0; i < c->nt; i++) memset(g[i], 0, sizeof(double) * c->len[i]);
    switch (c->op) {
    case OP_LINEAR:
        OK(wx_cpu_linear_backward_f64(ctx, g[0], g[1], g[2], r, a[0], a[1], c->d0, c->d1, c->d2));
        break;
    case OP_LAYERNORM: {
        double *y = malloc(sizeof(double) * c->ny);
        double *mean = malloc(sizeof(double) * c->d0), *rstd = malloc(sizeof(double) * c->d0);
        OK(wx_cpu_layernorm_forward_f64(ctx, y, mean, rstd, a[0], a[1], a[2], c->d0, c->d1,
                                        c->scalar));
        OK(wx_cpu_layernorm_backward_f64(ctx, g[0], g[1], g[2], r, a[0], mean, rstd, a[1], c->d0,
                                         c->d1));
        free(y), free(mean), free(rstd);
        break;
    }
    case OP_GELU: OK(wx_cpu_gelu_backward_f64(ctx, g[0], r, a[0], c->ny)); break;
    case OP_SILU: OK(wx_cpu_silu_backward_f64(ctx, g[0], r, a[0], c->ny)); break;
    case OP_RELU: OK(wx_cpu_relu_backward_f64(ctx, g[0], r, a[0], c->ny)); break;
    case OP_SOFTSHRINK: OK(wx_cpu_softshrink_backward_f64(ctx, g[0], r, a[0], c->ny, c->scalar)); break;
    case OP_ADD: OK(wx_cpu_add_backward_f64(ctx, g[0], g[1], r, c->ny)); break;
    case OP_CONCAT: {
        int64_t cs[3] = {c->d1, c->d2, c->d3};
        OK(wx_cpu_concat_backward_f64(ctx, g, r, cs, 3, c->d0));
        break;
    }
    case OP_PATCH_EMBED:
        OK(wx_cpu_patch_embed_backward_f64(ctx, g[0], g[1], g[2], r, a[0], a[1], c->d0, c->d1,
                                           c->d2, c->d3, c->d4, c->d5));
        break;
    case OP_UNPATCHIFY:
        OK(wx_cpu_unpatchify_backward_f64(ctx, g[0], r, c->d0, c->d1, c->d2, c->d3, c->d4));
        break;
    case OP_POS_EMBED: OK(wx_cpu_pos_embed_backward_f64(ctx, g[0], g[1], r, c->d0, c->d1, c->d2)); break;
    }
}

/* L(x) = Σ r ⊙ op(...) with tensor c->which replaced by x. */
static double fd_loss(void *ud, const double *x) {
    const fd_case *c = ud;
    const double *a[FD_MAXT];
    for (int i = 0; i < c->nt; i++) a[i] = c->t[i];
    a[c->which] = x;
    double *y = malloc(sizeof(double) * c->ny), s = 0;
    fd_forward(c, a, y);
    for (int64_t i = 0; i < c->ny; i++) s += c->r[i] * y[i];
    free(y);
    return s;
}

static uint64_t fd_seed = 1;

static void add_tensor(fd_case *c, const char *name, int64_t len, double lo, double hi) {
    int i = c->nt++;
    c->tname[i] = name;
    c->len[i] = len;
    c->t[i] = malloc(sizeof(double) * len);
    wx_test_fill_uniform(c->t[i], len, fd_seed++, lo, hi);
}

/* Pushes entries within `gap` of ±k (and of 0 when k = 0) out to the kink ± gap. */
static void away_from(double *x, int64_t n, double k, double gap) {
    for (int64_t i = 0; i < n; i++) {
        double m = fabs(x[i]), s = x[i] < 0 ? -1 : 1;
        if (fabs(m - k) < gap) x[i] = s * (m < k ? k - gap : k + gap);
        if (k - gap < 0 && fabs(x[i]) < gap) x[i] = s * gap;
    }
}

static void run_case(fd_case *c, wx_ctx *ctx) {
    c->ctx = ctx;
    c->r = malloc(sizeof(double) * c->ny);
    wx_test_fill_uniform(c->r, c->ny, fd_seed++, -1, 1);
    double *g[FD_MAXT];
    for (int i = 0; i < c->nt; i++) g[i] = malloc(sizeof(double) * c->len[i]);
    fd_backward(c, g);
    for (int i = 0; i < c->nt; i++) {
        int64_t n = c->len[i], spots[3] = {0, n / 2, n - 1};
        char what[64];
        snprintf(what, sizeof what, "%s d%s", c->name, c->tname[i]);
        c->which = i;
        WX_CHECK_FD(what, fd_loss, c, c->t[i], g[i], n, FD_DIRS, spots, 3, FD_EPS, FD_RTOL);
        free(g[i]);
    }
    for (int i = 0; i < c->nt; i++) free(c->t[i]);
    free(c->r);
}

int main(void) {
    wx_ctx *ctx = wx_ctx_create(0);

    fd_case lin = {.op = OP_LINEAR, .name = "linear", .d0 = 5, .d1 = 7, .d2 = 4};
    add_tensor(&lin, "x", 5 * 7, -2, 2);
    add_tensor(&lin, "w", 4 * 7, -1, 1);
    add_tensor(&lin, "b", 4, -1, 1);
    lin.ny = 5 * 4;
    run_case(&lin, ctx);

    fd_case ln = {.op = OP_LAYERNORM, .name = "layernorm", .d0 = 4, .d1 = 9, .scalar = 1e-5};
    add_tensor(&ln, "x", 4 * 9, 1, 4); /* non-zero mean, as activations have */
    add_tensor(&ln, "gamma", 9, 0.5, 1.5);
    add_tensor(&ln, "beta", 9, -1, 1);
    ln.ny = 4 * 9;
    run_case(&ln, ctx);

    const struct { int op; const char *name; double kink; double scalar; } acts[] = {
        {OP_GELU, "gelu", -1, 0}, {OP_SILU, "silu", -1, 0}, {OP_RELU, "relu", 0, 0},
        {OP_SOFTSHRINK, "softshrink", 0.3, 0.3}};
    for (size_t k = 0; k < sizeof acts / sizeof *acts; k++) {
        fd_case a = {.op = acts[k].op, .name = acts[k].name, .scalar = acts[k].scalar, .ny = 40};
        add_tensor(&a, "x", 40, -3, 3);
        if (acts[k].kink >= 0) away_from(a.t[0], 40, acts[k].kink, 0.05);
        run_case(&a, ctx);
    }

    fd_case add = {.op = OP_ADD, .name = "add", .ny = 17};
    add_tensor(&add, "a", 17, -1, 1);
    add_tensor(&add, "b", 17, -1, 1);
    run_case(&add, ctx);

    fd_case cat = {.op = OP_CONCAT, .name = "concat", .d0 = 3, .d1 = 2, .d2 = 1, .d3 = 4};
    add_tensor(&cat, "x0", 3 * 2, -1, 1);
    add_tensor(&cat, "x1", 3 * 1, -1, 1);
    add_tensor(&cat, "x2", 3 * 4, -1, 1);
    cat.ny = 3 * 7;
    run_case(&cat, ctx);

    /* B=2, cin=2, H=4, W=6, p=2, d=3: 2·2·3 tokens of 3 features. */
    fd_case pe = {.op = OP_PATCH_EMBED, .name = "patch_embed", .d0 = 2, .d1 = 2, .d2 = 4, .d3 = 6,
                  .d4 = 2, .d5 = 3};
    add_tensor(&pe, "x", 2 * 2 * 4 * 6, -1, 1);
    add_tensor(&pe, "w", 3 * 2 * 2 * 2, -1, 1);
    add_tensor(&pe, "bias", 3, -1, 1);
    pe.ny = 2 * 2 * 3 * 3;
    run_case(&pe, ctx);

    /* B=2, C=3, Hp=2, Wp=2, p=3. */
    fd_case up = {.op = OP_UNPATCHIFY, .name = "unpatchify", .d0 = 2, .d1 = 3, .d2 = 2, .d3 = 2,
                  .d4 = 3};
    add_tensor(&up, "y", 2 * 2 * 2 * 9 * 3, -1, 1);
    up.ny = up.len[0];
    run_case(&up, ctx);

    fd_case pos = {.op = OP_POS_EMBED, .name = "pos_embed", .d0 = 3, .d1 = 4, .d2 = 5};
    add_tensor(&pos, "x", 3 * 4 * 5, -1, 1);
    add_tensor(&pos, "pos", 4 * 5, -1, 1);
    pos.ny = 3 * 4 * 5;
    run_case(&pos, ctx);

    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
