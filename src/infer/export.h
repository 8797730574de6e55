/* `wxcast export`: a forecast file (NetCDF or GRIB, read through src/io/wx_source.h) → one PNG
 * map per variable and lead (src/io/png_map.h: documented colour scales, coastlines, colour bar,
 * title with valid time and lead), wind-particle layers from u/v pairs (grib2json), a manifest
 * and the static web viewer (src/io/viewer.h).
 *
 * Variables: every (parameter, level) of the file, named by shortName ("2t", "msl", "tp") or
 * shortName + hPa on pressure levels ("z500", "t850"). A u/v pair (10u/10v, 100u/100v, u/v at a
 * level) becomes a wind-speed variable ("10ws", "100ws", "ws850") and a particle layer; the
 * components themselves are exported only when --vars names them. Leads are valid time minus
 * the file's forecast_reference_time (the first valid time when the file has none). Ensemble
 * files: the lowest member only (member 0, the unperturbed control of `wxcast forecast
 * --members`), for the maps and the wind layers alike, so a wind-speed map and its particles show
 * one physically consistent state (the members' mean would smooth the winds, and the speed of
 * the mean wind is not a mean speed); their per-channel variables ("u500") are read as parameter
 * and level, so u/v pairs become ws500 and a 500 hPa layer as in deterministic files. Options
 * that are wrong on their own (--width outside WX_MAP_WIDTH_MIN..MAX, ...) are refused before
 * anything is read or written. Colour ranges are fixed per variable across all leads (the
 * documented ranges, or for styles without one the min..max over every exported lead), so
 * colours mean the same thing along the time slider.
 *
 * Output (all atomic; rerunning gives identical files):
 *   DIR/index.html viewer.js viewer.css manifest.json manifest.js
 *   DIR/maps/<var>_f<HHH>.png
 *   DIR/wind/<layer>_f<HHH>.json and .js   (layer "10m", "100m", "850hPa") */
#ifndef WX_EXPORT_H
#define WX_EXPORT_H

#include "core/wx_error.h"
#include "meteo/wx_time.h"

typedef struct {
    const char *forecast; /* input file */
    const char *output;   /* folder (created) */
    const char *vars;     /* comma-separated variable ids, NULL: all */
    const char *leads;    /* comma-separated hours, ranges "0-72" and "0-240/24"; NULL: all */
    int celsius;          /* 1: temperatures in °C, 0: K */
    int width;            /* map width in pixels; 0: from the grid (720..1440) */
    int wind;             /* 1: write wind-particle layers for u/v pairs */
    int coast;            /* 1: GSHHG coastlines (missing data is an error) */
    int wind_max_nlon;    /* thin wind layers to at most this many columns (0: 360) */
    int threads;          /* 0: OpenMP default */
    int has_time;         /* 1: `time` picks the initial time of a file holding several */
    wx_time time;
} wx_export_opts;

typedef struct {
    int nvars, nleads, npng, nwind_files;
} wx_export_result;

void wx_export_opts_default(wx_export_opts *o);
wx_status wx_export_run(const wx_export_opts *o, wx_export_result *r);
/* Whether every name of `vars` (export's --vars list; NULL: all) names a variable of the forecast
 * file, before any map is drawn; the usage error names `what` (the option or config key) and
 * `file` (how to call the forecast) and lists the file's variables. */
wx_status wx_export_check_vars(const char *forecast, const char *vars, const char *what,
                               const char *file);

/* One item of a lead list, as --leads and daily's maps.leads take it: "24", "0-72", "0-240/24"
 * (hours, an optional 'h' after each number) → the range [a, b] and `every` hours within it (0:
 * every lead in the range). A malformed item or a step of 0 is a usage error "WHAT: 'ITEM': ...". */
wx_status wx_export_lead_item(const char *item, const char *what, double *a, double *b, double *every);
/* 1 when lead h (hours) belongs to the item's set. */
int wx_export_lead_in(double h, double a, double b, double every);

#endif
