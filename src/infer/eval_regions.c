/* WeatherBench2's evaluation regions (eval_regions.h): names, masks, the land-sea mask, and the
 * per-region scoring of one field. */
#include "infer/eval_regions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/wx_log.h"

#define NONE INFINITY /* an open slice end: slice(None, x) / slice(x, None) */
#define EPS 1e-6      /* degrees: our latitudes are lat0 − j·dlat, WB2's the stored values */

/* One SliceRegion: latitude slices and longitude slices (each list of up to two, inclusive, a
 * point in any of them), optionally times the land-sea mask (CombinedRegion of the slice and a
 * LandRegion). Bounds from google-research/weatherbench2 scripts/evaluate.py, main():
 * predefined_regions and land_regions (360 − x written out). */
typedef struct {
    const char *name;
    int nlat;
    double lat[2][2];
    int nlon; /* 0: every longitude */
    double lon[2][2];
    int land;
} region_def;

static const region_def REGIONS[WX_EVAL_NREGIONS] = {
    {"global", 1, {{-NONE, NONE}}, 0, {{0}}, 0},
    {"tropics", 1, {{-20, 20}}, 0, {{0}}, 0},
    {"extra-tropics", 2, {{-NONE, -20}, {20, NONE}}, 0, {{0}}, 0},
    {"northern-hemisphere", 1, {{20, NONE}}, 0, {{0}}, 0},
    {"southern-hemisphere", 1, {{-NONE, -20}}, 0, {{0}}, 0},
    {"europe", 1, {{35, 75}}, 2, {{347.5, NONE}, {0, 42.5}}, 0},
    {"north-america", 1, {{25, 60}}, 1, {{240, 285}}, 0},
    {"north-atlantic", 1, {{25, 65}}, 1, {{290, 350}}, 0},
    {"north-pacific", 1, {{25, 60}}, 1, {{145, 230}}, 0},
    {"east-asia", 1, {{25, 60}}, 1, {{102.5, 150}}, 0},
    {"ausnz", 1, {{-45, -12.5}}, 1, {{120, 175}}, 0},
    {"arctic", 1, {{60, 90}}, 0, {{0}}, 0},
    {"antarctic", 1, {{-90, -60}}, 0, {{0}}, 0},
    {"global_land", 1, {{-NONE, NONE}}, 0, {{0}}, 1},
    {"extra-tropics_land", 2, {{-NONE, -20}, {20, NONE}}, 0, {{0}}, 1},
    {"tropics_land", 1, {{-20, 20}}, 0, {{0}}, 1},
};

const char *wx_eval_region_name(int id) {
    return id >= 0 && id < WX_EVAL_NREGIONS ? REGIONS[id].name : NULL;
}

int wx_eval_region_is_land(int id) {
    return id >= 0 && id < WX_EVAL_NREGIONS && REGIONS[id].land;
}

static void add_id(wx_eval_regions *out, int id) {
    for (int k = 0; k < out->n; k++)
        if (out->id[k] == id) return;
    out->id[out->n++] = id;
}

wx_status wx_eval_regions_parse(const char *list, wx_eval_regions *out) {
    memset(out, 0, sizeof *out);
    if (!list) return WX_OK;
    char known[512] = "";
    for (int id = 0; id < WX_EVAL_NREGIONS; id++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s, ", REGIONS[id].name);
    snprintf(known + strlen(known), sizeof known - strlen(known), "all");
    const char *p = list;
    do {
        size_t len = strcspn(p, ",");
        int id = -1;
        if (len == 3 && !strncmp(p, "all", 3)) {
            for (int k = 1; k < WX_EVAL_NREGIONS; k++) add_id(out, k);
            id = 0;
        }
        for (int k = 0; k < WX_EVAL_NREGIONS && id < 0; k++)
            if (strlen(REGIONS[k].name) == len && !strncmp(p, REGIONS[k].name, len)) id = k;
        if (id < 0)
            return wx_error_set(WX_ERR_USAGE, "--regions: unknown region '%.*s' (known: %s)",
                                (int)len, p, known);
        if (id > 0) add_id(out, id), out->named_land |= REGIONS[id].land;
        p += len;
    } while (*p++ == ',');
    return WX_OK;
}

wx_status wx_eval_regions_read_lsm(wx_archive *ar, float **lsm) {
    *lsm = NULL;
    const wx_archive_meta *m = wx_archive_meta_of(ar);
    const wx_catalogue_entry *e = wx_catalogue_find_kind("lsm", WX_LEVEL_STATIC);
    int c = -1;
    for (int k = 0; k < m->nchan && c < 0; k++)
        if (m->chan[k].kind != WX_LEVEL_PRESSURE &&
            (!strcasecmp(m->chan[k].name, "lsm") || (e && wx_catalogue_matches(e, m->chan[k].param))))
            c = k;
    if (c < 0 || m->count < 1) return WX_OK;
    int64_t P = wx_archive_points(m), t0 = 0;
    float *rec = wx_malloc(sizeof(float) * (size_t)(P * m->nchan));
    wx_status st = wx_archive_read(ar, &t0, 1, rec);
    if (st == WX_OK) {
        *lsm = wx_malloc(sizeof(float) * (size_t)P);
        memcpy(*lsm, rec + c * P, sizeof(float) * (size_t)P);
    }
    free(rec);
    return st;
}

static int in_slices(double x, int n, const double (*s)[2]) {
    for (int k = 0; k < n; k++)
        if (x >= s[k][0] - EPS && x <= s[k][1] + EPS) return 1;
    return 0;
}

wx_status wx_eval_regions_masks(wx_eval_regions *rg, const wx_grid *g, const float *lsm,
                                const char *truth, float **masks) {
    *masks = NULL;
    if (!lsm) {
        int kept = 0;
        for (int k = 0; k < rg->n; k++) {
            if (!REGIONS[rg->id[k]].land) rg->id[kept++] = rg->id[k];
            else if (rg->named_land)
                return wx_error_set(WX_ERR_USAGE, "--regions %s: the truth archive %s has no "
                                    "land-sea mask (a static channel lsm); land regions need one",
                                    REGIONS[rg->id[k]].name, truth);
        }
        if (kept < rg->n)
            wx_log_warn("eval: --regions all: %s has no land-sea mask (lsm); the land regions "
                        "are skipped, as WeatherBench2 does", truth);
        rg->n = kept;
    }
    if (rg->n == 0) return WX_OK;
    size_t P = (size_t)g->nlat * g->nlon;
    float *m = wx_malloc(sizeof(float) * P * (size_t)rg->n);
    for (int k = 0; k < rg->n; k++) {
        const region_def *d = &REGIONS[rg->id[k]];
        float *mk = m + (size_t)k * P;
        rg->rows[k][0] = 0, rg->rows[k][1] = -1;
        for (int j = 0; j < g->nlat; j++) {
            int lat_in = in_slices(wx_grid_lat(g, j), d->nlat, d->lat), any = 0;
            for (int i = 0; i < g->nlon; i++) {
                double lon = fmod(wx_grid_lon(g, i), 360.0);
                if (lon < 0) lon += 360.0;
                if (lon > 360.0 - EPS) lon = 0; /* 359.9999999 from lon0 + i·dlon is 0° */
                float v = lat_in && (d->nlon == 0 || in_slices(lon, d->nlon, d->lon)) ? 1.0f : 0.0f;
                /* WB2 multiplies the weights by the mask as stored; a missing value weighs 0 */
                if (v > 0 && d->land) v = isfinite(lsm[(size_t)j * g->nlon + i]) ? lsm[(size_t)j * g->nlon + i] : 0;
                mk[(size_t)j * g->nlon + i] = v;
                any |= v > 0;
            }
            if (any && rg->rows[k][1] < 0) rg->rows[k][0] = j;
            if (any) rg->rows[k][1] = j;
        }
        if (rg->rows[k][1] < 0)
            wx_log_warn("eval: region %s has no %s on the grid of %s: its scores are NaN (empty "
                        "in scores.csv, null in scores.json)", d->name,
                        d->land ? "land point" : "grid point", truth);
    }
    *masks = m;
    return WX_OK;
}

/* Rows j0..j0+nr-1 of region k (-1: global, every row); returns the offset of row j0. Rows
 * outside the region add exactly 0 to every sum, so they are skipped. */
static size_t region_rows(const wx_eval_regions *rg, int k, int nlat, int nlon, int *j0, int *nr) {
    *j0 = k < 0 ? 0 : rg->rows[k][0], *nr = k < 0 ? nlat : rg->rows[k][1] - *j0 + 1;
    if (*nr <= 0) *j0 = 0, *nr = 0; /* no point: NaN scores, counted as an initial time */
    return (size_t)*j0 * nlon;
}

void wx_eval_regions_add_seeps(const wx_eval_regions *rg, const float *masks,
                               wx_score_sums *const *sums, const double *w, int nlat, int nlon,
                               const float *f, const float *o, const wx_seeps_clim *sc) {
    int n = rg ? rg->n : 0;
    for (int k = -1; k < n; k++) {
        int j0, nr;
        size_t off = region_rows(rg, k, nlat, nlon, &j0, &nr);
        const float *mk = k < 0 ? NULL : masks + (size_t)k * nlat * nlon + off;
        wx_seeps_clim c = {sc->wet + off, sc->p1 + off, sc->dry};
        wx_score_add_seeps_masked(sums[k + 1], w + j0, mk, nr, nlon, f + off, o + off, &c);
    }
}

void wx_eval_regions_add(const wx_eval_regions *rg, const float *masks, wx_score_sums *const *sums,
                         const double *w, int nlat, int nlon, wx_eval_add_kind kind, int M,
                         const float *a, const float *b, const float *c, const float *d) {
    int n = rg ? rg->n : 0;
    size_t P = (size_t)nlat * nlon;
    for (int k = -1; k < n; k++) {
        wx_score_sums *s = sums[k + 1];
        const float *mk = k < 0 ? NULL : masks + (size_t)k * P;
        if (kind == WX_EVAL_ADD_ENSEMBLE) { /* members are nlat·nlon apart: the whole grid */
            wx_score_add_ensemble_masked(s, w, mk, nlat, nlon, M, a, b);
            continue;
        }
        int j0, nr;
        size_t o = region_rows(rg, k, nlat, nlon, &j0, &nr);
        if (kind == WX_EVAL_ADD_FIELD)
            wx_score_add_masked(s, w + j0, mk ? mk + o : NULL, nr, nlon, a + o, b + o, c ? c + o : NULL);
        else
            wx_score_add_vector_masked(s, w + j0, mk ? mk + o : NULL, nr, nlon, a + o, b + o, c + o,
                                       d + o);
    }
}
