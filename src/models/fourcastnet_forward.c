/* FourCastNet forward (NVlabs AFNONet.forward), through the backend table. */
#include "models/fourcastnet.h"

#define LN_EPS 1e-6

/* A copy through the backend (concat of one piece), so device buffers need no host memcpy. */
static wx_status fcn_copy(const wx_fcn *m, float *dst, const float *src, int64_t n) {
    const float *xs[1] = {src};
    const int64_t cs[1] = {n};
    return m->be->concat_forward(m->ctx, dst, xs, cs, 1, 1);
}

/* Runs the network; records into tape t when t is not NULL, else works in scratch only. */
static wx_status fcn_run(wx_fcn *m, float *y, const float *x, int64_t b, wx_fcn_tape *t) {
    const wx_backend *be = m->be;
    wx_ctx *ctx = m->ctx;
    const wx_fcn_config *d = &m->d;
    const wx_params *p = &m->params;
    const int64_t D = d->embed_dim, N = m->ntok, bn = b * N, n = bn * D, hm = m->mlp_hidden;
    const int64_t p2c = d->out_channels * d->patch * d->patch;
#define P(i) wx_params_tensor(p, (i))
    if (t) {
        t->b = b;
        WX_TRY(fcn_copy(m, t->xin, x, b * d->in_channels * d->img_h * d->img_w));
    }
    /* tokens(B,N,D) = patch_embed(x) + pos_embed */
    float *tok = t ? t->tok[0] : m->s.dcur;
    WX_TRY(be->patch_embed_forward(ctx, tok, x, P(m->pe_w), P(m->pe_b), b, d->in_channels, d->img_h,
                                   d->img_w, d->patch, D));
    WX_TRY(be->pos_embed_forward(ctx, tok, tok, P(m->pos), b, N, D));
    for (int64_t i = 0; i < d->depth; i++) {
        const wx_fcn_block_idx *k = &m->blk[i];
        wx_fcn_tape_block *tb = t ? &t->blk[i] : NULL;
        /* Without a tape everything lives in scratch and the block updates dcur in place. */
        float *xi = t ? t->tok[i] : m->s.dcur;
        float *mean1 = tb ? tb->mean1 : m->s.mean, *rstd1 = tb ? tb->rstd1 : m->s.rstd;
        float *mean2 = tb ? tb->mean2 : m->s.mean, *rstd2 = tb ? tb->rstd2 : m->s.rstd;
        float *X = tb ? tb->spec : m->s.dspec, *fs = tb ? tb->fsaved : m->s.fsaved;
        float *x1 = tb ? tb->x1 : m->s.d1, *h = tb ? tb->h : m->s.dg;
        /* x = x1' + f' (the previous block's residual, first block: the tokens as they are),
         * u = LN1(x), x1 = x + u (Block's skip plus AFNO2D's own "+ bias"; f is added below, so
         * x1 = (x + u) + f as NVlabs sums it): one fused pass over the rows. */
        const float *x1p = i ? (t ? t->blk[i - 1].x1 : m->s.d1) : xi;
        WX_TRY(be->layernorm_residual_forward(ctx, xi, m->s.u, x1, mean1, rstd1, x1p,
                                              i ? m->s.f : NULL, P(k->norm1_w), P(k->norm1_b), bn,
                                              D, LN_EPS));
        /* f = irfft2(shrink(MLP(rfft2(u)))) on the (B, Hp, Wp, D) grid */
        WX_TRY(be->rfft2_forward(ctx, X, m->s.u, b, m->hp, m->wp, D));
        WX_TRY(be->afno_filter_forward(ctx, m->s.spec, fs, X, P(k->w1), P(k->b1), P(k->w2),
                                       P(k->b2), m->mask_dev ? m->mask_dev : m->mask, b, m->hp,
                                       m->wf, D, d->num_blocks,
                                       d->hidden_size_factor, d->sparsity_threshold));
        WX_TRY(be->irfft2_forward(ctx, m->s.f, m->s.spec, b, m->hp, m->wp, D));
        /* x1 += f and v = LN2(x1) in one pass; then x' = x1 + fc2(GELU(fc1(v))), whose final
         * add is the next block's (or the head's) fused pass. */
        WX_TRY(be->layernorm_residual_forward(ctx, x1, m->s.v, NULL, mean2, rstd2, x1, m->s.f,
                                              P(k->norm2_w), P(k->norm2_b), bn, D, LN_EPS));
        WX_TRY(be->linear_gelu_forward(ctx, h, m->s.g, m->s.v, P(k->fc1_w), P(k->fc1_b), bn, D,
                                       hm));
        WX_TRY(be->linear_forward(ctx, m->s.f, m->s.g, P(k->fc2_w), P(k->fc2_b), bn, hm, D));
    }
    /* tokens_L = x1 + f of the last block */
    float *last = t ? t->tok[d->depth] : m->s.dcur;
    if (d->depth > 0)
        WX_TRY(be->add_forward(ctx, last, t ? t->blk[d->depth - 1].x1 : m->s.d1, m->s.f, n));
    /* No final norm (NVlabs builds it, never applies it). y = unpatchify(head(tokens)). */
    WX_TRY(be->linear_forward(ctx, m->s.z, last, P(m->head), NULL, bn, D, p2c));
    WX_TRY(be->unpatchify_forward(ctx, y, m->s.z, b, d->out_channels, m->hp, m->wp, d->patch));
#undef P
    return WX_OK;
}

static wx_status check_batch(const wx_fcn *m, int64_t b) {
    if (b < 1 || b > m->max_batch)
        return wx_error_set(WX_ERR_USAGE, "model: batch %lld: expected 1..%lld (the batch the "
                            "model was created for)", (long long)b, (long long)m->max_batch);
    return WX_OK;
}

wx_status wx_fcn_forward(wx_fcn *m, float *y, const float *x, int64_t b) {
    WX_TRY(check_batch(m, b));
    if (m->ntapes >= m->max_tapes)
        return wx_error_set(WX_ERR_USAGE, "model: forward with backward recording needs a free "
                            "tape; all %d are in use (run backward first, or predict)",
                            m->max_tapes);
    WX_TRY(fcn_run(m, y, x, b, &m->tapes[m->ntapes]));
    m->ntapes++;
    return WX_OK;
}

wx_status wx_fcn_predict(wx_fcn *m, float *y, const float *x, int64_t b) {
    WX_TRY(check_batch(m, b));
    return fcn_run(m, y, x, b, NULL);
}
