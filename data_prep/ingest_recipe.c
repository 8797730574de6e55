#include "ingest_recipe.h"

#include <glob.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/wx_config.h"
#include "core/wx_fs.h"
#include "core/wx_log.h"

static const char *const missing_choices[] = {"error", "nan", NULL};
static const char *const dtype_choices[] = {"float32", "float16", NULL};

static const wx_cfg_field root_fields[] = {
    {"sources", WX_CFG_LIST, 1, WX_CFG_NO_RANGE, NULL, "files or globs, GRIB and NetCDF mixed", NULL},
    {"variables", WX_CFG_LIST, 1, WX_CFG_NO_RANGE, NULL, "channels of the archive, in order", NULL},
    {"dates", WX_CFG_MAP, 1, WX_CFG_NO_RANGE, NULL, "{start, end, step}: valid times", NULL},
    {"grid", WX_CFG_ANY, 0, WX_CFG_NO_RANGE, "native", "native, or {resolution: degrees}", NULL},
    {"drop_south_pole", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false", "drop the -90 row", NULL},
    {"member", WX_CFG_INT, 0, 0, 1000, "0", "ensemble member (GRIB number)", NULL},
    {"missing", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "error", "missing values: error or nan",
     missing_choices},
    {"statistics", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "{start, end}: statistics window", NULL},
    {"climatology", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "true",
     "day-of-year x hour climatology over the statistics window (unset: skipped with a warning "
     "when it would be over 4x the archive and over 1 GiB; true: always)", NULL},
    {"climatology_hour_step", WX_CFG_INT, 0, 1, 24, "6",
     "climatology hours every N hours from the window's first (6: WeatherBench2's; 1: every hour)",
     NULL},
    {"output", WX_CFG_STR, 0, WX_CFG_NO_RANGE, NULL, "archive folder", NULL},
    {"shard_mb", WX_CFG_FLOAT, 0, 0.001, 65536, "512", "target shard size in MB", NULL},
    {"dtype", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "float32", "record type on disk", dtype_choices},
    WX_CFG_END};
static const wx_cfg_field var_fields[] = {
    {"name", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "channel name", NULL},
    {"param", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "eccodes shortName or NetCDF name", NULL},
    {"level", WX_CFG_FLOAT, 0, 0.001, 2000, NULL, "pressure level in hPa", NULL},
    {"accumulate", WX_CFG_STR, 0, WX_CFG_NO_RANGE, NULL, "period to sum the sources' accumulations over (their own period: hourly, or 6 h into 24 h)", NULL},
    WX_CFG_END};
static const wx_cfg_field dates_fields[] = {
    {"start", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "first valid time", NULL},
    {"end", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "last valid time (inclusive)", NULL},
    {"step", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "6h", "time step", NULL},
    WX_CFG_END};
static const wx_cfg_field stats_fields[] = {
    {"start", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "first valid time", NULL},
    {"end", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "last valid time (inclusive)", NULL},
    WX_CFG_END};
static const wx_cfg_field grid_fields[] = {
    {"resolution", WX_CFG_FLOAT, 1, 0.01, 90, NULL, "target resolution in degrees", NULL},
    WX_CFG_END};

static wx_status load_sources(wx_recipe *r, const wx_yaml *list) {
    r->sources = wx_calloc(1, sizeof(char *));
    if (list->count < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: sources: expected at least one file or glob",
                            list->file, list->line);
    for (int i = 0; i < list->count; i++) {
        const char *pat;
        char key[32], full[8192];
        snprintf(key, sizeof key, "sources[%d]", i);
        WX_TRY(wx_yaml_as_string(list->items[i], key, &pat));
        WX_TRY(wx_path_join(r->dir, pat, full, sizeof full));
        glob_t g;
        int rc = glob(full, 0, NULL, &g);
        if (rc != 0) {
            globfree(&g);
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s: '%s' matches no file",
                                list->file, list->items[i]->line, key, full);
        }
        r->sources = realloc(r->sources, sizeof(char *) * (size_t)(r->nsources + (int)g.gl_pathc + 1));
        WX_ASSERT(r->sources != NULL);
        for (size_t k = 0; k < g.gl_pathc; k++) {
            /* one file matched by two patterns (or two spellings) is read once: twice, each
             * field would be "two source fields" of itself */
            struct stat a, b;
            int dup = -1;
            for (int q = 0; dup < 0 && q < r->nsources && stat(g.gl_pathv[k], &a) == 0; q++)
                if (stat(r->sources[q], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) dup = q;
            if (dup >= 0) {
                wx_log_info("%s: line %d: %s: %s is %s, already a source: read once", list->file,
                            list->items[i]->line, key, g.gl_pathv[k], r->sources[dup]);
                continue;
            }
            r->sources[r->nsources++] = wx_strdup(g.gl_pathv[k]);
        }
        globfree(&g);
    }
    return WX_OK;
}

/* A value error of key `key` of `map`, prefixed with the recipe file and the key's line. */
static wx_status at_key(wx_status st, const wx_yaml *map, const char *key) {
    if (st == WX_OK) return st;
    return wx_error_wrap(st, "%s: line %d: ", map->file, wx_yaml_key_line(map, key));
}

static wx_status load_var(wx_recipe *r, const wx_yaml *node, int i) {
    char path[48];
    snprintf(path, sizeof path, "variables[%d]", i);
    if (!node || node->kind != WX_YAML_MAP)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s: expected a mapping {name, param, level}",
                            node ? node->file : "recipe", node ? node->line : 0, path);
    WX_TRY(wx_cfg_validate(node, path, var_fields));
    wx_recipe_var *v = &r->vars[i];
    const char *s;
    WX_TRY(wx_cfg_str(node, var_fields, "name", &s));
    /* the name becomes a NetCDF variable (dump, forecasts) and a model channel: NetCDF's rules
     * without the exotic (DeepMind's 2m_temperature is fine; a blank or '/' is not) */
    int ok = s[0] != 0;
    for (const char *q = s; ok && *q; q++)
        ok = (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') ||
             *q == '_' || (q > s && (*q == '-' || *q == '.' || *q == '+'));
    if (!ok)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s.name '%s': expected letters, digits and '_' "
                            "('-', '.', '+' after the first; it names NetCDF variables and model "
                            "channels)", node->file, wx_yaml_key_line(node, "name"), path, s);
    snprintf(v->name, sizeof v->name, "%s", s);
    WX_TRY(wx_cfg_str(node, var_fields, "param", &s));
    snprintf(v->param, sizeof v->param, "%s", s);
    const wx_yaml *lev = wx_yaml_get(node, "level");
    if (lev) {
        WX_TRY(wx_cfg_double(node, var_fields, "level", &v->level));
        v->kind = WX_LEVEL_PRESSURE;
        v->entry = wx_catalogue_find_kind(v->param, WX_LEVEL_PRESSURE);
    } else {
        v->kind = WX_LEVEL_SINGLE;
        v->entry = wx_catalogue_find_kind(v->param, WX_LEVEL_SINGLE);
        if (!v->entry) v->entry = wx_catalogue_find_kind(v->param, WX_LEVEL_STATIC);
        if (v->entry) v->kind = v->entry->level_kind;
        if (!v->entry && wx_catalogue_find_kind(v->param, WX_LEVEL_PRESSURE))
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s: param '%s' is a pressure-level "
                                "variable: add `level: <hPa>`", node->file, node->line, path, v->param);
    }
    if (v->entry) snprintf(v->param, sizeof v->param, "%s", v->entry->short_name);
    const wx_yaml *acc = wx_yaml_get(node, "accumulate");
    if (acc) {
        WX_TRY(wx_cfg_str(node, var_fields, "accumulate", &s));
        WX_TRY(at_key(wx_time_parse_duration(s, "accumulate", &v->accum_s), node, "accumulate"));
        if (v->accum_s % 3600)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s.accumulate: '%s' must be whole hours",
                                node->file, acc->line, path, s);
        if (v->entry && !v->entry->accumulated)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s.accumulate: '%s' is not an "
                                "accumulated parameter (accumulate sums accumulations such as tp "
                                "over a period; an instantaneous field has none)", node->file,
                                acc->line, path, v->param);
    }
    for (int k = 0; k < i; k++)
        if (!strcmp(r->vars[k].name, v->name))
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s.name '%s' is used twice", node->file,
                                node->line, path, v->name);
    return WX_OK;
}

static wx_status load_window(const wx_yaml *m, const wx_cfg_field *f, const char *p, wx_time *a,
                             wx_time *b) {
    const char *s;
    char what[64];
    WX_TRY(wx_cfg_validate(m, p, f));
    WX_TRY(wx_cfg_str(m, f, "start", &s));
    snprintf(what, sizeof what, "%s.start", p);
    WX_TRY(at_key(wx_time_parse(s, what, a), m, "start"));
    WX_TRY(wx_cfg_str(m, f, "end", &s));
    snprintf(what, sizeof what, "%s.end", p);
    WX_TRY(at_key(wx_time_parse(s, what, b), m, "end"));
    if (*b < *a)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: %s.end is before %s.start", m->file, m->line,
                            p, p);
    return WX_OK;
}

static wx_status parse(wx_recipe *r, const char *output_override) {
    const wx_yaml *root = r->root;
    WX_TRY(wx_cfg_validate(root, "", root_fields));
    WX_TRY(load_sources(r, wx_yaml_get(root, "sources")));
    const wx_yaml *vars = wx_yaml_get(root, "variables");
    if (vars->count < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: variables: expected at least one",
                            root->file, vars->line);
    r->nvars = vars->count;
    r->vars = wx_calloc((size_t)r->nvars, sizeof *r->vars);
    for (int i = 0; i < r->nvars; i++) WX_TRY(load_var(r, vars->items[i], i));
    const wx_yaml *dates = wx_yaml_get(root, "dates");
    WX_TRY(load_window(dates, dates_fields, "dates", &r->start, &r->end));
    const char *s;
    WX_TRY(wx_cfg_str(dates, dates_fields, "step", &s));
    WX_TRY(at_key(wx_time_parse_duration(s, "dates.step", &r->step), dates, "step"));
    const wx_yaml *g = wx_yaml_get(root, "grid");
    if (g && g->kind == WX_YAML_MAP) {
        WX_TRY(wx_cfg_validate(g, "grid", grid_fields));
        WX_TRY(wx_cfg_double(g, grid_fields, "resolution", &r->resolution));
    } else if (g && !(g->kind == WX_YAML_SCALAR && !strcmp(g->scalar, "native"))) {
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: grid: expected 'native' or "
                            "{resolution: <degrees>}", root->file, g->line);
    }
    WX_TRY(wx_cfg_bool(root, root_fields, "drop_south_pole", &r->drop_south_pole));
    int64_t mem;
    WX_TRY(wx_cfg_int(root, root_fields, "member", &mem));
    r->member = (int)mem;
    WX_TRY(wx_cfg_str(root, root_fields, "missing", &s));
    r->missing = !strcmp(s, "nan") ? WX_MISSING_NAN : WX_MISSING_ERROR;
    const wx_yaml *st = wx_yaml_get(root, "statistics");
    if (st) {
        r->has_stats = 1;
        WX_TRY(load_window(st, stats_fields, "statistics", &r->stats_start, &r->stats_end));
        /* a window without any of the dates would fail only after every record is decoded */
        if (r->stats_end < r->start || r->stats_start > r->end) {
            char a[32], b[32], c[32], d[32];
            wx_time_format(r->stats_start, a), wx_time_format(r->stats_end, b);
            wx_time_format(r->start, c), wx_time_format(r->end, d);
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: statistics %s .. %s holds none of the "
                                "dates %s .. %s", root->file, st->line, a, b, c, d);
        }
        /* The window as the records it holds (first and last record in it): a window reaching
         * past the dates would otherwise be recorded as a span no statistic covers */
        wx_time s0 = r->stats_start, s1 = r->stats_end;
        if (r->step > 0) {
            int64_t k0 = r->stats_start <= r->start ? 0 : (r->stats_start - r->start + r->step - 1) / r->step;
            int64_t k1 = ((r->stats_end < r->end ? r->stats_end : r->end) - r->start) / r->step;
            r->stats_start = r->start + k0 * r->step, r->stats_end = r->start + k1 * r->step;
        }
        if (s0 < r->start || s1 > r->end) {
            char a[32], b[32], c[32], d[32];
            wx_time_format(s0, a), wx_time_format(s1, b);
            wx_time_format(r->stats_start, c), wx_time_format(r->stats_end, d);
            wx_log_warn("%s: line %d: statistics %s .. %s reaches past the dates: the statistics "
                        "and climatology cover %s .. %s", root->file, st->line, a, b, c, d);
        }
    }
    WX_TRY(wx_cfg_bool(root, root_fields, "climatology", &r->climatology));
    r->climatology_explicit = wx_yaml_get(root, "climatology") != NULL;
    if (r->climatology_explicit && r->climatology && !r->has_stats)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: climatology: true needs a `statistics` window "
                            "(the climatology is built over it)", root->file,
                            wx_yaml_key_line(root, "climatology"));
    int64_t hs;
    WX_TRY(wx_cfg_int(root, root_fields, "climatology_hour_step", &hs));
    if (24 % hs != 0)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: climatology_hour_step %lld: expected a "
                            "divisor of 24 (1, 2, 3, 4, 6, 8, 12, 24)", root->file,
                            wx_yaml_get(root, "climatology_hour_step")->line, (long long)hs);
    r->clim_hour_step = (int)hs;
    WX_TRY(wx_cfg_double(root, root_fields, "shard_mb", &r->shard_mb));
    WX_TRY(wx_cfg_str(root, root_fields, "dtype", &s));
    r->f16 = !strcmp(s, "float16");
    if (output_override) {
        snprintf(r->output, sizeof r->output, "%s", output_override);
    } else if (wx_yaml_get(root, "output")) {
        WX_TRY(wx_cfg_str(root, root_fields, "output", &s));
        WX_TRY(wx_path_join(r->dir, s, r->output, sizeof r->output));
    } else {
        return wx_error_set(WX_ERR_USAGE, "%s: no `output:` in the recipe and no --output given",
                            root->file);
    }
    /* a file in the way, or a folder that cannot be written: before any source is read */
    if (wx_output_archive_dir_check(r->output, output_override ? "--output" : "output") != WX_OK)
        return wx_error_wrap(WX_ERR_USAGE, "%s: ", root->file);
    return WX_OK;
}

wx_status wx_recipe_load(const char *path, const char *output_override, wx_recipe *r) {
    memset(r, 0, sizeof *r);
    size_t len;
    wx_status st = wx_read_file(path, &r->text, &len);
    if (st != WX_OK) return wx_error_wrap(WX_ERR_USAGE, "recipe: ");
    char *tmp = wx_strdup(path);
    snprintf(r->dir, sizeof r->dir, "%s", dirname(tmp));
    snprintf(r->path, sizeof r->path, "%s", path);
    free(tmp);
    if (!strcmp(r->dir, ".")) r->dir[0] = 0;
    st = wx_yaml_load_file(path, &r->root);
    if (st == WX_OK) st = parse(r, output_override);
    return st;
}

void wx_recipe_free(wx_recipe *r) {
    for (int i = 0; i < r->nsources; i++) free(r->sources[i]);
    free(r->sources);
    free(r->vars);
    free(r->text);
    wx_yaml_free(r->root);
    memset(r, 0, sizeof *r);
}
