/* `wxcast export`: forecast file → PNG maps, wind layers, manifest and viewer (see export.h). */
#include "infer/export.h"

#include <ctype.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/wx_fs.h"
#include "infer/forecast_init.h"
#include "io/coastline.h"
#include "io/forecast_file.h"
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
} scan;

void wx_export_opts_default(wx_export_opts *o) {
    memset(o, 0, sizeof *o);
    o->celsius = 1;
    o->wind = 1;
    o->coast = 1;
}

static int cmp_time(const void *a, const void *b) {
    wx_time x = *(const wx_time *)a, y = *(const wx_time *)b;
    return x < y ? -1 : x > y;
}

static int find_lead(const scan *s, wx_time t) {
    for (int k = 0; k < s->nleads; k++)
        if (s->valid[k] == t) return k;
    return -1;
}

/* The (parameter, level) of a field. Ensemble files keep one variable per pressure channel
 * ("u500": CDO reads at most 4 dimensions, so there is no room for a level axis beside
 * realization); such a name, unknown to the catalogue as a single-level field, is read as its
 * pressure parameter and level (as eval does), so that its maps, ids and u/v pairs are those of a
 * deterministic file. */
static void field_key(const wx_field_info *f, group *out) {
    wx_archive_channel pc;
    snprintf(out->param, sizeof out->param, "%s", f->param);
    out->kind = f->kind, out->level = f->level, out->entry = f->entry;
    if (f->kind == WX_LEVEL_SINGLE && !f->entry &&
        wx_forecast_channel_from_name(f->name, 0, &pc) == WX_OK && pc.kind == WX_LEVEL_PRESSURE) {
        snprintf(out->param, sizeof out->param, "%s", pc.param);
        out->kind = pc.kind, out->level = pc.level;
        out->entry = wx_catalogue_find_kind(pc.param, WX_LEVEL_PRESSURE);
    }
}

static wx_status scan_file(const char *path, scan *s) {
    memset(s, 0, sizeof *s);
    WX_TRY(wx_source_open(path, &s->src));
    int found = 0; /* without a reference time the first valid time stands for the init */
    if (wx_source_format_of(s->src) == WX_FORMAT_NETCDF) {
        WX_TRY(wx_forecast_file_ref_time(path, &s->init, &found));
        WX_TRY(wx_forecast_file_is_spread(path, &s->spread));
    } else {
        WX_TRY(wx_forecast_file_grib_ref_time(s->src, &s->init, &found));
    }
    int nf = wx_source_count(s->src), minmem = 1 << 30;
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(s->src, i);
        if (f->has_time && f->member < minmem) minmem = f->member;
    }
    s->valid = wx_malloc(sizeof(wx_time) * (size_t)(nf + 1));
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(s->src, i);
        if (!f->has_time || f->member != minmem || find_lead(s, f->valid) >= 0) continue;
        s->valid[s->nleads++] = f->valid;
    }
    if (s->nleads == 0)
        return wx_error_set(WX_ERR_RUN, "%s: no time-dependent fields to export", path);
    qsort(s->valid, (size_t)s->nleads, sizeof(wx_time), cmp_time);
    s->has_init = found;
    if (!found) s->init = s->valid[0];
    s->lead_s = wx_malloc(sizeof(int64_t) * (size_t)s->nleads);
    for (int k = 0; k < s->nleads; k++) s->lead_s[k] = s->valid[k] - s->init;
    s->groups = wx_calloc((size_t)nf + 1, sizeof(group));
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(s->src, i);
        if (!f->has_time || f->member != minmem) continue;
        group key;
        field_key(f, &key);
        int g = 0;
        while (g < s->ngroups && !(!strcmp(s->groups[g].param, key.param) &&
                                   s->groups[g].kind == key.kind && s->groups[g].level == key.level))
            g++;
        if (g == s->ngroups) {
            group *n = &s->groups[s->ngroups++];
            *n = key;
            n->field = wx_malloc(sizeof(int) * (size_t)s->nleads);
            for (int k = 0; k < s->nleads; k++) n->field[k] = -1;
        }
        s->groups[g].field[find_lead(s, f->valid)] = i;
    }
    return WX_OK;
}

static void scan_free(scan *s) {
    for (int g = 0; g < s->ngroups; g++) free(s->groups[g].field);
    free(s->groups), free(s->valid), free(s->lead_s);
    if (s->src) wx_source_close(s->src);
}

/* The v partner of a u group ("10u" → "10v", "u" → "v" at the same level), or -1. */
static int v_partner(const scan *s, int g) {
    const group *u = &s->groups[g];
    size_t n = strlen(u->param);
    if (n == 0 || u->param[n - 1] != 'u' || strspn(u->param, "0123456789") != n - 1) return -1;
    char want[64];
    snprintf(want, sizeof want, "%.*sv", (int)(n - 1), u->param);
    for (int k = 0; k < s->ngroups; k++)
        if (!strcmp(s->groups[k].param, want) && s->groups[k].kind == u->kind &&
            s->groups[k].level == u->level)
            return k;
    return -1;
}

static int is_v_of_pair(const scan *s, int g) {
    for (int k = 0; k < s->ngroups; k++)
        if (v_partner(s, k) == g) return 1;
    return 0;
}

static void group_id(const group *g, char *buf, size_t len) {
    if (g->kind == WX_LEVEL_PRESSURE) snprintf(buf, len, "%s%g", g->param, g->level);
    else snprintf(buf, len, "%s", g->param);
    for (char *p = buf; *p; p++) /* ids become file names */
        if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.')) *p = '_';
}

/* Candidates and wind layers, in file order. */
static int make_cands(const scan *s, cand *c, wx_viewer_wind *w, int *nw) {
    int n = 0;
    *nw = 0;
    for (int g = 0; g < s->ngroups; g++) {
        const group *gr = &s->groups[g];
        int v = v_partner(s, g);
        cand *x = &c[n++];
        memset(x, 0, sizeof *x);
        group_id(gr, x->id, sizeof x->id);
        x->u_group = g, x->v_group = -1, x->wind = -1;
        x->hidden = v >= 0 || is_v_of_pair(s, g);
        if (v < 0) continue;
        cand *y = &c[n++];
        memset(y, 0, sizeof *y);
        y->u_group = g, y->v_group = v, y->wind = (*nw)++;
        wx_viewer_wind *l = &w[y->wind];
        memset(l, 0, sizeof *l);
        if (gr->kind == WX_LEVEL_PRESSURE) {
            snprintf(y->id, sizeof y->id, "ws%g", gr->level);
            snprintf(l->id, sizeof l->id, "%ghPa", gr->level);
            snprintf(l->label, sizeof l->label, "%g hPa", gr->level);
            l->level = gr->level;
        } else {
            int digits = (int)strlen(gr->param) - 1;
            snprintf(y->id, sizeof y->id, "%.*sws", digits, gr->param);
            l->height_m = digits ? atof(gr->param) : 10;
            snprintf(l->id, sizeof l->id, "%gm", l->height_m);
            snprintf(l->label, sizeof l->label, "%g m", l->height_m);
        }
    }
    return n;
}

static int cand_matches(const scan *s, const cand *c, const char *tok) {
    if (!strcasecmp(c->id, tok)) return 1;
    const group *g = &s->groups[c->u_group];
    if (c->v_group < 0 && g->kind != WX_LEVEL_PRESSURE && g->entry)
        return wx_catalogue_matches(g->entry, tok);
    return 0;
}

/* Marks the selected candidates; an unknown name is a usage error listing the known ones. */
static wx_status select_vars(const scan *s, cand *c, int n, const char *list, int *sel) {
    for (int k = 0; k < n; k++) sel[k] = list ? 0 : !c[k].hidden;
    if (!list) return WX_OK;
    char *buf = wx_strdup(list);
    wx_status st = WX_OK;
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t && st == WX_OK;
         t = strtok_r(NULL, ", ", &save)) {
        int hit = 0;
        for (int k = 0; k < n; k++)
            if (cand_matches(s, &c[k], t)) sel[k] = 1, hit = 1;
        if (!hit) {
            char known[2048] = "";
            for (int k = 0; k < n; k++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         k ? ", " : "", c[k].id);
            st = wx_error_set(WX_ERR_USAGE, "--vars: '%s' is not in %s (variables: %s)", t,
                              wx_source_path(s->src), known);
        }
    }
    free(buf);
    return st;
}

wx_status wx_export_lead_item(const char *t, const char *what, double *a, double *b, double *every) {
    char *e;
    *a = strtod(t, &e), *b = *a, *every = 0;
    if (*e == 'h') e++;
    if (*e == '-' && e > t) *b = strtod(e + 1, &e);
    if (*e == 'h') e++;
    if (*e == '/') *every = strtod(e + 1, &e);
    if (*e == 'h') e++;
    if (!*e && strchr(t, '/') && !(*every > 0))
        return wx_error_set(WX_ERR_USAGE, "%s: '%s': the step after '/' must be more than 0 hours "
                            "(as in 0-240/24)", what, t);
    if (*e || e == t || *b < *a || *every < 0)
        return wx_error_set(WX_ERR_USAGE, "%s: '%s': expected hours like 24, 0-72 or 0-240/24",
                            what, t);
    return WX_OK;
}

int wx_export_lead_in(double h, double a, double b, double every) {
    return h >= a - 1e-9 && h <= b + 1e-9 && (every <= 0 || fabs(remainder(h - a, every)) <= 1e-9);
}

/* "24", "0-72", "0-240/24" (hours) → sel[k] for each lead; a token matching no lead is an error. */
static wx_status select_leads(const scan *s, const char *list, int *sel) {
    for (int k = 0; k < s->nleads; k++) sel[k] = list ? 0 : 1;
    if (!list) return WX_OK;
    char *buf = wx_strdup(list);
    wx_status st = WX_OK;
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t && st == WX_OK;
         t = strtok_r(NULL, ", ", &save)) {
        double a, b, step;
        if ((st = wx_export_lead_item(t, "--leads", &a, &b, &step))) break;
        int hit = 0;
        for (int k = 0; k < s->nleads; k++)
            if (wx_export_lead_in(s->lead_s[k] / 3600.0, a, b, step)) sel[k] = hit = 1;
        if (!hit) {
            char known[2048] = "";
            for (int k = 0; k < s->nleads; k++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%g",
                         k ? ", " : "", s->lead_s[k] / 3600.0);
            st = wx_error_set(WX_ERR_USAGE, "--leads: '%s' matches no lead of %s (leads in "
                                            "hours: %s)", t, wx_source_path(s->src), known);
        }
    }
    free(buf);
    return st;
}

/* Field of candidate c at lead k into out (speed from u/v for a pair); *have = 0 when absent.
 * out, tmp: [nlat·nlon] of the field's grid. */
static wx_status read_cand(const scan *s, const cand *c, int k, float *out, float *tmp,
                           const wx_grid **grid, int *have) {
    int fu = s->groups[c->u_group].field[k];
    int fv = c->v_group >= 0 ? s->groups[c->v_group].field[k] : fu;
    *have = fu >= 0 && fv >= 0;
    if (!*have) return WX_OK;
    const wx_field_info *iu = wx_source_info(s->src, fu), *iv = wx_source_info(s->src, fv);
    *grid = &iu->grid;
    WX_TRY(wx_source_read(s->src, fu, WX_MISSING_NAN, out));
    if (c->v_group < 0) return WX_OK;
    if (!wx_grid_same(&iu->grid, &iv->grid, 1e-9))
        return wx_error_set(WX_ERR_RUN, "%s: %s and %s are on different grids",
                            wx_source_path(s->src), iu->name, iv->name);
    WX_TRY(wx_source_read(s->src, fv, WX_MISSING_NAN, tmp));
    for (size_t p = 0; p < (size_t)iu->grid.nlat * iu->grid.nlon; p++) out[p] = hypotf(out[p], tmp[p]);
    return WX_OK;
}

static size_t max_points(const scan *s) {
    size_t n = 1;
    for (int i = 0; i < wx_source_count(s->src); i++) {
        const wx_grid *g = &wx_source_info(s->src, i)->grid;
        if ((size_t)g->nlat * g->nlon > n) n = (size_t)g->nlat * g->nlon;
    }
    return n;
}

static double nice_step(double range, int target) {
    double raw = range / target, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* A style without a fixed range gets the min..max over every exported lead (0..max for a
 * spread), rounded outward to a nice step, and its stops stretched over it: one colour scale for
 * the whole slider. */
static wx_status fix_range(const scan *s, const cand *c, const int *lsel, wx_map_style *st) {
    if (st->vmax > st->vmin) return WX_OK;
    size_t np = max_points(s);
    float *a = wx_malloc(sizeof(float) * np), *b = wx_malloc(sizeof(float) * np);
    double lo = INFINITY, hi = -INFINITY;
    wx_status rc = WX_OK;
    for (int k = 0; k < s->nleads && rc == WX_OK; k++) {
        const wx_grid *g;
        int have;
        if (!lsel[k] || (rc = read_cand(s, c, k, a, b, &g, &have)) || !have) continue;
        for (size_t p = 0; p < (size_t)g->nlat * g->nlon; p++)
            if (isfinite(a[p])) {
                double v = a[p] * st->scale + st->offset;
                lo = fmin(lo, v), hi = fmax(hi, v);
            }
    }
    free(a), free(b);
    WX_TRY(rc);
    if (!isfinite(lo)) lo = 0, hi = 1;
    if (s->spread) lo = 0, hi = hi > 0 ? hi : 1;
    if (hi - lo < 1e-12 * fmax(1, fabs(lo))) lo -= 0.5, hi += 0.5;
    double step = nice_step(hi - lo, 8);
    lo = floor(lo / step) * step, hi = ceil(hi / step) * step;
    double s0 = st->stops[0].v, s1 = st->stops[st->nstops - 1].v;
    for (int k = 0; k < st->nstops; k++) st->stops[k].v = lo + (st->stops[k].v - s0) / (s1 - s0) * (hi - lo);
    st->vmin = lo, st->vmax = hi;
    return WX_OK;
}

/* The style, names and title of candidate c. */
static void describe(const scan *s, const cand *c, int celsius, wx_viewer_var *v) {
    const group *g = &s->groups[c->u_group];
    memset(v, 0, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", c->id);
    v->level = g->kind == WX_LEVEL_PRESSURE ? g->level : 0;
    if (c->v_group >= 0) {
        snprintf(v->param, sizeof v->param, "%s", v->level > 0 ? "ws" : c->id);
        snprintf(v->stored_units, sizeof v->stored_units, "m s-1");
        if (v->level > 0) snprintf(v->name, sizeof v->name, "Wind speed at %g hPa", v->level);
        else snprintf(v->name, sizeof v->name, "%.*s m wind speed", (int)strlen(c->id) - 2, c->id);
    } else {
        snprintf(v->param, sizeof v->param, "%s", g->param);
        snprintf(v->stored_units, sizeof v->stored_units, "%s", g->entry ? g->entry->cf_units : "");
        snprintf(v->name, sizeof v->name, "%s", g->entry ? g->entry->long_name : g->param);
        if (v->level > 0) snprintf(v->name + strlen(v->name), sizeof v->name - strlen(v->name),
                                   " at %g hPa", v->level);
    }
    wx_map_style_for(v->param, v->level, NULL, celsius, &v->style);
    if (!strcmp(v->style.id, "geopotential") && v->level > 0)
        snprintf(v->name, sizeof v->name, "Geopotential height at %g hPa", v->level);
    if (s->spread) {
        /* hypot of the components' standard deviations is the wind vector's spread */
        char n[sizeof v->name];
        snprintf(n, sizeof n, "%s", v->name);
        if (isupper((unsigned char)n[0]) && islower((unsigned char)n[1]))
            n[0] = (char)tolower((unsigned char)n[0]);
        if (c->v_group >= 0 && v->level > 0) snprintf(n, sizeof n, "the wind vector at %g hPa", v->level);
        else if (c->v_group >= 0) snprintf(n, sizeof n, "the %.*s m wind vector",
                                           (int)strlen(c->id) - 2, c->id);
        snprintf(v->name, sizeof v->name, "Ensemble spread of %.*s", (int)sizeof v->name - 20, n);
        wx_map_style_spread(v->param, v->level, NULL, &v->style);
    }
    v->name[0] = (char)toupper((unsigned char)v->name[0]);
}

typedef struct {
    int var;  /* >= 0: a PNG of variable `var`; else wind layer -var-1 */
    int lead;
} job;

typedef struct {
    const wx_export_opts *o;
    const scan *s;
    const cand *c;        /* [nvars] the exported candidates */
    wx_viewer_var *vars;  /* [nvars] */
    wx_viewer_wind *winds;
    const int *wind_pair; /* [nwinds] candidate index of each layer's pair (in c_all) */
    const cand *c_all;
    const wx_coastline *coast;
} ctx;

static wx_status run_job(const ctx *x, const job *j, wx_map_layout *lay) {
    const scan *s = x->s;
    size_t np = max_points(s);
    float *a = wx_malloc(sizeof(float) * np), *b = wx_malloc(sizeof(float) * np);
    char tag[32], path[4400], path2[4400];
    wx_viewer_lead_tag(s->lead_s[j->lead], tag, sizeof tag);
    const wx_grid *g = NULL;
    int have = 0;
    wx_status st = WX_OK;
    if (j->var >= 0) {
        wx_viewer_var *v = &x->vars[j->var];
        st = read_cand(s, &x->c[j->var], j->lead, a, b, &g, &have);
        if (st == WX_OK && have) {
            char t1[256], t2[256];
            wx_map_titles(v->param, v->level, &v->style, s->valid[j->lead],
                          s->has_init ? s->lead_s[j->lead] : -1, t1, sizeof t1, t2, sizeof t2);
            if (x->c[j->var].v_group >= 0 && v->level <= 0)
                snprintf(t1, sizeof t1, "%s (from u/v) [%s]", v->name, v->style.units);
            if (s->spread) snprintf(t1, sizeof t1, "%s (std. dev.) [%s]", v->name, v->style.units);
            wx_map_opts mo;
            wx_map_opts_default(&mo);
            mo.width = x->o->width, mo.coast = x->coast, mo.title = t1, mo.subtitle = t2;
            snprintf(path, sizeof path, "%s/maps/%s_%s.png", x->o->output, v->id, tag);
            st = wx_map_write_png(path, g, a, &v->style, &mo, lay);
            if (st == WX_OK) v->files[j->lead] = strdup(path + strlen(x->o->output) + 1);
        }
    } else {
        int w = -j->var - 1;
        wx_viewer_wind *l = &x->winds[w];
        const cand *c = &x->c_all[x->wind_pair[w]];
        int fu = s->groups[c->u_group].field[j->lead], fv = s->groups[c->v_group].field[j->lead];
        if (fu >= 0 && fv >= 0) {
            g = &wx_source_info(s->src, fu)->grid;
            st = wx_source_read(s->src, fu, WX_MISSING_NAN, a);
            if (st == WX_OK) st = wx_source_read(s->src, fv, WX_MISSING_NAN, b);
            wx_viewer_wind_header h = {s->init, s->lead_s[j->lead], l->level > 0 ? 100 : 103,
                                       l->level > 0 ? l->level * 100 : l->height_m,
                                       x->o->wind_max_nlon > 0 ? x->o->wind_max_nlon : 360};
            char key[64];
            snprintf(key, sizeof key, "%s_%s", l->id, tag);
            snprintf(path, sizeof path, "%s/wind/%s.json", x->o->output, key);
            snprintf(path2, sizeof path2, "%s/wind/%s.js", x->o->output, key);
            if (st == WX_OK) st = wx_viewer_write_wind(path, path2, key, g, a, b, &h);
            if (st == WX_OK) l->files[j->lead] = strdup(path + strlen(x->o->output) + 1);
        }
    }
    free(a), free(b);
    return st;
}

/* Runs the jobs on OpenMP threads; the first failing job (in job order) gives the error, so the
 * message does not depend on scheduling. */
static wx_status run_jobs(const ctx *x, const job *jobs, int n, wx_map_layout *lays) {
    wx_status *st = wx_calloc((size_t)n + 1, sizeof(wx_status));
    char **msg = wx_calloc((size_t)n + 1, sizeof(char *));
    int nt = x->o->threads > 0 ? x->o->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic) num_threads(nt)
    for (int k = 0; k < n; k++) {
        st[k] = run_job(x, &jobs[k], &lays[k]);
        if (st[k]) msg[k] = strdup(wx_error_message());
    }
    wx_status rc = WX_OK;
    for (int k = 0; k < n; k++) {
        if (st[k] && rc == WX_OK) rc = wx_error_set(st[k], "%s", msg[k] ? msg[k] : "export failed");
        free(msg[k]);
    }
    free(st), free(msg);
    return rc;
}

static const char *base_name(const char *p) {
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* Every option that can be wrong on its own, before anything is read or written (a usage error
 * must leave no half-made folder behind). --vars and --leads need the file and are checked after
 * the scan, still before the first write. */
static wx_status check_opts(const wx_export_opts *o) {
    if (!o->forecast || !o->forecast[0] || !o->output || !o->output[0])
        return wx_error_set(WX_ERR_USAGE, "export: a forecast file and --output DIR are required");
    int even = o->width & ~1; /* wx_map_render rounds the width down to even */
    if (o->width < 0 || (o->width > 0 && (even < WX_MAP_WIDTH_MIN || even > WX_MAP_WIDTH_MAX)))
        return wx_error_set(WX_ERR_USAGE, "--width %d: expected %d..%d pixels (or 0: from the "
                                          "grid)", o->width, WX_MAP_WIDTH_MIN, WX_MAP_WIDTH_MAX);
    if (o->wind_max_nlon < 0 || o->wind_max_nlon == 1)
        return wx_error_set(WX_ERR_USAGE, "--wind-columns %d: expected at least 2 (or 0: 360)",
                            o->wind_max_nlon);
    if (o->threads < 0)
        return wx_error_set(WX_ERR_USAGE, "--threads %d: expected 0 (OpenMP's default) or more",
                            o->threads);
    return WX_OK;
}

wx_status wx_export_run(const wx_export_opts *o, wx_export_result *r) {
    memset(r, 0, sizeof *r);
    WX_TRY(check_opts(o));
    scan s;
    wx_status st = scan_file(o->forecast, &s);
    int nc = 0, nw = 0, nv = 0, nl = 0, nj = 0;
    cand *c = NULL, *cv = NULL;
    wx_viewer_wind *w = NULL;
    wx_viewer_var *vars = NULL;
    int *vsel = NULL, *lsel = NULL, *pair = NULL, *lmap = NULL;
    job *jobs = NULL;
    wx_map_layout *lays = NULL;
    wx_coastline coast = {0};
    int have_coast = 0;
    if (st) goto done;
    c = wx_calloc((size_t)2 * s.ngroups + 1, sizeof(cand));
    w = wx_calloc((size_t)s.ngroups + 1, sizeof(wx_viewer_wind));
    vsel = wx_calloc((size_t)2 * s.ngroups + 1, sizeof(int));
    lsel = wx_calloc((size_t)s.nleads, sizeof(int));
    nc = make_cands(&s, c, w, &nw);
    if (!o->wind || s.spread) nw = 0; /* particles of standard deviations would show no flow */
    if ((st = select_vars(&s, c, nc, o->vars, vsel)) || (st = select_leads(&s, o->leads, lsel)))
        goto done;
    /* Keep only the selected leads: compact the scan's lead arrays and field tables. */
    lmap = wx_malloc(sizeof(int) * (size_t)s.nleads);
    for (int k = 0; k < s.nleads; k++) lmap[k] = lsel[k] ? nl++ : -1;
    for (int k = 0; k < s.nleads; k++)
        if (lmap[k] >= 0) s.valid[lmap[k]] = s.valid[k], s.lead_s[lmap[k]] = s.lead_s[k];
    for (int g = 0; g < s.ngroups; g++)
        for (int k = 0; k < s.nleads; k++)
            if (lmap[k] >= 0) s.groups[g].field[lmap[k]] = s.groups[g].field[k];
    s.nleads = nl;
    for (int k = 0; k < nl; k++) lsel[k] = 1;

    cv = wx_calloc((size_t)nc + 1, sizeof(cand));
    vars = wx_calloc((size_t)nc + 1, sizeof(wx_viewer_var));
    for (int k = 0; k < nc; k++) {
        if (!vsel[k]) continue;
        cv[nv] = c[k];
        describe(&s, &c[k], o->celsius, &vars[nv]);
        vars[nv].files = wx_calloc((size_t)nl, sizeof(char *));
        nv++;
        if ((st = fix_range(&s, &c[k], lsel, &vars[nv - 1].style))) goto done;
    }
    pair = wx_calloc((size_t)nw + 1, sizeof(int));
    for (int k = 0; k < nc; k++)
        if (c[k].wind >= 0 && c[k].wind < nw) pair[c[k].wind] = k;
    for (int l = 0; l < nw; l++) w[l].files = wx_calloc((size_t)nl, sizeof(char *));

    if (o->coast) {
        char cp[512];
        wx_coastline_path('l', cp, sizeof cp);
        if ((st = wx_coastline_load(cp, 1, &coast))) {
            wx_error_wrap(st, "coastlines (install gmt-gshhg-low, set WX_GSHHG_DIR, or pass "
                              "--no-coast): ");
            goto done;
        }
        have_coast = 1;
    }
    if ((st = wx_mkdir_p(o->output))) goto done;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/maps", o->output);
    if ((st = wx_mkdir_p(dir))) goto done;
    snprintf(dir, sizeof dir, "%s/wind", o->output);
    if (nw > 0 && (st = wx_mkdir_p(dir))) goto done;

    jobs = wx_malloc(sizeof(job) * (size_t)((nv + nw) * nl + 1));
    for (int v = 0; v < nv; v++)
        for (int k = 0; k < nl; k++) jobs[nj++] = (job){v, k};
    for (int l = 0; l < nw; l++)
        for (int k = 0; k < nl; k++) jobs[nj++] = (job){-l - 1, k};
    lays = wx_calloc((size_t)nj + 1, sizeof(wx_map_layout));
    ctx x = {o, &s, cv, vars, w, pair, c, have_coast ? &coast : NULL};
    if ((st = run_jobs(&x, jobs, nj, lays))) goto done;
    for (int k = 0; k < nj; k++)
        if (jobs[k].var >= 0 && vars[jobs[k].var].files[jobs[k].lead]) {
            vars[jobs[k].var].layout = lays[k];
            r->npng++;
        } else if (jobs[k].var < 0 && w[-jobs[k].var - 1].files[jobs[k].lead]) {
            r->nwind_files++;
        }

    /* The manifest last: it names only files that are already in place. */
    if ((st = wx_viewer_write_assets(o->output))) goto done;
    wx_viewer_manifest m = {s.spread ? "wxcast ensemble spread" : "wxcast forecast",
                            base_name(o->forecast), s.has_init, s.init, nl,
                            s.lead_s, s.valid, -180, nv, vars, nw, w};
    st = wx_viewer_write_manifest(o->output, &m);
    r->nvars = nv, r->nleads = nl;
done:
    for (int v = 0; v < nv; v++) {
        for (int k = 0; k < nl; k++) free(vars[v].files[k]);
        free(vars[v].files);
    }
    for (int l = 0; w && l < nw; l++) {
        for (int k = 0; w[l].files && k < nl; k++) free(w[l].files[k]);
        free(w[l].files);
    }
    if (have_coast) wx_coastline_free(&coast);
    free(c), free(cv), free(w), free(vars), free(vsel), free(lsel), free(pair), free(lmap);
    free(jobs), free(lays);
    scan_free(&s);
    return st;
}
