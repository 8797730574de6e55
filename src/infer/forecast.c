#include "infer/forecast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "core/wx_progress.h"
#include "core/wx_timer.h"
#include "infer/forecast_init.h"
#include "infer/forecast_precip.h"
#include "infer/forecast_write.h"
#include "infer/rollout.h"
#include "io/archive.h"
#include "io/wx_source.h"

/* Record index of time t, or a usage error naming the archive's axis. */
static wx_status time_index(const wx_archive_meta *m, const char *dir, wx_time t, int64_t *idx) {
    int64_t d = t - m->start;
    if (d < 0 || d % m->step != 0 || d / m->step >= m->count) {
        char a[32], b[32], s[32], st[32];
        wx_time_format(t, s);
        wx_time_format(m->start, a);
        wx_time_format(m->start + (m->count - 1) * m->step, b);
        wx_time_format_duration(m->step, st);
        return wx_error_set(WX_ERR_USAGE, "--time %s is not a record of %s (%s .. %s every %s)",
                            s, dir, a, b, st);
    }
    *idx = d / m->step;
    return WX_OK;
}

/* The window's earlier records (models reading W states: t − (W−1)·step .. t) inside the archive. */
static wx_status window_index(const wx_archive_meta *m, const char *dir, wx_time t, int64_t idx,
                              int64_t W, int64_t step_s) {
    if (W <= 1) return WX_OK;
    char ms[32], as[32];
    wx_time_format_duration(step_s, ms), wx_time_format_duration(m->step, as);
    if (step_s % m->step)
        return wx_error_set(WX_ERR_USAGE, "%s: the model step %s is not a multiple of the "
                            "archive step %s", dir, ms, as);
    if (idx - (W - 1) * (step_s / m->step) < 0) {
        char s[32], a[32];
        wx_time_format(t, s);
        wx_time_format(m->start, a);
        return wx_error_set(WX_ERR_USAGE, "--time %s: the model reads %lld states (every %s) "
                            "up to the initial time; %s starts at %s", s, (long long)W, ms, dir, a);
    }
    return WX_OK;
}

/* 1 when every field of the file with a valid time has the same one (for an error's hint). */
static int file_holds_one_time(const char *path) {
    wx_source *src = NULL;
    if (wx_source_open(path, &src) != WX_OK) return 0;
    int n = 0;
    wx_time first = 0;
    for (int i = 0; i < wx_source_count(src) && n < 2; i++) {
        const wx_field_info *f = wx_source_info(src, i);
        if (!f->has_time) continue;
        if (!n) first = f->valid, n = 1;
        else if (f->valid != first) n = 2;
    }
    wx_source_close(src);
    return n == 1;
}

/* The window of analyses from a file (for window > 1, the same file's earlier times, or for a
 * window of 2 the file `prev` at time − step): rec (W, nchan, P). Without has_time the newest is
 * the earliest time in the file + (W−1)·step, so the file's first W times make the initial
 * condition (with prev: the file's earliest time). */
static wx_status init_window_from_file(const char *path, const char *prev, const wx_rollout *r,
                                       int has_time, wx_time *time, wx_archive_meta *meta,
                                       float **rec, int cli_hint) {
    const int64_t W = r->window;
    if (prev && W != 2)
        return wx_error_set(WX_ERR_USAGE, "--init-prev %s: the %s model reads %lld state%s, not 2",
                            prev, r->family, (long long)W, W == 1 ? "" : "s");
    if (W == 1) return wx_forecast_init_from_file(path, r, has_time, time, meta, rec);
    wx_archive_meta mw;
    float *one = NULL;
    if (!has_time) { /* the file's earliest time starts (or, with prev, ends) the window */
        WX_TRY(wx_forecast_init_from_file(path, r, 0, time, &mw, &one));
        if (!prev) *time += (W - 1) * r->step_s;
        free(one);
        wx_archive_meta_free(&mw);
    }
    *rec = NULL;
    memset(meta, 0, sizeof *meta);
    wx_status st = WX_OK;
    size_t R = 0;
    for (int64_t w = 0; st == WX_OK && w < W; w++) {
        wx_time tw = *time - (W - 1 - w) * r->step_s;
        const char *from = prev && w < W - 1 ? prev : path;
        st = wx_forecast_init_from_file(from, r, 1, &tw, &mw, &one);
        if (st != WX_OK) {
            char a[32], why[1024];
            wx_time_format(*time, a);
            snprintf(why, sizeof why, "%s", wx_error_message());
            /* one file without the earlier state: --init-prev is the way to give it */
            /* cli_hint: only `wxcast forecast` has those options (daily names its own files) */
            const char *hint = cli_hint && !prev && W == 2 && file_holds_one_time(path)
                                   ? " (a file holding one time: give the state one step earlier "
                                     "with --init-prev FILE, and --time)" : "";
            st = wx_error_set(st, "the %s model starts from %lld analyses %gh apart up to "
                              "%s%s%s%s: %s%s", r->family, (long long)W, r->step_s / 3600.0, a,
                              prev ? " (the earlier from " : "", prev ? prev : "", prev ? ")" : "",
                              why, hint);
            break;
        }
        if (w == 0) {
            R = (size_t)wx_archive_points(&mw) * (size_t)mw.nchan;
            *rec = wx_malloc(sizeof(float) * R * (size_t)W);
        } else if ((size_t)wx_archive_points(&mw) * (size_t)mw.nchan != R ||
                   !wx_grid_same(&mw.grid, &meta->grid, 1e-6)) {
            st = wx_error_set(WX_ERR_USAGE, "%s: the fields at the window's times are on different "
                              "grids", path);
        }
        if (st == WX_OK) memcpy(*rec + (size_t)w * R, one, sizeof(float) * R);
        free(one);
        one = NULL;
        if (w > 0) wx_archive_meta_free(meta);
        *meta = mw; /* the newest time's description */
    }
    if (st != WX_OK) {
        free(*rec);
        *rec = NULL;
        wx_archive_meta_free(meta);
        return st;
    }
    meta->start = *time;
    return WX_OK;
}

int wx_forecast_init_is_archive(const char *path) {
    char buf[2048];
    struct stat sb;
    snprintf(buf, sizeof buf, "%s/manifest.json", path);
    return stat(buf, &sb) == 0;
}

/* "<stem>_<what>.nc" beside the NetCDF output (its .nc suffix dropped). */
static void beside(const char *path, const char *what, char *out, size_t len) {
    size_t n = strlen(path);
    if (n > 3 && !strcmp(path + n - 3, ".nc")) n -= 3;
    snprintf(out, len, "%.*s_%s.nc", (int)n, path, what);
}

typedef struct {
    wx_forecast_writer fw, mean, spread;
    int open_fw, open_mean, open_spread;
} writers;

static void writers_abort(writers *w) {
    if (w->open_fw) wx_forecast_writer_abort(&w->fw);
    if (w->open_mean) wx_forecast_writer_abort(&w->mean);
    if (w->open_spread) wx_forecast_writer_abort(&w->spread);
    memset(w, 0, sizeof *w);
}

/* Writes one valid time of b members: out (b, nout, hw); mean/spread for ensembles. */
static wx_status put_time(writers *w, wx_time valid, int64_t b, int nout, size_t hw,
                          const float *out, float *tmp) {
    if (!w->open_mean) return wx_forecast_writer_put(&w->fw, valid, out);
    for (int64_t m = 0; m < b; m++)
        WX_TRY(wx_forecast_writer_put_member(&w->fw, valid, (int)m, out + (size_t)m * nout * hw));
    size_t n = (size_t)nout * hw;
    float *sd = tmp + n;
    for (size_t k = 0; k < n; k++) {
        double s = 0, s2 = 0;
        for (int64_t m = 0; m < b; m++) s += out[(size_t)m * n + k];
        double mu = s / (double)b;
        for (int64_t m = 0; m < b; m++) {
            double d = out[(size_t)m * n + k] - mu;
            s2 += d * d;
        }
        tmp[k] = (float)mu;
        sd[k] = b > 1 ? (float)sqrt(s2 / (double)(b - 1)) : 0.0f;
    }
    WX_TRY(wx_forecast_writer_put(&w->mean, valid, tmp));
    return wx_forecast_writer_put(&w->spread, valid, sd);
}

/* Lead 0 of every member: the (perturbed) state in physical units; output channels that are
 * not inputs (diagnostics) or that the model never reads (unperturbed) keep the initial record.
 * out (b, nout, hw) */
static void lead0(const wx_rollout *r, const float *rec, const wx_archive_meta *m,
                  const int *map_out, float *out) {
    size_t hw = (size_t)(r->h * r->w), P = (size_t)wx_archive_points(m);
    for (int64_t s = 0; s < r->b; s++)
        for (int c = 0; c < r->nout; c++) {
            float *dst = out + ((size_t)s * (size_t)r->nout + (size_t)c) * hw;
            int i = 0;
            while (i < r->nin && strcmp(r->in[i].name, r->out[c].name)) i++;
            if (s == 0 || i == r->nin || wx_rollout_input_unread(r, i)) { /* exact values, untouched
                                                                            * by normalisation */
                memcpy(dst, rec + (size_t)map_out[c] * P, sizeof(float) * hw);
                continue;
            }
            const float *x = r->x + ((size_t)s * (size_t)r->nin + (size_t)i) * hw;
            for (size_t p = 0; p < hw; p++) dst[p] = (float)(x[p] * r->in[i].std + r->in[i].mean);
            if (r->out[c].nonnegative) /* the perturbation was clamped; rounding may leave -1e-9 */
                for (size_t p = 0; p < hw; p++)
                    if (dst[p] < 0) dst[p] = 0;
        }
}

/* --output is always NetCDF: a GRIB name would get a NetCDF file that GRIB tools reject. */
static wx_status check_output_name(const char *path) {
    static const char *const grib[] = {".grib", ".grib1", ".grib2", ".grb", ".grb2", ".gb2"};
    const char *dot = path ? strrchr(path, '.') : NULL;
    for (size_t k = 0; dot && k < sizeof grib / sizeof grib[0]; k++)
        if (!strcasecmp(dot, grib[k]))
            return wx_error_set(WX_ERR_USAGE, "--output %s: --output writes a NetCDF file; for "
                                "GRIB2 give --grib DIR (it writes DIR/forecast_<init>_sfc.grib2 "
                                "and _pl.grib2), and name the NetCDF file .nc or leave --output "
                                "out", path);
    return WX_OK;
}

wx_status wx_forecast_run(wx_forecast_opts *o) { return wx_forecast_run_ext(o, NULL); }

wx_status wx_forecast_run_ext(wx_forecast_opts *o, wx_forecast_ext *xo) {
    wx_forecast_ext none = {0};
    wx_forecast_ext *x = xo ? xo : &none;
    double t0 = wx_time_now();
    WX_TRY(check_output_name(o->output));
    if (wx_forecast_init_is_archive(o->init) && !x->has_time && xo)
        return wx_error_set(WX_ERR_USAGE, "forecast: --time is required with an archive (%s)", o->init);
    int64_t B = x->members > 1 ? x->members : 1;
    int ens = x->members > 1;
    x->mean_path[0] = x->spread_path[0] = 0;
    wx_rollout *r = NULL;
    wx_archive *ar = NULL;
    wx_rollout_opts ro = {.threads = o->threads, .max_batch = B, .device = o->device,
                          .bf16 = o->bf16};
    WX_TRY(wx_rollout_open_opts(o->model, &ro, &r));
    if (x->lead_s > 0 && x->lead_s % r->step_s) {
        char lead[32], step[32];
        wx_time_format_duration(x->lead_s, lead);
        wx_time_format_duration(r->step_s, step);
        wx_rollout_close(r);
        return wx_error_set(WX_ERR_USAGE, "--lead %s is not a multiple of the model's %s step", lead,
                            step);
    }
    if (x->lead_s > 0) o->steps = x->lead_s / r->step_s;
    if (o->steps < 0) {
        wx_rollout_close(r);
        return wx_error_set(WX_ERR_USAGE, "--steps %lld: expected >= 0", (long long)o->steps);
    }
    wx_status st = WX_OK;
    wx_archive_meta fmeta = {0};
    const wx_archive_meta *m = NULL;
    float *rec = NULL; /* (window, nchan, P): the analyses at time − (window−1)·step .. time */
    int64_t idx = 0, W = r->window;
    if (wx_forecast_init_is_archive(o->init) && x->init_prev)
        st = wx_error_set(WX_ERR_USAGE, "--init-prev is for file inits; an archive (%s) has the "
                          "earlier state itself", o->init);
    else if (wx_forecast_init_is_archive(o->init)) {
        wx_archive_opts ao = {.threads = 2, .check_crc = 1};
        st = wx_archive_open(o->init, &ao, &ar);
        if (st == WX_OK) m = wx_archive_meta_of(ar);
        if (st == WX_OK) st = time_index(m, o->init, o->time, &idx);
        if (st == WX_OK) st = window_index(m, o->init, o->time, idx, W, r->step_s);
        if (st == WX_OK) rec = wx_malloc(sizeof(float) * (size_t)wx_archive_points(m) * (size_t)m->nchan * (size_t)W);
        for (int64_t w = 0; st == WX_OK && w < W; w++) {
            int64_t i = idx - (W - 1 - w) * (r->step_s / m->step);
            st = wx_archive_read(ar, &i, 1, rec + (size_t)w * (size_t)wx_archive_points(m) * (size_t)m->nchan);
        }
    } else {
        const char *prev = x->init_prev;
        char cand[4096] = "";
        if (!prev && x->prev_path && W == 2 && x->has_time) {
            st = x->prev_path(x->prev_user, o->time - r->step_s, cand, sizeof cand);
            if (st == WX_OK && cand[0] && strcmp(cand, o->init) != 0 && access(cand, R_OK) == 0) {
                prev = cand;
                wx_log_info("forecast: the state one step before the start from %s", prev);
            }
        }
        if (st == WX_OK) st = init_window_from_file(o->init, prev, r, x->has_time, &o->time, &fmeta, &rec,
                                                    x->prev_path == NULL);
        if (st != WX_OK && !prev && cand[0] && strcmp(cand, o->init) != 0)
            st = wx_error_wrap(st, "the earlier state has no file of its own (%s not found), so it was read "
                               "from %s: ", cand, o->init);
        if (st == WX_OK) m = &fmeta;
    }
    int *map_in = wx_calloc((size_t)r->nin, sizeof(int)), *map_out = wx_calloc((size_t)r->nout, sizeof(int));
    if (st == WX_OK && (st = wx_rollout_match_archive(r, m, map_in, map_out)) != WX_OK)
        st = wx_error_wrap(st, "--init %s: ", o->init);
    size_t P = m ? (size_t)wx_archive_points(m) : 0, hw = (size_t)(r->h * r->w);
    size_t R = m ? P * (size_t)m->nchan : 0;
    const float *newest = rec ? rec + (size_t)(W - 1) * R : NULL;
    float *recs = NULL;
    wx_time *tinit = wx_malloc(sizeof(wx_time) * (size_t)B);
    for (int64_t b = 0; b < B; b++) tinit[b] = o->time;
    if (st == WX_OK) { /* (window, B, nchan, P): each analysis repeated for every member */
        recs = wx_malloc(sizeof(float) * R * (size_t)B * (size_t)W);
        for (int64_t w = 0; w < W; w++)
            for (int64_t b = 0; b < B; b++)
                memcpy(recs + ((size_t)w * (size_t)B + (size_t)b) * R, rec + (size_t)w * R, sizeof(float) * R);
    }
    wx_forecast_precip pc = {0}; /* --precip: tp after the model's channels */
    if (st == WX_OK && o->precip) st = wx_forecast_precip_open(&pc, o->precip, r);
    int nw = r->nout + (pc.diag != NULL);
    float *out = wx_malloc(sizeof(float) * hw * (size_t)nw * (size_t)B);
    float *tmp = wx_malloc(sizeof(float) * hw * (size_t)nw * 2);
    writers w = {0};
    if (st == WX_OK) {
        wx_archive_channel *chans = wx_calloc((size_t)nw, sizeof *chans);
        for (int c = 0; c < r->nout; c++) {
            chans[c] = m->chan[map_out[c]];
            /* an accumulation (tp) has the period the model was trained on (a 12 h model trained
             * on 6 h sums predicts 6 h sums); older checkpoints: the archive's or the step */
            if (r->out[c].accum_s > 0) chans[c].accum_s = r->out[c].accum_s;
        }
        if (pc.diag) chans[r->nout] = wx_forecast_precip_channel(&pc, m, r->step_s);
        wx_forecast_write_opts wo = {o->output, x->grib_dir, NULL, x->deflate, x->grib_bits,
                                     x->grib_packing, ens ? (int)B : 0, r->step_s, o->model,
                                     WX_ENS_NONE, 0};
        st = wx_forecast_space_check(&wo, o->steps + 1, nw, (int64_t)hw);
        if (st == WX_OK) st = wx_forecast_writer_open_opts(&w.fw, &wo, &r->grid, nw, chans, o->time);
        w.open_fw = st == WX_OK;
        if (st == WX_OK && ens && o->output) {
            beside(o->output, "mean", x->mean_path, sizeof x->mean_path);
            beside(o->output, "spread", x->spread_path, sizeof x->spread_path);
            wx_forecast_write_opts wm = {.netcdf = x->mean_path, .deflate = x->deflate,
                                         .step_s = r->step_s, .source = o->model,
                                         .statistic = WX_ENS_MEAN, .stat_members = (int)B};
            st = wx_forecast_writer_open_opts(&w.mean, &wm, &r->grid, nw, chans, o->time);
            w.open_mean = st == WX_OK;
            wm.netcdf = x->spread_path;
            wm.statistic = WX_ENS_SPREAD;
            if (st == WX_OK) st = wx_forecast_writer_open_opts(&w.spread, &wm, &r->grid, nw, chans, o->time);
            w.open_spread = st == WX_OK;
        }
        free(chans);
    }
    if (st == WX_OK) st = wx_rollout_set_state(r, recs, m, map_in, tinit, B);
    if (st == WX_OK && ens)
        st = wx_forecast_perturb(r, x->perturbation, x->amplitude > 0 ? x->amplitude : 0.05, x->seed,
                                 x->bred_cycles > 0 ? x->bred_cycles : 3);
    if (st == WX_OK) {
        lead0(r, newest, m, map_out, out);
        wx_forecast_precip_append(&pc, out, B, r->nout, newest, m);
        st = put_time(&w, o->time, B, nw, hw, out, tmp);
    }
    wx_progress p;
    int show = o->progress && st == WX_OK;
    if (show) wx_progress_start(&p, "forecast", o->steps, "steps");
    for (int64_t k = 1; st == WX_OK && k <= o->steps; k++) {
        st = wx_rollout_step(r);
        if (st == WX_OK) wx_rollout_output(r, out);
        if (st == WX_OK) wx_forecast_precip_append(&pc, out, B, r->nout, NULL, NULL);
        if (st == WX_OK) st = put_time(&w, o->time + k * r->step_s, B, nw, hw, out, tmp);
        if (show) wx_progress_update(&p, k, "lead +%lldh", (long long)(k * r->step_s / 3600));
    }
    if (show) wx_progress_finish(&p);
    if (st == WX_OK && w.open_mean) {
        st = wx_forecast_writer_close(&w.mean);
        w.open_mean = 0;
        if (st == WX_OK) st = wx_forecast_writer_close(&w.spread);
        w.open_spread = 0;
    }
    if (st == WX_OK && w.open_fw) {
        st = wx_forecast_writer_close(&w.fw);
        w.open_fw = 0;
    }
    if (st != WX_OK) {
        writers_abort(&w);
        if (x->mean_path[0]) remove(x->mean_path), remove(x->spread_path);
        x->mean_path[0] = x->spread_path[0] = 0;
    }
    o->step_s = r->step_s;
    o->nvars = nw;
    wx_forecast_precip_close(&pc);
    o->seconds = wx_time_now() - t0;
    free(rec), free(recs), free(tinit), free(out), free(tmp), free(map_in), free(map_out);
    if (ar) wx_archive_close(ar);
    else wx_archive_meta_free(&fmeta);
    wx_rollout_close(r);
    return st;
}
