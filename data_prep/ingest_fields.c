/* Which source field is each archive channel at each valid time (ingest_priv.h), the error when
 * none is, and decoding it onto the archive grid (conservative regridding for grid.resolution,
 * hourly accumulations summed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_priv.h"

int wx_ingest_ix_cmp(const void *a, const void *b) {
    const wx_field_info *x = ((const ix_entry *)a)->f, *y = ((const ix_entry *)b)->f;
    wx_time tx = x->has_time ? x->valid : INT64_MIN, ty = y->has_time ? y->valid : INT64_MIN;
    if (tx != ty) return tx < ty ? -1 : 1;
    const ix_entry *ea = a, *eb = b;
    if (ea->src != eb->src) return ea->src - eb->src;
    return ea->idx - eb->idx;
}

/* The field for variable v valid at t with accumulation `accum` (-1: any); NULL when absent. */
const ix_entry *wx_ingest_find(ingest_ctx *c, const wx_recipe_var *v, wx_time t, int64_t accum,
                            wx_status *st) {
    int lo = 0, hi = c->nix;
    int stat = v->kind == WX_LEVEL_STATIC;
    if (!stat) {
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            const wx_field_info *f = c->ix[mid].f;
            if ((f->has_time ? f->valid : INT64_MIN) < t) lo = mid + 1;
            else hi = mid;
        }
    }
    const ix_entry *hit = NULL;
    for (int i = lo; i < c->nix; i++) {
        const wx_field_info *f = c->ix[i].f;
        if (!stat && (!f->has_time || f->valid != t)) break;
        if (strcmp(f->param, v->param)) continue;
        if (stat && f->varies) continue; /* one time of a time-varying field is no constant */
        if ((v->kind == WX_LEVEL_PRESSURE) != (f->kind == WX_LEVEL_PRESSURE)) continue;
        if (v->kind == WX_LEVEL_PRESSURE && fabs(f->level - v->level) > 1e-6) continue;
        if (!(f->member == c->r.member || (f->member < 0 && c->r.member == 0))) continue;
        if (accum >= 0 && f->accum_s != accum) continue;
        if (hit && !stat) {
            char a[600], b[600];
            wx_field_describe(c->src[hit->src], hit->f, a, sizeof a);
            wx_field_describe(c->src[c->ix[i].src], f, b, sizeof b);
            *st = wx_error_set(WX_ERR_RUN, "variable '%s': two source fields for the same time: %s "
                               "and %s", v->name, a, b);
            return NULL;
        }
        hit = &c->ix[i];
        if (stat) break;
    }
    return hit;
}

static int cmp_time(const void *x, const void *y) {
    wx_time a = *(const wx_time *)x, b = *(const wx_time *)y;
    return a < b ? -1 : a > b;
}

/* "; the sources hold z at 500, 850 hPa, members 0-9, valid 2017-01-01T00:00 .. ...": what
 * exists of v's parameter at v's kind of level, when the level, member or time asked is not. */
static void held(const ingest_ctx *c, const wx_recipe_var *v, char *hint, size_t cap) {
    double lv[12];
    int nl = 0, more = 0, m0 = 0, m1 = -1, nt = 0;
    wx_time t0 = 0, t1 = 0;
    for (int i = 0; i < c->nix; i++) {
        const wx_field_info *f = c->ix[i].f;
        if (strcmp(f->param, v->param) || (f->kind == WX_LEVEL_PRESSURE) != (v->kind == WX_LEVEL_PRESSURE))
            continue;
        int seen = 0;
        for (int k = 0; k < nl && !seen; k++) seen = lv[k] == f->level;
        if (!seen && nl < 12) lv[nl++] = f->level;
        else if (!seen) more = 1;
        if (f->member >= 0 && (m1 < m0 || f->member < m0)) m0 = f->member;
        if (f->member >= 0 && f->member > m1) m1 = f->member;
        if (f->has_time && (!nt || f->valid < t0)) t0 = f->valid;
        if (f->has_time && (!nt || f->valid > t1)) t1 = f->valid;
        nt += f->has_time;
    }
    int n = snprintf(hint, cap, "; the sources hold %s", v->param);
    for (int k = 0; v->kind == WX_LEVEL_PRESSURE && k < nl; k++)
        n += snprintf(hint + n, cap - (size_t)n, "%s%g", k ? ", " : " at ", lv[k]);
    if (v->kind == WX_LEVEL_PRESSURE && nl) n += snprintf(hint + n, cap - (size_t)n, "%s hPa", more ? ", ..." : "");
    if (m1 >= m0) n += snprintf(hint + n, cap - (size_t)n, ", members %d-%d", m0, m1);
    char a[32], b[32], every[128] = "";
    wx_time_format(t0, a), wx_time_format(t1, b);
    if (nt > 1) { /* the spacing: a step the sources do not have (5h on 6-hourly data) */
        wx_time *tv = wx_malloc(sizeof(wx_time) * (size_t)nt);
        int k = 0;
        for (int i = 0; i < c->nix; i++) {
            const wx_field_info *f = c->ix[i].f;
            if (!strcmp(f->param, v->param) && f->has_time &&
                (f->kind == WX_LEVEL_PRESSURE) == (v->kind == WX_LEVEL_PRESSURE) && k < nt)
                tv[k++] = f->valid;
        }
        qsort(tv, (size_t)k, sizeof(wx_time), cmp_time);
        wx_time d = 0;
        for (int i = 1; i < k; i++)
            if (tv[i] > tv[i - 1] && (!d || tv[i] - tv[i - 1] < d)) d = tv[i] - tv[i - 1];
        /* times missing inside the span ("every 12h" alone claimed a complete series) */
        int64_t missing = 0;
        wx_time first_gap = 0;
        for (int i = 1; d > 0 && i < k; i++)
            if (tv[i] - tv[i - 1] > d) {
                if (!missing) first_gap = tv[i - 1] + d;
                missing += (tv[i] - tv[i - 1]) / d - 1;
            }
        free(tv);
        char dur[32];
        if (d > 0) wx_time_format_duration(d, dur), snprintf(every, sizeof every, " every %s", dur);
        if (missing) {
            char g[32];
            wx_time_format(first_gap, g);
            size_t e = strlen(every);
            snprintf(every + e, sizeof every - e, " with %lld missing (the first %s)",
                     (long long)missing, g);
        }
    }
    if (nt) snprintf(hint + n, cap - (size_t)n, ", valid %s .. %s%s (`wxcast inspect FILE` lists "
                     "each file's)", a, b, every);
}

wx_status wx_ingest_not_found(ingest_ctx *c, const wx_recipe_var *v, wx_time t) {
    char when[32], lev[32] = "";
    wx_time_format(t, when);
    if (v->kind == WX_LEVEL_PRESSURE) snprintf(lev, sizeof lev, " %g hPa", v->level);
    char hint[1024] = "";
    for (int i = 0; i < c->nix && v->kind == WX_LEVEL_STATIC; i++) {
        const wx_field_info *f = c->ix[i].f;
        if (strcmp(f->param, v->param) || !f->varies) continue;
        return wx_error_set(WX_ERR_RUN, "%s: variable '%s' (%s) is a static field, but %s's '%s' "
                            "changes from one time to the next: it is %s at some level the file does "
                            "not say (a level dimension, or a scalar level coordinate as xarray's "
                            "sel(level=...) leaves); give the recipe variable its `level:`",
                            c->r.path, v->name, v->param, wx_source_path(c->src[c->ix[i].src]),
                            f->name, v->param);
    }
    for (int i = 0; i < c->nix; i++) {
        const wx_field_info *f = c->ix[i].f;
        if (strcmp(f->param, v->param) || f->has_time || f->kind == WX_LEVEL_STATIC) continue;
        /* Monthly-mean files (ERA-Interim `month`) index fields by an axis that is not time. */
        char axis[96] = "";
        if (f->other_axis[0]) snprintf(axis, sizeof axis, " along dimension '%s'", f->other_axis);
        snprintf(hint, sizeof hint, "; %s holds '%s'%s without a valid time (no CF time coordinate "
                 "with units '<unit> since <date>'), so it cannot be matched to dates: give it a "
                 "time axis first (xarray: ds.rename({'%s': 'time'}).assign_coords(time=DATES), "
                 "written with to_netcdf; CDO cannot read a file without one)",
                 wx_source_path(c->src[c->ix[i].src]), f->name, axis,
                 f->other_axis[0] ? f->other_axis : "DIM");
        break;
    }
    int any = 0; /* a param no source holds at all: a typo in the recipe, most likely */
    for (int i = 0; i < c->nix && !any; i++) any = !strcmp(c->ix[i].f->param, v->param);
    if (!any && c->nix > 0) {
        int n = snprintf(hint, sizeof hint, "; no source holds param '%s' at any time (they hold:",
                         v->param);
        const char *listed[16];
        int nl = 0;
        for (int i = 0; i < c->nix && n < (int)sizeof hint - 40; i++) {
            const char *p = c->ix[i].f->param;
            int seen = 0;
            for (int k = 0; k < nl && !seen; k++) seen = !strcmp(listed[k], p);
            if (seen) continue;
            if (nl == 16) {
                n += snprintf(hint + n, sizeof hint - (size_t)n, " ...");
                break;
            }
            listed[nl++] = p;
            n += snprintf(hint + n, sizeof hint - (size_t)n, " %s", p);
        }
        if (n < (int)sizeof hint - 2) snprintf(hint + n, sizeof hint - (size_t)n, ")");
    }
    if (any && !hint[0]) held(c, v, hint, sizeof hint);
    return wx_error_set(WX_ERR_RUN, "%s: no source field for variable '%s' (%s%s, member %d) valid "
                        "at %s%s", c->r.path, v->name, v->param, lev, c->r.member, when, hint);
}

/* Decodes one source field onto the archive grid into out[points]. */
static wx_status decode(ingest_ctx *c, const ix_entry *e, float *out, float *fine_buf) {
    const wx_grid *g = &e->f->grid;
    if (!wx_grid_same(g, &c->fine, 1e-6)) {
        char a[160], b[160], d[600];
        wx_grid_describe(&c->fine, a, sizeof a);
        wx_grid_describe(g, b, sizeof b);
        wx_field_describe(c->src[e->src], e->f, d, sizeof d);
        return wx_error_set(WX_ERR_RUN, "%s: grid %s differs from the other sources' %s; the recipe "
                            "must not mix grids or resolutions", d, b, a);
    }
    if (c->r.resolution <= 0) /* native grid: decode straight into the caller's buffer */
        return wx_source_read(c->src[e->src], e->idx, c->r.missing, out);
    WX_TRY(wx_source_read(c->src[e->src], e->idx, c->r.missing, fine_buf));
    wx_regrid_apply(c->coarsen, fine_buf, out);
    return WX_OK;
}

/* Channel v at time t into out[points] with thread `th`'s scratch, or (out NULL) only whether
 * its source fields exist. */
static wx_status channel(ingest_ctx *c, int v, wx_time t, float *out, int th) {
    const wx_recipe_var *var = &c->r.vars[v];
    wx_status st = WX_OK;
    size_t np = (size_t)c->out.nlat * c->out.nlon;
    const ix_entry *e = wx_ingest_find(c, var, t, var->accum_s > 0 ? var->accum_s : -1, &st);
    if (st != WX_OK) return st;
    if (e || var->accum_s == 0) {
        if (!e) return wx_ingest_not_found(c, var, t);
        return out ? decode(c, e, out, c->fine_buf[th]) : WX_OK;
    }
    /* Sum of the sources' own accumulations ending at t, t-d, ..., t-(n-1)d: d is their period
     * (the CDS's hourly tp, or 6 h sums summed to WeatherBench2's 24 h), hourly when it does not
     * divide the wanted period. */
    const ix_entry *own = wx_ingest_find(c, var, t, -1, &st);
    if (st != WX_OK) return st;
    int64_t d = own && own->f->accum_s > 0 && var->accum_s % own->f->accum_s == 0 ? own->f->accum_s : 3600;
    int64_t n = var->accum_s / d;
    for (int64_t k = 0; k < n; k++) {
        const ix_entry *h = wx_ingest_find(c, var, t - k * d, d, &st);
        if (st != WX_OK) return st;
        if (!h) return wx_ingest_not_found(c, var, t - k * d);
        if (!out) continue;
        float *acc = c->acc_buf[th];
        WX_TRY(decode(c, h, k ? acc : out, c->fine_buf[th]));
        if (k)
            for (size_t p = 0; p < np; p++) out[p] += acc[p];
    }
    return WX_OK;
}

wx_status wx_ingest_make_channel(ingest_ctx *c, int v, wx_time t, float *out, int th) {
    return channel(c, v, t, out, th);
}

wx_status wx_ingest_check_fields(ingest_ctx *c) {
    const wx_archive_meta *m = &c->meta;
    for (int64_t r = 0; r < m->count; r++)
        for (int v = 0; v < c->r.nvars; v++) WX_TRY(channel(c, v, m->start + r * m->step, NULL, 0));
    return WX_OK;
}
