/* The three GraphCast graphs with their receiver-CSR orders and structural features. */
#include "models/mesh.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/graph_csr.h"

void wx_mesh_edge_set_free(wx_edge_set *s) {
    free(s->senders);
    free(s->receivers);
    free(s->row_ptr);
    free(s->perm);
    free(s->features);
    memset(s, 0, sizeof *s);
}

void wx_mesh_graphs_free(wx_mesh_graphs *g) {
    wx_mesh_icosphere_free(&g->ico);
    free(g->grid_features);
    free(g->mesh_features);
    wx_mesh_edge_set_free(&g->mesh);
    wx_mesh_edge_set_free(&g->g2m);
    wx_mesh_edge_set_free(&g->m2g);
    free(g->m2g_face);
    free(g->m2g_weights);
    memset(g, 0, sizeof *g);
}

/* Takes ownership of senders/receivers, builds the CSR order and the features. */
static wx_status edge_set_init(wx_edge_set *set, int32_t *senders, int32_t *receivers, int64_t e,
                               int32_t n_senders, int32_t n_receivers, const double *sender_xyz,
                               const double *receiver_xyz, const double *receiver_latlon,
                               double norm) {
    set->senders = senders;
    set->receivers = receivers;
    set->n_edges = e;
    set->n_senders = n_senders;
    set->n_receivers = n_receivers;
    set->row_ptr = wx_malloc(((size_t)n_receivers + 1) * sizeof(int32_t));
    set->perm = wx_malloc((size_t)(e > 0 ? e : 1) * sizeof(int32_t));
    WX_TRY(wx_graph_csr_build(receivers, e, n_receivers, set->row_ptr, set->perm));
    return wx_mesh_edge_features(set, sender_xyz, receiver_xyz, receiver_latlon, norm);
}

static wx_status build(const wx_mesh_options *opt, wx_mesh_graphs *g, const double *grid_xyz,
                       const double *grid_latlon) {
    WX_TRY(wx_mesh_icosphere_build(opt->levels, &g->ico));
    int L = opt->levels;
    const double *mesh_xyz = g->ico.xyz;
    int32_t nm = g->n_mesh = g->ico.nodes[L];
    int32_t ng = g->n_grid;

    g->mesh_features = wx_malloc((size_t)nm * 3 * sizeof(float));
    wx_mesh_node_features(mesh_xyz, nm, g->mesh_features);
    /* Grid features from the exact lat/lon, not from the float32 positions. */
    g->grid_features = wx_malloc((size_t)ng * 3 * sizeof(float));
    float *cl = wx_malloc((size_t)opt->nlon * 2 * sizeof(float)); /* cos, sin per column */
    for (int i = 0; i < opt->nlon; i++) {
        double lo = opt->lon[i] * (M_PI / 180.0);
        cl[2 * i] = (float)cos(lo);
        cl[2 * i + 1] = (float)sin(lo);
    }
    for (int j = 0; j < opt->nlat; j++) {
        float sl = (float)sin(opt->lat[j] * (M_PI / 180.0));
        for (int i = 0; i < opt->nlon; i++) {
            float *f = g->grid_features + 3 * ((int64_t)j * opt->nlon + i);
            f[0] = sl;
            f[1] = cl[2 * i];
            f[2] = cl[2 * i + 1];
        }
    }
    free(cl);

    int32_t *s, *r;
    int64_t e;
    WX_TRY(wx_mesh_face_edges(&g->ico, 0, L, &s, &r, &e));
    WX_TRY(edge_set_init(&g->mesh, s, r, e, nm, nm, mesh_xyz, mesh_xyz, NULL, 0.0));

    g->radius = opt->fraction * wx_mesh_level_max_edge(&g->ico, L);
    WX_TRY(wx_mesh_radius_edges(&g->ico, grid_xyz, ng, g->radius, &s, &r, &e));
    WX_TRY(edge_set_init(&g->g2m, s, r, e, ng, nm, grid_xyz, mesh_xyz, NULL, 0.0));

    g->m2g_face = wx_malloc((size_t)ng * sizeof(int32_t));
    g->m2g_weights = wx_malloc((size_t)ng * 3 * sizeof(float));
    WX_TRY(wx_mesh_m2g_faces(&g->ico, grid_xyz, ng, g->m2g_face, g->m2g_weights));
    s = wx_malloc((size_t)ng * 3 * sizeof(int32_t));
    r = wx_malloc((size_t)ng * 3 * sizeof(int32_t));
    for (int64_t q = 0; q < ng; q++)
        for (int c = 0; c < 3; c++) {
            s[3 * q + c] = g->ico.faces[3 * (int64_t)g->m2g_face[q] + c];
            r[3 * q + c] = (int32_t)q;
        }
    return edge_set_init(&g->m2g, s, r, 3 * (int64_t)ng, nm, ng, mesh_xyz, grid_xyz, grid_latlon,
                         opt->m2g_norm > 0.0 ? opt->m2g_norm : 0.0);
}

wx_status wx_mesh_graphs_build(const wx_mesh_options *opt, wx_mesh_graphs *out) {
    memset(out, 0, sizeof *out);
    if (opt->nlat < 1 || opt->nlon < 1 || !opt->lat || !opt->lon)
        return wx_error_set(WX_ERR_USAGE, "mesh graphs: grid has %d×%d points (expected >= 1×1)",
                            opt->nlat, opt->nlon);
    if ((int64_t)opt->nlat * opt->nlon * 3 > INT32_MAX)
        return wx_error_set(WX_ERR_USAGE, "mesh graphs: grid %d×%d is too large for int32 edges",
                            opt->nlat, opt->nlon);
    if (!(opt->fraction > 0.0) || opt->fraction > 10.0)
        return wx_error_set(WX_ERR_USAGE, "mesh graphs: fraction %g is outside (0, 10]",
                            opt->fraction);
    for (int j = 0; j < opt->nlat; j++)
        if (!(fabs(opt->lat[j]) <= 90.0))
            return wx_error_set(WX_ERR_USAGE, "mesh graphs: latitude %d is %g (expected -90..90)",
                                j, opt->lat[j]);
    out->n_grid = opt->nlat * opt->nlon;
    double *grid_xyz = wx_malloc((size_t)out->n_grid * 3 * sizeof(double));
    wx_mesh_grid_xyz(opt->lat, opt->nlat, opt->lon, opt->nlon, grid_xyz);
    /* The grid's own lat/lon for the mesh→grid receiver frames (GraphCast's grid_nodes_lat/lon). */
    double *grid_latlon = wx_malloc((size_t)out->n_grid * 2 * sizeof(double));
    for (int64_t q = 0; q < out->n_grid; q++) {
        grid_latlon[2 * q] = opt->lat[q / opt->nlon];
        grid_latlon[2 * q + 1] = opt->lon[q % opt->nlon];
    }
    wx_status st = build(opt, out, grid_xyz, grid_latlon);
    free(grid_latlon);
    free(grid_xyz);
    if (st != WX_OK) wx_mesh_graphs_free(out);
    return st;
}
