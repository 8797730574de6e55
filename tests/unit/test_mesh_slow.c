/* GraphCast graphs at full size (labelled slow; a few seconds): M6 multi-mesh and the 0.25° grid,
 * against the published counts (reference graphcast.md §1.2–1.4). */
#include <stdlib.h>

#include "models/mesh.h"
#include "wx_test.h"

int main(void) {
    int nlat = 721, nlon = 1440;
    double *lat = malloc(sizeof(double) * nlat), *lon = malloc(sizeof(double) * nlon);
    for (int j = 0; j < nlat; j++) lat[j] = 90.0 - 0.25 * j;
    for (int i = 0; i < nlon; i++) lon[i] = 0.25 * i;
    /* The 0.25° checkpoints' fraction. */
    wx_mesh_options opt = {6, 0.5999912857713345, WX_MESH_M2G_NORM_PUBLISHED, lat, lon, nlat, nlon};
    wx_mesh_graphs g;
    if (WX_CHECK(wx_mesh_graphs_build(&opt, &g) == WX_OK, "build 0.25deg/M6: %s", wx_error_message())) {
        WX_CHECK(g.n_mesh == 40962, "M6 nodes %d (published 40,962)", g.n_mesh);
        WX_CHECK(g.mesh.n_edges == 327660, "multi-mesh M0..M6 %lld edges (published 327,660)",
                 (long long)g.mesh.n_edges);
        WX_CHECK(g.g2m.n_edges == 1618745,
                 "grid->mesh 0.25deg/M6/0.5999912857713345: %lld edges (reference 1,618,745)",
                 (long long)g.g2m.n_edges);
        WX_CHECK(g.m2g.n_edges == 3114720, "mesh->grid %lld edges (published 3,114,720)",
                 (long long)g.m2g.n_edges);
        int32_t *per_mesh = calloc((size_t)g.n_mesh, sizeof(int32_t));
        for (int64_t k = 0; k < g.g2m.n_edges; k++) per_mesh[g.g2m.receivers[k]]++;
        int32_t mn = per_mesh[0], mx = per_mesh[0];
        for (int32_t v = 1; v < g.n_mesh; v++) {
            if (per_mesh[v] < mn) mn = per_mesh[v];
            if (per_mesh[v] > mx) mx = per_mesh[v];
        }
        WX_CHECK(mn == 23 && mx == 3753, "grid->mesh edges per mesh node min %d max %d (reference 23, 3753)",
                 mn, mx);
        free(per_mesh);

        /* Fraction 0.6 on the same mesh: reference 1,618,818 and full coverage. */
        double *gxyz = malloc(sizeof(double) * 3 * (size_t)g.n_grid);
        wx_mesh_grid_xyz(lat, nlat, lon, nlon, gxyz);
        int32_t *gi, *mi;
        int64_t e;
        double radius = 0.6 * wx_mesh_level_max_edge(&g.ico, 6);
        if (WX_CHECK(wx_mesh_radius_edges(&g.ico, gxyz, g.n_grid, radius, &gi, &mi, &e) == WX_OK,
                     "radius query at 0.6")) {
            WX_CHECK(e == 1618818, "grid->mesh 0.25deg/M6/0.6: %lld edges (reference 1,618,818)",
                     (long long)e);
            char *hit = calloc((size_t)g.n_grid, 1);
            for (int64_t k = 0; k < e; k++) hit[gi[k]] = 1;
            int32_t missing = 0;
            for (int32_t q = 0; q < g.n_grid; q++) missing += !hit[q];
            WX_CHECK(missing == 0, "every 0.25deg grid point has an edge at 0.6 (%d without)", missing);
            free(hit);
            free(gi);
            free(mi);
        }
        free(gxyz);
        wx_mesh_graphs_free(&g);
    }
    free(lat);
    free(lon);
    return wx_test_summary();
}
