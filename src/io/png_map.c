#include "io/png_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meteo/wx_catalogue.h"
#include "meteo/wx_time.h"

static const wx_rgb BLACK = {0, 0, 0}, WHITE = {255, 255, 255}, TEXT = {20, 20, 20};

void wx_map_opts_default(wx_map_opts *o) {
    memset(o, 0, sizeof *o);
    o->west = -180;
    o->coast_colour = BLACK;
}

/* Grid value at fractional row/column (bilinear; periodic columns on a global grid). */
static double sample(const wx_grid *g, const float *f, double jf, double i_f, int periodic) {
    if (jf < -0.5 || jf > g->nlat - 0.5) return NAN;
    if (jf < 0) jf = 0;
    if (jf > g->nlat - 1) jf = g->nlat - 1;
    if (periodic) {
        i_f = fmod(i_f, g->nlon);
        if (i_f < 0) i_f += g->nlon;
    } else if (i_f < -0.5 || i_f > g->nlon - 0.5) {
        return NAN;
    } else {
        i_f = fmin(fmax(i_f, 0), g->nlon - 1);
    }
    int j0 = (int)floor(jf), i0 = (int)floor(i_f);
    int j1 = j0 + 1 < g->nlat ? j0 + 1 : j0;
    int i1 = i0 + 1 < g->nlon ? i0 + 1 : (periodic ? 0 : i0);
    double tj = jf - j0, ti = i_f - i0;
    double a = f[(size_t)j0 * g->nlon + i0], b = f[(size_t)j0 * g->nlon + i1];
    double c = f[(size_t)j1 * g->nlon + i0], d = f[(size_t)j1 * g->nlon + i1];
    return (1 - tj) * ((1 - ti) * a + ti * b) + tj * ((1 - ti) * c + ti * d);
}

/* Fractional column of map longitude `lon`. Map longitudes run from `west` (−180) while lon0
 * lies in [0, 360), so a regional grid (lon0 350 or 250) is reached through the equivalent
 * longitude 360° away: the one within half a cell of the grid's span, when there is one. */
static double column_of(const wx_grid *g, double lon, int periodic) {
    double d = fmod(lon - g->lon0, 360.0);
    if (d < 0) d += 360;
    if (!periodic && d > (g->nlon - 0.5) * g->dlon && d - 360 >= -0.5 * g->dlon) d -= 360;
    return d / g->dlon;
}

static double nice_step(double range, int target) {
    double raw = range / target, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

void wx_map_style_fit(wx_map_style *s, double lo, double hi, int spread) {
    if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
    if (spread) lo = 0, hi = hi > 0 ? hi : 1; /* a spread scale starts at 0 */
    if (hi - lo < 1e-12 * fmax(1, fabs(lo))) lo -= 0.5, hi += 0.5;
    double st = nice_step(hi - lo, 8);
    lo = floor(lo / st) * st, hi = ceil(hi / st) * st;
    double a = s->stops[0].v, b = s->stops[s->nstops - 1].v;
    for (int k = 0; k < s->nstops; k++) s->stops[k].v = lo + (s->stops[k].v - a) / (b - a) * (hi - lo);
    s->vmin = lo, s->vmax = hi;
}

/* Auto range: the data's min..max in display units (wx_map_style_fit). */
static void auto_range(wx_map_style *s, const wx_grid *g, const float *f) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < (size_t)g->nlat * g->nlon; k++)
        if (isfinite(f[k])) {
            double v = f[k] * s->scale + s->offset;
            lo = fmin(lo, v), hi = fmax(hi, v);
        }
    wx_map_style_fit(s, lo, hi, !strcmp(s->id, "spread"));
}

typedef struct {
    const wx_grid *g;
    int mx, my, mw, mh;
    double west;
} proj;

static void to_px(const proj *p, double lon, double lat, double *x, double *y) {
    double d = fmod(lon - p->west, 360.0);
    if (d < 0) d += 360;
    *x = p->mx + d / 360.0 * p->mw - 0.5;
    *y = p->my + (90.0 - lat) / 180.0 * p->mh - 0.5;
}

/* Line in lon/lat; split where it crosses the map's left/right seam. */
static void geo_line(wx_canvas *c, const proj *p, double lon0, double lat0, double lon1,
                     double lat1, int width, wx_rgb col) {
    double x0, y0, x1, y1;
    to_px(p, lon0, lat0, &x0, &y0);
    to_px(p, lon1, lat1, &x1, &y1);
    if (fabs(x1 - x0) > p->mw / 2.0) return;
    wx_canvas_line(c, x0, y0, x1, y1, width, col);
}

/* Marching squares over grid cells (periodic in longitude on a global grid). */
static void contours(wx_canvas *c, const proj *p, const float *f, const wx_map_style *s) {
    const wx_grid *g = p->g;
    int periodic = wx_grid_is_periodic(g);
    int ncol = periodic ? g->nlon : g->nlon - 1;
    for (int j = 0; j + 1 < g->nlat; j++)
        for (int i = 0; i < ncol; i++) {
            int i1 = (i + 1) % g->nlon;
            /* corners in order: (j,i) (j,i+1) (j+1,i+1) (j+1,i) */
            double v[4] = {f[(size_t)j * g->nlon + i], f[(size_t)j * g->nlon + i1],
                           f[(size_t)(j + 1) * g->nlon + i1], f[(size_t)(j + 1) * g->nlon + i]};
            double cj[4] = {j, j, j + 1, j + 1}, ci[4] = {i, i + 1, i + 1, i};
            double lo = INFINITY, hi = -INFINITY;
            int ok = 1;
            for (int k = 0; k < 4; k++) {
                if (!isfinite(v[k])) ok = 0;
                v[k] = v[k] * s->scale + s->offset;
                lo = fmin(lo, v[k]), hi = fmax(hi, v[k]);
            }
            if (!ok) continue;
            for (double L = ceil(lo / s->contour_step) * s->contour_step; L <= hi;
                 L += s->contour_step) {
                double px[4], py[4];
                int n = 0;
                for (int e = 0; e < 4; e++) {
                    double a = v[e] - L, b = v[(e + 1) % 4] - L;
                    /* ">= 0" counts as above, so a level equal to a corner is crossed once. */
                    if ((a >= 0) == (b >= 0)) continue;
                    double t = a / (a - b);
                    double jj = cj[e] + t * (cj[(e + 1) % 4] - cj[e]);
                    double ii = ci[e] + t * (ci[(e + 1) % 4] - ci[e]);
                    py[n] = wx_grid_lat(g, 0) - jj * g->dlat;
                    px[n] = g->lon0 + ii * g->dlon;
                    n++;
                }
                int bold = s->contour_bold > 0 &&
                           fabs(remainder(L, s->contour_bold)) < 1e-6 * s->contour_bold;
                for (int k = 0; k + 1 < n; k += 2)
                    geo_line(c, p, px[k], py[k], px[k + 1], py[k + 1], bold ? 2 : 1, BLACK);
            }
        }
}

static void fmt_value(double v, double step, char *buf, int len) {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) < 1e-9 * step) v = 0;
    snprintf(buf, (size_t)len, "%.*f", dec, v);
}

static void colour_bar(wx_canvas *c, const wx_map_style *s, const wx_map_layout *l) {
    if (s->stepped) {
        int n = s->nstops; /* n boxes: the last one is "above the last stop" */
        for (int x = 0; x < l->bar_w; x++) {
            int k = x * n / l->bar_w;
            wx_canvas_rect(c, l->bar_x + x, l->bar_y, 1, l->bar_h, s->stops[k].c);
        }
        for (int k = 1; k < n; k++) {
            char t[32];
            fmt_value(s->stops[k].v, s->stops[k].v < 1 ? 0.1 : 1, t, sizeof t);
            int x = l->bar_x + k * l->bar_w / n;
            wx_canvas_rect(c, x, l->bar_y + l->bar_h, 1, 4, TEXT);
            wx_canvas_text(c, x - wx_canvas_text_width(t, 1) / 2, l->bar_y + l->bar_h + 6, t, 1, TEXT);
        }
    } else {
        for (int x = 0; x < l->bar_w; x++) {
            double v = l->vmin + (x + 0.5) / l->bar_w * (l->vmax - l->vmin);
            wx_canvas_rect(c, l->bar_x + x, l->bar_y, 1, l->bar_h, wx_map_colour(s, v));
        }
        double step = nice_step(l->vmax - l->vmin, 8);
        for (double v = ceil(l->vmin / step - 1e-9) * step; v <= l->vmax + 1e-9 * step; v += step) {
            char t[32];
            fmt_value(v, step, t, sizeof t);
            int x = l->bar_x + (int)lround((v - l->vmin) / (l->vmax - l->vmin) * l->bar_w);
            if (x >= l->bar_x + l->bar_w) x = l->bar_x + l->bar_w - 1;
            wx_canvas_rect(c, x, l->bar_y + l->bar_h, 1, 4, TEXT);
            wx_canvas_text(c, x - wx_canvas_text_width(t, 1) / 2, l->bar_y + l->bar_h + 6, t, 1, TEXT);
        }
    }
    wx_canvas_rect_outline(c, l->bar_x - 1, l->bar_y - 1, l->bar_w + 2, l->bar_h + 2, TEXT);
    wx_canvas_text(c, l->bar_x + l->bar_w + 10, l->bar_y + (l->bar_h - 7) / 2, s->units, 1, TEXT);
}

static void frame_labels(wx_canvas *c, const wx_map_layout *l, double west) {
    for (int lat = -60; lat <= 60; lat += 30) {
        char t[8];
        snprintf(t, sizeof t, "%d%s", abs(lat), lat > 0 ? "N" : lat < 0 ? "S" : "");
        int y = l->map_y + (int)lround((90.0 - lat) / 180.0 * l->map_h);
        wx_canvas_rect(c, l->map_x - 4, y, 4, 1, TEXT);
        wx_canvas_text(c, l->map_x - 6 - wx_canvas_text_width(t, 1), y - 3, t, 1, TEXT);
    }
    for (int k = 0; k <= 6; k++) {
        double lon = west + 60.0 * k;
        double ln = remainder(lon, 360.0);
        char t[8];
        if (fabs(ln) < 1e-9 || fabs(fabs(ln) - 180) < 1e-9) snprintf(t, sizeof t, "%.0f", fabs(ln));
        else snprintf(t, sizeof t, "%.0f%s", fabs(ln), ln > 0 ? "E" : "W");
        int x = l->map_x + (int)lround(k / 6.0 * l->map_w);
        wx_canvas_rect(c, x, l->map_y + l->map_h, 1, 4, TEXT);
        int tx = x - wx_canvas_text_width(t, 1) / 2;
        if (k == 6) tx = x - wx_canvas_text_width(t, 1);
        if (k == 0) tx = x;
        wx_canvas_text(c, tx, l->map_y + l->map_h + 6, t, 1, TEXT);
    }
}

wx_status wx_map_render(const wx_grid *g, const float *field, const wx_map_style *style,
                        const wx_map_opts *o, wx_canvas *out, wx_map_layout *lay) {
    wx_map_style s = *style;
    if (s.nstops < 2)
        return wx_error_set(WX_ERR_USAGE, "map style '%s': %d colour stops, expected at least 2",
                            s.id, s.nstops);
    if (!(s.vmax > s.vmin)) auto_range(&s, g, field);
    wx_map_layout l = {0};
    l.map_w = o->width > 0 ? o->width : 2 * g->nlon;
    if (o->width <= 0) l.map_w = l.map_w < 720 ? 720 : l.map_w > 1440 ? 1440 : l.map_w;
    l.map_w &= ~1;
    if (l.map_w < WX_MAP_WIDTH_MIN || l.map_w > WX_MAP_WIDTH_MAX)
        return wx_error_set(WX_ERR_USAGE, "map width %d pixels: expected %d..%d", l.map_w,
                            WX_MAP_WIDTH_MIN, WX_MAP_WIDTH_MAX);
    l.map_h = l.map_w / 2;
    l.map_x = 32;
    l.map_y = 44;
    l.width = l.map_x + l.map_w + 16;
    l.bar_w = l.map_w * 7 / 10;
    l.bar_h = 14;
    l.bar_x = l.map_x + (l.map_w - l.bar_w) / 2;
    l.bar_y = l.map_y + l.map_h + 24;
    l.height = l.bar_y + l.bar_h + 6 + 8 + 10;
    l.vmin = s.vmin, l.vmax = s.vmax;
    wx_canvas_init(out, l.width, l.height, WHITE);

    /* Shading: per pixel, bilinear from the grid. */
    int periodic = wx_grid_is_periodic(g);
    for (int y = 0; y < l.map_h; y++) {
        double lat = 90.0 - (y + 0.5) * 180.0 / l.map_h;
        double jf = (g->lat0 - lat) / g->dlat;
        for (int x = 0; x < l.map_w; x++) {
            double lon = o->west + (x + 0.5) * 360.0 / l.map_w;
            double v = sample(g, field, jf, column_of(g, lon, periodic), periodic);
            wx_rgb col = s.shade ? wx_map_colour(&s, v * s.scale + s.offset) : WHITE;
            if (!isfinite(v)) col = (wx_rgb){160, 160, 160};
            wx_canvas_set(out, l.map_x + x, l.map_y + y, col);
        }
    }
    proj p = {g, l.map_x, l.map_y, l.map_w, l.map_h, o->west};
    if (s.contour_step > 0) contours(out, &p, field, &s);
    if (o->coast) {
        const wx_coastline *cl = o->coast;
        for (int k = 0; k < cl->nseg; k++)
            for (int i = cl->start[k]; i + 1 < cl->start[k] + cl->count[k]; i++)
                geo_line(out, &p, cl->lon[i], cl->lat[i], cl->lon[i + 1], cl->lat[i + 1], 1,
                         o->coast_colour);
    }
    wx_canvas_rect_outline(out, l.map_x - 1, l.map_y - 1, l.map_w + 2, l.map_h + 2, TEXT);
    frame_labels(out, &l, o->west);
    colour_bar(out, &s, &l);
    if (o->title) wx_canvas_text(out, l.map_x, 8, o->title, 2, TEXT);
    if (o->subtitle) wx_canvas_text(out, l.map_x, 28, o->subtitle, 1, TEXT);
    if (lay) *lay = l;
    return WX_OK;
}

wx_status wx_map_write_png(const char *path, const wx_grid *g, const float *field,
                           const wx_map_style *s, const wx_map_opts *o, wx_map_layout *lay) {
    wx_canvas c;
    WX_TRY(wx_map_render(g, field, s, o, &c, lay));
    wx_status st = wx_canvas_write_png(&c, path);
    wx_canvas_free(&c);
    return st;
}

void wx_map_titles(const char *name, double level, int64_t accum_s, const wx_map_style *s,
                   int64_t valid, int64_t lead_s, char *title, int tlen, char *subtitle, int slen) {
    const wx_catalogue_entry *e = wx_catalogue_find(name);
    char lev[32] = "";
    if (level > 0) snprintf(lev, sizeof lev, " at %g hPa", level);
    const char *what = e ? e->long_name : name;
    if (!strcmp(s->id, "geopotential")) what = "Geopotential height";
    if (!strcmp(s->id, "wind") && !(e && strstr(e->long_name, "speed"))) what = "Wind speed";
    char acc[48] = "";
    if (accum_s > 0) { /* a sum says over what: "Total precipitation, 6h sum" */
        char d[32];
        wx_time_format_duration(accum_s, d);
        snprintf(acc, sizeof acc, ", %s sum", d);
    }
    snprintf(title, (size_t)tlen, "%s%s%s (%s) [%s]", what, lev, acc, e ? e->short_name : name, s->units);
    char v[32], lead[32] = "", init[32];
    wx_time_format(valid, v);
    if (lead_s >= 0) {
        wx_time_format(valid - lead_s, init);
        snprintf(lead, sizeof lead, "+%lldh", (long long)(lead_s / 3600));
        snprintf(subtitle, (size_t)slen, "valid %s UTC   lead %s   init %s UTC", v, lead, init);
    } else {
        snprintf(subtitle, (size_t)slen, "valid %s UTC", v);
    }
}
