/* Mesh→grid faces against DeepMind's own choice (graphcast/grid_mesh_connectivity.py
 * in_mesh_triangle_indices = trimesh.proximity.closest_point) at every point of the 1° grid on
 * M5: fixture gc_m2g_1deg from tests/ref/ref_mesh_m2g.py (trimesh run by DeepMind's code).
 * Stored: the points where DeepMind's face is decided and is not the one whose radial projection
 * contains the point (the old wxcast rule fails there), with their senders; the points where
 * trimesh's answer is decided only by numpy's sort order of bit-equal distances, with every face
 * it can return; and a hash of the senders of every decided point. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/mesh.h"
#include "wx_fixture.h"
#include "wx_mesh_1deg.h"
#include "wx_test.h"

#define HASH_MUL 1000003LL
#define HASH_MOD 2147483647LL

int main(void) {
    wx_fixture *f = wx_fixture_load("gc_m2g_1deg");
    if (!WX_CHECK(f != NULL, "fixture gc_m2g_1deg: %s", wx_error_message())) return wx_test_summary();
    wx_mesh_options opt = wx_test_mesh_1deg();
    const double *lat = opt.lat, *lon = opt.lon;
    int nlon = opt.nlon;
    wx_mesh_graphs g;
    if (!WX_CHECK(wx_mesh_graphs_build(&opt, &g) == WX_OK, "build 1deg/M5: %s", wx_error_message())) {
        wx_fixture_free(f);
        return wx_test_summary();
    }
    WX_CHECK(g.n_grid == (int32_t)wx_fixture_scalar(f, "n_grid"), "grid points %d", g.n_grid);

    const wx_fixture_tensor *pts = wx_fixture_get(f, "points"), *snd = wx_fixture_get(f, "senders");
    const wx_fixture_tensor *tied = wx_fixture_get(f, "tied");
    int n_differ = (int)wx_fixture_scalar(f, "n_differ"), n_tie = (int)wx_fixture_scalar(f, "n_tie");
    WX_CHECK(pts->size == n_differ + n_tie && n_differ == 17 && n_tie == 198 && tied->ndim == 3,
             "fixture: %lld points = %d decided off containment + %d order-decided",
             (long long)pts->size, n_differ, n_tie);
    const int64_t width = tied->dims[1];
    uint8_t *is_tie = calloc((size_t)g.n_grid, 1);
    int bad = 0, bad_tie = 0, tie_same = 0, decided = 0;
    for (int64_t k = 0; k < pts->size; k++) {
        int64_t q = (int64_t)pts->data[k];
        const int32_t *s = g.m2g.senders + 3 * q;
        const double *opt = tied->data + 3 * width * k;
        if (opt[0] >= 0) { /* order-decided: any face trimesh can return */
            is_tie[q] = 1;
            int any = 0;
            for (int64_t j = 0; j < width && opt[3 * j] >= 0; j++)
                any |= s[0] == opt[3 * j] && s[1] == opt[3 * j + 1] && s[2] == opt[3 * j + 2];
            bad_tie += !any;
            tie_same += s[0] == snd->data[3 * k] && s[1] == snd->data[3 * k + 1] &&
                        s[2] == snd->data[3 * k + 2];
            continue;
        }
        decided++;
        int same = 1;
        for (int c = 0; c < 3; c++) same &= s[c] == (int32_t)snd->data[3 * k + c];
        if (!same && bad++ < 5)
            printf("  grid point %lld (lat %g lon %g): senders %d %d %d, DeepMind's %g %g %g\n",
                   (long long)q, lat[q / nlon], lon[q % nlon], s[0], s[1], s[2], snd->data[3 * k],
                   snd->data[3 * k + 1], snd->data[3 * k + 2]);
    }
    WX_CHECK(bad == 0 && decided == n_differ,
             "DeepMind's face at the %d band points off containment (%d differ)", decided, bad);
    printf("  %d order-decided points: wxcast's face is the one DeepMind's code gave on the "
           "fixture's machine at %d\n", n_tie, tie_same);
    WX_CHECK(bad_tie == 0, "a face trimesh can return at each of the %d order-decided points (%d "
             "not)", n_tie, bad_tie);

    long long h = 0;
    for (int32_t q = 0; q < g.n_grid; q++)
        if (!is_tie[q])
            for (int c = 0; c < 3; c++) h = (h * HASH_MUL + g.m2g.senders[3 * (int64_t)q + c] + 1) % HASH_MOD;
    WX_CHECK(h == (long long)wx_fixture_scalar(f, "hash"),
             "hash of the senders at all %d decided points %lld, DeepMind's %.0f", g.n_grid - n_tie,
             h, wx_fixture_scalar(f, "hash"));
    free(is_tie);

    /* the receivers stay 3 per point in point order; the weights a partition of unity */
    int bad_w = 0;
    for (int32_t q = 0; q < g.n_grid; q++) {
        const float *w = g.m2g_weights + 3 * (int64_t)q;
        double s = 0;
        for (int c = 0; c < 3; c++) {
            bad_w += !(w[c] >= 0.0f && w[c] <= 1.0f) || g.m2g.receivers[3 * (int64_t)q + c] != q;
            s += w[c];
        }
        bad_w += fabs(s - 1.0) > 1e-6;
        bad_w += g.m2g.senders[3 * (int64_t)q] != g.ico.faces[3 * (int64_t)g.m2g_face[q]];
    }
    WX_CHECK(bad_w == 0, "weights in [0, 1] summing to 1, receivers and m2g_face consistent (%d bad)",
             bad_w);
    wx_mesh_graphs_free(&g);
    wx_fixture_free(f);
    return wx_test_summary();
}
