/* `wxcast export`'s private state, shared by export.c (options, the run), export_scan.c (what the
 * file offers, --vars and --leads) and export_render.c (styles, maps and wind layers). */
#ifndef WX_EXPORT_PRIV_H
#define WX_EXPORT_PRIV_H

#include "infer/export.h"
#include "io/coastline.h"
#include "io/png_map.h"
#include "io/viewer.h"
#include "io/wx_source.h"

/* One (parameter, level) of the file: its field index per lead (-1: absent). */
typedef struct {
    char param[64];
    wx_level_kind kind;
    double level;
    const wx_catalogue_entry *entry;
    int *field; /* [nleads] */
} group;

/* A candidate variable: a group, or the speed of a u/v pair (v_group >= 0). */
typedef struct {
    char id[80];
    int u_group, v_group; /* v_group < 0: a plain field (u_group is the group) */
    int hidden;           /* u/v components: exported only when named */
    int wind;             /* index into the wind layers for a pair, else -1 */
} cand;

typedef struct {
    wx_source *src;
    int ngroups;
    group *groups;
    int nleads;
    wx_time *valid;
    int64_t *lead_s;
    wx_time init;
    int has_init;
    int spread; /* an ensemble spread file (io/forecast_file.h): spread scales, no wind layers */
    int n_inits; /* initial times the fields state (lead axes, GRIB reference times) */
    int picked;  /* 1: --time chose `init` among them */
} scan;

/* export_scan.c */
/* The file's groups and leads (the lowest member of an ensemble file). */
/* What `path` offers; pick: the initial time (--time) or NULL. On success and on failure alike
 * s is released by wx_export_scan_free. */
wx_status wx_export_scan_file(const char *path, const wx_time *pick, scan *s);
void wx_export_scan_free(scan *s);
/* Candidates c[2 * ngroups] and wind layers w[ngroups] in file order; returns the candidates'
 * count, *nw the layers'. */
int wx_export_cands_make(const scan *s, cand *c, wx_viewer_wind *w, int *nw);
/* sel[n] from --vars (NULL: every candidate not hidden); an unknown name is a usage error listing
 * the known ones. */
wx_status wx_export_vars_select(const scan *s, cand *c, int n, const char *list, int *sel);
/* The same naming the option `what` and the file as `file` in its error (daily: a config key and
 * "the forecast" rather than --vars and a temporary path). */
wx_status wx_export_vars_select_as(const scan *s, cand *c, int n, const char *list, const char *what,
                                   const char *file, int *sel);
/* sel[nleads] from --leads (NULL: all); an item matching no lead is a usage error. */
wx_status wx_export_leads_select(const scan *s, const char *list, int *sel);

/* export_render.c */
typedef struct {
    int var;  /* >= 0: a PNG of variable `var`; else wind layer -var-1 */
    int lead;
} render_job;

typedef struct {
    const wx_export_opts *o;
    const scan *s;
    const cand *c;        /* [nvars] the exported candidates */
    wx_viewer_var *vars;  /* [nvars] */
    wx_viewer_wind *winds;
    const int *wind_pair; /* [nwinds] candidate index of each layer's pair (in c_all) */
    const cand *c_all;
    const wx_coastline *coast;
} render_ctx;

/* The style, names and title of candidate c. */
void wx_export_var_describe(const scan *s, const cand *c, int celsius, wx_viewer_var *v);
/* A style without a fixed range gets one over the leads lsel[nleads] selects. */
wx_status wx_export_range_fix(const scan *s, const cand *c, const int *lsel, wx_map_style *st);
/* Runs jobs[n] (lays[n]: each PNG's layout); the first failing job in job order gives the error. */
wx_status wx_export_jobs_run(const render_ctx *x, const render_job *jobs, int n,
                             wx_map_layout *lays);

#endif
