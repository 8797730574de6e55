/* GraphCast forward (graphcast.py GraphCast.__call__ with DeepTypedGraphNet): the MLPs in
 * graphcast_mlp.c, the rest through the backend table. Rows are (sample, node) or (sample, edge);
 * graph ops run per sample on row blocks. */
#include "models/graphcast.h"

#define P(i) wx_params_tensor(&m->params, (i))

/* agg(b·Nr, D)[r] = Σ_{edges into r} upd, per sample. */
static wx_status aggregate(wx_gc *m, float *agg, const float *upd, const wx_edge_set *es,
                           int64_t b) {
    const int64_t E = es->n_edges, nr = es->n_receivers, D = m->D;
    for (int64_t q = 0; q < b; q++)
        WX_TRY(m->be->segment_sum_forward(m->ctx, agg + q * nr * D, upd + q * E * D, es->row_ptr,
                                          es->perm, nr, E, D));
    return WX_OK;
}

/* The tape an MLP records into. With checkpointing a recorded forward keeps no MLP internals at
 * all (pre-activations, LayerNorm input and stats): they go to the shared scratch tape (the one
 * predict uses) and backward rebuilds each MLP's from its input, which the tape keeps. The
 * processor steps have their own recompute (wx_gc_proc_step into s.step). */
static const wx_gc_mlp_tape *rec(const wx_gc *m, const wx_gc_tape *t, const wx_gc_mlp_tape *own) {
    return m->checkpoint && t != &m->pred ? &m->pred.emb_grid : own;
}

static wx_gc_mlp_in plain_in(const float *x) {
    return (wx_gc_mlp_in){.kind = WX_GC_IN_PLAIN, .x = x};
}

/* Node input [v, agg]: published order [node, Σ received]. */
static wx_gc_mlp_in node_in(const float *v, const float *agg) {
    return (wx_gc_mlp_in){.kind = WX_GC_IN_NODE, .x = v, .agg = agg};
}

wx_status wx_gc_proc_step(wx_gc *m, int64_t s, const float *em, const float *vm, float *em_next,
                          float *vm_next, const wx_gc_step_tape *t, int64_t b) {
    const wx_backend *be = m->be;
    const int64_t D = m->D, E = b * m->em, N = b * m->nm;
    const wx_edge_set *es = &m->g.mesh;
    /* e' = MLP_e([e, v[snd], v[rcv]]); agg = Σ_rcv e'; e_next = e + e' */
    wx_gc_mlp_in ein = wx_gc_edge_in(m, es, em, vm, vm, b);
    WX_TRY(wx_gc_mlp_forward(m, &m->mod.proc_edge[s], m->s.upd, &t->edge, &ein, E));
    WX_TRY(aggregate(m, t->agg, m->s.upd, es, b));
    if (em_next) WX_TRY(be->add_forward(m->ctx, em_next, em, m->s.upd, E * D));
    /* v_next = v + MLP_n([v, agg]) */
    wx_gc_mlp_in nin = node_in(vm, t->agg);
    WX_TRY(wx_gc_mlp_forward(m, &m->mod.proc_node[s], m->s.upd, &t->node, &nin, N));
    return be->add_forward(m->ctx, vm_next, vm, m->s.upd, N * D);
}

static wx_status gc_run(wx_gc *m, float *y, const float *x, int64_t b, wx_gc_tape *t) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const wx_gc_modules *o = &m->mod;
    const int64_t D = m->D, ng = b * m->ng, nm = b * m->nm, fin = m->cin + 3;
    const int64_t H = m->c.nlat, W = m->c.nlon;
    t->b = b;
    /* grid nodes: x(B,Cin,H,W) → channels-last (B,Ng,Cin), then [x | structural] */
    WX_TRY(be->unpatchify_backward(ctx, m->s.cat, x, b, m->cin, H, W, 1));
    for (int64_t q = 0; q < b; q++) {
        const float *xs[2] = {m->s.cat + q * m->ng * m->cin, m->g.grid_features};
        const int64_t cs[2] = {m->cin, 3};
        WX_TRY(be->concat_forward(ctx, t->gin + q * m->ng * fin, xs, cs, 2, m->ng));
    }
    /* ---- grid2mesh_gnn: embed, one step ---- */
    wx_gc_mlp_in in = plain_in(t->gin);
    WX_TRY(wx_gc_mlp_forward(m, &o->emb_grid, t->vg0, rec(m, t, &t->emb_grid), &in, ng));
    in = plain_in(m->in.min);
    WX_TRY(wx_gc_mlp_forward(m, &o->emb_mesh, t->vm0, rec(m, t, &t->emb_mesh), &in, nm));
    in = plain_in(m->in.fg2m);
    WX_TRY(wx_gc_mlp_forward(m, &o->emb_g2m, t->eg0, rec(m, t, &t->emb_g2m), &in, b * m->eg));
    in = wx_gc_edge_in(m, &m->g.g2m, t->eg0, t->vg0, t->vm0, b);
    WX_TRY(wx_gc_mlp_forward(m, &o->enc_edge, m->s.upd, rec(m, t, &t->enc.edge), &in,
                             b * m->eg));
    WX_TRY(aggregate(m, t->enc.agg, m->s.upd, &m->g.g2m, b));
    in = node_in(t->vm0, t->enc.agg);
    WX_TRY(wx_gc_mlp_forward(m, &o->enc_mesh, m->s.upd, rec(m, t, &t->enc.node), &in, nm));
    WX_TRY(be->add_forward(ctx, t->vm[0], t->vm0, m->s.upd, nm * D));
    /* orphan grid nodes: vg1 = vg0 + MLP(vg0) (after the edges read vg0) */
    in = plain_in(t->vg0);
    WX_TRY(wx_gc_mlp_forward(m, &o->enc_grid, m->s.upd, rec(m, t, &t->enc_grid), &in, ng));
    WX_TRY(be->add_forward(ctx, t->vg1, t->vg0, m->s.upd, ng * D));
    /* ---- mesh_gnn ---- */
    in = plain_in(m->in.fmesh);
    WX_TRY(wx_gc_mlp_forward(m, &o->emb_mesh_e, t->em[0], rec(m, t, &t->emb_mesh_e), &in,
                             b * m->em));
    for (int64_t s = 0; s < m->S; s++) {
        const wx_gc_step_tape *st = m->checkpoint && t != &m->pred ? &m->s.step : &t->proc[s];
        WX_TRY(wx_gc_proc_step(m, s, t->em[s], t->vm[s], s + 1 < m->S ? t->em[s + 1] : NULL,
                               t->vm[s + 1], st, b));
    }
    /* ---- mesh2grid_gnn: embed edges, one step, output MLP ---- */
    const float *vm_out = t->vm[m->S];
    in = plain_in(m->in.fm2g);
    WX_TRY(wx_gc_mlp_forward(m, &o->emb_m2g, t->ed0, rec(m, t, &t->emb_m2g), &in, b * m->ed));
    in = wx_gc_edge_in(m, &m->g.m2g, t->ed0, vm_out, t->vg1, b);
    WX_TRY(wx_gc_mlp_forward(m, &o->dec_edge, m->s.upd, rec(m, t, &t->dec.edge), &in,
                             b * m->ed));
    WX_TRY(aggregate(m, t->dec.agg, m->s.upd, &m->g.m2g, b));
    in = node_in(t->vg1, t->dec.agg);
    WX_TRY(wx_gc_mlp_forward(m, &o->dec_grid, m->s.upd, rec(m, t, &t->dec.node), &in, ng));
    WX_TRY(be->add_forward(ctx, t->vg2, t->vg1, m->s.upd, ng * D));
    in = plain_in(t->vg2);
    WX_TRY(wx_gc_mlp_forward(m, &o->out, m->s.upd, rec(m, t, &t->out), &in, ng));
    return be->unpatchify_forward(ctx, y, m->s.upd, b, m->cout, H, W, 1);
}

static wx_status check_batch(const wx_gc *m, int64_t b) {
    if (b < 1 || b > m->max_batch)
        return wx_error_set(WX_ERR_USAGE, "graphcast: batch %lld: expected 1..%lld (the batch the "
                            "model was created for)", (long long)b, (long long)m->max_batch);
    return WX_OK;
}

wx_status wx_gc_forward(wx_gc *m, float *y, const float *x, int64_t b) {
    WX_TRY(check_batch(m, b));
    if (m->ntapes >= m->max_tapes)
        return wx_error_set(WX_ERR_USAGE, "graphcast: forward with backward recording needs a free "
                            "tape; all %d are in use (run backward first, or predict)",
                            m->max_tapes);
    WX_TRY(gc_run(m, y, x, b, &m->tapes[m->ntapes]));
    m->ntapes++;
    return WX_OK;
}

wx_status wx_gc_predict(wx_gc *m, float *y, const float *x, int64_t b) {
    WX_TRY(check_batch(m, b));
    return gc_run(m, y, x, b, &m->pred);
}
