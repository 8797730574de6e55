/* Equirectangular PNG maps of one field: shading with a documented colour scale, optional
 * contours, coastlines (src/io/coastline.h), a colour bar with units and a two-line title.
 *
 * Projection: plate carrée over the whole globe, map height = width/2, left edge at longitude
 * `west` (default −180, Greenwich in the middle), top edge 90°N; pixel (x, y) of the map area
 * covers lon west + [x, x+1)·360/W, lat 90 − [y, y+1)·180/H. Values are interpolated bilinearly
 * from the grid (periodic in longitude for a global grid); points outside the grid or NaN are
 * grey (160,160,160).
 *
 * Colour scales (display units; RGB stops; linear between stops unless stepped; clamped outside
 * the range). Stored units are the archive's ERA5 units (K, m2 s-2, Pa, m, m s-1).
 *   temperature (2t, t, skt, sst ...)  °C (or K with celsius = 0), −40..40 (t at ≤ 500 hPa:
 *       −70..10; 2t and t ≥ 700 hPa −40..40). Colours of ECMWF's 2t style sh-all-fm48t56i4
 *       (#000080 #0080ff #00ffff #80ff00 #ffff00 #ff8000 #ff0000 #ff00ff), evenly spread.
 *   geopotential (z)   geopotential height in dam (z / 9.80665 / 10), a per-level range
 *       (500 hPa 480..600 dam), blue-to-red (Spectral_r-like) shading, contours every 6 dam at
 *       500 hPa and 4 dam elsewhere.
 *   msl                hPa, 960..1050, pale blue (low) to white (1013) to pale red (high),
 *       black contours every 4 hPa, 2 pixels wide on multiples of 20 hPa.
 *   tp (precipitation) mm (m × 1000; kg m-2 taken as mm), stepped, white to magenta:
 *       <0.1 white, 0.1 #bee6ff, 0.5 #6eb4ff, 2 #286eff, 4 #1428dc, 10 #8228e6, 25 #c800dc,
 *       50 #ff00ff, ≥100 #ff82ff.
 *   wind speed (ws, 10ws/si10, or speed from u/v)  m s-1, 0..40 at 10 m (0..80 aloft): white,
 *       #c8ebff (5), #85aaee (10), #3cc864 (15), #ffe600 (20), #ff8000 (25), #e60000 (30),
 *       #7a11b1 (40).
 *   anything else      the data's min..max, viridis stops.
 *   ensemble spread (wx_map_style_spread)   the channel's units (temperatures in K), 0..max of
 *       the data, sequential YlOrRd stops, no contours. */
#ifndef WX_PNG_MAP_H
#define WX_PNG_MAP_H

#include "core/wx_error.h"
#include "io/coastline.h"
#include "io/png_canvas.h"
#include "meteo/wx_grid.h"

#define WX_MAP_MAX_STOPS 12

typedef struct {
    double v; /* display units */
    wx_rgb c;
} wx_colour_stop;

typedef struct {
    char id[32];          /* "temperature", "geopotential", "msl", "precipitation", "wind", "auto",
                             "spread" */
    char units[16];       /* display units for the colour bar: "°C", "dam", "hPa", "mm", "m/s" */
    double scale, offset; /* display = stored·scale + offset */
    double vmin, vmax;    /* colour-bar range; vmin >= vmax: taken from the data */
    int nstops;
    wx_colour_stop stops[WX_MAP_MAX_STOPS];
    int stepped;          /* 1: stop k's colour fills [v_k, v_k+1), bar in equal boxes */
    double contour_step;  /* > 0: contour lines every step (display units) */
    double contour_bold;  /* > 0: 2-pixel lines on multiples of this */
    int shade;            /* 0: contours on white only */
} wx_map_style;

/* Style of a channel: `name` is the catalogue shortName or NetCDF name ("2t", "t2m", "z", "msl",
 * "tp", "ws", "10ws"/"si10" or "wind" for wind speed), `level` in hPa (0 for single-level),
 * `units` the stored units (NULL: ERA5's), celsius 1 to show temperatures in °C. */
void wx_map_style_for(const char *name, double level, const char *units, int celsius,
                      wx_map_style *out);
/* Style of an ensemble spread (standard deviation) of the channel: the channel's display units
 * and scale without offset (a temperature spread in K), no contours, the sequential YlOrRd stops
 * #ffffcc #ffeda0 #fed976 #feb24c #fd8d3c #fc4e2a #e31a1c #b10026 evenly over 0..max of the data
 * (vmin = vmax = 0: the renderer takes the range from the data; export fixes it to 0..max over
 * the exported leads). */
void wx_map_style_spread(const char *name, double level, const char *units, wx_map_style *out);
/* Colour of a display value under the style. */
wx_rgb wx_map_colour(const wx_map_style *s, double display_value);
/* Fits a style without a fixed range to the data range lo..hi (display units; non-finite: none):
 * 0..max for a spread, a flat range widened by ±0.5, rounded outward to a nice step (about 8 per
 * range), the stops stretched over it. One rule for a single map and for export's scale shared
 * by every lead. */
void wx_map_style_fit(wx_map_style *s, double lo, double hi, int spread);

/* The map widths wx_map_render accepts (after rounding down to even), in pixels. */
#define WX_MAP_WIDTH_MIN 120
#define WX_MAP_WIDTH_MAX 16384

typedef struct {
    int width;                 /* map area width in pixels (even); 0: clamp(2·nlon, 720, 1440) */
    double west;               /* longitude of the left edge, degrees */
    const wx_coastline *coast; /* NULL: none */
    wx_rgb coast_colour;       /* default black */
    const char *title;         /* line 1 (large), may be NULL */
    const char *subtitle;      /* line 2, may be NULL */
} wx_map_opts;
void wx_map_opts_default(wx_map_opts *o);

/* Where everything went, in image pixels (for tests, viewers and overlays). */
typedef struct {
    int width, height;
    int map_x, map_y, map_w, map_h;
    int bar_x, bar_y, bar_w, bar_h;
    double vmin, vmax; /* the colour bar's range (display units) */
} wx_map_layout;

/* Draws the map of `field` ([g.nlat, g.nlon], stored units) into a new canvas (free it). */
wx_status wx_map_render(const wx_grid *g, const float *field, const wx_map_style *s,
                        const wx_map_opts *o, wx_canvas *out, wx_map_layout *lay);
/* Renders and writes the PNG atomically. lay may be NULL. */
wx_status wx_map_write_png(const char *path, const wx_grid *g, const float *field,
                           const wx_map_style *s, const wx_map_opts *o, wx_map_layout *lay);

/* Title lines for a forecast field: "2 metre temperature (2t) [°C]" / "valid 2024-01-03T00:00
 * UTC   lead +48h   init 2024-01-01T00:00 UTC" (lead omitted when lead_s < 0); an accumulation
 * (accum_s > 0) says its period: "Total precipitation, 6h sum (tp) [mm]". */
void wx_map_titles(const char *name, double level, int64_t accum_s, const wx_map_style *s,
                   int64_t valid, int64_t lead_s, char *title, int tlen, char *subtitle, int slen);

#endif
