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

/* Initial-time record indices within the test years, every `every` records, with every target
 * (lead_steps·dt records later) inside the years and the archive, and the `back` records before
 * it (the earlier states of a model's window) inside the archive. */
static int64_t list_inits(const wx_archive_meta *m, const int64_t *years, int64_t every,
                          int64_t reach, int64_t back, int64_t max_inits, int64_t **out) {
    wx_time y0 = wx_time_make(years[0], 1, 1, 0, 0, 0), y1 = wx_time_make(years[1] + 1, 1, 1, 0, 0, 0);
    int64_t n = 0;
    *out = wx_malloc(sizeof(int64_t) * (size_t)(m->count + 1));
    for (int64_t t = 0; t + reach < m->count; t += every) {
        wx_time a = m->start + t * m->step, b = m->start + (t + reach) * m->step;
        if (a < y0 || b >= y1 || t < back) continue;
        if (max_inits > 0 && n >= max_inits) break;
        (*out)[n++] = t;
    }
    return n;
}

static wx_status alloc_result(wx_demo_scores *s, const wx_rollout *r, const wx_archive_meta *m,
                              const int *map_out, int64_t lead_steps, const char *name) {
    const char *const model_names[NMODELS] = {name, WX_EVAL_PERSISTENCE, WX_EVAL_CLIMATOLOGY};
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
    /* init (window, B, nchan, P) the analyses up to each initial time; truth (B, nchan, P);
     * fc (B, Cout, H·W); cl (nchan, P) */
    float *init, *truth, *fc, *cl;
    int64_t *times;
    wx_time *t0;              /* (B) initial valid times */
    int H;                    /* rows scored: the model grid's or the first o->score_nlat */
    int64_t dt;               /* archive records per model step */
} scorer;

static wx_status score_batch(scorer *z, wx_demo_score_opts *o, const int64_t *inits, int64_t b,
                             wx_demo_scores *s, int first_batch, wx_progress *p, int64_t *done) {
    const wx_archive_meta *m = z->m;
    wx_rollout *r = z->r;
    size_t P = (size_t)wx_archive_points(m), hw = (size_t)(r->h * r->w), nc = (size_t)m->nchan;
    int H = z->H, W = (int)r->w;
    const int64_t win = r->window;
    for (int64_t w = 0; w < win; w++) { /* oldest first: init − (window−1−w) steps */
        for (int64_t i = 0; i < b; i++) z->times[i] = inits[i] - (win - 1 - w) * z->dt;
        WX_TRY(wx_archive_read(z->ar, z->times, (int)b, z->init + (size_t)w * (size_t)b * nc * P));
    }
    const float *init = z->init + (size_t)(win - 1) * (size_t)b * nc * P; /* the newest */
    for (int64_t i = 0; i < b; i++) z->t0[i] = m->start + inits[i] * m->step;
    WX_TRY(wx_rollout_set_state(r, z->init, m, z->map_in, z->t0, b));
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
                const float *per = init + ((size_t)i * nc + a) * P;
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
    z.H = (int)z.r->h;
    if (o->score_nlat > 0 && o->score_nlat < z.r->h) z.H = (int)o->score_nlat;
    wx_archive_opts ao = {.threads = 2, .check_crc = 1};
    wx_status st = wx_archive_open(o->archive, &ao, &z.ar);
    if (st == WX_OK) st = wx_climatology_open(o->archive, &z.clim);
    int64_t *inits = NULL, n = 0;
    if (st == WX_OK) {
        z.m = wx_archive_meta_of(z.ar);
        z.map_in = wx_calloc((size_t)z.r->nin, sizeof(int));
        z.map_out = wx_calloc((size_t)z.r->nout, sizeof(int));
        st = wx_rollout_match_archive(z.r, z.m, z.map_in, z.map_out);
        if (st != WX_OK) st = wx_error_wrap(st, "%s: ", o->archive);
    }
    if (st == WX_OK && (z.r->step_s % z.m->step != 0 || o->init_every_s % z.m->step != 0)) {
        char a[32], b[32], c[32];
        wx_time_format_duration(z.r->step_s, a), wx_time_format_duration(o->init_every_s, b);
        wx_time_format_duration(z.m->step, c);
        st = wx_error_set(WX_ERR_USAGE, "demo: the model step (%s) and init_every (%s) must be "
                          "multiples of the archive step (%s)", a, b, c);
    }
    if (st == WX_OK) {
        z.dt = z.r->step_s / z.m->step;
        n = list_inits(z.m, o->test_years, o->init_every_s / z.m->step, o->lead_steps * z.dt,
                       (z.r->window - 1) * z.dt, o->max_inits, &inits);
        if (n == 0)
            st = wx_error_set(WX_ERR_USAGE, "demo: no initial time in the test years %lld..%lld of %s "
                              "with %lld steps of data after it", (long long)o->test_years[0],
                              (long long)o->test_years[1], o->archive, (long long)o->lead_steps);
    }
    if (st == WX_OK)
        st = alloc_result(out, z.r, z.m, z.map_out, o->lead_steps,
                          o->model_name ? o->model_name : z.r->family);
    if (st == WX_OK) {
        out->nlat = z.H;
        size_t P = (size_t)wx_archive_points(z.m), nc = (size_t)z.m->nchan, B = (size_t)o->batch;
        /* Scored rows: the model grid, or its first score_nlat rows (a grid shared with another
         * model), weighted as that grid's cells. */
        wx_grid sg = z.r->grid;
        sg.nlat = z.H;
        z.w = wx_malloc(sizeof(double) * (size_t)z.H);
        wx_grid_area_weights(&sg, z.w);
        z.init = wx_malloc(sizeof(float) * B * nc * P * (size_t)z.r->window);
        z.t0 = wx_malloc(sizeof(wx_time) * B);
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
    free(z.init), free(z.truth), free(z.fc), free(z.cl), free(z.times), free(z.t0);
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

/* Scores of (model, channel c, lead k); 0 when the model does not predict the channel. */
static int get(const wx_demo_scores *s, const char *model, int c, int k, wx_scores *sc) {
    const wx_eval_cell *e = wx_eval_find(&s->res, model, s->chan[c], s->lead_s[k]);
    if (!e) return 0;
    wx_score_finish(&e->sums, sc);
    return sc->n > 0;
}

static int wins(const wx_demo_scores *s, const char *model, int c, int k) {
    wx_scores a, b, d;
    return get(s, model, c, k, &a) && get(s, WX_EVAL_PERSISTENCE, c, k, &b) &&
           get(s, WX_EVAL_CLIMATOLOGY, c, k, &d) && a.rmse < b.rmse && a.rmse < d.rmse;
}

int wx_demo_model_wins(const wx_demo_scores *s, const char *model, const char *chan, int hours) {
    int k = lead_index(s, hours);
    for (int c = 0; k >= 0 && c < s->nchan; c++)
        if (!strcmp(s->chan[c], chan)) return wins(s, model, c, k);
    return 0;
}

static int is_baseline(const char *name) {
    return !strcmp(name, WX_EVAL_PERSISTENCE) || !strcmp(name, WX_EVAL_CLIMATOLOGY);
}

void wx_demo_print_table(FILE *out, const wx_demo_scores *s, const int *hours, int nhours) {
    const wx_eval_result *r = &s->res;
    fprintf(out, "%-8s %6s ", "variable", "lead");
    for (int m = 0; m < r->nmodels; m++) fprintf(out, " %13.13s", r->models[m]);
    fprintf(out, "  |ACC");
    for (int m = 0; m < r->nmodels; m++)
        if (strcmp(r->models[m], WX_EVAL_CLIMATOLOGY)) fprintf(out, " %11.11s", r->models[m]);
    fprintf(out, "\n");
    for (int c = 0; c < s->nchan; c++)
        for (int h = 0; h < nhours; h++) {
            int k = lead_index(s, hours[h]);
            if (k < 0) continue;
            fprintf(out, "%-8s %5dh ", s->chan[c], hours[h]);
            for (int m = 0; m < r->nmodels; m++) {
                wx_scores a;
                if (get(s, r->models[m], c, k, &a))
                    fprintf(out, " %12.5g%s", a.rmse, !is_baseline(r->models[m]) && wins(s, r->models[m], c, k) ? "*" : " ");
                else
                    fprintf(out, " %12s ", "-");
            }
            fprintf(out, "     ");
            for (int m = 0; m < r->nmodels; m++) {
                wx_scores a;
                if (!strcmp(r->models[m], WX_EVAL_CLIMATOLOGY)) continue;
                if (get(s, r->models[m], c, k, &a)) fprintf(out, " %11.4f", a.acc);
                else fprintf(out, " %11s", "-");
            }
            fprintf(out, "\n");
        }
    fprintf(out, "(RMSE: WeatherBench2's latitude-weighted RMSE in the channel's units; ACC "
            "uncentred; * = the model beats both baselines)\n");
}

static int cell_cmp(const void *pa, const void *pb) {
    const wx_eval_cell *a = pa, *b = pb;
    if (a->model != b->model) return a->model < b->model ? -1 : 1;
    if (a->chan != b->chan) return a->chan < b->chan ? -1 : 1;
    return (a->lead_s > b->lead_s) - (a->lead_s < b->lead_s);
}

wx_status wx_demo_scores_merge(const wx_demo_scores *a, const wx_demo_scores *b, wx_demo_scores *out,
                               double *dev) {
    memset(out, 0, sizeof *out);
    *dev = 0;
    int same = a->nleads == b->nleads && a->res.ninit == b->res.ninit && a->nlat == b->nlat;
    for (int k = 0; same && k < a->nleads; k++) same = a->lead_s[k] == b->lead_s[k];
    if (!same)
        return wx_error_set(WX_ERR_USAGE, "demo: the two models were scored on different initial "
                            "times, leads or rows (%lld/%lld initial times, %d/%d leads, %lld/%lld "
                            "rows): check demo.yaml and the two train configs' test years and time "
                            "steps", (long long)a->res.ninit, (long long)b->res.ninit, a->nleads,
                            b->nleads, (long long)a->nlat, (long long)b->nlat);
    out->nleads = a->nleads, out->nlat = a->nlat;
    out->lead_s = wx_malloc(sizeof(int64_t) * (size_t)a->nleads);
    memcpy(out->lead_s, a->lead_s, sizeof(int64_t) * (size_t)a->nleads);
    int *bmap = wx_malloc(sizeof(int) * (size_t)(b->nchan + 1)), n = a->nchan;
    for (int c = 0; c < b->nchan; c++) {
        bmap[c] = -1;
        for (int i = 0; i < a->nchan; i++)
            if (!strcmp(a->chan[i], b->chan[c])) bmap[c] = i;
        if (bmap[c] < 0) bmap[c] = n++;
    }
    out->nchan = n;
    out->chan = wx_calloc((size_t)n, sizeof *out->chan);
    out->units = wx_calloc((size_t)n, sizeof *out->units);
    for (int i = 0; i < a->nchan; i++) {
        memcpy(out->chan[i], a->chan[i], sizeof out->chan[i]);
        memcpy(out->units[i], a->units[i], sizeof out->units[i]);
    }
    for (int c = 0; c < b->nchan; c++) {
        memcpy(out->chan[bmap[c]], b->chan[c], sizeof out->chan[0]);
        memcpy(out->units[bmap[c]], b->units[c], sizeof out->units[0]);
    }
    wx_eval_result *e = &out->res;
    e->nmodels = 4;
    e->models = wx_calloc(4, sizeof *e->models);
    snprintf(e->models[0], 64, "%s", a->res.models[M_MODEL]);
    snprintf(e->models[1], 64, "%s", b->res.models[M_MODEL]);
    snprintf(e->models[2], 64, "%s", WX_EVAL_PERSISTENCE);
    snprintf(e->models[3], 64, "%s", WX_EVAL_CLIMATOLOGY);
    e->nchan = n;
    e->chan_names = wx_calloc((size_t)n, sizeof *e->chan_names);
    e->chan_units = wx_calloc((size_t)n, sizeof *e->chan_units);
    for (int i = 0; i < n; i++) {
        snprintf(e->chan_names[i], 64, "%s", out->chan[i]);
        snprintf(e->chan_units[i], 32, "%s", out->units[i]);
    }
    e->cells = wx_calloc((size_t)(a->res.ncells + b->res.ncells), sizeof *e->cells);
    for (int i = 0; i < a->res.ncells; i++) { /* a: model 0, baselines 2 and 3 */
        wx_eval_cell c = a->res.cells[i];
        c.model = c.model == M_MODEL ? 0 : c.model + 1;
        e->cells[e->ncells++] = c;
    }
    for (int i = 0; i < b->res.ncells; i++) {
        wx_eval_cell c = b->res.cells[i];
        if (c.model != M_MODEL) { /* b's baselines: only compared with a's */
            const wx_eval_cell *o = wx_eval_find(&a->res, b->res.models[c.model], b->chan[c.chan], c.lead_s);
            if (o) {
                wx_scores x, y;
                wx_score_finish(&o->sums, &x), wx_score_finish(&c.sums, &y);
                if (x.rmse > 0) *dev = fmax(*dev, fabs(x.rmse - y.rmse) / x.rmse);
            }
            continue;
        }
        c.model = 1, c.chan = bmap[c.chan];
        e->cells[e->ncells++] = c;
    }
    qsort(e->cells, (size_t)e->ncells, sizeof *e->cells, cell_cmp);
    e->ninit = a->res.ninit;
    e->has_climatology = a->res.has_climatology;
    free(bmap);
    return WX_OK;
}
