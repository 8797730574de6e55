#include "synth/synth_run.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_config.h"
#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "core/wx_progress.h"
#include "core/wx_yaml.h"
#include "io/grib_write.h"
#include "io/netcdf_write.h"
#include "meteo/wx_catalogue.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"
#include "synth/sw_diag.h"
#include "synth/sw_model.h"

static const wx_cfg_field fields[] = {
    {"truncation", WX_CFG_INT, 0, 5, 341, "21", "spectral truncation T (triangular)", NULL},
    {"nlat", WX_CFG_INT, 0, 3, 2001, "32", "output rows, 90..-90 inclusive", NULL},
    {"nlon", WX_CFG_INT, 0, 4, 4000, "64", "output columns from longitude 0", NULL},
    {"start_year", WX_CFG_INT, 0, 1900, 2200, "2000", "first year (output starts Jan 1 00 UTC)", NULL},
    {"years", WX_CFG_INT, 0, 1, 200, "1", "number of years written", NULL},
    {"days", WX_CFG_INT, 0, 0, 100000, "0", "if > 0: days written instead of years", NULL},
    {"output_step_hours", WX_CFG_INT, 0, 1, 24, "6", "hours between output times (divides 24)", NULL},
    {"spin_up_days", WX_CFG_INT, 0, 0, 10000, "200", "model days run before the first output", NULL},
    {"seed", WX_CFG_INT, 0, 0, 2147483647, "1", "seed of the initial noise and the eddy source", NULL},
    {"perturbation", WX_CFG_FLOAT, 0, -1, 1, "0", "relative height perturbation at the first output (twin runs)", NULL},
    {"variables", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, NULL, "channels (default all): z500 u500 v500 t850 msl u10 v10 t2m tcwv tp", NULL},
    {"formats", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, NULL, "grib and/or netcdf (default netcdf)", NULL},
    {"output", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "synth_out", "output folder", NULL},
    {"prefix", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "synth", "file name prefix", NULL},
    {"relax_days", WX_CFG_FLOAT, 0, 0.5, 1000, "6", "radiative relaxation time of the upper-layer thickness (days)", NULL},
    {"drag_days", WX_CFG_FLOAT, 0, 0.1, 1000, "5", "Rayleigh drag time of the lower layer (days)", NULL},
    {"upper_drag_days", WX_CFG_FLOAT, 0, 0.1, 100000, "40", "Rayleigh drag time of the upper layer (days)", NULL},
    {"hdiff_hours", WX_CFG_FLOAT, 0, 0, 1000, "0", "e-folding time of the del^8 hyperdiffusion at wavenumber T (hours; 0: 3*21/T)", NULL},
    {"baroclinicity", WX_CFG_FLOAT, 0, 0, 10000, "6000", "equator-to-pole drop of the equilibrium upper-layer thickness (m)", NULL},
    {"jet_width", WX_CFG_FLOAT, 0, 2, 60, "12", "half-width of the equilibrium baroclinic zone (tanh scale, degrees latitude)", NULL},
    {"twin_log", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "", "if set: no files; twin runs (the second scaled by 1 + perturbation, 1e-6 if 0) after the spin-up, daily z500 rms difference in double precision written to this text file", NULL},
    {"steps_per_6h", WX_CFG_INT, 0, 0, 1000, "0", "model steps per 6 hours (0: 4.5*truncation/21 rounded up)", NULL},
    {"jet_latitude", WX_CFG_FLOAT, 0, 20, 70, "45", "mean latitude of the equilibrium baroclinic zone (degrees)", NULL},
    {"lower_depth", WX_CFG_FLOAT, 0, 500, 20000, "3000", "mean thickness of the lower layer (m); the internal wave speed is kept", NULL},
    {"wave_speed", WX_CFG_FLOAT, 0, 10, 200, "60", "internal gravity-wave speed (m/s): sets the Rossby radius", NULL},
    {"latent_heating", WX_CFG_FLOAT, 0, 0, 1000, "0", "thickness moved from the lower to the upper layer per mm of condensation (m; 0: off)", NULL},
    {"latent_hours", WX_CFG_FLOAT, 0, 0.1, 1000, "6", "relaxation time of the latent heating (hours)", NULL},
    {"latent_truncation", WX_CFG_FLOAT, 0, 0, 1000, "21", "total wavenumber of the Gaussian low-pass of the latent heating (0: none)", NULL},
    {"min_thickness", WX_CFG_FLOAT, 0, 0, 10000, "0", "a layer thinner than this is refilled from the other one (m; 0: off)", NULL},
    {"min_thickness_hours", WX_CFG_FLOAT, 0, 0.1, 1000, "3", "time scale of that refill (hours)", NULL},
    {"convection", WX_CFG_FLOAT, 0, 0, 100, "0", "rain rate of a convecting column (mm/h; 0: off)", NULL},
    {"convection_trigger", WX_CFG_FLOAT, 0, 0.1, 2, "0.8", "a column convects while its moisture exceeds this fraction of saturation", NULL},
    {"convection_heating", WX_CFG_FLOAT, 0, 0, 10000, "30", "thickness moved from the lower to the upper layer per mm of convective rain (m)", NULL},
    {"convection_truncation", WX_CFG_FLOAT, 0, 0, 1000, "0", "total wavenumber of the Gaussian low-pass of the convective heating (0: none)", NULL},
    {"evaporation_days", WX_CFG_FLOAT, 0, 0.05, 100, "1", "time in which evaporation brings the moisture toward 90 % of saturation over the sea (days)", NULL},
    {"ke_spectrum", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "", "if set: file receiving the time-mean kinetic-energy spectrum (text)", NULL},
    WX_CFG_END,
};

enum { G_PL500, G_PL850, G_SFC, G_N };
static const char *group_names[G_N] = {"pl500", "pl850", "sfc"};
static int chan_group(int c) {
    return c <= WX_SYN_V500 ? G_PL500 : c == WX_SYN_T850 ? G_PL850 : G_SFC;
}

static int fft_size(int min) { /* smallest even 2^a 3^b 5^c >= min */
    for (int n = min + (min & 1);; n += 2) {
        int k = n;
        while (k % 2 == 0) k /= 2;
        while (k % 3 == 0) k /= 3;
        while (k % 5 == 0) k /= 5;
        if (k == 1) return n;
    }
}

typedef struct {
    int selected[WX_SYN_NCHAN];
    int grib, netcdf;
    const char *prefix;
    char dir[1024];
    wx_grid grid;
    wx_grib_writer gw[G_N];
    wx_nc_writer nw[G_N];
    int open[G_N];
    int ncvar[WX_SYN_NCHAN];
    int64_t tindex;
    int files;
    char source[160]; /* NetCDF `source`: the seed and a hash of the config text, so files of two
                         worlds in one folder can be told apart */
} out_state;

static const wx_catalogue_entry *chan_entry(int c) {
    const wx_syn_channel *ch = &wx_syn_channels[c];
    return wx_catalogue_find_kind(ch->var, ch->level ? WX_LEVEL_PRESSURE : WX_LEVEL_SINGLE);
}

/* The one place the output names are made: a month's file of group gi, the static file. */
static void month_path(const out_state *o, int gi, int y, int mo, const char *ext, char *path,
                       size_t cap) {
    snprintf(path, cap, "%s/%s_%s_%04d%02d.%s", o->dir, o->prefix, group_names[gi], y, mo, ext);
}

static void static_path(const out_state *o, const char *ext, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s_static.%s", o->dir, o->prefix, ext);
}

static int group_selected(const out_state *o, int gi) {
    for (int c = 0; c < WX_SYN_NCHAN; c++)
        if (o->selected[c] && chan_group(c) == gi) return 1;
    return 0;
}

/* Every file the run will write, checked before the spin-up (a folder or FIFO in the way, an
 * unwritable folder: usage errors now, not after hours of model time); then files of another
 * run in the folder are warned about: an ingest of the folder would mix the two. */
static void warn_other_runs(const out_state *o, wx_time t0, wx_time t1);

static wx_status check_outputs(const out_state *o, wx_time t0, wx_time t1) {
    WX_TRY(wx_output_dir_check(o->dir, "output"));
    char path[1200];
    const char *ext[2] = {o->grib ? "grib" : NULL, o->netcdf ? "nc" : NULL};
    for (int e = 0; e < 2; e++) {
        if (!ext[e]) continue;
        static_path(o, ext[e], path, sizeof path);
        WX_TRY(wx_output_path_check(path, "output"));
        int64_t y;
        int mo, d, h, mi, sec;
        wx_time_split(t0, &y, &mo, &d, &h, &mi, &sec);
        for (wx_time t = wx_time_make(y, mo, 1, 0, 0, 0); t < t1;) {
            for (int gi = 0; gi < G_N; gi++) {
                if (!group_selected(o, gi)) continue;
                month_path(o, gi, (int)y, mo, ext[e], path, sizeof path);
                WX_TRY(wx_output_path_check(path, "output"));
            }
            if (++mo > 12) mo = 1, y++;
            t = wx_time_make(y, mo, 1, 0, 0, 0);
        }
    }
    warn_other_runs(o, t0, t1);
    return WX_OK;
}

/* Names, in one warning, the files in the output folder that look like a synth run's (prefix,
 * .nc/.grib) but are not this run's: other months, groups or formats. */
static void warn_other_runs(const out_state *o, wx_time t0, wx_time t1) {
    DIR *dir = opendir(o->dir);
    int others = 0;
    char first[256] = "";
    size_t np = strlen(o->prefix);
    for (struct dirent *e; dir && (e = readdir(dir));) {
        const char *n = e->d_name, *dot = strrchr(n, '.');
        if (strncmp(n, o->prefix, np) || n[np] != '_' || !dot ||
            (strcmp(dot, ".nc") && strcmp(dot, ".grib")))
            continue;
        int ours = 0, yy, mm;
        const char *ex = dot + 1;
        int fmt_on = !strcmp(ex, "nc") ? o->netcdf : o->grib;
        if (!strncmp(n + np + 1, "static.", 7)) ours = fmt_on;
        for (int gi = 0; gi < G_N && !ours; gi++) {
            size_t gl = strlen(group_names[gi]);
            if (strncmp(n + np + 1, group_names[gi], gl) || n[np + 1 + gl] != '_' ||
                sscanf(n + np + 2 + gl, "%4d%2d.", &yy, &mm) != 2)
                continue;
            wx_time ms = wx_time_make(yy, mm, 1, 0, 0, 0);
            wx_time me = wx_time_make(mm == 12 ? yy + 1 : yy, mm == 12 ? 1 : mm + 1, 1, 0, 0, 0);
            ours = fmt_on && group_selected(o, gi) && me > t0 && ms < t1;
        }
        if (!ours && !others++) snprintf(first, sizeof first, "%s", n);
    }
    if (dir) closedir(dir);
    if (others)
        wx_log_warn("synth: %s holds %d file%s this run does not write (%s%s): an ingest of the "
                    "folder would mix them with this world; use another --output", o->dir, others,
                    others > 1 ? "s" : "", first, others > 1 ? ", ..." : "");
}

static wx_status open_month(out_state *o, int y, int mo) {
    char path[1200];
    for (int gi = 0; gi < G_N; gi++) {
        int nsel = 0;
        wx_nc_var vars[WX_SYN_NCHAN];
        for (int c = 0; c < WX_SYN_NCHAN; c++)
            if (o->selected[c] && chan_group(c) == gi) {
                const wx_catalogue_entry *e = chan_entry(c);
                o->ncvar[c] = nsel;
                vars[nsel++] = (wx_nc_var){e->nc_name, e->cf_units, e->standard_name,
                                           e->long_name, gi != G_SFC};
            }
        if (!nsel) continue;
        if (o->grib) {
            month_path(o, gi, y, mo, "grib", path, sizeof path);
            WX_TRY(wx_grib_writer_open(&o->gw[gi], path));
        }
        if (o->netcdf) {
            double lev = gi == G_PL500 ? 500 : 850;
            wx_nc_layout L = {o->grid, gi != G_SFC, &lev, nsel, vars, 0, 0,
                              "wxcast synthetic reanalysis (forced shallow-water world)",
                              o->source, 1};
            month_path(o, gi, y, mo, "nc", path, sizeof path);
            wx_status st = wx_nc_writer_open(&o->nw[gi], path, &L);
            if (st != WX_OK) { /* the group's GRIB file is open: its temporary goes too */
                if (o->grib) wx_grib_writer_abort(&o->gw[gi]);
                return st;
            }
        }
        o->open[gi] = 1;
    }
    o->tindex = 0;
    return WX_OK;
}

static wx_status close_month(out_state *o) {
    for (int gi = 0; gi < G_N; gi++) {
        if (!o->open[gi]) continue;
        o->open[gi] = 0;
        if (o->grib) {
            WX_TRY(wx_grib_writer_close(&o->gw[gi]));
            o->files++;
        }
        if (o->netcdf) {
            WX_TRY(wx_nc_writer_close(&o->nw[gi]));
            o->files++;
        }
    }
    return WX_OK;
}

static void abort_all(out_state *o) {
    for (int gi = 0; gi < G_N; gi++)
        if (o->open[gi]) {
            if (o->grib) wx_grib_writer_abort(&o->gw[gi]);
            if (o->netcdf) wx_nc_writer_abort(&o->nw[gi]);
            o->open[gi] = 0;
        }
}

static wx_status write_time(out_state *o, wx_time valid, int64_t step_s, float **f) {
    for (int c = 0; c < WX_SYN_NCHAN; c++) {
        if (!o->selected[c]) continue;
        int gi = chan_group(c);
        const wx_catalogue_entry *e = chan_entry(c);
        if (o->grib) {
            /* accumulations are labelled as the CDS does: reference = start, step = period */
            wx_grib_field gf = {e, wx_syn_channels[c].level, valid, 0, 0, -1, 0};
            if (e->accumulated) {
                gf.ref_time = valid - step_s;
                gf.step_end = step_s;
            }
            WX_TRY(wx_grib_writer_add(&o->gw[gi], &gf, &o->grid, f[c]));
        }
        if (o->netcdf) WX_TRY(wx_nc_writer_put(&o->nw[gi], o->tindex, valid, o->ncvar[c], 0, f[c]));
    }
    o->tindex++;
    return WX_OK;
}

static wx_status write_static(out_state *o, wx_time t0) {
    size_t n = (size_t)o->grid.nlat * o->grid.nlon;
    float *z = wx_malloc(sizeof(float) * n), *lsm = wx_malloc(sizeof(float) * n);
    wx_syn_static(&o->grid, z, lsm);
    const wx_catalogue_entry *ez = wx_catalogue_find_kind("z", WX_LEVEL_STATIC),
                             *el = wx_catalogue_find_kind("lsm", WX_LEVEL_STATIC);
    WX_ASSERT(ez && el);
    char path[1200];
    wx_status st = WX_OK;
    if (o->grib) {
        wx_grib_writer w;
        static_path(o, "grib", path, sizeof path);
        st = wx_grib_writer_open(&w, path);
        wx_grib_field fz = {ez, 0, t0, 0, 0, -1, 0}, fl = {el, 0, t0, 0, 0, -1, 0};
        if (!st) st = wx_grib_writer_add(&w, &fz, &o->grid, z);
        if (!st) st = wx_grib_writer_add(&w, &fl, &o->grid, lsm);
        if (!st) st = wx_grib_writer_close(&w);
        else wx_grib_writer_abort(&w);
        if (!st) o->files++;
    }
    if (!st && o->netcdf) {
        wx_nc_var vars[2] = {{ez->nc_name, ez->cf_units, ez->standard_name, ez->long_name, 0},
                             {el->nc_name, el->cf_units, el->standard_name, el->long_name, 0}};
        wx_nc_layout L = {o->grid, 0, NULL, 2, vars, 0, 0, "wxcast synthetic reanalysis: static fields",
                          o->source, 1};
        wx_nc_writer w;
        static_path(o, "nc", path, sizeof path);
        st = wx_nc_writer_open(&w, path, &L);
        if (!st) st = wx_nc_writer_put(&w, 0, t0, 0, 0, z);
        if (!st) st = wx_nc_writer_put(&w, 0, t0, 1, 0, lsm);
        if (!st) st = wx_nc_writer_close(&w);
        else if (w.path) wx_nc_writer_abort(&w);
        if (!st) o->files++;
    }
    free(z);
    free(lsm);
    return st;
}

/* Time-mean kinetic-energy spectrum: "n E(n)" lines (J kg⁻¹ per total wavenumber). */
static wx_status write_ke(const char *path, const double *ke, int T) {
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    int bad = fprintf(f.fp, "# n  E(n) [J/kg], time mean over the output times\n") < 0;
    for (int n = 1; n <= T; n++) bad |= fprintf(f.fp, "%d %.9e\n", n, ke[n]) < 0;
    if (bad) {
        wx_atomic_abort(&f);
        return wx_error_set(WX_ERR_RUN, "synth: writing %s failed", path);
    }
    return wx_atomic_commit(&f);
}

static wx_status parse_lists(const wx_yaml *root, out_state *o) {
    const wx_yaml *vars = wx_yaml_get(root, "variables"), *fmts = wx_yaml_get(root, "formats");
    for (int c = 0; c < WX_SYN_NCHAN; c++) o->selected[c] = vars ? 0 : 1;
    if (vars && vars->kind == WX_YAML_SEQ && vars->count == 0)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: variables: expected at least one channel "
                            "(or no key: all)", root->file, vars->line);
    for (int i = 0; vars && i < vars->count; i++) {
        const char *name;
        WX_TRY(wx_yaml_as_string(vars->items[i], "variables", &name));
        int found = 0;
        for (int c = 0; c < WX_SYN_NCHAN; c++)
            if (!strcmp(name, wx_syn_channels[c].channel)) o->selected[c] = found = 1;
        if (!found)
            return wx_error_set(WX_ERR_USAGE,
                                "%s: line %d: variables: unknown channel '%s' (expected z500, u500, "
                                "v500, t850, msl, u10, v10, t2m, tcwv or tp)",
                                root->file, vars->items[i]->line, name);
    }
    o->netcdf = fmts ? 0 : 1;
    for (int i = 0; fmts && i < fmts->count; i++) {
        const char *name;
        WX_TRY(wx_yaml_as_string(fmts->items[i], "formats", &name));
        if (!strcmp(name, "grib")) o->grib = 1;
        else if (!strcmp(name, "netcdf")) o->netcdf = 1;
        else
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: formats: unknown format '%s' (expected "
                                "grib or netcdf)", root->file, fmts->items[i]->line, name);
    }
    if (!o->grib && !o->netcdf)
        return wx_error_set(WX_ERR_USAGE, "%s: formats: no format selected", root->file);
    return WX_OK;
}

/* Twin experiment on the model state itself: the output files are float32, whose resolution
 * near z500 ≈ 55 000 m² s⁻² (0.004) is larger than the initial difference of 1e-6 twins. */
static wx_status run_twins(wx_sw_model *m, const char *path, double pert, double days) {
    while (m->time < -0.5 * m->par.dt) WX_TRY(wx_sw_model_step(m));
    wx_sw_model b;
    WX_TRY(wx_sw_model_clone(&b, m));
    wx_sw_model_perturb(&b, pert);
    double *za = wx_malloc(sizeof(double) * m->ngrid), *zb = wx_malloc(sizeof(double) * m->ngrid);
    int64_t per_day = llround(86400.0 / m->par.dt);
    wx_atomic_file f;
    wx_status st = wx_atomic_open(&f, path);
    if (!st) {
        int bad = fprintf(f.fp, "# day  z500 rms twin difference (m2 s-2), relative perturbation %.3g\n",
                          pert) < 0;
        for (int d = 0; !st && d <= (int)days; d++) {
            bad |= fprintf(f.fp, "%d %.9e\n", d, wx_sw_model_z500_diff(m, &b, za, zb)) < 0;
            for (int64_t s = 0; !st && d < (int)days && s < per_day; s++) {
                st = wx_sw_model_step(m);
                if (!st) st = wx_sw_model_step(&b);
            }
        }
        if (!st && bad) st = wx_error_set(WX_ERR_RUN, "synth: writing %s failed", path);
        if (st) wx_atomic_abort(&f);
        else st = wx_atomic_commit(&f);
    }
    free(za);
    free(zb);
    wx_sw_model_free(&b);
    return st;
}

static wx_status run(const wx_yaml *root, wx_synth_opts *opts, out_state *o, wx_sw_model *m,
                     wx_syn_diag *dg, float **f) {
    int64_t T, nlat, nlon, y0, years, days, step_h, spin, seed;
    double pert;
    WX_TRY(wx_cfg_int(root, fields, "truncation", &T));
    WX_TRY(wx_cfg_int(root, fields, "nlat", &nlat));
    WX_TRY(wx_cfg_int(root, fields, "nlon", &nlon));
    WX_TRY(wx_cfg_int(root, fields, "start_year", &y0));
    WX_TRY(wx_cfg_int(root, fields, "years", &years));
    WX_TRY(wx_cfg_int(root, fields, "days", &days));
    WX_TRY(wx_cfg_int(root, fields, "output_step_hours", &step_h));
    WX_TRY(wx_cfg_int(root, fields, "spin_up_days", &spin));
    WX_TRY(wx_cfg_int(root, fields, "seed", &seed));
    WX_TRY(wx_cfg_double(root, fields, "perturbation", &pert));
    WX_TRY(wx_cfg_str(root, fields, "prefix", &o->prefix));
    const char *outdir;
    WX_TRY(wx_cfg_str(root, fields, "output", &outdir));
    if (opts->output) outdir = opts->output;
    snprintf(o->dir, sizeof o->dir, "%s", outdir);
    snprintf(opts->output_dir, sizeof opts->output_dir, "%s", outdir);
    if (24 % step_h)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'output_step_hours': %lld does not "
                            "divide 24 (expected 1, 2, 3, 4, 6, 8, 12 or 24)", root->file,
                            wx_yaml_key_line(root, "output_step_hours"), (long long)step_h);
    WX_TRY(parse_lists(root, o));
    WX_TRY(wx_grid_make((int)nlat, (int)nlon, 90.0, 180.0 / (nlat - 1), 0.0, 360.0 / nlon, &o->grid));

    wx_sw_params p;
    int glon = fft_size(3 * (int)T + 1);
    wx_sw_params_default(&p, (int)T, glon / 2, glon);
    double d;
    int64_t per6;
    WX_TRY(wx_cfg_double(root, fields, "relax_days", &d));
    p.tau_rad = d * 86400;
    WX_TRY(wx_cfg_double(root, fields, "drag_days", &d));
    p.tau_drag[1] = d * 86400;
    WX_TRY(wx_cfg_double(root, fields, "upper_drag_days", &d));
    p.tau_drag[0] = d * 86400;
    WX_TRY(wx_cfg_double(root, fields, "hdiff_hours", &d));
    if (d > 0) p.tau_hdiff = d * 3600;
    WX_TRY(wx_cfg_double(root, fields, "baroclinicity", &p.teq_dh));
    WX_TRY(wx_cfg_double(root, fields, "jet_width", &p.jet_width));
    double c_wave;
    WX_TRY(wx_cfg_double(root, fields, "jet_latitude", &p.jet_lat));
    WX_TRY(wx_cfg_double(root, fields, "lower_depth", &p.depth[1]));
    WX_TRY(wx_cfg_double(root, fields, "wave_speed", &c_wave));
    /* the same formulas as wx_sw_params_default (same bits for the defaults) */
    p.g_red = c_wave * c_wave * (p.depth[0] + p.depth[1]) / (p.depth[0] * p.depth[1]);
    p.t_scale = p.g_red * 6000.0 / 45.0; /* 45 K per 6000 m, whatever `baroclinicity` */
    WX_TRY(wx_cfg_double(root, fields, "latent_heating", &p.latent));
    WX_TRY(wx_cfg_double(root, fields, "latent_hours", &d));
    p.latent_tau = d * 3600;
    WX_TRY(wx_cfg_double(root, fields, "latent_truncation", &p.latent_n));
    WX_TRY(wx_cfg_double(root, fields, "min_thickness", &p.h_min));
    WX_TRY(wx_cfg_double(root, fields, "min_thickness_hours", &d));
    p.tau_hmin = d * 3600;
    WX_TRY(wx_cfg_double(root, fields, "convection", &d));
    p.conv_rate = d / 3600;
    WX_TRY(wx_cfg_double(root, fields, "convection_trigger", &p.conv_rh));
    WX_TRY(wx_cfg_double(root, fields, "convection_heating", &p.conv_heat));
    WX_TRY(wx_cfg_double(root, fields, "convection_truncation", &p.conv_n));
    WX_TRY(wx_cfg_double(root, fields, "evaporation_days", &d));
    p.tau_evap = d * 86400;
    WX_TRY(wx_cfg_int(root, fields, "steps_per_6h", &per6));
    if (per6 > 0) p.dt = 21600.0 / per6;
    const char *ke_path, *twin_path;
    WX_TRY(wx_cfg_str(root, fields, "ke_spectrum", &ke_path));
    WX_TRY(wx_cfg_str(root, fields, "twin_log", &twin_path));
    /* files written at the end of a long run: their folders are checked now, not after it */
    const char *late[] = {"ke_spectrum", "twin_log"}, *late_path[] = {ke_path, twin_path};
    for (int k = 0; k < 2; k++)
        if (*late_path[k] && wx_output_path_check(late_path[k], late[k]) != WX_OK)
            return wx_error_wrap(WX_ERR_USAGE, "%s: line %d: ", root->file, wx_yaml_key_line(root, late[k]));
    p.seed = (uint64_t)seed;
    { /* FNV-1a of the effective config (defaults filled in, so `jet_width: 12` and no key are
       * one world) without the keys that say where it is written, and without the seed */
        uint64_t h = 1469598103934665603ULL;
        char *text = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&text, &len);
        WX_ASSERT(mf != NULL);
        wx_cfg_print(mf, root, fields, 0);
        fclose(mf);
        for (char *line = text; line && *line;) {
            char *nl = strchr(line, '\n');
            size_t n = nl ? (size_t)(nl - line) : strlen(line);
            if (strncmp(line, "output:", 7) && strncmp(line, "ke_spectrum:", 12) &&
                strncmp(line, "twin_log:", 9) && strncmp(line, "seed:", 5)) /* named apart */
                for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)line[k]) * 1099511628211ULL;
            line = nl ? nl + 1 : NULL;
        }
        free(text);
        snprintf(o->source, sizeof o->source, "wxcast synth, seed %lld, config %016llx",
                 (long long)seed, (unsigned long long)h);
    }
    if (fmod(step_h * 3600.0, p.dt) != 0) p.dt = step_h * 3600.0 / ceil(step_h * 3600.0 / p.dt);

    wx_time t0 = wx_time_make(y0, 1, 1, 0, 0, 0);
    wx_time t1 = days > 0 ? t0 + days * 86400 : wx_time_make(y0 + years, 1, 1, 0, 0, 0);
    double doy0 = wx_time_day_of_year(t0) - 1;
    if (!*twin_path) WX_TRY(check_outputs(o, t0, t1));
    WX_TRY(wx_sw_model_init(m, &p, doy0, -spin * 86400.0));
    if (*twin_path) {
        snprintf(opts->twin_log, sizeof opts->twin_log, "%s", twin_path);
        opts->twin_days = (int)((t1 - t0) / 86400);
        return run_twins(m, twin_path, pert != 0 ? pert : 1e-6, (double)(t1 - t0) / 86400.0);
    }
    WX_TRY(wx_syn_diag_init(dg, m, &o->grid));
    WX_TRY(wx_mkdir_p(o->dir));
    WX_TRY(write_static(o, t0));

    int64_t step_s = step_h * 3600, nout = (t1 - t0) / step_s;
    /* spin-up; the accumulator restarts one output step before the first output */
    wx_progress spin_prog;
    if (spin > 0) wx_progress_start(&spin_prog, "synth spin-up", spin, "model days");
    while (m->time < -0.5 * p.dt) {
        if (fabs(m->time + step_s) < 0.5 * p.dt) memset(m->precip_acc, 0, sizeof(double) * m->ngrid);
        WX_TRY(wx_sw_model_step(m));
        if (spin > 0) wx_progress_update(&spin_prog, spin + (int64_t)floor(m->time / 86400.0 + 1e-9), NULL);
    }
    if (spin > 0) wx_progress_finish(&spin_prog);
    if (pert != 0) wx_sw_model_perturb(m, pert);
    wx_progress prog;
    wx_progress_start(&prog, "synth", nout, "steps");
    int cur_month = -1;
    int64_t per_out = (int64_t)llround(step_s / p.dt);
    double *ke_mean = *ke_path ? wx_calloc(T + 1, sizeof(double)) : NULL;
    double *ke_now = *ke_path ? wx_calloc(T + 1, sizeof(double)) : NULL;
    for (int64_t k = 0; k < nout; k++) {
        wx_time valid = t0 + k * step_s;
        int64_t y;
        int mo, dd, hh, mi, ss;
        wx_time_split(valid, &y, &mo, &dd, &hh, &mi, &ss);
        if (mo != cur_month) {
            WX_TRY(close_month(o));
            WX_TRY(open_month(o, (int)y, mo));
            cur_month = mo;
        }
        double doy = fmod(doy0 + (valid - t0) / 86400.0, 365.0);
        wx_syn_diagnose(dg, m, (double)(valid % 86400), doy, f);
        if (ke_mean) {
            wx_sw_model_ke_spectrum(m, ke_now);
            for (int n = 0; n <= T; n++) ke_mean[n] += ke_now[n] / nout;
        }
        WX_TRY(write_time(o, valid, step_s, f));
        opts->times_written++;
        wx_progress_update(&prog, k + 1, NULL);
        if (k + 1 < nout)
            for (int64_t s = 0; s < per_out; s++) WX_TRY(wx_sw_model_step(m));
    }
    WX_TRY(close_month(o));
    wx_progress_finish(&prog);
    if (ke_mean) {
        wx_status st = write_ke(ke_path, ke_mean, (int)T);
        free(ke_mean);
        free(ke_now);
        WX_TRY(st);
    }
    opts->files_written = o->files;
    return WX_OK;
}

wx_status wx_synth_run(const char *config_path, wx_synth_opts *opts) {
    wx_yaml *root = NULL;
    wx_status st = wx_yaml_load_file(config_path, &root);
    if (st) return st;
    st = wx_cfg_validate(root, "", fields);
    if (!st && opts->print_config) {
        wx_cfg_print(stdout, root, fields, 0);
        wx_yaml_free(root);
        return WX_OK;
    }
    out_state o;
    memset(&o, 0, sizeof o);
    wx_sw_model m;
    memset(&m, 0, sizeof m);
    wx_syn_diag dg;
    memset(&dg, 0, sizeof dg);
    float *f[WX_SYN_NCHAN] = {0};
    if (!st) {
        int64_t nlat, nlon;
        st = wx_cfg_int(root, fields, "nlat", &nlat);
        if (!st) st = wx_cfg_int(root, fields, "nlon", &nlon);
        for (int c = 0; !st && c < WX_SYN_NCHAN; c++) f[c] = wx_malloc(sizeof(float) * nlat * nlon);
    }
    if (!st) st = run(root, opts, &o, &m, &dg, f);
    if (st) abort_all(&o);
    if (m.nspec) wx_sw_model_free(&m);
    if (dg.row) wx_syn_diag_free(&dg);
    for (int c = 0; c < WX_SYN_NCHAN; c++) free(f[c]);
    wx_yaml_free(root);
    return st;
}
