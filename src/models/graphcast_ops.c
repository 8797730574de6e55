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

static int64_t nmax(const wx_gc *m) { return max2(m->ng, m->nm); }
static int64_t emax(const wx_gc *m) { return max2(m->eg, max2(m->em, m->ed)); }

static const wx_edge_set *edge_set(const wx_gc *m, int i) {
    return i == 0 ? &m->g.g2m : (i == 1 ? &m->g.mesh : &m->g.m2g);
}

static wx_status up_i32(const wx_gc *m, int32_t *dst, const int32_t *src, int64_t n) {
    return n > 0 ? m->be->copy_h2d(m->ctx, dst, src, sizeof(int32_t) * (size_t)n) : WX_OK;
}

static wx_status up_f32(const wx_gc *m, float *dst, const float *src, int64_t n) {
    return n > 0 ? m->be->copy_h2d(m->ctx, dst, src, sizeof(float) * (size_t)n) : WX_OK;
}

/* Per-sample data (n) repeated for every sample into dst (B, n). */
static wx_status up_repeat(wx_gc *m, float *dst, const float *src, int64_t n) {
    for (int64_t q = 0; q < m->max_batch; q++) WX_TRY(up_f32(m, dst + q * n, src, n));
    return WX_OK;
}

/* dst (B·n) = src (n) + q·off for sample q: one sample's indices shifted to sample q's rows. */
static wx_status up_index_batched(wx_gc *m, int32_t *dst, const int32_t *src, int64_t n,
                                  int64_t off) {
    int32_t *h = m->ops->istage;
    for (int64_t q = 0; q < m->max_batch; q++)
        for (int64_t j = 0; j < n; j++) h[q * n + j] = (int32_t)(src[j] + q * off);
    return up_i32(m, dst, h, m->max_batch * n);
}

/* A CSR (row_ptr (nr+1), perm (E)) over B samples: (B·nr+1) and (B·E), sample q's rows after
 * sample q−1's, its edges offset by q·E; every prefix of b samples is the b-sample CSR. */
static wx_status up_csr_batched(wx_gc *m, int32_t *ptr, int32_t *perm, const int32_t *ptr1,
                                const int32_t *perm1, int64_t nr, int64_t E) {
    int32_t *h = m->ops->istage;
    for (int64_t q = 0; q < m->max_batch; q++)
        for (int64_t r = 0; r < nr; r++) h[q * nr + r] = (int32_t)(ptr1[r] + q * E);
    h[m->max_batch * nr] = (int32_t)(m->max_batch * E);
    WX_TRY(up_i32(m, ptr, h, m->max_batch * nr + 1));
    return up_index_batched(m, perm, perm1, E, E);
}

wx_status wx_gc_ops_upload(wx_gc *m) {
    wx_gc_ops *o = m->ops;
    for (int i = 0; i < 3; i++) {
        const wx_edge_set *es = edge_set(m, i);
        const int64_t E = es->n_edges, ns = es->n_senders, nr = es->n_receivers;
        WX_TRY(up_index_batched(m, o->snd[i], es->senders, E, ns));
        WX_TRY(up_index_batched(m, o->rcv[i], es->receivers, E, nr));
        WX_TRY(up_csr_batched(m, o->rptr[i], o->rperm[i], es->row_ptr, es->perm, nr, E));
        if (!m->predict_only) /* senders' CSR: backward only */
            WX_TRY(up_csr_batched(m, o->sptr[i], o->sperm[i], m->snd_ptr[i], m->snd_perm[i], ns,
                                  E));
    }
    WX_TRY(up_repeat(m, o->grid_feat, m->g.grid_features, m->ng * 3));
    /* mesh-node input [0 … 0 | structural] per sample, built on the host once */
    const int64_t fin = m->cin + 3, nmin = m->nm * fin;
    memset(o->stage, 0, sizeof(float) * (size_t)nmin);
    for (int64_t v = 0; v < m->nm; v++)
        memcpy(o->stage + v * fin + m->cin, m->g.mesh_features + 3 * v, 3 * sizeof(float));
    WX_TRY(up_repeat(m, m->in.min, o->stage, nmin));
    if (m->chunk_rows) WX_TRY(wx_gc_pred_upload(m));
    WX_TRY(up_repeat(m, m->in.fg2m, m->g.g2m.features, m->eg * 4));
    WX_TRY(up_repeat(m, m->in.fmesh, m->g.mesh.features, m->em * 4));
    return up_repeat(m, m->in.fm2g, m->g.m2g.features, m->ed * 4);
}

/* Every backend buffer of wx_gc_ops_init: count only when base is NULL (bytes added to *bytes),
 * else allocate into o. */
static wx_status ops_buffers(wx_gc *m, wx_gc_ops *o, int64_t *bytes) {
    const int64_t B = m->max_batch, D = m->D;
    for (int i = 0; i < 3; i++) {
        const wx_edge_set *es = edge_set(m, i);
        const int64_t E = B * es->n_edges + 1;
        WX_GC_OPS_BUF(o->snd[i], E, "senders");
        WX_GC_OPS_BUF(o->rcv[i], E, "receivers");
        WX_GC_OPS_BUF(o->rptr[i], B * es->n_receivers + 1, "receiver CSR");
        WX_GC_OPS_BUF(o->rperm[i], E, "receiver CSR order");
        if (m->predict_only) continue; /* the senders' CSR is for backward */
        WX_GC_OPS_BUF(o->sptr[i], B * es->n_senders + 1, "sender CSR");
        WX_GC_OPS_BUF(o->sperm[i], E, "sender CSR order");
    }
    WX_GC_OPS_BUF(o->grid_feat, B * m->ng * 3 + 1, "grid features");
    WX_GC_OPS_BUF(o->w3, 3 * D * D, "layer-0 weight blocks");
    if (!m->predict_only) WX_GC_OPS_BUF(o->dw3, 3 * D * D, "layer-0 weight-gradient blocks");
    if (m->chunk_rows) { /* predict-only: the node projections in the arena's s.gb (carved for
                          * them), the chunks' CSRs (graphcast_ops_pred.c) */
        o->own_pn = 0;
        if (!bytes) o->pa = m->s.gb, o->pb = m->s.gb + max2(B * nmax(m), m->chunk_rows) * D;
        return wx_gc_pred_buffers(m, o, bytes);
    }
    /* the node projections fit in the arena's s.gb (B·max E rows, unused on this path) when
     * 2·max N ≤ max E, as in every GraphCast graph (m2g alone has 3 edges per grid node) */
    if (2 * nmax(m) <= emax(m)) {
        o->own_pn = 0;
        if (!bytes) o->pa = m->s.gb, o->pb = m->s.gb + B * nmax(m) * D;
    } else {
        o->own_pn = 1;
        WX_GC_OPS_BUF(o->pa, B * nmax(m) * D, "node projections");
        WX_GC_OPS_BUF(o->pb, B * nmax(m) * D, "node projections");
    }
    return WX_OK;
}

int64_t wx_gc_ops_bytes(const wx_gc *m) {
    wx_gc_ops o;
    int64_t bytes = 0;
    (void)ops_buffers((wx_gc *)m, &o, &bytes); /* counting only: neither m nor o is touched */
    return bytes;
}

wx_status wx_gc_ops_init(wx_gc *m) {
    /* batched indices are int32: B·E edges and B·N nodes must fit */
    const int64_t rows = m->max_batch * max2(emax(m), nmax(m));
    if (rows >= INT32_MAX)
        return wx_error_set(WX_ERR_USAGE, "graphcast: batch %lld × %lld rows: the ops path's "
                            "int32 graph indices hold at most %d rows", (long long)m->max_batch,
                            (long long)max2(emax(m), nmax(m)), INT32_MAX - 1);
    wx_gc_ops *o = wx_calloc(1, sizeof *o);
    m->ops = o;
    WX_TRY(ops_buffers(m, o, NULL));
    o->stage = wx_malloc(sizeof(float) * (size_t)(m->nm * (m->cin + 3) + 1));
    o->istage = wx_malloc(sizeof(int32_t) * (size_t)(rows + 1));
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
    be->mem_free(m->ctx, o->w3), be->mem_free(m->ctx, o->dw3);
    for (int i = 0; i < 3; i++) be->mem_free(m->ctx, o->cptr[i]), be->mem_free(m->ctx, o->cperm[i]);
    be->mem_free(m->ctx, o->ident);
    if (o->own_pn) be->mem_free(m->ctx, o->pa), be->mem_free(m->ctx, o->pb);
    free(o->stage);
    free(o->istage);
    free(o);
    m->ops = NULL;
}

/* ---- one MLP ---- */

/* The column blocks of w (fo, parts·D) into dst (parts, fo, D): layer 0 of a NODE (2 parts) or
 * EDGE (3 parts) MLP split by input. A copy of fo·parts·D values: tiny next to the rows. */
static wx_status split_cols(wx_gc *m, float *dst, const float *w, int parts, int64_t fo) {
    const int64_t D = m->D;
    float *blk[3] = {dst, dst + fo * D, dst + 2 * fo * D};
    const int64_t cs[3] = {D, D, D};
    WX_ASSERT(fo <= D && parts >= 2 && parts <= 3);
    return m->be->concat_backward(m->ctx, blk, w, cs, parts, fo);
}

wx_status wx_gc_ops_split_w0(wx_gc *m, const wx_gc_mlp *k, int parts, int64_t fo) {
    return split_cols(m, m->ops->w3, P(k->w[0]), parts, fo);
}

/* pre (n, fo) = layer 0 of MLP k on the input, bias included (no activation):
 *   PLAIN  x·W0ᵀ + b0
 *   NODE   v·Wvᵀ + b0 + agg·Waᵀ                               W0 = [Wv | Wa]
 *   EDGE   e·Weᵀ + b0 + (vs·Wsᵀ)[snd] + (vr·Wrᵀ)[rcv]         W0 = [We | Ws | Wr]
 * The node projections (ops->pa, ops->pb: (b·N, fo)) are computed once per node and gathered per
 * edge into s.ga; ops->w3 holds W0's blocks. */
static wx_status layer0_forward(wx_gc *m, const wx_gc_mlp *k, float *pre, int64_t fo,
                                const wx_gc_mlp_in *in, int64_t n) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    wx_gc_ops *o = m->ops;
    const int64_t D = m->D;
    if (in->kind == WX_GC_IN_PLAIN)
        return be->linear_forward(ctx, pre, in->x, P(k->w[0]), P(k->b[0]), n, k->in, fo);
    const float *w = o->w3, *w1 = o->w3 + fo * D, *w2 = o->w3 + 2 * fo * D;
    if (in->kind == WX_GC_IN_EDGE_PROJ) {
        /* the EDGE sum below with the projections made by the caller (w3 split by it) */
        WX_ASSERT(k->in == 3 * D);
        WX_TRY(be->linear_forward(ctx, pre, in->x, w, P(k->b[0]), n, D, fo));
        WX_TRY(be->gather_rows_forward(ctx, m->s.ga, in->vs, in->isnd, n, fo));
        WX_TRY(be->add_forward(ctx, pre, pre, m->s.ga, n * fo));
        WX_TRY(be->gather_rows_forward(ctx, m->s.ga, in->vr, in->ircv, n, fo));
        return be->add_forward(ctx, pre, pre, m->s.ga, n * fo);
    }
    if (in->kind == WX_GC_IN_NODE) {
        WX_ASSERT(k->in == 2 * D);
        WX_TRY(split_cols(m, o->w3, P(k->w[0]), 2, fo));
        WX_TRY(be->linear_forward(ctx, pre, in->x, w, P(k->b[0]), n, D, fo));
        WX_TRY(be->linear_forward(ctx, o->pa, in->agg, w1, NULL, n, D, fo));
        return be->add_forward(ctx, pre, pre, o->pa, n * fo);
    }
    const wx_edge_set *es = in->es;
    const int i = wx_gc_ops_edge_index(m, es);
    const int64_t ns = in->b * es->n_senders, nr = in->b * es->n_receivers;
    WX_ASSERT(k->in == 3 * D && n == in->b * es->n_edges);
    WX_TRY(split_cols(m, o->w3, P(k->w[0]), 3, fo));
    WX_TRY(be->linear_forward(ctx, pre, in->x, w, P(k->b[0]), n, D, fo));
    WX_TRY(be->linear_forward(ctx, o->pa, in->vs, w1, NULL, ns, D, fo));
    WX_TRY(be->linear_forward(ctx, o->pb, in->vr, w2, NULL, nr, D, fo));
    WX_TRY(be->gather_rows_forward(ctx, m->s.ga, o->pa, o->snd[i], n, fo));
    WX_TRY(be->add_forward(ctx, pre, pre, m->s.ga, n * fo));
    WX_TRY(be->gather_rows_forward(ctx, m->s.ga, o->pb, o->rcv[i], n, fo));
    return be->add_forward(ctx, pre, pre, m->s.ga, n * fo);
}

/* Linear → SiLU → … → Linear (→ LayerNorm). Tape: pre-activations of the hidden layers, z and the
 * LayerNorm statistics (as wx_gc_mlp_forward). Scratch: s.h0, s.h1 (activations), s.ga,
 * ops->pa, ops->pb, ops->w3. */
wx_status wx_gc_ops_mlp_forward(wx_gc *m, const wx_gc_mlp *k, float *y, const wx_gc_mlp_tape *t,
                                const wx_gc_mlp_in *in, int64_t n) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const int last = k->nlin - 1, ln = k->ln_w >= 0;
    const float *a = NULL;
    for (int i = 0; i <= last; i++) {
        const int64_t fi = i == 0 ? k->in : k->hidden, fo = i == last ? k->out : k->hidden;
        float *dst = i < last ? t->pre[i] : (ln ? t->z : y);
        if (i == 0)
            WX_TRY(layer0_forward(m, k, dst, fo, in, n));
        else
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

/* Differentiates layer0_forward from dpre (n, fo): parameter grads +=, input grads as
 * wx_gc_mlp_in says. W0's gradient blocks are accumulated in ops->dw3 (copied out of G(W0) and
 * written back, so G(W0) += exactly as an in-place accumulation). dpre is read before any input
 * grad is written. Scratch: s.ga (edge rows), ops->pa, ops->pb, ops->w3, ops->dw3. */
static wx_status layer0_backward(wx_gc *m, const wx_gc_mlp *k, const float *dpre, int64_t fo,
                                 const wx_gc_mlp_in *in, int64_t n) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    wx_gc_ops *o = m->ops;
    const int64_t D = m->D;
    if (in->kind == WX_GC_IN_PLAIN)
        return be->linear_backward(ctx, in->dx, G(k->w[0]), G(k->b[0]), dpre, in->x, P(k->w[0]),
                                   n, k->in, fo);
    const int parts = in->kind == WX_GC_IN_NODE ? 2 : 3;
    float *w = o->w3, *w1 = o->w3 + fo * D, *w2 = o->w3 + 2 * fo * D;
    float *dw = o->dw3, *dw1 = o->dw3 + fo * D, *dw2 = o->dw3 + 2 * fo * D;
    WX_TRY(split_cols(m, o->w3, P(k->w[0]), parts, fo));
    WX_TRY(split_cols(m, o->dw3, G(k->w[0]), parts, fo));
    float *dx = in->dx && in->dx_acc ? (parts == 2 ? o->pa : m->s.ga) : in->dx;
    if (parts == 2) {
        /* pre = v·Wvᵀ + b0 + agg·Waᵀ: dagg first (dpre may be in->dx, read before it changes) */
        WX_TRY(be->linear_backward(ctx, in->dagg, dw1, NULL, dpre, in->agg, w1, n, D, fo));
        WX_TRY(be->linear_backward(ctx, dx, dw, G(k->b[0]), dpre, in->x, w, n, D, fo));
        if (dx && dx != in->dx) WX_TRY(be->add_forward(ctx, in->dx, in->dx, dx, n * D));
    } else {
        /* pre = e·Weᵀ + b0 + (vs·Wsᵀ)[snd] + (vr·Wrᵀ)[rcv]: the projections' grads are the sums
         * of dpre over each node's sent / received edges (CSR orders: fixed, no atomics) */
        const wx_edge_set *es = in->es;
        const int i = wx_gc_ops_edge_index(m, es);
        const int64_t ns = in->b * es->n_senders, nr = in->b * es->n_receivers;
        WX_TRY(be->linear_backward(ctx, dx, dw, G(k->b[0]), dpre, in->x, w, n, D, fo));
        if (dx && dx != in->dx) WX_TRY(be->add_forward(ctx, in->dx, in->dx, dx, n * D));
        WX_TRY(be->segment_sum_forward(ctx, o->pa, dpre, o->sptr[i], o->sperm[i], ns, n, fo));
        float *dvs = in->dvs_acc ? o->pb : in->dvs;
        WX_TRY(be->linear_backward(ctx, dvs, dw1, NULL, o->pa, in->vs, w1, ns, D, fo));
        if (in->dvs_acc) WX_TRY(be->add_forward(ctx, in->dvs, in->dvs, o->pb, ns * D));
        WX_TRY(be->segment_sum_forward(ctx, o->pa, dpre, o->rptr[i], o->rperm[i], nr, n, fo));
        WX_TRY(be->linear_backward(ctx, o->pb, dw2, NULL, o->pa, in->vr, w2, nr, D, fo));
        WX_TRY(be->add_forward(ctx, in->dvr, in->dvr, o->pb, nr * D));
    }
    float *const blk[3] = {dw, dw1, dw2};
    const float *cblk[3] = {blk[0], blk[1], blk[2]};
    const int64_t cs[3] = {D, D, D};
    return be->concat_forward(ctx, G(k->w[0]), cblk, cs, parts, fo);
}

/* Differentiates wx_gc_ops_mlp_forward: parameter grads +=, input grads as wx_gc_mlp_in says.
 * dy (n, out) is read before any input grad is written (it may be the node MLP's dx, as in
 * graphcast_backward.c's step_backward), and must not be scratch named above or s.dz, s.dh. */
wx_status wx_gc_ops_mlp_backward(wx_gc *m, const wx_gc_mlp *k, const float *dy,
                                 const wx_gc_mlp_tape *t, const wx_gc_mlp_in *in, int64_t n) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
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
    return layer0_backward(m, k, dcur, k->nlin == 1 ? k->out : k->hidden, in, n);
}
