/* GraphCast: the encoder–processor–decoder GNN of google-deepmind/graphcast (graphcast.py,
 * deep_typed_graph_net.py), forward and backward, on the graphs of models/mesh.h.
 * Facts: shared/reference/graphcast.md §1.1, §1.5–1.7.
 *
 *   x(B,Cin,H,W) → grid nodes [x | sin lat, cos lon, sin lon]           (Ng, Cin+3)
 *   mesh nodes   [0 … 0 | sin lat, cos lon, sin lon]                    (Nm, Cin+3)
 *   Encoder:  vg = MLP(grid), vm = MLP(mesh), eg = MLP(g2m features)    embedders
 *             eg' = MLP([eg, vg[snd], vm[rcv]]); vm += MLP([vm, Σ_rcv eg']); vg += MLP(vg)
 *   Processor: em = MLP(mesh-edge features); S times, unshared:
 *             em' = MLP_s([em, vm[snd], vm[rcv]]); vm += MLP_s([vm, Σ em']); em += em'
 *   Decoder:  ed = MLP(m2g features); ed' = MLP([ed, vm[snd], vg[rcv]]);
 *             vg += MLP([vg, Σ ed']); y = MLP_out(vg) (no LayerNorm) → (B,Cout,H,W)
 * Every MLP is Linear → SiLU → (Linear → SiLU)… → Linear → LayerNorm(eps 1e-5, Haiku's default).
 * Sums over received edges are deterministic CSR segment sums. The orphan updates are as
 * published: the grid nodes' own MLP in the encoder is applied; the decoder's mesh-node MLP
 * exists (parameters, count, checkpoints) but its output is never read by anything, so it is not
 * evaluated (flag WX_PARAM_UNUSED, gradient 0 — exactly what autograd gives the published model).
 * Likewise the edge residuals after the encoder, the last processor step and the decoder are
 * unused and skipped.
 *
 * Input x holds normalised data channels (graphcast_config.h for the layout); the output is the
 * normalised residual (target − last input)/diffs_std. The helpers at the end convert.
 *
 * Parameter names follow the Haiku modules: "<gnn>.<module>_mlp.linear_<i>.{weight,bias}" and
 * "<gnn>.<module>_layer_norm.{weight,bias}", gnn in {grid2mesh_gnn, mesh_gnn, mesh2grid_gnn}.
 * Haiku: "<gnn>/~_networks_builder/<module>_mlp/~/linear_<i>" w (in, out) = our weightᵀ (out,
 * in), b = bias; "<module>_layer_norm" scale = weight, offset = bias.
 *
 * Activations for backward are recorded on tapes as in FourCastNet: wx_gc_forward pushes one,
 * wx_gc_backward pops the latest (rollout: forward k times, backward k times in reverse).
 * With checkpointing on, a tape keeps only the processor's per-step node and edge latents, and
 * backward recomputes each step's MLP activations before differentiating it: same results bit
 * for bit (the recomputation runs the same ops on the same inputs). */
#ifndef WX_GRAPHCAST_H
#define WX_GRAPHCAST_H

#include <stdint.h>

#include "backend/wx_backend.h"
#include "models/graphcast_config.h"
#include "models/mesh.h"
#include "models/params.h"

#define WX_GC_LN_EPS 1e-5

/* One MLP: linear_0 … linear_k (k = hidden_layers), optional LayerNorm. Parameter indices. */
typedef struct {
    int nlin;
    int w[WX_GC_MAX_HIDDEN_LAYERS + 1], b[WX_GC_MAX_HIDDEN_LAYERS + 1];
    int ln_w, ln_b; /* -1: no LayerNorm */
    int64_t in, hidden, out;
} wx_gc_mlp;

/* What one MLP application over n rows keeps for backward: pre-activations of the hidden layers
 * (n, hidden) each, the last linear's output z (n, out) (the LayerNorm input) and its stats (n).
 * The MLP input is not part of it (the caller keeps or rebuilds it). */
typedef struct {
    float *pre[WX_GC_MAX_HIDDEN_LAYERS];
    float *z, *mean, *rstd;
} wx_gc_mlp_tape;

/* One message-passing step over an edge set (edge MLP) and its receivers (node MLP). agg (Nr, D)
 * is Σ of the updated edges per receiver, kept because the node MLP input is [n, agg]. */
typedef struct {
    wx_gc_mlp_tape edge, node;
    float *agg;
} wx_gc_step_tape;

/* One recorded forward; all tensors for b ≤ max_batch samples, rows ordered (sample, node). */
typedef struct {
    int64_t b;
    float *gin;                 /* (B, Ng, Cin+3) grid-node input */
    wx_gc_mlp_tape emb_grid, emb_mesh, emb_g2m;
    float *vg0, *vm0, *eg0;     /* (B,Ng,D) (B,Nm,D) (B,Eg,D) embedded */
    wx_gc_step_tape enc;        /* edge = g2m edges, node = mesh nodes */
    wx_gc_mlp_tape enc_grid;    /* orphan grid-node update */
    float *vg1;                 /* (B,Ng,D) grid latents after the encoder */
    wx_gc_mlp_tape emb_mesh_e;
    float **em;                 /* [S] (B,Em,D): edge latents entering step s */
    float **vm;                 /* [S+1] (B,Nm,D): mesh latents entering step s; vm[S] → decoder */
    wx_gc_step_tape *proc;      /* [S]; unused with checkpointing (recomputed into m->s.step) */
    wx_gc_mlp_tape emb_m2g;
    float *ed0;                 /* (B,Ed,D) */
    wx_gc_step_tape dec;        /* edge = m2g edges, node = grid nodes */
    float *vg2;                 /* (B,Ng,D) output-MLP input */
    wx_gc_mlp_tape out;
} wx_gc_tape;

typedef struct {
    wx_gc_mlp emb_grid, emb_mesh, emb_g2m, enc_edge, enc_mesh, enc_grid; /* grid2mesh_gnn */
    wx_gc_mlp emb_mesh_e, *proc_edge, *proc_node;                        /* mesh_gnn [S] */
    wx_gc_mlp emb_m2g, dec_edge, dec_grid, dec_mesh, out;                /* mesh2grid_gnn */
} wx_gc_modules;

typedef struct {
    wx_ctx *ctx;
    const wx_backend *be;
    wx_gc_config c;
    int checkpoint;            /* recompute processor steps in backward */
    int predict_only;          /* max_tapes 0: no backward scratch, no gradients */
    int64_t chunk_rows;        /* predict-only ops path: rows per chunk (graphcast_ops_pred.c) */
    struct {                   /* its per-edge-set sums chunk by chunk (host plan): chunk k of the
                                * B·E edge rows adds to receivers rlo[k] … rlo[k]+nrr[k]−1 */
        int64_t nch, xrows;    /* chunks; rows of s.pe[1] (chunk + receivers) it needs */
        int64_t *rlo, *nrr, *poff, *qoff; /* (nch); offsets into ops->cptr / ops->cperm */
    } cs[3];
    struct wx_gc_ops *ops;     /* NULL: fused CPU path; else the ops path (graphcast_ops.h) */
    wx_mesh_graphs g;
    int64_t ng, nm, eg, em, ed, D, cin, cout, S;
    wx_params params;
    wx_gc_modules mod;
    int32_t *snd_ptr[3], *snd_perm[3]; /* senders' CSR order of g2m, mesh, m2g (ops/graph_csr.h) */
    int64_t max_batch;
    int max_tapes, ntapes;
    wx_gc_tape *tapes;         /* (max_tapes) */
    wx_gc_tape pred;           /* forward without recording: aliases scratch */
    float *arena;
    int64_t arena_len;         /* elements */
    struct {                   /* static inputs broadcast over max_batch samples */
        float *min;            /* (B, Nm, Cin+3) mesh-node input: zeros | structural */
        float *fg2m, *fmesh, *fm2g; /* (B, E, 4) edge features */
    } in;
    struct {                   /* scratch */
        float *cat, *dcat;     /* (B·Ng, Cin+3): channels-last grid input and its grad */
        float *ga, *gb;        /* (B·max(E, N), D) sender/receiver node projections, grads */
        float *h0, *h1, *dh;   /* (B·rows, D) hidden activations and their grads */
        float *upd, *dupd;     /* (B·rows, max(D, Cout)) MLP outputs / grads */
        float *dz;             /* (B·rows, max(D, Cout)) */
        float *dvg, *dvm, *dtmp; /* node-latent grads (B·Ng|Nm, D) */
        float *dem;            /* (B, Em, D) edge-latent grad */
        float *mlp_pre, *mlp_z, *mlp_stat; /* shared MLP tape for predict */
        float *pv[2], *pe[2];  /* predict: alternating mesh node / edge latents */
        wx_gc_step_tape step;  /* checkpointing: one step's recomputed tape */
        float *ec;             /* predict-only ops path: (chunk_rows, D) a chunk's edge latents */
    } s;
} wx_gc;

/* Builds the parameter table (counting without allocating: wx_params_total). mod may be NULL. */
void wx_gc_param_table(wx_params *p, const wx_gc_config *c, wx_gc_modules *mod);

/* Builds the graphs for c (grid = global c->resolution grid, rows north→south from 90°, columns
 * east from 0°, i.e. the wx_grid_global layout), the parameters (Haiku init: weights truncated
 * normal ±2σ with σ = 1/√fan_in, biases 0, LayerNorm 1/0) from stream 0 of `seed`, and an arena
 * for max_batch samples and max_tapes recorded forwards. */
wx_gc *wx_gc_create(wx_ctx *ctx, const wx_backend *be, const wx_gc_config *c, uint64_t seed,
                    int64_t max_batch, int max_tapes, int checkpoint);
/* The same with the path chosen: ops = 1 runs every MLP through backend-table ops with graphs,
 * tapes and scratch in the backend's memory (graphcast_ops.h; call it through wx_gc_run_*);
 * ops = 0 the fused CPU kernels (CPU backend only). wx_gc_create picks ops = 1 when be->on_device,
 * or on the CPU when the environment has WX_GC_OPS=1 (a debug/test switch). */
wx_gc *wx_gc_create_path(wx_ctx *ctx, const wx_backend *be, const wx_gc_config *c, uint64_t seed,
                         int64_t max_batch, int max_tapes, int checkpoint, int ops);
/* The same with the chunk size of a predict-only ops-path model (max_tapes 0, ops 1): rows per
 * chunk, 0 = WX_GC_CHUNK_ROWS, rounded up to a multiple of WX_GC_CHUNK_ALIGN (a multiple of the
 * GEMM kernels' row blocks: 24 in OpenBLAS's Zen sgemm, 16 or 32 elsewhere). Ignored otherwise.
 * On the CPU backend with one thread the results do not depend on it
 * (tests/unit/test_graphcast_predict.c). */
#define WX_GC_CHUNK_ALIGN 384
#define WX_GC_CHUNK_ROWS (170 * WX_GC_CHUNK_ALIGN) /* 65,280 */
wx_gc *wx_gc_create_chunked(wx_ctx *ctx, const wx_backend *be, const wx_gc_config *c,
                            uint64_t seed, int64_t max_batch, int max_tapes, int checkpoint,
                            int ops, int64_t chunk_rows);

/* What wx_gc_create_chunked would allocate, counted without allocating (the graphs are built):
 * arena (wx_gc_arena_bytes), the ops path's own buffers (wx_gc_ops_bytes, 0 on the fused path)
 * and the parameters (with gradients unless max_tapes is 0). */
typedef struct {
    int64_t arena, ops, params, total;
} wx_gc_bytes;
wx_status wx_gc_count_bytes(const wx_gc_config *c, int64_t max_batch, int max_tapes,
                            int checkpoint, int ops, int64_t chunk_rows, wx_gc_bytes *out);
void wx_gc_destroy(wx_gc *m);
/* Writes m->params.data on the host: for host parameters only (wx_gc_create stages it for
 * parameters in device memory). */
void wx_gc_init_params(wx_gc *m, uint64_t seed);

/* Arena bytes (activation memory) of the model for one tape and for the rest, at max_batch. */
void wx_gc_arena_bytes(const wx_gc *m, int64_t *tape_bytes, int64_t *other_bytes);

/* y(B,Cout,H,W) = f(x(B,Cin,H,W)), recording a tape. y must not alias x. */
wx_status wx_gc_forward(wx_gc *m, float *y, const float *x, int64_t b);
/* Same numbers without recording. */
wx_status wx_gc_predict(wx_gc *m, float *y, const float *x, int64_t b);
/* Pops the latest tape: parameter grads +=, dx(B,Cin,H,W) = ∂L/∂x (overwrite; nullable). */
wx_status wx_gc_backward(wx_gc *m, float *dx, const float *dy);
void wx_gc_tapes_clear(wx_gc *m);

/* Re-copies the graphs' static inputs (node and edge features) into the model's batch buffers,
 * after a caller changed features or senders in m->g (tests, externally built graphs); receivers
 * and the CSR orders must be unchanged. Fails on a sender out of range or a failed device copy
 * (ops path). */
wx_status wx_gc_static_refresh(wx_gc *m);

static inline void wx_gc_zero_grad(wx_gc *m) { wx_params_zero_grad(&m->params); }

/* ---- internal, shared by graphcast_forward.c, graphcast_backward.c, graphcast_mlp.c ---- */
/* graphcast_arena.c: the arena's length in floats for m's tapes, batch, path and chunk rows
 * (base NULL: counted only), or with base the tapes, scratch and static-input pointers placed
 * in it and the predict tape wired. */
int64_t wx_gc_arena_carve(wx_gc *m, float *base);
/* An MLP's input. PLAIN: x (n, in). NODE: [x, agg], both (n, D). EDGE: [x, vs[snd], vr[rcv]] of
 * edge set es for b samples: x (b·E, D), vs (b·ns, D), vr (b·nr, D), snd_ptr/snd_perm the
 * senders' CSR order. Backward outputs: dx (PLAIN: overwrite, nullable; NODE: overwrite or +=
 * with dx_acc; EDGE: same, nullable), dagg (NODE: overwrite), dvs (EDGE: overwrite or += with
 * dvs_acc), dvr (EDGE: +=; may equal dvs). */
/* EDGE_PROJ (ops path, forward only): the edge input with the node projections already made:
 * x (n, D) edges, vs / vr the projections vs·Wsᵀ / vr·Wrᵀ (rows, fo), isnd / ircv (n) each
 * edge's row in them (backend memory). */
enum { WX_GC_IN_PLAIN, WX_GC_IN_NODE, WX_GC_IN_EDGE, WX_GC_IN_EDGE_PROJ };
typedef struct {
    int kind;
    const float *x, *agg, *vs, *vr;
    const wx_edge_set *es;
    const int32_t *snd_ptr, *snd_perm;
    const int32_t *isnd, *ircv;
    int64_t b;
    float *dx, *dagg, *dvs, *dvr;
    int dx_acc, dvs_acc;
} wx_gc_mlp_in;
/* y (n, out) = MLP(input), recording pre-activations, z and LayerNorm stats into t. Scratch:
 * s.h0, s.h1, and for edges s.ga, s.gb. */
wx_status wx_gc_mlp_forward(wx_gc *m, const wx_gc_mlp *mlp, float *y, const wx_gc_mlp_tape *t,
                            const wx_gc_mlp_in *in, int64_t n);
/* Differentiates wx_gc_mlp_forward: parameter grads +=, input grads as wx_gc_mlp_in says, from
 * dy (n, out) (dy is not modified, but must not be s.dz, s.dh, s.h0, s.h1, s.ga or s.gb). */
wx_status wx_gc_mlp_backward(wx_gc *m, const wx_gc_mlp *mlp, const float *dy,
                             const wx_gc_mlp_tape *t, const wx_gc_mlp_in *in, int64_t n);
/* The EDGE input of edge set es (m->g.g2m, mesh or m2g) with its senders' CSR order. */
wx_gc_mlp_in wx_gc_edge_in(const wx_gc *m, const wx_edge_set *es, const float *e, const float *vs,
                           const float *vr, int64_t b);
/* Runs processor step s from (em[s], vm[s]) to vm[s+1] (and em_next unless NULL), recording
 * into t. */
wx_status wx_gc_proc_step(wx_gc *m, int64_t s, const float *em, const float *vm, float *em_next,
                          float *vm_next, const wx_gc_step_tape *t, int64_t b);

/* What differs between the two backward paths (the fused CPU kernels, graphcast_backward.c, and
 * the ops path, graphcast_ops_net.c); wx_gc_backward_walk differentiates the network once for
 * both. */
typedef struct {
    /* MLP backward; redo: its internals were not recorded and are first rebuilt from its input */
    wx_status (*mlp)(wx_gc *m, int redo, const wx_gc_mlp *k, const float *dy,
                     const wx_gc_mlp_tape *own, const wx_gc_mlp_in *in, int64_t n);
    /* One message-passing step backward (contract at graphcast_backward.c step_backward). */
    wx_status (*step)(wx_gc *m, int redo, const wx_gc_mlp *ke, const wx_gc_mlp *kn,
                      const wx_gc_step_tape *t, const wx_edge_set *es, const float *e,
                      const float *vs, const float *vr, float *dvr, float *dvs, int dvs_fresh,
                      const float *de_next, float *de, int64_t b);
    /* Processor step s forward, rerun under checkpointing (as wx_gc_proc_step). */
    wx_status (*proc_step)(wx_gc *m, int64_t s, const float *em, const float *vm, float *em_next,
                           float *vm_next, const wx_gc_step_tape *t, int64_t b);
    /* whether, under checkpointing, the forward left the MLPs outside the processor unrecorded */
    int redo_mlps;
} wx_gc_back_path;
/* Backward of the latest tape through path p (dx nullable); pops the tape. */
wx_status wx_gc_backward_walk(wx_gc *m, float *dx, const float *dy, const wx_gc_back_path *p);

/* ---- graphcast_loss.c: loss, normalisation and rollout helpers for the trainer ----
 * Target channel order: the surface variables in config order, then each atmospheric variable
 * with its levels (variable outer, level inner), as wx_gc_config lists them. */

/* Latitude weights (graphcast losses.py normalized_latitude_weights): cos(lat)·sin(Δ/2), with
 * sin²(Δ/4) on rows at ±90°, or cos(lat) when no row is at a pole; normalised to mean 1.
 * lat (nlat) degrees, equally spaced; w (nlat). WX_ERR_USAGE for nlat < 2 or uneven spacing. */
wx_status wx_gc_latitude_weights(const double *lat, int64_t nlat, double *w);
/* Per-variable loss weight: 2m temperature 1; 10 m winds, mean sea-level pressure and total
 * precipitation 0.1; everything else 1. GraphCast or ERA5 short names (2t, 10u, 10v, msl, tp). */
double wx_gc_variable_weight(const char *name);
/* Weights for the backend's mse_latw op so that it computes the GraphCast loss
 *   Σ_v w_v · mean_{b,h,w,level}((pred − target)² · w_lat · w_level),  w_level = p / mean(p)
 * (surface variables: w_level = 1): wch[c] = Cout · w_v · w_level / levels_v, wlat as above.
 * lat (nlat) degrees; wlat (nlat), wch (Cout). */
wx_status wx_gc_loss_weights(const wx_gc_config *c, const double *lat, float *wlat, float *wch);
/* loss = mse_latw(pred, target) / steps: one rollout step's share of the loss averaged over
 * `steps` autoregressive steps (sum the returned values over the steps). pred, target
 * (B,Cout,H,W); weights from wx_gc_loss_weights, in the backend's memory. */
wx_status wx_gc_loss_forward(wx_ctx *ctx, const wx_backend *be, float *loss, const float *pred,
                             const float *target, const float *wlat, const float *wch, int64_t b,
                             int64_t c, int64_t h, int64_t w, int steps);
/* dpred (B,Cout,H,W) = dloss · ∂loss/∂pred (overwrite). */
wx_status wx_gc_loss_backward(wx_ctx *ctx, const wx_backend *be, float *dpred, double dloss,
                              const float *pred, const float *target, const float *wlat,
                              const float *wch, int64_t b, int64_t c, int64_t h, int64_t w,
                              int steps);

/* Normalisation (graphcast normalization.py InputsAndResiduals), host memory, per channel c of
 * x (B,C,HW): inputs x ← (x − mean[c]) / std[c]; targets that are inputs:
 * residual = (target − last) / diff_std; prediction = last + out · diff_std (last = the input
 * frame at t in physical units). */
void wx_gc_normalise(float *x, int64_t b, int64_t c, int64_t hw, const double *mean,
                     const double *std);
void wx_gc_residual_target(float *res, const float *target, const float *last, int64_t b,
                           int64_t c, int64_t hw, const double *diff_std);
void wx_gc_prediction(float *pred, const float *out, const float *last, int64_t b, int64_t c,
                      int64_t hw, const double *diff_std);

/* Rollout in normalised space (host memory). For target c, prev[c] and last[c] are its input
 * channels at t−6h and t (−1: none); scale[c] = diff_std[c] / std[c] turns the normalised
 * residual into a normalised input increment. The next input is `base` (the data: forcings at
 * the new times, statics) with  x1[prev[c]] = x0[last[c]],  x1[last[c]] = x0[last[c]] +
 * scale[c]·y0[c].  x0, x1, base (B,Cin,HW); y0 (B,Cout,HW). */
typedef struct {
    int64_t cin, cout;
    const int32_t *prev, *last; /* (cout) */
    const float *scale;         /* (cout) */
} wx_gc_rollout_map;
void wx_gc_rollout_next(const wx_gc_rollout_map *r, float *x1, const float *x0, const float *y0,
                        const float *base, int64_t b, int64_t hw);
/* Backward of wx_gc_rollout_next: dx0 += ∂/∂x0 (accumulate), dy0 += ∂/∂y0 (accumulate), from
 * dx1 (B,Cin,HW). */
void wx_gc_rollout_next_backward(const wx_gc_rollout_map *r, float *dx0, float *dy0,
                                 const float *dx1, int64_t b, int64_t hw);

#endif
