/* The build options of GraphCast's graphs on the 1° grid (181x360, rows from the north pole) and
 * the M0..M5 multi-mesh with the published edge normalisation: shared by test_mesh and
 * test_mesh_m2g. Header-only; the coordinates live in static arrays. */
#ifndef WX_MESH_1DEG_H
#define WX_MESH_1DEG_H

#include "models/mesh.h"

static inline wx_mesh_options wx_test_mesh_1deg(void) {
    static double lat[181], lon[360];
    for (int j = 0; j < 181; j++) lat[j] = 90.0 - j;
    for (int i = 0; i < 360; i++) lon[i] = i;
    return (wx_mesh_options){5, 0.6, WX_MESH_M2G_NORM_PUBLISHED, lat, lon, 181, 360};
}

#endif
