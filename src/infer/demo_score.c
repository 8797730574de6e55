/* Scores of the demo: model, persistence and climatology per channel and lead, over initial times
 * in the held-out years, accumulated in memory (no forecast files are read back). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_progress.h"
#include "infer/demo.h"
#include "infer/metrics.h"
#include "infer/rollout.h"
#include "io/archive.h"
#include "io/climatology.h"

enum { M_MODEL = 0, M_PERSIST = 1, M_CLIM = 2, NMODELS = 3 };
static const char *const model_names[NMODELS] = {"fourcastnet", WX_EVAL_PERSISTENCE,
                                                 WX_EVAL_CLIMATOLOGY};

/* Initial-time record indices within the test years, every `every` records, with every target
 * (lead_steps·dt records later) inside the years and the archive. */
static int64_t list_inits(const wx_archive_meta *m, const int64_t *years, int64_t every,
                          int64_t reach, int64_t max_inits, int64_t **out) {
    wx_time y0 = wx_time_make(years[0], 1, 1, 0, 0, 0), y1 = wx_time_make(years[1] + 1, 1, 1, 0, 0, 0);
    int64_t n = 0;
    *out = wx_malloc(sizeof(int64_t) * (size_t)(m->count + 1));
    for (int64_t t = 0; t + reach < m->count; t += every) {
        wx_time a = m->start + t * m->step, b = m->start + (t + reach) * m->step;
        if (a < y0 || b >= y1) continue;
        if (max_inits > 0 && n >= max_inits) break;
        (*out)[n++] = t;
    }
    return n;
}

static wx_status alloc_result(wx_demo_scores *s, const wx_rollout *r, const wx_archive_meta *m,
                              const int *map_out, int64_t lead_steps) {
    memset(s, 0, sizeof *s);
    s->nleads = (int)lead_steps;
    s->lead_s = wx_malloc(sizeof(int64_t) * (size_t)lead_steps);
    for (int k = 0; k < s->nleads; k++) s->lead_s[k] = (k + 1) * r->step_s;
    s->nchan = r->nout;
    s->chan = wx_calloc((size_t)r->nout, sizeof *s->chan);
    s->units = wx_calloc((size_t)r->nout, sizeof *s->units);
    wx_eval_result *e = &s->res;
    e->nmodels = NMODELS;
    e->models = wx_calloc(NMODELS, sizeof *e->models);
    for (int i = 0; i < NMODELS; i++) snprintf(e->models[i], 64, "%s", model_names[i]);
    e->nchan = r->nout;
    e->chan_names = wx_calloc((size_t)r->nout, sizeof *e->chan_names);
    e->chan_units = wx_calloc((size_t)r->nout, sizeof *e->chan_units);
    for (int c = 0; c < r->nout; c++) {
        snprintf(s->chan[c], 64, "%s", r->out[c].name);
        snprintf(s->units[c], 32, "%s", m->chan[map_out[c]].units);
        snprintf(e->chan_names[c], 64, "%s", s->chan[c]);
        snprintf(e->chan_units[c], 32, "%s", s->units[c]);
    }
    /* Cells sorted by model, channel, lead: the order wx_eval_write_* expect. */
    e->ncells = NMODELS * r->nout * s->nleads;
    e->cells = wx_calloc((size_t)e->ncells, sizeof *e->cells);
    for (int mo = 0, i = 0; mo < NMODELS; mo++)
        for (int c = 0; c < r->nout; c++)
            for (int k = 0; k < s->nleads; k++, i++)
                e->cells[i] = (wx_eval_cell){.model = mo, .chan = c, .lead_s = s->lead_s[k]};
    e->has_climatology = 1;
    return WX_OK;
}

static wx_score_sums *sums(wx_demo_scores *s, int model, int chan, int k) {
    return &s->res.cells[((size_t)model * (size_t)s->nchan + (size_t)chan) * (size_t)s->nleads + (size_t)k].sums;
}

typedef struct {
    wx_rollout *r;
    wx_archive *ar;
    wx_climatology *clim;
    const wx_archive_meta *m;
    int *map_in, *map_out;
    double *w;                /* (H) area weights of the model grid */
    float *init, *truth, *fc, *cl; /* init/truth records (B, nchan, P); fc (B, Cout, H·W); cl (nchan, P) */
    int64_t *times;
    int64_t dt;               /* archive records per model step */
} scorer;

static wx_status score_batch(scorer *z, wx_demo_score_opts *o, const int64_t *inits, int64_t b,
                             wx_demo_scores *s, int first_batch, wx_progress *p, int64_t *done) {
    const wx_archive_meta *m = z->m;
    wx_rollout *r = z->r;
    size_t P = (size_t)wx_archive_points(m), hw = (size_t)(r->h * r->w), nc = (size_t)m->nchan;
    int H = (int)r->h, W = (int)r->w;
    WX_TRY(wx_archive_read(z->ar, inits, (int)b, z->init));
    WX_TRY(wx_rollout_set_state(r, z->init, m, z->map_in, b));
    for (int k = 0; k < s->nleads; k++) {
        WX_TRY(wx_rollout_step(r));
        wx_rollout_output(r, z->fc);
        for (int64_t i = 0; i < b; i++) z->times[i] = inits[i] + (k + 1) * z->dt;
        WX_TRY(wx_archive_read(z->ar, z->times, (int)b, z->truth));
        for (int64_t i = 0; i < b; i++) {
            wx_time valid = m->start + z->times[i] * m->step;
            WX_TRY(wx_climatology_get_time(z->clim, valid, z->cl));
            for (int c = 0; c < s->nchan; c++) {
                size_t a = (size_t)z->map_out[c];
                const float *f = z->fc + ((size_t)i * (size_t)r->nout + (size_t)c) * hw;
                const float *obs = z->truth + ((size_t)i * nc + a) * P; /* model rows: a prefix */
                const float *per = z->init + ((size_t)i * nc + a) * P;
                const float *cli = z->cl + a * P;
                wx_score_add(sums(s, M_MODEL, c, k), z->w, H, W, f, obs, cli);
                wx_score_add(sums(s, M_PERSIST, c, k), z->w, H, W, per, obs, cli);
                wx_score_add(sums(s, M_CLIM, c, k), z->w, H, W, cli, obs, cli);
                if (first_batch && i == 0 && k + 1 == o->map_step && o->map_chan &&
                    !strcmp(s->chan[c], o->map_chan)) {
                    if (o->map_forecast) memcpy(o->map_forecast, f, sizeof(float) * hw);
                    if (o->map_truth) memcpy(o->map_truth, obs, sizeof(float) * hw);
                }
            }
        }
        wx_progress_update(p, *done + (int64_t)(k + 1) * b, NULL);
    }
    *done += (int64_t)s->nleads * b;
    return WX_OK;
}

wx_status wx_demo_score(wx_demo_score_opts *o, wx_demo_scores *out) {
    memset(out, 0, sizeof *out);
    if (o->lead_steps < 1 || o->batch < 1 || o->init_every_s <= 0)
        return wx_error_set(WX_ERR_USAGE, "demo: lead_steps, batch and init_every must be positive");
    scorer z;
    memset(&z, 0, sizeof z);
    WX_TRY(wx_rollout_open(o->ckpt, o->threads, o->batch, &z.r));
    wx_archive_opts ao = {.threads = 2, .check_crc = 1};
    wx_status st = wx_archive_open(o->archive, &ao, &z.ar);
    if (st == WX_OK) st = wx_climatology_open(o->archive, &z.clim);
    int64_t *inits = NULL, n = 0;
    if (st == WX_OK) {
        z.m = wx_archive_meta_of(z.ar);
        z.map_in = wx_calloc((size_t)z.r->nin, sizeof(int));
        z.map_out = wx_calloc((size_t)z.r->nout, sizeof(int));
        st = wx_rollout_match_archive(z.r, z.m, z.map_in, z.map_out);
    }
    if (st == WX_OK && (z.r->step_s % z.m->step != 0 || o->init_every_s % z.m->step != 0))
        st = wx_error_set(WX_ERR_USAGE, "demo: the model step (%llds) and init_every (%llds) must be "
                          "multiples of the archive step (%llds)", (long long)z.r->step_s,
                          (long long)o->init_every_s, (long long)z.m->step);
    if (st == WX_OK) {
        z.dt = z.r->step_s / z.m->step;
        n = list_inits(z.m, o->test_years, o->init_every_s / z.m->step, o->lead_steps * z.dt,
                       o->max_inits, &inits);
        if (n == 0)
            st = wx_error_set(WX_ERR_USAGE, "demo: no initial time in the test years %lld..%lld of %s "
                              "with %lld steps of data after it", (long long)o->test_years[0],
                              (long long)o->test_years[1], o->archive, (long long)o->lead_steps);
    }
    if (st == WX_OK) st = alloc_result(out, z.r, z.m, z.map_out, o->lead_steps);
    if (st == WX_OK) {
        size_t P = (size_t)wx_archive_points(z.m), nc = (size_t)z.m->nchan, B = (size_t)o->batch;
        z.w = wx_malloc(sizeof(double) * (size_t)z.r->h);
        wx_grid_area_weights(&z.r->grid, z.w);
        z.init = wx_malloc(sizeof(float) * B * nc * P);
        z.truth = wx_malloc(sizeof(float) * B * nc * P);
        z.fc = wx_malloc(sizeof(float) * B * (size_t)(z.r->nout * z.r->h * z.r->w));
        z.cl = wx_malloc(sizeof(float) * nc * P);
        z.times = wx_malloc(sizeof(int64_t) * B);
        o->first_init = z.m->start + inits[0] * z.m->step;
        wx_progress p;
        wx_progress_start(&p, "rollouts", n * o->lead_steps, "steps");
        int64_t done = 0;
        for (int64_t i = 0; st == WX_OK && i < n; i += o->batch) {
            int64_t b = n - i < o->batch ? n - i : o->batch;
            st = score_batch(&z, o, inits + i, b, out, i == 0, &p, &done);
        }
        wx_progress_finish(&p);
        out->res.ninit = n;
    }
    free(inits), free(z.map_in), free(z.map_out), free(z.w);
    free(z.init), free(z.truth), free(z.fc), free(z.cl), free(z.times);
    wx_climatology_close(z.clim);
    wx_archive_close(z.ar);
    wx_rollout_close(z.r);
    return st;
}

void wx_demo_scores_free(wx_demo_scores *s) {
    free(s->lead_s), free(s->chan), free(s->units);
    wx_eval_result_free(&s->res);
    memset(s, 0, sizeof *s);
}

static int lead_index(const wx_demo_scores *s, int hours) {
    for (int k = 0; k < s->nleads; k++)
        if (s->lead_s[k] == (int64_t)hours * 3600) return k;
    return -1;
}

static void finish(const wx_demo_scores *s, int model, int chan, int k, wx_scores *sc) {
    wx_score_finish(&s->res.cells[((size_t)model * (size_t)s->nchan + (size_t)chan) *
                                      (size_t)s->nleads + (size_t)k].sums, sc);
}

int wx_demo_model_wins(const wx_demo_scores *s, const char *chan, int hours) {
    int k = lead_index(s, hours);
    for (int c = 0; k >= 0 && c < s->nchan; c++) {
        if (strcmp(s->chan[c], chan)) continue;
        wx_scores a, b, d;
        finish(s, M_MODEL, c, k, &a), finish(s, M_PERSIST, c, k, &b), finish(s, M_CLIM, c, k, &d);
        return a.rmse < b.rmse && a.rmse < d.rmse;
    }
    return 0;
}

void wx_demo_print_table(FILE *out, const wx_demo_scores *s, const int *hours, int nhours) {
    fprintf(out, "%-8s %6s  %12s %12s %12s   %9s %9s\n", "variable", "lead", "RMSE model",
            "persistence", "climatology", "ACC model", "persist.");
    for (int c = 0; c < s->nchan; c++)
        for (int h = 0; h < nhours; h++) {
            int k = lead_index(s, hours[h]);
            if (k < 0) continue;
            wx_scores a, b, d;
            finish(s, M_MODEL, c, k, &a), finish(s, M_PERSIST, c, k, &b), finish(s, M_CLIM, c, k, &d);
            fprintf(out, "%-8s %5dh  %12.5g %12.5g %12.5g   %9.4f %9.4f %s\n", s->chan[c], hours[h],
                    a.rmse, b.rmse, d.rmse, a.acc, b.acc,
                    a.rmse < b.rmse && a.rmse < d.rmse ? "*" : "");
        }
    fprintf(out, "(WeatherBench2 definitions: latitude-weighted RMSE in the channel's units, uncentred "
            "ACC; * = the model beats both baselines)\n");
}
