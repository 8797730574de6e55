/* GraphCast through backend-table ops only (the "ops path"): the same encoder–processor–decoder
 * as graphcast_forward.c / graphcast_backward.c, but every MLP is plain ops (linear, gather_rows,
 * add, segment_sum, silu, layernorm, concat only to split weights) instead of the fused CPU
 * kernels of graphcast_mlp.c, and the graph index arrays, static inputs, tapes and scratch live
 * in the backend's memory. So it runs on any backend: the CUDA one (the reason it exists) and the
 * CPU one (how it is tested against the fused path, tests/unit/test_graphcast_ops.c).
 *
 * Selected at wx_gc_create: always when be->on_device; on the CPU backend only with the debug/test
 * switch WX_GC_OPS=1 in the environment, or wx_gc_create_path(..., ops = 1). The fused path stays
 * the CPU default (its row kernels fuse bias, gather and SiLU in one pass).
 *
 * Same math as the published model (edge MLP input [e, vs[snd], vr[rcv]], node MLP input
 * [v, Σ received]), with layer 0 split by its weight's column blocks as on the fused path:
 * W0·[e; vs[snd]; vr[rcv]] = We·e + (Ws·vs)[snd] + (Wr·vr)[rcv]. The node projections are computed
 * once per node (N ≪ E) and gathered per edge, so no (E, 3D) concatenation exists and the edge
 * MLPs cost about half the FLOPs. Backward: the projections' gradients are CSR segment sums of
 * the edge gradient over each node's sent / received edges (fixed order, no atomics), then one
 * linear backward per block. Results differ from the fused path only by float summation order.
 * Graph ops run once over all samples: the index arrays hold max_batch copies, sample q's entries
 * offset by q·N (nodes) or q·E (edges), and a batch b < max_batch uses their prefix.
 * Activation checkpointing is supported exactly as on the fused path (a processor step is rerun
 * from its stored latents before it is differentiated).
 *
 * Callers that may hold either path call the wx_gc_run_* dispatchers (train_model_gc_rollout.c). */
#ifndef WX_GRAPHCAST_OPS_H
#define WX_GRAPHCAST_OPS_H

#include "models/graphcast.h"

/* What the ops path keeps beyond wx_gc's arena, all in the backend's memory. Edge sets are
 * indexed 0 g2m, 1 mesh, 2 m2g. */
typedef struct wx_gc_ops {
    /* graph indices over max_batch samples (B·E edges, B·N nodes; module comment) */
    int32_t *snd[3], *rcv[3];    /* (B·E) sender / receiver of each edge */
    int32_t *rptr[3], *rperm[3]; /* receivers' CSR: (B·Nr+1), (B·E) */
    int32_t *sptr[3], *sperm[3]; /* senders' CSR: (B·Ns+1), (B·E) */
    float *grid_feat;            /* (B, Ng, 3) structural grid-node features */
    float *w3, *dw3;             /* (3, D, D) a layer-0 weight's column blocks, their gradients */
    float *pa, *pb;              /* (B·max(Ng, Nm), D) node projections, their grads, node temps;
                                  * in the arena's s.gb unless own_pn */
    int own_pn;
    /* predict-only models (graphcast_ops_pred.c): per edge set the chunks' CSRs over
     * [chunk edges | running sums], concatenated; ident (B·max N) = 0, 1, … */
    int32_t *cptr[3], *cperm[3], *ident;
    float *stage;                /* host staging for uploads (largest static input) */
    int32_t *istage;             /* host staging for the batched index arrays */
} wx_gc_ops;

/* Bytes the ops path allocates in the backend's memory beyond the arena (wx_gc_arena_bytes),
 * for m's graphs at m->max_batch; what wx_gc_ops_init allocates, counted without allocating. */
int64_t wx_gc_ops_bytes(const wx_gc *m);

/* Allocates m->ops in m->be's memory for m->max_batch samples and uploads the graphs and static
 * inputs (wx_gc_ops_upload). Called by wx_gc_create after the arena. */
wx_status wx_gc_ops_init(wx_gc *m);
/* Re-uploads index arrays, senders' CSR orders (m->snd_ptr/snd_perm, host) and the static node and
 * edge inputs from m->g (after wx_gc_static_refresh changed them). */
wx_status wx_gc_ops_upload(wx_gc *m);
void wx_gc_ops_free(wx_gc *m);

/* The ops path's forward (recording a tape), predict and backward; contracts as wx_gc_forward,
 * wx_gc_predict, wx_gc_backward, with x, y, dx, dy in the backend's memory. */
wx_status wx_gc_ops_forward(wx_gc *m, float *y, const float *x, int64_t b);
wx_status wx_gc_ops_predict(wx_gc *m, float *y, const float *x, int64_t b);
wx_status wx_gc_ops_backward(wx_gc *m, float *dx, const float *dy);

/* Dispatch on the path the model was created with (m->ops NULL: fused CPU path). */
wx_status wx_gc_run_forward(wx_gc *m, float *y, const float *x, int64_t b);
wx_status wx_gc_run_predict(wx_gc *m, float *y, const float *x, int64_t b);
wx_status wx_gc_run_backward(wx_gc *m, float *dx, const float *dy);

/* ---- internal (graphcast_ops.c → graphcast_ops_net.c): one MLP through ops ----
 * Input kinds as wx_gc_mlp_in (graphcast.h); in->es selects the edge set's device indices. */
wx_status wx_gc_ops_mlp_forward(wx_gc *m, const wx_gc_mlp *k, float *y, const wx_gc_mlp_tape *t,
                                const wx_gc_mlp_in *in, int64_t n);
wx_status wx_gc_ops_mlp_backward(wx_gc *m, const wx_gc_mlp *k, const float *dy,
                                 const wx_gc_mlp_tape *t, const wx_gc_mlp_in *in, int64_t n);
/* Index 0..2 of edge set es in m->g. */
int wx_gc_ops_edge_index(const wx_gc *m, const wx_edge_set *es);
/* The column blocks of W0 (fo, parts·D) of MLP k into ops->w3 (parts, fo, D). */
wx_status wx_gc_ops_split_w0(wx_gc *m, const wx_gc_mlp *k, int parts, int64_t fo);

/* In a function with wx_gc *m and int64_t *bytes: count (bytes not NULL: sizeof(*ptr)·count added
 * to *bytes) or allocate ptr in m's backend memory (returning WX_ERR_RUN, message set, when that
 * fails). One macro, so the dry count and the allocation cannot drift apart. */
#define WX_GC_OPS_BUF(ptr, count, what)                                                       \
    do {                                                                                      \
        const size_t n_ = sizeof(*(ptr)) * (size_t)(count);                                   \
        if (bytes) {                                                                          \
            *bytes += (int64_t)n_;                                                            \
        } else {                                                                              \
            (ptr) = wx_backend_alloc(m->be, m->ctx, n_, "graphcast " what);                   \
            if (!(ptr)) return WX_ERR_RUN;                                                    \
        }                                                                                     \
    } while (0)

/* Predict-only models (graphcast_ops_pred.c): wx_gc_pred_plan makes m->cs (host) once
 * m->chunk_rows is set, before the arena is carved; wx_gc_pred_buffers counts (bytes not NULL:
 * added to *bytes) or allocates the chunks' CSRs in o, wx_gc_pred_upload fills them. */
void wx_gc_pred_plan(wx_gc *m);
void wx_gc_pred_plan_free(wx_gc *m);
wx_status wx_gc_pred_buffers(wx_gc *m, wx_gc_ops *o, int64_t *bytes);
wx_status wx_gc_pred_upload(wx_gc *m);
/* wx_gc_ops_predict of a predict-only model: the same network in row chunks of m->chunk_rows,
 * the same bits. */
wx_status wx_gc_ops_predict_chunked(wx_gc *m, float *y, const float *x, int64_t b);

#endif
