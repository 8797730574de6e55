/* Conservative regridding (meteo/wx_regrid.h) against WeatherBench2's own ConservativeRegridder
 * (tests/ref/ref_regrid.py, fixture regrid.wxfx): 2.5° → 7.5° (WB2's 0.25° → 1.5° shape), a
 * non-integer ratio (2.5° → 4°), FourCastNet's grid without the south pole → 7.5°, and 7.5° →
 * 2.5°, with NaNs at 3 % of the points (skipped) and a target cell whose sources are all NaN (NaN).
 * Then properties WB2 has by construction: a NaN-free field keeps its area-weighted global mean,
 * a constant stays constant, and the ingest recipe's coarse grid (wx_grid_coarse_shape) with a
 * regional source; a target outside the source is a usage error. */
#include <math.h>
#include <string.h>

#include "meteo/wx_grid.h"
#include "meteo/wx_regrid.h"
#include "wx_fixture.h"
#include "wx_test.h"

static void against_wb2(const wx_fixture *fx, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "%s_grids", name);
    const double *g = wx_fixture_get(fx, key)->data;
    wx_grid src, dst;
    WX_CHECK(wx_grid_make((int)g[0], (int)g[1], g[2], g[3], 0, 360.0 / g[1], &src) == WX_OK &&
                 wx_grid_make((int)g[4], (int)g[5], g[6], g[7], 0, 360.0 / g[5], &dst) == WX_OK,
             "%s: grids", name);
    snprintf(key, sizeof key, "%s_in", name);
    float *in = wx_fixture_f32(fx, key);
    snprintf(key, sizeof key, "%s_out", name);
    const wx_fixture_tensor *ref = wx_fixture_get(fx, key);
    snprintf(key, sizeof key, "%s_count", name);
    const double *count = wx_fixture_get(fx, key)->data;
    WX_CHECK(ref->size == (int64_t)dst.nlat * dst.nlon, "%s: output size", name);
    wx_regrid *r;
    if (!WX_CHECK(wx_regrid_create(&src, &dst, &r) == WX_OK, "%s: create: %s", name,
                  wx_error_message())) {
        free(in);
        return;
    }
    float *out = wx_malloc(sizeof(float) * (size_t)ref->size);
    wx_regrid_apply(r, in, out);
    double err = 0, scale = 0;
    long nan_mismatch = 0, nans = 0, touch = 0;
    for (int64_t p = 0; p < ref->size; p++) {
        double y = ref->data[p];
        /* WB2's only finite source touches the cell (a ~1e-17 overlap of its radian bounds):
         * no finite value under it, NaN */
        if (!isnan(y) && count[p] < 1e-9) y = NAN, touch++;
        nans += isnan(y);
        if (isnan(y) != isnan(out[p])) {
            nan_mismatch++;
            continue;
        }
        if (isnan(y)) continue;
        err = fmax(err, fabs(out[p] - y));
        scale = fmax(scale, fabs(y));
    }
    WX_CHECK(nan_mismatch == 0, "%s: %ld points NaN in one and not the other (%ld NaN in WB2's)",
             name, nan_mismatch, nans);
    /* float32 output of float64 sums: a few ulps of the field's scale */
    WX_CHECK(err <= 2e-7 * scale, "%s: max |wxcast - WB2| = %.3g (scale %.3g)", name, err, scale);
    printf("%s: %dx%d -> %dx%d, max |diff| %.3g of scale %.3g, %ld NaN targets (%ld by a touching "
           "cell in WB2)\n", name, src.nlat, src.nlon, dst.nlat, dst.nlon, err, scale, nans, touch);
    wx_regrid_free(r);
    free(in);
    free(out);
}

/* Area-weighted global mean of a field on a grid (WB2 cell-area weights). */
static double area_mean(const wx_grid *g, const float *f) {
    double *w = wx_malloc(sizeof(double) * (size_t)g->nlat), s = 0, n = 0;
    wx_grid_area_weights(g, w);
    for (int j = 0; j < g->nlat; j++)
        for (int i = 0; i < g->nlon; i++) s += w[j] * f[j * g->nlon + i], n += w[j];
    free(w);
    return s / n;
}

static void properties(void) {
    wx_grid f, c;
    wx_grid_global(0.5, &f);
    wx_grid_global(1.5, &c); /* 361x720 -> 121x240: cell edges cut fine cells in half */
    float *in = wx_malloc(sizeof(float) * 361 * 720), *out = wx_malloc(sizeof(float) * 121 * 240);
    for (int j = 0; j < 361; j++)
        for (int i = 0; i < 720; i++)
            in[j * 720 + i] = (float)(280 + 30 * cos(j * 0.0174) + 5 * sin(i * 0.05 + j * 0.2));
    wx_regrid *r;
    WX_CHECK(wx_regrid_create(&f, &c, &r) == WX_OK, "0.5 -> 1.5 degrees");
    wx_regrid_apply(r, in, out);
    double mf = area_mean(&f, in), mc = area_mean(&c, out);
    WX_CHECK(fabs(mf - mc) < 1e-4, "area mean conserved: %.8f vs %.8f", mf, mc);
    for (int p = 0; p < 361 * 720; p++) in[p] = 7.25f;
    wx_regrid_apply(r, in, out);
    int off = 0;
    for (int p = 0; p < 121 * 240; p++) off += fabsf(out[p] - 7.25f) > 1e-6f;
    WX_CHECK(off == 0, "a constant stays constant (%d points off)", off);
    wx_regrid_free(r);

    /* An ingest recipe's coarse grid of a regional source (not periodic): 1° over 30..60N,
     * 10..40E to 3°; each coarse cell averages the fine cells under it. */
    wx_grid reg, rc;
    WX_CHECK(wx_grid_make(31, 31, 60, 1, 10, 1, &reg) == WX_OK &&
                 wx_grid_coarse_shape(&reg, 3, &rc) == WX_OK && rc.nlat == 11 && rc.nlon == 11,
             "regional coarse shape %dx%d", rc.nlat, rc.nlon);
    for (int j = 0; j < 31; j++)
        for (int i = 0; i < 31; i++) in[j * 31 + i] = (float)(10 * i);
    WX_CHECK(wx_regrid_create(&reg, &rc, &r) == WX_OK, "regional regridder");
    wx_regrid_apply(r, in, out);
    /* coarse column 3 (19E, cell 17.5..20.5E): fine columns 8..10 (18..20E): mean 90; column 0
     * (10E, cell 8.5..11.5E): the source begins at 9.5E, so fine columns 0 and 1 only: 5 */
    WX_CHECK(fabsf(out[5 * 11 + 3] - 90) < 1e-4f && fabsf(out[5 * 11] - 5) < 1e-4f,
             "regional cells: %.5f %.5f", out[5 * 11 + 3], out[5 * 11]);
    wx_regrid_free(r);
    wx_grid far;
    wx_grid_make(5, 5, -40, 1, 200, 1, &far);
    WX_CHECK(wx_regrid_create(&reg, &far, &r) == WX_ERR_USAGE && r == NULL &&
                 strstr(wx_error_message(), "outside the source grid"),
             "a target outside the source: usage error (%s)", wx_error_message());
    free(in);
    free(out);
}

int main(void) {
    wx_fixture *fx = wx_fixture_load("regrid");
    if (WX_CHECK(fx != NULL, "fixture regrid.wxfx")) {
        const char *cases[] = {"coarse", "ratio", "fcn", "finer"};
        for (int k = 0; k < 4; k++) against_wb2(fx, cases[k]);
        wx_fixture_free(fx);
    }
    properties();
    return wx_test_summary();
}
