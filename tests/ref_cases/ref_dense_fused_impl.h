/* Reference cases for the fused dense ops, written once and included twice by ref_dense_fused.c
 * (float with one backward call into zeroed parameter grads; double with two calls into grads
 * prefilled with REF_PREFILL: param grad = prefill + 2·grad, activation grads overwritten).
 * Outputs and activation grads start as garbage before every call. Needs the macros listed in
 * ref_dense_impl.h. */

#include "ref_common_impl.h"

static void REF_T(layernorm_residual)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *ta = wx_fixture_get(f, "a");
    int64_t n = ta->dims[0], c = ta->dims[1], nc = n * c;
    double eps = wx_fixture_scalar(f, "eps");
    REF_R *a = REF_T(load)(f, "a"), *r = REF_T(load)(f, "r"), *gamma = REF_T(load)(f, "gamma");
    REF_R *beta = REF_T(load)(f, "beta"), *dy = REF_T(load)(f, "dy"), *dz = REF_T(load)(f, "dz");
    REF_R *dres = REF_T(load)(f, "dres");
    REF_R *s = REF_T(filled)(nc, REF_GARBAGE), *y = REF_T(filled)(nc, REF_GARBAGE);
    REF_R *z = REF_T(filled)(nc, REF_GARBAGE), *mean = REF_T(filled)(n, REF_GARBAGE);
    REF_R *rstd = REF_T(filled)(n, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_layernorm_residual_forward)(ctx, s, y, z, mean, rstd, a, r, gamma, beta,
                                                      n, c, eps));
    REF_T(check)("layernorm_residual", "s", s, f);
    REF_T(check)("layernorm_residual", "y", y, f);
    REF_T(check)("layernorm_residual", "z", z, f);
    REF_T(check)("layernorm_residual", "mean", mean, f);
    REF_T(check)("layernorm_residual", "rstd", rstd, f);
    /* In place (s aliases a, the residual stream's use), no z. */
    REF_R *a2 = REF_T(load)(f, "a");
    REF_T(refill)(y, nc, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_layernorm_residual_forward)(ctx, a2, y, NULL, mean, rstd, a2, r, gamma,
                                                      beta, n, c, eps));
    REF_T(check)("layernorm_residual (s = a in place)", "s", a2, f);
    REF_T(check)("layernorm_residual (s = a in place)", "y", y, f);
    /* Backward with every upstream gradient. */
    REF_R *ds = REF_T(filled)(nc, 0), *dg = REF_T(filled)(c, REF_PREFILL);
    REF_R *db = REF_T(filled)(c, REF_PREFILL);
    for (int k = 0; k < REF_REPS; k++) {
        REF_T(refill)(ds, nc, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_layernorm_residual_backward)(ctx, ds, dg, db, dy, dz, dres, s, mean,
                                                           rstd, gamma, n, c));
    }
    REF_T(check)("layernorm_residual", "ds", ds, f);
    REF_T(check_acc)("layernorm_residual", "dgamma", dg, f);
    REF_T(check_acc)("layernorm_residual", "dbeta", db, f);
    /* ds written over dres (the backward's in-place use). */
    REF_R *dres2 = REF_T(load)(f, "dres");
    REF_RUN(REF_OP(wx_cpu_layernorm_residual_backward)(ctx, dres2, NULL, NULL, dy, dz, dres2, s,
                                                       mean, rstd, gamma, n, c));
    REF_T(check)("layernorm_residual (ds = dres in place)", "ds", dres2, f);
    /* y only: dz and dres NULL. */
    REF_T(refill)(dg, c, REF_PREFILL), REF_T(refill)(db, c, REF_PREFILL);
    for (int k = 0; k < REF_REPS; k++) {
        REF_T(refill)(ds, nc, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_layernorm_residual_backward)(ctx, ds, dg, db, dy, NULL, NULL, s,
                                                           mean, rstd, gamma, n, c));
    }
    REF_T(check)("layernorm_residual (dy only)", "ds_y", ds, f);
    REF_T(check_acc)("layernorm_residual (dy only)", "dgamma_y", dg, f);
    REF_T(check_acc)("layernorm_residual (dy only)", "dbeta_y", db, f);
    free(a), free(r), free(gamma), free(beta), free(dy), free(dz), free(dres), free(s), free(y);
    free(z), free(mean), free(rstd), free(a2), free(ds), free(dg), free(db), free(dres2);
}

static void REF_T(linear_gelu)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *tw = wx_fixture_get(f, "w");
    int64_t out = tw->dims[0], in = tw->dims[1], n = wx_fixture_get(f, "x")->dims[0];
    REF_R *x = REF_T(load)(f, "x"), *w = REF_T(load)(f, "w"), *b = REF_T(load)(f, "b");
    REF_R *dg = REF_T(load)(f, "dg");
    REF_R *h = REF_T(filled)(n * out, REF_GARBAGE), *g = REF_T(filled)(n * out, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_linear_gelu_forward)(ctx, h, g, x, w, b, n, in, out));
    REF_T(check)("linear_gelu", "h", h, f);
    REF_T(check)("linear_gelu", "g", g, f);
    REF_R *h0 = REF_T(filled)(n * out, REF_GARBAGE), *g0 = REF_T(filled)(n * out, REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_linear_gelu_forward)(ctx, h0, g0, x, w, NULL, n, in, out));
    REF_T(check)("linear_gelu", "h_nobias", h0, f);
    REF_T(check)("linear_gelu", "g_nobias", g0, f);
    REF_R *dx = REF_T(filled)(n * in, 0), *dw = REF_T(filled)(out * in, REF_PREFILL);
    REF_R *db = REF_T(filled)(out, REF_PREFILL), *dh = REF_T(filled)(n * out, 0);
    for (int k = 0; k < REF_REPS; k++) {
        REF_T(refill)(dx, n * in, REF_GARBAGE);
        REF_T(refill)(dh, n * out, REF_GARBAGE);
        REF_T(refill)(g, n * out, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_linear_gelu_backward)(ctx, dx, dw, db, dh, g, dg, h, x, w, n, in,
                                                    out));
    }
    REF_T(check)("linear_gelu (backward's recomputed g)", "g", g, f);
    REF_T(check)("linear_gelu", "dh", dh, f);
    REF_T(check)("linear_gelu", "dx", dx, f);
    REF_T(check_acc)("linear_gelu", "dw", dw, f);
    REF_T(check_acc)("linear_gelu", "db", db, f);
    /* dh written over dg, dx and db NULL: dw must come out the same. */
    REF_R *dg2 = REF_T(load)(f, "dg"), *dw1 = REF_T(filled)(out * in, REF_PREFILL);
    for (int k = 0; k < REF_REPS; k++) {
        REF_R *src = k == 0 ? dg2 : dg; /* the second call again from dg, into dg2 */
        REF_RUN(REF_OP(wx_cpu_linear_gelu_backward)(ctx, NULL, dw1, NULL, dg2, NULL, src, h, x, w, n,
                                                    in, out));
    }
    REF_T(check)("linear_gelu (dh = dg in place)", "dh", dg2, f);
    REF_T(check_acc)("linear_gelu (dx, db NULL)", "dw", dw1, f);
    free(x), free(w), free(b), free(dg), free(h), free(g), free(h0), free(g0), free(dx), free(dw);
    free(db), free(dh), free(dg2), free(dw1);
}

#undef REF_RUN
#undef REF_GARBAGE
