/* Grid ↔ mesh connectivity (GraphCast grid_mesh_connectivity.py): radius query grid→mesh and
 * mesh→grid faces (the containing triangle found through a uniform cell grid over 3-D unit
 * vectors, then GraphCast's Euclidean-closest face among its neighbours, mesh_closest.c). */
#pragma GCC optimize("fp-contract=off") /* float32 steps must round exactly as in numpy */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "models/mesh.h"

/* ---- numpy-compatible float32 sin/cos ----
 * numpy (≥ 1.22, x86 with FMA3 or AVX512F, ARM NEON) evaluates float32 sin/cos with a Cody–Waite
 * reduction by π/2 and degree-8/9 minimax polynomials, all in float32 with fused multiply-adds.
 * Its results differ from correctly rounded sinf/cosf in ~15% of arguments, enough to move a few
 * grid points across the published radius; we evaluate the same sequence with fmaf. Valid for
 * |x| < 7e4 (grid angles are within ±2π). */
static float poly_cos(float x2) {
    float r = fmaf(0x1.98e616p-16f, x2, -0x1.6c06dcp-10f);
    r = fmaf(r, x2, 0x1.55553cp-05f);
    r = fmaf(r, x2, -0x1.000000p-01f);
    return fmaf(r, x2, 1.0f);
}

static float poly_sin(float x, float x2) {
    float r = fmaf(0x1.7d3bbcp-19f, x2, -0x1.a06bbap-13f);
    r = fmaf(r, x2, 0x1.11119ap-07f);
    r = fmaf(r, x2, -0x1.555556p-03f);
    r = r * x2;
    return fmaf(r, x, x);
}

static float np_sincos_f32(float x, int want_cos) {
    const float magic = 0x1.800000p+23f; /* adding and subtracting it rounds to an integer */
    float q = x * 0x1.45f306p-1f;         /* 2/π */
    q = (q + magic) - magic;
    float r = fmaf(q, -0x1.921fb0p+00f, x); /* π/2 in three parts */
    r = fmaf(q, -0x1.5110b4p-22f, r);
    r = fmaf(q, -0x1.846988p-48f, r);
    float r2 = r * r;
    int iq = (int)q + (want_cos ? 1 : 0);
    float v = (iq & 1) ? poly_cos(r2) : poly_sin(r, r2);
    return (iq & 2) ? 0.0f - v : v;
}

void wx_mesh_grid_xyz(const double *lat, int nlat, const double *lon, int nlon, double *xyz) {
    const float deg = (float)M_PI / 180.0f; /* numpy's deg2rad factor for float32 */
    for (int j = 0; j < nlat; j++) {
        float theta = (90.0f - (float)lat[j]) * deg;
        float st = np_sincos_f32(theta, 0), ct = np_sincos_f32(theta, 1);
        for (int i = 0; i < nlon; i++) {
            float ph = (float)lon[i] * deg;
            double *p = xyz + 3 * ((int64_t)j * nlon + i);
            p[0] = np_sincos_f32(ph, 1) * st;
            p[1] = np_sincos_f32(ph, 0) * st;
            p[2] = ct;
        }
    }
}

/* ---- uniform cell grid over points (n, 3) in [−1, 1]³ ----
 * Cells of side h ≥ the query radius, points stored cell by cell (a counting sort), so a ball
 * query reads at most 3×3×3 runs of contiguous points. A query returns exactly the points with
 * squared distance <= r² (scipy cKDTree's test) in cell order; callers sort them. */

#define CG_MAX_CELLS 256 /* per axis: at most 256³ int32 cell starts (64 MiB) */

typedef struct {
    int32_t nc;      /* cells per axis */
    double h;        /* cell side */
    int32_t *start;  /* (nc³ + 1) first point of each cell in idx/pts order */
    int32_t *idx;    /* (n) original index of each stored point */
    double *pts;     /* (n, 3) points in cell order */
} cell_grid;

static int32_t cg_cell(const cell_grid *t, double x) {
    int64_t c = (int64_t)floor((x + 1.0) / t->h);
    return (int32_t)(c < 0 ? 0 : (c >= t->nc ? t->nc - 1 : c));
}

static int64_t cg_key(const cell_grid *t, const double *p) {
    return ((int64_t)cg_cell(t, p[2]) * t->nc + cg_cell(t, p[1])) * t->nc + cg_cell(t, p[0]);
}

static void cg_build(cell_grid *t, const double *pts, int32_t n, double r) {
    int32_t nc = (int32_t)(2.0 / r);
    nc = nc < 1 ? 1 : (nc > CG_MAX_CELLS ? CG_MAX_CELLS : nc);
    t->nc = nc;
    t->h = 2.0 / nc * (1.0 + 1e-12); /* side >= r, and [−1, 1] maps into nc cells */
    int64_t ncell = (int64_t)nc * nc * nc;
    t->start = wx_calloc((size_t)ncell + 1, sizeof(int32_t));
    t->idx = wx_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    t->pts = wx_malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof(double));
    for (int32_t i = 0; i < n; i++) t->start[cg_key(t, pts + 3 * (int64_t)i) + 1]++;
    for (int64_t c = 0; c < ncell; c++) t->start[c + 1] += t->start[c];
    int32_t *next = wx_malloc((size_t)ncell * sizeof(int32_t));
    memcpy(next, t->start, (size_t)ncell * sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) {
        int32_t k = next[cg_key(t, pts + 3 * (int64_t)i)]++;
        t->idx[k] = i;
        memcpy(t->pts + 3 * (int64_t)k, pts + 3 * (int64_t)i, 3 * sizeof(double));
    }
    free(next);
}

static void cg_free(cell_grid *t) {
    free(t->start);
    free(t->idx);
    free(t->pts);
}

static double dist2(const double *a, const double *b) {
    double d0 = a[0] - b[0], d1 = a[1] - b[1], d2 = a[2] - b[2];
    return d0 * d0 + d1 * d1 + d2 * d2;
}

/* A growable int32 list. */
typedef struct {
    int32_t *v;
    int64_t n, cap;
} i32_list;

static void i32_reserve(i32_list *l, int64_t extra) {
    if (l->n + extra <= l->cap) return;
    int64_t cap = l->cap ? l->cap : 1024;
    while (cap < l->n + extra) cap *= 2;
    int32_t *v = wx_malloc((size_t)cap * sizeof(int32_t));
    if (l->n) memcpy(v, l->v, (size_t)l->n * sizeof(int32_t));
    free(l->v);
    l->v = v, l->cap = cap;
}

/* Appends to l the points within r of q (r <= the grid's cell side); returns how many. */
static int64_t cg_ball_append(const cell_grid *t, const double *q, double r, i32_list *l) {
    const double r2 = r * r, pad = r * (1.0 + 1e-9) + 1e-12; /* cell range: never too narrow */
    int32_t lo[3], hi[3];
    for (int d = 0; d < 3; d++) lo[d] = cg_cell(t, q[d] - pad), hi[d] = cg_cell(t, q[d] + pad);
    const int64_t n0 = l->n;
    for (int32_t cz = lo[2]; cz <= hi[2]; cz++)
        for (int32_t cy = lo[1]; cy <= hi[1]; cy++) {
            int64_t row = ((int64_t)cz * t->nc + cy) * t->nc;
            int32_t k0 = t->start[row + lo[0]], k1 = t->start[row + hi[0] + 1];
            /* l->n counts every point appended so far, so a reallocation keeps them all */
            i32_reserve(l, k1 - k0);
            for (int32_t k = k0; k < k1; k++)
                if (dist2(q, t->pts + 3 * (int64_t)k) <= r2) l->v[l->n++] = t->idx[k];
        }
    return l->n - n0;
}

static void sort_i32(int32_t *a, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        int32_t v = a[i];
        int64_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

wx_status wx_mesh_radius_edges(const wx_icosphere *ico, const double *grid_xyz, int32_t n_grid,
                               double radius, int32_t **grid_idx, int32_t **mesh_idx,
                               int64_t *n_edges) {
    if (!(radius > 0.0) || radius > 2.0)
        return wx_error_set(WX_ERR_USAGE, "grid→mesh radius %g is outside (0, 2]", radius);
    cell_grid t;
    cg_build(&t, ico->xyz, ico->nodes[ico->levels], radius);
    int64_t *off = wx_malloc(((size_t)n_grid + 1) * sizeof(int64_t));
    /* One query per point into per-thread lists over contiguous point ranges, joined in range
     * order: the edge order is that of the points whatever the thread count. */
    int nth = omp_get_max_threads();
    i32_list *lists = wx_calloc((size_t)nth, sizeof(i32_list));
    int32_t *first = wx_calloc((size_t)nth + 1, sizeof(int32_t));
#pragma omp parallel num_threads(nth)
    {
        int id = omp_get_thread_num(), nt = omp_get_num_threads();
        int32_t g0 = (int32_t)((int64_t)n_grid * id / nt), g1 = (int32_t)((int64_t)n_grid * (id + 1) / nt);
        first[id] = g0;
        if (id == nt - 1) first[nt] = n_grid;
        for (int32_t g = g0; g < g1; g++) {
            int64_t k0 = lists[id].n;
            int64_t n = cg_ball_append(&t, grid_xyz + 3 * (int64_t)g, radius, &lists[id]);
            sort_i32(lists[id].v + k0, n);
            off[g + 1] = n;
        }
    }
    off[0] = 0;
    for (int32_t g = 0; g < n_grid; g++) off[g + 1] += off[g];
    int64_t e = off[n_grid];
    int32_t *gi = NULL, *mi = NULL;
    if (e <= INT32_MAX) {
        gi = wx_malloc((size_t)(e > 0 ? e : 1) * sizeof(int32_t));
        mi = wx_malloc((size_t)(e > 0 ? e : 1) * sizeof(int32_t));
        for (int id = 0; id < nth; id++) {
            if (lists[id].n)
                memcpy(mi + off[first[id]], lists[id].v, (size_t)lists[id].n * sizeof(int32_t));
        }
#pragma omp parallel for schedule(static)
        for (int32_t g = 0; g < n_grid; g++)
            for (int64_t k = off[g]; k < off[g + 1]; k++) gi[k] = g;
    }
    for (int id = 0; id < nth; id++) free(lists[id].v);
    free(lists);
    free(first);
    if (e > INT32_MAX) {
        cg_free(&t);
        free(off);
        return wx_error_set(WX_ERR_USAGE, "grid→mesh: %lld edges do not fit int32 indices",
                            (long long)e);
    }
    cg_free(&t);
    free(off);
    *grid_idx = gi;
    *mesh_idx = mi;
    *n_edges = e;
    return WX_OK;
}

/* Gnomonic barycentric weights of p in face (a, b, c): w_a = det(p, b, c) etc., normalised. With
 * counter-clockwise faces all three are >= 0 exactly when the ray through p crosses the face. */
static void barycentric(const double *a, const double *b, const double *c, const double *p,
                        double *w) {
#define DET(u, v, x)                                                                     \
    ((u)[0] * ((v)[1] * (x)[2] - (v)[2] * (x)[1]) - (u)[1] * ((v)[0] * (x)[2] - (v)[2] * (x)[0]) + \
     (u)[2] * ((v)[0] * (x)[1] - (v)[1] * (x)[0]))
    w[0] = DET(p, b, c);
    w[1] = DET(a, p, c);
    w[2] = DET(a, b, p);
#undef DET
    double s = w[0] + w[1] + w[2];
    for (int k = 0; k < 3; k++) w[k] /= s;
}

wx_status wx_mesh_m2g_faces(const wx_icosphere *ico, const double *grid_xyz, int32_t n_grid,
                            int32_t *face, float *weights) {
    int L = ico->levels;
    int32_t f0 = ico->face_off[L], nf = ico->face_off[L + 1] - f0;
    double *cen = wx_malloc((size_t)nf * 3 * sizeof(double));
    /* A point whose ray crosses face T lies within (circumradius about the centroid) + (gap
     * between the sphere and T's plane) of T's centroid, so that ball holds every candidate. */
    double reach = 0.0;
    for (int32_t f = 0; f < nf; f++) {
        const int32_t *t = ico->faces + 3 * (int64_t)(f0 + f);
        const double *v[3] = {ico->xyz + 3 * (int64_t)t[0], ico->xyz + 3 * (int64_t)t[1],
                              ico->xyz + 3 * (int64_t)t[2]};
        double *c = cen + 3 * (int64_t)f;
        for (int d = 0; d < 3; d++) c[d] = (v[0][d] + v[1][d] + v[2][d]) / 3.0;
        double rc = 0.0;
        for (int k = 0; k < 3; k++) rc = fmax(rc, sqrt(dist2(c, v[k])));
        double e1[3], e2[3], nrm[3];
        for (int d = 0; d < 3; d++) {
            e1[d] = v[1][d] - v[0][d];
            e2[d] = v[2][d] - v[0][d];
        }
        nrm[0] = e1[1] * e2[2] - e1[2] * e2[1];
        nrm[1] = e1[2] * e2[0] - e1[0] * e2[2];
        nrm[2] = e1[0] * e2[1] - e1[1] * e2[0];
        double h = fabs(nrm[0] * v[0][0] + nrm[1] * v[0][1] + nrm[2] * v[0][2]) /
                   sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
        reach = fmax(reach, rc + (1.0 - h));
    }
    reach = reach * 1.01 + 1e-9;
    cell_grid t;
    cg_build(&t, cen, nf, reach);
    int failed = -1;
#pragma omp parallel
    {
        i32_list cl = {NULL, 0, 0};
#pragma omp for schedule(static)
        for (int32_t g = 0; g < n_grid; g++) {
            const double *p = grid_xyz + 3 * (int64_t)g;
            cl.n = 0;
            int64_t n = cg_ball_append(&t, p, reach, &cl);
            int32_t *cand = cl.v;
            sort_i32(cand, n);
            int32_t best = -1;
            double best_min = -INFINITY;
            for (int64_t k = 0; k < n; k++) {
                const int32_t *tri = ico->faces + 3 * (int64_t)(f0 + cand[k]);
                double w[3];
                barycentric(ico->xyz + 3 * (int64_t)tri[0], ico->xyz + 3 * (int64_t)tri[1],
                            ico->xyz + 3 * (int64_t)tri[2], p, w);
                double m = fmin(w[0], fmin(w[1], w[2]));
                if (m > best_min) { /* strict: on a shared edge the lower face index wins ties */
                    best_min = m;
                    best = cand[k];
                }
            }
            if (best < 0 || best_min < -1e-9) {
#pragma omp critical
                if (failed < 0 || g < failed) failed = g;
                continue;
            }
            face[g] = f0 + best;
        }
        free(cl.v);
    }
    cg_free(&t);
    free(cen);
    if (failed >= 0)
        return wx_error_set(WX_ERR_RUN, "mesh→grid: no level-%d face contains grid point %d", L,
                            failed);
    /* GraphCast's face is the Euclidean-closest one, which near an edge may be the neighbour. */
    WX_TRY(wx_mesh_closest_faces(ico, grid_xyz, n_grid, face));
#pragma omp parallel for schedule(static)
    for (int32_t g = 0; g < n_grid; g++) {
        const int32_t *tri = ico->faces + 3 * (int64_t)face[g];
        double w[3], s = 0.0;
        barycentric(ico->xyz + 3 * (int64_t)tri[0], ico->xyz + 3 * (int64_t)tri[1],
                    ico->xyz + 3 * (int64_t)tri[2], grid_xyz + 3 * (int64_t)g, w);
        /* Clamped: rounding leaves -1e-17 on an edge, and the closest face can miss the point's
         * ray by up to ~4e-6 (1°/M5). */
        for (int k = 0; k < 3; k++) s += (w[k] = fmax(w[k], 0.0));
        for (int k = 0; k < 3; k++) weights[3 * (int64_t)g + k] = (float)(w[k] / s);
    }
    return WX_OK;
}
