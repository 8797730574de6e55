/* Colour scales of the PNG maps; the values are documented in png_map.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "io/png_map.h"
#include "meteo/wx_catalogue.h"

#define RGB(x) ((wx_rgb){(uint8_t)((x) >> 16), (uint8_t)(((x) >> 8) & 255), (uint8_t)((x)&255)})

static void set_stops(wx_map_style *s, int n, const double *v, const unsigned *hex) {
    s->nstops = n;
    for (int k = 0; k < n; k++) s->stops[k] = (wx_colour_stop){v[k], RGB(hex[k])};
}

/* Spreads n colours evenly over [lo, hi]. */
static void even_stops(wx_map_style *s, int n, double lo, double hi, const unsigned *hex) {
    double v[WX_MAP_MAX_STOPS];
    for (int k = 0; k < n; k++) v[k] = lo + (hi - lo) * k / (n - 1);
    set_stops(s, n, v, hex);
}

static int is_any(const char *name, const char *list) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
        if (!strcasecmp(t, name)) return 1;
    return 0;
}

/* Geopotential height range (dam) by pressure level: typical global extremes, rounded. */
static void z_range(double level, double *lo, double *hi) {
    static const double tab[][3] = {{1000, -40, 60},  {925, 40, 100},  {850, 110, 165},
                                    {700, 260, 320},  {600, 380, 450}, {500, 480, 600},
                                    {400, 620, 770},  {300, 820, 980}, {250, 920, 1090},
                                    {200, 1060, 1250}, {150, 1240, 1430}, {100, 1500, 1690},
                                    {50, 1900, 2120}};
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++)
        if (fabs(tab[k][0] - level) < 1e-6) {
            *lo = tab[k][1];
            *hi = tab[k][2];
            return;
        }
    *lo = *hi = 0; /* from the data */
}

void wx_map_style_for(const char *name, double level, const char *units, int celsius,
                      wx_map_style *s) {
    memset(s, 0, sizeof *s);
    s->scale = 1;
    s->shade = 1;
    const wx_catalogue_entry *e = wx_catalogue_find(name);
    const char *sn = e ? e->short_name : name;
    if (is_any(sn, "2t,t,skt,sst,2d,d,stl1,mx2t,mn2t")) {
        static const unsigned hex[] = {0x000080, 0x0080ff, 0x00ffff, 0x80ff00,
                                       0xffff00, 0xff8000, 0xff0000, 0xff00ff};
        snprintf(s->id, sizeof s->id, "temperature");
        double lo = -40, hi = 40;
        if (level > 0 && level <= 500) lo = -70, hi = 10;
        double off = celsius ? -273.15 : 0;
        if (units && !strcmp(units, "degC")) off = celsius ? 0 : 273.15;
        snprintf(s->units, sizeof s->units, "%s", celsius ? "°C" : "K");
        s->offset = off;
        if (!celsius) lo += 273.15, hi += 273.15;
        s->vmin = lo, s->vmax = hi;
        even_stops(s, 8, lo, hi, hex);
    } else if (is_any(sn, "z,gh")) {
        static const unsigned hex[] = {0x5e4fa2, 0x3288bd, 0x66c2a5, 0xabdda4, 0xe6f598,
                                       0xfee08b, 0xfdae61, 0xf46d43, 0xd53e4f, 0x9e0142};
        snprintf(s->id, sizeof s->id, "geopotential");
        snprintf(s->units, sizeof s->units, "dam");
        /* gh is already in m; z is m2 s-2. */
        s->scale = !strcasecmp(sn, "gh") ? 0.1 : 1.0 / (9.80665 * 10.0);
        z_range(level, &s->vmin, &s->vmax);
        /* Unknown level: stops on [0, 1], stretched over the data's range when rendering. */
        if (s->vmax > s->vmin) even_stops(s, 10, s->vmin, s->vmax, hex);
        else even_stops(s, 10, 0, 1, hex);
        s->contour_step = fabs(level - 500) < 1e-6 ? 6 : 4;
    } else if (is_any(sn, "msl,sp")) {
        snprintf(s->id, sizeof s->id, "msl");
        snprintf(s->units, sizeof s->units, "hPa");
        s->scale = 0.01;
        s->vmin = 960, s->vmax = 1050;
        static const double v[] = {960, 990, 1005, 1013, 1020, 1035, 1050};
        static const unsigned hex[] = {0x3a6fb0, 0x8fb8e0, 0xd2e4f4, 0xffffff,
                                       0xf6dcd2, 0xe9a08a, 0xc0503c};
        set_stops(s, 7, v, hex);
        s->contour_step = 4;
        s->contour_bold = 20;
        if (!strcasecmp(sn, "sp")) s->contour_step = 0, s->vmin = 500, s->vmax = 1050;
    } else if (is_any(sn, "tp,cp,lsp,tp6h,tp24h")) {
        snprintf(s->id, sizeof s->id, "precipitation");
        snprintf(s->units, sizeof s->units, "mm");
        s->scale = units && (strstr(units, "kg") || !strcmp(units, "mm")) ? 1 : 1000;
        static const double v[] = {0, 0.1, 0.5, 2, 4, 10, 25, 50, 100};
        static const unsigned hex[] = {0xffffff, 0xbee6ff, 0x6eb4ff, 0x286eff, 0x1428dc,
                                       0x8228e6, 0xc800dc, 0xff00ff, 0xff82ff};
        set_stops(s, 9, v, hex);
        s->stepped = 1;
        s->vmin = 0, s->vmax = 100;
    } else if (is_any(sn, "ws,10ws,si10,wind,wind_speed,10m_wind_speed,100ws")) {
        snprintf(s->id, sizeof s->id, "wind");
        snprintf(s->units, sizeof s->units, "m/s");
        double f = level > 0 ? 2 : 1;
        static const double v[] = {0, 5, 10, 15, 20, 25, 30, 40};
        static const unsigned hex[] = {0xffffff, 0xc8ebff, 0x85aaee, 0x3cc864,
                                       0xffe600, 0xff8000, 0xe60000, 0x7a11b1};
        set_stops(s, 8, v, hex);
        for (int k = 0; k < 8; k++) s->stops[k].v *= f;
        s->vmin = 0, s->vmax = 40 * f;
    } else {
        static const unsigned hex[] = {0x440154, 0x3b528b, 0x21918c, 0x5ec962, 0xfde725};
        snprintf(s->id, sizeof s->id, "auto");
        snprintf(s->units, sizeof s->units, "%s", units ? units : (e ? e->cf_units : ""));
        for (int k = 0; k < 5; k++) s->stops[k] = (wx_colour_stop){k / 4.0, RGB(hex[k])};
        s->nstops = 5;
    }
}

void wx_map_style_spread(const char *name, double level, const char *units, wx_map_style *s) {
    /* YlOrRd (ColorBrewer): a sequential scale, light for little spread */
    static const unsigned hex[] = {0xffffcc, 0xffeda0, 0xfed976, 0xfeb24c,
                                   0xfd8d3c, 0xfc4e2a, 0xe31a1c, 0xb10026};
    wx_map_style_for(name, level, units, 0, s);
    char u[sizeof s->units];
    snprintf(u, sizeof u, "%s", s->units);
    double scale = s->scale;
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "spread");
    snprintf(s->units, sizeof s->units, "%s", u); /* a difference: K, not °C; no offset */
    s->scale = scale;
    s->shade = 1;
    even_stops(s, 8, 0, 1, hex); /* stretched over 0..max by the renderer or export */
}

wx_rgb wx_map_colour(const wx_map_style *s, double v) {
    const wx_colour_stop *st = s->stops;
    int n = s->nstops;
    if (!isfinite(v)) return (wx_rgb){160, 160, 160};
    if (v <= st[0].v) return st[0].c;
    if (v >= st[n - 1].v) return st[n - 1].c;
    int k = 0;
    while (k < n - 2 && v >= st[k + 1].v) k++;
    if (s->stepped) return st[k].c;
    double t = (v - st[k].v) / (st[k + 1].v - st[k].v);
    wx_rgb a = st[k].c, b = st[k + 1].c;
    return (wx_rgb){(uint8_t)lround(a.r + t * (b.r - a.r)), (uint8_t)lround(a.g + t * (b.g - a.g)),
                    (uint8_t)lround(a.b + t * (b.b - a.b))};
}
