/* `wxcast export`, the products (export_priv.h): each variable's style, names and colour range
 * across the exported leads, and the PNG maps and wind-particle layers, one job per (variable or
 * layer, lead), run on OpenMP threads. */
#include <ctype.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_progress.h"
#include "infer/export_priv.h"

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
    size_t n = (size_t)iu->grid.nlat * iu->grid.nlon, p = 0;
    if (c->v_group >= 0) {
        if (!wx_grid_same(&iu->grid, &iv->grid, 1e-9))
            return wx_error_set(WX_ERR_RUN, "%s: %s and %s are on different grids",
                                wx_source_path(s->src), iu->name, iv->name);
        WX_TRY(wx_source_read(s->src, fv, WX_MISSING_NAN, tmp));
        for (size_t q = 0; q < n; q++) out[q] = hypotf(out[q], tmp[q]);
    }
    /* a field of fill values only (GraphCast's target-only tp at lead 0 without an analysis tp)
     * is no map: the manifest says null, as for a lead the file lacks */
    while (p < n && isnan(out[p])) p++;
    *have = p < n;
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

/* A style without a fixed range gets the min..max over every exported lead (0..max for a
 * spread), rounded outward to a nice step, and its stops stretched over it: one colour scale for
 * the whole slider. */
wx_status wx_export_range_fix(const scan *s, const cand *c, const int *lsel, wx_map_style *st) {
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
    wx_map_style_fit(st, lo, hi, s->spread);
    return WX_OK;
}

/* The style, names and title of candidate c. */
void wx_export_var_describe(const scan *s, const cand *c, int celsius, wx_viewer_var *v) {
    const group *g = &s->groups[c->u_group];
    memset(v, 0, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", c->id);
    v->level = g->kind == WX_LEVEL_PRESSURE ? g->level : 0;
    if (c->v_group >= 0) {
        /* "%.*s" truncates as "%s" would; it tells GCC the copy fits, which it cannot see here
         * since this function left its one caller's file (-Wformat-truncation) */
        snprintf(v->param, sizeof v->param, "%.*s", (int)sizeof v->param - 1,
                 v->level > 0 ? "ws" : c->id);
        snprintf(v->stored_units, sizeof v->stored_units, "m s-1");
        if (v->level > 0) snprintf(v->name, sizeof v->name, "Wind speed at %g hPa", v->level);
        else snprintf(v->name, sizeof v->name, "%.*s m wind speed", (int)strlen(c->id) - 2, c->id);
    } else {
        snprintf(v->param, sizeof v->param, "%s", g->param);
        snprintf(v->stored_units, sizeof v->stored_units, "%s", g->entry ? g->entry->cf_units : "");
        snprintf(v->name, sizeof v->name, "%s", g->entry ? g->entry->long_name : g->param);
        if (v->level > 0) snprintf(v->name + strlen(v->name), sizeof v->name - strlen(v->name),
                                   " at %g hPa", v->level);
        /* an accumulation says over what ("Total precipitation, 6h sum"): the fields' own period */
        int64_t acc = 0;
        for (int k = 0; k < s->nleads && !acc; k++)
            if (g->field[k] >= 0) acc = wx_source_info(s->src, g->field[k])->accum_s;
        if (acc > 0) {
            char d[32];
            wx_time_format_duration(acc, d);
            snprintf(v->name + strlen(v->name), sizeof v->name - strlen(v->name), ", %s sum", d);
        }
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

static wx_status run_job(const render_ctx *x, const render_job *j, wx_map_layout *lay) {
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
            const cand *cj = &x->c[j->var];
            int fi = cj->v_group < 0 ? s->groups[cj->u_group].field[j->lead] : -1;
            wx_map_titles(v->param, v->level, fi >= 0 ? wx_source_info(s->src, fi)->accum_s : 0,
                          &v->style, s->valid[j->lead],
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
wx_status wx_export_jobs_run(const render_ctx *x, const render_job *jobs, int n,
                             wx_map_layout *lays) {
    wx_status *st = wx_calloc((size_t)n + 1, sizeof(wx_status));
    char **msg = wx_calloc((size_t)n + 1, sizeof(char *));
    int nt = x->o->threads > 0 ? x->o->threads : omp_get_max_threads(), done = 0;
    wx_progress p; /* maps and wind layers: ~0.1-1 s each, hundreds for a 0.25-degree forecast */
    wx_progress_start(&p, "export", n, "files");
#pragma omp parallel for schedule(dynamic) num_threads(nt)
    for (int k = 0; k < n; k++) {
        st[k] = run_job(x, &jobs[k], &lays[k]);
        if (st[k]) msg[k] = strdup(wx_error_message());
#pragma omp critical(export_progress)
        wx_progress_update(&p, ++done, NULL);
    }
    wx_progress_finish(&p);
    wx_status rc = WX_OK;
    for (int k = 0; k < n; k++) {
        if (st[k] && rc == WX_OK) rc = wx_error_set(st[k], "%s", msg[k] ? msg[k] : "export failed");
        free(msg[k]);
    }
    free(st), free(msg);
    return rc;
}
