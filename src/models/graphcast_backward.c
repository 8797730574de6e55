/* GraphCast backward: differentiates graphcast_forward.c through the backend table, popping the
 * latest tape. Parameter grads accumulate; with checkpointing each processor step is first
 * recomputed from its stored input latents. */
#include "models/graphcast.h"

#define P(i) wx_params_tensor(&m->params, (i))
#define G(i) wx_params_grad(&m->params, (i))

/* Differentiates y = MLP(x) (wx_gc_mlp_forward): parameter grads +=, dx (n, in) overwrite
 * (nullable), given dy (n, out) and the tape and input of that forward. */
static wx_status mlp_backward(wx_gc *m, const wx_gc_mlp *k, float *dx, const float *dy,
                              const wx_gc_mlp_tape *t, const float *x, int64_t n) {
    const wx_backend *be = m->be;
    const int last = k->nlin - 1;
    const float *dcur = dy;
    if (k->ln_w >= 0) {
        /* y = LN(z) */
        WX_TRY(be->layernorm_backward(m->ctx, m->s.dz, G(k->ln_w), G(k->ln_b), dy, t->z, t->mean,
                                      t->rstd, P(k->ln_w), n, k->out));
        dcur = m->s.dz;
    }
    for (int i = last; i >= 0; i--) {
        /* z_i = a_i·W_iᵀ + b_i, a_0 = x, a_i = SiLU(pre_{i−1}) (recomputed) */
        const int64_t fi = i == 0 ? k->in : k->hidden, fo = i == last ? k->out : k->hidden;
        const float *a = x;
        if (i > 0) {
            WX_TRY(be->silu_forward(m->ctx, m->s.h0, t->pre[i - 1], n * k->hidden));
            a = m->s.h0;
        }
        float *da = i == 0 ? dx : m->s.dh;
        WX_TRY(be->linear_backward(m->ctx, da, G(k->w[i]), G(k->b[i]), dcur, a, P(k->w[i]), n, fi,
                                   fo));
        if (i > 0) {
            WX_TRY(be->silu_backward(m->ctx, m->s.h1, m->s.dh, t->pre[i - 1], n * k->hidden));
            dcur = m->s.h1;
        }
    }
    return WX_OK;
}

/* dnode(b·N, D) += Σ_e dgath[e] over the edges whose `idx` is the node, per sample; with
 * `overwrite`, dnode = that sum. */
static wx_status gather_acc(wx_gc *m, float *dnode, const float *dgath, const int32_t *idx,
                            int64_t E, int64_t N, int64_t b, int overwrite) {
    const int64_t D = m->D;
    float *dst = overwrite ? dnode : m->s.dtmp;
    for (int64_t q = 0; q < b; q++)
        WX_TRY(m->be->gather_rows_backward(m->ctx, dst + q * N * D, dgath + q * E * D, idx, E, N,
                                           D));
    if (overwrite) return WX_OK;
    return m->be->add_forward(m->ctx, dnode, dnode, m->s.dtmp, b * N * D);
}

/* One message-passing step backward. Forward:
 *   e' = MLP_e([e, vs[snd], vr[rcv]]); agg = Σ_rcv e'; vr_next = vr + MLP_n([vr, agg]);
 *   e_next = e + e' (when de_next is not NULL).
 * In: dvr = ∂L/∂vr_next, de_next = ∂L/∂e_next (NULL: zero). Out: dvr = ∂L/∂vr (in place),
 * dvs += ∂L/∂vs (dvs_fresh: dvs = ∂L/∂vs; dvs may be dvr: the processor's senders and
 * receivers are the same nodes), de = ∂L/∂e (overwrite; may equal de_next; nullable).
 * e, vs, vr are the forward inputs. */
static wx_status step_backward(wx_gc *m, const wx_gc_mlp *ke, const wx_gc_mlp *kn,
                               const wx_gc_step_tape *t, const wx_edge_set *es, const float *e,
                               const float *vs, const float *vr, float *dvr, float *dvs,
                               int dvs_fresh, const float *de_next, float *de, int64_t b) {
    const wx_backend *be = m->be;
    const int64_t D = m->D, E = es->n_edges, nr = es->n_receivers, ns = es->n_senders;
    /* node: recompute [vr, agg]; dvr += ∂/∂vr of MLP_n; dagg → s.ga */
    const float *xs[2] = {vr, t->agg};
    const int64_t cs2[2] = {D, D};
    WX_TRY(be->concat_forward(m->ctx, m->s.cat, xs, cs2, 2, b * nr));
    WX_TRY(mlp_backward(m, kn, m->s.dcat, dvr, &t->node, m->s.cat, b * nr));
    float *dn2[2] = {m->s.dtmp, m->s.ga};
    WX_TRY(be->concat_backward(m->ctx, dn2, m->s.dcat, cs2, 2, b * nr));
    WX_TRY(be->add_forward(m->ctx, dvr, dvr, m->s.dtmp, b * nr * D));
    /* de' = de_next + segment_sum_backward(dagg) */
    for (int64_t q = 0; q < b; q++)
        WX_TRY(be->segment_sum_backward(m->ctx, m->s.dupd + q * E * D, m->s.ga + q * nr * D,
                                        es->row_ptr, es->perm, nr, E, D));
    if (de_next) WX_TRY(be->add_forward(m->ctx, m->s.dupd, m->s.dupd, de_next, b * E * D));
    /* edge: recompute [e, vs[snd], vr[rcv]]; split its grad into de, dvs, dvr */
    WX_TRY(wx_gc_edge_input(m, m->s.cat, es, e, vs, ns, vr, nr, b));
    WX_TRY(mlp_backward(m, ke, m->s.dcat, m->s.dupd, &t->edge, m->s.cat, b * E));
    /* de = de_next (residual) + the edge-input slice; dupd is free again (dy consumed). */
    float *de3[3] = {de_next ? m->s.dupd : de, m->s.ga, m->s.gb};
    const int64_t cs3[3] = {D, D, D};
    WX_TRY(be->concat_backward(m->ctx, de3, m->s.dcat, cs3, 3, b * E));
    if (de && de_next) WX_TRY(be->add_forward(m->ctx, de, de_next, m->s.dupd, b * E * D));
    WX_TRY(gather_acc(m, dvs, m->s.ga, es->senders, E, ns, b, dvs_fresh));
    return gather_acc(m, dvr, m->s.gb, es->receivers, E, nr, b, 0);
}

wx_status wx_gc_backward(wx_gc *m, float *dx, const float *dy) {
    if (m->ntapes < 1)
        return wx_error_set(WX_ERR_USAGE, "graphcast: backward without a recorded forward");
    const wx_gc_tape *t = &m->tapes[m->ntapes - 1];
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const wx_gc_modules *o = &m->mod;
    const int64_t b = t->b, D = m->D, ng = b * m->ng, nm = b * m->nm;
    const int64_t H = m->c.nlat, W = m->c.nlon;
    float *dvg = m->s.dvg, *dvm = m->s.dvm, *dem = m->s.dem;
    /* y = unpatchify(MLP_out(vg2)) */
    WX_TRY(be->unpatchify_backward(ctx, m->s.dupd, dy, b, m->cout, H, W, 1));
    WX_TRY(mlp_backward(m, &o->out, dvg, m->s.dupd, &t->out, t->vg2, ng));
    /* decoder step (mesh → grid): dvg: ∂/∂vg2 → ∂/∂vg1; dvm = ∂/∂vm[S]; ded0 → dem */
    WX_TRY(step_backward(m, &o->dec_edge, &o->dec_grid, &t->dec, &m->g.m2g, t->ed0, t->vm[m->S],
                         t->vg1, dvg, dvm, 1, NULL, dem, b));
    WX_TRY(mlp_backward(m, &o->emb_m2g, NULL, dem, &t->emb_m2g, m->in.fm2g, b * m->ed));
    /* processor, last step first; the last step's edge residual is not computed (no de_next) */
    for (int64_t s = m->S - 1; s >= 0; s--) {
        const wx_gc_step_tape *st = &t->proc[s];
        if (m->checkpoint) {
            /* rerun step s from its stored inputs; its vm output (identical to vm[s+1]) goes to
             * scratch so the tape stays untouched */
            st = &m->s.step;
            WX_TRY(wx_gc_proc_step(m, s, t->em[s], t->vm[s], NULL, m->s.dtmp, st, b));
        }
        WX_TRY(step_backward(m, &o->proc_edge[s], &o->proc_node[s], st, &m->g.mesh, t->em[s],
                             t->vm[s], t->vm[s], dvm, dvm, 0, s + 1 < m->S ? dem : NULL, dem, b));
    }
    WX_TRY(mlp_backward(m, &o->emb_mesh_e, NULL, dem, &t->emb_mesh_e, m->in.fmesh, b * m->em));
    /* encoder orphan grid update: vg1 = vg0 + MLP(vg0) */
    WX_TRY(mlp_backward(m, &o->enc_grid, m->s.dtmp, dvg, &t->enc_grid, t->vg0, ng));
    WX_TRY(be->add_forward(ctx, dvg, dvg, m->s.dtmp, ng * D));
    /* encoder step (grid → mesh): dvm: ∂/∂vm[0] → ∂/∂vm0; dvg += ∂/∂vg0 via the edges */
    WX_TRY(step_backward(m, &o->enc_edge, &o->enc_mesh, &t->enc, &m->g.g2m, t->eg0, t->vg0, t->vm0,
                         dvm, dvg, 0, NULL, dem, b));
    WX_TRY(mlp_backward(m, &o->emb_g2m, NULL, dem, &t->emb_g2m, m->in.fg2m, b * m->eg));
    WX_TRY(mlp_backward(m, &o->emb_mesh, NULL, dvm, &t->emb_mesh, m->in.min, nm));
    /* grid input [x | structural] → x(B,Cin,H,W) */
    WX_TRY(mlp_backward(m, &o->emb_grid, dx ? m->s.dcat : NULL, dvg, &t->emb_grid, t->gin, ng));
    if (dx) {
        float *dxs[2] = {m->s.cat, NULL};
        const int64_t cs[2] = {m->cin, 3};
        WX_TRY(be->concat_backward(ctx, dxs, m->s.dcat, cs, 2, ng));
        WX_TRY(be->unpatchify_forward(ctx, dx, m->s.cat, b, m->cin, H, W, 1));
    }
    m->ntapes--;
    return WX_OK;
}
