/* GraphCast backward: differentiates graphcast_forward.c (MLPs: graphcast_mlp.c), popping the
 * latest tape. Parameter grads accumulate; with checkpointing each processor step is first
 * recomputed from its stored input latents, and every other MLP from its stored input. */
#include "models/graphcast.h"

/* MLP backward. With checkpointing (redo) the forward recorded nothing for this MLP
 * (graphcast_forward.c rec()): its internals are first rebuilt from its input into the shared
 * scratch tape (same ops on the same inputs: the same bits), its output going to s.upd. */
static wx_status mlp_back(wx_gc *m, int redo, const wx_gc_mlp *k, const float *dy,
                          const wx_gc_mlp_tape *own, const wx_gc_mlp_in *in, int64_t n) {
    const wx_gc_mlp_tape *t = own;
    if (redo) {
        t = &m->pred.emb_grid;
        WX_TRY(wx_gc_mlp_forward(m, k, m->s.upd, t, in, n));
    }
    return wx_gc_mlp_backward(m, k, dy, t, in, n);
}

static wx_gc_mlp_in plain_in(const float *x, float *dx) {
    return (wx_gc_mlp_in){.kind = WX_GC_IN_PLAIN, .x = x, .dx = dx};
}

/* One message-passing step backward. Forward:
 *   e' = MLP_e([e, vs[snd], vr[rcv]]); agg = Σ_rcv e'; vr_next = vr + MLP_n([vr, agg]);
 *   e_next = e + e' (when de_next is not NULL).
 * In: dvr = ∂L/∂vr_next, de_next = ∂L/∂e_next (NULL: zero; otherwise it must be de). Out:
 * dvr = ∂L/∂vr (in place), dvs += ∂L/∂vs (dvs_fresh: dvs = ∂L/∂vs; dvs may be dvr: the
 * processor's senders and receivers are the same nodes), de = ∂L/∂e (overwrite; nullable).
 * e, vs, vr are the forward inputs. redo: rebuild the MLPs' internals first (mlp_back). */
static wx_status step_backward(wx_gc *m, int redo, const wx_gc_mlp *ke, const wx_gc_mlp *kn,
                               const wx_gc_step_tape *t, const wx_edge_set *es, const float *e,
                               const float *vs, const float *vr, float *dvr, float *dvs,
                               int dvs_fresh, const float *de_next, float *de, int64_t b) {
    const wx_backend *be = m->be;
    const int64_t D = m->D, E = es->n_edges, nr = es->n_receivers;
    WX_ASSERT(!de_next || de_next == de);
    /* node: dvr += ∂/∂vr of MLP_n([vr, agg]); dagg → s.dtmp */
    wx_gc_mlp_in nin = {.kind = WX_GC_IN_NODE, .x = vr, .agg = t->agg, .dx = dvr, .dx_acc = 1,
                        .dagg = m->s.dtmp};
    WX_TRY(mlp_back(m, redo, kn, dvr, &t->node, &nin, b * nr));
    /* de' = segment_sum_backward(dagg) (+ de_next: the residual e_next = e + e') */
    for (int64_t q = 0; q < b; q++)
        WX_TRY(be->segment_sum_backward(m->ctx, m->s.dupd + q * E * D, m->s.dtmp + q * nr * D,
                                        es->row_ptr, es->perm, nr, E, D));
    if (de_next) WX_TRY(be->add_forward(m->ctx, m->s.dupd, m->s.dupd, de_next, b * E * D));
    /* edge: de (+)= ∂/∂e, dvs (+)= ∂/∂vs, dvr += ∂/∂vr; with de_next, de already holds it */
    wx_gc_mlp_in ein = wx_gc_edge_in(m, es, e, vs, vr, b);
    ein.dx = de, ein.dx_acc = de_next != NULL;
    ein.dvs = dvs, ein.dvs_acc = !dvs_fresh, ein.dvr = dvr;
    return mlp_back(m, redo, ke, m->s.dupd, &t->edge, &ein, b * E);
}

wx_status wx_gc_backward_walk(wx_gc *m, float *dx, const float *dy, const wx_gc_back_path *p) {
    if (m->ntapes < 1)
        return wx_error_set(WX_ERR_USAGE, "graphcast: backward without a recorded forward");
    const wx_gc_tape *t = &m->tapes[m->ntapes - 1];
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const wx_gc_modules *o = &m->mod;
    const int64_t b = t->b, D = m->D, ng = b * m->ng, nm = b * m->nm;
    const int64_t H = m->c.nlat, W = m->c.nlon;
    float *dvg = m->s.dvg, *dvm = m->s.dvm, *dem = m->s.dem;
    /* The first recorded forward is popped last; in it, every module the backward has passed is
     * final once no later-laid-out module remains (layout: encoder, processor, decoder). */
    const int last_pass = m->ntapes == 1;
    const wx_params *prm = &m->params;
    const int ck = m->checkpoint && p->redo_mlps;
#define FINAL_FROM(mlp) \
    if (last_pass) WX_TRY(wx_params_grads_final_from(prm, prm->t[(mlp).w[0]].offset))
    /* y = unpatchify(MLP_out(vg2)) */
    WX_TRY(be->unpatchify_backward(ctx, m->s.dupd, dy, b, m->cout, H, W, 1));
    wx_gc_mlp_in in = plain_in(t->vg2, dvg);
    WX_TRY(p->mlp(m, ck, &o->out, m->s.dupd, &t->out, &in, ng));
    /* decoder step (mesh → grid): dvg: ∂/∂vg2 → ∂/∂vg1; dvm = ∂/∂vm[S]; ded0 → dem */
    WX_TRY(p->step(m, ck, &o->dec_edge, &o->dec_grid, &t->dec, &m->g.m2g, t->ed0,
                         t->vm[m->S], t->vg1, dvg, dvm, 1, NULL, dem, b));
    in = plain_in(m->in.fm2g, NULL);
    WX_TRY(p->mlp(m, ck, &o->emb_m2g, dem, &t->emb_m2g, &in, b * m->ed));
    FINAL_FROM(o->emb_m2g);
    /* processor, last step first; the last step's edge residual is not computed (no de_next) */
    for (int64_t s = m->S - 1; s >= 0; s--) {
        const wx_gc_step_tape *st = &t->proc[s];
        if (m->checkpoint) {
            /* rerun step s from its stored inputs; its vm output (identical to vm[s+1]) goes to
             * scratch so the tape stays untouched */
            st = &m->s.step;
            WX_TRY(p->proc_step(m, s, t->em[s], t->vm[s], NULL, m->s.dtmp, st, b));
        }
        WX_TRY(p->step(m, 0, &o->proc_edge[s], &o->proc_node[s], st, &m->g.mesh, t->em[s],
                             t->vm[s], t->vm[s], dvm, dvm, 0, s + 1 < m->S ? dem : NULL, dem, b));
        FINAL_FROM(o->proc_edge[s]);
    }
    in = plain_in(m->in.fmesh, NULL);
    WX_TRY(p->mlp(m, ck, &o->emb_mesh_e, dem, &t->emb_mesh_e, &in, b * m->em));
    FINAL_FROM(o->emb_mesh_e);
#undef FINAL_FROM
    /* encoder orphan grid update: vg1 = vg0 + MLP(vg0) */
    in = plain_in(t->vg0, m->s.dtmp);
    WX_TRY(p->mlp(m, ck, &o->enc_grid, dvg, &t->enc_grid, &in, ng));
    WX_TRY(be->add_forward(ctx, dvg, dvg, m->s.dtmp, ng * D));
    /* encoder step (grid → mesh): dvm: ∂/∂vm[0] → ∂/∂vm0; dvg += ∂/∂vg0 via the edges */
    WX_TRY(p->step(m, ck, &o->enc_edge, &o->enc_mesh, &t->enc, &m->g.g2m, t->eg0, t->vg0,
                         t->vm0, dvm, dvg, 0, NULL, dem, b));
    in = plain_in(m->in.fg2m, NULL);
    WX_TRY(p->mlp(m, ck, &o->emb_g2m, dem, &t->emb_g2m, &in, b * m->eg));
    in = plain_in(m->in.min, NULL);
    WX_TRY(p->mlp(m, ck, &o->emb_mesh, dvm, &t->emb_mesh, &in, nm));
    /* grid input [x | structural] → x(B,Cin,H,W) */
    in = plain_in(t->gin, dx ? m->s.dcat : NULL);
    WX_TRY(p->mlp(m, ck, &o->emb_grid, dvg, &t->emb_grid, &in, ng));
    if (dx) {
        float *dxs[2] = {m->s.cat, NULL};
        const int64_t cs[2] = {m->cin, 3};
        WX_TRY(be->concat_backward(ctx, dxs, m->s.dcat, cs, 2, ng));
        WX_TRY(be->unpatchify_forward(ctx, dx, m->s.cat, b, m->cin, H, W, 1));
    }
    m->ntapes--;
    return WX_OK;
}

wx_status wx_gc_backward(wx_gc *m, float *dx, const float *dy) {
    /* Checkpointing rebuilds every MLP here: the fused forward records none of them then. */
    static const wx_gc_back_path fused = {mlp_back, step_backward, wx_gc_proc_step, 1};
    return wx_gc_backward_walk(m, dx, dy, &fused);
}
