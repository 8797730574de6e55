/* Conservative regridding (wx_regrid.h): sparse separable weights, NaN-skipping application. */
#include "meteo/wx_regrid.h"

#include <math.h>
#include <stdlib.h>


/* One axis' weights: target cell t overlaps source cells idx[off[t] .. off[t + 1]) with weights
 * w[...] (summing to 1). */
typedef struct {
    int *off, *idx;
    double *w;
} axis_w;

struct wx_regrid {
    int snlat, snlon, dnlat, dnlon;
    axis_w lat, lon;
};

/* Latitude bounds of row j (degrees): midpoints between rows; an outer row within one spacing of
 * a pole reaches it (WB2's bounds on global grids, the FourCastNet 720-row grid included), any
 * other outer row half a spacing. */
static void lat_bounds(const wx_grid *g, int j, double *hi, double *lo) {
    double lat = wx_grid_lat(g, j), h = g->dlat / 2;
    *hi = j > 0 ? lat + h : lat + g->dlat >= 90 - 1e-9 ? 90 : lat + h;
    *lo = j < g->nlat - 1 ? lat - h : lat - g->dlat <= -90 + 1e-9 ? -90 : lat - h;
}

/* Length of the overlap of [a0, a1] and [b0, b1] in degrees of longitude, either shifted by
 * whole turns (grids start anywhere in [0, 360) and run up to 360° further). */
static double lon_overlap(double a0, double a1, double b0, double b1) {
    double s = 0;
    for (int k = -2; k <= 2; k++) {
        double o = fmin(a1, b1 + 360.0 * k) - fmax(a0, b0 + 360.0 * k);
        if (o > 0) s += o;
    }
    return s;
}

/* Overlap of target cell t with source cell s along one axis (lat: of sin φ, the cell area per
 * radian of longitude). */
static double overlap(const wx_grid *src, const wx_grid *dst, int is_lat, int t, int s) {
    if (is_lat) {
        double th, tl, sh, sl;
        lat_bounds(dst, t, &th, &tl);
        lat_bounds(src, s, &sh, &sl);
        double hi = fmin(th, sh), lo = fmax(tl, sl), r = M_PI / 180;
        return hi > lo ? sin(hi * r) - sin(lo * r) : 0;
    }
    double tc = wx_grid_lon(dst, t), sc = wx_grid_lon(src, s);
    return lon_overlap(tc - dst->dlon / 2, tc + dst->dlon / 2, sc - src->dlon / 2,
                       sc + src->dlon / 2);
}

static wx_status axis_make(const wx_grid *src, const wx_grid *dst, int is_lat, axis_w *a) {
    int nt = is_lat ? dst->nlat : dst->nlon, ns = is_lat ? src->nlat : src->nlon, cap = 0, n = 0;
    a->off = wx_malloc(sizeof(int) * (size_t)(nt + 1));
    a->idx = NULL, a->w = NULL;
    for (int t = 0; t < nt; t++) {
        a->off[t] = n;
        double sum = 0;
        for (int s = 0; s < ns; s++) {
            double o = overlap(src, dst, is_lat, t, s);
            if (o <= 0) continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                a->idx = realloc(a->idx, sizeof(int) * (size_t)cap);
                a->w = realloc(a->w, sizeof(double) * (size_t)cap);
                WX_ASSERT(a->idx && a->w);
            }
            a->idx[n] = s, a->w[n++] = o, sum += o;
        }
        if (sum <= 0)
            return wx_error_set(WX_ERR_USAGE, "regridding: target %s %d (%g degrees) lies outside "
                                "the source grid", is_lat ? "row" : "column", t,
                                is_lat ? wx_grid_lat(dst, t) : wx_grid_lon(dst, t));
        for (int k = a->off[t]; k < n; k++) a->w[k] /= sum;
    }
    a->off[nt] = n;
    return WX_OK;
}

wx_status wx_regrid_create(const wx_grid *src, const wx_grid *dst, wx_regrid **out) {
    wx_regrid *r = wx_calloc(1, sizeof *r);
    r->snlat = src->nlat, r->snlon = src->nlon, r->dnlat = dst->nlat, r->dnlon = dst->nlon;
    wx_status st = axis_make(src, dst, 1, &r->lat);
    if (st == WX_OK) st = axis_make(src, dst, 0, &r->lon);
    if (st != WX_OK) {
        wx_regrid_free(r);
        r = NULL;
    }
    *out = r;
    return st;
}

void wx_regrid_apply(const wx_regrid *r, const float *in, float *out) {
    size_t n = (size_t)r->snlat * (size_t)r->dnlon;
    /* sv, sc: [snlat, dnlon] longitude pass of the values (NaN as 0) and of the finite mask */
    double *sv = wx_malloc(sizeof(double) * 2 * n), *sc = sv + n;
    for (int j = 0; j < r->snlat; j++) {
        const float *row = in + (size_t)j * r->snlon;
        for (int I = 0; I < r->dnlon; I++) {
            double v = 0, c = 0;
            for (int k = r->lon.off[I]; k < r->lon.off[I + 1]; k++) {
                float x = row[r->lon.idx[k]];
                if (isnan(x)) continue;
                v += r->lon.w[k] * x, c += r->lon.w[k];
            }
            sv[(size_t)j * r->dnlon + I] = v, sc[(size_t)j * r->dnlon + I] = c;
        }
    }
    for (int J = 0; J < r->dnlat; J++)
        for (int I = 0; I < r->dnlon; I++) {
            double v = 0, c = 0;
            for (int k = r->lat.off[J]; k < r->lat.off[J + 1]; k++) {
                size_t p = (size_t)r->lat.idx[k] * r->dnlon + I;
                v += r->lat.w[k] * sv[p], c += r->lat.w[k] * sc[p];
            }
            out[(size_t)J * r->dnlon + I] = c > 0 ? (float)(v / c) : NAN;
        }
    free(sv);
}

void wx_regrid_free(wx_regrid *r) {
    if (!r) return;
    free(r->lat.off), free(r->lat.idx), free(r->lat.w);
    free(r->lon.off), free(r->lon.idx), free(r->lon.w);
    free(r);
}
