/* `wxcast export`: forecast file → PNG maps, wind layers, manifest and viewer (see export.h).
 * This file checks the options and runs the export: export_scan.c reads what the file offers and
 * applies --vars and --leads, export_render.c styles the variables and writes the maps and wind
 * layers (shared types: export_priv.h); the manifest comes last. */
#include "infer/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "infer/export_priv.h"
#include "io/coastline.h"

void wx_export_opts_default(wx_export_opts *o) {
    memset(o, 0, sizeof *o);
    o->celsius = 1;
    o->wind = 1;
    o->coast = 1;
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

/* maps/ and wind/ are export's own: what an earlier export left there (other variables, leads or
 * grid) would otherwise stay beside the new manifest, in a folder meant to be published as it is.
 * They are removed only after the new export is complete, so that a failed export leaves the
 * earlier one whole (its manifest names only files that still exist). */
typedef struct {
    int wind;            /* 0: maps/ (*.png), 1: wind/ (*.json and its *.js twin) */
    const char **keep;   /* this export's files, relative to the output ("maps/x.png") */
    int nkeep;
} stale_ctx;

static int is_stale(const char *name, void *ctx) {
    const stale_ctx *k = ctx;
    const char *ext = strrchr(name, '.');
    if (!ext || ext == name) return 0;
    char rel[600];
    if (!k->wind) {
        if (strcmp(ext, ".png")) return 0;
        snprintf(rel, sizeof rel, "maps/%s", name);
    } else {
        if (strcmp(ext, ".json") && strcmp(ext, ".js")) return 0;
        snprintf(rel, sizeof rel, "wind/%.*s.json", (int)(ext - name), name);
    }
    for (int i = 0; i < k->nkeep; i++)
        if (!strcmp(k->keep[i], rel)) return 0;
    return 1;
}

/* Removes the earlier exports' maps and wind files that this export did not write. */
static void remove_stale(const char *output, const wx_viewer_var *vars, int nv,
                         const wx_viewer_wind *w, int nw, int nl) {
    const char **keep = wx_calloc((size_t)(nv + nw) * (size_t)nl + 1, sizeof(char *));
    int n = 0;
    for (int v = 0; v < nv; v++)
        for (int k = 0; k < nl; k++)
            if (vars[v].files[k]) keep[n++] = vars[v].files[k];
    for (int l = 0; l < nw; l++)
        for (int k = 0; k < nl; k++)
            if (w[l].files[k]) keep[n++] = w[l].files[k];
    char dir[4200];
    stale_ctx maps = {0, keep, n}, wind = {1, keep, n};
    snprintf(dir, sizeof dir, "%s/maps", output);
    int stale = wx_fs_unlink_matching(dir, is_stale, &maps);
    snprintf(dir, sizeof dir, "%s/wind", output);
    stale += wx_fs_unlink_matching(dir, is_stale, &wind);
    if (stale) wx_log_info("export: removed %d maps and wind files of an earlier export in %s", stale, output);
    free(keep);
}

wx_status wx_export_check_vars(const char *forecast, const char *vars, const char *what,
                               const char *file) {
    if (!vars) return WX_OK;
    scan s;
    wx_status st0 = wx_export_scan_file(forecast, NULL, &s);
    if (st0 != WX_OK) { /* a failed scan leaves what it had made for scan_free */
        wx_export_scan_free(&s);
        return st0;
    }
    cand *c = wx_calloc((size_t)2 * s.ngroups + 1, sizeof(cand));
    wx_viewer_wind *w = wx_calloc((size_t)s.ngroups + 1, sizeof(wx_viewer_wind));
    int *sel = wx_calloc((size_t)2 * s.ngroups + 1, sizeof(int)), nw = 0;
    int nc = wx_export_cands_make(&s, c, w, &nw);
    wx_status st = wx_export_vars_select_as(&s, c, nc, vars, what, file, sel);
    free(c), free(w), free(sel);
    wx_export_scan_free(&s);
    return st;
}

wx_status wx_export_run(const wx_export_opts *o, wx_export_result *r) {
    memset(r, 0, sizeof *r);
    WX_TRY(check_opts(o));
    scan s;
    wx_status st = wx_export_scan_file(o->forecast, o->has_time ? &o->time : NULL, &s);
    int nc = 0, nw = 0, nv = 0, nl = 0, nj = 0;
    cand *c = NULL, *cv = NULL;
    wx_viewer_wind *w = NULL;
    wx_viewer_var *vars = NULL;
    int *vsel = NULL, *lsel = NULL, *pair = NULL, *lmap = NULL;
    render_job *jobs = NULL;
    wx_map_layout *lays = NULL;
    wx_coastline coast = {0};
    int have_coast = 0;
    if (st) goto done;
    c = wx_calloc((size_t)2 * s.ngroups + 1, sizeof(cand));
    w = wx_calloc((size_t)s.ngroups + 1, sizeof(wx_viewer_wind));
    vsel = wx_calloc((size_t)2 * s.ngroups + 1, sizeof(int));
    lsel = wx_calloc((size_t)s.nleads, sizeof(int));
    nc = wx_export_cands_make(&s, c, w, &nw);
    if (!o->wind || s.spread) nw = 0; /* particles of standard deviations would show no flow */
    if ((st = wx_export_vars_select(&s, c, nc, o->vars, vsel)) || (st = wx_export_leads_select(&s, o->leads, lsel)))
        goto done;
    if (o->vars && nw > 0) { /* --vars: only the layers of the selected wind speeds (10ws, ws850) */
        int *lnew = wx_malloc(sizeof(int) * (size_t)nw), kept = 0;
        for (int l = 0; l < nw; l++) lnew[l] = -1;
        for (int k = 0; k < nc; k++)
            if (vsel[k] && c[k].wind >= 0 && c[k].wind < nw) lnew[c[k].wind] = 0;
        for (int l = 0; l < nw; l++)
            if (lnew[l] == 0) w[kept] = w[l], lnew[l] = kept++;
        for (int k = 0; k < nc; k++)
            if (c[k].wind >= 0 && c[k].wind < nw) c[k].wind = lnew[c[k].wind];
        nw = kept;
        free(lnew);
    }
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
        wx_export_var_describe(&s, &c[k], o->celsius, &vars[nv]);
        vars[nv].files = wx_calloc((size_t)nl, sizeof(char *));
        nv++;
        if ((st = wx_export_range_fix(&s, &c[k], lsel, &vars[nv - 1].style))) goto done;
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

    jobs = wx_malloc(sizeof(render_job) * (size_t)((nv + nw) * nl + 1));
    for (int v = 0; v < nv; v++)
        for (int k = 0; k < nl; k++) jobs[nj++] = (render_job){v, k};
    for (int l = 0; l < nw; l++)
        for (int k = 0; k < nl; k++) jobs[nj++] = (render_job){-l - 1, k};
    lays = wx_calloc((size_t)nj + 1, sizeof(wx_map_layout));
    render_ctx x = {o, &s, cv, vars, w, pair, c, have_coast ? &coast : NULL};
    if ((st = wx_export_jobs_run(&x, jobs, nj, lays))) goto done;
    for (int k = 0; k < nj; k++)
        if (jobs[k].var >= 0 && vars[jobs[k].var].files[jobs[k].lead]) {
            vars[jobs[k].var].layout = lays[k];
            r->npng++;
        } else if (jobs[k].var < 0 && w[-jobs[k].var - 1].files[jobs[k].lead]) {
            r->nwind_files++;
        }

    /* The manifest last: it names only files that are already in place. */
    if ((st = wx_viewer_write_assets(o->output))) goto done;
    /* a file without an initial time (an analysis, a dump, an ERA5 extract) is no forecast */
    wx_viewer_manifest m = {s.spread ? "wxcast ensemble spread" : s.has_init ? "wxcast forecast" : "wxcast fields",
                            base_name(o->forecast), s.has_init, s.init, nl,
                            s.lead_s, s.valid, -180, nv, vars, nw, w};
    st = wx_viewer_write_manifest(o->output, &m);
    if (st == WX_OK) remove_stale(o->output, vars, nv, w, nw, nl);
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
    wx_export_scan_free(&s);
    return st;
}
