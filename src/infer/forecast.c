#include "infer/forecast.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/wx_progress.h"
#include "core/wx_timer.h"
#include "infer/forecast_write.h"
#include "infer/rollout.h"
#include "io/archive.h"

/* Record index of time t, or a usage error naming the archive's axis. */
static wx_status time_index(const wx_archive_meta *m, const char *dir, wx_time t, int64_t *idx) {
    int64_t d = t - m->start;
    if (d < 0 || d % m->step != 0 || d / m->step >= m->count) {
        char a[32], b[32], s[32];
        wx_time_format(t, s);
        wx_time_format(m->start, a);
        wx_time_format(m->start + (m->count - 1) * m->step, b);
        return wx_error_set(WX_ERR_USAGE, "--time %s is not a record of %s (%s .. %s every %llds)",
                            s, dir, a, b, (long long)m->step);
    }
    *idx = d / m->step;
    return WX_OK;
}

wx_status wx_forecast_run(wx_forecast_opts *o) {
    if (o->steps < 0) return wx_error_set(WX_ERR_USAGE, "--steps %lld: expected >= 0", (long long)o->steps);
    double t0 = wx_time_now();
    wx_rollout *r = NULL;
    wx_archive *ar = NULL;
    WX_TRY(wx_rollout_open(o->model, o->threads, 1, &r));
    wx_archive_opts ao = {.threads = 2, .check_crc = 1};
    wx_status st = wx_archive_open(o->init, &ao, &ar);
    const wx_archive_meta *m = st == WX_OK ? wx_archive_meta_of(ar) : NULL;
    int *map_in = wx_calloc((size_t)r->nin, sizeof(int)), *map_out = wx_calloc((size_t)r->nout, sizeof(int));
    int64_t idx = 0;
    if (st == WX_OK) st = wx_rollout_match_archive(r, m, map_in, map_out);
    if (st == WX_OK) st = time_index(m, o->init, o->time, &idx);
    size_t P = m ? (size_t)wx_archive_points(m) : 0, hw = (size_t)(r->h * r->w);
    float *rec = m ? wx_malloc(sizeof(float) * P * (size_t)m->nchan) : NULL;
    float *out = wx_malloc(sizeof(float) * hw * (size_t)r->nout);
    if (st == WX_OK) st = wx_archive_read(ar, &idx, 1, rec);
    wx_forecast_writer fw;
    int open = 0;
    if (st == WX_OK) {
        wx_archive_channel *chans = wx_calloc((size_t)r->nout, sizeof *chans);
        for (int c = 0; c < r->nout; c++) chans[c] = m->chan[map_out[c]];
        st = wx_forecast_writer_open(&fw, o->output, &r->grid, r->nout, chans, o->time, o->model);
        free(chans);
        open = st == WX_OK;
    }
    /* Lead 0: the archive's own values (model rows only), untouched by normalisation. */
    for (int c = 0; st == WX_OK && c < r->nout; c++)
        for (size_t p = 0; p < hw; p++) out[(size_t)c * hw + p] = rec[(size_t)map_out[c] * P + p];
    if (st == WX_OK) st = wx_forecast_writer_put(&fw, o->time, out);
    if (st == WX_OK) st = wx_rollout_set_state(r, rec, m, map_in, 1);
    wx_progress p;
    int show = o->progress && st == WX_OK;
    if (show) wx_progress_start(&p, "forecast", o->steps, "steps");
    for (int64_t k = 1; st == WX_OK && k <= o->steps; k++) {
        st = wx_rollout_step(r);
        if (st == WX_OK) wx_rollout_output(r, out);
        if (st == WX_OK) st = wx_forecast_writer_put(&fw, o->time + k * r->step_s, out);
        if (show) wx_progress_update(&p, k, "lead +%lldh", (long long)(k * r->step_s / 3600));
    }
    if (show) wx_progress_finish(&p);
    if (open) {
        if (st == WX_OK) st = wx_forecast_writer_close(&fw);
        else wx_forecast_writer_abort(&fw);
    }
    o->step_s = r->step_s;
    o->nvars = r->nout;
    o->seconds = wx_time_now() - t0;
    free(rec), free(out), free(map_in), free(map_out);
    wx_archive_close(ar);
    wx_rollout_close(r);
    return st;
}
