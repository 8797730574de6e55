/* Icosahedral refinement hierarchy M0..ML (GraphCast icosahedral_mesh.py).
 *
 * Positions follow GraphCast's float32 arithmetic step by step (float32 vertices, midpoints summed
 * and normalised in float32, the norm's squares summed in double as numpy's BLAS sdot does): the
 * published grid→mesh edge counts sit on a radius that is itself a float32 edge length, and a few
 * grid/mesh pairs lie within float32 rounding of it, so double positions give different counts
 * (1,618,752 instead of 1,618,745 at 0.25°/M6). Positions are stored as doubles holding those
 * float32 values. */
#pragma GCC optimize("fp-contract=off") /* float32 steps must round exactly as in GraphCast */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/mesh.h"

/* |v| of a float32 vector as numpy computes it: float32 products, double sum, float32 sqrt. */
static float norm_f32(const float *v) {
    float p0 = v[0] * v[0], p1 = v[1] * v[1], p2 = v[2] * v[2];
    double s = (double)p0 + (double)p1 + (double)p2;
    return sqrtf((float)s);
}

/* The 12 icosahedron vertices (cyclic sign permutations of (±1, ±φ, 0)) in GraphCast's order,
 * rotated by vertices·R_y(α), α = (π − 2·asin(φ/√3))/2, so that a face lies flat on top. */
static void icosahedron(float *v, int32_t *faces) {
    static const int32_t f[20][3] = {
        {0, 1, 2},  {0, 6, 1},  {8, 0, 2},  {8, 4, 0},  {3, 8, 2},  {3, 2, 7},   {7, 2, 1},
        {0, 4, 6},  {4, 11, 6}, {6, 11, 5}, {1, 5, 7},  {4, 10, 11}, {4, 8, 10}, {10, 8, 3},
        {10, 3, 9}, {11, 10, 9}, {11, 9, 5}, {5, 9, 7}, {9, 3, 7},  {1, 6, 5},
    };
    double phi = (1.0 + sqrt(5.0)) / 2.0;
    float n = (float)sqrt(1.0 + phi * phi);
    int k = 0;
    for (int s1 = 0; s1 < 2; s1++) {
        for (int s2 = 0; s2 < 2; s2++) {
            float c1 = s1 ? -1.0f : 1.0f, c2 = (float)(s2 ? -phi : phi);
            float raw[3][3] = {{c1, c2, 0.0f}, {0.0f, c1, c2}, {c2, 0.0f, c1}};
            for (int r = 0; r < 3; r++, k++)
                for (int d = 0; d < 3; d++) v[3 * k + d] = raw[r][d] / n;
        }
    }
    double alpha = (M_PI - 2.0 * asin(phi / sqrt(3.0))) / 2.0;
    double ca = cos(alpha), sa = sin(alpha);
    for (int i = 0; i < 12; i++) {
        double x = v[3 * i], y = v[3 * i + 1], z = v[3 * i + 2];
        v[3 * i] = (float)(x * ca - z * sa);
        v[3 * i + 1] = (float)y;
        v[3 * i + 2] = (float)(x * sa + z * ca);
    }
    memcpy(faces, f, sizeof f);
}

/* Open-addressing map from an undirected edge (sorted pair) to its midpoint vertex. */
typedef struct {
    uint64_t *keys; /* 0 = empty (a real key always has b > a, so never 0) */
    int32_t *vals;
    uint64_t mask;
} edge_map;

static int32_t edge_map_get(edge_map *m, int32_t a, int32_t b, int32_t *next, float *v) {
    if (a > b) {
        int32_t t = a;
        a = b;
        b = t;
    }
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 17;
    for (uint64_t i = h & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) return m->vals[i];
        if (m->keys[i] == 0) {
            int32_t c = (*next)++;
            float mid[3];
            for (int d = 0; d < 3; d++) mid[d] = (v[3 * a + d] + v[3 * b + d]) * 0.5f;
            float n = norm_f32(mid);
            for (int d = 0; d < 3; d++) v[3 * c + d] = mid[d] / n;
            m->keys[i] = key;
            m->vals[i] = c;
            return c;
        }
    }
}

wx_status wx_mesh_icosphere_build(int levels, wx_icosphere *out) {
    memset(out, 0, sizeof *out);
    if (levels < 0 || levels > WX_MESH_MAX_LEVEL)
        return wx_error_set(WX_ERR_USAGE, "mesh levels: %d is out of range (expected 0..%d)", levels,
                            WX_MESH_MAX_LEVEL);
    int64_t total_faces = 0;
    out->levels = levels;
    for (int k = 0; k <= levels; k++) {
        out->nodes[k] = (int32_t)(10 * ((int64_t)1 << (2 * k)) + 2);
        out->face_off[k] = (int32_t)total_faces;
        total_faces += 20 * ((int64_t)1 << (2 * k));
    }
    out->face_off[levels + 1] = (int32_t)total_faces;
    int32_t nv = out->nodes[levels];
    float *v = wx_malloc((size_t)nv * 3 * sizeof(float));
    out->faces = wx_malloc((size_t)total_faces * 3 * sizeof(int32_t));
    icosahedron(v, out->faces);

    /* Midpoint vertices are numbered in face order, so level k's vertices are a prefix of k+1's. */
    uint64_t cap = 1;
    while (cap < 4 * (uint64_t)out->nodes[levels]) cap <<= 1;
    edge_map map = {wx_malloc(cap * sizeof(uint64_t)), wx_malloc(cap * sizeof(int32_t)), cap - 1};
    for (int k = 1; k <= levels; k++) {
        memset(map.keys, 0, cap * sizeof(uint64_t));
        int32_t next = out->nodes[k - 1];
        const int32_t *pf = out->faces + 3 * (int64_t)out->face_off[k - 1];
        int32_t *nf = out->faces + 3 * (int64_t)out->face_off[k];
        int32_t nfaces = out->face_off[k] - out->face_off[k - 1];
        for (int32_t f = 0; f < nfaces; f++) {
            int32_t i1 = pf[3 * f], i2 = pf[3 * f + 1], i3 = pf[3 * f + 2];
            int32_t i12 = edge_map_get(&map, i1, i2, &next, v);
            int32_t i23 = edge_map_get(&map, i2, i3, &next, v);
            int32_t i31 = edge_map_get(&map, i3, i1, &next, v);
            /* The four children keep the parent's counter-clockwise orientation. */
            int32_t child[12] = {i1, i12, i31, i12, i2, i23, i31, i23, i3, i12, i23, i31};
            memcpy(nf + 12 * (int64_t)f, child, sizeof child);
        }
        WX_ASSERT(next == out->nodes[k]);
    }
    free(map.keys);
    free(map.vals);

    out->xyz = wx_malloc((size_t)nv * 3 * sizeof(double));
    for (int64_t i = 0; i < 3 * (int64_t)nv; i++) out->xyz[i] = v[i];
    free(v);
    return WX_OK;
}

void wx_mesh_icosphere_free(wx_icosphere *m) {
    free(m->xyz);
    free(m->faces);
    memset(m, 0, sizeof *m);
}

wx_status wx_mesh_face_edges(const wx_icosphere *m, int lo, int hi, int32_t **senders,
                             int32_t **receivers, int64_t *n_edges) {
    if (lo < 0 || hi > m->levels || lo > hi)
        return wx_error_set(WX_ERR_USAGE, "mesh edges: levels %d..%d outside 0..%d", lo, hi,
                            m->levels);
    int64_t f0 = m->face_off[lo], f1 = m->face_off[hi + 1], nf = f1 - f0;
    int32_t *s = wx_malloc((size_t)(3 * nf) * sizeof(int32_t));
    int32_t *r = wx_malloc((size_t)(3 * nf) * sizeof(int32_t));
    for (int64_t f = 0; f < nf; f++) {
        const int32_t *t = m->faces + 3 * (f0 + f);
        for (int c = 0; c < 3; c++) {
            s[3 * f + c] = t[c];
            r[3 * f + c] = t[(c + 1) % 3];
        }
    }
    *senders = s;
    *receivers = r;
    *n_edges = 3 * nf;
    return WX_OK;
}

/* Float32 like GraphCast's _get_max_edge_distance: the grid→mesh radius is this value times the
 * fraction, so its rounding decides the published counts. */
double wx_mesh_level_max_edge(const wx_icosphere *m, int k) {
    float best = 0.0f;
    for (int32_t f = m->face_off[k]; f < m->face_off[k + 1]; f++) {
        const int32_t *t = m->faces + 3 * (int64_t)f;
        for (int c = 0; c < 3; c++) {
            const double *a = m->xyz + 3 * (int64_t)t[c], *b = m->xyz + 3 * (int64_t)t[(c + 1) % 3];
            float d0 = (float)a[0] - (float)b[0], d1 = (float)a[1] - (float)b[1];
            float d2 = (float)a[2] - (float)b[2];
            float len = sqrtf((d0 * d0 + d1 * d1) + d2 * d2);
            if (len > best) best = len;
        }
    }
    return best;
}
