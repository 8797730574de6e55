/* FourCastNet backward: differentiates fourcastnet_forward.c through the backend table, popping the
 * latest tape. Parameter grads accumulate into the model's grad buffer. */
#include "models/fourcastnet.h"

#define LN_EPS 1e-6

wx_status wx_fcn_backward(wx_fcn *m, float *dx, const float *dy) {
    if (m->ntapes < 1)
        return wx_error_set(WX_ERR_USAGE, "model: backward without a recorded forward");
    const wx_fcn_tape *t = &m->tapes[m->ntapes - 1];
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const wx_fcn_config *d = &m->d;
    const wx_params *p = &m->params;
    const int64_t b = t->b, D = d->embed_dim, N = m->ntok, bn = b * N;
    const int64_t hm = m->mlp_hidden, p2c = d->out_channels * d->patch * d->patch;
    float *dcur = m->s.dcur, *d1 = m->s.d1, *tmp = m->s.tmp;
    /* The first recorded forward is popped last: after it no grad of a layer already passed changes. */
    const int last_pass = m->ntapes == 1;
#define P(i) wx_params_tensor(p, (i))
#define G(i) wx_params_grad(p, (i))
    /* y = unpatchify(z); z = tokens_L · headᵀ */
    WX_TRY(be->unpatchify_backward(ctx, m->s.z, dy, b, d->out_channels, m->hp, m->wp, d->patch));
    WX_TRY(be->linear_backward(ctx, dcur, G(m->head), NULL, m->s.z, t->tok[d->depth], P(m->head),
                               bn, D, p2c));
    if (last_pass) WX_TRY(wx_params_grads_final_from(p, p->t[m->head].offset));
    for (int64_t i = d->depth - 1; i >= 0; i--) {
        const wx_fcn_block_idx *k = &m->blk[i];
        const wx_fcn_tape_block *tb = &t->blk[i];
        /* x2 = x1 + fc2(g), g = GELU(h), h = fc1(v), v = LN2(x1); dcur = ∂L/∂x2.
         * The tape keeps h and x1 only: v is recomputed, and g comes out of the fused GELU
         * backward, which needs dg = dcur·fc2_w first (fc2's weight gradient waits for g). */
        WX_TRY(be->linear_backward(ctx, m->s.dg, NULL, G(k->fc2_b), dcur, NULL, P(k->fc2_w), bn,
                                   hm, D));
        WX_TRY(be->layernorm_forward(ctx, m->s.v, m->s.mean, m->s.rstd, tb->x1, P(k->norm2_w),
                                     P(k->norm2_b), bn, D, LN_EPS));
        WX_TRY(be->linear_gelu_backward(ctx, tmp, G(k->fc1_w), G(k->fc1_b), m->s.dg, m->s.g,
                                        m->s.dg, tb->h, m->s.v, P(k->fc1_w), bn, D, hm));
        WX_TRY(be->linear_backward(ctx, NULL, G(k->fc2_w), NULL, dcur, m->s.g, P(k->fc2_w), bn, hm,
                                   D));
        /* x1 = (x + u) + f, v = LN2(x1) (fused forward): d1 = ∂L/∂x1 = dcur + LN2ᵀ(∂L/∂v) */
        WX_TRY(be->layernorm_residual_backward(ctx, d1, G(k->norm2_w), G(k->norm2_b), tmp, NULL,
                                               dcur, tb->x1, tb->mean2, tb->rstd2, P(k->norm2_w),
                                               bn, D));
        /* f = irfft2(Y), Y = filter(X), X = rfft2(u) */
        WX_TRY(be->irfft2_backward(ctx, m->s.dspec, d1, b, m->hp, m->wp, D));
        WX_TRY(be->afno_filter_backward(ctx, m->s.spec, G(k->w1), G(k->b1), G(k->w2), G(k->b2),
                                        m->s.dspec, tb->fsaved, tb->spec, P(k->w1), P(k->w2),
                                        m->mask_dev ? m->mask_dev : m->mask, b, m->hp, m->wf, D,
                                        d->num_blocks,
                                        d->hidden_size_factor, d->sparsity_threshold));
        WX_TRY(be->rfft2_backward(ctx, tmp, m->s.spec, b, m->hp, m->wp, D)); /* spectral ∂L/∂u */
        /* u = LN1(x), z = x + u (fused forward; ∂L/∂z = d1): ∂L/∂x = d1 + LN1ᵀ(tmp + d1) */
        WX_TRY(be->layernorm_residual_backward(ctx, dcur, G(k->norm1_w), G(k->norm1_b), tmp, d1,
                                               NULL, t->tok[i], tb->mean1, tb->rstd1,
                                               P(k->norm1_w), bn, D));
        if (last_pass) WX_TRY(wx_params_grads_final_from(p, p->t[k->norm1_w].offset));
    }
    /* tokens = patch_embed(x) + pos_embed */
    WX_TRY(be->pos_embed_backward(ctx, NULL, G(m->pos), dcur, b, N, D));
    WX_TRY(be->patch_embed_backward(ctx, dx, G(m->pe_w), G(m->pe_b), dcur, t->xin, P(m->pe_w), b,
                                    d->in_channels, d->img_h, d->img_w, d->patch, D));
#undef P
#undef G
    m->ntapes--;
    return WX_OK;
}
