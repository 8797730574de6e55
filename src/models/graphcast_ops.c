/* GraphCast ops path (graphcast_ops.h): device-side graph and static inputs, and one MLP forward
 * and backward through backend-table ops. The encoder/processor/decoder that call these are in
 * graphcast_ops_net.c. */
#include "models/graphcast_ops.h"

#include <stdlib.h>
#include <string.h>

#define P(i) wx_params_tensor(&m->params, (i))
#define G(i) wx_params_grad(&m->params, (i))

static int64_t max2(int64_t a, int64_t b) { return a > b ? a : b; }

int wx_gc_ops_edge_index(const wx_gc *m, const wx_edge_set *es) {
    return es == &m->g.g2m ? 0 : (es == &m->g.mesh ? 1 : 2);
}

/* Rows of the largest MLP application (every edge or node set, all samples). */
static int64_t ops_rows(const wx_gc *m) {
    return m->max_batch * max2(max2(m->eg, max2(m->em, m->ed)), max2(m->ng, m->nm));
}

static const wx_edge_set *edge_set(const wx_gc *m, int i) {
    return i == 0 ? &m->g.g2m : (i == 1 ? &m->g.mesh : &m->g.m2g);
}

static wx_status up_i32(const wx_gc *m, int32_t *dst, const int32_t *src, int64_t n) {
    return n > 0 ? m->be->copy_h2d(m->ctx, dst, src, sizeof(int32_t) * (size_t)n) : WX_OK;
}

static wx_status up_f32(const wx_gc *m, float *dst, const float *src, int64_t n) {
    return n > 0 ? m->be->copy_h2d(m->ctx, dst, src, sizeof(float) * (size_t)n) : WX_OK;
}

/* Edge features (E, 4) repeated for every sample into dst (B, E, 4). */
static wx_status up_edge_features(wx_gc *m, float *dst, const wx_edge_set *es) {
    const int64_t n = es->n_edges * 4;
    for (int64_t q = 0; q < m->max_batch; q++) WX_TRY(up_f32(m, dst + q * n, es->features, n));
    return WX_OK;
}

wx_status wx_gc_ops_upload(wx_gc *m) {
    wx_gc_ops *o = m->ops;
    for (int i = 0; i < 3; i++) {
        const wx_edge_set *es = edge_set(m, i);
        WX_TRY(up_i32(m, o->snd[i], es->senders, es->n_edges));
        WX_TRY(up_i32(m, o->rcv[i], es->receivers, es->n_edges));
        WX_TRY(up_i32(m, o->rptr[i], es->row_ptr, es->n_receivers + 1));
        WX_TRY(up_i32(m, o->rperm[i], es->perm, es->n_edges));
        WX_TRY(up_i32(m, o->sptr[i], m->snd_ptr[i], es->n_senders + 1));
        WX_TRY(up_i32(m, o->sperm[i], m->snd_perm[i], es->n_edges));
    }
    WX_TRY(up_f32(m, o->grid_feat, m->g.grid_features, m->ng * 3));
    /* mesh-node input [0 … 0 | structural] per sample, built on the host once */
    const int64_t fin = m->cin + 3, nmin = m->nm * fin;
    memset(o->stage, 0, sizeof(float) * (size_t)nmin);
    for (int64_t v = 0; v < m->nm; v++)
        memcpy(o->stage + v * fin + m->cin, m->g.mesh_features + 3 * v, 3 * sizeof(float));
    for (int64_t q = 0; q < m->max_batch; q++) WX_TRY(up_f32(m, m->in.min + q * nmin, o->stage, nmin));
    WX_TRY(up_edge_features(m, m->in.fg2m, &m->g.g2m));
    WX_TRY(up_edge_features(m, m->in.fmesh, &m->g.mesh));
    return up_edge_features(m, m->in.fm2g, &m->g.m2g);
}

wx_status wx_gc_ops_init(wx_gc *m) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    wx_gc_ops *o = wx_calloc(1, sizeof *o);
    m->ops = o;
    const int64_t rows = ops_rows(m), D = m->D;
#define ALLOC(ptr, count, what)                                                           \
    do {                                                                                  \
        (ptr) = wx_backend_alloc(be, ctx, sizeof(*(ptr)) * (size_t)(count), "graphcast " what); \
        if (!(ptr)) return WX_ERR_RUN;                                                    \
    } while (0)
    for (int i = 0; i < 3; i++) {
        const wx_edge_set *es = edge_set(m, i);
        ALLOC(o->snd[i], es->n_edges + 1, "senders");
        ALLOC(o->rcv[i], es->n_edges + 1, "receivers");
        ALLOC(o->rptr[i], es->n_receivers + 1, "receiver CSR");
        ALLOC(o->rperm[i], es->n_edges + 1, "receiver CSR order");
        ALLOC(o->sptr[i], es->n_senders + 1, "sender CSR");
        ALLOC(o->sperm[i], es->n_edges + 1, "sender CSR order");
    }
    ALLOC(o->grid_feat, m->ng * 3 + 1, "grid features");
    ALLOC(o->cat, rows * 3 * D, "MLP input");
    ALLOC(o->dcat, rows * 3 * D, "MLP input gradient");
    ALLOC(o->ta, rows * D, "scratch");
    ALLOC(o->tb, rows * D, "scratch");
#undef ALLOC
    o->stage = wx_malloc(sizeof(float) * (size_t)(m->nm * (m->cin + 3) + 1));
    return wx_gc_ops_upload(m);
}

void wx_gc_ops_free(wx_gc *m) {
    wx_gc_ops *o = m->ops;
    if (!o) return;
    const wx_backend *be = m->be;
    for (int i = 0; i < 3; i++) {
        be->mem_free(m->ctx, o->snd[i]), be->mem_free(m->ctx, o->rcv[i]);
        be->mem_free(m->ctx, o->rptr[i]), be->mem_free(m->ctx, o->rperm[i]);
        be->mem_free(m->ctx, o->sptr[i]), be->mem_free(m->ctx, o->sperm[i]);
    }
    be->mem_free(m->ctx, o->grid_feat);
    be->mem_free(m->ctx, o->cat), be->mem_free(m->ctx, o->dcat);
    be->mem_free(m->ctx, o->ta), be->mem_free(m->ctx, o->tb);
    free(o->stage);
    free(o);
    m->ops = NULL;
}

/* ---- one MLP ---- */

/* The layer-0 input X (n, k->in): PLAIN x itself; NODE [x, agg] and EDGE [e, vs[snd], vr[rcv]]
 * concatenated into ops->cat (the gathered rows in s.ga, s.gb; graph ops run per sample). */
static wx_status mlp_input(wx_gc *m, const wx_gc_mlp *k, const wx_gc_mlp_in *in, int64_t n,
                           const float **X) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    wx_gc_ops *o = m->ops;
    const int64_t D = m->D;
    switch (in->kind) {
    case WX_GC_IN_PLAIN:
        *X = in->x;
        return WX_OK;
    case WX_GC_IN_NODE: {
        const float *xs[2] = {in->x, in->agg};
        const int64_t cs[2] = {D, D};
        WX_ASSERT(k->in == 2 * D);
        *X = o->cat;
        return be->concat_forward(ctx, o->cat, xs, cs, 2, n);
    }
    default: {
        const wx_edge_set *es = in->es;
        const int i = wx_gc_ops_edge_index(m, es);
        const int64_t E = es->n_edges, ns = es->n_senders, nr = es->n_receivers;
        WX_ASSERT(k->in == 3 * D && n == in->b * E);
        for (int64_t q = 0; q < in->b; q++) {
            WX_TRY(be->gather_rows_forward(ctx, m->s.ga + q * E * D, in->vs + q * ns * D,
                                           o->snd[i], E, D));
            WX_TRY(be->gather_rows_forward(ctx, m->s.gb + q * E * D, in->vr + q * nr * D,
                                           o->rcv[i], E, D));
        }
        const float *xs[3] = {in->x, m->s.ga, m->s.gb};
        const int64_t cs[3] = {D, D, D};
        *X = o->cat;
        return be->concat_forward(ctx, o->cat, xs, cs, 3, n);
    }
    }
}

/* Linear → SiLU → … → Linear (→ LayerNorm). Tape: pre-activations of the hidden layers, z and the
 * LayerNorm statistics (as wx_gc_mlp_forward). Scratch: s.h0, s.h1 (activations), ops->cat and
 * for edges s.ga, s.gb. */
wx_status wx_gc_ops_mlp_forward(wx_gc *m, const wx_gc_mlp *k, float *y, const wx_gc_mlp_tape *t,
                                const wx_gc_mlp_in *in, int64_t n) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const int last = k->nlin - 1, ln = k->ln_w >= 0;
    const float *a;
    WX_TRY(mlp_input(m, k, in, n, &a));
    for (int i = 0; i <= last; i++) {
        const int64_t fi = i == 0 ? k->in : k->hidden, fo = i == last ? k->out : k->hidden;
        float *dst = i < last ? t->pre[i] : (ln ? t->z : y);
        WX_TRY(be->linear_forward(ctx, dst, a, P(k->w[i]), P(k->b[i]), n, fi, fo));
        if (i < last) {
            float *act = i % 2 == 0 ? m->s.h0 : m->s.h1;
            WX_TRY(be->silu_forward(ctx, act, dst, n * fo));
            a = act;
        }
    }
    if (!ln) return WX_OK;
    return be->layernorm_forward(ctx, y, t->mean, t->rstd, t->z, P(k->ln_w), P(k->ln_b), n, k->out,
                                 WX_GC_LN_EPS);
}

/* Differentiates wx_gc_ops_mlp_forward: parameter grads +=, input grads as wx_gc_mlp_in says.
 * dy (n, out) is read before any input grad is written (it may be the node MLP's dx, as in
 * graphcast_backward.c's step_backward), and must not be scratch named above or s.dz, s.dh. */
wx_status wx_gc_ops_mlp_backward(wx_gc *m, const wx_gc_mlp *k, const float *dy,
                                 const wx_gc_mlp_tape *t, const wx_gc_mlp_in *in, int64_t n) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    wx_gc_ops *o = m->ops;
    const int64_t D = m->D;
    const int last = k->nlin - 1;
    const float *dcur = dy;
    if (k->ln_w >= 0) {
        /* y = LN(z) */
        WX_TRY(be->layernorm_backward(ctx, m->s.dz, G(k->ln_w), G(k->ln_b), dy, t->z, t->mean,
                                      t->rstd, P(k->ln_w), n, k->out));
        dcur = m->s.dz;
    }
    for (int i = last; i >= 1; i--) {
        /* z_i = a_i·W_iᵀ + b_i, a_i = SiLU(pre_{i−1}) (recomputed into s.h0) */
        const int64_t fo = i == last ? k->out : k->hidden, fi = k->hidden;
        float *next = dcur == m->s.dh ? m->s.dz : m->s.dh;
        WX_TRY(be->silu_forward(ctx, m->s.h0, t->pre[i - 1], n * fi));
        WX_TRY(be->linear_backward(ctx, m->s.h1, G(k->w[i]), G(k->b[i]), dcur, m->s.h0,
                                   P(k->w[i]), n, fi, fo));
        WX_TRY(be->silu_backward(ctx, next, m->s.h1, t->pre[i - 1], n * fi));
        dcur = next;
    }
    /* pre_0 = X·W_0ᵀ + b_0 with X rebuilt (the MLP input is not on the tape) */
    const int64_t fo0 = k->nlin == 1 ? k->out : k->hidden;
    const float *X;
    WX_TRY(mlp_input(m, k, in, n, &X));
    if (in->kind == WX_GC_IN_PLAIN)
        return be->linear_backward(ctx, in->dx, G(k->w[0]), G(k->b[0]), dcur, X, P(k->w[0]), n,
                                   k->in, fo0);
    WX_TRY(be->linear_backward(ctx, o->dcat, G(k->w[0]), G(k->b[0]), dcur, X, P(k->w[0]), n,
                               k->in, fo0));
    if (in->kind == WX_GC_IN_NODE) {
        /* X = [x, agg] */
        float *dxs[2] = {in->dx && in->dx_acc ? o->ta : in->dx, in->dagg};
        const int64_t cs[2] = {D, D};
        WX_TRY(be->concat_backward(ctx, dxs, o->dcat, cs, 2, n));
        if (in->dx && in->dx_acc) WX_TRY(be->add_forward(ctx, in->dx, in->dx, o->ta, n * D));
        return WX_OK;
    }
    /* X = [e, vs[snd], vr[rcv]]: the gathered parts' grads are segment sums over each node's
     * sent / received edges (CSR orders: fixed, no atomics) */
    const wx_edge_set *es = in->es;
    const int i = wx_gc_ops_edge_index(m, es);
    const int64_t E = es->n_edges, ns = es->n_senders, nr = es->n_receivers, b = in->b;
    float *dxs[3] = {in->dx && in->dx_acc ? o->ta : in->dx, m->s.ga, m->s.gb};
    const int64_t cs[3] = {D, D, D};
    WX_TRY(be->concat_backward(ctx, dxs, o->dcat, cs, 3, n));
    if (in->dx && in->dx_acc) WX_TRY(be->add_forward(ctx, in->dx, in->dx, o->ta, n * D));
    float *ds = in->dvs_acc ? o->tb : in->dvs;
    for (int64_t q = 0; q < b; q++)
        WX_TRY(be->segment_sum_forward(ctx, ds + q * ns * D, m->s.ga + q * E * D, o->sptr[i],
                                       o->sperm[i], ns, E, D));
    if (in->dvs_acc) WX_TRY(be->add_forward(ctx, in->dvs, in->dvs, o->tb, b * ns * D));
    for (int64_t q = 0; q < b; q++)
        WX_TRY(be->segment_sum_forward(ctx, o->tb + q * nr * D, m->s.gb + q * E * D, o->rptr[i],
                                       o->rperm[i], nr, E, D));
    return be->add_forward(ctx, in->dvr, in->dvr, o->tb, b * nr * D);
}
