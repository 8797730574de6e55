/* GraphCast graphs: icosahedral multi-mesh, grid→mesh (radius) and mesh→grid (containing
 * triangle) connectivity, and the structural node and edge features.
 *
 * Algorithms follow google-deepmind/graphcast (icosahedral_mesh.py, grid_mesh_connectivity.py,
 * model_utils.py) as summarised in shared/reference/graphcast.md §1.2–1.5; docs/graphs.md has the
 * counts and timings. Positions are unit vectors (x, y, z) = (cos lat cos lon, cos lat sin lon,
 * sin lat). Grid points are numbered row-major over (lat, lon), i.e. index j*nlon + i, matching
 * the (H, W) tensor layout. All index arrays are int32; every build is deterministic. */
#ifndef WX_MESH_H
#define WX_MESH_H

#include <stdint.h>

#include "core/wx_error.h"

#define WX_MESH_MAX_LEVEL 8 /* M8 has 655,362 nodes; beyond that int32 edge counts get tight */

/* The published mesh→grid edge normaliser of every GraphCast checkpoint (reference §1.5). */
#define WX_MESH_M2G_NORM_PUBLISHED 0.6180338738074472

/* The refinement hierarchy M0..Mlevel. Vertices of Mk are the prefix [0, nodes[k]) of xyz;
 * faces of Mk are faces[face_off[k] .. face_off[k+1]), counter-clockwise seen from outside. */
typedef struct {
    int levels;                          /* finest level L */
    int32_t nodes[WX_MESH_MAX_LEVEL + 1]; /* vertex count of Mk: 10·4^k + 2 */
    int32_t face_off[WX_MESH_MAX_LEVEL + 2];
    double *xyz;    /* (nodes[L], 3) unit vectors */
    int32_t *faces; /* (face_off[L+1], 3) */
} wx_icosphere;

/* One directed edge set. Edge k goes senders[k] → receivers[k]; row_ptr/perm order the edges by
 * receiver (stable), so the edges into r are perm[row_ptr[r] .. row_ptr[r+1]). */
typedef struct {
    int64_t n_edges;
    int32_t n_senders, n_receivers; /* sizes of the sender and receiver node sets */
    int32_t *senders;               /* (E) */
    int32_t *receivers;             /* (E) */
    int32_t *row_ptr;               /* (n_receivers+1) */
    int32_t *perm;                  /* (E) */
    float *features;                /* (E, 4): [|d|, dx, dy, dz] / norm, receiver-local frame */
    double norm;                    /* s: the normaliser used for features */
    double max_length;              /* longest chord of the set (before normalising) */
} wx_edge_set;

/* Build options. lat (nlat) and lon (nlon) in degrees describe the grid points (lat outer). */
typedef struct {
    int levels;          /* finest mesh level, 0..WX_MESH_MAX_LEVEL (GraphCast: 6; small: 5) */
    double fraction;     /* grid→mesh radius = fraction × longest finest-mesh edge (0.6) */
    double m2g_norm;     /* mesh→grid feature normaliser; <= 0: the set's longest edge */
    const double *lat;   /* (nlat) degrees */
    const double *lon;   /* (nlon) degrees */
    int nlat, nlon;
} wx_mesh_options;

/* Everything the GraphCast model needs about its three graphs. */
typedef struct {
    wx_icosphere ico;
    int32_t n_grid, n_mesh;
    double radius;          /* grid→mesh chord radius actually used */
    float *grid_features;   /* (n_grid, 3): [sin lat, cos lon, sin lon] */
    float *mesh_features;   /* (n_mesh, 3): same features for mesh vertices */
    wx_edge_set mesh;       /* multi-mesh M0..ML, mesh → mesh */
    wx_edge_set g2m;        /* grid → mesh (senders index grid points) */
    wx_edge_set m2g;        /* mesh → grid, 3 edges per grid point (edges 3g, 3g+1, 3g+2) */
    int32_t *m2g_face;      /* (n_grid): finest-mesh face (index into ico.faces) containing g */
    float *m2g_weights;     /* (n_grid, 3): barycentric weights of the face's 3 vertices */
} wx_mesh_graphs;

/* ---- mesh_icosphere.c ---- */

/* Icosahedron with GraphCast's rotation, split `levels` times (each triangle into four, midpoints
 * projected to the sphere, one midpoint per edge). Fails (WX_ERR_USAGE) for levels out of range. */
wx_status wx_mesh_icosphere_build(int levels, wx_icosphere *out);
void wx_mesh_icosphere_free(wx_icosphere *m);

/* Directed edges of the faces of levels lo..hi (face (a,b,c) gives a→b, b→c, c→a), in face order,
 * level lo first. senders/receivers (3·faces) are allocated; free() them. */
wx_status wx_mesh_face_edges(const wx_icosphere *m, int lo, int hi, int32_t **senders,
                             int32_t **receivers, int64_t *n_edges);

/* Longest chord among the edges of level k. */
double wx_mesh_level_max_edge(const wx_icosphere *m, int k);

/* ---- mesh_grid.c ---- */

/* Unit vectors of the grid points (lat outer), computed as GraphCast does: float32 degrees,
 * float32 radians, and numpy's float32 sin/cos (the vectorised algorithm numpy uses on FMA
 * hardware), so that radius queries reproduce the published counts. xyz (nlat*nlon, 3). */
void wx_mesh_grid_xyz(const double *lat, int nlat, const double *lon, int nlon, double *xyz);

/* Every (grid point g, mesh vertex v) with chord |p_g − x_v| <= radius, found with a k-d tree over
 * the mesh vertices of level ico->levels; sorted by g then v. grid_xyz (n_grid, 3) unit vectors.
 * grid_idx/mesh_idx (E) are allocated. */
wx_status wx_mesh_radius_edges(const wx_icosphere *ico, const double *grid_xyz, int32_t n_grid,
                               double radius, int32_t **grid_idx, int32_t **mesh_idx,
                               int64_t *n_edges);

/* For each grid point, GraphCast's mesh→grid face: first the finest-level face containing its
 * radial projection (candidates from a cell grid over face centroids, then a barycentric test),
 * then wx_mesh_closest_faces (trimesh's Euclidean-closest face, as DeepMind's
 * grid_mesh_connectivity.py takes it). face (n_grid); weights (n_grid, 3), the gnomonic
 * barycentric weights of the face's vertices in order, clamped to [0, 1] (the closest face may
 * miss the point's ray by a few 1e-6) and summing to 1. */
wx_status wx_mesh_m2g_faces(const wx_icosphere *ico, const double *grid_xyz, int32_t n_grid,
                            int32_t *face, float *weights);

/* ---- mesh_closest.c ---- */

/* GraphCast's mesh→grid face (trimesh.proximity.closest_point, see mesh_closest.c): on entry face
 * (n_grid) holds the containing faces, on return the finest face nearest each grid point in
 * Euclidean distance, ties as trimesh breaks them. */
wx_status wx_mesh_closest_faces(const wx_icosphere *ico, const double *grid_xyz, int32_t n_grid,
                                int32_t *face);

/* ---- mesh_features.c ---- */

/* Unit vector of (lat, lon) in degrees. xyz (3). */
void wx_mesh_latlon_to_xyz(double lat, double lon, double *xyz);
/* [sin lat, cos lon, sin lon] of unit vectors xyz (n, 3) → feat (n, 3). */
void wx_mesh_node_features(const double *xyz, int64_t n, float *feat);
/* [lat, lon] in degrees of the points xyz (n, 3) → latlon (n, 2), lon = atan2(y, x) as GraphCast
 * derives its mesh nodes' lat/lon from the vertices. */
void wx_mesh_xyz_to_latlon(const double *xyz, int64_t n, double *latlon);
/* Rotation into the local frame of the node at (lat, lon) degrees: R = R_y(π/2 − θ) · R_z(−φ),
 * θ = 90° − lat, φ = lon (reference §1.5); the node maps to (1, 0, 0). From lat/lon, not from the
 * position, as GraphCast does: at a pole the position has no longitude, the grid node has one.
 * rot (3, 3) row-major, applied as R·x. */
void wx_mesh_local_rotation(double lat, double lon, double *rot);
/* Edge features of `e` into set->features (allocated) and set->norm/max_length: d = R_r·x_s −
 * R_r·x_r with R_r the local rotation of the receiver's (lat, lon), features [|d|, dx, dy, dz] / s
 * with s = norm if norm > 0, else the set's longest |d|. sender_xyz (n_senders, 3), receiver_xyz
 * (n_receivers, 3); receiver_latlon (n_receivers, 2) degrees, or NULL to derive it from
 * receiver_xyz (wx_mesh_xyz_to_latlon: mesh receivers; grid receivers must pass theirs, since a
 * pole-row point's position does not carry its longitude). */
wx_status wx_mesh_edge_features(wx_edge_set *set, const double *sender_xyz,
                                const double *receiver_xyz, const double *receiver_latlon,
                                double norm);

/* ---- mesh.c ---- */

/* Builds the three graphs, their CSR orders and features. */
wx_status wx_mesh_graphs_build(const wx_mesh_options *opt, wx_mesh_graphs *out);
void wx_mesh_graphs_free(wx_mesh_graphs *g);
/* Frees the arrays of one edge set and zeroes it. */
void wx_mesh_edge_set_free(wx_edge_set *s);

#endif
