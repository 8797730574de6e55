/* GraphCast graphs (src/models/mesh.*): published counts (reference graphcast.md §1.2–1.4),
 * geometric invariants, grid→mesh against brute force, mesh→grid containment, features and CSR.
 * The 0.25°/M6 counts are in test_mesh_slow.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/mesh.h"
#include "wx_mesh_1deg.h"
#include "wx_test.h"

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static double det3(const double *a, const double *b, const double *c) {
    return a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
           a[2] * (b[0] * c[1] - b[1] * c[0]);
}

static void test_icosphere(void) {
    static const int32_t published_nodes[6] = {12, 42, 162, 642, 2562, 10242};
    wx_icosphere m, m3;
    WX_CHECK(wx_mesh_icosphere_build(5, &m) == WX_OK, "build M0..M5");
    WX_CHECK(wx_mesh_icosphere_build(3, &m3) == WX_OK, "build M0..M3");
    WX_CHECK(wx_mesh_icosphere_build(WX_MESH_MAX_LEVEL + 1, &(wx_icosphere){0}) == WX_ERR_USAGE,
             "level out of range is a usage error");
    for (int k = 0; k <= 5; k++)
        WX_CHECK(m.nodes[k] == published_nodes[k], "M%d nodes %d (published %d)", k, m.nodes[k],
                 published_nodes[k]);

    /* Coarser vertices and faces are a prefix of finer ones, bit for bit. */
    WX_CHECK(!memcmp(m3.xyz, m.xyz, sizeof(double) * 3 * (size_t)m3.nodes[3]),
             "M3 vertices are a prefix of the M5 build");
    WX_CHECK(!memcmp(m3.faces, m.faces, sizeof(int32_t) * 3 * (size_t)m3.face_off[4]),
             "M0..M3 faces equal in both builds");

    double worst_norm = 0.0;
    for (int32_t i = 0; i < m.nodes[5]; i++) {
        const double *p = m.xyz + 3 * i;
        worst_norm = fmax(worst_norm, fabs(sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) - 1.0));
    }
    WX_CHECK(worst_norm < 2e-7, "every vertex on the unit sphere (max | |x| - 1 | = %.2e)",
             worst_norm);

    /* GraphCast's rotation puts a face flat on top: no vertex at a pole, and the top face's
     * three vertices share the largest z. */
    double zmax = -2.0;
    for (int i = 0; i < 12; i++) zmax = fmax(zmax, m.xyz[3 * i + 2]);
    int at_top = 0;
    for (int i = 0; i < 12; i++) at_top += fabs(m.xyz[3 * i + 2] - zmax) < 1e-6;
    WX_CHECK(at_top == 3 && zmax < 0.8, "M0: a face on top (%d vertices at z = %.6f)", at_top, zmax);

    /* Per level: Euler V − E + F = 2 with undirected edges counted from unique pairs; every
     * undirected edge used by exactly two faces in opposite directions; faces counter-clockwise
     * from outside; vertex degrees 5 (the 12 originals) or 6. */
    for (int k = 0; k <= 5; k++) {
        int32_t *s, *r;
        int64_t e;
        WX_CHECK(wx_mesh_face_edges(&m, k, k, &s, &r, &e) == WX_OK, "level %d edges", k);
        int64_t nf = m.face_off[k + 1] - m.face_off[k];
        uint64_t *dir = malloc((size_t)e * sizeof(uint64_t)), *und = malloc((size_t)e * sizeof(uint64_t));
        for (int64_t i = 0; i < e; i++) {
            dir[i] = key(s[i], r[i]);
            und[i] = key(s[i] < r[i] ? s[i] : r[i], s[i] < r[i] ? r[i] : s[i]);
        }
        qsort(dir, (size_t)e, sizeof(uint64_t), cmp_u64);
        qsort(und, (size_t)e, sizeof(uint64_t), cmp_u64);
        int64_t n_und = 0, dup_dir = 0, bad_pair = 0;
        for (int64_t i = 0; i < e; i++) {
            if (i > 0 && dir[i] == dir[i - 1]) dup_dir++;
            if (i == 0 || und[i] != und[i - 1]) n_und++;
        }
        for (int64_t i = 0; i + 1 < e; i += 2) bad_pair += und[i] != und[i + 1];
        int64_t euler = (int64_t)m.nodes[k] - n_und + nf;
        WX_CHECK(euler == 2 && n_und * 2 == e, "M%d: V - E + F = %d - %lld + %lld = %lld", k,
                 m.nodes[k], (long long)n_und, (long long)nf, (long long)euler);
        WX_CHECK(dup_dir == 0 && bad_pair == 0, "M%d: each edge once per direction (%lld dup)", k,
                 (long long)dup_dir);
        int64_t bad_orient = 0;
        for (int64_t f = m.face_off[k]; f < m.face_off[k + 1]; f++) {
            const int32_t *t = m.faces + 3 * f;
            bad_orient += det3(m.xyz + 3 * t[0], m.xyz + 3 * t[1], m.xyz + 3 * t[2]) <= 0.0;
        }
        WX_CHECK(bad_orient == 0, "M%d: %lld faces not counter-clockwise", k, (long long)bad_orient);
        int32_t *deg = calloc((size_t)m.nodes[k], sizeof(int32_t));
        for (int64_t i = 0; i < e; i++) deg[s[i]]++;
        int bad_deg = 0;
        for (int32_t v = 0; v < m.nodes[k]; v++) bad_deg += deg[v] != (v < 12 ? 5 : 6);
        WX_CHECK(bad_deg == 0, "M%d: %d vertices with the wrong degree", k, bad_deg);
        free(deg);
        free(dir);
        free(und);
        free(s);
        free(r);
    }

    /* Multi-mesh: published 81,900 directed edges, all distinct across levels. */
    int32_t *s, *r;
    int64_t e;
    WX_CHECK(wx_mesh_face_edges(&m, 0, 5, &s, &r, &e) == WX_OK, "multi-mesh edges");
    WX_CHECK(e == 81900, "multi-mesh M0..M5: %lld directed edges (published 81,900)", (long long)e);
    uint64_t *keys = malloc((size_t)e * sizeof(uint64_t));
    for (int64_t i = 0; i < e; i++) keys[i] = key(s[i], r[i]);
    qsort(keys, (size_t)e, sizeof(uint64_t), cmp_u64);
    int64_t dups = 0;
    for (int64_t i = 1; i < e; i++) dups += keys[i] == keys[i - 1];
    WX_CHECK(dups == 0, "multi-mesh edges are unique (%lld duplicates)", (long long)dups);
    free(keys);
    free(s);
    free(r);

    /* Published max edge lengths (reference §1.2 table, 6 decimals). */
    static const double maxlen[6] = {1.051462, 0.618034, 0.324920, 0.164647, 0.082604, 0.041337};
    for (int k = 0; k <= 5; k++) {
        double l = wx_mesh_level_max_edge(&m, k);
        WX_CHECK(fabs(l - maxlen[k]) < 6e-7, "M%d longest edge %.7f (published %.6f)", k, l,
                 maxlen[k]);
    }
    wx_mesh_icosphere_free(&m);
    wx_mesh_icosphere_free(&m3);
}

/* Independent local rotation of the node at (lat, lon) degrees: matrices R_z(−φ) and
 * R_y(π/2 − θ) written out and multiplied. */
static void rotation_ref(double lat, double lon, double *rot) {
    double th = (90.0 - lat) * (M_PI / 180.0), ph = lon * (M_PI / 180.0);
    double a = -ph, b = M_PI / 2 - th;
    double rz[9] = {cos(a), -sin(a), 0, sin(a), cos(a), 0, 0, 0, 1};
    double ry[9] = {cos(b), 0, sin(b), 0, 1, 0, -sin(b), 0, cos(b)};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            rot[3 * i + j] = 0;
            for (int k = 0; k < 3; k++) rot[3 * i + j] += ry[3 * i + k] * rz[3 * k + j];
        }
}

static void test_rotation(void) {
    double worst_fix = 0, worst_ref = 0, worst_orth = 0;
    double pts[][2] = {{90, 0}, {-90, 0}, {0, 0}, {45, 30}, {-60, 200}, {10, -170}, {89.5, 359}};
    for (size_t n = 0; n < sizeof pts / sizeof pts[0]; n++) {
        double p[3], rot[9], ref[9];
        wx_mesh_latlon_to_xyz(pts[n][0], pts[n][1], p);
        if (fabs(pts[n][0]) == 90) p[0] = p[1] = 0; /* exact poles */
        wx_mesh_local_rotation(pts[n][0], pts[n][1], rot);
        rotation_ref(pts[n][0], pts[n][1], ref);
        double q[3];
        for (int i = 0; i < 3; i++) q[i] = rot[3 * i] * p[0] + rot[3 * i + 1] * p[1] + rot[3 * i + 2] * p[2];
        worst_fix = fmax(worst_fix, fmax(fabs(q[0] - 1), fmax(fabs(q[1]), fabs(q[2]))));
        for (int k = 0; k < 9; k++) worst_ref = fmax(worst_ref, fabs(rot[k] - ref[k]));
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double d = 0;
                for (int k = 0; k < 3; k++) d += rot[3 * i + k] * rot[3 * j + k];
                worst_orth = fmax(worst_orth, fabs(d - (i == j)));
            }
        /* A sender slightly north gives +z, slightly east gives +y. */
        if (fabs(pts[n][0]) < 80) {
            double north[3], east[3], dn[3], de[3];
            wx_mesh_latlon_to_xyz(pts[n][0] + 0.1, pts[n][1], north);
            wx_mesh_latlon_to_xyz(pts[n][0], pts[n][1] + 0.1, east);
            for (int i = 0; i < 3; i++) {
                dn[i] = de[i] = 0;
                for (int k = 0; k < 3; k++) {
                    dn[i] += rot[3 * i + k] * (north[k] - p[k]);
                    de[i] += rot[3 * i + k] * (east[k] - p[k]);
                }
            }
            WX_CHECK(dn[2] > 0 && fabs(dn[1]) < 1e-12 && de[1] > 0 && fabs(de[2]) < 0.01 * de[1],
                     "local frame at (%g, %g): north +z, east +y", pts[n][0], pts[n][1]);
        }
    }
    WX_CHECK(worst_fix < 1e-15, "receiver maps to (1, 0, 0) (max err %.2e)", worst_fix);
    WX_CHECK(worst_ref < 1e-14, "closed-form rotation equals R_y(pi/2 - theta) R_z(-phi) (%.2e)",
             worst_ref);
    WX_CHECK(worst_orth < 1e-15, "rotation is orthonormal, so |d| is preserved (%.2e)", worst_orth);
}

static void check_csr(const char *what, const wx_edge_set *s) {
    int ok = s->row_ptr[0] == 0 && s->row_ptr[s->n_receivers] == s->n_edges;
    for (int32_t r = 0; ok && r < s->n_receivers; r++)
        for (int32_t k = s->row_ptr[r]; k < s->row_ptr[r + 1]; k++) {
            int32_t ed = s->perm[k];
            if (s->receivers[ed] != r || (k > s->row_ptr[r] && s->perm[k - 1] >= ed)) ok = 0;
        }
    WX_CHECK(ok, "%s: CSR by receiver, stable", what);
}

/* Features of an edge set: finite, column 0 = |(dx, dy, dz)|, |d|·s = chord between the nodes,
 * and d = R_r (x_s − x_r) with the independent rotation of the receiver's lat/lon (rlatlon, or
 * from its position when NULL: mesh nodes), on every 97th edge. */
static void check_features(const char *what, const wx_edge_set *s, const double *sxyz,
                           const double *rxyz, const double *rlatlon, double expect_norm) {
    int finite = 1;
    double worst_len = 0, worst_chord = 0, worst_d = 0, colmax = 0;
    for (int64_t k = 0; k < s->n_edges; k++) {
        const float *f = s->features + 4 * k;
        for (int c = 0; c < 4; c++) finite &= isfinite(f[c]);
        colmax = fmax(colmax, f[0]);
        double l = sqrt((double)f[1] * f[1] + (double)f[2] * f[2] + (double)f[3] * f[3]);
        worst_len = fmax(worst_len, fabs(l - f[0]));
        if (k % 97) continue;
        const double *a = sxyz + 3 * (int64_t)s->senders[k], *b = rxyz + 3 * (int64_t)s->receivers[k];
        double diff[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]}, rot[9];
        worst_chord = fmax(worst_chord, fabs(f[0] * s->norm - sqrt(diff[0] * diff[0] + diff[1] * diff[1] + diff[2] * diff[2])));
        int32_t v = s->receivers[k];
        if (rlatlon) {
            rotation_ref(rlatlon[2 * v], rlatlon[2 * v + 1], rot);
        } else {
            double n = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
            rotation_ref(90.0 - acos(b[2] / n) * (180.0 / M_PI), atan2(b[1], b[0]) * (180.0 / M_PI),
                         rot);
        }
        for (int i = 0; i < 3; i++) {
            double d = rot[3 * i] * diff[0] + rot[3 * i + 1] * diff[1] + rot[3 * i + 2] * diff[2];
            worst_d = fmax(worst_d, fabs(f[1 + i] * s->norm - d));
        }
    }
    WX_CHECK(finite, "%s: features finite", what);
    WX_CHECK(worst_len < 1e-6, "%s: feature |d| = norm of (dx,dy,dz) (%.2e)", what, worst_len);
    WX_CHECK(worst_chord < 1.2e-7 * s->norm && worst_d < 1.2e-7 * s->norm, /* float32 features */
             "%s: |d|·s is the chord (%.2e) and d the receiver-frame difference (%.2e)", what,
             worst_chord, worst_d);
    if (expect_norm > 0)
        WX_CHECK(s->norm == expect_norm && colmax <= 1.0,
                 "%s: normaliser %.16g, max |d|/s %.4f", what, s->norm, colmax);
    else
        WX_CHECK(s->norm == s->max_length && fabs(colmax - 1.0) < 1e-6,
                 "%s: normalised by its longest edge (max |d|/s = %.7f)", what, colmax);
}

/* Mesh→grid edges into the pole rows. GraphCast takes a receiver's frame from its grid lat/lon,
 * so a pole point at longitude φ has the frame that mid-latitude points along meridian φ tend to:
 * x' = outward (0, 0, ±1), y' = east (−sin φ, cos φ, 0), z' = north, which is ∓(cos φ, sin φ, 0)
 * (at the north pole north points away from meridian φ, at the south pole along it). The
 * position (0, 0, ±1) has no longitude; a frame taken from it gets dy, dz rotated or flipped. */
static void check_pole_frames(const wx_mesh_graphs *g, const double *gxyz, const double *lat,
                              int nlat, const double *lon, int nlon) {
    static const double want_lon[] = {0, 45, 90, 135, 180, 225, 270, 315};
    double worst = 0, longest = 0;
    int checked = 0;
    for (int row = 0; row < 2; row++) {
        int j = row ? nlat - 1 : 0;
        double sg = lat[j] > 0 ? 1.0 : -1.0;
        if (!WX_CHECK(fabs(lat[j]) == 90.0, "grid row %d is a pole row (lat %g)", j, lat[j]))
            return;
        for (size_t w = 0; w < sizeof want_lon / sizeof want_lon[0]; w++) {
            int i = 0;
            while (i < nlon && lon[i] != want_lon[w]) i++;
            if (i == nlon) continue;
            double ph = lon[i] * (M_PI / 180.0);
            double ex[3] = {0, 0, sg}, ey[3] = {-sin(ph), cos(ph), 0};
            double ez[3] = {-sg * cos(ph), -sg * sin(ph), 0};
            int64_t q = (int64_t)j * nlon + i;
            for (int c = 0; c < 3; c++) {
                int64_t k = 3 * q + c; /* mesh.c emits each grid point's 3 edges in a row */
                const double *sp = g->ico.xyz + 3 * (int64_t)g->m2g.senders[k], *rp = gxyz + 3 * q;
                double d[3] = {sp[0] - rp[0], sp[1] - rp[1], sp[2] - rp[2]};
                double want[3] = {ex[0] * d[0] + ex[1] * d[1] + ex[2] * d[2],
                                  ey[0] * d[0] + ey[1] * d[1] + ey[2] * d[2],
                                  ez[0] * d[0] + ez[1] * d[1] + ez[2] * d[2]};
                const float *f = g->m2g.features + 4 * k;
                for (int a = 0; a < 3; a++) {
                    worst = fmax(worst, fabs(f[1 + a] * g->m2g.norm - want[a]));
                    longest = fmax(longest, fabs(want[a]));
                }
                checked++;
            }
        }
    }
    WX_CHECK(checked == 2 * 8 * 3 && longest > 0.01,
             "pole-row mesh->grid edges checked: %d (largest component %.4f)", checked, longest);
    WX_CHECK(worst < 1.2e-7 * g->m2g.norm,
             "pole-row receivers: [dx, dy, dz] in the frame of the grid longitude (max err %.2e)",
             worst);
}

static void test_graphs_1deg(void) {
    wx_mesh_options opt = wx_test_mesh_1deg();
    const double *lat = opt.lat, *lon = opt.lon;
    int nlat = opt.nlat, nlon = opt.nlon;
    wx_mesh_graphs g;
    if (!WX_CHECK(wx_mesh_graphs_build(&opt, &g) == WX_OK, "build 1deg/M5: %s", wx_error_message()))
        return;
    int32_t ng = g.n_grid, nm = g.n_mesh;
    WX_CHECK(ng == 65160 && nm == 10242, "1deg grid %d points, M5 %d nodes", ng, nm);
    WX_CHECK(g.mesh.n_edges == 81900, "multi-mesh edge set %lld", (long long)g.mesh.n_edges);

    /* Grid positions: float32 rounding of the exact unit vectors. */
    double *gxyz = malloc((size_t)ng * 3 * sizeof(double)), worst_pos = 0;
    wx_mesh_grid_xyz(lat, nlat, lon, nlon, gxyz);
    for (int32_t q = 0; q < ng; q++) {
        double ex[3];
        wx_mesh_latlon_to_xyz(lat[q / nlon], lon[q % nlon], ex);
        for (int c = 0; c < 3; c++) worst_pos = fmax(worst_pos, fabs(ex[c] - gxyz[3 * q + c]));
    }
    WX_CHECK(worst_pos < 3e-7, "grid positions within float32 rounding (%.2e)", worst_pos);

    /* Grid→mesh: published 101,892 edges; coverage; brute force on every 53rd grid point and
     * both pole rows. */
    WX_CHECK(g.g2m.n_edges == 101892, "grid->mesh 1deg/M5/0.6: %lld edges (published 101,892)",
             (long long)g.g2m.n_edges);
    int32_t *per_grid = calloc((size_t)ng, sizeof(int32_t));
    for (int64_t k = 0; k < g.g2m.n_edges; k++) per_grid[g.g2m.senders[k]]++;
    int32_t uncovered = 0;
    for (int32_t q = 0; q < ng; q++) uncovered += per_grid[q] == 0;
    WX_CHECK(uncovered == 0, "every grid point has >= 1 grid->mesh edge (%d without)", uncovered);
    int64_t *first = malloc(((size_t)ng + 1) * sizeof(int64_t));
    first[0] = 0;
    for (int32_t q = 0; q < ng; q++) first[q + 1] = first[q] + per_grid[q];
    int mismatches = 0, checked = 0;
    for (int32_t q = 0; q < ng; q++) {
        if (q % 53 && q >= nlon && q < ng - nlon) continue;
        checked++;
        int64_t k = first[q];
        for (int32_t v = 0; v < nm; v++) {
            const double *a = gxyz + 3 * q, *b = g.ico.xyz + 3 * v;
            double d2 = (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
            if (d2 <= g.radius * g.radius) {
                if (k >= first[q + 1] || g.g2m.receivers[k] != v || g.g2m.senders[k] != q) mismatches++;
                k++;
            }
        }
        if (k != first[q + 1]) mismatches++;
    }
    WX_CHECK(mismatches == 0, "grid->mesh equals brute force on %d grid points (%d mismatches)",
             checked, mismatches);
    free(first);
    free(per_grid);

    /* Mesh→grid: 3 edges per grid point from one finest face. */
    WX_CHECK(g.m2g.n_edges == 3 * (int64_t)ng && g.m2g.n_edges == 195480,
             "mesh->grid %lld edges = 3 x grid points", (long long)g.m2g.n_edges);
    double worst_sum = 0, worst_recon = 0, worst_det = 0;
    int bad_range = 0, bad_face = 0, n_out = 0;
    for (int32_t q = 0; q < ng; q++) {
        const float *w = g.m2g_weights + 3 * q;
        int32_t f = g.m2g_face[q];
        if (f < g.ico.face_off[5] || f >= g.ico.face_off[6]) bad_face++;
        const int32_t *t = g.ico.faces + 3 * (int64_t)f;
        double rec[3] = {0, 0, 0};
        for (int c = 0; c < 3; c++) {
            bad_range += !(w[c] >= 0.0f && w[c] <= 1.0f);
            if (g.m2g.senders[3 * q + c] != t[c] || g.m2g.receivers[3 * q + c] != q) bad_face++;
            for (int d = 0; d < 3; d++) rec[d] += w[c] * g.ico.xyz[3 * t[c] + d];
        }
        worst_sum = fmax(worst_sum, fabs((double)w[0] + w[1] + w[2] - 1.0));
        double n = sqrt(rec[0] * rec[0] + rec[1] * rec[1] + rec[2] * rec[2]);
        for (int d = 0; d < 3; d++) worst_recon = fmax(worst_recon, fabs(rec[d] / n - gxyz[3 * q + d]));
        /* Containment straight from orientation: p is left of (or on) every directed edge. */
        const double *v0 = g.ico.xyz + 3 * t[0], *v1 = g.ico.xyz + 3 * t[1], *v2 = g.ico.xyz + 3 * t[2];
        double m = fmin(det3(v0, v1, gxyz + 3 * q), fmin(det3(v1, v2, gxyz + 3 * q), det3(v2, v0, gxyz + 3 * q)));
        worst_det = fmin(worst_det, m);
        n_out += m < -1e-15;
    }
    WX_CHECK(bad_range == 0 && bad_face == 0, "mesh->grid weights in [0,1] (%d bad), senders are the face's vertices (%d bad)",
             bad_range, bad_face);
    WX_CHECK(worst_sum < 1e-6, "barycentric weights sum to 1 (%.2e)", worst_sum);
    WX_CHECK(worst_recon < 1e-6, "weights reconstruct the grid point (%.2e)", worst_recon);
    /* GraphCast's face is trimesh's Euclidean-closest one (mesh_closest.c): it contains the point
     * except in a thin band along edges, 17 points here as DeepMind's code decides them
     * (tests/ref/ref_mesh_m2g.py, test_mesh_m2g), just outside. */
    WX_CHECK(n_out == 17 && worst_det > -1e-8,
             "the face contains each point but 17 by an edge (%d; min det %.2e)", n_out, worst_det);

    /* Node features: [sin lat, cos lon, sin lon]. */
    double worst_node = 0;
    int fin = 1;
    for (int32_t q = 0; q < ng; q++) {
        double la = lat[q / nlon] * M_PI / 180, lo = lon[q % nlon] * M_PI / 180;
        const float *f = g.grid_features + 3 * q;
        worst_node = fmax(worst_node, fmax(fabs(f[0] - sin(la)), fmax(fabs(f[1] - cos(lo)), fabs(f[2] - sin(lo)))));
    }
    for (int32_t v = 0; v < nm; v++) {
        const float *f = g.mesh_features + 3 * v;
        const double *p = g.ico.xyz + 3 * v;
        double la = asin(p[2]), lo = atan2(p[1], p[0]);
        for (int c = 0; c < 3; c++) fin &= isfinite(f[c]);
        worst_node = fmax(worst_node, fmax(fabs(f[0] - sin(la)), fmax(fabs(f[1] - cos(lo)), fabs(f[2] - sin(lo)))));
    }
    WX_CHECK(fin && worst_node < 1e-6, "node features [sin lat, cos lon, sin lon] (%.2e)", worst_node);
    WX_CHECK(g.grid_features[0] == 1.0f && g.grid_features[3 * (ng - 1)] == -1.0f,
             "sin lat is +1 at the north pole row and -1 at the south");

    double *glatlon = malloc((size_t)ng * 2 * sizeof(double));
    for (int32_t q = 0; q < ng; q++) {
        glatlon[2 * q] = lat[q / nlon];
        glatlon[2 * q + 1] = lon[q % nlon];
    }
    check_features("mesh", &g.mesh, g.ico.xyz, g.ico.xyz, NULL, 0);
    check_features("grid->mesh", &g.g2m, gxyz, g.ico.xyz, NULL, 0);
    check_features("mesh->grid", &g.m2g, g.ico.xyz, gxyz, glatlon, WX_MESH_M2G_NORM_PUBLISHED);
    free(glatlon);
    check_pole_frames(&g, gxyz, lat, nlat, lon, nlon);
    WX_CHECK(fabs(g.mesh.max_length - 1.051462) < 1e-6, "multi-mesh longest edge is M0's (%.7f)",
             g.mesh.max_length);
    check_csr("mesh", &g.mesh);
    check_csr("grid->mesh", &g.g2m);
    check_csr("mesh->grid", &g.m2g);
    free(gxyz);
    wx_mesh_graphs_free(&g);

    /* Usage errors. */
    wx_mesh_options bad = opt;
    bad.fraction = 0;
    WX_CHECK(wx_mesh_graphs_build(&bad, &g) == WX_ERR_USAGE, "fraction 0 is a usage error");
    bad = opt;
    bad.levels = -1;
    WX_CHECK(wx_mesh_graphs_build(&bad, &g) == WX_ERR_USAGE, "negative level is a usage error");
}

int main(void) {
    test_icosphere();
    test_rotation();
    test_graphs_1deg();
    return wx_test_summary();
}
