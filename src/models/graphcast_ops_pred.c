/* GraphCast ops path for models created for prediction only (max_tapes 0): the forward of
 * graphcast_ops_net.c in row chunks, so that no (edges, latent) buffer of the large grid↔mesh
 * edge sets exists and inference needs a fraction of a training model's memory.
 *
 * Every MLP runs over its rows (nodes or edges, all samples) in chunks of m->chunk_rows rows, a
 * multiple of WX_GC_CHUNK_ALIGN: the GEMM kernels work on fixed row blocks from a call's first
 * row, and a row's bits can depend on its place in a block (seen with OpenBLAS's sgemm), so
 * chunks start where the unchunked call has a block boundary and every row meets the same
 * kernels, the same ops in the same order as on the unchunked path. (OpenBLAS's AVX-512 builds
 * also switch to small-matrix kernels below a call size, so there a short chunk's rows can
 * differ in the last bits: docs/graphcast.md.) An edge set's embedded edges
 * (g2m, m2g: they feed nothing but the edge MLP) and its MLP outputs exist for one chunk only;
 * the node projections are made once per node set as before; the sums over each receiver's
 * edges continue from chunk to chunk in the receivers' CSR order (below); the processor's edge
 * residual is in place. So predictions are bitwise those of a training model on the CPU backend
 * with one thread (tests/unit/test_graphcast_predict.c, several chunk sizes). On cuBLAS a GEMM's
 * algorithm may change with the row count: there GPU results match the CPU within fp32
 * tolerance only. */
#include <stdlib.h>
#include <string.h>

#include "models/graphcast_ops.h"

static int64_t min2(int64_t a, int64_t b) { return a < b ? a : b; }

static const wx_edge_set *edge_set(const wx_gc *m, int i) {
    return i == 0 ? &m->g.g2m : (i == 1 ? &m->g.mesh : &m->g.m2g);
}

/* ---- the chunks' sums (host plan, device CSRs) ----
 * Chunk k of edge set i covers the batched edge rows [k·R, k·R + c) (R = chunk_rows) and adds
 * to the receivers they reach, rlo … rlo + nrr − 1 (batched numbering). Its segment sum runs
 * over X = [the chunk's edge-MLP outputs (c rows) | those receivers' running sums (nrr rows)],
 * each receiver's row list being its running sum first, then its edges of the chunk in
 * increasing order: the receivers' CSR order (ops/graph_csr.h), so every sum adds the same
 * values in the same order as the one segment sum of the unchunked path (0 + s = s exactly). */

static int64_t receiver(const wx_edge_set *es, int64_t j) { /* batched edge j's receiver */
    return j / es->n_edges * es->n_receivers + es->receivers[j % es->n_edges];
}

void wx_gc_pred_plan(wx_gc *m) {
    const int64_t R = m->chunk_rows;
    for (int i = 0; i < 3; i++) {
        const wx_edge_set *es = edge_set(m, i);
        const int64_t n = m->max_batch * es->n_edges, nch = (n + R - 1) / R;
        m->cs[i].nch = nch, m->cs[i].xrows = 1;
        m->cs[i].rlo = wx_malloc(sizeof(int64_t) * (size_t)(nch + 1));
        m->cs[i].nrr = wx_malloc(sizeof(int64_t) * (size_t)(nch + 1));
        m->cs[i].poff = wx_malloc(sizeof(int64_t) * (size_t)(nch + 1));
        m->cs[i].qoff = wx_malloc(sizeof(int64_t) * (size_t)(nch + 1));
        int64_t po = 0, qo = 0;
        for (int64_t k = 0; k < nch; k++) {
            const int64_t a = k * R, c = min2(R, n - a);
            int64_t lo = receiver(es, a), hi = lo;
            for (int64_t j = a; j < a + c; j++) {
                const int64_t r = receiver(es, j);
                lo = r < lo ? r : lo, hi = r > hi ? r : hi;
            }
            m->cs[i].rlo[k] = lo, m->cs[i].nrr[k] = hi - lo + 1;
            m->cs[i].poff[k] = po, m->cs[i].qoff[k] = qo;
            po += hi - lo + 2, qo += c + hi - lo + 1;
            m->cs[i].xrows = c + hi - lo + 1 > m->cs[i].xrows ? c + hi - lo + 1 : m->cs[i].xrows;
        }
        m->cs[i].poff[nch] = po, m->cs[i].qoff[nch] = qo;
    }
}

void wx_gc_pred_plan_free(wx_gc *m) {
    for (int i = 0; i < 3; i++) {
        free(m->cs[i].rlo), free(m->cs[i].nrr), free(m->cs[i].poff), free(m->cs[i].qoff);
        memset(&m->cs[i], 0, sizeof m->cs[i]);
    }
}

wx_status wx_gc_pred_buffers(wx_gc *m, wx_gc_ops *o, int64_t *bytes) {
    const int64_t B = m->max_batch, nmax = m->ng > m->nm ? m->ng : m->nm;
    for (int i = 0; i < 3; i++) {
        WX_GC_OPS_BUF(o->cptr[i], m->cs[i].poff[m->cs[i].nch] + 1, "chunk sums' CSR");
        WX_GC_OPS_BUF(o->cperm[i], m->cs[i].qoff[m->cs[i].nch] + 1, "chunk sums' CSR order");
    }
    WX_GC_OPS_BUF(o->ident, B * nmax + 1, "row numbers");
    return WX_OK;
}

wx_status wx_gc_pred_upload(wx_gc *m) {
    wx_gc_ops *o = m->ops;
    const int64_t B = m->max_batch, R = m->chunk_rows, nmax = m->ng > m->nm ? m->ng : m->nm;
    int64_t most = B * nmax + 1;
    for (int i = 0; i < 3; i++) {
        const int64_t q = m->cs[i].qoff[m->cs[i].nch];
        most = most > q ? most : q;
    }
    int32_t *h = wx_malloc(sizeof(int32_t) * (size_t)most), *pos = NULL;
    wx_status st = WX_OK;
    for (int i = 0; i < 3 && st == WX_OK; i++) {
        const wx_edge_set *es = edge_set(m, i);
        const int64_t n = B * es->n_edges, nch = m->cs[i].nch;
        int32_t *ptr = wx_malloc(sizeof(int32_t) * (size_t)(m->cs[i].poff[nch] + 1));
        for (int64_t k = 0; k < nch; k++) {
            const int64_t a = k * R, c = min2(R, n - a);
            const int64_t lo = m->cs[i].rlo[k], nrr = m->cs[i].nrr[k];
            int32_t *p = ptr + m->cs[i].poff[k], *q = h + m->cs[i].qoff[k];
            for (int64_t r = 0; r <= nrr; r++) p[r] = 1; /* each receiver's running sum */
            for (int64_t j = a; j < a + c; j++) p[receiver(es, j) - lo]++;
            int32_t run = 0; /* counts → offsets; p[nrr] = c + nrr */
            for (int64_t r = 0; r <= nrr; r++) {
                const int32_t cnt = r < nrr ? p[r] : 0;
                p[r] = run, run += cnt;
            }
            pos = realloc(pos, sizeof(int32_t) * (size_t)(nrr + 1));
            WX_ASSERT(pos != NULL);
            for (int64_t r = 0; r < nrr; r++) {
                q[p[r]] = (int32_t)(c + r); /* X row of receiver r's running sum */
                pos[r] = p[r] + 1;
            }
            for (int64_t j = a; j < a + c; j++) q[pos[receiver(es, j) - lo]++] = (int32_t)(j - a);
        }
        st = m->be->copy_h2d(m->ctx, o->cptr[i], ptr,
                             sizeof(int32_t) * (size_t)m->cs[i].poff[nch]);
        if (st == WX_OK)
            st = m->be->copy_h2d(m->ctx, o->cperm[i], h,
                                 sizeof(int32_t) * (size_t)m->cs[i].qoff[nch]);
        free(ptr);
    }
    for (int64_t j = 0; j < B * nmax && st == WX_OK; j++) h[j] = (int32_t)j;
    if (st == WX_OK)
        st = m->be->copy_h2d(m->ctx, o->ident, h, sizeof(int32_t) * (size_t)(B * nmax));
    free(h), free(pos);
    return st;
}

/* ---- the chunked forward ---- */

static wx_gc_mlp_in plain_in(const float *x) {
    return (wx_gc_mlp_in){.kind = WX_GC_IN_PLAIN, .x = x};
}

/* y (n, out) = MLP k (x (n, win)), row chunks; with res: y = res + MLP (y may be res). */
static wx_status plain_rows(wx_gc *m, const wx_gc_mlp *k, float *y, const float *x, int64_t win,
                            const float *res, int64_t n) {
    const wx_gc_mlp_tape *t = &m->pred.emb_grid; /* the shared predict tape */
    for (int64_t r0 = 0; r0 < n; r0 += m->chunk_rows) {
        const int64_t c = min2(m->chunk_rows, n - r0);
        wx_gc_mlp_in in = plain_in(x + r0 * win);
        if (!res) {
            WX_TRY(wx_gc_ops_mlp_forward(m, k, y + r0 * k->out, t, &in, c));
            continue;
        }
        WX_TRY(wx_gc_ops_mlp_forward(m, k, m->s.upd, t, &in, c));
        WX_TRY(m->be->add_forward(m->ctx, y + r0 * k->out, res + r0 * k->out, m->s.upd,
                                  c * k->out));
    }
    return WX_OK;
}

/* y (n, D) = v + MLP k ([v, agg]) (y may be v), row chunks. */
static wx_status node_rows(wx_gc *m, const wx_gc_mlp *k, float *y, const float *v,
                           const float *agg, int64_t n) {
    const int64_t D = m->D;
    for (int64_t r0 = 0; r0 < n; r0 += m->chunk_rows) {
        const int64_t c = min2(m->chunk_rows, n - r0);
        wx_gc_mlp_in in = {.kind = WX_GC_IN_NODE, .x = v + r0 * D, .agg = agg + r0 * D};
        WX_TRY(wx_gc_ops_mlp_forward(m, k, m->s.upd, &m->pred.emb_grid, &in, c));
        WX_TRY(m->be->add_forward(m->ctx, y + r0 * D, v + r0 * D, m->s.upd, c * D));
    }
    return WX_OK;
}

/* One message-passing step's edge half over edge set i for b samples, chunk by chunk:
 *   e' = MLP k ([e, vs[snd], vr[rcv]]);  agg (b·Nr, D) = Σ_rcv e' (running sums);
 *   with resid: e += e'.
 * e (b·E, D), or NULL: each chunk's e = MLP emb (its static features). */
static wx_status edge_rows(wx_gc *m, int i, const wx_gc_mlp *emb, float *e, const wx_gc_mlp *k,
                           const float *vs, const float *vr, float *agg, int resid, int64_t b) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    wx_gc_ops *o = m->ops;
    const wx_edge_set *es = edge_set(m, i);
    const float *feat = i == 0 ? m->in.fg2m : (i == 1 ? m->in.fmesh : m->in.fm2g);
    const int64_t D = m->D, n = b * es->n_edges, R = m->chunk_rows;
    const int64_t fo = k->nlin == 1 ? k->out : k->hidden;
    float *x = m->s.pe[1]; /* [chunk outputs | running sums] */
    /* W0 = [We | Ws | Wr] into o->w3 (the embedder is PLAIN: it leaves w3 alone) and the node
     * projections, each one GEMM over its nodes as on the unchunked path */
    WX_TRY(wx_gc_ops_split_w0(m, k, 3, fo));
    WX_TRY(be->linear_forward(ctx, o->pa, vs, o->w3 + fo * D, NULL, b * es->n_senders, D, fo));
    WX_TRY(be->linear_forward(ctx, o->pb, vr, o->w3 + 2 * fo * D, NULL, b * es->n_receivers, D,
                              fo));
    WX_TRY(be->mem_zero(ctx, agg, sizeof(float) * (size_t)(m->max_batch * es->n_receivers * D)));
    for (int64_t c0 = 0, ch = 0; c0 < n; c0 += R, ch++) {
        /* rows beyond b·E (a smaller batch) are not computed; the chunk's sums over them land
         * in receivers of samples ≥ b, which nothing reads */
        const int64_t c = min2(R, n - c0), cfull = min2(R, m->max_batch * es->n_edges - c0);
        const int64_t lo = m->cs[i].rlo[ch], nrr = m->cs[i].nrr[ch];
        float *ec = e ? e + c0 * D : m->s.ec;
        if (!e) WX_TRY(plain_rows(m, emb, ec, feat + c0 * 4, 4, NULL, c));
        wx_gc_mlp_in in = {.kind = WX_GC_IN_EDGE_PROJ, .x = ec, .vs = o->pa, .vr = o->pb,
                           .isnd = o->snd[i] + c0, .ircv = o->rcv[i] + c0};
        WX_TRY(wx_gc_ops_mlp_forward(m, k, x, &m->pred.emb_grid, &in, c));
        if (resid) WX_TRY(be->add_forward(ctx, ec, ec, x, c * D));
        WX_TRY(be->gather_rows_forward(ctx, x + cfull * D, agg, o->ident + lo, nrr, D));
        WX_TRY(be->segment_sum_forward(ctx, agg + lo * D, x, o->cptr[i] + m->cs[i].poff[ch],
                                       o->cperm[i] + m->cs[i].qoff[ch], nrr, cfull + nrr, D));
    }
    return WX_OK;
}

wx_status wx_gc_ops_predict_chunked(wx_gc *m, float *y, const float *x, int64_t b) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const wx_gc_modules *o = &m->mod;
    const wx_gc_tape *t = &m->pred;
    const int64_t D = m->D, ng = b * m->ng, nm = b * m->nm, fin = m->cin + 3;
    const int64_t H = m->c.nlat, W = m->c.nlon;
    float *vg = t->vg0, *agg = t->enc.agg, *em = t->em[0];
    /* grid nodes: x(B,Cin,H,W) → channels-last (B·Ng, Cin); each chunk's [x | structural]
     * into pred.gin, embedded into vg */
    WX_TRY(be->unpatchify_backward(ctx, m->s.cat, x, b, m->cin, H, W, 1));
    for (int64_t r0 = 0; r0 < ng; r0 += m->chunk_rows) {
        const int64_t c = min2(m->chunk_rows, ng - r0);
        const float *gxs[2] = {m->s.cat + r0 * m->cin, m->ops->grid_feat + r0 * 3};
        const int64_t gcs[2] = {m->cin, 3};
        WX_TRY(be->concat_forward(ctx, t->gin, gxs, gcs, 2, c));
        WX_TRY(plain_rows(m, &o->emb_grid, vg + r0 * D, t->gin, fin, NULL, c));
    }
    /* ---- grid2mesh_gnn ---- */
    WX_TRY(plain_rows(m, &o->emb_mesh, t->vm0, m->in.min, fin, NULL, nm));
    WX_TRY(edge_rows(m, 0, &o->emb_g2m, NULL, &o->enc_edge, vg, t->vm0, agg, 0, b));
    WX_TRY(node_rows(m, &o->enc_mesh, t->vm[0], t->vm0, agg, nm));
    WX_TRY(plain_rows(m, &o->enc_grid, vg, vg, D, vg, ng)); /* orphan grid update, in place */
    /* ---- mesh_gnn: edge residual in place ---- */
    WX_TRY(plain_rows(m, &o->emb_mesh_e, em, m->in.fmesh, 4, NULL, b * m->em));
    for (int64_t s = 0; s < m->S; s++) {
        WX_TRY(edge_rows(m, 1, NULL, em, &o->proc_edge[s], t->vm[s], t->vm[s], agg, s + 1 < m->S,
                         b));
        WX_TRY(node_rows(m, &o->proc_node[s], t->vm[s + 1], t->vm[s], agg, nm));
    }
    /* ---- mesh2grid_gnn; the output MLP into s.cat (free again) ---- */
    WX_TRY(edge_rows(m, 2, &o->emb_m2g, NULL, &o->dec_edge, t->vm[m->S], vg, agg, 0, b));
    WX_TRY(node_rows(m, &o->dec_grid, vg, vg, agg, ng));
    WX_TRY(plain_rows(m, &o->out, m->s.cat, vg, D, NULL, ng));
    return be->unpatchify_forward(ctx, y, m->s.cat, b, m->cout, H, W, 1);
}
