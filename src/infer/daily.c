#define _XOPEN_SOURCE 700
#include "infer/daily.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/wx_backend.h"
#include "core/wx_config.h"
#include "core/wx_fs.h"
#include "core/wx_json.h"
#include "core/wx_log.h"
#include "core/wx_timer.h"
#include "core/wx_yaml.h"
#include "infer/export.h"
#include "infer/forecast.h"
#include "io/grib_write.h"
#include "train/checkpoint.h"

static const char *const packing_choices[] = {"simple", "ccsds", NULL};
static const char *const perturbation_choices[] = {"gaussian", "spherical-gaussian", "bred", NULL};
static const char *const device_choices[] = {"cpu", "cuda", NULL};
static const char *const precision_choices[] = {"fp32", "bf16", NULL};

static const wx_cfg_field root_fields[] = {
    {"analysis", WX_CFG_MAP, 1, WX_CFG_NO_RANGE, NULL, "where the day's analysis is dropped", NULL},
    {"model", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "checkpoint (relative to this file)", NULL},
    {"lead", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "24h", "forecast length (a multiple of the model step)", NULL},
    {"output", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL,
     "folder holding one <YYYYMMDD>T<HH> folder per run (relative to this file)", NULL},
    {"compress", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false", "deflate the NetCDF variables", NULL},
    {"threads", WX_CFG_INT, 0, 0, WX_CTX_THREADS_MAX, "0", "compute threads (0: all cores)", NULL},
    {"device", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "cpu", "backend of the rollouts: cpu or cuda (GPU 0)",
     device_choices},
    {"precision", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "fp32", "cuda GEMMs: fp32, or bf16 inputs with fp32 "
     "accumulation", precision_choices},
    {"grib", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "GRIB2 output", NULL},
    {"ensemble", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "ensemble run (members > 1)", NULL},
    {"maps", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "PNG maps and the web viewer", NULL},
    WX_CFG_END,
};
static const wx_cfg_field analysis_fields[] = {
    {"folder", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "drop folder (relative to this file)", NULL},
    {"pattern", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL,
     "file name; {YYYYMMDD} {YYYY} {MM} {DD} {HH} are filled in", NULL},
    {"init_hour", WX_CFG_INT, 0, 0, 23, "0", "hour (UTC) of the analysis and initial time", NULL},
    WX_CFG_END,
};
static const wx_cfg_field grib_fields[] = {
    {"enabled", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false", "write GRIB2 beside the NetCDF", NULL},
    {"bits", WX_CFG_INT, 0, 1, 32, "16", "bits per value", NULL},
    {"packing", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "simple", "simple or ccsds", packing_choices},
    WX_CFG_END,
};
static const wx_cfg_field ensemble_fields[] = {
    {"members", WX_CFG_INT, 0, 0, 1024, "0", "members (0 or 1: no ensemble; member 0 is the control)", NULL},
    {"perturbation", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "gaussian", "initial-state perturbation",
     perturbation_choices},
    {"amplitude", WX_CFG_FLOAT, 0, 0, WX_AMPLITUDE_MAX, "0.05", "perturbation size in channel standard deviations", NULL},
    {"seed", WX_CFG_INT, 0, 0, 9.0e18, "1", "random seed", NULL},
    WX_CFG_END,
};
static const wx_cfg_field maps_fields[] = {
    {"enabled", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "true", "PNG maps + viewer of the deterministic forecast", NULL},
    {"vars", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "", "variables (\"2t,msl,z500\"; empty: all)", NULL},
    {"leads", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "", "leads in hours (\"0-240/24\"; empty: all)", NULL},
    {"kelvin", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false", "temperatures in K instead of °C", NULL},
    {"coast", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "true", "draw coastlines", NULL},
    {"wind", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "true", "wind-particle layers from u/v pairs", NULL},
    {"width", WX_CFG_INT, 0, 0, 16384, "0", "map width in pixels (0: from the grid)", NULL},
    WX_CFG_END,
};

typedef struct {
    char model[WX_DAILY_PATH_MAX], output[WX_DAILY_PATH_MAX], drop[WX_DAILY_PATH_MAX];
    const char *pattern;
    int64_t init_hour, threads, lead_s;
    int compress, grib, grib_bits, grib_packing;
    int members;
    int64_t seed; /* 0..9e18 (an int truncated seeds past 2^31) */
    wx_perturbation perturbation;
    double amplitude;
    int maps, kelvin, coast, wind, width;
    const char *vars, *leads;
    int vars_line; /* of maps.vars, for its error */
    const char *device, *precision; /* the config's, then the CLI's overrides */
    int bf16;
} daily_config;

/* Paths in the config are relative to the config file's folder. */
static wx_status parse_config(const wx_yaml *root, const char *dir, daily_config *c) {
    memset(c, 0, sizeof *c);
    const char *s;
    int64_t v;
    WX_TRY(wx_cfg_validate(root, "", root_fields));
    const wx_yaml *an = wx_yaml_get(root, "analysis"), *gr = wx_yaml_get(root, "grib"),
                  *en = wx_yaml_get(root, "ensemble"), *mp = wx_yaml_get(root, "maps");
    WX_TRY(wx_cfg_validate(an, "analysis", analysis_fields));
    WX_TRY(wx_cfg_validate(gr, "grib", grib_fields));
    WX_TRY(wx_cfg_validate(en, "ensemble", ensemble_fields));
    WX_TRY(wx_cfg_validate(mp, "maps", maps_fields));
    WX_TRY(wx_cfg_str(root, root_fields, "model", &s));
    WX_TRY(wx_path_join(dir, s, c->model, sizeof c->model));
    WX_TRY(wx_cfg_str(root, root_fields, "output", &s));
    WX_TRY(wx_path_join(dir, s, c->output, sizeof c->output));
    WX_TRY(wx_cfg_str(root, root_fields, "lead", &s));
    if (wx_time_parse_duration(s, "lead", &c->lead_s) != WX_OK)
        return wx_error_wrap(WX_ERR_USAGE, "%s: line %d: ", root->file, wx_yaml_key_line(root, "lead"));
    WX_TRY(wx_cfg_bool(root, root_fields, "compress", &c->compress));
    WX_TRY(wx_cfg_int(root, root_fields, "threads", &c->threads));
    WX_TRY(wx_cfg_str(root, root_fields, "device", &c->device));
    WX_TRY(wx_cfg_str(root, root_fields, "precision", &c->precision));
    WX_TRY(wx_cfg_str(an, analysis_fields, "folder", &s));
    WX_TRY(wx_path_join(dir, s, c->drop, sizeof c->drop));
    WX_TRY(wx_cfg_str(an, analysis_fields, "pattern", &c->pattern));
    WX_TRY(wx_cfg_int(an, analysis_fields, "init_hour", &c->init_hour));
    WX_TRY(wx_cfg_bool(gr, grib_fields, "enabled", &c->grib));
    WX_TRY(wx_cfg_int(gr, grib_fields, "bits", &v));
    c->grib_bits = (int)v;
    WX_TRY(wx_cfg_str(gr, grib_fields, "packing", &s));
    c->grib_packing = !strcmp(s, "ccsds") ? WX_GRIB_CCSDS : WX_GRIB_SIMPLE;
    WX_TRY(wx_cfg_int(en, ensemble_fields, "members", &v));
    c->members = v > 1 ? (int)v : 0;
    WX_TRY(wx_cfg_str(en, ensemble_fields, "perturbation", &s));
    WX_TRY(wx_perturbation_parse(s, &c->perturbation));
    WX_TRY(wx_cfg_double(en, ensemble_fields, "amplitude", &c->amplitude));
    if (c->members > 1 && !(c->amplitude > 0)) /* 0 would give identical members */
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'ensemble.amplitude': %g: expected > 0 "
                            "for an ensemble", en->file, wx_yaml_key_line(en, "amplitude"), c->amplitude);
    WX_TRY(wx_cfg_int(en, ensemble_fields, "seed", &v));
    c->seed = v;
    WX_TRY(wx_cfg_bool(mp, maps_fields, "enabled", &c->maps));
    WX_TRY(wx_cfg_bool(mp, maps_fields, "kelvin", &c->kelvin));
    WX_TRY(wx_cfg_bool(mp, maps_fields, "coast", &c->coast));
    WX_TRY(wx_cfg_bool(mp, maps_fields, "wind", &c->wind));
    WX_TRY(wx_cfg_int(mp, maps_fields, "width", &v));
    c->width = (int)v;
    if (c->width != 0 && c->width < 120) /* export's own bound, found before the forecasts */
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'maps.width': %d: expected 0 (from the "
                            "grid) or 120..16384 pixels", mp->file, wx_yaml_key_line(mp, "width"),
                            c->width);
    WX_TRY(wx_cfg_str(mp, maps_fields, "vars", &c->vars));
    c->vars_line = wx_yaml_key_line(mp, "vars");
    WX_TRY(wx_cfg_str(mp, maps_fields, "leads", &c->leads));
    return WX_OK;
}

wx_status wx_daily_pattern_fill(const char *pattern, wx_time t, char *out, size_t cap) {
    int64_t y;
    int mo, d, h, mi, s;
    wx_time_split(t, &y, &mo, &d, &h, &mi, &s);
    size_t n = 0;
    out[0] = 0;
    for (const char *p = pattern; *p;) {
        char piece[32];
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (close) {
            size_t len = (size_t)(close - p + 1);
            if (len == 10 && !strncmp(p, "{YYYYMMDD}", len))
                snprintf(piece, sizeof piece, "%04lld%02d%02d", (long long)y, mo, d);
            else if (len == 6 && !strncmp(p, "{YYYY}", len)) snprintf(piece, sizeof piece, "%04lld", (long long)y);
            else if (len == 4 && !strncmp(p, "{MM}", len)) snprintf(piece, sizeof piece, "%02d", mo);
            else if (len == 4 && !strncmp(p, "{DD}", len)) snprintf(piece, sizeof piece, "%02d", d);
            else if (len == 4 && !strncmp(p, "{HH}", len)) snprintf(piece, sizeof piece, "%02d", h);
            else
                return wx_error_set(WX_ERR_USAGE, "analysis.pattern '%s': unknown placeholder '%.*s' "
                                                  "(expected {YYYYMMDD}, {YYYY}, {MM}, {DD} or {HH})",
                                    pattern, (int)len, p);
            p = close + 1;
        } else {
            piece[0] = *p++, piece[1] = 0;
        }
        size_t len = strlen(piece);
        if (n + len + 1 > cap) return wx_error_set(WX_ERR_USAGE, "analysis.pattern '%s': path too long", pattern);
        memcpy(out + n, piece, len + 1);
        n += len;
    }
    return WX_OK;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes a folder tree (our own temporary folder only). */
static void remove_tree(const char *path) {
    if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        wx_log_warn("daily: could not remove %s completely", path);
}

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static wx_status parse_date(const char *text, int64_t hour, wx_time *out) {
    int y, m, d;
    char extra;
    if (!text) {
        wx_time now = (wx_time)time(NULL);
        *out = now - now % 86400 + hour * 3600;
        return WX_OK;
    }
    if (sscanf(text, "%4d-%2d-%2d%c", &y, &m, &d, &extra) != 3 || m < 1 || m > 12 || d < 1 || d > 31 ||
        strlen(text) != 10)
        return wx_error_set(WX_ERR_USAGE, "--date '%s': expected YYYY-MM-DD", text);
    *out = wx_time_make(y, m, d, (int)hour, 0, 0);
    int64_t yy;
    int mo, dd, h, mi, s;
    wx_time_split(*out, &yy, &mo, &dd, &h, &mi, &s);
    if (mo != m || dd != d) return wx_error_set(WX_ERR_USAGE, "--date '%s': no such day", text);
    return WX_OK;
}

/* forecast's prev_path: the drop folder's file for time t (models reading two states find the
 * earlier one there when the day's file does not hold it, e.g. 18 UTC of the day before). */
static wx_status prev_analysis_path(void *user, wx_time t, char *path, size_t cap) {
    const daily_config *c = user;
    char name[WX_DAILY_PATH_MAX];
    WX_TRY(wx_daily_pattern_fill(c->pattern, t, name, sizeof name));
    return wx_path_join(c->drop, name, path, cap);
}

/* The forecast runs of the day into the temporary folder `tmp`. */
static wx_status run_products(const daily_config *c, wx_daily_opts *o, const char *tmp) {
    char nc[WX_DAILY_PATH_MAX + 128], grib[WX_DAILY_PATH_MAX + 128];
    snprintf(nc, sizeof nc, "%s/forecast.nc", tmp);
    snprintf(grib, sizeof grib, "%s/grib", tmp);
    wx_forecast_opts fo = {0};
    fo.model = c->model;
    fo.init = o->analysis;
    fo.time = o->init;
    fo.output = nc;
    fo.threads = o->threads > 0 ? o->threads : (int)c->threads;
    fo.device = c->device, fo.bf16 = c->bf16;
    wx_forecast_ext x;
    memset(&x, 0, sizeof x);
    x.has_time = 1;
    x.lead_s = c->lead_s;
    x.grib_dir = c->grib ? grib : NULL;
    x.prev_path = prev_analysis_path, x.prev_user = (void *)c;
    x.deflate = c->compress ? 4 : 0;
    x.grib_bits = c->grib_bits, x.grib_packing = c->grib_packing;
    if (c->grib) WX_TRY(wx_mkdir_p(grib));
    wx_status st = wx_forecast_run_ext(&fo, &x);
    if (st != WX_OK) return wx_error_wrap(WX_ERR_RUN, "daily: deterministic forecast from %s: ", o->analysis);
    char lead[32];
    wx_time_format_duration(c->lead_s, lead);
    wx_log_info("daily: deterministic forecast: %d variables, lead %s -> forecast.nc%s (%.1f s)", fo.nvars,
                lead, c->grib ? " + grib/" : "", fo.seconds);
    if (c->maps && c->vars[0]) { /* before the ensemble: a wrong name fails now, not after it */
        char what[WX_DAILY_PATH_MAX + 64];
        snprintf(what, sizeof what, "%s: line %d: key 'maps.vars'", o->config, c->vars_line);
        WX_TRY(wx_export_check_vars(nc, c->vars, what, "the model's forecast"));
    }
    if (c->members > 1) {
        snprintf(nc, sizeof nc, "%s/ensemble.nc", tmp);
        snprintf(grib, sizeof grib, "%s/grib_ensemble", tmp);
        if (c->grib) WX_TRY(wx_mkdir_p(grib));
        wx_forecast_opts eo = fo;
        eo.output = nc;
        x.members = c->members;
        x.perturbation = c->perturbation;
        x.amplitude = c->amplitude;
        x.seed = (uint64_t)c->seed;
        st = wx_forecast_run_ext(&eo, &x);
        if (st != WX_OK) return wx_error_wrap(WX_ERR_RUN, "daily: ensemble from %s: ", o->analysis);
        o->members = c->members;
        wx_log_info("daily: ensemble: %d members -> ensemble.nc, ensemble_mean.nc, ensemble_spread.nc%s "
                    "(%.1f s)", c->members, c->grib ? " + grib_ensemble/" : "", eo.seconds);
    }
    if (c->maps) {
        snprintf(nc, sizeof nc, "%s/forecast.nc", tmp);
        wx_export_opts eo;
        wx_export_opts_default(&eo);
        eo.forecast = nc;
        eo.output = tmp;
        eo.vars = c->vars[0] ? c->vars : NULL;
        eo.leads = c->leads[0] ? c->leads : NULL;
        eo.celsius = !c->kelvin, eo.coast = c->coast, eo.wind = c->wind, eo.width = c->width;
        wx_export_result r;
        st = wx_export_run(&eo, &r);
        if (st != WX_OK) return wx_error_wrap(WX_ERR_RUN, "daily: maps: ");
        o->npng = r.npng;
        wx_log_info("daily: maps: %d variables x %d leads = %d PNG, %d wind layers, index.html", r.nvars,
                    r.nleads, r.npng, r.nwind_files);
    }
    return WX_OK;
}

/* maps.leads as export reads it ("24", "0-72", "0-240/24", hours): every item must name at
 * least one of the forecast's leads 0, step, .., lead, or the maps would fail after the forecast. */
static wx_status check_map_leads(const wx_yaml *root, const char *list, int64_t lead_s, int64_t step) {
    if (!list[0]) return WX_OK;
    const wx_yaml *mp = wx_yaml_get(root, "maps");
    int line = wx_yaml_key_line(mp, "leads");
    char *buf = wx_strdup(list);
    wx_status st = WX_OK;
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t && st == WX_OK;
         t = strtok_r(NULL, ", ", &save)) {
        char what[600];
        snprintf(what, sizeof what, "%s: line %d: key 'maps.leads'", root->file, line);
        double a, b, every;
        if ((st = wx_export_lead_item(t, what, &a, &b, &every))) break;
        int hit = 0;
        for (int64_t k = 0; k * step <= lead_s && !hit; k++)
            hit = wx_export_lead_in((double)(k * step) / 3600.0, a, b, every);
        /* a stepped range names every value up to the lead: each must be a lead of the forecast
         * (0-24/5 on 6 h steps would fail in export, after the forecasts) */
        for (double h = a; hit && every > 0 && h <= fmin(b, lead_s / 3600.0) + 1e-9; h += every)
            if (fabs(remainder(h * 3600.0, (double)step)) > 1e-6) {
                char ss[32];
                wx_time_format_duration(step, ss);
                st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'maps.leads': '%s' asks for "
                                  "+%gh, not a lead of the forecast (every %s)", root->file, line,
                                  t, h, ss);
                break;
            }
        if (st != WX_OK) break;
        if (!hit) {
            const char *sl = "24h";
            wx_yaml_as_string(wx_yaml_get(root, "lead"), "lead", &sl);
            char ss[32];
            wx_time_format_duration(step, ss);
            st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'maps.leads': '%s' matches no lead of "
                              "the forecast (0 to lead %s every %s, in hours)", root->file, line, t, sl, ss);
        }
    }
    free(buf);
    return st;
}

/* The keys that need the model: the checkpoint named by `model` is read once here (its DATA
 * time step) so a `lead` the model cannot reach is a config error before any work. */
static wx_status check_model_keys(const wx_yaml *root, const daily_config *c) {
    if (access(c->model, R_OK) != 0)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'model': %s: %s", root->file,
                            wx_yaml_key_line(root, "model"), c->model,
                            errno == ENOENT ? "does not exist" : strerror(errno));
    wx_checkpoint ck;
    wx_status st = wx_checkpoint_read(c->model, &ck);
    if (st != WX_OK)
        return wx_error_wrap(st, "%s: line %d: key 'model': ", root->file, wx_yaml_key_line(root, "model"));
    wx_yaml *data = NULL;
    int64_t step = 0;
    if (!ck.data_text)
        st = wx_error_set(WX_ERR_RUN, "%s: checkpoint without a DATA section (key 'model' of %s)",
                          c->model, root->file);
    if (st == WX_OK) st = wx_yaml_load_string(ck.data_text, c->model, &data);
    if (st == WX_OK) st = wx_yaml_as_int(wx_yaml_get(data, "time_step_s"), "DATA.time_step_s", &step);
    wx_yaml_free(data);
    wx_checkpoint_free(&ck);
    if (st != WX_OK) return wx_error_wrap(st, "%s: ", c->model);
    if (step > 0 && c->lead_s % step) {
        const char *lead = "";
        wx_yaml_as_string(wx_yaml_get(root, "lead"), "lead", &lead);
        char sstep[32];
        wx_time_format_duration(step, sstep);
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'lead': %s is not a multiple of the "
                            "model's %s step (model %s)", root->file, wx_yaml_key_line(root, "lead"),
                            lead, sstep, c->model);
    }
    return check_map_leads(root, c->maps ? c->leads : "", c->lead_s, step);
}

/* Removes the temporary folders of this date's earlier runs that were killed (SIGKILL, a crash,
 * a reboot: no handler ran) — ".tmp-<stamp>-<pid>" whose process no longer exists on this
 * machine. A live pid's folder is left alone: that run may still finish. */
static void remove_stale_tmp(const char *output, const char *stamp) {
    DIR *d = opendir(output);
    if (!d) return;
    char prefix[64];
    int np = snprintf(prefix, sizeof prefix, ".tmp-%s-", stamp);
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, (size_t)np)) continue;
        char *end;
        long pid = strtol(e->d_name + np, &end, 10);
        if (*end || !wx_fs_pid_gone(pid)) continue;
        char path[WX_DAILY_PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", output, e->d_name);
        remove_tree(path);
        wx_log_info("daily: removed %s, left by a run (pid %ld) that no longer exists", path, pid);
    }
    closedir(d);
}

/* crc32 of a file's bytes (0 when it cannot be read: the run then fails on the analysis). A 0.25°
 * analysis is ~0.3 GB: a fraction of a second, against the forecasts it may spare. */
static unsigned file_crc32(const char *path) {
    uint32_t crc;
    uint64_t n;
    if (wx_fs_crc32(path, UINT64_MAX, &crc, &n) != WX_OK) {
        wx_error_clear();
        return 0;
    }
    return crc;
}

/* What a day's products were made from (daily.json in the dated folder, written last): a rerun
 * with the same text is done; another analysis file (or the same name rewritten), model, lead,
 * ensemble or product set is not. */
static char *run_stamp(const daily_config *c, const wx_daily_opts *o) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WX_ASSERT(f != NULL);
    struct stat sb;
    wx_json j;
    wx_json_init(&j, f);
    wx_json_object_begin(&j);
    wx_json_kv_string(&j, "format", "wxcast-daily-1");
    char real[PATH_MAX]; /* the files, as any working folder names them */
    wx_json_kv_string(&j, "analysis", realpath(o->analysis, real) ? real : o->analysis);
    /* a corrected analysis delivered late under the same name is another start; the same bytes
     * delivered again (rsync, cp: a new mtime) are not */
    wx_json_kv_int(&j, "analysis_bytes", stat(o->analysis, &sb) == 0 ? (int64_t)sb.st_size : -1);
    char crc[16];
    snprintf(crc, sizeof crc, "%08x", file_crc32(o->analysis));
    wx_json_kv_string(&j, "analysis_crc32", crc);
    wx_json_kv_string(&j, "model", realpath(c->model, real) ? real : c->model);
    /* a retrained checkpoint under the same name is another model */
    wx_json_kv_int(&j, "model_bytes", stat(c->model, &sb) == 0 ? (int64_t)sb.st_size : -1);
    snprintf(crc, sizeof crc, "%08x", file_crc32(c->model)); /* a retrained model of one size */
    wx_json_kv_string(&j, "model_crc32", crc);
    wx_json_kv_int(&j, "lead_s", c->lead_s);
    wx_json_kv_int(&j, "members", c->members > 1 ? c->members : 0);
    if (c->members > 1) {
        wx_json_kv_string(&j, "perturbation", wx_perturbation_name(c->perturbation));
        wx_json_kv_number_exact(&j, "amplitude", c->amplitude);
        wx_json_kv_int(&j, "seed", c->seed);
    }
    wx_json_kv_bool(&j, "grib", c->grib);
    wx_json_kv_bool(&j, "maps", c->maps);
    wx_json_kv_string(&j, "maps_vars", c->maps ? c->vars : "");
    wx_json_kv_string(&j, "maps_leads", c->maps ? c->leads : "");
    wx_json_object_end(&j);
    fputc('\n', f);
    fclose(f);
    return text;
}

/* Whether a finished day's daily.json (`have`) says what `want` says. The analysis's size and
 * crc32 and the model's crc32 are keys an older wxcast did not record (before 2026-12-01): their
 * absence is no difference, nor is an older numeric perturbation; numbers compare as numbers (a
 * file rewritten by another tool may print 0.1 for 0.10000000000000001). A stamp that does not
 * parse (a path with bytes libyaml refuses) is compared as text. */
static int same_file_name(const char *a, const char *b) { /* paths: the file, not its spelling */
    char ra[PATH_MAX], rb[PATH_MAX];
    return !strcmp(a, b) || (realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb));
}

static int stamps_agree(const char *have, const char *want, char *differs, size_t cap) {
    wx_yaml *h = NULL, *w = NULL;
    int parsed = wx_yaml_load_string(have, "daily.json", &h) == WX_OK &&
                 wx_yaml_load_string(want, "daily.json", &w) == WX_OK && h->kind == WX_YAML_MAP &&
                 w->kind == WX_YAML_MAP;
    wx_error_clear();
    int same = parsed ? 1 : !strcmp(have, want);
    /* the analysis removed from the drop folder once its day was done: nothing to compare */
    const wx_yaml *ab = parsed ? wx_yaml_get(w, "analysis_bytes") : NULL;
    int gone = ab && ab->kind == WX_YAML_SCALAR && !strcmp(ab->scalar, "-1");
    snprintf(differs, cap, "%s", parsed ? "" : "its text");
    for (int k = 0; parsed && same && k < w->count; k++) {
        const char *key = w->keys[k];
        const wx_yaml *a = wx_yaml_get(h, key), *b = w->items[k];
        int analysis_id = !strcmp(key, "analysis_bytes") || !strcmp(key, "analysis_crc32");
        if ((analysis_id || !strcmp(key, "analysis")) && gone) continue;
        if (!a && !strcmp(key, "model_crc32")) { /* an older stamp: the model's mtime instead */
            const wx_yaml *mt = wx_yaml_get(h, "model_mtime"), *mp = wx_yaml_get(w, "model");
            struct stat sb;
            same = !mt || (mp && mp->kind == WX_YAML_SCALAR && stat(mp->scalar, &sb) == 0 &&
                           mt->kind == WX_YAML_SCALAR && atoll(mt->scalar) == (long long)sb.st_mtime);
        } else if (!a) same = analysis_id;
        else if (a->kind != WX_YAML_SCALAR || b->kind != WX_YAML_SCALAR) same = 0;
        else {
            const char *av = a->scalar;
            char *end, *ea, *eb;
            long num = strtol(av, &end, 10);
            if (!strcmp(key, "perturbation") && !a->quoted && !*end && end != av)
                av = wx_perturbation_name((wx_perturbation)num);
            double x = strtod(av, &ea), y = strtod(b->scalar, &eb);
            int numbers = !a->quoted && !b->quoted && *av && *b->scalar && !*ea && !*eb;
            if (!strcmp(key, "analysis") || !strcmp(key, "model")) same = same_file_name(av, b->scalar);
            else same = numbers ? x == y : !strcmp(av, b->scalar);
        }
        if (!same) snprintf(differs, cap, "%s", key);
    }
    wx_yaml_free(h);
    wx_yaml_free(w);
    return same;
}

/* WX_OK when o->folder holds a finished run of `want`; else why not (exit 2: the user decides
 * between keeping it and --force). */
static wx_status finished_check(const wx_daily_opts *o, const char *want) {
    char path[WX_DAILY_PATH_MAX + 32], *have = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/daily.json", o->folder);
    if (wx_read_file(path, &have, &len) != WX_OK)
        return wx_error_set(WX_ERR_USAGE, "daily: %s exists but holds no finished run (no "
                            "daily.json; made by hand, or by a wxcast before 2026-12): remove it or "
                            "run with --force to replace it", o->folder);
    char differs[64];
    int same = stamps_agree(have, want, differs, sizeof differs);
    free(have);
    if (same) return WX_OK;
    return wx_error_set(WX_ERR_USAGE, "daily: %s holds a finished run of another configuration "
                        "(analysis, model, lead, ensemble or products differ; here '%s', see %s): "
                        "run with --force to replace it, or keep it", o->folder, differs, path);
}

static wx_status write_stamp(const char *tmp, const char *text) {
    char path[WX_DAILY_PATH_MAX + 96];
    snprintf(path, sizeof path, "%s/daily.json", tmp);
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    fputs(text, f.fp);
    return wx_atomic_commit(&f);
}

static wx_status run(wx_daily_opts *o, const wx_yaml *root, const char *dir) {
    daily_config c;
    WX_TRY(parse_config(root, dir, &c));
    if (o->device) c.device = o->device;
    if (o->precision) c.precision = o->precision;
    c.bf16 = !strcmp(c.precision, "bf16");
    if (c.bf16 && strcmp(c.device, "cuda"))
        return wx_error_set(WX_ERR_USAGE, "%s: precision bf16 needs device cuda (device is %s%s)",
                            o->config, c.device, o->device ? ", from --device" : "");
    WX_TRY(parse_date(o->date, c.init_hour, &o->init));
    char name[WX_DAILY_PATH_MAX];
    WX_TRY(wx_daily_pattern_fill(c.pattern, o->init, name, sizeof name));
    WX_TRY(wx_path_join(c.drop, name, o->analysis, sizeof o->analysis));
    char stamp[32];
    WX_TRY(wx_daily_pattern_fill("{YYYYMMDD}T{HH}", o->init, stamp, sizeof stamp));
    WX_TRY(wx_path_join(c.output, stamp, o->folder, sizeof o->folder));
    /* the model's keys last: a device that cannot run is the forecast's error, reported as before */
    const wx_backend *be;
    if (wx_backend_by_name(c.device, "device", &be) == WX_OK) WX_TRY(check_model_keys(root, &c));
    remove_stale_tmp(c.output, stamp);
    struct stat sb;
    if (lstat(o->folder, &sb) == 0 && !S_ISDIR(sb.st_mode)) /* found only at the final rename */
        return wx_error_set(WX_ERR_USAGE, "daily: %s exists and is not a folder: the day's products "
                            "are renamed to that name; move it away", o->folder);
    /* a cron polling for a late analysis: no day folder, no analysis yet, no checksums read */
    int exists = is_dir(o->folder);
    if (!exists && access(o->analysis, R_OK) != 0)
        return wx_error_set(WX_ERR_RUN, "daily: analysis for %s not found: %s (analysis.folder %s, "
                                        "pattern %s)", stamp, o->analysis, c.drop, c.pattern);
    char *want = run_stamp(&c, o);
    wx_status done = exists ? finished_check(o, want) : WX_ERR_RUN;
    if (done == WX_OK && !o->force) {
        free(want);
        o->skipped = 1;
        wx_log_info("daily: %s: already done with this config, skipped", o->folder);
        return WX_OK;
    }
    if (exists && !o->force) {
        free(want);
        return done;
    }
    if (done == WX_OK) wx_log_info("daily: %s: finished with this config; --force: made again", o->folder);
    wx_status ready = WX_OK;
    if (wx_output_dir_check(c.output, "output") != WX_OK) /* read-only: before the forecasts */
        ready = wx_error_wrap(WX_ERR_USAGE, "%s: line %d: key 'output': ", root->file,
                              wx_yaml_key_line(root, "output"));
    else if (access(o->analysis, R_OK) != 0)
        ready = wx_error_set(WX_ERR_RUN, "daily: analysis for %s not found: %s (analysis.folder %s, "
                                         "pattern %s)", stamp, o->analysis, c.drop, c.pattern);
    if (ready != WX_OK) {
        free(want);
        return ready;
    }
    wx_log_info("daily: %s: analysis %s", stamp, o->analysis);
    char tmp[WX_DAILY_PATH_MAX + 64];
    int n = snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%ld", c.output, stamp, (long)getpid());
    wx_status made = WX_OK;
    if (wx_mkdir_p(c.output) != WX_OK)
        made = wx_error_wrap(WX_ERR_USAGE, "%s: line %d: key 'output': ", root->file,
                             wx_yaml_key_line(root, "output"));
    else if (n < 0 || (size_t)n >= sizeof tmp)
        made = wx_error_set(WX_ERR_USAGE, "output path too long: %s", c.output);
    else {
        remove_tree(tmp); /* a leftover of a crashed run with our pid */
        if (mkdir(tmp, 0777) != 0)
            made = wx_error_set(WX_ERR_RUN, "daily: mkdir %s: %s", tmp, strerror(errno));
    }
    if (made != WX_OK) {
        free(want);
        return made;
    }
    int reg = wx_fs_tmp_register(tmp, 1); /* removed with what it holds on SIGINT/SIGTERM */
    wx_status st = run_products(&c, o, tmp);
    if (st == WX_OK) { /* the forecasts each read the model and the analysis: one replaced
                        * meanwhile (a retrained model, a corrected analysis) mixed two of them */
        char *after = run_stamp(&c, o);
        if (strcmp(after, want))
            st = wx_error_set(WX_ERR_RUN, "daily: %s: the model %s or the analysis %s changed while "
                              "the products were made (they would mix two of them): nothing kept, "
                              "run the day again", stamp, c.model, o->analysis);
        free(after);
    }
    if (st == WX_OK) st = write_stamp(tmp, want);
    free(want);
    char old[WX_DAILY_PATH_MAX + 64] = "";
    if (st == WX_OK && o->force && is_dir(o->folder)) { /* --force: the old folder goes last */
        snprintf(old, sizeof old, "%s/.old-%s-%ld", c.output, stamp, (long)getpid());
        if (rename(o->folder, old) != 0)
            st = wx_error_set(WX_ERR_RUN, "daily: rename %s -> %s: %s", o->folder, old, strerror(errno));
    }
    if (st == WX_OK && rename(tmp, o->folder) != 0) {
        if (is_dir(o->folder)) { /* a concurrent run finished first: its folder is complete */
            o->skipped = 1;
            wx_log_info("daily: %s: finished by another run meanwhile, skipped", o->folder);
        } else {
            st = wx_error_set(WX_ERR_RUN, "daily: rename %s -> %s: %s", tmp, o->folder, strerror(errno));
        }
    }
    if (st != WX_OK || o->skipped) remove_tree(tmp);
    if (old[0]) {
        if (st == WX_OK) {
            remove_tree(old);
            wx_log_info("daily: %s: replaced (--force)", o->folder);
        } else if (!is_dir(o->folder)) {
            rename(old, o->folder); /* the new products failed: the old ones stay */
        }
    }
    wx_fs_tmp_unregister(reg);
    return st;
}

wx_status wx_daily_run(wx_daily_opts *o) {
    o->skipped = 0, o->members = 0, o->npng = 0;
    o->analysis[0] = o->folder[0] = 0;
    double t0 = wx_time_now();
    wx_yaml *root = NULL;
    wx_status st = wx_yaml_load_file(o->config, &root);
    if (st != WX_OK) return wx_error_wrap(WX_ERR_USAGE, "config: ");
    char *tmp = wx_strdup(o->config);
    char dir[WX_DAILY_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", dirname(tmp));
    free(tmp);
    if (!strcmp(dir, ".")) dir[0] = 0;
    st = run(o, root, dir);
    wx_yaml_free(root);
    o->seconds = wx_time_now() - t0;
    return st;
}
