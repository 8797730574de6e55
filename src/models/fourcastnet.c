/* FourCastNet: sizes, kept-mode mask, parameter table (NVlabs names), initialisation, arena. */
#include "models/fourcastnet.h"

#include <math.h>
#include <string.h>

#include "core/wx_rng.h"

static int64_t mlp_hidden(const wx_fcn_config *d) {
    return (int64_t)((double)d->embed_dim * d->mlp_ratio); /* int(dim * mlp_ratio) */
}

int64_t wx_fcn_mode_mask(uint8_t *mask, int64_t hp, int64_t wp, double fraction, int two_sided) {
    int64_t wf = wp / 2 + 1, count = 0;
    int64_t total = hp / 2 + 1;
    int64_t kept_y = (int64_t)((double)total * fraction);
    int64_t kept_x = two_sided ? (int64_t)((double)wf * fraction) : kept_y;
    for (int64_t ky = 0; ky < hp; ky++) {
        int row;
        if (two_sided) row = ky < kept_y || (kept_y > 0 && ky > hp - kept_y);
        else row = ky >= total - kept_y && ky < total + kept_y;
        for (int64_t kx = 0; kx < wf; kx++) {
            uint8_t k = (uint8_t)(row && kx < kept_x);
            mask[ky * wf + kx] = k;
            count += k;
        }
    }
    return count;
}

wx_status wx_fcn_check(const wx_fcn_config *d) {
#define BAD(...) return wx_error_set(WX_ERR_USAGE, "model: " __VA_ARGS__)
    if (d->patch < 1) BAD("patch_size %lld: expected >= 1", (long long)d->patch);
    if (d->img_h < d->patch || d->img_w < d->patch || d->img_h % d->patch || d->img_w % d->patch)
        BAD("img_size %lldx%lld: expected multiples of patch_size %lld", (long long)d->img_h,
            (long long)d->img_w, (long long)d->patch);
    if (d->in_channels < 1 || d->out_channels < 1)
        BAD("in_channels %lld, out_channels %lld: expected >= 1", (long long)d->in_channels,
            (long long)d->out_channels);
    if (d->embed_dim < 1 || d->num_blocks < 1 || d->embed_dim % d->num_blocks)
        BAD("embed_dim %lld: expected a positive multiple of num_blocks %lld",
            (long long)d->embed_dim, (long long)d->num_blocks);
    if (d->depth < 1) BAD("depth %lld: expected >= 1", (long long)d->depth);
    if (!(d->mlp_ratio > 0) || mlp_hidden(d) < 1)
        BAD("mlp_ratio %g: expected embed_dim*mlp_ratio >= 1", d->mlp_ratio);
    if (d->hidden_size_factor < 1)
        BAD("hidden_size_factor %lld: expected >= 1", (long long)d->hidden_size_factor);
    if (!(d->sparsity_threshold >= 0))
        BAD("sparsity_threshold %g: expected >= 0", d->sparsity_threshold);
    if (!(d->hard_thresholding_fraction > 0 && d->hard_thresholding_fraction <= 1))
        BAD("hard_thresholding_fraction %g: expected in (0, 1]", d->hard_thresholding_fraction);
    int64_t hp = d->img_h / d->patch, wp = d->img_w / d->patch;
    uint8_t *mask = wx_malloc((size_t)(hp * (wp / 2 + 1)));
    int64_t kept = wx_fcn_mode_mask(mask, hp, wp, d->hard_thresholding_fraction, d->two_sided_modes);
    free(mask);
    if (kept < 1)
        BAD("hard_thresholding_fraction %g keeps no Fourier mode on a %lldx%lld patch grid",
            d->hard_thresholding_fraction, (long long)hp, (long long)wp);
    return WX_OK;
#undef BAD
}

/* The table in NVlabs state_dict order; records the indices in m when m is not NULL. */
static void fcn_table(wx_params *p, const wx_fcn_config *d, wx_fcn *m) {
    const int64_t D = d->embed_dim, nb = d->num_blocks, bs = D / nb;
    const int64_t hid = bs * d->hidden_size_factor, hm = mlp_hidden(d), pp = d->patch;
    const int64_t ntok = (d->img_h / pp) * (d->img_w / pp);
    char name[WX_PARAM_NAME_MAX];
#define DIMS(...) (const int64_t[]){__VA_ARGS__}
    int pos = wx_params_add(p, "pos_embed", 3, DIMS(1, ntok, D), WX_PARAM_NO_DECAY);
    int pe_w = wx_params_add(p, "patch_embed.proj.weight", 4, DIMS(D, d->in_channels, pp, pp), 0);
    int pe_b = wx_params_add(p, "patch_embed.proj.bias", 1, DIMS(D), WX_PARAM_NO_DECAY);
    for (int64_t i = 0; i < d->depth; i++) {
        wx_fcn_block_idx k;
#define ADD(field, suffix, nd, dims, fl)                                        \
        snprintf(name, sizeof name, "blocks.%lld." suffix, (long long)i);       \
        k.field = wx_params_add(p, name, nd, dims, fl);
        ADD(norm1_w, "norm1.weight", 1, DIMS(D), WX_PARAM_NO_DECAY)
        ADD(norm1_b, "norm1.bias", 1, DIMS(D), WX_PARAM_NO_DECAY)
        ADD(w1, "filter.w1", 4, DIMS(2, nb, bs, hid), 0)
        ADD(b1, "filter.b1", 3, DIMS(2, nb, hid), WX_PARAM_NO_DECAY)
        ADD(w2, "filter.w2", 4, DIMS(2, nb, hid, bs), 0)
        ADD(b2, "filter.b2", 3, DIMS(2, nb, bs), WX_PARAM_NO_DECAY)
        ADD(norm2_w, "norm2.weight", 1, DIMS(D), WX_PARAM_NO_DECAY)
        ADD(norm2_b, "norm2.bias", 1, DIMS(D), WX_PARAM_NO_DECAY)
        ADD(fc1_w, "mlp.fc1.weight", 2, DIMS(hm, D), 0)
        ADD(fc1_b, "mlp.fc1.bias", 1, DIMS(hm), WX_PARAM_NO_DECAY)
        ADD(fc2_w, "mlp.fc2.weight", 2, DIMS(D, hm), 0)
        ADD(fc2_b, "mlp.fc2.bias", 1, DIMS(D), WX_PARAM_NO_DECAY)
#undef ADD
        if (m) m->blk[i] = k;
    }
    int norm_w = -1, norm_b = -1;
    if (d->count_unused_norm) {
        const unsigned fl = WX_PARAM_NO_DECAY | WX_PARAM_UNUSED;
        norm_w = wx_params_add(p, "norm.weight", 1, DIMS(D), fl);
        norm_b = wx_params_add(p, "norm.bias", 1, DIMS(D), fl);
    }
    int head = wx_params_add(p, "head.weight", 2, DIMS(d->out_channels * pp * pp, D), 0);
#undef DIMS
    if (m) {
        m->pos = pos, m->pe_w = pe_w, m->pe_b = pe_b;
        m->norm_w = norm_w, m->norm_b = norm_b, m->head = head;
    }
}

void wx_fcn_param_table(wx_params *p, const wx_fcn_config *d) { fcn_table(p, d, NULL); }

static void fill_const(float *x, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) x[i] = v;
}

/* timm trunc_normal_(std=.02) with its default absolute bounds ±2, i.e. ±100 standard deviations
 * (practically untruncated, as the released model was initialised). */
static void fill_trunc02(wx_rng *r, const wx_params *p, int i) {
    wx_rng_fill_trunc_normal_f32(r, wx_params_tensor(p, i), p->t[i].size, 0.0f, 0.02f,
                                 -2.0f / 0.02f, 2.0f / 0.02f);
}

/* Fills the parameters on the host (through a staging copy when they are device memory). */
static wx_status init_params(wx_fcn *m, uint64_t seed) {
    wx_params hp = m->params, *p = &hp;
    WX_TRY(wx_params_host_begin(&m->params, &hp.data));
    wx_rng r;
    wx_rng_init(&r, seed, 0);
    memset(p->data, 0, sizeof(float) * (size_t)p->len);
    fill_trunc02(&r, p, m->pos);
    /* Conv2d keeps PyTorch's default: kaiming_uniform(a=√5) = U(±1/√fan_in), bias the same. */
    float bound = (float)(1.0 / sqrt((double)(m->d.in_channels * m->d.patch * m->d.patch)));
    wx_rng_fill_uniform_f32(&r, wx_params_tensor(p, m->pe_w), p->t[m->pe_w].size, -bound, bound);
    wx_rng_fill_uniform_f32(&r, wx_params_tensor(p, m->pe_b), p->t[m->pe_b].size, -bound, bound);
    for (int64_t i = 0; i < m->d.depth; i++) {
        const wx_fcn_block_idx *k = &m->blk[i];
        fill_const(wx_params_tensor(p, k->norm1_w), p->t[k->norm1_w].size, 1.0f);
        fill_const(wx_params_tensor(p, k->norm2_w), p->t[k->norm2_w].size, 1.0f);
        /* AFNO2D: every weight and bias is scale·randn, scale = 0.02. */
        const int afno[4] = {k->w1, k->b1, k->w2, k->b2};
        for (int j = 0; j < 4; j++)
            wx_rng_fill_normal_f32(&r, wx_params_tensor(p, afno[j]), p->t[afno[j]].size, 0.0f,
                                   0.02f);
        fill_trunc02(&r, p, k->fc1_w);
        fill_trunc02(&r, p, k->fc2_w); /* Linear biases stay 0 */
    }
    if (m->norm_w >= 0) fill_const(wx_params_tensor(p, m->norm_w), p->t[m->norm_w].size, 1.0f);
    fill_trunc02(&r, p, m->head);
    return wx_params_host_end(&m->params, hp.data);
}

/* Device parameters: a failed copy leaves the error set (wx_fcn_create reports it). */
void wx_fcn_init_params(wx_fcn *m, uint64_t seed) { (void)init_params(m, seed); }

/* Per-sample element counts of the tape and scratch pieces, each rounded to 16 floats. */
typedef struct {
    int64_t xin, tok, x1, spec, fsaved, h, stat, z;
} fcn_sizes;

static int64_t al(int64_t n) { return (n + 15) / 16 * 16; }

static fcn_sizes sizes_of(const wx_fcn_config *d, int64_t kept) {
    int64_t hp = d->img_h / d->patch, wp = d->img_w / d->patch, n = hp * wp, D = d->embed_dim;
    fcn_sizes s;
    s.xin = d->in_channels * d->img_h * d->img_w;
    s.tok = n * D;
    s.x1 = n * D;
    s.spec = hp * (wp / 2 + 1) * D * 2;
    s.fsaved = wx_afno_filter_saved_len(1, kept, D, d->hidden_size_factor);
    s.h = n * mlp_hidden(d);
    s.stat = n;
    s.z = d->out_channels * d->img_h * d->img_w;
    return s;
}

/* Elements of one tape and of the scratch, for b samples (b = 1 gives the per-sample size). */
static void arena_lens(const wx_fcn_config *d, int64_t kept, int64_t b, int64_t *tape,
                       int64_t *scratch) {
    fcn_sizes s = sizes_of(d, kept);
    *tape = al(b * s.xin) + (d->depth + 1) * al(b * s.tok) +
            d->depth * (al(b * s.x1) + al(b * s.spec) + al(b * s.fsaved) + al(b * s.h) +
                        4 * al(b * s.stat));
    *scratch = 6 * al(b * s.tok) + 2 * al(b * s.spec) + 2 * al(b * s.h) + al(b * s.z) +
               2 * al(b * s.stat) + al(b * s.fsaved);
}

static int64_t kept_of(const wx_fcn_config *d) {
    int64_t hp = d->img_h / d->patch, wp = d->img_w / d->patch;
    uint8_t *mask = wx_malloc((size_t)(hp * (wp / 2 + 1)));
    int64_t kept = wx_fcn_mode_mask(mask, hp, wp, d->hard_thresholding_fraction, d->two_sided_modes);
    free(mask);
    return kept;
}

void wx_fcn_arena_bytes(const wx_fcn_config *d, int64_t *tape_bytes, int64_t *scratch_bytes) {
    int64_t t, s;
    arena_lens(d, kept_of(d), 1, &t, &s);
    *tape_bytes = t * (int64_t)sizeof(float);
    *scratch_bytes = s * (int64_t)sizeof(float);
}

static float *carve(float **cur, int64_t n) {
    float *p = *cur;
    *cur += al(n);
    return p;
}

static void arena_carve(wx_fcn *m) {
    const wx_fcn_config *d = &m->d;
    fcn_sizes s = sizes_of(d, m->kept);
    int64_t b = m->max_batch;
    float *cur = m->arena;
    for (int t = 0; t < m->max_tapes; t++) {
        wx_fcn_tape *tp = &m->tapes[t];
        tp->xin = carve(&cur, b * s.xin);
        for (int64_t i = 0; i <= d->depth; i++) tp->tok[i] = carve(&cur, b * s.tok);
        for (int64_t i = 0; i < d->depth; i++) {
            wx_fcn_tape_block *k = &tp->blk[i];
            k->x1 = carve(&cur, b * s.x1);
            k->spec = carve(&cur, b * s.spec);
            k->fsaved = carve(&cur, b * s.fsaved);
            k->h = carve(&cur, b * s.h);
            k->mean1 = carve(&cur, b * s.stat);
            k->rstd1 = carve(&cur, b * s.stat);
            k->mean2 = carve(&cur, b * s.stat);
            k->rstd2 = carve(&cur, b * s.stat);
        }
    }
    float **tok6[6] = {&m->s.u, &m->s.f, &m->s.v, &m->s.dcur, &m->s.d1, &m->s.tmp};
    for (int j = 0; j < 6; j++) *tok6[j] = carve(&cur, b * s.tok);
    m->s.spec = carve(&cur, b * s.spec);
    m->s.dspec = carve(&cur, b * s.spec);
    m->s.g = carve(&cur, b * s.h);
    m->s.dg = carve(&cur, b * s.h);
    m->s.z = carve(&cur, b * s.z);
    m->s.mean = carve(&cur, b * s.stat);
    m->s.rstd = carve(&cur, b * s.stat);
    m->s.fsaved = carve(&cur, b * s.fsaved);
    WX_ASSERT(cur - m->arena == m->arena_len);
}

wx_fcn *wx_fcn_create(wx_ctx *ctx, const wx_backend *be, const wx_fcn_config *d, uint64_t seed,
                      int64_t max_batch, int max_tapes) {
    if (wx_fcn_check(d) != WX_OK) return NULL;
    if (max_batch < 1 || max_tapes < 0) {
        wx_error_set(WX_ERR_USAGE, "model: batch %lld, tapes %d: expected batch >= 1, tapes >= 0",
                     (long long)max_batch, max_tapes);
        return NULL;
    }
    wx_fcn *m = wx_calloc(1, sizeof *m);
    m->ctx = ctx, m->be = be, m->d = *d;
    m->d.h_tokens = d->img_h / d->patch, m->d.w_tokens = d->img_w / d->patch;
    m->d.block_size = d->embed_dim / d->num_blocks;
    m->d.mlp_hidden = mlp_hidden(d);
    m->hp = d->img_h / d->patch, m->wp = d->img_w / d->patch, m->wf = m->wp / 2 + 1;
    m->ntok = m->hp * m->wp;
    m->mlp_hidden = mlp_hidden(d);
    m->mask = wx_malloc((size_t)(m->hp * m->wf));
    m->kept = wx_fcn_mode_mask(m->mask, m->hp, m->wp, d->hard_thresholding_fraction,
                               d->two_sided_modes);
    m->filter_saved = wx_afno_filter_saved_len(1, m->kept, d->embed_dim, d->hidden_size_factor);
    m->blk = wx_calloc((size_t)d->depth, sizeof *m->blk);
    wx_params_init(&m->params);
    fcn_table(&m->params, d, m);
    m->max_batch = max_batch, m->max_tapes = max_tapes;
    m->tapes = wx_calloc((size_t)(max_tapes ? max_tapes : 1), sizeof *m->tapes);
    for (int t = 0; t < max_tapes; t++) {
        m->tapes[t].tok = wx_calloc((size_t)d->depth + 1, sizeof(float *));
        m->tapes[t].blk = wx_calloc((size_t)d->depth, sizeof(wx_fcn_tape_block));
    }
    int64_t tape, scratch;
    arena_lens(d, m->kept, max_batch, &tape, &scratch);
    m->arena_len = tape * max_tapes + scratch;
    m->arena = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)m->arena_len, "model arena");
    if (m->be->on_device) /* the AFNO filter reads the mask on the device */
        m->mask_dev = wx_backend_alloc(be, ctx, (size_t)(m->hp * m->wf), "model mode mask");
    if (m->be->on_device && m->mask_dev &&
        be->copy_h2d(ctx, m->mask_dev, m->mask, (size_t)(m->hp * m->wf)) != WX_OK) {
        wx_fcn_destroy(m);
        return NULL;
    }
    if (!m->arena || (m->be->on_device && !m->mask_dev)) {
        wx_error_wrap(WX_ERR_RUN, "model: cannot allocate the activation arena (%.1f MiB for "
                      "batch %lld, %d tapes): ", (double)m->arena_len * 4.0 / 1048576.0,
                      (long long)max_batch, max_tapes);
        wx_fcn_destroy(m);
        return NULL;
    }
    arena_carve(m);
    if (wx_params_alloc_on(&m->params, be, ctx) != WX_OK || init_params(m, seed) != WX_OK) {
        wx_fcn_destroy(m);
        return NULL;
    }
    return m;
}

void wx_fcn_destroy(wx_fcn *m) {
    if (!m) return;
    for (int t = 0; t < m->max_tapes; t++) {
        free(m->tapes[t].tok);
        free(m->tapes[t].blk);
    }
    free(m->tapes);
    m->be->mem_free(m->ctx, m->arena);
    if (m->mask_dev) m->be->mem_free(m->ctx, m->mask_dev);
    free(m->blk);
    free(m->mask);
    wx_params_free(&m->params);
    free(m);
}

void wx_fcn_tapes_clear(wx_fcn *m) { m->ntapes = 0; }
