/* The scoring grid of `wxcast eval` (eval_grid.h). */
#include "infer/eval_grid.h"

#include <stdlib.h>
#include <string.h>

wx_status wx_eval_grid_open(const wx_archive_meta *m, double res, wx_eval_grid *g) {
    memset(g, 0, sizeof *g);
    g->grid = m->grid;
    g->nchan = m->nchan;
    g->Pa = g->P = (int64_t)m->grid.nlat * m->grid.nlon;
    if (res <= 0) return WX_OK;
    char desc[160];
    wx_grid_describe(&m->grid, desc, sizeof desc);
    if (!wx_grid_is_global(&m->grid))
        return wx_error_set(WX_ERR_USAGE, "--resolution %g: the truth archive's grid (%s) is not "
                            "global; regridding to a global grid needs one", res, desc);
    wx_grid to;
    if (wx_grid_global(res, &to) != WX_OK)
        return wx_error_set(WX_ERR_USAGE, "--resolution %g: expected a spacing in degrees that "
                            "divides 180 and 360 (1.5 for WeatherBench2's 240x121)", res);
    if (wx_grid_same(&to, &m->grid, 1e-9)) return WX_OK;
    if (to.dlat < m->grid.dlat - 1e-9 || to.dlon < m->grid.dlon - 1e-9)
        return wx_error_set(WX_ERR_USAGE, "--resolution %g: finer than the truth archive's grid "
                            "(%s); scores are computed at that grid or a coarser one", res, desc);
    WX_TRY(wx_regrid_create(&m->grid, &to, &g->rg));
    g->grid = to;
    g->P = (int64_t)to.nlat * to.nlon;
    g->scratch = wx_malloc(sizeof(float) * (size_t)(g->Pa * (m->nchan ? m->nchan : 1)));
    return WX_OK;
}

wx_status wx_eval_grid_crop(const wx_archive_meta *m, int rows, wx_eval_grid *g) {
    if (g->rg)
        return wx_error_set(WX_ERR_USAGE, "--resolution with forecasts on %d of the truth's %d "
                            "rows (FourCastNet's grid without the south pole): score them at the "
                            "truth's resolution, or ingest the truth with drop_south_pole: true",
                            rows, m->grid.nlat);
    g->crop = 1;
    g->grid.nlat = rows;
    g->P = (int64_t)rows * m->grid.nlon;
    g->scratch = wx_malloc(sizeof(float) * (size_t)(g->Pa * (m->nchan ? m->nchan : 1)));
    return WX_OK;
}

void wx_eval_grid_map(const wx_eval_grid *g, const float *in, int n, float *out) {
    if (g->crop) { /* each field's first P points: its first rows (in place: forward moves) */
        for (int k = 0; k < n; k++) memmove(out + k * g->P, in + k * g->Pa, sizeof(float) * (size_t)g->P);
        return;
    }
    if (!g->rg) {
        if (out != in) memcpy(out, in, sizeof(float) * (size_t)(g->P * n));
        return;
    }
    for (int k = 0; k < n; k++) wx_regrid_apply(g->rg, in + k * g->Pa, out + k * g->P);
}

wx_status wx_eval_grid_truth(wx_eval_grid *g, wx_archive *ar, int64_t t, float *out) {
    float *full = g->rg || g->crop ? g->scratch : out;
    WX_TRY(wx_archive_read(ar, &t, 1, full));
    wx_eval_grid_map(g, full, g->nchan, out);
    return WX_OK;
}

wx_status wx_eval_grid_field(wx_eval_grid *g, wx_source *src, int i, float *out) {
    if (g->crop && wx_source_info(src, i)->grid.nlat == g->grid.nlat) /* already the scoring rows */
        return wx_source_read(src, i, WX_MISSING_NAN, out);
    float *full = g->rg || g->crop ? g->scratch : out;
    WX_TRY(wx_source_read(src, i, WX_MISSING_NAN, full));
    wx_eval_grid_map(g, full, 1, out);
    return WX_OK;
}

wx_status wx_eval_grid_clim(wx_eval_grid *g, wx_climatology *c, wx_time v, float *out) {
    float *full = g->rg || g->crop ? g->scratch : out;
    WX_TRY(wx_climatology_get_time(c, v, full));
    wx_eval_grid_map(g, full, g->nchan, out);
    return WX_OK;
}

void wx_eval_grid_close(wx_eval_grid *g) {
    wx_regrid_free(g->rg);
    free(g->scratch);
    memset(g, 0, sizeof *g);
}
