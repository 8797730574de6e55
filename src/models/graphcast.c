/* GraphCast: parameter table (Haiku module names), initialisation, graphs, static inputs, arena. */
#include "models/graphcast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_rng.h"
#include "models/graphcast_ops.h"
#include "ops/graph_csr.h"

/* Adds "<gnn>.<module>_mlp.linear_<i>.{weight,bias}" and "<gnn>.<module>_layer_norm.*". */
static void mlp_add(wx_params *p, wx_gc_mlp *mlp, const char *gnn, const char *module, int64_t in,
                    int64_t hidden, int64_t out, int64_t hidden_layers, int ln, unsigned flags) {
    char name[WX_PARAM_NAME_MAX];
    wx_gc_mlp k;
    memset(&k, 0, sizeof k);
    k.nlin = (int)hidden_layers + 1;
    k.in = in, k.hidden = hidden, k.out = out;
    for (int i = 0; i < k.nlin; i++) {
        int64_t fi = i == 0 ? in : hidden, fo = i == k.nlin - 1 ? out : hidden;
        snprintf(name, sizeof name, "%s.%s_mlp.linear_%d.weight", gnn, module, i);
        k.w[i] = wx_params_add(p, name, 2, (const int64_t[]){fo, fi}, flags);
        snprintf(name, sizeof name, "%s.%s_mlp.linear_%d.bias", gnn, module, i);
        k.b[i] = wx_params_add(p, name, 1, (const int64_t[]){fo}, flags | WX_PARAM_NO_DECAY);
    }
    k.ln_w = k.ln_b = -1;
    if (ln) {
        snprintf(name, sizeof name, "%s.%s_layer_norm.weight", gnn, module);
        k.ln_w = wx_params_add(p, name, 1, (const int64_t[]){out}, flags | WX_PARAM_NO_DECAY);
        snprintf(name, sizeof name, "%s.%s_layer_norm.bias", gnn, module);
        k.ln_b = wx_params_add(p, name, 1, (const int64_t[]){out}, flags | WX_PARAM_NO_DECAY);
    }
    if (mlp) *mlp = k;
}

void wx_gc_param_table(wx_params *p, const wx_gc_config *c, wx_gc_modules *mod) {
    const int64_t D = c->latent_size, k = c->hidden_layers, fin = c->in_channels + 3;
    wx_gc_modules tmp;
    memset(&tmp, 0, sizeof tmp);
    wx_gc_modules *o = mod ? mod : &tmp;
    const char *g2m = "grid2mesh_gnn", *mg = "mesh_gnn", *m2g = "mesh2grid_gnn";
    /* grid2mesh_gnn: embedders, then processor step 0 (edges, then nodes by type name). */
    mlp_add(p, &o->emb_g2m, g2m, "encoder_edges_grid2mesh", 4, D, D, k, 1, 0);
    mlp_add(p, &o->emb_grid, g2m, "encoder_nodes_grid_nodes", fin, D, D, k, 1, 0);
    mlp_add(p, &o->emb_mesh, g2m, "encoder_nodes_mesh_nodes", fin, D, D, k, 1, 0);
    mlp_add(p, &o->enc_edge, g2m, "processor_edges_0_grid2mesh", 3 * D, D, D, k, 1, 0);
    mlp_add(p, &o->enc_grid, g2m, "processor_nodes_0_grid_nodes", D, D, D, k, 1, 0);
    mlp_add(p, &o->enc_mesh, g2m, "processor_nodes_0_mesh_nodes", 2 * D, D, D, k, 1, 0);
    /* mesh_gnn */
    mlp_add(p, &o->emb_mesh_e, mg, "encoder_edges_mesh", 4, D, D, k, 1, 0);
    for (int64_t s = 0; s < c->gnn_msg_steps; s++) {
        char mod_e[48], mod_n[48];
        snprintf(mod_e, sizeof mod_e, "processor_edges_%lld_mesh", (long long)s);
        snprintf(mod_n, sizeof mod_n, "processor_nodes_%lld_mesh_nodes", (long long)s);
        mlp_add(p, mod ? &mod->proc_edge[s] : NULL, mg, mod_e, 3 * D, D, D, k, 1, 0);
        mlp_add(p, mod ? &mod->proc_node[s] : NULL, mg, mod_n, 2 * D, D, D, k, 1, 0);
    }
    /* mesh2grid_gnn */
    mlp_add(p, &o->emb_m2g, m2g, "encoder_edges_mesh2grid", 4, D, D, k, 1, 0);
    mlp_add(p, &o->dec_edge, m2g, "processor_edges_0_mesh2grid", 3 * D, D, D, k, 1, 0);
    mlp_add(p, &o->dec_grid, m2g, "processor_nodes_0_grid_nodes", 2 * D, D, D, k, 1, 0);
    mlp_add(p, &o->dec_mesh, m2g, "processor_nodes_0_mesh_nodes", D, D, D, k, 1, WX_PARAM_UNUSED);
    mlp_add(p, &o->out, m2g, "decoder_nodes_grid_nodes", D, D, c->out_channels, k, 0, 0);
}

static void mlp_init(wx_rng *r, wx_params *p, const wx_gc_mlp *k) {
    for (int i = 0; i < k->nlin; i++) {
        const wx_param_info *t = &p->t[k->w[i]];
        /* hk.Linear default: TruncatedNormal(stddev = 1/√fan_in), cut at ±2 stddev. */
        float sd = (float)(1.0 / sqrt((double)t->dims[1]));
        wx_rng_fill_trunc_normal_f32(r, wx_params_tensor(p, k->w[i]), t->size, 0.0f, sd, -2.0f,
                                     2.0f);
    }
    if (k->ln_w >= 0) {
        float *g = wx_params_tensor(p, k->ln_w);
        for (int64_t j = 0; j < k->out; j++) g[j] = 1.0f;
    }
}

/* Initialises the parameters in host memory (p->data may be a host staging copy, see
 * init_params_on). */
void wx_gc_init_params(wx_gc *m, uint64_t seed) {
    wx_params *p = &m->params;
    wx_rng r;
    wx_rng_init(&r, seed, 0);
    memset(p->data, 0, sizeof(float) * (size_t)p->len);
    const wx_gc_modules *o = &m->mod;
    const wx_gc_mlp *list[] = {&o->emb_g2m, &o->emb_grid, &o->emb_mesh, &o->enc_edge,
                               &o->enc_grid, &o->enc_mesh, &o->emb_mesh_e};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++) mlp_init(&r, p, list[i]);
    for (int64_t s = 0; s < m->S; s++) {
        mlp_init(&r, p, &o->proc_edge[s]);
        mlp_init(&r, p, &o->proc_node[s]);
    }
    const wx_gc_mlp *list2[] = {&o->emb_m2g, &o->dec_edge, &o->dec_grid, &o->dec_mesh, &o->out};
    for (size_t i = 0; i < sizeof list2 / sizeof *list2; i++) mlp_init(&r, p, list2[i]);
}

static void fill_static(wx_gc *m) {
    const int64_t fin = m->cin + 3, b = m->max_batch;
    for (int64_t q = 0; q < b; q++) {
        float *mi = m->in.min + q * m->nm * fin;
        memset(mi, 0, sizeof(float) * (size_t)(m->nm * fin));
        for (int64_t v = 0; v < m->nm; v++)
            memcpy(mi + v * fin + m->cin, m->g.mesh_features + 3 * v, 3 * sizeof(float));
        memcpy(m->in.fg2m + q * m->eg * 4, m->g.g2m.features, sizeof(float) * (size_t)(m->eg * 4));
        memcpy(m->in.fmesh + q * m->em * 4, m->g.mesh.features,
               sizeof(float) * (size_t)(m->em * 4));
        memcpy(m->in.fm2g + q * m->ed * 4, m->g.m2g.features, sizeof(float) * (size_t)(m->ed * 4));
    }
}

/* Senders' CSR orders (backward sums edge grads per sender in a fixed order). */
static wx_status sender_csr(wx_gc *m) {
    const wx_edge_set *es[3] = {&m->g.g2m, &m->g.mesh, &m->g.m2g};
    for (int i = 0; i < 3; i++) {
        if (!m->snd_ptr[i]) {
            m->snd_ptr[i] = wx_malloc(((size_t)es[i]->n_senders + 1) * sizeof(int32_t));
            m->snd_perm[i] = wx_malloc(((size_t)es[i]->n_edges + 1) * sizeof(int32_t));
        }
        WX_TRY(wx_graph_csr_build(es[i]->senders, es[i]->n_edges, es[i]->n_senders,
                                  m->snd_ptr[i], m->snd_perm[i]));
    }
    return WX_OK;
}

wx_status wx_gc_static_refresh(wx_gc *m) {
    if (!m->ops) fill_static(m);
    WX_TRY(sender_csr(m)); /* a sender out of range: the CSR builder names it */
    return m->ops ? wx_gc_ops_upload(m) : WX_OK; /* device copies can fail */
}

/* The parameters of a predict-only model: data without gradients, in the backend's memory when
 * it is a device's (as wx_params_alloc_on places them). */
static wx_status params_alloc(wx_gc *m) {
    wx_params *p = &m->params;
    if (!m->predict_only) return wx_params_alloc_on(p, m->be, m->ctx);
    const size_t bytes = sizeof(float) * (size_t)(p->len ? p->len : 1);
    if (m->be->on_device) {
        p->be = m->be, p->be_ctx = m->ctx;
        p->data = wx_backend_alloc(m->be, m->ctx, bytes, "model parameters");
        return p->data ? WX_OK : WX_ERR_RUN;
    }
    p->data = calloc(1, bytes);
    return p->data ? WX_OK
                   : wx_error_set(WX_ERR_RUN, "model parameters: cannot allocate %zu bytes", bytes);
}

/* Parameters in the backend's memory (device for CUDA), initialised on the host and uploaded. */
static wx_status init_params_on(wx_gc *m, uint64_t seed) {
    WX_TRY(params_alloc(m));
    float *dev = m->params.data, *host;
    WX_TRY(wx_params_host_begin(&m->params, &host));
    m->params.data = host;
    wx_gc_init_params(m, seed);
    m->params.data = dev;
    return wx_params_host_end(&m->params, host);
}

/* The multi-mesh of levels min..max when min > 0 (mesh.c builds 0..max). */
static wx_status restrict_mesh(wx_mesh_graphs *g, int lo) {
    int32_t *s, *r;
    int64_t e;
    WX_TRY(wx_mesh_face_edges(&g->ico, lo, g->ico.levels, &s, &r, &e));
    wx_mesh_edge_set_free(&g->mesh);
    wx_edge_set *es = &g->mesh;
    es->senders = s, es->receivers = r, es->n_edges = e;
    es->n_senders = es->n_receivers = g->n_mesh;
    es->row_ptr = wx_malloc(((size_t)g->n_mesh + 1) * sizeof(int32_t));
    es->perm = wx_malloc((size_t)e * sizeof(int32_t));
    WX_TRY(wx_graph_csr_build(r, e, g->n_mesh, es->row_ptr, es->perm));
    return wx_mesh_edge_features(es, g->ico.xyz, g->ico.xyz, NULL, 0.0);
}

static wx_status build_graphs(wx_gc *m) {
    const wx_gc_config *c = &m->c;
    double *lat = wx_malloc(sizeof(double) * (size_t)c->nlat);
    double *lon = wx_malloc(sizeof(double) * (size_t)c->nlon);
    for (int64_t j = 0; j < c->nlat; j++) lat[j] = 90.0 - (double)j * c->resolution;
    for (int64_t i = 0; i < c->nlon; i++) lon[i] = (double)i * c->resolution;
    wx_mesh_options o = {.levels = (int)c->mesh_max_level, .fraction = c->radius_fraction,
                         .m2g_norm = c->m2g_norm, .lat = lat, .lon = lon,
                         .nlat = (int)c->nlat, .nlon = (int)c->nlon};
    wx_status st = wx_mesh_graphs_build(&o, &m->g);
    free(lat);
    free(lon);
    WX_TRY(st);
    if (c->mesh_min_level > 0) WX_TRY(restrict_mesh(&m->g, (int)c->mesh_min_level));
    return WX_OK;
}

static void tape_arrays(wx_gc_tape *t, int64_t S) {
    t->em = wx_calloc((size_t)S, sizeof(float *));
    t->vm = wx_calloc((size_t)S + 1, sizeof(float *));
    t->proc = wx_calloc((size_t)S, sizeof(wx_gc_step_tape));
}

wx_gc *wx_gc_create(wx_ctx *ctx, const wx_backend *be, const wx_gc_config *cfg, uint64_t seed,
                    int64_t max_batch, int max_tapes, int checkpoint) {
    const char *env = getenv("WX_GC_OPS"); /* debug/test switch: the ops path on the CPU */
    int ops = be->on_device || (env && !strcmp(env, "1"));
    return wx_gc_create_path(ctx, be, cfg, seed, max_batch, max_tapes, checkpoint, ops);
}

wx_gc *wx_gc_create_path(wx_ctx *ctx, const wx_backend *be, const wx_gc_config *cfg,
                         uint64_t seed, int64_t max_batch, int max_tapes, int checkpoint,
                         int ops) {
    return wx_gc_create_chunked(ctx, be, cfg, seed, max_batch, max_tapes, checkpoint, ops, 0);
}

/* Graphs, parameter table, chunk plan and the arena's length: everything but the allocations. */
static wx_gc *gc_plan(wx_ctx *ctx, const wx_backend *be, const wx_gc_config *cfg,
                      int64_t max_batch, int max_tapes, int checkpoint, int ops,
                      int64_t chunk_rows) {
    if (max_batch < 1 || max_tapes < 0) {
        wx_error_set(WX_ERR_USAGE, "graphcast: batch %lld, tapes %d: expected batch >= 1, "
                     "tapes >= 0", (long long)max_batch, max_tapes);
        return NULL;
    }
    if (be->on_device && !ops) {
        /* the fused MLP kernels (graphcast_mlp.c) are host code */
        wx_error_set(WX_ERR_USAGE, "graphcast: backend '%s': the fused MLP path runs on the CPU "
                     "backend only (device backends take the ops path)", be->name);
        return NULL;
    }
    wx_gc *m = wx_calloc(1, sizeof *m);
    m->ctx = ctx, m->be = be, m->c = *cfg, m->checkpoint = checkpoint;
    m->predict_only = max_tapes == 0;
    if (wx_gc_config_derive(&m->c) != WX_OK || build_graphs(m) != WX_OK || sender_csr(m) != WX_OK) {
        wx_gc_destroy(m);
        return NULL;
    }
    m->ng = m->g.n_grid, m->nm = m->g.n_mesh;
    m->eg = m->g.g2m.n_edges, m->em = m->g.mesh.n_edges, m->ed = m->g.m2g.n_edges;
    m->D = m->c.latent_size, m->cin = m->c.in_channels, m->cout = m->c.out_channels;
    m->S = m->c.gnn_msg_steps;
    m->mod.proc_edge = wx_calloc((size_t)m->S, sizeof(wx_gc_mlp));
    m->mod.proc_node = wx_calloc((size_t)m->S, sizeof(wx_gc_mlp));
    wx_params_init(&m->params);
    wx_gc_param_table(&m->params, &m->c, &m->mod);
    m->max_batch = max_batch, m->max_tapes = max_tapes;
    m->tapes = wx_calloc((size_t)(max_tapes ? max_tapes : 1), sizeof *m->tapes);
    for (int t = 0; t < max_tapes; t++) tape_arrays(&m->tapes[t], m->S);
    tape_arrays(&m->pred, m->S);
    if (ops && m->predict_only) { /* chunks aligned as the GEMM kernels' row blocks */
        int64_t emax = m->eg > m->em ? m->eg : m->em, nmax = m->ng > m->nm ? m->ng : m->nm;
        emax = emax > m->ed ? emax : m->ed;
        int64_t r = chunk_rows > 0 ? chunk_rows : WX_GC_CHUNK_ROWS;
        int64_t most = max_batch * (emax > nmax ? emax : nmax); /* no chunk beyond all rows */
        r = r < most ? r : most;
        m->chunk_rows = (r + WX_GC_CHUNK_ALIGN - 1) / WX_GC_CHUNK_ALIGN * WX_GC_CHUNK_ALIGN;
        wx_gc_pred_plan(m);
    }
    m->arena_len = wx_gc_arena_carve(m, NULL);
    return m;
}

wx_status wx_gc_count_bytes(const wx_gc_config *cfg, int64_t max_batch, int max_tapes,
                            int checkpoint, int ops, int64_t chunk_rows, wx_gc_bytes *out) {
    memset(out, 0, sizeof *out);
    wx_gc *m = gc_plan(NULL, wx_backend_cpu(), cfg, max_batch, max_tapes, checkpoint, ops,
                       chunk_rows);
    if (!m) return wx_error_wrap(WX_ERR_RUN, "graphcast memory count: ");
    out->arena = m->arena_len * (int64_t)sizeof(float);
    out->ops = ops ? wx_gc_ops_bytes(m) : 0;
    out->params = (m->predict_only ? 1 : 2) * m->params.len * (int64_t)sizeof(float);
    out->total = out->arena + out->ops + out->params;
    wx_gc_destroy(m);
    return WX_OK;
}

wx_gc *wx_gc_create_chunked(wx_ctx *ctx, const wx_backend *be, const wx_gc_config *cfg,
                            uint64_t seed, int64_t max_batch, int max_tapes, int checkpoint,
                            int ops, int64_t chunk_rows) {
    wx_gc *m = gc_plan(ctx, be, cfg, max_batch, max_tapes, checkpoint, ops, chunk_rows);
    if (!m) return NULL;
    if (ops) { /* in the backend's memory; on failure its message names the size and device */
        m->arena = wx_backend_alloc(be, ctx, sizeof(float) * (size_t)m->arena_len,
                                    "graphcast activation arena");
        if (!m->arena) {
            wx_gc_destroy(m);
            return NULL;
        }
    } else {
        m->arena = malloc(sizeof(float) * (size_t)m->arena_len);
    }
    if (!m->arena) {
        wx_error_set(WX_ERR_RUN, "graphcast: cannot allocate the activation arena (%.1f MiB for "
                     "batch %lld, %d tapes)", (double)m->arena_len * 4.0 / 1048576.0,
                     (long long)max_batch, max_tapes);
        wx_gc_destroy(m);
        return NULL;
    }
    WX_ASSERT(wx_gc_arena_carve(m, m->arena) == m->arena_len);
    if (ops) {
        /* graphs and static inputs uploaded once, here */
        if (wx_gc_ops_init(m) != WX_OK || init_params_on(m, seed) != WX_OK) {
            wx_gc_destroy(m);
            return NULL;
        }
        return m;
    }
    fill_static(m);
    if (params_alloc(m) != WX_OK) {
        wx_gc_destroy(m);
        return NULL;
    }
    wx_gc_init_params(m, seed);
    return m;
}

static void tape_free(wx_gc_tape *t) {
    free(t->em);
    free(t->vm);
    free(t->proc);
}

void wx_gc_destroy(wx_gc *m) {
    if (!m) return;
    for (int t = 0; t < m->max_tapes; t++) tape_free(&m->tapes[t]);
    free(m->tapes);
    tape_free(&m->pred);
    if (m->ops || (m->be && m->be->on_device)) { /* ops path: arena in the backend's memory */
        wx_gc_ops_free(m);
        m->be->mem_free(m->ctx, m->arena);
    } else {
        free(m->arena);
    }
    for (int i = 0; i < 3; i++) free(m->snd_ptr[i]), free(m->snd_perm[i]);
    free(m->mod.proc_edge);
    free(m->mod.proc_node);
    wx_gc_pred_plan_free(m);
    wx_params_free(&m->params);
    wx_mesh_graphs_free(&m->g);
    free(m);
}

void wx_gc_tapes_clear(wx_gc *m) { m->ntapes = 0; }
