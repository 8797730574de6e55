/* import-weights --data for GraphCast (weights_gc_data.h). DeepMind normalises every input with
 * mean_by_level/stddev_by_level by variable name and level, forcings and statics included, and
 * scales the residual of a target that is also an input by diffs_stddev_by_level
 * (normalization.py InputsAndResiduals); a target-only variable is de-normalised by
 * mean/stddev. wxcast's GraphCast computes ŷ = x[last] + (diff_std/std)·out on z-scored states,
 * which is the same map once the state's mean/std/diff_std are DeepMind's; the forcings get
 * DeepMind's mean/std through the DATA section's `forcings` list (train_model_gc.c gc_attach)
 * instead of wxcast's computed ones, and the statics are stored normalised by DeepMind's. */
#include "cli/weights_gc_data.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/wx_config.h"
#include "core/wx_fs.h"
#include "core/wx_yaml.h"
#include "infer/forecast_init.h"
#include "io/nc_stats.h"
#include "io/wx_source.h"
#include "meteo/wx_catalogue.h"
#include "meteo/wx_grid.h"
#include "train/checkpoint.h"

static const wx_cfg_field gc_data_fields[] = {
    {"mean_by_level", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "DeepMind's stats/mean_by_level.nc (relative to this file)", NULL},
    {"stddev_by_level", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "DeepMind's stats/stddev_by_level.nc", NULL},
    {"diffs_stddev_by_level", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "DeepMind's stats/diffs_stddev_by_level.nc", NULL},
    {"statics", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "", "GRIB or NetCDF file with the static fields (geopotential_at_surface, land_sea_mask) on the model grid", NULL},
    {"time_step", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "6h", "the model's time step", NULL},
    WX_CFG_END,
};

enum { F_MEAN, F_STD, F_DIFF, F_N };

/* The archive channel name of a GraphCast state variable ("2m_temperature" → t2m,
 * "geopotential" at 500 → z500, "total_precipitation_6hr" → tp). */
static wx_status state_name(const char *var, double level, char *out, size_t cap) {
    char name[64];
    wx_catalogue_strip_period(var, name, sizeof name);
    const wx_catalogue_entry *e =
        wx_catalogue_find_kind(name, level > 0 ? WX_LEVEL_PRESSURE : WX_LEVEL_SINGLE);
    if (!e)
        return wx_error_set(WX_ERR_USAGE, "import-weights: GraphCast variable '%s' is not in "
                            "wxcast's catalogue", var);
    if (level > 0) snprintf(out, cap, "%s%g", e->nc_name, level);
    else snprintf(out, cap, "%s", e->nc_name);
    return WX_OK;
}

/* mean and std (and diff std when diff) of one variable at one level, each positive std. */
static wx_status stat3(const wx_nc_stats *f, const char *var, double level, int diff, double *v) {
    for (int k = 0; k < (diff ? 3 : 2); k++) {
        WX_TRY(wx_nc_stats_get(&f[k], var, level, &v[k]));
        if (k > 0 && !(v[k] > 0))
            return wx_error_set(WX_ERR_RUN, "%s: variable '%s'%s%g%s: value %g, expected > 0",
                                f[k].path, var, level > 0 ? " at level " : "",
                                level > 0 ? level : 0.0, level > 0 ? " hPa" : "", v[k]);
    }
    if (!diff) v[2] = 0;
    return WX_OK;
}

static int is_target_only(const wx_gc_config *c, const char *name) {
    for (int i = 0; i < c->n_target_only; i++)
        if (!strcmp(c->target_only[i], name)) return 1;
    return 0;
}

/* Static field `name` from the source file, on the model grid g. */
static wx_status read_static(wx_source *src, const char *name, const wx_grid *g, float *out) {
    const char *path = wx_source_path(src);
    for (int i = 0; i < wx_source_count(src); i++) {
        const wx_field_info *f = wx_source_info(src, i);
        if (f->kind == WX_LEVEL_PRESSURE) continue;
        if (strcasecmp(f->name, name) && !(f->entry && wx_catalogue_matches(f->entry, name)))
            continue;
        const wx_grid *h = &f->grid;
        if (h->nlat != g->nlat || h->nlon != g->nlon || fabs(h->lat0 - g->lat0) > 1e-6 ||
            fabs(h->dlat - g->dlat) > 1e-6 || fabs(h->lon0 - g->lon0) > 1e-6 ||
            fabs(h->dlon - g->dlon) > 1e-6)
            return wx_error_set(WX_ERR_RUN, "%s: variable '%s' is on a %dx%d grid from %g N, %g E "
                                "by %g/%g degrees; the model's is %dx%d from %g N, %g E by %g/%g",
                                path, f->name, h->nlat, h->nlon, h->lat0, h->lon0, h->dlat,
                                h->dlon, g->nlat, g->nlon, g->lat0, g->lon0, g->dlat, g->dlon);
        return wx_source_read(src, i, WX_MISSING_ERROR, out);
    }
    return wx_error_set(WX_ERR_RUN, "%s: no static field '%s' (the model's static_variables)",
                        path, name);
}

static void put_entry(FILE *t, const char *name, const char *units, const double *v, int diff) {
    fprintf(t, "  - {name: \"%s\", units: \"%s\", mean: %.17g, std: %.17g", name, units, v[0], v[1]);
    if (diff) fprintf(t, ", diff_std: %.17g", v[2]);
    fputs("}\n", t);
}

wx_status wx_weights_gc_data(const char *path, const wx_gc_config *c, char **text, float **fields) {
    *text = NULL, *fields = NULL;
    wx_yaml *root = NULL;
    WX_TRY(wx_yaml_load_file(path, &root));
    char tmp[4096], files[F_N][4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    const char *dir = dirname(tmp);
    const char *keys[F_N] = {"mean_by_level", "stddev_by_level", "diffs_stddev_by_level"};
    const char *step_text = NULL, *statics = NULL;
    int64_t step_s = 0;
    wx_status s = wx_cfg_validate(root, "", gc_data_fields);
    if (s != WX_OK) { /* the message names the file and line */
        wx_yaml_free(root);
        return s;
    }
    for (int k = 0; s == WX_OK && k < F_N; k++) {
        const char *f = NULL;
        s = wx_cfg_str(root, gc_data_fields, keys[k], &f);
        if (s == WX_OK) s = wx_path_join(dir, f, files[k], sizeof files[k]);
    }
    if (s == WX_OK) s = wx_cfg_str(root, gc_data_fields, "statics", &statics);
    if (s == WX_OK) s = wx_cfg_str(root, gc_data_fields, "time_step", &step_text);
    if (s == WX_OK) s = wx_time_parse_duration(step_text, "time_step", &step_s);
    if (s == WX_OK && step_s != 21600)
        s = wx_error_set(WX_ERR_USAGE, "key 'time_step': %s; GraphCast steps 6h", step_text);
    char spath[4096] = "";
    if (s == WX_OK && c->n_static && !statics[0])
        s = wx_error_set(WX_ERR_USAGE, "key 'statics' is required: the model has %d static "
                         "variables (%s%s)", c->n_static, c->statics[0],
                         c->n_static > 1 ? ", ..." : "");
    if (s == WX_OK && statics[0]) s = wx_path_join(dir, statics, spath, sizeof spath);
    if (s != WX_OK) {
        wx_yaml_free(root);
        return wx_error_wrap(WX_ERR_USAGE, "%s: ", path);
    }
    wx_yaml_free(root);

    wx_nc_stats f[F_N];
    int nopen = 0;
    for (; s == WX_OK && nopen < F_N; nopen++) s = wx_nc_stats_open(files[nopen], &f[nopen]);
    if (s != WX_OK) nopen--;
    wx_grid g;
    if (s == WX_OK) s = wx_grid_global(c->resolution, &g);
    size_t len = 0;
    FILE *t = s == WX_OK ? open_memstream(text, &len) : NULL;
    if (s == WX_OK && !t) s = wx_error_set(WX_ERR_RUN, "import-weights: out of memory");
    const int64_t hw = (int64_t)c->nlat * c->nlon;
    /* the state: surface variables, then atmospheric ones by level (wxcast's output order) */
    for (int pass = 0; s == WX_OK && pass < 2; pass++) {
        fputs(pass ? "channels_out:\n" : "channels_in:\n", t);
        for (int64_t ch = 0; s == WX_OK && ch < c->out_channels; ch++) {
            int surf = ch < c->n_surface;
            const char *var = surf ? c->surface[ch] : c->atmos[(ch - c->n_surface) / c->n_levels];
            double level = surf ? 0 : c->levels[(ch - c->n_surface) % c->n_levels], v[3];
            char name[64];
            wx_archive_channel ac;
            s = state_name(var, level, name, sizeof name);
            if (s == WX_OK) s = wx_forecast_channel_from_name(name, step_s, &ac);
            if (s == WX_OK) s = stat3(f, var, level, !is_target_only(c, var), v);
            if (s == WX_OK) put_entry(t, name, ac.units, v, !is_target_only(c, var));
        }
    }
    if (s == WX_OK) fputs("forcings:\n", t);
    for (int q = 0; s == WX_OK && q < c->n_forcings; q++) {
        double v[3];
        s = stat3(f, c->forcings[q], 0, 0, v);
        if (s == WX_OK) put_entry(t, c->forcings[q], "", v, 0);
    }
    double *smean = wx_calloc((size_t)c->n_static + 1, sizeof(double));
    double *sstd = wx_calloc((size_t)c->n_static + 1, sizeof(double));
    if (s == WX_OK && c->n_static) fputs("statics:\n", t);
    for (int i = 0; s == WX_OK && i < c->n_static; i++) {
        double v[3];
        s = stat3(f, c->statics[i], 0, 0, v);
        smean[i] = v[0], sstd[i] = v[1];
        if (s == WX_OK) put_entry(t, c->statics[i], "", v, 0);
    }
    if (s == WX_OK && c->n_static) wx_ckpt_data_string(t, "statics_file", spath);
    if (t) {
        if (s == WX_OK) {
            fprintf(t, "time_step_s: %lld\nwindow: %lld\n", (long long)step_s,
                    (long long)c->input_steps);
            wx_ckpt_data_grid(t, &g);
            wx_ckpt_data_string(t, "imported_from", path);
        }
        fclose(t);
    }
    for (int k = 0; k < nopen; k++) wx_nc_stats_close(&f[k]);
    if (s == WX_OK && c->n_static) {
        wx_source *src = NULL;
        *fields = wx_malloc(sizeof(float) * (size_t)(c->n_static * hw));
        s = wx_source_open(spath, &src);
        if (s == WX_OK) wx_source_check_inputs(src);
        for (int i = 0; s == WX_OK && i < c->n_static; i++) {
            float *fl = *fields + i * hw;
            s = read_static(src, c->statics[i], &g, fl);
            for (int64_t p = 0; s == WX_OK && p < hw; p++)
                fl[p] = (float)(((double)fl[p] - smean[i]) / sstd[i]);
        }
        if (src) wx_source_close(src);
    }
    free(smean), free(sstd);
    if (s != WX_OK) {
        free(*text), free(*fields);
        *text = NULL, *fields = NULL;
    }
    return s;
}
