/* wxcast export (src/infer/export.c, src/io/viewer.c) on forecast files made with the NetCDF
 * writer: map colours against hand-computed values of the documented scales (wind speed from a
 * u/v pair, temperature in °C), one colour range per variable across leads, wind layers in
 * grib2json layout with thinning, lead selection, lead tags, the assets, usage errors. The
 * browser side is tests/cli/export_viewer.sh. */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/wx_fs.h"
#include "infer/export.h"
#include "io/netcdf_write.h"
#include "io/png_map.h"
#include "io/viewer.h"
#include "wx_test.h"

#define OUTDIR "export_test"

typedef struct {
    int w, h;
    unsigned char *rgb;
} image;

static int read_png(const char *path, image *im) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&pi, path)) return 0;
    pi.format = PNG_FORMAT_RGB;
    im->w = (int)pi.width, im->h = (int)pi.height;
    im->rgb = malloc(PNG_IMAGE_SIZE(pi));
    if (!png_image_finish_read(&pi, NULL, im->rgb, 0, NULL)) return 0;
    return 1;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static char *slurp(const char *path) {
    char *b = NULL;
    size_t n;
    if (wx_read_file(path, &b, &n) != WX_OK) return wx_strdup("");
    return b;
}

/* 61×120 (3°) grid, leads 0, 6, 12 h from 2024-03-01T00; 2t = 273.15 + 10 + 5k K, u10 = 3,
 * v10 = 4, tcwv a west-east ramp whose range changes with the lead (12..88, 20..60, 5..30). */
static void make_forecast(const char *path) {
    wx_grid g;
    WX_CHECK(wx_grid_make(61, 120, 90, 3, 0, 3, &g) == WX_OK, "grid");
    wx_nc_var vars[] = {{"t2m", "K", "air_temperature", "2 metre temperature", 0},
                        {"u10", "m s-1", "eastward_wind", "10 metre U wind component", 0},
                        {"v10", "m s-1", "northward_wind", "10 metre V wind component", 0},
                        {"tcwv", "kg m-2", "", "Total column vertically-integrated water vapour", 0}};
    wx_nc_layout L = {g, 0, NULL, 4, vars, 1, wx_time_make(2024, 3, 1, 0, 0, 0), "test", NULL, 0};
    wx_nc_writer w;
    WX_CHECK(wx_nc_writer_open(&w, path, &L) == WX_OK, "open writer: %s", wx_error_message());
    size_t n = (size_t)g.nlat * g.nlon;
    float *f = malloc(sizeof(float) * n);
    static const double lo[3] = {12, 20, 5}, hi[3] = {88, 60, 30};
    for (int k = 0; k < 3; k++) {
        wx_time valid = L.ref_time + k * 6 * 3600;
        for (size_t p = 0; p < n; p++) f[p] = (float)(273.15 + 10 + 5 * k);
        WX_CHECK(wx_nc_writer_put(&w, k, valid, 0, 0, f) == WX_OK, "put 2t");
        for (size_t p = 0; p < n; p++) f[p] = 3;
        WX_CHECK(wx_nc_writer_put(&w, k, valid, 1, 0, f) == WX_OK, "put u10");
        for (size_t p = 0; p < n; p++) f[p] = 4;
        WX_CHECK(wx_nc_writer_put(&w, k, valid, 2, 0, f) == WX_OK, "put v10");
        for (size_t p = 0; p < n; p++)
            f[p] = (float)(lo[k] + (hi[k] - lo[k]) * (double)(p % g.nlon) / (g.nlon - 1));
        WX_CHECK(wx_nc_writer_put(&w, k, valid, 3, 0, f) == WX_OK, "put tcwv");
    }
    WX_CHECK(wx_nc_writer_close(&w) == WX_OK, "close: %s", wx_error_message());
    free(f);
}

/* Fraction of map-area pixels (the manifest's layout: 32, 44, w, w/2) equal to rgb within tol. */
static double map_fraction(const image *im, int mw, unsigned char r, unsigned char g,
                           unsigned char b, int tol) {
    int hit = 0, tot = 0;
    for (int y = 44; y < 44 + mw / 2; y++)
        for (int x = 32; x < 32 + mw; x++) {
            const unsigned char *p = im->rgb + ((size_t)y * im->w + x) * 3;
            tot++;
            hit += abs(p[0] - r) <= tol && abs(p[1] - g) <= tol && abs(p[2] - b) <= tol;
        }
    return (double)hit / tot;
}

static void test_lead_tags(void) {
    char b[32];
    wx_viewer_lead_tag(0, b, sizeof b);
    WX_CHECK(!strcmp(b, "f000"), "lead 0 -> %s", b);
    wx_viewer_lead_tag(240 * 3600, b, sizeof b);
    WX_CHECK(!strcmp(b, "f240"), "lead 240h -> %s", b);
    wx_viewer_lead_tag(90 * 60, b, sizeof b);
    WX_CHECK(!strcmp(b, "f001h30m"), "lead 90 min -> %s", b);
    wx_viewer_lead_tag(-6 * 3600, b, sizeof b);
    WX_CHECK(!strcmp(b, "fm006"), "lead -6h -> %s", b);
}

static void test_export_all(const char *nc) {
    wx_export_opts o;
    wx_export_opts_default(&o);
    o.forecast = nc, o.output = OUTDIR "/all", o.coast = 0, o.width = 240, o.wind_max_nlon = 60;
    wx_export_result r;
    wx_status st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_OK, "export: %s", st ? wx_error_message() : "");
    /* 2t, 10ws, tcwv (u10/v10 only as the pair); 3 leads; 10 m wind .json + .js per lead. */
    WX_CHECK(r.nvars == 3 && r.nleads == 3 && r.npng == 9 && r.nwind_files == 3,
             "vars %d leads %d png %d wind %d (want 3 3 9 3)", r.nvars, r.nleads, r.npng,
             r.nwind_files);

    /* Wind speed from u = 3, v = 4: 5 m/s, a stop of the wind scale (#c8ebff). */
    image im = {0};
    WX_CHECK(read_png(OUTDIR "/all/maps/10ws_f006.png", &im), "read 10ws map");
    if (im.rgb) {
        double fr = map_fraction(&im, 240, 0xc8, 0xeb, 0xff, 0);
        WX_CHECK(fr == 1.0, "10ws map: %.4f of map pixels are #c8ebff (5 m/s), want all", fr);
        free(im.rgb);
    }
    /* 2t at lead 0: 10 °C, between the stops 5.714 (#ffff00) and 17.143 (#ff8000) of the
     * documented −40..40 °C scale: (255, 255 − 0.375·127, 0) = (255, 207.4, 0). At lead 12
     * (20 °C): between 17.143 (#ff8000) and 28.571 (#ff0000): g = 128·(1 − 0.25) = 96. */
    im.rgb = NULL;
    WX_CHECK(read_png(OUTDIR "/all/maps/2t_f000.png", &im), "read 2t map");
    if (im.rgb) {
        double fr = map_fraction(&im, 240, 255, 207, 0, 1);
        WX_CHECK(fr == 1.0, "2t lead 0: %.4f of map pixels are (255,207,0) = 10 °C", fr);
        free(im.rgb);
    }
    im.rgb = NULL;
    WX_CHECK(read_png(OUTDIR "/all/maps/2t_f012.png", &im), "read 2t map +12h");
    if (im.rgb) {
        double fr = map_fraction(&im, 240, 255, 96, 0, 1);
        WX_CHECK(fr == 1.0, "2t lead 12: %.4f of map pixels are (255,96,0) = 20 °C", fr);
        free(im.rgb);
    }

    char *m = slurp(OUTDIR "/all/manifest.json");
    /* tcwv has no documented range: min..max over all leads (5..88) widened to the nice step
     * 10 → 0..90 (lead 0 alone would give 10..90). */
    char *tc = strstr(m, "\"id\":\"tcwv\"");
    WX_CHECK(tc && strstr(tc, "\"vmin\":0,\"vmax\":90,"), "tcwv range 0..90 over all leads");
    WX_CHECK(strstr(m, "\"id\":\"2t\"") && strstr(m, "\"vmin\":-40,\"vmax\":40,"), "2t range");
    WX_CHECK(strstr(m, "\"init\":\"2024-03-01T00:00Z\""), "manifest init time");
    WX_CHECK(strstr(m, "{\"lead_s\":43200,\"lead_h\":12,\"tag\":\"f012\",\"valid\":\"2024-03-01T12:00Z\""),
             "manifest lead +12h with its valid time");
    WX_CHECK(strstr(m, "\"files\":[\"maps/10ws_f000.png\",\"maps/10ws_f006.png\",\"maps/10ws_f012.png\"]"),
             "manifest file list of 10ws");
    WX_CHECK(strstr(m, "\"wind\":[{\"id\":\"10m\",\"label\":\"10 m\""), "manifest wind layer 10m");
    WX_CHECK(strstr(m, "\"image\":{\"width\":288,\"height\":"), "manifest image width 32+240+16");
    free(m);

    /* Wind layer thinned to <= 60 columns: stride 2 → nx 60, ny 31, 6° spacing; all values 3/4. */
    char *w = slurp(OUTDIR "/all/wind/10m_f006.json");
    WX_CHECK(strstr(w, "\"forecastTime\":6,\"parameterCategory\":2") &&
             strstr(w, "\"parameterNumber\":2,") && strstr(w, "\"parameterNumber\":3,"),
             "grib2json U and V records at forecastTime 6");
    WX_CHECK(strstr(w, "\"nx\":60,\"ny\":31,\"lo1\":0,\"la1\":90,\"lo2\":354,\"la2\":-90,\"dx\":6,\"dy\":6"),
             "grib2json grid: nx 60 ny 31 lo 0..354 la 90..-90 d 6");
    int n3 = 0, n4 = 0;
    char *d = strstr(w, "\"data\":[");
    for (char *p = d ? d + 8 : NULL; p && *p && *p != ']'; p++) {
        n3 += *p == '3';
        if (*p != '3' && *p != ',') break;
    }
    d = d ? strstr(d + 1, "\"data\":[") : NULL;
    for (char *p = d ? d + 8 : NULL; p && *p && *p != ']'; p++) {
        n4 += *p == '4';
        if (*p != '4' && *p != ',') break;
    }
    WX_CHECK(n3 == 60 * 31 && n4 == 60 * 31, "U data 1860 threes (%d), V data 1860 fours (%d)", n3, n4);
    free(w);
    char *js = slurp(OUTDIR "/all/wind/10m_f006.js");
    WX_CHECK(!strncmp(js, "(window.WXCAST_WIND = window.WXCAST_WIND || {})[\"10m_f006\"] = [{\"header\"", 70),
             "wind .js assigns the records under its key");
    free(js);

    /* Assets: the embedded files, with the pieces the page needs. */
    char *html = slurp(OUTDIR "/all/index.html");
    WX_CHECK(strstr(html, "<script src=\"manifest.js\"></script>") &&
             strstr(html, "<script src=\"viewer.js\"></script>") && strstr(html, "id=\"slider\""),
             "index.html loads manifest.js and viewer.js and has the slider");
    WX_CHECK(!strstr(html, "http://") && !strstr(html, "https://"), "index.html loads nothing remote");
    free(html);
    int nassets = 0;
    for (const wx_viewer_asset *a = wx_viewer_assets; a->name; a++) nassets++;
    WX_CHECK(nassets == 3, "3 embedded assets (got %d)", nassets);
}

static void test_selection(const char *nc) {
    wx_export_opts o;
    wx_export_opts_default(&o);
    o.forecast = nc, o.output = OUTDIR "/sel", o.coast = 0, o.width = 240;
    o.vars = "t2m", o.leads = "6";
    wx_export_result r;
    wx_status st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_OK && r.nvars == 1 && r.nleads == 1 && r.npng == 1,
             "--vars t2m --leads 6: %d vars, %d leads, %d maps", r.nvars, r.nleads, r.npng);
    WX_CHECK(exists(OUTDIR "/sel/maps/2t_f006.png") && !exists(OUTDIR "/sel/maps/2t_f000.png"),
             "only the +6h map of 2t");
    /* The components are exported when named. */
    o.output = OUTDIR "/uv", o.vars = "10u,10ws", o.leads = "0-6";
    st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_OK && r.nvars == 2 && r.nleads == 2, "--vars 10u,10ws --leads 0-6: %d vars %d leads",
             r.nvars, r.nleads);
    WX_CHECK(exists(OUTDIR "/uv/maps/10u_f006.png"), "the u component map when named");

    o.output = OUTDIR "/bad", o.leads = NULL;
    o.vars = "2t,nosuch";
    st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), "'nosuch'") &&
             strstr(wx_error_message(), "2t, 10u, 10ws, 10v, tcwv"),
             "unknown variable: usage error listing the variables: %s", wx_error_message());
    o.vars = NULL, o.leads = "24";
    st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), "0, 6, 12"),
             "missing lead: usage error listing the leads: %s", wx_error_message());
    o.leads = "six";
    st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_ERR_USAGE, "malformed --leads is a usage error: %s", wx_error_message());
    WX_CHECK(!exists(OUTDIR "/bad/manifest.json"), "failed exports write no manifest");
    /* Options wrong on their own are refused before anything is written (a width outside the
     * map renderer's range used to fail after the wind layers were in place). */
    o.leads = NULL, o.output = OUTDIR "/narrow";
    static const int widths[3] = {10, 119, 16386};
    for (int k = 0; k < 3; k++) {
        o.width = widths[k];
        st = wx_export_run(&o, &r);
        WX_CHECK(st == WX_ERR_USAGE && strstr(wx_error_message(), "--width") && !exists(OUTDIR "/narrow"),
                 "--width %d: usage error, no output folder: %s", widths[k], wx_error_message());
    }
    o.width = 121; /* rounded down to 120, the smallest map */
    st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_OK && r.npng > 0, "--width 121 accepted: %s", st ? wx_error_message() : "ok");
}

/* An ensemble file as `wxcast forecast --members` writes it (one variable per pressure channel
 * beside the realization axis): member 0 u500 = 3, v500 = 4 (5 m/s), member 1 u500 = 30,
 * v500 = 40; z500 = 5500·g. The pair becomes ws500 and a 500 hPa wind layer, from member 0 (the
 * control, the member whose maps are exported), like a deterministic file's. */
static void test_ensemble(void) {
    const char *path = OUTDIR "/ens.nc";
    wx_grid g;
    WX_CHECK(wx_grid_make(61, 120, 90, 3, 0, 3, &g) == WX_OK, "grid");
    wx_nc_var vars[] = {{"u500", "m s-1", "eastward_wind", "U component of wind at 500 hPa", 0},
                        {"v500", "m s-1", "northward_wind", "V component of wind at 500 hPa", 0},
                        {"z500", "m2 s-2", "geopotential", "Geopotential at 500 hPa", 0}};
    wx_nc_layout L = {g, 0, NULL, 3, vars, 1, wx_time_make(2024, 3, 1, 0, 0, 0), "test", NULL, 0};
    wx_nc_layout_ext ext = {.members = 2};
    wx_nc_writer w;
    int ok = wx_nc_writer_open_ext(&w, path, &L, "valid_time", &ext) == WX_OK;
    size_t n = (size_t)g.nlat * g.nlon;
    float *f = malloc(sizeof(float) * n);
    for (int k = 0; ok && k < 2; k++)
        for (int v = 0; ok && v < 3; v++)
            for (int e = 0; ok && e < 2; e++) {
                double val = v == 2 ? 5500 * 9.80665 : (v == 0 ? 3 : 4) * (e ? 10 : 1);
                for (size_t p = 0; p < n; p++) f[p] = (float)val;
                ok = wx_nc_writer_put_member(&w, k, L.ref_time + k * 6 * 3600, v, 0, e, f) == WX_OK;
            }
    free(f);
    ok = ok && wx_nc_writer_close(&w) == WX_OK;
    if (!WX_CHECK(ok, "ensemble file written: %s", ok ? "" : wx_error_message())) return;
    wx_export_opts o;
    wx_export_opts_default(&o);
    o.forecast = path, o.output = OUTDIR "/ens", o.coast = 0, o.width = 240, o.wind_max_nlon = 60;
    wx_export_result r;
    wx_status st = wx_export_run(&o, &r);
    WX_CHECK(st == WX_OK && r.nvars == 2 && r.nleads == 2 && r.npng == 4 && r.nwind_files == 2,
             "ensemble: vars %d leads %d png %d wind %d (want 2 2 4 2: z500, ws500; 500 hPa layer): %s",
             r.nvars, r.nleads, r.npng, r.nwind_files, st ? wx_error_message() : "ok");
    WX_CHECK(exists(OUTDIR "/ens/maps/ws500_f006.png") && !exists(OUTDIR "/ens/maps/u500_f006.png") &&
                 exists(OUTDIR "/ens/wind/500hPa_f006.json"),
             "ensemble: ws500 maps and 500hPa wind layers, no u500/v500 maps");
    char *m = slurp(OUTDIR "/ens/manifest.json");
    WX_CHECK(strstr(m, "\"wind\":[{\"id\":\"500hPa\"") != NULL, "manifest wind layer 500hPa");
    free(m);
    image im = {0};
    if (WX_CHECK(read_png(OUTDIR "/ens/maps/ws500_f006.png", &im), "read ws500 map")) {
        /* the 500 hPa wind scale's colour of 5 m/s (member 0), not of 50 m/s (member 1) */
        wx_map_style ws;
        wx_map_style_for("ws", 500, NULL, 1, &ws);
        wx_rgb c5 = wx_map_colour(&ws, 5), c50 = wx_map_colour(&ws, 50);
        double fr = map_fraction(&im, 240, c5.r, c5.g, c5.b, 1);
        WX_CHECK(fr == 1.0 && (c5.r != c50.r || c5.g != c50.g || c5.b != c50.b),
                 "ws500 map: %.4f of map pixels have the colour of 5 m/s (member 0), want all", fr);
        free(im.rgb);
    }
    char *wj = slurp(OUTDIR "/ens/wind/500hPa_f006.json");
    char *d = strstr(wj, "\"data\":[");
    int n3 = 0, other = 0;
    for (char *p = d ? d + 8 : NULL; p && *p && *p != ']'; p++) {
        if (*p == '3' && (p[1] == ',' || p[1] == ']')) n3++;
        else if (*p != ',') other++;
    }
    WX_CHECK(strstr(wj, "\"parameterNumber\":2,") && n3 == 60 * 31 && other == 0,
             "500 hPa layer: U data all 3 (member 0; member 1 has 30): %d threes, %d other chars", n3, other);
    free(wj);
}

int main(void) {
    (void)system("rm -rf " OUTDIR);
    WX_CHECK(wx_mkdir_p(OUTDIR) == WX_OK, "mkdir");
    const char *nc = OUTDIR "/fc.nc";
    make_forecast(nc);
    test_lead_tags();
    test_export_all(nc);
    test_selection(nc);
    test_ensemble();
    return wx_test_summary();
}
