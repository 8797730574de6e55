/* Reference cases for the dense ops, written once and included twice by ref_dense.c: with
 * REF_R = float (the product ops, one backward call into zeroed parameter grads) and with
 * REF_R = double (the _f64 ops, two backward calls into parameter grads prefilled with
 * REF_PREFILL, checking accumulation: param grad = prefill + 2·grad, activation grad = 1·grad).
 * Activation-grad buffers are filled with garbage before every backward call, so a backward
 * that accumulates into them instead of overwriting fails.
 * Needs: REF_R, REF_OP(name) (op name for this precision), REF_T(name) (local name), REF_PREC
 * ("f32"/"f64"), REF_REPS, REF_PREFILL, REF_RTOL, REF_ATOL, REF_CLOSE. */

#include "ref_common_impl.h"

static void REF_T(linear)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *tw = wx_fixture_get(f, "w");
    int64_t out = tw->dims[0], in = tw->dims[1], n = wx_fixture_get(f, "x")->dims[0];
    REF_R *x = REF_T(load)(f, "x"), *w = REF_T(load)(f, "w"), *b = REF_T(load)(f, "b");
    REF_R *dy = REF_T(load)(f, "dy"), *y = REF_T(filled)(n * out, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_linear_forward)(ctx, y, x, w, b, n, in, out));
    REF_T(check)("linear", "y", y, f);
    REF_T(refill)(y, n * out, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_linear_forward)(ctx, y, x, w, NULL, n, in, out));
    REF_T(check)("linear", "y_nobias", y, f);
    REF_R *dx = REF_T(filled)(n * in, 0), *dw = REF_T(filled)(out * in, REF_PREFILL);
    REF_R *db = REF_T(filled)(out, REF_PREFILL);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dx, n * in, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_linear_backward)(ctx, dx, dw, db, dy, x, w, n, in, out));
    }
    REF_T(check)("linear", "dx", dx, f);
    REF_T(check_acc)("linear", "dw", dw, f);
    REF_T(check_acc)("linear", "db", db, f);
    /* Nullable grads: dw alone must come out the same. */
    REF_R *dw1 = REF_T(filled)(out * in, REF_PREFILL);
    for (int r = 0; r < REF_REPS; r++)
        REF_RUN(REF_OP(wx_cpu_linear_backward)(ctx, NULL, dw1, NULL, dy, x, w, n, in, out));
    REF_T(check_acc)("linear (dx, db NULL)", "dw", dw1, f);
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db), free(dw1);
}

static void REF_T(layernorm)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *tx = wx_fixture_get(f, "x");
    int64_t n = tx->dims[0], c = tx->dims[1];
    double eps = wx_fixture_scalar(f, "eps");
    REF_R *x = REF_T(load)(f, "x"), *gamma = REF_T(load)(f, "gamma"), *beta = REF_T(load)(f, "beta");
    REF_R *dy = REF_T(load)(f, "dy"), *y = REF_T(filled)(n * c, REF_GARBAGE);
    REF_R *mean = REF_T(filled)(n, REF_GARBAGE), *rstd = REF_T(filled)(n, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_layernorm_forward)(ctx, y, mean, rstd, x, gamma, beta, n, c, eps));
    REF_T(check)("layernorm", "y", y, f);
    REF_T(check)("layernorm", "mean", mean, f);
    REF_T(check)("layernorm", "rstd", rstd, f);
    REF_R *dx = REF_T(filled)(n * c, 0), *dg = REF_T(filled)(c, REF_PREFILL);
    REF_R *dbt = REF_T(filled)(c, REF_PREFILL);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dx, n * c, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_layernorm_backward)(ctx, dx, dg, dbt, dy, x, mean, rstd, gamma, n, c));
    }
    REF_T(check)("layernorm", "dx", dx, f);
    REF_T(check_acc)("layernorm", "dgamma", dg, f);
    REF_T(check_acc)("layernorm", "dbeta", dbt, f);
    free(x), free(gamma), free(beta), free(dy), free(y), free(mean), free(rstd), free(dx), free(dg),
        free(dbt);
}

/* The four activations share one shape; `lambda` is used by softshrink only. */
static void REF_T(activation)(wx_ctx *ctx, const wx_fixture *f, const char *op, int which) {
    int64_t n = wx_fixture_get(f, "x")->size;
    double lambda = which == 3 ? wx_fixture_scalar(f, "lambda") : 0;
    REF_R *x = REF_T(load)(f, "x"), *dy = REF_T(load)(f, "dy");
    REF_R *y = REF_T(filled)(n, REF_GARBAGE), *dx = REF_T(filled)(n, REF_GARBAGE);
    switch (which) {
    case 0: REF_RUN(REF_OP(wx_cpu_gelu_forward)(ctx, y, x, n)); break;
    case 1: REF_RUN(REF_OP(wx_cpu_silu_forward)(ctx, y, x, n)); break;
    case 2: REF_RUN(REF_OP(wx_cpu_relu_forward)(ctx, y, x, n)); break;
    default: REF_RUN(REF_OP(wx_cpu_softshrink_forward)(ctx, y, x, n, lambda)); break;
    }
    REF_T(check)(op, "y", y, f);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dx, n, REF_GARBAGE);
        switch (which) {
        case 0: REF_RUN(REF_OP(wx_cpu_gelu_backward)(ctx, dx, dy, x, n)); break;
        case 1: REF_RUN(REF_OP(wx_cpu_silu_backward)(ctx, dx, dy, x, n)); break;
        case 2: REF_RUN(REF_OP(wx_cpu_relu_backward)(ctx, dx, dy, x, n)); break;
        default: REF_RUN(REF_OP(wx_cpu_softshrink_backward)(ctx, dx, dy, x, n, lambda)); break;
        }
    }
    REF_T(check)(op, "dx", dx, f);
    free(x), free(dy), free(y), free(dx);
}

static void REF_T(add)(wx_ctx *ctx, const wx_fixture *f) {
    int64_t n = wx_fixture_get(f, "a")->size;
    REF_R *a = REF_T(load)(f, "a"), *b = REF_T(load)(f, "b"), *dy = REF_T(load)(f, "dy");
    REF_R *y = REF_T(filled)(n, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_add_forward)(ctx, y, a, b, n));
    REF_T(check)("add", "y", y, f);
    /* In place, as the residual stream uses it: y aliases a. */
    REF_R *a2 = REF_T(load)(f, "a");
    REF_RUN(REF_OP(wx_cpu_add_forward)(ctx, a2, a2, b, n));
    REF_T(check)("add (in place)", "y", a2, f);
    REF_R *da = REF_T(filled)(n, 0), *db = REF_T(filled)(n, 0);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(da, n, REF_GARBAGE);
        REF_T(refill)(db, n, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_add_backward)(ctx, da, db, dy, n));
    }
    REF_T(check)("add", "da", da, f);
    REF_T(check)("add", "db", db, f);
    free(a), free(b), free(dy), free(y), free(a2), free(da), free(db);
}

static void REF_T(concat)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *tcs = wx_fixture_get(f, "cs");
    int k = (int)tcs->size;
    int64_t cs[8], n = wx_fixture_get(f, "y")->dims[0], ctot = wx_fixture_get(f, "y")->dims[1];
    WX_ASSERT(k <= 8);
    REF_R *xs[8], *dxs[8];
    char name[16];
    for (int i = 0; i < k; i++) {
        cs[i] = (int64_t)tcs->data[i];
        snprintf(name, sizeof name, "x%d", i);
        xs[i] = REF_T(load)(f, name);
        dxs[i] = REF_T(filled)(n * cs[i], 0);
    }
    REF_R *dy = REF_T(load)(f, "dy"), *y = REF_T(filled)(n * ctot, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_concat_forward)(ctx, y, (const REF_R *const *)xs, cs, k, n));
    REF_T(check)("concat", "y", y, f);
    for (int r = 0; r < REF_REPS; r++) {
        for (int i = 0; i < k; i++) REF_T(refill)(dxs[i], n * cs[i], REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_concat_backward)(ctx, dxs, dy, cs, k, n));
    }
    for (int i = 0; i < k; i++) {
        snprintf(name, sizeof name, "dx%d", i);
        REF_T(check)("concat", name, dxs[i], f);
        free(xs[i]), free(dxs[i]);
    }
    free(dy), free(y);
}

static void REF_T(patch_embed)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *tx = wx_fixture_get(f, "x");
    int64_t b = tx->dims[0], cin = tx->dims[1], h = tx->dims[2], wd = tx->dims[3];
    int64_t p = (int64_t)wx_fixture_scalar(f, "p"), d = wx_fixture_get(f, "w")->dims[0];
    int64_t ny = b * (h / p) * (wd / p) * d, nw = d * cin * p * p;
    REF_R *x = REF_T(load)(f, "x"), *w = REF_T(load)(f, "w"), *bias = REF_T(load)(f, "bias");
    REF_R *dy = REF_T(load)(f, "dy"), *y = REF_T(filled)(ny, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_patch_embed_forward)(ctx, y, x, w, bias, b, cin, h, wd, p, d));
    REF_T(check)("patch_embed", "y", y, f);
    REF_R *dx = REF_T(filled)(tx->size, 0), *dw = REF_T(filled)(nw, REF_PREFILL);
    REF_R *dbias = REF_T(filled)(d, REF_PREFILL);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dx, tx->size, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_patch_embed_backward)(ctx, dx, dw, dbias, dy, x, w, b, cin, h, wd, p,
                                                     d));
    }
    REF_T(check)("patch_embed", "dx", dx, f);
    REF_T(check_acc)("patch_embed", "dw", dw, f);
    REF_T(check_acc)("patch_embed", "dbias", dbias, f);
    /* A size that is not a whole number of patches is refused with a message, not run. */
    WX_CHECK(REF_OP(wx_cpu_patch_embed_forward)(ctx, y, x, w, bias, b, cin, h, wd - 1, p, d) ==
                 WX_ERR_USAGE,
             "patch_embed %s: W not divisible by p accepted", REF_PREC);
    free(x), free(w), free(bias), free(dy), free(y), free(dx), free(dw), free(dbias);
}

static void REF_T(unpatchify)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *ty = wx_fixture_get(f, "y");
    int64_t b = ty->dims[0], hp = ty->dims[1], wp = ty->dims[2];
    int64_t c = (int64_t)wx_fixture_scalar(f, "c"), p = (int64_t)wx_fixture_scalar(f, "p");
    REF_R *y = REF_T(load)(f, "y"), *dout = REF_T(load)(f, "dout");
    REF_R *out = REF_T(filled)(ty->size, REF_GARBAGE), *dy = REF_T(filled)(ty->size, 0);
    REF_RUN(REF_OP(wx_cpu_unpatchify_forward)(ctx, out, y, b, c, hp, wp, p));
    REF_T(check)("unpatchify", "out", out, f);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dy, ty->size, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_unpatchify_backward)(ctx, dy, dout, b, c, hp, wp, p));
    }
    REF_T(check)("unpatchify", "dy", dy, f);
    free(y), free(dout), free(out), free(dy);
}

static void REF_T(pos_embed)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *tx = wx_fixture_get(f, "x");
    int64_t b = tx->dims[0], n = tx->dims[1], d = tx->dims[2];
    REF_R *x = REF_T(load)(f, "x"), *pos = REF_T(load)(f, "pos"), *dy = REF_T(load)(f, "dy");
    REF_R *y = REF_T(filled)(tx->size, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_pos_embed_forward)(ctx, y, x, pos, b, n, d));
    REF_T(check)("pos_embed", "y", y, f);
    REF_RUN(REF_OP(wx_cpu_pos_embed_forward)(ctx, x, x, pos, b, n, d));
    REF_T(check)("pos_embed (in place)", "y", x, f);
    REF_R *dx = REF_T(filled)(tx->size, 0), *dpos = REF_T(filled)(n * d, REF_PREFILL);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dx, tx->size, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_pos_embed_backward)(ctx, dx, dpos, dy, b, n, d));
    }
    REF_T(check)("pos_embed", "dx", dx, f);
    REF_T(check_acc)("pos_embed", "dpos", dpos, f);
    free(x), free(pos), free(dy), free(y), free(dx), free(dpos);
}

#undef REF_RUN
#undef REF_GARBAGE
