/* Reference cases for the spectral ops, written once and included twice by ref_spectral.c: with
 * REF_R = float (product ops, one backward call into zeroed parameter grads) and REF_R = double
 * (_f64 ops, two backward calls into parameter grads prefilled with REF_PREFILL: param grad must be
 * prefill + 2·grad, activation grads are overwritten; they are filled with garbage before every
 * call). Needs: REF_R, REF_OP(name), REF_T(name), REF_PREC, REF_REPS, REF_PREFILL, REF_RTOL,
 * REF_ATOL, REF_CLOSE. */

#include "ref_common_impl.h"

/* x (B,H,W,C) ↔ X (B,H,Wf,C,2) against spectral_rfft2_*.wxfx. */
static void REF_T(rfft2)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *tx = wx_fixture_get(f, "x");
    int64_t b = tx->dims[0], h = tx->dims[1], w = tx->dims[2], c = tx->dims[3];
    int64_t nx = b * h * w * c, nX = b * h * (w / 2 + 1) * c * 2;
    REF_R *x = REF_T(load)(f, "x"), *dX = REF_T(load)(f, "dX");
    REF_R *X = REF_T(filled)(nX, REF_GARBAGE), *dx = REF_T(filled)(nx, 0);
    REF_RUN(REF_OP(wx_cpu_rfft2_forward)(ctx, X, x, b, h, w, c));
    REF_T(check)("rfft2", "X", X, f);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dx, nx, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_rfft2_backward)(ctx, dx, dX, b, h, w, c));
    }
    REF_T(check)("rfft2", "dx", dx, f);
    free(x), free(dX), free(X), free(dx);
}

/* X (random, not Hermitian-consistent) → y against spectral_irfft2_*.wxfx. */
static void REF_T(irfft2)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *ty = wx_fixture_get(f, "y");
    int64_t b = ty->dims[0], h = ty->dims[1], w = ty->dims[2], c = ty->dims[3];
    int64_t ny = b * h * w * c, nX = b * h * (w / 2 + 1) * c * 2;
    REF_R *X = REF_T(load)(f, "X"), *dy = REF_T(load)(f, "dy");
    REF_R *y = REF_T(filled)(ny, REF_GARBAGE), *dX = REF_T(filled)(nX, 0);
    REF_RUN(REF_OP(wx_cpu_irfft2_forward)(ctx, y, X, b, h, w, c));
    REF_T(check)("irfft2", "y", y, f);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dX, nX, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_irfft2_backward)(ctx, dX, dy, b, h, w, c));
    }
    REF_T(check)("irfft2", "dX", dX, f);
    free(X), free(dy), free(y), free(dX);
}

typedef struct {
    REF_R *w1, *b1, *w2, *b2, *dw1, *db1, *dw2, *db2;
    int64_t nw1, nb1, nw2, nb2;
} REF_T(params);

static void REF_T(params_load)(REF_T(params) *p, const wx_fixture *f) {
    p->nw1 = wx_fixture_get(f, "w1")->size, p->nb1 = wx_fixture_get(f, "b1")->size;
    p->nw2 = wx_fixture_get(f, "w2")->size, p->nb2 = wx_fixture_get(f, "b2")->size;
    p->w1 = REF_T(load)(f, "w1"), p->b1 = REF_T(load)(f, "b1");
    p->w2 = REF_T(load)(f, "w2"), p->b2 = REF_T(load)(f, "b2");
    p->dw1 = REF_T(filled)(p->nw1, REF_PREFILL), p->db1 = REF_T(filled)(p->nb1, REF_PREFILL);
    p->dw2 = REF_T(filled)(p->nw2, REF_PREFILL), p->db2 = REF_T(filled)(p->nb2, REF_PREFILL);
}

static void REF_T(params_check)(const char *op, const REF_T(params) *p, const wx_fixture *f) {
    REF_T(check_acc)(op, "dw1", p->dw1, f);
    REF_T(check_acc)(op, "db1", p->db1, f);
    REF_T(check_acc)(op, "dw2", p->dw2, f);
    REF_T(check_acc)(op, "db2", p->db2, f);
}

static void REF_T(params_free)(REF_T(params) *p) {
    free(p->w1), free(p->b1), free(p->w2), free(p->b2);
    free(p->dw1), free(p->db1), free(p->dw2), free(p->db2);
}

static uint8_t *REF_T(mask_load)(const wx_fixture *f, int64_t *kept) {
    const wx_fixture_tensor *t = wx_fixture_get(f, "mask");
    uint8_t *m = malloc((size_t)t->size);
    *kept = 0;
    for (int64_t i = 0; i < t->size; i++) *kept += (m[i] = t->data[i] != 0);
    return m;
}

/* The filter alone against spectral_afno_{full,half}.wxfx. */
static void REF_T(afno)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *ts = wx_fixture_get(f, "sizes");
    int64_t b = (int64_t)ts->data[0], h = (int64_t)ts->data[1], wf = (int64_t)ts->data[2];
    int64_t c = (int64_t)ts->data[3], nb = (int64_t)ts->data[4], fac = (int64_t)ts->data[5], m;
    double lam = wx_fixture_scalar(f, "lambda");
    int64_t nX = b * h * wf * c * 2;
    uint8_t *mask = REF_T(mask_load)(f, &m);
    REF_T(params) p;
    REF_T(params_load)(&p, f);
    REF_R *X = REF_T(load)(f, "X"), *dY = REF_T(load)(f, "dY");
    REF_R *Y = REF_T(filled)(nX, REF_GARBAGE), *dX = REF_T(filled)(nX, 0);
    REF_R *saved = REF_T(filled)(wx_afno_filter_saved_len(b, m, c, fac), REF_GARBAGE);
    REF_RUN(REF_OP(wx_cpu_afno_filter_forward)(ctx, Y, saved, X, p.w1, p.b1, p.w2, p.b2, mask, b,
                                               h, wf, c, nb, fac, lam));
    REF_T(check)("afno_filter", "Y", Y, f);
    for (int r = 0; r < REF_REPS; r++) {
        REF_T(refill)(dX, nX, REF_GARBAGE);
        REF_RUN(REF_OP(wx_cpu_afno_filter_backward)(ctx, dX, p.dw1, p.db1, p.dw2, p.db2, dY, saved,
                                                    X, p.w1, p.w2, mask, b, h, wf, c, nb, fac,
                                                    lam));
    }
    REF_T(check)("afno_filter", "dX", dX, f);
    REF_T(params_check)("afno_filter", &p, f);
    /* dX is nullable: the parameter grads must not depend on it. */
    REF_T(params) q;
    REF_T(params_load)(&q, f);
    for (int r = 0; r < REF_REPS; r++)
        REF_RUN(REF_OP(wx_cpu_afno_filter_backward)(ctx, NULL, q.dw1, q.db1, q.dw2, q.db2, dY,
                                                    saved, X, q.w1, q.w2, mask, b, h, wf, c, nb,
                                                    fac, lam));
    REF_T(params_check)("afno_filter (dX NULL)", &q, f);
    REF_T(params_free)(&p), REF_T(params_free)(&q);
    free(mask), free(X), free(dY), free(Y), free(dX), free(saved);
}

/* AFNO2D spectral path y = irfft2(filter(rfft2(x))) and its backward chain, against
 * spectral_afno2d.wxfx. */
static void REF_T(afno2d)(wx_ctx *ctx, const wx_fixture *f) {
    const wx_fixture_tensor *ts = wx_fixture_get(f, "sizes");
    int64_t b = (int64_t)ts->data[0], h = (int64_t)ts->data[1], w = (int64_t)ts->data[2];
    int64_t c = (int64_t)ts->data[3], nb = (int64_t)ts->data[4], fac = (int64_t)ts->data[5], m;
    int64_t wf = w / 2 + 1, nx = b * h * w * c, nX = b * h * wf * c * 2;
    double lam = wx_fixture_scalar(f, "lambda");
    uint8_t *mask = REF_T(mask_load)(f, &m);
    REF_T(params) p;
    REF_T(params_load)(&p, f);
    REF_R *x = REF_T(load)(f, "x"), *dy = REF_T(load)(f, "dy"), *y = REF_T(filled)(nx, 0);
    REF_R *dx = REF_T(filled)(nx, 0), *X = REF_T(filled)(nX, 0), *Y = REF_T(filled)(nX, 0);
    REF_R *dX = REF_T(filled)(nX, 0), *dY = REF_T(filled)(nX, 0);
    REF_R *saved = REF_T(filled)(wx_afno_filter_saved_len(b, m, c, fac), 0);
    REF_RUN(REF_OP(wx_cpu_rfft2_forward)(ctx, X, x, b, h, w, c));
    REF_RUN(REF_OP(wx_cpu_afno_filter_forward)(ctx, Y, saved, X, p.w1, p.b1, p.w2, p.b2, mask, b,
                                               h, wf, c, nb, fac, lam));
    REF_RUN(REF_OP(wx_cpu_irfft2_forward)(ctx, y, Y, b, h, w, c));
    REF_T(check)("afno2d", "y", y, f);
    for (int r = 0; r < REF_REPS; r++) {
        REF_RUN(REF_OP(wx_cpu_irfft2_backward)(ctx, dY, dy, b, h, w, c));
        REF_RUN(REF_OP(wx_cpu_afno_filter_backward)(ctx, dX, p.dw1, p.db1, p.dw2, p.db2, dY, saved,
                                                    X, p.w1, p.w2, mask, b, h, wf, c, nb, fac,
                                                    lam));
        REF_RUN(REF_OP(wx_cpu_rfft2_backward)(ctx, dx, dX, b, h, w, c));
    }
    REF_T(check)("afno2d", "dx", dx, f);
    REF_T(params_check)("afno2d", &p, f);
    REF_T(params_free)(&p);
    free(mask), free(x), free(dy), free(y), free(dx), free(X), free(Y), free(dX), free(dY);
    free(saved);
}
