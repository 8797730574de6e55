/* wxcast mesh: builds the GraphCast graphs for a mesh level and a global grid and prints their
 * sizes, so a configuration can be sized before training. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_error.h"
#include "core/wx_json.h"
#include "core/wx_log.h"
#include "core/wx_timer.h"
#include "models/mesh.h"

static const wx_arg_option options[] = {
    {"levels", 1, "finest mesh level (GraphCast: 6, GraphCast_small: 5)", "N"},
    {"grid", 1, "grid spacing in degrees, dividing 180 (default 1.0)", "DEG"},
    {"fraction", 1,
     "grid->mesh radius as a fraction of the longest finest-mesh edge (default 0.6; the "
     "0.25-degree checkpoints use 0.5999912857713345)",
     "F"},
    {"json", 0, "print one JSON object instead of the table", NULL},
    {NULL, 0, NULL, NULL},
};

static const wx_arg_spec spec = {
    "mesh", "--levels N [--grid DEG] [--fraction F] [--json]",
    "Builds the icosahedral multi-mesh M0..MN and the grid<->mesh graphs for the global DEG-degree "
    "grid (both poles included) and prints node and edge counts and the build time.",
    options, 0, 0};

static void print_table(const wx_mesh_graphs *g, int nlat, int nlon, double deg, double frac,
                        double secs) {
    const wx_icosphere *m = &g->ico;
    printf("%-6s %10s %10s %14s %12s\n", "level", "nodes", "faces", "directed edges", "max edge");
    int64_t multi = 0;
    for (int k = 0; k <= m->levels; k++) {
        int64_t faces = m->face_off[k + 1] - m->face_off[k];
        multi += 3 * faces;
        printf("M%-5d %10d %10lld %14lld %12.6f\n", k, m->nodes[k], (long long)faces,
               (long long)(3 * faces), wx_mesh_level_max_edge(m, k));
    }
    printf("multi-mesh M0..M%d: %d nodes, %lld directed edges\n", m->levels, g->n_mesh,
           (long long)multi);
    printf("grid %gdeg: %dx%d = %d points\n", deg, nlat, nlon, g->n_grid);
    printf("grid->mesh: %lld edges (fraction %.16g, radius %.9f)\n", (long long)g->g2m.n_edges,
           frac, g->radius);
    printf("mesh->grid: %lld edges\n", (long long)g->m2g.n_edges);
    printf("build time: %.3f s\n", secs);
}

static void print_json(const wx_mesh_graphs *g, int nlat, int nlon, double deg, double frac,
                       double secs) {
    const wx_icosphere *m = &g->ico;
    int64_t multi = 0;
    wx_json j;
    wx_json_init(&j, stdout);
    wx_json_object_begin(&j);
    wx_json_key(&j, "levels");
    wx_json_array_begin(&j);
    for (int k = 0; k <= m->levels; k++) {
        int64_t faces = m->face_off[k + 1] - m->face_off[k];
        multi += 3 * faces;
        wx_json_object_begin(&j);
        wx_json_kv_int(&j, "level", k);
        wx_json_kv_int(&j, "nodes", m->nodes[k]);
        wx_json_kv_int(&j, "faces", faces);
        wx_json_kv_int(&j, "edges", 3 * faces);
        wx_json_kv_number(&j, "max_edge", wx_mesh_level_max_edge(m, k));
        wx_json_object_end(&j);
    }
    wx_json_array_end(&j);
    wx_json_kv_int(&j, "mesh_nodes", g->n_mesh);
    wx_json_kv_int(&j, "multimesh_edges", multi);
    wx_json_key(&j, "grid");
    wx_json_object_begin(&j);
    wx_json_kv_number(&j, "deg", deg);
    wx_json_kv_int(&j, "nlat", nlat);
    wx_json_kv_int(&j, "nlon", nlon);
    wx_json_kv_int(&j, "points", g->n_grid);
    wx_json_object_end(&j);
    wx_json_kv_number(&j, "fraction", frac);
    wx_json_kv_number(&j, "radius", g->radius);
    wx_json_kv_int(&j, "grid2mesh_edges", g->g2m.n_edges);
    wx_json_kv_int(&j, "mesh2grid_edges", g->m2g.n_edges);
    wx_json_kv_number(&j, "build_seconds", secs);
    wx_json_object_end(&j);
    fputc('\n', stdout);
}

int wx_cmd_mesh(int argc, char **argv) {
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    int64_t levels;
    double deg, frac;
    wx_status st = WX_OK;
    if (!wx_args_get(&a, "levels"))
        st = wx_error_set(WX_ERR_USAGE, "mesh: --levels is required (see 'wxcast mesh --help')");
    if (st == WX_OK) st = wx_args_int(&a, "levels", 0, &levels);
    if (st == WX_OK) st = wx_args_double(&a, "grid", 1.0, &deg);
    if (st == WX_OK) st = wx_args_double(&a, "fraction", 0.6, &frac);
    if (st == WX_OK && (levels < 0 || levels > WX_MESH_MAX_LEVEL))
        st = wx_error_set(WX_ERR_USAGE, "mesh: --levels %lld is outside 0..%d", (long long)levels,
                          WX_MESH_MAX_LEVEL);
    if (st != WX_OK) return wx_cli_error(st);
    int json = wx_args_flag(&a, "json");
    double nl = 180.0 / deg;
    if (!(deg > 0.0) || fabs(nl - round(nl)) > 1e-9 || nl > 7200)
        return wx_cli_error(wx_error_set(
            WX_ERR_USAGE, "mesh: --grid %g must divide 180 (spacing >= 0.025)", deg));
    int nlat = (int)round(nl) + 1, nlon = 2 * (int)round(nl);
    double *lat = wx_malloc((size_t)nlat * sizeof(double));
    double *lon = wx_malloc((size_t)nlon * sizeof(double));
    for (int j = 0; j < nlat; j++) lat[j] = 90.0 - j * deg;
    for (int i = 0; i < nlon; i++) lon[i] = i * deg;
    wx_mesh_options opt = {(int)levels, frac, WX_MESH_M2G_NORM_PUBLISHED, lat, lon, nlat, nlon};
    wx_mesh_graphs g;
    /* the largest builds (M8 on a 0.05 degree grid: ~30 s, 5 GB) would otherwise print nothing */
    wx_log_info("mesh: building the M0..M%lld multi-mesh and the graphs of a %dx%d grid (%.3g M "
                "points)", (long long)levels, nlat, nlon, (double)nlat * nlon / 1e6);
    double t0 = wx_time_now();
    st = wx_mesh_graphs_build(&opt, &g);
    double secs = wx_time_since(t0);
    free(lat);
    free(lon);
    if (st != WX_OK) return wx_cli_error(st);
    if (json) print_json(&g, nlat, nlon, deg, frac, secs);
    else print_table(&g, nlat, nlon, deg, frac, secs);
    wx_mesh_graphs_free(&g);
    return 0;
}
