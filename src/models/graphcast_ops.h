/* GraphCast through backend-table ops only (the "ops path"): the same encoder–processor–decoder
 * as graphcast_forward.c / graphcast_backward.c, but every MLP is plain ops (concat, gather_rows,
 * linear, silu, layernorm) instead of the fused CPU kernels of graphcast_mlp.c, and the graph
 * index arrays, static inputs, tapes and scratch live in the backend's memory. So it runs on any
 * backend: the CUDA one (the reason it exists) and the CPU one (how it is tested against the
 * fused path, tests/unit/test_graphcast_ops.c).
 *
 * Selected at wx_gc_create: always when be->on_device; on the CPU backend only with the debug/test
 * switch WX_GC_OPS=1 in the environment, or wx_gc_create_path(..., ops = 1). The fused path stays
 * the CPU default (about twice fewer edge-MLP FLOPs, see graphcast_mlp.c).
 *
 * Same math and concatenation orders as the published model: edge MLP input [e, vs[snd], vr[rcv]],
 * node MLP input [v, Σ received]. Results differ from the fused path only by float summation
 * order (the fused path splits layer 0 by column blocks). Sums over edges are the deterministic
 * CSR segment sums (receivers' and senders' CSR orders; no gather_rows backward, no atomics).
 * Activation checkpointing is supported exactly as on the fused path (a processor step is rerun
 * from its stored latents before it is differentiated).
 *
 * Callers that may hold either path call the wx_gc_run_* dispatchers (train_model_gc.c). */
#ifndef WX_GRAPHCAST_OPS_H
#define WX_GRAPHCAST_OPS_H

#include "models/graphcast.h"

/* What the ops path keeps beyond wx_gc's arena, all in the backend's memory. Edge sets are
 * indexed 0 g2m, 1 mesh, 2 m2g. */
typedef struct wx_gc_ops {
    int32_t *snd[3], *rcv[3];    /* (E) sender / receiver of each edge */
    int32_t *rptr[3], *rperm[3]; /* receivers' CSR: (Nr+1), (E) */
    int32_t *sptr[3], *sperm[3]; /* senders' CSR: (Ns+1), (E) */
    float *grid_feat;            /* (Ng, 3) structural grid-node features */
    float *cat, *dcat;           /* (rows, 3D) an MLP's layer-0 input and its gradient */
    float *ta, *tb;              /* (rows, D) node-gradient partials */
    float *stage;                /* host staging for uploads (largest static input) */
} wx_gc_ops;

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

#endif
