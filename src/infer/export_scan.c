/* `wxcast export`, what the forecast file offers (export_priv.h): its (parameter, level) groups
 * and leads, the candidate variables (u/v pairs as wind speed and a particle layer), and the
 * choice of --vars and --leads among them. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infer/export_priv.h"
#include "infer/forecast_init.h"
#include "io/forecast_file.h"

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

/* The initial time field f belongs to: a lead axis' (WeatherBench2's time, wxcast's files), or
 * a GRIB message's reference time (dataDate/dataTime); 0 when it states none. */
static int field_init(const wx_field_info *f, wx_time *t) {
    if (f->has_init) *t = f->init;
    else if (f->has_ref && !f->accum_s) *t = f->ref;
    /* an accumulation's reference time is where its sum starts (ERA5's tp: 06/18 UTC with
     * steps), not a run: it says nothing about which run the file holds */
    return f->has_init || (f->has_ref && !f->accum_s);
}

/* Files of forecasts from several initial times: the maps are of one, `pick`. Without it a file
 * of forecasts from several (WeatherBench2's layout, GRIB runs with steps: the leads would count
 * from one of them) is refused; a series of analyses (GRIB messages valid at their own reference
 * times) is drawn whole. */
static wx_status pick_init(scan *s, const wx_time *pick, int minmem, int *found) {
    int nf = wx_source_count(s->src), n = 0, leads = 0;
    wx_time *inits = wx_malloc(sizeof(wx_time) * (size_t)(nf + 1)), t;
    char list[512] = "", tt[32];
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(s->src, i);
        if (!f->has_time || f->member != minmem || !field_init(f, &t)) continue;
        leads |= f->has_init || f->valid != t; /* forecasts, not a series of analyses */
        int k = 0;
        while (k < n && inits[k] != t) k++;
        if (k == n) inits[n++] = t;
    }
    qsort(inits, (size_t)n, sizeof(wx_time), cmp_time);
    int hit = !pick || (n == 0 && *found && s->init == *pick);
    for (int k = 0; pick && k < n; k++) hit |= inits[k] == *pick;
    for (int k = 0; k < n && k < 6; k++) {
        wx_time_format(inits[k], tt);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", tt);
    }
    if (n > 6) snprintf(list + strlen(list), sizeof list - strlen(list), ", ...");
    if (n == 0 && *found) wx_time_format(s->init, list);
    wx_status st = WX_OK;
    if (!hit) {
        char want[32];
        wx_time_format(*pick, want);
        st = wx_error_set(WX_ERR_USAGE, "--time %s: %s holds no forecast from that initial time "
                          "(%s: %s)", want, wx_source_path(s->src), n > 1 ? "its initial times"
                          : "its initial time", list[0] ? list : "none stated");
    } else if (!pick && n > 1 && leads) {
        st = wx_error_set(WX_ERR_USAGE, "%s holds forecasts from %d initial times (%s): give "
                          "--time with the one to export", wx_source_path(s->src), n, list);
    }
    s->n_inits = n;
    if (st == WX_OK && pick) s->init = *pick, *found = 1, s->picked = 1;
    else if (st == WX_OK && n == 1) s->init = inits[0], *found = 1;
    free(inits);
    return st;
}

/* Whether field f belongs to the maps: the first member, of the chosen initial time. */
static int wanted(const scan *s, const wx_field_info *f, int minmem) {
    wx_time t;
    if (!f->has_time || f->member != minmem) return 0;
    if (f->has_init) return f->init == s->init;
    return !s->picked || !field_init(f, &t) || t == s->init;
}

wx_status wx_export_scan_file(const char *path, const wx_time *pick, scan *s) {
    memset(s, 0, sizeof *s);
    WX_TRY(wx_source_open(path, &s->src));
    int found = 0; /* without a reference time the first valid time stands for the init */
    if (wx_source_format_of(s->src) == WX_FORMAT_NETCDF) {
        WX_TRY(wx_forecast_file_ref_time(path, &s->init, &found));
        WX_TRY(wx_forecast_file_is_spread(path, &s->spread));
    } else {
        wx_forecast_file_grib_ref_time(s->src, &s->init, &found);
    }
    int nf = wx_source_count(s->src), minmem = 1 << 30;
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(s->src, i);
        if (f->has_time && f->member < minmem) minmem = f->member;
    }
    WX_TRY(pick_init(s, pick, minmem, &found));
    s->valid = wx_malloc(sizeof(wx_time) * (size_t)(nf + 1));
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(s->src, i);
        if (!wanted(s, f, minmem) || find_lead(s, f->valid) >= 0) continue;
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
        if (!wanted(s, f, minmem)) continue;
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
        int *slot = &s->groups[g].field[find_lead(s, f->valid)];
        if (*slot >= 0) { /* two fields for one map: which to draw is not ours to guess */
            char a[512], b[512];
            wx_field_describe(s->src, wx_source_info(s->src, *slot), a, sizeof a);
            wx_field_describe(s->src, f, b, sizeof b);
            return wx_error_set(s->n_inits > 1 ? WX_ERR_USAGE : WX_ERR_RUN, "%s and %s are the "
                                "same variable at the same valid time: one map cannot show both%s",
                                a, b, s->n_inits > 1 ?
                                " (forecasts from several initial times: give --time with one)" : "");
        }
        *slot = i;
    }
    return WX_OK;
}

void wx_export_scan_free(scan *s) {
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
int wx_export_cands_make(const scan *s, cand *c, wx_viewer_wind *w, int *nw) {
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
wx_status wx_export_vars_select(const scan *s, cand *c, int n, const char *list, int *sel) {
    return wx_export_vars_select_as(s, c, n, list, "--vars", wx_source_path(s->src), sel);
}

wx_status wx_export_vars_select_as(const scan *s, cand *c, int n, const char *list, const char *what,
                                   const char *file, int *sel) {
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
            st = wx_error_set(WX_ERR_USAGE, "%s: '%s' is not in %s (variables: %s)", what, t, file,
                              known);
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
wx_status wx_export_leads_select(const scan *s, const char *list, int *sel) {
    for (int k = 0; k < s->nleads; k++) sel[k] = list ? 0 : 1;
    if (!list) return WX_OK;
    char *buf = wx_strdup(list);
    wx_status st = WX_OK;
    int ntok = 0;
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t && st == WX_OK;
         t = strtok_r(NULL, ", ", &save), ntok++) {
        double a, b, step;
        if ((st = wx_export_lead_item(t, "--leads", &a, &b, &step))) break;
        int hit = 0, nhit = 0;
        for (int k = 0; k < s->nleads; k++)
            if (wx_export_lead_in(s->lead_s[k] / 3600.0, a, b, step)) sel[k] = hit = 1, nhit++;
        /* a stepped range asks for every value up to the file's last lead: one the file lacks
         * (0-48/5 on a 6-hourly file) is a usage error, not a silent gap */
        double last = s->nleads ? s->lead_s[s->nleads - 1] / 3600.0 : 0;
        int want = step > 0 && a <= last + 1e-9 ? (int)floor((fmin(b, last) - a) / step + 1e-9) + 1 : 0;
        if (hit && want > nhit) {
            st = wx_error_set(WX_ERR_USAGE, "--leads: '%s' asks for %d leads up to %gh, %s has %d "
                              "of them (its leads are every %gh): give a step it has",
                              t, want, fmin(b, last), wx_source_path(s->src), nhit,
                              s->nleads > 1 ? (s->lead_s[1] - s->lead_s[0]) / 3600.0 : 0.0);
            break;
        }
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
    if (st == WX_OK && ntok == 0) /* "" or " ": no maps, and an earlier export's removed */
        st = wx_error_set(WX_ERR_USAGE, "--leads '%s': names no lead (leave it out for all)", list);
    return st;
}
