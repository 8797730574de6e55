#include "infer/forecast_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "meteo/wx_catalogue.h"

struct wx_forecast_attrs {
    char name[64], units[32], standard_name[96], long_name[224], cell_methods[64];
};

#define MAX_AXES 16

/* step_s: the model step, the accumulation period of an accumulated channel without its own
 * (the same period the GRIB messages' startStep..endStep span). */
static void attrs_of(const wx_archive_channel *ch, const wx_catalogue_entry *e, int per_param,
                     int64_t step_s, struct wx_forecast_attrs *a) {
    if (per_param) snprintf(a->name, sizeof a->name, "%s", e ? e->nc_name : ch->param);
    else snprintf(a->name, sizeof a->name, "%s", ch->name);
    snprintf(a->units, sizeof a->units, "%s", e && e->cf_units[0] ? e->cf_units : ch->units);
    snprintf(a->standard_name, sizeof a->standard_name, "%s", e ? e->standard_name : "");
    const char *ln = e ? e->long_name : ch->name;
    if (ch->kind == WX_LEVEL_PRESSURE && !per_param)
        snprintf(a->long_name, sizeof a->long_name, "%s at %g hPa", ln, ch->level);
    else
        snprintf(a->long_name, sizeof a->long_name, "%s", ln);
    a->cell_methods[0] = 0;
    int64_t acc = ch->accum_s > 0 ? ch->accum_s : (e && e->accumulated ? step_s : 0);
    if (acc > 0) {
        /* CF cell_methods says a sum over time; its period has no CF attribute of its own
         * without time bounds (which the instantaneous variables sharing `time` must not get),
         * so the long_name says it, worded as `wxcast dump` does. */
        char dur[32];
        wx_time_format_duration(acc, dur);
        size_t n = strlen(a->long_name);
        snprintf(a->long_name + n, sizeof a->long_name - n, ", accumulated over the %s ending at time",
                 dur);
        snprintf(a->cell_methods, sizeof a->cell_methods, "time: sum");
    }
}

/* A summary over the members (forecast_write.h): the method over "realization" (CF's standard
 * name of the members' axis, which the summary no longer has) follows any time method, as CF 7.3
 * orders methods in the order they were applied. */
static void summary_attrs(wx_ens_statistic stat, struct wx_forecast_attrs *a) {
    if (stat == WX_ENS_NONE) return;
    const char *method = stat == WX_ENS_MEAN ? "mean" : "standard_deviation";
    size_t n = strlen(a->cell_methods);
    snprintf(a->cell_methods + n, sizeof a->cell_methods - n, "%srealization: %s", n ? " " : "",
             method);
    char ln[sizeof a->long_name];
    snprintf(ln, sizeof ln, "%s", a->long_name);
    snprintf(a->long_name, sizeof a->long_name, "ensemble %s of %.*s",
             stat == WX_ENS_MEAN ? "mean" : "standard deviation", (int)sizeof ln - 32, ln);
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

void wx_forecast_writer_abort(wx_forecast_writer *f) {
    if (f->has_nc) wx_nc_writer_abort(&f->w);
    for (int k = 0; k < 2; k++) {
        if (f->has_grib[k]) wx_grib_writer_abort(&f->grib[k]);
        free(f->grib_path[k]);
    }
    free(f->chans), free(f->entries), free(f->nc_var), free(f->nc_level), free(f->attrs);
    free(f->nan_first);
    free(f->vars);
    memset(f, 0, sizeof *f);
}

/* The NetCDF layout: variables, level axes and each channel's (variable, level index). */
static wx_status open_netcdf(wx_forecast_writer *f, const wx_forecast_write_opts *o) {
    int n = f->nvars, nv = 0, naxes = 0;
    double axes[MAX_AXES][64];
    int axis_len[MAX_AXES];
    f->attrs = wx_calloc((size_t)n, sizeof *f->attrs);
    f->vars = wx_calloc((size_t)n, sizeof *f->vars);
    for (int c = 0; c < n; c++) {
        const wx_archive_channel *ch = &f->chans[c];
        const wx_catalogue_entry *e = f->entries[c];
        if (o->members > 0 || ch->kind != WX_LEVEL_PRESSURE) {
            attrs_of(ch, e, 0, f->step_s, &f->attrs[nv]);
            f->nc_var[c] = nv, f->nc_level[c] = 0;
            nv++;
            continue;
        }
        int v = -1; /* the variable of this parameter, when an earlier channel made it */
        for (int d = 0; d < c && v < 0; d++)
            if (f->chans[d].kind == WX_LEVEL_PRESSURE && !strcmp(f->chans[d].param, ch->param))
                v = f->nc_var[d];
        if (v >= 0) continue; /* level index set below, once the level set is known */
        double lev[64];
        int nl = 0;
        for (int d = c; d < n; d++)
            if (f->chans[d].kind == WX_LEVEL_PRESSURE && !strcmp(f->chans[d].param, ch->param)) {
                if (nl == 64)
                    return wx_error_set(WX_ERR_RUN, "%s: parameter %s has more than 64 levels",
                                        o->netcdf, ch->param);
                lev[nl++] = f->chans[d].level;
            }
        qsort(lev, (size_t)nl, sizeof(double), cmp_desc);
        int a = 0;
        while (a < naxes && !(axis_len[a] == nl && !memcmp(axes[a], lev, sizeof(double) * (size_t)nl)))
            a++;
        if (a == naxes) {
            if (naxes == MAX_AXES)
                return wx_error_set(WX_ERR_RUN, "%s: more than %d distinct level sets", o->netcdf,
                                    MAX_AXES);
            memcpy(axes[a], lev, sizeof(double) * (size_t)nl);
            axis_len[naxes++] = nl;
        }
        attrs_of(ch, e, 1, f->step_s, &f->attrs[nv]);
        f->vars[nv].has_level = 1 + a;
        for (int d = c; d < n; d++)
            if (f->chans[d].kind == WX_LEVEL_PRESSURE && !strcmp(f->chans[d].param, ch->param)) {
                f->nc_var[d] = nv;
                for (int k = 0; k < nl; k++)
                    if (lev[k] == f->chans[d].level) f->nc_level[d] = k;
            }
        nv++;
    }
    for (int v = 0; v < nv; v++) {
        struct wx_forecast_attrs *a = &f->attrs[v];
        summary_attrs(o->statistic, a);
        f->vars[v].name = a->name, f->vars[v].units = a->units;
        f->vars[v].standard_name = a->standard_name, f->vars[v].long_name = a->long_name;
    }
    wx_nc_level_axis extra[MAX_AXES];
    for (int a = 1; a < naxes; a++) extra[a - 1] = (wx_nc_level_axis){axis_len[a], axes[a]};
    char title[200], init[32];
    wx_time_format(f->ref_time, init);
    if (o->statistic == WX_ENS_SPREAD)
        snprintf(title, sizeof title, "wxcast ensemble spread (standard deviation over %d "
                 "members) of the forecast from %s UTC", o->stat_members, init);
    else if (o->statistic == WX_ENS_MEAN)
        snprintf(title, sizeof title, "wxcast ensemble mean (over %d members) of the forecast "
                 "from %s UTC", o->stat_members, init);
    else
        snprintf(title, sizeof title, "wxcast %s from %s UTC",
                 o->members > 0 ? "ensemble forecast" : "forecast", init);
    wx_nc_layout L = {f->grid, naxes > 0 ? axis_len[0] : 0, naxes > 0 ? axes[0] : NULL, nv,
                      f->vars, 1, f->ref_time, title, o->source ? o->source : "wxcast forecast",
                      o->deflate};
    wx_nc_layout_ext X = {"level", naxes > 1 ? naxes - 1 : 0, extra, o->members};
    WX_TRY(wx_nc_writer_open_ext(&f->w, o->netcdf, &L, "time", &X));
    f->has_nc = 1;
    if (o->statistic != WX_ENS_NONE)
        WX_TRY(wx_nc_writer_var_text(&f->w, -1, "ensemble_statistic",
                                     o->statistic == WX_ENS_MEAN ? "mean" : "standard_deviation"));
    for (int v = 0; v < nv; v++)
        if (f->attrs[v].cell_methods[0])
            WX_TRY(wx_nc_writer_var_text(&f->w, v, "cell_methods", f->attrs[v].cell_methods));
    return WX_OK;
}

static wx_status open_grib(wx_forecast_writer *f, const wx_forecast_write_opts *o) {
    char stem[256];
    if (o->grib_prefix) {
        snprintf(stem, sizeof stem, "%s", o->grib_prefix);
    } else {
        int64_t y;
        int mo, d, h, mi, s;
        wx_time_split(f->ref_time, &y, &mo, &d, &h, &mi, &s);
        snprintf(stem, sizeof stem, "forecast_%04lld%02d%02dT%02d", (long long)y, mo, d, h);
    }
    WX_TRY(wx_mkdir_p(o->grib_dir));
    for (int c = 0; c < f->nvars; c++) {
        if (!f->entries[c])
            return wx_error_set(WX_ERR_USAGE, "GRIB output: channel %s (parameter %s) is not in "
                                "the catalogue, so it has no GRIB parameter", f->chans[c].name,
                                f->chans[c].param);
        int k = f->chans[c].kind == WX_LEVEL_PRESSURE;
        if (f->has_grib[k]) continue;
        size_t len = strlen(o->grib_dir) + strlen(stem) + 16;
        f->grib_path[k] = wx_malloc(len);
        snprintf(f->grib_path[k], len, "%s/%s_%s.grib2", o->grib_dir, stem, k ? "pl" : "sfc");
        WX_TRY(wx_grib_writer_open(&f->grib[k], f->grib_path[k]));
        f->has_grib[k] = 1;
        f->grib[k].forecast = 1;
        f->grib[k].packing = o->grib_packing;
        if (o->grib_bits > 0) f->grib[k].bits_per_value = o->grib_bits;
    }
    return WX_OK;
}

wx_status wx_forecast_writer_open_opts(wx_forecast_writer *f, const wx_forecast_write_opts *o,
                                       const wx_grid *g, int nvars,
                                       const wx_archive_channel *chans, wx_time ref_time) {
    memset(f, 0, sizeof *f);
    if (!o->netcdf && !o->grib_dir)
        return wx_error_set(WX_ERR_USAGE, "forecast: no output (NetCDF file or GRIB folder)");
    if (o->grib_bits < 0 || o->grib_bits > 32)
        return wx_error_set(WX_ERR_USAGE, "--grib-bits %d: expected 1..32", o->grib_bits);
    f->nvars = nvars;
    f->members = o->members;
    f->points = (int64_t)g->nlat * g->nlon;
    f->ref_time = ref_time;
    f->grid = *g;
    f->step_s = o->step_s;
    f->chans = wx_malloc(sizeof *f->chans * (size_t)nvars);
    memcpy(f->chans, chans, sizeof *f->chans * (size_t)nvars);
    f->entries = wx_calloc((size_t)nvars, sizeof *f->entries);
    f->nc_var = wx_calloc((size_t)nvars, sizeof(int));
    f->nc_level = wx_calloc((size_t)nvars, sizeof(int));
    f->nan_first = wx_calloc((size_t)nvars, sizeof(int64_t));
    for (int c = 0; c < nvars; c++)
        f->entries[c] = wx_catalogue_find_kind(chans[c].param, chans[c].kind);
    wx_status st = WX_OK;
    if (o->netcdf) st = open_netcdf(f, o);
    if (st == WX_OK && o->grib_dir) st = open_grib(f, o);
    if (st != WX_OK) wx_forecast_writer_abort(f);
    return st;
}

wx_status wx_forecast_writer_open(wx_forecast_writer *f, const char *path, const wx_grid *g,
                                  int nvars, const wx_archive_channel *chans, wx_time ref_time,
                                  const char *source) {
    wx_forecast_write_opts o = {.netcdf = path, .source = source};
    return wx_forecast_writer_open_opts(f, &o, g, nvars, chans, ref_time);
}

/* Free bytes of the file system holding `path`'s folder (or `path` itself when it is a folder that
 * exists); its device in *dev. -1 when unknown (the check is then skipped). */
static double free_bytes(const char *path, int is_dir, dev_t *dev) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    struct stat sb;
    if (!is_dir || stat(dir, &sb) != 0) { /* a file, or a folder not made yet: its parent */
        char *slash = strrchr(dir, '/');
        if (slash == dir) dir[1] = 0;
        else if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
    }
    struct statvfs v;
    if (statvfs(dir, &v) != 0 || stat(dir, &sb) != 0) return -1;
    *dev = sb.st_dev;
    return (double)v.f_bavail * (double)v.f_frsize;
}

static void format_bytes(double b, char *buf, size_t n) {
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (b >= 1000 && u < 5) b /= 1000, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

wx_status wx_forecast_space_check(const wx_forecast_write_opts *o, int64_t times, int nvars,
                                  int64_t points) {
    double values = (double)times * nvars * (double)points * (o->members > 0 ? o->members : 1);
    double nc = o->netcdf ? values * 4 : 0, grib = o->grib_dir ? values * (o->grib_bits ? o->grib_bits : 16) / 8 : 0;
    if (o->netcdf && o->members > 1) nc += 2 * 4 * (double)times * nvars * (double)points;
    dev_t dn = 0, dg = 0;
    double fn = o->netcdf ? free_bytes(o->netcdf, 0, &dn) : -1;
    double fg = o->grib_dir ? free_bytes(o->grib_dir, 1, &dg) : -1;
    if (fn >= 0 && fg >= 0 && dn == dg) nc += grib, grib = 0; /* one file system for both */
    const struct { const char *path; double need, have; } out[] = {{o->netcdf, nc, fn}, {o->grib_dir, grib, fg}};
    for (int i = 0; i < 2; i++) {
        if (!out[i].path || out[i].have < 0 || out[i].need <= out[i].have) continue;
        char need[32], have[32];
        format_bytes(out[i].need, need, sizeof need);
        format_bytes(out[i].have, have, sizeof have);
        if (i == 0 && o->deflate > 0) {
            wx_log_warn("forecast: %s: uncompressed the output would take %s and its file system has %s "
                        "free; compression may or may not make it fit", out[i].path, need, have);
            continue;
        }
        return wx_error_set(WX_ERR_RUN, "forecast: %s: the output needs about %s (%lld valid times x "
                            "%d variables x %lld points%s) and its file system has %s free: fewer "
                            "steps, or another place", out[i].path, need, (long long)times, nvars,
                            (long long)points, o->members > 1 ? " x members" : "", have);
    }
    return WX_OK;
}

/* A diverged model's output is refused rather than written: any infinity, or more NaN points than
 * the first valid time had (NaN is a legitimate mask, e.g. a sea-only field over land, written
 * through the GRIB bitmap; a growing count is the model blowing up). */
static wx_status check_finite(wx_forecast_writer *f, int c, int64_t t, int64_t lead, int member,
                              const float *x) {
    int64_t nan = 0, inf = 0;
    for (int64_t p = 0; p < f->points; p++) {
        nan += isnan(x[p]) != 0;
        inf += isinf(x[p]) != 0;
    }
    if (t == 0 && nan > f->nan_first[c]) f->nan_first[c] = nan;
    if (inf == 0 && nan <= f->nan_first[c]) return WX_OK;
    char who[32] = "";
    if (f->members > 0) snprintf(who, sizeof who, " (member %d)", member);
    return wx_error_set(WX_ERR_RUN, "forecast output: %s at lead %+lld h%s: %lld infinite and %lld "
                        "NaN values of %lld (%lld NaN at the first time): the model diverged; no "
                        "output written (check the checkpoint, --amplitude, the initial state)",
                        f->chans[c].name, (long long)(lead / 3600), who, (long long)inf,
                        (long long)nan, (long long)f->points, (long long)f->nan_first[c]);
}

wx_status wx_forecast_writer_put_member(wx_forecast_writer *f, wx_time valid, int member,
                                        const float *fields) {
    if (f->ntimes == 0 || valid != f->last_valid) {
        if (f->ntimes > 0 && valid < f->last_valid)
            return wx_error_set(WX_ERR_RUN, "forecast output: valid times out of order");
        f->ntimes++;
        f->last_valid = valid;
    }
    int64_t t = f->ntimes - 1, lead = valid - f->ref_time;
    for (int c = 0; c < f->nvars; c++) {
        const float *x = fields + (size_t)c * (size_t)f->points;
        WX_TRY(check_finite(f, c, t, lead, member, x));
        if (f->has_nc)
            WX_TRY(wx_nc_writer_put_member(&f->w, t, valid, f->nc_var[c], f->nc_level[c],
                                           f->members > 0 ? member : 0, x));
        int k = f->chans[c].kind == WX_LEVEL_PRESSURE;
        if (!f->has_grib[k]) continue;
        const wx_catalogue_entry *e = f->entries[c];
        int64_t acc = e->accumulated ? (f->chans[c].accum_s > 0 ? f->chans[c].accum_s : f->step_s) : 0;
        if (e->accumulated && lead < acc) continue; /* no accumulation window before lead 0 */
        wx_grib_field gf = {e, (long)lrint(f->chans[c].level), f->ref_time, lead - acc, lead,
                            f->members > 0 ? member : -1, f->members};
        WX_TRY(wx_grib_writer_add(&f->grib[k], &gf, &f->grid, x));
    }
    return WX_OK;
}

wx_status wx_forecast_writer_put(wx_forecast_writer *f, wx_time valid, const float *fields) {
    return wx_forecast_writer_put_member(f, valid, 0, fields);
}

wx_status wx_forecast_writer_close(wx_forecast_writer *f) {
    wx_status st = WX_OK;
    /* GRIB first: an error there leaves no NetCDF either */
    for (int k = 0; k < 2 && st == WX_OK; k++)
        if (f->has_grib[k]) {
            st = wx_grib_writer_close(&f->grib[k]);
            f->has_grib[k] = 0;
        }
    if (st == WX_OK && f->has_nc) {
        st = wx_nc_writer_close(&f->w);
        f->has_nc = 0;
    }
    wx_forecast_writer_abort(f);
    return st;
}
