/* Mesh→grid face choice as GraphCast makes it. graphcast/grid_mesh_connectivity.py
 * (in_mesh_triangle_indices) does not take the face the point's ray crosses: it calls
 * trimesh.proximity.closest_point on the flat triangles of the finest mesh, i.e. the face nearest
 * in Euclidean distance, with trimesh's tie rule (trimesh/proximity.py closest_point: among the two
 * smallest squared distances, if they differ by < tol.merge = 1e-8 and both exceed 1e-8, the face
 * whose unit normal has the larger dot with the unit vector from the face's closest point to the
 * query point). Where the rule decides, it differs from the containing face in a thin band along
 * mesh edges (17 of 65,160 points at 1°/M5, 10 of 1,038,240 at 0.25°/M6), and each grid point's
 * decoder output depends on its face, so imported checkpoints need trimesh's choice. Every float
 * operation below is the one numpy performs in trimesh/triangles.py closest_point (Ericson's
 * ClosestPtPointTriangle), in the same order, because by an edge both faces' closest points are
 * the same edge point and the choice is decided by the last bits of the distances. Where those
 * are bit-equal trimesh's answer is numpy's argsort order (not stable; see below and
 * docs/weights.md), which no rule reproduces on every machine. */
#pragma GCC optimize("fp-contract=off") /* numpy rounds every multiply and add */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/mesh.h"

#define TM_ZERO 0x1.c25c268497682p-44 /* trimesh tol.zero = np.finfo(float64).resolution·100 */
#define TM_MERGE 1e-8                 /* trimesh tol.merge */

/* util.diagonal_dot / np.dot(x, [1, 1, 1]): a row sum, left to right. */
static double sum3(double x0, double x1, double x2) { return (x0 + x1) + x2; }

static double dot3(const double *u, const double *v) {
    return sum3(u[0] * v[0], u[1] * v[1], u[2] * v[2]);
}

/* trimesh.triangles.closest_point for one triangle (a, b, c) and point p → q (3). *inner: the
 * smallest barycentric weight of q when it is interior to the triangle, else -1. */
static void tri_closest(const double *a, const double *b, const double *c, const double *p,
                        double *q, double *inner) {
    *inner = -1.0;
    double ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int d = 0; d < 3; d++) {
        ab[d] = b[d] - a[d];
        ac[d] = c[d] - a[d];
        ap[d] = p[d] - a[d];
        bp[d] = p[d] - b[d];
        cp[d] = p[d] - c[d];
    }
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    if (d1 < TM_ZERO && d2 < TM_ZERO) {
        memcpy(q, a, 3 * sizeof(double));
        return;
    }
    double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
    if (d3 > -TM_ZERO && d4 <= d3) {
        memcpy(q, b, 3 * sizeof(double));
        return;
    }
    double vc = (d1 * d4) - (d3 * d2);
    if (vc < TM_ZERO && d1 > -TM_ZERO && d3 < TM_ZERO) {
        double v = d1 / (d1 - d3);
        for (int d = 0; d < 3; d++) q[d] = a[d] + v * ab[d];
        return;
    }
    double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    if (d6 > -TM_ZERO && d5 <= d6) {
        memcpy(q, c, 3 * sizeof(double));
        return;
    }
    double vb = (d5 * d2) - (d1 * d6);
    if (vb < TM_ZERO && d2 > -TM_ZERO && d6 < TM_ZERO) {
        double w = d2 / (d2 - d6);
        for (int d = 0; d < 3; d++) q[d] = a[d] + w * ac[d];
        return;
    }
    double va = (d3 * d6) - (d5 * d4);
    if (va < TM_ZERO && (d4 - d3) > -TM_ZERO && (d5 - d6) > -TM_ZERO) {
        double d43 = d4 - d3;
        double w = d43 / (d43 + (d5 - d6));
        for (int d = 0; d < 3; d++) q[d] = b[d] + w * (c[d] - b[d]);
        return;
    }
    double denom = 1.0 / ((va + vb) + vc);
    double v = vb * denom, w = vc * denom;
    *inner = fmin(va * denom, fmin(v, w));
    for (int d = 0; d < 3; d++) q[d] = (a[d] + ab[d] * v) + ac[d] * w;
}

/* trimesh face_normals: unitize(np.cross(b − a, c − b)), the norm inverted then multiplied. */
static void tri_normal(const double *a, const double *b, const double *c, double *n) {
    double u[3], v[3];
    for (int d = 0; d < 3; d++) u[d] = b[d] - a[d], v[d] = c[d] - b[d];
    n[0] = u[1] * v[2] - u[2] * v[1];
    n[1] = u[2] * v[0] - u[0] * v[2];
    n[2] = u[0] * v[1] - u[1] * v[0];
    double inv = 1.0 / sqrt(dot3(n, n));
    for (int d = 0; d < 3; d++) n[d] *= inv;
}

/* Whether face f goes before face b at an equal distance (containing: the containing face). */
static int tie_first(int32_t f, int32_t b, int32_t containing) {
    if (f == containing || b == containing) return f == containing;
    return f > b;
}

wx_status wx_mesh_closest_faces(const wx_icosphere *ico, const double *grid_xyz, int32_t n_grid,
                                int32_t *face) {
    const int L = ico->levels;
    const int32_t f0 = ico->face_off[L], nf = ico->face_off[L + 1] - f0, nv = ico->nodes[L];
    /* faces around each vertex (CSR), in face order */
    int32_t *vf_off = wx_calloc((size_t)nv + 1, sizeof(int32_t));
    int32_t *vf = wx_malloc((size_t)nf * 3 * sizeof(int32_t));
    for (int64_t k = 0; k < 3 * (int64_t)nf; k++) vf_off[ico->faces[3 * (int64_t)f0 + k] + 1]++;
    for (int32_t v = 0; v < nv; v++) vf_off[v + 1] += vf_off[v];
    int32_t *fill = wx_malloc((size_t)nv * sizeof(int32_t));
    memcpy(fill, vf_off, (size_t)nv * sizeof(int32_t));
    for (int32_t f = 0; f < nf; f++)
        for (int k = 0; k < 3; k++) vf[fill[ico->faces[3 * (int64_t)(f0 + f) + k]]++] = f0 + f;
    free(fill);
    int failed = -1;
#pragma omp parallel for schedule(static)
    for (int32_t g = 0; g < n_grid; g++) {
        const double *p = grid_xyz + 3 * (int64_t)g;
        const int32_t *ct = ico->faces + 3 * (int64_t)face[g];
        /* Fast path. If p's nearest point on the containing face's plane lies inside that face,
         * it is the nearest point of the whole (convex) mesh, unique, so every other face is
         * farther and meets p at a normal tilted by at least the dihedral step: trimesh takes
         * this face by distance and by its normal tie-break alike. The margin (1e-3 in
         * barycentric terms, ~3e-5 of chord at M5) keeps rounding out of it; the points by an
         * edge or vertex go through the candidates (both paths for all points gave the same faces
         * at every point of 1°/M5 and 0.25°/M6). */
        {
            double q[3], inner;
            tri_closest(ico->xyz + 3 * (int64_t)ct[0], ico->xyz + 3 * (int64_t)ct[1],
                        ico->xyz + 3 * (int64_t)ct[2], p, q, &inner);
            if (inner > 1e-3) continue;
        }
        /* Candidates: the faces sharing a vertex with the containing face. The flat mesh is convex
         * and p lies outside it above that face, so the nearest point of the mesh is on that face
         * or on a face touching it (checked against trimesh's own candidate search at every
         * point of 1°/M5, test_mesh_m2g, and 0.25°/M6, where the two differ only where trimesh
         * itself is decided by sort order). */
        /* An icosphere vertex touches 5 or 6 faces, so 3 vertices give at most 18 (13 distinct
         * around an interior face); 64 leaves room, and the bound below never drops one. */
        int32_t cand[64];
        int nc = 0;
        for (int k = 0; k < 3; k++)
            for (int32_t j = vf_off[ct[k]]; j < vf_off[ct[k] + 1]; j++) {
                int dup = 0;
                for (int i = 0; i < nc; i++) dup |= cand[i] == vf[j];
                if (!dup && nc < 64) cand[nc++] = vf[j];
            }
        /* The two smallest squared distances. On bit-equal distances (both faces' nearest point is
         * the same edge or vertex point) trimesh's order is numpy's argsort order of its R-tree's
         * candidate list: no geometric rule, and it changes with numpy's sort kernel (AVX2/AVX512
         * networks, stable insertion sort before numpy 2) and the R-tree. wxcast puts the face
         * containing the point's radial projection first there, then the higher index. */
        int32_t best[2] = {-1, -1};
        double bd[2] = {INFINITY, INFINITY}, bq[2][3];
        for (int i = 0; i < nc; i++) {
            const int32_t *t = ico->faces + 3 * (int64_t)cand[i];
            double q[3], r[3], inner;
            tri_closest(ico->xyz + 3 * (int64_t)t[0], ico->xyz + 3 * (int64_t)t[1],
                        ico->xyz + 3 * (int64_t)t[2], p, q, &inner);
            for (int d = 0; d < 3; d++) r[d] = p[d] - q[d];
            double dd = dot3(r, r);
            int slot = (dd < bd[0] || (dd == bd[0] && tie_first(cand[i], best[0], face[g]))) ? 0
                       : (dd < bd[1] || (dd == bd[1] && tie_first(cand[i], best[1], face[g]))) ? 1
                                                                                              : 2;
            if (slot == 0) {
                best[1] = best[0], bd[1] = bd[0];
                memcpy(bq[1], bq[0], sizeof bq[0]);
            }
            if (slot < 2) {
                best[slot] = cand[i], bd[slot] = dd;
                memcpy(bq[slot], q, sizeof q);
            }
        }
        if (best[0] < 0) {
#pragma omp critical
            if (failed < 0 || g < failed) failed = g;
            continue;
        }
        int32_t pick = best[0];
        if (best[1] >= 0 && fabs(bd[1] - bd[0]) < TM_MERGE && fabs(bd[0]) > TM_MERGE &&
            fabs(bd[1]) > TM_MERGE) {
            double dots[2];
            for (int s = 0; s < 2; s++) {
                const int32_t *t = ico->faces + 3 * (int64_t)best[s];
                double n[3], u[3], len = sqrt(bd[s]);
                tri_normal(ico->xyz + 3 * (int64_t)t[0], ico->xyz + 3 * (int64_t)t[1],
                           ico->xyz + 3 * (int64_t)t[2], n);
                for (int d = 0; d < 3; d++) u[d] = (p[d] - bq[s][d]) / len;
                dots[s] = dot3(n, u);
            }
            if (dots[1] > dots[0]) pick = best[1]; /* argmax: the first on equal dots */
        }
        face[g] = pick;
    }
    free(vf_off);
    free(vf);
    if (failed >= 0)
        return wx_error_set(WX_ERR_RUN, "mesh→grid: no level-%d face near grid point %d", L,
                            failed);
    return WX_OK;
}
