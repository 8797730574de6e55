/* GraphCast's activation arena: where every tape, scratch and predict buffer lies in the one
 * allocation wx_gc_create makes (host memory, or the backend's on the ops path). The same carve
 * counts (base NULL) and places, so the dry counts (wx_gc_arena_bytes, wx_gc_count_bytes) are
 * what is allocated. */
#include "models/graphcast.h"

#include <string.h>

static int64_t al(int64_t n) { return (n + 15) / 16 * 16; }

typedef struct {
    float *base; /* NULL: count only */
    int64_t off;
} carver;

static float *carve(carver *c, int64_t n) {
    float *p = c->base ? c->base + c->off : NULL;
    c->off += al(n);
    return p;
}

static void carve_mlp(carver *c, wx_gc_mlp_tape *t, const wx_gc *m, int64_t rows, int64_t out) {
    for (int64_t i = 0; i < m->c.hidden_layers; i++) t->pre[i] = carve(c, rows * m->D);
    t->z = carve(c, rows * out);
    t->mean = carve(c, rows);
    t->rstd = carve(c, rows);
}

static void carve_step(carver *c, wx_gc_step_tape *t, const wx_gc *m, int64_t e, int64_t nr) {
    carve_mlp(c, &t->edge, m, e, m->D);
    carve_mlp(c, &t->node, m, nr, m->D);
    t->agg = carve(c, nr * m->D);
}

/* One tape for b samples. */
static void carve_tape(carver *c, wx_gc_tape *t, const wx_gc *m, int64_t b) {
    const int64_t D = m->D, ng = b * m->ng, nm = b * m->nm;
    t->gin = carve(c, ng * (m->cin + 3));
    carve_mlp(c, &t->emb_grid, m, ng, D);
    carve_mlp(c, &t->emb_mesh, m, nm, D);
    carve_mlp(c, &t->emb_g2m, m, b * m->eg, D);
    t->vg0 = carve(c, ng * D);
    t->vm0 = carve(c, nm * D);
    t->eg0 = carve(c, b * m->eg * D);
    carve_step(c, &t->enc, m, b * m->eg, nm);
    carve_mlp(c, &t->enc_grid, m, ng, D);
    t->vg1 = carve(c, ng * D);
    carve_mlp(c, &t->emb_mesh_e, m, b * m->em, D);
    for (int64_t s = 0; s < m->S; s++) {
        float *p = carve(c, b * m->em * D);
        if (c->base) t->em[s] = p;
    }
    for (int64_t s = 0; s <= m->S; s++) {
        float *p = carve(c, nm * D);
        if (c->base) t->vm[s] = p;
    }
    if (!m->checkpoint)
        for (int64_t s = 0; s < m->S; s++) {
            wx_gc_step_tape tmp, *st = c->base ? &t->proc[s] : &tmp;
            carve_step(c, st, m, b * m->em, nm);
        }
    carve_mlp(c, &t->emb_m2g, m, b * m->ed, D);
    t->ed0 = carve(c, b * m->ed * D);
    carve_step(c, &t->dec, m, b * m->ed, ng);
    t->vg2 = carve(c, ng * D);
    /* Output MLP: no LayerNorm, and its output is not needed in backward. */
    for (int64_t i = 0; i < m->c.hidden_layers; i++) t->out.pre[i] = carve(c, ng * D);
    t->out.z = t->out.mean = t->out.rstd = NULL;
}

static int64_t max3(int64_t a, int64_t b, int64_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

/* A predict-only ops-path model (graphcast_ops_pred.c): full size only the node latents, their
 * sums (also the receivers' projections), the senders' projections, the channels-last grid, the
 * mesh edge latents and one edge set's MLP outputs (summed once all chunks are done); the rest
 * for one chunk of chunk_rows rows. */
static void carve_rest_chunked(carver *c, wx_gc *m, int64_t b) {
    const int64_t D = m->D, fin = m->cin + 3, wout = m->cout > D ? m->cout : D;
    const int64_t nmax = m->ng > m->nm ? m->ng : m->nm, R = m->chunk_rows;
    m->in.min = carve(c, b * m->nm * fin);
    m->in.fg2m = carve(c, b * m->eg * 4);
    m->in.fmesh = carve(c, b * m->em * 4);
    m->in.fm2g = carve(c, b * m->ed * 4);
    m->s.cat = carve(c, b * m->ng * (fin > m->cout ? fin : m->cout));
    m->s.ga = carve(c, R * D);                                /* gathered projections */
    m->s.gb = carve(c, ((b * nmax > R ? b * nmax : R) + b * nmax) * D); /* ops->pa | ops->pb */
    m->s.h0 = carve(c, R * D);
    m->s.h1 = m->c.hidden_layers > 1 ? carve(c, R * D) : NULL;
    m->s.upd = carve(c, R * wout);
    m->s.mlp_pre = carve(c, m->c.hidden_layers * R * D);
    m->s.mlp_z = carve(c, R * wout);
    m->s.mlp_stat = carve(c, 2 * R);
    m->s.pv[0] = carve(c, b * m->nm * D);
    m->s.pv[1] = carve(c, b * m->nm * D);
    m->s.pe[0] = carve(c, b * m->em * D); /* mesh edge latents, residual in place */
    /* one chunk's edge-MLP outputs and the running sums of its receivers */
    m->s.pe[1] = carve(c, max3(m->cs[0].xrows, m->cs[1].xrows, m->cs[2].xrows) * D);
    m->s.ec = carve(c, R * D);
    m->pred.gin = carve(c, R * fin);
    m->pred.vg0 = carve(c, b * m->ng * D);
    m->pred.enc.agg = carve(c, b * nmax * D);
}

/* Everything that is not a tape: static inputs, scratch, predict buffers. A predict-only model
 * (no tapes) has no backward scratch, and its node projections need node rows only. */
static void carve_rest(carver *c, wx_gc *m, int64_t b) {
    if (m->chunk_rows) {
        carve_rest_chunked(c, m, b);
        return;
    }
    const int64_t D = m->D, fin = m->cin + 3, wout = m->cout > D ? m->cout : D;
    const int64_t emax = max3(m->eg, m->em, m->ed), nmax = m->ng > m->nm ? m->ng : m->nm;
    const int64_t rows = b * (emax > nmax ? emax : nmax);
    const int bw = !m->predict_only; /* backward buffers */
    m->in.min = carve(c, b * m->nm * fin);
    m->in.fg2m = carve(c, b * m->eg * 4);
    m->in.fmesh = carve(c, b * m->em * 4);
    m->in.fm2g = carve(c, b * m->ed * 4);
    /* channels-last grid input and its grad (the MLP inputs are never concatenated) */
    int64_t catw = b * m->ng * (fin > m->cout ? fin : m->cout);
    m->s.cat = carve(c, catw);
    m->s.dcat = bw ? carve(c, catw) : NULL;
    m->s.ga = carve(c, b * (bw ? emax : nmax) * D); /* fused forward: vs·Wsᵀ (b·Ns rows) */
    m->s.gb = carve(c, b * (bw ? emax : nmax) * D); /* fused forward: vr·Wrᵀ (b·Nr rows) */
    m->s.h0 = carve(c, rows * D);
    m->s.h1 = bw || m->c.hidden_layers > 1 ? carve(c, rows * D) : NULL;
    m->s.dh = bw ? carve(c, rows * D) : NULL;
    m->s.upd = carve(c, rows * wout);
    m->s.dupd = bw ? carve(c, rows * wout) : NULL;
    m->s.dz = bw ? carve(c, rows * wout) : NULL;
    m->s.dvg = bw ? carve(c, b * m->ng * D) : NULL;
    m->s.dvm = bw ? carve(c, b * m->nm * D) : NULL;
    m->s.dtmp = bw ? carve(c, b * nmax * D) : NULL;
    m->s.dem = bw ? carve(c, b * emax * D) : NULL;
    /* predict: one shared MLP tape, two alternating latents per kind */
    m->s.mlp_pre = carve(c, m->c.hidden_layers * rows * D);
    m->s.mlp_z = carve(c, rows * wout);
    m->s.mlp_stat = carve(c, 2 * rows);
    for (int i = 0; i < 2; i++) {
        m->s.pv[i] = carve(c, b * m->nm * D);
        m->s.pe[i] = carve(c, b * emax * D);
    }
    m->pred.gin = carve(c, b * m->ng * fin);
    m->pred.vg0 = carve(c, b * m->ng * D);
    m->pred.enc.agg = carve(c, b * nmax * D);
    if (m->checkpoint && bw) carve_step(c, &m->s.step, m, b * m->em, b * m->nm);
}

/* Points the predict tape at the shared scratch; latents alias as the forward order allows. */
static void pred_tape_wire(wx_gc *m) {
    wx_gc_tape *t = &m->pred;
    wx_gc_mlp_tape sh;
    memset(&sh, 0, sizeof sh);
    const int64_t emax = max3(m->eg, m->em, m->ed), nmax = m->ng > m->nm ? m->ng : m->nm;
    const int64_t rows = m->chunk_rows ? m->chunk_rows : m->max_batch * (emax > nmax ? emax : nmax);
    for (int64_t i = 0; i < m->c.hidden_layers; i++) sh.pre[i] = m->s.mlp_pre + i * rows * m->D;
    sh.z = m->s.mlp_z, sh.mean = m->s.mlp_stat, sh.rstd = m->s.mlp_stat + rows;
    t->emb_grid = t->emb_mesh = t->emb_g2m = t->enc.edge = t->enc.node = t->enc_grid = sh;
    t->emb_mesh_e = t->emb_m2g = t->dec.edge = t->dec.node = t->out = sh;
    t->vg1 = t->vg2 = t->vg0;
    t->dec.agg = t->enc.agg;
    t->vm0 = m->s.pv[0];
    t->eg0 = m->s.pe[0];
    t->ed0 = m->s.pe[0];
    if (m->chunk_rows) t->eg0 = t->ed0 = m->s.ec; /* one chunk's; mesh edges in place in pe[0] */
    for (int64_t s = 0; s < m->S; s++) {
        t->em[s] = m->s.pe[m->chunk_rows ? 0 : s % 2];
        t->proc[s] = (wx_gc_step_tape){sh, sh, t->enc.agg};
    }
    for (int64_t s = 0; s <= m->S; s++) t->vm[s] = m->s.pv[(s + 1) % 2];
}

void wx_gc_arena_bytes(const wx_gc *m, int64_t *tape_bytes, int64_t *other_bytes) {
    carver c = {NULL, 0};
    wx_gc_tape t;
    memset(&t, 0, sizeof t);
    carve_tape(&c, &t, m, m->max_batch);
    *tape_bytes = c.off * (int64_t)sizeof(float);
    *other_bytes = (m->arena_len - (int64_t)m->max_tapes * c.off) * (int64_t)sizeof(float);
}


int64_t wx_gc_arena_carve(wx_gc *m, float *base) {
    carver c = {base, 0};
    wx_gc_tape tmp;
    memset(&tmp, 0, sizeof tmp);
    for (int t = 0; t < m->max_tapes; t++)
        carve_tape(&c, base ? &m->tapes[t] : &tmp, m, m->max_batch);
    carve_rest(&c, m, m->max_batch);
    if (base) pred_tape_wire(m);
    return c.off;
}
