/* PNG maps: written files read back with libpng (size, colour bar against the documented colour
 * stops, contours where the field crosses a level, coastlines over known coasts and not over open
 * ocean or desert), atomic writing. Also writes example maps of real ERA5/ERA-Interim fields to
 * png_map_examples/ in the build folder for a human look. */
#include <dirent.h>
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/coastline.h"
#include "io/png_map.h"
#include "io/wx_source.h"
#include "wx_test.h"

#define OUTDIR "png_map_test"

typedef struct {
    int w, h;
    uint8_t *rgb;
} image;

static int read_png(const char *path, image *im) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&pi, path)) return 0;
    int truecolour8 = (pi.format & PNG_FORMAT_FLAG_COLOR) && !(pi.format & PNG_FORMAT_FLAG_ALPHA);
    pi.format = PNG_FORMAT_RGB;
    im->w = (int)pi.width, im->h = (int)pi.height;
    im->rgb = malloc(PNG_IMAGE_SIZE(pi));
    if (!png_image_finish_read(&pi, NULL, im->rgb, 0, NULL)) return 0;
    return truecolour8 ? 1 : 0;
}

static wx_rgb px(const image *im, int x, int y) {
    const uint8_t *p = im->rgb + 3 * ((size_t)y * im->w + x);
    return (wx_rgb){p[0], p[1], p[2]};
}

static int near_rgb(wx_rgb a, wx_rgb b, int tol) {
    return abs(a.r - b.r) <= tol && abs(a.g - b.g) <= tol && abs(a.b - b.b) <= tol;
}

static wx_rgb hex(unsigned x) { return (wx_rgb){x >> 16, (x >> 8) & 255, x & 255}; }

/* Map pixel of a lon/lat under the documented projection (west = −180). */
static void lonlat_px(const wx_map_layout *l, double lon, double lat, int *x, int *y) {
    double d = fmod(lon + 180 + 720, 360);
    *x = l->map_x + (int)floor(d / 360 * l->map_w);
    *y = l->map_y + (int)floor((90 - lat) / 180 * l->map_h);
}

/* Pixels of colour c within ±r of (x, y). */
static int count_near(const image *im, int x, int y, int r, wx_rgb c) {
    int n = 0;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++)
            if (near_rgb(px(im, x + dx, y + dy), c, 0)) n++;
    return n;
}

static void test_temperature_bar_and_coast(void) {
    wx_grid g;
    wx_grid_global(2.0, &g);
    size_t n = (size_t)g.nlat * g.nlon;
    float *f = malloc(sizeof(float) * n);
    /* Documented: 8 colours evenly over −40..40 °C; stop 2 (#00ffff) at −40 + 2·80/7 °C. */
    static const unsigned cols[8] = {0x000080, 0x0080ff, 0x00ffff, 0x80ff00,
                                     0xffff00, 0xff8000, 0xff0000, 0xff00ff};
    double stop2 = -40 + 2 * 80.0 / 7;
    for (size_t k = 0; k < n; k++) f[k] = (float)(stop2 + 273.15);
    wx_map_style s;
    wx_map_style_for("t2m", 0, "K", 1, &s);
    WX_CHECK(!strcmp(s.units, "°C") && s.vmin == -40 && s.vmax == 40, "2t style °C -40..40");
    wx_coastline coast = {0};
    char cpath[512];
    wx_coastline_path('l', cpath, sizeof cpath);
    int have_coast = access(cpath, R_OK) == 0;
    if (have_coast) {
        WX_CHECK(wx_coastline_load(cpath, 1, &coast) == WX_OK, "load %s: %s", cpath, wx_error_message());
        /* GSHHG low: thousands of segments, all inside the globe. */
        int bad = 0;
        for (int i = 0; i < coast.npts; i++)
            if (coast.lon[i] < 0 || coast.lon[i] > 360 || coast.lat[i] < -90 || coast.lat[i] > 90) bad++;
        WX_CHECK(coast.nseg > 1000 && coast.npts > 50000 && bad == 0, "coast %d segments %d points, %d outside",
                 coast.nseg, coast.npts, bad);
    } else {
        printf("note: %s missing (Debian gmt-gshhg-low); coastline checks skipped\n", cpath);
    }
    wx_map_opts o;
    wx_map_opts_default(&o);
    o.width = 720;
    o.coast = have_coast ? &coast : NULL;
    o.title = "2 metre temperature (2t) [°C]";
    o.subtitle = "valid 2024-01-01T06:00 UTC   lead +6h";
    wx_map_layout l;
    const char *path = OUTDIR "/t2m.png";
    WX_CHECK(wx_map_write_png(path, &g, f, &s, &o, &l) == WX_OK, "write: %s", wx_error_message());
    image im = {0};
    WX_CHECK(read_png(path, &im), "read back %s as 8-bit RGB", path);
    WX_CHECK(im.w == l.width && im.h == l.height && l.map_w == 720 && l.map_h == 360,
             "size %dx%d (layout %dx%d, map %dx%d)", im.w, im.h, l.width, l.height, l.map_w, l.map_h);
    /* Colour bar: at each documented stop the bar shows the stop colour (±3 for half a pixel). */
    int bad = 0;
    for (int k = 0; k < 8; k++) {
        double v = -40 + k * 80.0 / 7;
        int x = l.bar_x + (int)floor((v + 40) / 80 * l.bar_w);
        if (x >= l.bar_x + l.bar_w) x--;
        wx_rgb got = px(&im, x, l.bar_y + l.bar_h / 2);
        if (!near_rgb(got, hex(cols[k]), 3)) {
            bad++;
            printf("bar stop %d (%.2f °C) at x=%d: (%d,%d,%d)\n", k, v, x, got.r, got.g, got.b);
        }
    }
    /* Half-way between stops 3 and 4 (#80ff00, #ffff00) the colour is their mean. */
    double mid = -40 + 3.5 * 80 / 7;
    wx_rgb m = px(&im, l.bar_x + (int)floor((mid + 40) / 80 * l.bar_w), l.bar_y + 2);
    WX_CHECK(bad == 0 && near_rgb(m, (wx_rgb){192, 255, 0}, 3), "colour bar: %d stops off; mid (%d,%d,%d)",
             bad, m.r, m.g, m.b);
    /* The constant field at stop 2 shades open ocean with exactly #00ffff. */
    int x, y;
    lonlat_px(&l, -140, 10, &x, &y);
    WX_CHECK(near_rgb(px(&im, x, y), hex(cols[2]), 0), "field colour at stop 2");
    if (have_coast) {
        /* Known coast points (lon, lat): Recife, Lima, Perth, Cape Guardafui, Lisbon, Cape Horn. */
        double on[6][2] = {{-34.88, -8.05}, {-77.15, -12.05}, {115.74, -31.95},
                           {51.27, 11.83},  {-9.49, 38.78},   {-67.27, -55.98}};
        for (int k = 0; k < 6; k++) {
            lonlat_px(&l, on[k][0], on[k][1], &x, &y);
            WX_CHECK(count_near(&im, x, y, 2, o.coast_colour) > 0, "coast pixel near (%g, %g)",
                     on[k][0], on[k][1]);
        }
        /* Open ocean, the Sahara, inner Antarctica and inner Asia: no coast within 6 pixels. */
        double off[4][2] = {{-140, 10}, {10, 23}, {0, -85}, {90, 45}};
        for (int k = 0; k < 4; k++) {
            lonlat_px(&l, off[k][0], off[k][1], &x, &y);
            WX_CHECK(count_near(&im, x, y, 6, o.coast_colour) == 0, "no coast near (%g, %g)",
                     off[k][0], off[k][1]);
        }
    }
    free(im.rgb);
    wx_coastline_free(&coast);
    free(f);
}

static void test_precip_bar(void) {
    wx_grid g;
    wx_grid_global(5.0, &g);
    float *f = calloc((size_t)g.nlat * g.nlon, sizeof(float));
    wx_map_style s;
    wx_map_style_for("tp", 0, "m", 1, &s);
    wx_map_opts o;
    wx_map_opts_default(&o);
    o.width = 360;
    wx_map_layout l;
    const char *path = OUTDIR "/tp.png";
    WX_CHECK(wx_map_write_png(path, &g, f, &s, &o, &l) == WX_OK, "write tp");
    image im = {0};
    WX_CHECK(read_png(path, &im), "read tp");
    /* Documented white-to-magenta boxes, equal widths. */
    static const unsigned cols[9] = {0xffffff, 0xbee6ff, 0x6eb4ff, 0x286eff, 0x1428dc,
                                     0x8228e6, 0xc800dc, 0xff00ff, 0xff82ff};
    int bad = 0;
    for (int k = 0; k < 9; k++) {
        int x = l.bar_x + (2 * k + 1) * l.bar_w / 18;
        if (!near_rgb(px(&im, x, l.bar_y + 5), hex(cols[k]), 0)) bad++;
    }
    WX_CHECK(bad == 0, "precipitation bar: %d of 9 boxes off", bad);
    /* 3 mm (in metres) lies in the 2..4 mm box. */
    WX_CHECK(near_rgb(wx_map_colour(&s, 0.003 * s.scale), hex(0x286eff), 0), "3 mm colour");
    free(im.rgb);
    free(f);
}

static void test_msl_contours(void) {
    /* msl linear in latitude: 1000 hPa at the equator, +4 hPa per 9°; contours every 4 hPa. */
    wx_grid g;
    wx_grid_global(1.0, &g);
    float *f = malloc(sizeof(float) * (size_t)g.nlat * g.nlon);
    for (int j = 0; j < g.nlat; j++)
        for (int i = 0; i < g.nlon; i++)
            f[(size_t)j * g.nlon + i] = (float)(100000 + 400 * wx_grid_lat(&g, j) / 9.0);
    wx_map_style s;
    wx_map_style_for("msl", 0, NULL, 1, &s);
    wx_map_opts o;
    wx_map_opts_default(&o);
    o.width = 720;
    wx_map_layout l;
    wx_canvas c;
    WX_CHECK(wx_map_render(&g, f, &s, &o, &c, &l) == WX_OK, "render msl");
    wx_rgb black = {0, 0, 0};
    int x, y, hit = 0, miss = 0;
    /* 1004 hPa at 9°N: a black pixel within ±1 row at every sampled column; none at 4.5°N. */
    for (int k = 0; k < 36; k++) {
        lonlat_px(&l, -175 + 10 * k, 9, &x, &y);
        int found = 0;
        for (int d = -1; d <= 1; d++) {
            wx_rgb p = wx_canvas_get(&c, x, y + d);
            found |= p.r == black.r && p.g == black.g && p.b == black.b;
        }
        hit += found;
        lonlat_px(&l, -175 + 10 * k, 4.5, &x, &y);
        wx_rgb p = wx_canvas_get(&c, x, y);
        miss += p.r == 0 && p.g == 0 && p.b == 0;
    }
    WX_CHECK(hit == 36 && miss == 0, "contour 1004 hPa: %d/36 columns, %d stray", hit, miss);
    /* 1020 hPa (45°N) is bold: 2 rows of black. */
    lonlat_px(&l, 20, 45, &x, &y);
    int rows = 0;
    for (int d = -2; d <= 2; d++) {
        wx_rgb p = wx_canvas_get(&c, x, y + d);
        rows += p.r == 0 && p.g == 0 && p.b == 0;
    }
    WX_CHECK(rows == 2, "bold contour at 1020 hPa: %d black rows", rows);
    wx_canvas_free(&c);
    free(f);
}

static void test_atomic(void) {
    wx_grid g;
    wx_grid_global(10.0, &g);
    float *f = calloc((size_t)g.nlat * g.nlon, sizeof(float));
    wx_map_style s;
    wx_map_style_for("msl", 0, NULL, 1, &s);
    wx_map_opts o;
    wx_map_opts_default(&o);
    o.width = 200;
    /* under a file (a missing folder would be made) */
    wx_status st = wx_map_write_png(OUTDIR "/t2m.png/x.png", &g, f, &s, &o, NULL);
    WX_CHECK(st == WX_ERR_RUN && strstr(wx_error_message(), "t2m.png/x.png"),
             "error names the path: %s", wx_error_message());
    /* Only the finished maps are in the folder: no temporaries left behind. */
    DIR *d = opendir(OUTDIR);
    int other = 0, n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.' && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))) continue;
        n++;
        if (strcmp(e->d_name, "t2m.png") && strcmp(e->d_name, "tp.png")) other++;
    }
    if (d) closedir(d);
    WX_CHECK(n == 2 && other == 0, "%d files in %s, %d unexpected", n, OUTDIR, other);
    free(f);
}

/* Real fields for a human look (not asserted beyond success). */
static void examples(void) {
    const char *dir = "png_map_examples";
    mkdir(dir, 0777);
    wx_coastline coast = {0};
    char cpath[512];
    wx_coastline_path('l', cpath, sizeof cpath);
    if (wx_coastline_load(cpath, 1, &coast) != WX_OK) return;
    const char *files[2] = {WX_DATA_DIR "/era5/era5-levels-members.grib", WX_DATA_DIR "/era5/eraint_uvz.nc"};
    for (int fi = 0; fi < 2; fi++) {
        wx_source *src;
        if (wx_source_open(files[fi], &src) != WX_OK) continue;
        for (int i = 0; i < wx_source_count(src); i++) {
            const wx_field_info *info = wx_source_info(src, i);
            if (info->member > 0 || info->nc_index[3] > 0 || !strcmp(info->param, "u")) continue;
            if (info->has_time && info->valid != wx_source_info(src, 0)->valid) continue;
            size_t n = (size_t)info->grid.nlat * info->grid.nlon;
            float *v = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n);
            const char *name = info->param;
            int ok = wx_source_read(src, i, WX_MISSING_NAN, v) == WX_OK;
            if (ok && !strcmp(name, "v")) { /* wind speed from the u of the same level and month */
                for (int k = 0; k < wx_source_count(src); k++) {
                    const wx_field_info *ui = wx_source_info(src, k);
                    if (strcmp(ui->param, "u") || ui->level != info->level ||
                        ui->nc_index[3] != info->nc_index[3])
                        continue;
                    ok = wx_source_read(src, k, WX_MISSING_NAN, u) == WX_OK;
                    for (size_t q = 0; ok && q < n; q++) v[q] = sqrtf(u[q] * u[q] + v[q] * v[q]);
                    name = "ws";
                }
            }
            if (ok) {
                wx_map_style s;
                wx_map_style_for(name, info->level, NULL, 1, &s);
                char title[160], sub[160], path[256];
                wx_map_titles(name, info->level, info->accum_s, &s, info->valid, fi == 0 ? 0 : -1, title,
                              sizeof title, sub, sizeof sub);
                wx_map_opts o;
                wx_map_opts_default(&o);
                o.coast = &coast;
                o.title = title;
                o.subtitle = info->has_time ? sub : "ERA-Interim monthly mean";
                snprintf(path, sizeof path, "%s/%s%g_%d_%d.png", dir, name, info->level, fi, i);
                wx_map_write_png(path, &info->grid, v, &s, &o, NULL);
            }
            free(v);
            free(u);
        }
        wx_source_close(src);
    }
    /* A synthetic msl chart with lows and highs, 0.25°: contours and coasts at full width. */
    wx_grid g;
    wx_grid_global(0.25, &g);
    float *f = malloc(sizeof(float) * (size_t)g.nlat * g.nlon);
    for (int j = 0; j < g.nlat; j++)
        for (int i = 0; i < g.nlon; i++) {
            double la = wx_grid_lat(&g, j) * M_PI / 180, lo = wx_grid_lon(&g, i) * M_PI / 180;
            f[(size_t)j * g.nlon + i] = (float)(101300 + 1500 * cos(2 * la) * sin(3 * lo) -
                                                 2500 * exp(-pow((la - 0.95) / 0.15, 2)) * (1 + sin(5 * lo)));
        }
    wx_map_style s;
    wx_map_style_for("msl", 0, NULL, 1, &s);
    wx_map_opts o;
    wx_map_opts_default(&o);
    o.coast = &coast;
    o.title = "Mean sea level pressure (msl) [hPa]";
    o.subtitle = "synthetic field";
    wx_map_write_png("png_map_examples/msl_synthetic.png", &g, f, &s, &o, NULL);
    free(f);
    wx_coastline_free(&coast);
}

/* Titles: an accumulation says over what (the PNG said only "Total precipitation") */
static void test_titles(void) {
    wx_map_style s;
    char t[256], sub[256];
    wx_map_style_for("tp", 0, NULL, 1, &s);
    wx_map_titles("tp", 0, 21600, &s, 1483228800 + 86400, 86400, t, sizeof t, sub, sizeof sub);
    WX_CHECK(!strcmp(t, "Total precipitation, 6h sum (tp) [mm]"), "tp title: %s", t);
    WX_CHECK(!strcmp(sub, "valid 2017-01-02T00:00 UTC   lead +24h   init 2017-01-01T00:00 UTC"),
             "subtitle: %s", sub);
    wx_map_style_for("t", 850, NULL, 1, &s);
    wx_map_titles("t", 850, 0, &s, 1483228800, -1, t, sizeof t, sub, sizeof sub);
    WX_CHECK(strstr(t, " at 850 hPa (t) [") && !strstr(t, "sum"), "t850 title: %s", t);
}

int main(int argc, char **argv) {
    system("rm -rf " OUTDIR);
    mkdir(OUTDIR, 0777);
    test_temperature_bar_and_coast();
    test_precip_bar();
    test_msl_contours();
    test_atomic();
    test_titles();
    if (argc > 1 && !strcmp(argv[1], "--examples")) examples();
    return wx_test_summary();
}
