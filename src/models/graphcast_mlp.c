/* GraphCast MLPs on the CPU with fused kernels (forward and backward), shared by
 * graphcast_forward.c and graphcast_backward.c.
 *
 * Why not the generic ops: an edge MLP's first layer W0·[e, vs[snd], vr[rcv]] is split by
 * columns, W0 = [We | Ws | Wr], into e·Weᵀ (one GEMM over the edges) plus the node projections
 * vs·Wsᵀ and vr·Wrᵀ (GEMMs over the far fewer nodes) gathered per edge. That is the same linear
 * map (sums in another order) at about half the edge-MLP FLOPs, and the (E, 3D) concatenation
 * and its gradient are never built. Backward mirrors it: the node projections' gradients are
 * segment sums of the edge gradient over senders and over receivers (CSR, fixed order). The
 * node MLP input [v, agg] is likewise two GEMMs into one output. Biases are the GEMMs'
 * start values; SiLU is one pass with a vectorised exp; backward computes SiLU and σ once and
 * reuses σ.
 * Determinism: no atomics; every reduction runs in an order fixed by the shapes (GEMMs are
 * OpenBLAS', whose order depends only on shapes and thread count). */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "models/graphcast.h"
#include "ops/wx_gemm.h"

#define P(i) wx_params_tensor(&m->params, (i))
#define G(i) wx_params_grad(&m->params, (i))
/* Below this many elements a parallel region costs more than it saves. */
#define GC_PAR_MIN (1 << 15)
#define GC_COL_BLOCK 64

static int gc_threads(const wx_gc *m) {
    return m->ctx && m->ctx->threads > 0 ? m->ctx->threads : omp_get_max_threads();
}

/* ---- GEMM shorthands (row-major; ld* are row strides, so column slices of W work) ----
 * Through wx_gemm_par: single-threaded OpenBLAS calls inside our OpenMP team, so OpenBLAS's own
 * pthread pool never competes with the team for the cores (with it, a 2-thread step ran 4-5x
 * slower under libgomp's default spin-wait, docs/benchmarks.md). */

/* y(n, o; ldy) = beta·y + x(n, k; ldx)·w(o, k; ldw)ᵀ */
static void gemm_xwt(const wx_gc *m, int64_t n, int64_t o, int64_t k, const float *x, int64_t ldx,
                     const float *w, int64_t ldw, float beta, float *y, int64_t ldy) {
    if (n == 0 || o == 0) return;
    wx_gemm_par(m->ctx, CblasNoTrans, CblasTrans, n, o, k, 1.0f, x, ldx, w, ldw, beta, y, ldy);
}

/* y(n, o; ldy) = bias (each row) + x(n, k; ldx)·w(o, k; ldw)ᵀ: the bias is the GEMM's starting
 * value (no separate pass over y to add it). */
static void gemm_xwt_bias(const wx_gc *m, int64_t n, int64_t o, int64_t k, const float *x,
                          int64_t ldx, const float *w, int64_t ldw, const float *bias, float *y,
                          int64_t ldy) {
    if (n == 0 || o == 0) return;
    wx_gemm_par_bias(m->ctx, CblasNoTrans, CblasTrans, n, o, k, x, ldx, w, ldw, bias, y, ldy);
}

/* dx(n, k; ldx) = beta·dx + dy(n, o)·w(o, k; ldw) */
static void gemm_dyw(const wx_gc *m, int64_t n, int64_t o, int64_t k, const float *dy,
                     const float *w, int64_t ldw, float beta, float *dx, int64_t ldx) {
    if (n == 0 || k == 0) return;
    wx_gemm_par(m->ctx, CblasNoTrans, CblasNoTrans, n, k, o, 1.0f, dy, o, w, ldw, beta, dx, ldx);
}

/* dw(o, k; ldw) += dy(n, o)ᵀ·x(n, k; ldx) */
static void gemm_dw(const wx_gc *m, int64_t n, int64_t o, int64_t k, const float *dy,
                    const float *x, int64_t ldx, float *dw, int64_t ldw) {
    if (n == 0) return;
    wx_gemm_par(m->ctx, CblasTrans, CblasNoTrans, o, k, n, 1.0f, dy, o, x, ldx, 1.0f, dw, ldw);
}

/* ---- element-wise kernels ---- */

/* e^x for x in [−87, 88] (clamped outside), relative error ~1e-7: 2^k · e^r with |r| ≤ ln2/2 and
 * a degree-6 Taylor polynomial; branch-free so loops over it vectorise. */
static inline __attribute__((always_inline)) float gc_exp(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float kf = x * 1.44269504088896341f;
    kf = (kf + 12582912.0f) - 12582912.0f; /* round to nearest integer (|kf| < 2^22) */
    float r = x - kf * 0.693145751953125f;
    r = r - kf * 1.428606765330187045e-06f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union {
        int32_t i;
        float f;
    } u;
    u.i = ((int32_t)kf + 127) << 23;
    return p * u.f;
}

/* Row kernels, compiled twice: for AVX2+FMA (chosen at run time when the CPU has it: 8 lanes for
 * the exp) and for the baseline ISA. Results may differ between the two in the last bit (FMA),
 * never between runs on one machine. */
#define GC_ROW_KERNELS(SUF, ATTR)                                                                 \
    /* x += bias (nullable); act = SiLU(x) (nullable) over one row of d */                      \
    ATTR static void bias_silu_row##SUF(float *x, float *act, const float *bias, int64_t d) {   \
        if (bias)                                                                               \
            _Pragma("omp simd") for (int64_t j = 0; j < d; j++) x[j] += bias[j];                \
        if (act)                                                                                \
            _Pragma("omp simd") for (int64_t j = 0; j < d; j++) act[j] =                       \
                x[j] / (1.0f + gc_exp(-x[j]));                                                 \
    }                                                                                           \
    /* x = (x + s) + t (x already holds the bias); act = SiLU(x) (nullable) */                 \
    ATTR static void edge_row##SUF(float *x, float *act, const float *s, const float *t,        \
                                   int64_t d) {                                                 \
        _Pragma("omp simd") for (int64_t j = 0; j < d; j++) x[j] = (x[j] + s[j]) + t[j];        \
        if (act)                                                                                \
            _Pragma("omp simd") for (int64_t j = 0; j < d; j++) act[j] =                       \
                x[j] / (1.0f + gc_exp(-x[j]));                                                 \
    }                                                                                           \
    /* act = pre·σ(pre), sig = σ(pre) over n */                                                 \
    ATTR static void silu_sig_row##SUF(float *act, float *sig, const float *pre, int64_t n) {   \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                   \
            float sg = 1.0f / (1.0f + gc_exp(-pre[i]));                                         \
            sig[i] = sg;                                                                        \
            act[i] = pre[i] * sg;                                                               \
        }                                                                                       \
    }

#define GC_ATTR_AVX2 __attribute__((optimize("no-trapping-math"), target("avx2,fma")))
#define GC_ATTR_BASE __attribute__((optimize("no-trapping-math")))
GC_ROW_KERNELS(_avx2, GC_ATTR_AVX2)
GC_ROW_KERNELS(_base, GC_ATTR_BASE)

static int gc_avx2(void) {
    static int has = -1;
    if (has < 0) has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has;
}

/* Rows handed out in runs of this many, one at a time: a thread the OS preempts on a shared
 * machine does not hold the others up at the end of the pass (element-wise: same result under
 * any schedule). */
#define GC_ROW_RUN 64

/* x(n, d) += bias(d) (nullable); act = SiLU(x) when act is not NULL. */
static void bias_silu(const wx_gc *m, float *x, float *act, const float *bias, int64_t n,
                      int64_t d) {
    if (!bias && !act) return;
    void (*row)(float *, float *, const float *, int64_t) =
        gc_avx2() ? bias_silu_row_avx2 : bias_silu_row_base;
#pragma omp parallel for num_threads(gc_threads(m)) if (n * d > GC_PAR_MIN) \
    schedule(dynamic, GC_ROW_RUN)
    for (int64_t r = 0; r < n; r++) row(x + r * d, act ? act + r * d : NULL, bias, d);
}

/* Edge first layer, per sample q: x[e] = (x[e] + ps[snd[e]]) + pr[rcv[e]] (x = e·Weᵀ + bias
 * already), then act = SiLU(x) (act nullable). x (b·E, d), ps (b·ns, d), pr (b·nr, d). */
static void edge_gather_silu(const wx_gc *m, float *x, float *act, const float *ps,
                             const float *pr, const wx_edge_set *es, int64_t b, int64_t d) {
    const int64_t E = es->n_edges, ns = es->n_senders, nr = es->n_receivers;
    const int32_t *snd = es->senders, *rcv = es->receivers;
    void (*row)(float *, float *, const float *, const float *, int64_t) =
        gc_avx2() ? edge_row_avx2 : edge_row_base;
    for (int64_t q = 0; q < b; q++) {
        float *xq = x + q * E * d, *aq = act ? act + q * E * d : NULL;
        const float *psq = ps + q * ns * d, *prq = pr + q * nr * d;
#pragma omp parallel for num_threads(gc_threads(m)) if (E * d > GC_PAR_MIN) \
    schedule(dynamic, GC_ROW_RUN)
        for (int64_t e = 0; e < E; e++)
            row(xq + e * d, aq ? aq + e * d : NULL, psq + (int64_t)snd[e] * d,
                prq + (int64_t)rcv[e] * d, d);
    }
}

/* act = SiLU(pre), sig = σ(pre); pre, act, sig (n). */
#define GC_RUN 4096
static void silu_sig(const wx_gc *m, float *act, float *sig, const float *pre, int64_t n) {
    void (*run)(float *, float *, const float *, int64_t) =
        gc_avx2() ? silu_sig_row_avx2 : silu_sig_row_base;
    int64_t nrun = (n + GC_RUN - 1) / GC_RUN;
#pragma omp parallel for num_threads(gc_threads(m)) if (n > GC_PAR_MIN) schedule(static)
    for (int64_t k = 0; k < nrun; k++) {
        int64_t i0 = k * GC_RUN, len = i0 + GC_RUN < n ? GC_RUN : n - i0;
        run(act + i0, sig + i0, pre + i0, len);
    }
}

/* Differentiates act = pre·σ(pre): d[i] ← d[i]·σ·(1 + pre·(1 − σ)), in place; d, pre, sig (n). */
static void silu_grad(const wx_gc *m, float *d, const float *pre, const float *sig, int64_t n) {
#pragma omp parallel for simd num_threads(gc_threads(m)) if (n > GC_PAR_MIN) schedule(static)
    for (int64_t i = 0; i < n; i++) d[i] = d[i] * sig[i] * (1.0f + pre[i] * (1.0f - sig[i]));
}

/* acc(cols) += Σ_r x(rows, cols)[r, :]: per column, float sums over runs of GC_SUM_RUN rows in
 * row order, accumulated in double; the order depends only on the shape. */
#define GC_SUM_RUN 32
static void col_sum_acc(const wx_gc *m, float *acc, const float *x, int64_t rows, int64_t cols) {
    int64_t nblk = (cols + GC_COL_BLOCK - 1) / GC_COL_BLOCK;
#pragma omp parallel for num_threads(gc_threads(m)) if (rows * cols > GC_PAR_MIN) schedule(static)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * GC_COL_BLOCK, c1 = c0 + GC_COL_BLOCK < cols ? c0 + GC_COL_BLOCK : cols;
        const int64_t w = c1 - c0;
        double s[GC_COL_BLOCK] = {0};
        for (int64_t r0 = 0; r0 < rows; r0 += GC_SUM_RUN) {
            int64_t r1 = r0 + GC_SUM_RUN < rows ? r0 + GC_SUM_RUN : rows;
            float t[GC_COL_BLOCK] = {0};
            for (int64_t r = r0; r < r1; r++) {
                const float *row = x + r * cols + c0;
#pragma omp simd
                for (int64_t j = 0; j < w; j++) t[j] += row[j];
            }
            for (int64_t j = 0; j < w; j++) s[j] += t[j];
        }
        for (int64_t j = c0; j < c1; j++) acc[j] += (float)s[j - c0];
    }
}

/* ---- MLP forward ---- */

/* Layer 0: dst (n, fo) = input · W0ᵀ + b0 for the three input kinds. For edges the node
 * projections go to s.ga (senders) and s.gb (receivers) and the gather happens in the SiLU pass. */
static void layer0_linear(wx_gc *m, const wx_gc_mlp *k, float *dst, int64_t fo,
                          const wx_gc_mlp_in *in, int64_t n) {
    const float *w = P(k->w[0]), *b0 = P(k->b[0]);
    const int64_t D = m->D, ld = k->in;
    switch (in->kind) {
    case WX_GC_IN_PLAIN:
        gemm_xwt_bias(m, n, fo, k->in, in->x, k->in, w, ld, b0, dst, fo);
        break;
    case WX_GC_IN_NODE: /* [v, agg] */
        gemm_xwt_bias(m, n, fo, D, in->x, D, w, ld, b0, dst, fo);
        gemm_xwt(m, n, fo, D, in->agg, D, w + D, ld, 1.0f, dst, fo);
        break;
    case WX_GC_IN_EDGE: { /* [e, vs[snd], vr[rcv]] */
        const wx_edge_set *es = in->es;
        gemm_xwt_bias(m, n, fo, D, in->x, D, w, ld, b0, dst, fo);
        gemm_xwt(m, in->b * es->n_senders, fo, D, in->vs, D, w + D, ld, 0.0f, m->s.ga, fo);
        gemm_xwt(m, in->b * es->n_receivers, fo, D, in->vr, D, w + 2 * D, ld, 0.0f, m->s.gb, fo);
        break;
    }
    }
}

wx_status wx_gc_mlp_forward(wx_gc *m, const wx_gc_mlp *k, float *y, const wx_gc_mlp_tape *t,
                            const wx_gc_mlp_in *in, int64_t n) {
    const int last = k->nlin - 1, ln = k->ln_w >= 0;
    const float *a = NULL;
    for (int i = 0; i <= last; i++) {
        /* pre_i = a·W_iᵀ + b_i (bias as the GEMM's start value); a ← SiLU(pre_i); the last
         * linear feeds the LayerNorm (or is y) */
        const int64_t fo = i == last ? k->out : k->hidden;
        float *dst = i < last ? t->pre[i] : (ln ? t->z : y);
        float *act = i < last ? (i % 2 == 0 ? m->s.h0 : m->s.h1) : NULL;
        if (i == 0) {
            layer0_linear(m, k, dst, fo, in, n);
            if (in->kind == WX_GC_IN_EDGE)
                edge_gather_silu(m, dst, act, m->s.ga, m->s.gb, in->es, in->b, fo);
            else
                bias_silu(m, dst, act, NULL, n, fo);
        } else {
            gemm_xwt_bias(m, n, fo, k->hidden, a, k->hidden, P(k->w[i]), k->hidden, P(k->b[i]),
                          dst, fo);
            bias_silu(m, dst, act, NULL, n, fo);
        }
        a = act;
    }
    if (!ln) return WX_OK;
    return m->be->layernorm_forward(m->ctx, y, t->mean, t->rstd, t->z, P(k->ln_w), P(k->ln_b), n,
                                    k->out, WX_GC_LN_EPS);
}

/* ---- MLP backward ---- */

/* Layer 0 backward from dpre (n, fo): weight/bias grads += and the input grads (see
 * wx_gc_mlp_in). Uses s.ga / s.gb for the edge kind's node-projection grads. */
static wx_status layer0_backward(wx_gc *m, const wx_gc_mlp *k, const float *dpre, int64_t fo,
                                 const wx_gc_mlp_in *in, int64_t n) {
    const float *w = P(k->w[0]);
    float *dw = G(k->w[0]);
    const int64_t D = m->D, ld = k->in;
    col_sum_acc(m, G(k->b[0]), dpre, n, fo);
    switch (in->kind) {
    case WX_GC_IN_PLAIN:
        gemm_dw(m, n, fo, k->in, dpre, in->x, k->in, dw, ld);
        if (in->dx) gemm_dyw(m, n, fo, k->in, dpre, w, ld, 0.0f, in->dx, k->in);
        break;
    case WX_GC_IN_NODE:
        gemm_dw(m, n, fo, D, dpre, in->x, D, dw, ld);
        gemm_dw(m, n, fo, D, dpre, in->agg, D, dw + D, ld);
        gemm_dyw(m, n, fo, D, dpre, w, ld, in->dx_acc ? 1.0f : 0.0f, in->dx, D);
        gemm_dyw(m, n, fo, D, dpre, w + D, ld, 0.0f, in->dagg, D);
        break;
    case WX_GC_IN_EDGE: {
        const wx_edge_set *es = in->es;
        const int64_t E = es->n_edges, ns = es->n_senders, nr = es->n_receivers;
        gemm_dw(m, n, fo, D, dpre, in->x, D, dw, ld);
        if (in->dx) gemm_dyw(m, n, fo, D, dpre, w, ld, in->dx_acc ? 1.0f : 0.0f, in->dx, D);
        /* ∂/∂(vs·Wsᵀ)[s] = Σ over the edges sent by s; likewise for receivers */
        for (int64_t q = 0; q < in->b; q++) {
            WX_TRY(m->be->segment_sum_forward(m->ctx, m->s.ga + q * ns * fo, dpre + q * E * fo,
                                              in->snd_ptr, in->snd_perm, ns, E, fo));
            WX_TRY(m->be->segment_sum_forward(m->ctx, m->s.gb + q * nr * fo, dpre + q * E * fo,
                                              es->row_ptr, es->perm, nr, E, fo));
        }
        gemm_dw(m, in->b * ns, fo, D, m->s.ga, in->vs, D, dw + D, ld);
        gemm_dw(m, in->b * nr, fo, D, m->s.gb, in->vr, D, dw + 2 * D, ld);
        gemm_dyw(m, in->b * ns, fo, D, m->s.ga, w + D, ld, in->dvs_acc ? 1.0f : 0.0f, in->dvs, D);
        gemm_dyw(m, in->b * nr, fo, D, m->s.gb, w + 2 * D, ld, 1.0f, in->dvr, D);
        break;
    }
    }
    return WX_OK;
}

wx_status wx_gc_mlp_backward(wx_gc *m, const wx_gc_mlp *k, const float *dy,
                             const wx_gc_mlp_tape *t, const wx_gc_mlp_in *in, int64_t n) {
    const int last = k->nlin - 1;
    const float *dcur = dy;
    if (k->ln_w >= 0) {
        /* y = LN(z) */
        WX_TRY(m->be->layernorm_backward(m->ctx, m->s.dz, G(k->ln_w), G(k->ln_b), dy, t->z,
                                         t->mean, t->rstd, P(k->ln_w), n, k->out));
        dcur = m->s.dz;
    }
    for (int i = last; i >= 1; i--) {
        /* z_i = a_i·W_iᵀ + b_i with a_i = SiLU(pre_{i−1}) (recomputed, σ kept for its grad) */
        const int64_t fo = i == last ? k->out : k->hidden, fi = k->hidden;
        float *da = dcur == m->s.dh ? m->s.dz : m->s.dh;
        silu_sig(m, m->s.h0, m->s.h1, t->pre[i - 1], n * fi);
        col_sum_acc(m, G(k->b[i]), dcur, n, fo);
        gemm_dw(m, n, fo, fi, dcur, m->s.h0, fi, G(k->w[i]), fi);
        gemm_dyw(m, n, fo, fi, dcur, P(k->w[i]), fi, 0.0f, da, fi);
        silu_grad(m, da, t->pre[i - 1], m->s.h1, n * fi);
        dcur = da;
    }
    return layer0_backward(m, k, dcur, k->nlin == 1 ? k->out : k->hidden, in, n);
}

wx_gc_mlp_in wx_gc_edge_in(const wx_gc *m, const wx_edge_set *es, const float *e, const float *vs,
                           const float *vr, int64_t b) {
    int i = es == &m->g.g2m ? 0 : (es == &m->g.mesh ? 1 : 2);
    return (wx_gc_mlp_in){.kind = WX_GC_IN_EDGE, .x = e, .vs = vs, .vr = vr, .es = es,
                          .snd_ptr = m->snd_ptr[i], .snd_perm = m->snd_perm[i], .b = b};
}
