/* GraphCast ops path (graphcast_ops.h): encoder, processor and decoder forward and backward, step
 * for step the structure of graphcast_forward.c and graphcast_backward.c (same tapes, same
 * module order, same gradient-ready notifications for the all-reduce), with the MLPs of
 * graphcast_ops.c and the graph sums on the device CSR arrays of m->ops. */
#include "models/graphcast_ops.h"

static wx_gc_mlp_in plain_in(const float *x, float *dx) {
    return (wx_gc_mlp_in){.kind = WX_GC_IN_PLAIN, .x = x, .dx = dx};
}

/* Node input [v, agg]: published order [node, Σ received]. */
static wx_gc_mlp_in node_in(const float *v, const float *agg) {
    return (wx_gc_mlp_in){.kind = WX_GC_IN_NODE, .x = v, .agg = agg};
}

/* Edge input [e, vs[snd], vr[rcv]] of edge set es. */
static wx_gc_mlp_in edge_in(const wx_edge_set *es, const float *e, const float *vs,
                            const float *vr, int64_t b) {
    return (wx_gc_mlp_in){.kind = WX_GC_IN_EDGE, .x = e, .vs = vs, .vr = vr, .es = es, .b = b};
}

/* agg(b·Nr, D)[r] = Σ_{edges into r} upd(b·E, D): one segment sum over the batched CSR. */
static wx_status aggregate(wx_gc *m, float *agg, const float *upd, const wx_edge_set *es,
                           int64_t b) {
    const int i = wx_gc_ops_edge_index(m, es);
    return m->be->segment_sum_forward(m->ctx, agg, upd, m->ops->rptr[i], m->ops->rperm[i],
                                      b * es->n_receivers, b * es->n_edges, m->D);
}

/* Processor step s (wx_gc_proc_step on this path). */
static wx_status proc_step(wx_gc *m, int64_t s, const float *em, const float *vm, float *em_next,
                           float *vm_next, const wx_gc_step_tape *t, int64_t b) {
    const wx_backend *be = m->be;
    const int64_t D = m->D, E = b * m->em, N = b * m->nm;
    const wx_edge_set *es = &m->g.mesh;
    /* e' = MLP_e([e, v[snd], v[rcv]]); agg = Σ_rcv e'; e_next = e + e' */
    wx_gc_mlp_in ein = edge_in(es, em, vm, vm, b);
    WX_TRY(wx_gc_ops_mlp_forward(m, &m->mod.proc_edge[s], m->s.upd, &t->edge, &ein, E));
    WX_TRY(aggregate(m, t->agg, m->s.upd, es, b));
    if (em_next) WX_TRY(be->add_forward(m->ctx, em_next, em, m->s.upd, E * D));
    /* v_next = v + MLP_n([v, agg]) */
    wx_gc_mlp_in nin = node_in(vm, t->agg);
    WX_TRY(wx_gc_ops_mlp_forward(m, &m->mod.proc_node[s], m->s.upd, &t->node, &nin, N));
    return be->add_forward(m->ctx, vm_next, vm, m->s.upd, N * D);
}

static wx_status ops_run(wx_gc *m, float *y, const float *x, int64_t b, wx_gc_tape *t) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const wx_gc_modules *o = &m->mod;
    const int64_t D = m->D, ng = b * m->ng, nm = b * m->nm;
    const int64_t H = m->c.nlat, W = m->c.nlon;
    t->b = b;
    /* grid nodes: x(B,Cin,H,W) → channels-last (B,Ng,Cin), then [x | structural] (the structural
     * features are stored once per sample, so one concat covers the batch) */
    WX_TRY(be->unpatchify_backward(ctx, m->s.cat, x, b, m->cin, H, W, 1));
    const float *gxs[2] = {m->s.cat, m->ops->grid_feat};
    const int64_t gcs[2] = {m->cin, 3};
    WX_TRY(be->concat_forward(ctx, t->gin, gxs, gcs, 2, ng));
    /* ---- grid2mesh_gnn: embed, one step ---- */
    wx_gc_mlp_in in = plain_in(t->gin, NULL);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->emb_grid, t->vg0, &t->emb_grid, &in, ng));
    in = plain_in(m->in.min, NULL);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->emb_mesh, t->vm0, &t->emb_mesh, &in, nm));
    in = plain_in(m->in.fg2m, NULL);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->emb_g2m, t->eg0, &t->emb_g2m, &in, b * m->eg));
    in = edge_in(&m->g.g2m, t->eg0, t->vg0, t->vm0, b);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->enc_edge, m->s.upd, &t->enc.edge, &in, b * m->eg));
    WX_TRY(aggregate(m, t->enc.agg, m->s.upd, &m->g.g2m, b));
    in = node_in(t->vm0, t->enc.agg);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->enc_mesh, m->s.upd, &t->enc.node, &in, nm));
    WX_TRY(be->add_forward(ctx, t->vm[0], t->vm0, m->s.upd, nm * D));
    /* orphan grid nodes: vg1 = vg0 + MLP(vg0) (after the edges read vg0) */
    in = plain_in(t->vg0, NULL);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->enc_grid, m->s.upd, &t->enc_grid, &in, ng));
    WX_TRY(be->add_forward(ctx, t->vg1, t->vg0, m->s.upd, ng * D));
    /* ---- mesh_gnn ---- */
    in = plain_in(m->in.fmesh, NULL);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->emb_mesh_e, t->em[0], &t->emb_mesh_e, &in, b * m->em));
    for (int64_t s = 0; s < m->S; s++) {
        const wx_gc_step_tape *st = m->checkpoint && t != &m->pred ? &m->s.step : &t->proc[s];
        WX_TRY(proc_step(m, s, t->em[s], t->vm[s], s + 1 < m->S ? t->em[s + 1] : NULL,
                         t->vm[s + 1], st, b));
    }
    /* ---- mesh2grid_gnn: embed edges, one step, output MLP ---- */
    const float *vm_out = t->vm[m->S];
    in = plain_in(m->in.fm2g, NULL);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->emb_m2g, t->ed0, &t->emb_m2g, &in, b * m->ed));
    in = edge_in(&m->g.m2g, t->ed0, vm_out, t->vg1, b);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->dec_edge, m->s.upd, &t->dec.edge, &in, b * m->ed));
    WX_TRY(aggregate(m, t->dec.agg, m->s.upd, &m->g.m2g, b));
    in = node_in(t->vg1, t->dec.agg);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->dec_grid, m->s.upd, &t->dec.node, &in, ng));
    WX_TRY(be->add_forward(ctx, t->vg2, t->vg1, m->s.upd, ng * D));
    in = plain_in(t->vg2, NULL);
    WX_TRY(wx_gc_ops_mlp_forward(m, &o->out, m->s.upd, &t->out, &in, ng));
    return be->unpatchify_forward(ctx, y, m->s.upd, b, m->cout, H, W, 1);
}

static wx_status check_batch(const wx_gc *m, int64_t b) {
    if (!m->ops)
        return wx_error_set(WX_ERR_USAGE, "graphcast: the ops path was called on a model created "
                            "for the fused CPU path");
    if (b < 1 || b > m->max_batch)
        return wx_error_set(WX_ERR_USAGE, "graphcast: batch %lld: expected 1..%lld (the batch the "
                            "model was created for)", (long long)b, (long long)m->max_batch);
    return WX_OK;
}

wx_status wx_gc_ops_forward(wx_gc *m, float *y, const float *x, int64_t b) {
    WX_TRY(check_batch(m, b));
    if (m->ntapes >= m->max_tapes)
        return wx_error_set(WX_ERR_USAGE, "graphcast: forward with backward recording needs a free "
                            "tape; all %d are in use (run backward first, or predict)",
                            m->max_tapes);
    WX_TRY(ops_run(m, y, x, b, &m->tapes[m->ntapes]));
    m->ntapes++;
    return WX_OK;
}

wx_status wx_gc_ops_predict(wx_gc *m, float *y, const float *x, int64_t b) {
    WX_TRY(check_batch(m, b));
    if (m->chunk_rows) return wx_gc_ops_predict_chunked(m, y, x, b); /* predict-only model */
    return ops_run(m, y, x, b, &m->pred);
}

/* ---- backward ---- */

/* One message-passing step backward (graphcast_backward.c step_backward, same contract). Forward:
 *   e' = MLP_e([e, vs[snd], vr[rcv]]); agg = Σ_rcv e'; vr_next = vr + MLP_n([vr, agg]);
 *   e_next = e + e' (when de_next is not NULL). */
static wx_status step_backward(wx_gc *m, int redo, const wx_gc_mlp *ke, const wx_gc_mlp *kn,
                               const wx_gc_step_tape *t, const wx_edge_set *es, const float *e,
                               const float *vs, const float *vr, float *dvr, float *dvs,
                               int dvs_fresh, const float *de_next, float *de, int64_t b) {
    WX_ASSERT(!redo); /* this path's forward records every MLP outside the processor */
    const wx_backend *be = m->be;
    const int i = wx_gc_ops_edge_index(m, es);
    const int64_t D = m->D, E = es->n_edges, nr = es->n_receivers;
    WX_ASSERT(!de_next || de_next == de);
    /* node: dvr += ∂/∂vr of MLP_n([vr, agg]); dagg → s.dtmp */
    wx_gc_mlp_in nin = {.kind = WX_GC_IN_NODE, .x = vr, .agg = t->agg, .dx = dvr, .dx_acc = 1,
                        .dagg = m->s.dtmp};
    WX_TRY(wx_gc_ops_mlp_backward(m, kn, dvr, &t->node, &nin, b * nr));
    /* de' = segment_sum_backward(dagg) (+ de_next: the residual e_next = e + e') */
    WX_TRY(be->segment_sum_backward(m->ctx, m->s.dupd, m->s.dtmp, m->ops->rptr[i],
                                    m->ops->rperm[i], b * nr, b * E, D));
    if (de_next) WX_TRY(be->add_forward(m->ctx, m->s.dupd, m->s.dupd, de_next, b * E * D));
    wx_gc_mlp_in ein = edge_in(es, e, vs, vr, b);
    ein.dx = de, ein.dx_acc = de_next != NULL;
    ein.dvs = dvs, ein.dvs_acc = !dvs_fresh, ein.dvr = dvr;
    return wx_gc_ops_mlp_backward(m, ke, m->s.dupd, &t->edge, &ein, b * E);
}

/* MLP backward on this path: the forward recorded it (the walk passes redo = 0 here). */
static wx_status mlp_back(wx_gc *m, int redo, const wx_gc_mlp *k, const float *dy,
                          const wx_gc_mlp_tape *own, const wx_gc_mlp_in *in, int64_t n) {
    WX_ASSERT(!redo);
    return wx_gc_ops_mlp_backward(m, k, dy, own, in, n);
}

wx_status wx_gc_ops_backward(wx_gc *m, float *dx, const float *dy) {
    if (!m->ops)
        return wx_error_set(WX_ERR_USAGE, "graphcast: the ops path was called on a model created "
                            "for the fused CPU path");
    /* Under checkpointing only the processor steps are rerun (proc_step into s.step). */
    static const wx_gc_back_path ops = {mlp_back, step_backward, proc_step, 0};
    return wx_gc_backward_walk(m, dx, dy, &ops);
}

/* ---- dispatch ---- */

wx_status wx_gc_run_forward(wx_gc *m, float *y, const float *x, int64_t b) {
    return m->ops ? wx_gc_ops_forward(m, y, x, b) : wx_gc_forward(m, y, x, b);
}

wx_status wx_gc_run_predict(wx_gc *m, float *y, const float *x, int64_t b) {
    return m->ops ? wx_gc_ops_predict(m, y, x, b) : wx_gc_predict(m, y, x, b);
}

wx_status wx_gc_run_backward(wx_gc *m, float *dx, const float *dy) {
    return m->ops ? wx_gc_ops_backward(m, dx, dy) : wx_gc_backward(m, dx, dy);
}
