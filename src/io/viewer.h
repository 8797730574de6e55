/* The static web viewer that `wxcast export` writes next to its PNG maps, and the two data files
 * it reads:
 *
 *   index.html, viewer.js, viewer.css  the page (src/io/viewer_assets/, embedded into the binary
 *                                      at build time by src/io/viewer_assets/embed.cmake);
 *   manifest.json                      what was written: variables (units, colour scale, range,
 *                                      stops, image layout), leads (lead and valid times), file
 *                                      names per variable and lead, wind layers;
 *   manifest.js                        the same object as `window.WXCAST_MANIFEST = {...};`, since
 *                                      browsers refuse fetch() of a JSON file under file://;
 *   wind/<layer>_f<HHH>.json (+ .js)   u/v in grib2json's layout (a list of two records, header +
 *                                      data, as earth.nullschool and leaflet-velocity read them);
 *                                      the .js assigns the same list to
 *                                      window.WXCAST_WIND["<layer>_f<HHH>"] for file:// use.
 *
 * Every file is written atomically (temporary in the same folder, fsync, rename). */
#ifndef WX_VIEWER_H
#define WX_VIEWER_H

#include <stddef.h>
#include <stdint.h>

#include "core/wx_error.h"
#include "io/png_map.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"

/* One embedded asset (table generated at build time, ends with a NULL name). */
typedef struct {
    const char *name;
    const unsigned char *data; /* [size] followed by a NUL */
    size_t size;
} wx_viewer_asset;
extern const wx_viewer_asset wx_viewer_assets[];

/* A variable of the manifest: one PNG per lead. */
typedef struct {
    char id[80];        /* "2t", "z500", "ws850", "10ws" */
    char param[64];     /* shortName the style was chosen from ("ws" for speed from u/v) */
    char name[128];     /* long name for the picker: "2 metre temperature" */
    double level;       /* hPa, 0 for single-level */
    char stored_units[32];
    wx_map_style style; /* with the range actually used (vmin < vmax) */
    wx_map_layout layout; /* of its PNGs (all leads share it) */
    char **files;       /* [nleads] paths relative to the output folder; NULL: not written */
} wx_viewer_var;

/* A wind-particle layer: u/v pairs at one level. */
typedef struct {
    char id[32];        /* "10m", "100m", "850hPa": the file-name stem */
    char label[64];     /* "10 m", "850 hPa" */
    double level;       /* hPa, 0 for a height above ground */
    double height_m;    /* 10, 100 for single-level winds; 0 on pressure levels */
    char **files;       /* [nleads] wind/<id>_fHHH.json relative paths; NULL: not written */
} wx_viewer_wind;

typedef struct {
    const char *title;  /* "wxcast forecast" */
    const char *source; /* base name of the forecast file */
    int has_init;
    wx_time init;
    int nleads;
    const int64_t *lead_s;   /* [nleads] */
    const wx_time *valid;    /* [nleads] */
    double west;             /* left edge of the maps (degrees) */
    int nvars;
    const wx_viewer_var *vars;
    int nwinds;
    const wx_viewer_wind *winds;
} wx_viewer_manifest;

/* "f024", "f006h30m" when the lead is not a whole hour. buf >= 32. */
void wx_viewer_lead_tag(int64_t lead_s, char *buf, int len);

/* Writes index.html, viewer.js and viewer.css into `dir` (which must exist). */
wx_status wx_viewer_write_assets(const char *dir);
/* Writes manifest.json and manifest.js into `dir`. */
wx_status wx_viewer_write_manifest(const char *dir, const wx_viewer_manifest *m);

/* Header facts of one wind layer file. */
typedef struct {
    wx_time ref_time;   /* refTime */
    int64_t lead_s;     /* forecastTime (hours in the header) */
    int surface_type;   /* GRIB2 code table 4.5: 103 height above ground, 100 isobaric */
    double surface_value; /* metres for 103, Pa for 100 */
    int max_nlon;       /* > 0: keep every k-th point so that nx <= max_nlon (and rows alike) */
} wx_viewer_wind_header;

/* Writes u and v (m s-1, [g.nlat, g.nlon], north→south rows) as grib2json records to
 * `json_path` and as `window.WXCAST_WIND[key] = [...]` to `js_path`. NaN becomes null. */
wx_status wx_viewer_write_wind(const char *json_path, const char *js_path, const char *key,
                               const wx_grid *g, const float *u, const float *v,
                               const wx_viewer_wind_header *h);

#endif
