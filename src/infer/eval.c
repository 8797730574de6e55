#include "infer/eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_progress.h"
#include "core/wx_tmap.h"
#include "infer/eval_regions.h"
#include "infer/forecast_init.h"
#include "io/archive.h"
#include "io/climatology.h"
#include "io/forecast_file.h"
#include "io/wx_source.h"
#include "core/wx_log.h"
#include "infer/eval_grid.h"
#include "infer/eval_match.h"
#include "infer/eval_seeps.h"
#include "meteo/wx_grid.h"

static int model_index(wx_eval_result *r, const char *name) {
    for (int i = 0; i < r->nmodels; i++)
        if (!strcmp(r->models[i], name)) return i;
    r->models = realloc(r->models, sizeof(*r->models) * (size_t)(r->nmodels + 1));
    WX_ASSERT(r->models);
    snprintf(r->models[r->nmodels], 64, "%s", name);
    return r->nmodels++;
}

static wx_score_sums *cell(wx_eval_result *r, wx_tmap *cells, int model, int chan, int64_t lead) {
    wx_tmap_slot *p = wx_tmap_find(cells, model, chan, lead, 1);
    if (p->val < 0) {
        r->cells = realloc(r->cells, sizeof(wx_eval_cell) * (size_t)(r->ncells + 1));
        WX_ASSERT(r->cells);
        r->cells[r->ncells] = (wx_eval_cell){.model = model, .chan = chan, .lead_s = lead};
        r->cells[r->ncells].sums.rmse_per_init = r->convention == WX_EVAL_FOURCASTNET;
        p->val = r->ncells++;
    }
    return &r->cells[p->val].sums;
}

typedef struct {
    int field, chan, member; /* member: -1 in a deterministic file */
    wx_time valid;
} job;

/* By valid time, then channel, so the members of one (valid time, channel) are adjacent. */
static int job_cmp(const void *a, const void *b) {
    const job *x = a, *y = b;
    if (x->valid != y->valid) return x->valid < y->valid ? -1 : 1;
    if (x->chan != y->chan) return x->chan - y->chan;
    return x->member != y->member ? x->member - y->member : x->field - y->field;
}

/* What every file is scored with. */
typedef struct {
    wx_archive *ar;
    wx_eval_grid eg;        /* the scoring grid: P points (the archive's, or --resolution) */
    wx_climatology *clim;
    const float *clim_mean; /* [nchan, P] FourCastNet convention: ACC's climatology; NULL: the
                               climatology at the valid time */
    const double *w;        /* [nlat] latitude weights of the convention */
    int npairs;
    int (*pair)[2];         /* [npairs] truth channels u, v of derived channel nchan + k */
    wx_eval_result *r;
    wx_tmap cells, done;
    wx_eval_regions rg;     /* regions besides global */
    const float *masks;     /* [rg.n, nlat, nlon] their point weights */
    wx_tmap rcells;            /* (model, chan, lead) -> first of its rg.n consecutive rcells */
    int warned_hour;        /* a valid hour missing from the climatology was reported */
    wx_eval_seeps sp;       /* SEEPS of the precipitation channel (sp.chan -1: none) */
    int *members;           /* [nmodels] members of the model's files (0: deterministic, -1: none
                               read yet); one model's files must agree */
    const char **members_file; /* [nmodels] the file that set it */
    char *warned_vars, *warned_times; /* [nmodels] a drop of that kind was reported (once each) */
} ectx;

/* The sums of (model, chan, lead): out[0] global, out[1 + k] region k. Valid until the next call
 * (the arrays grow). out: [1 + rg.n] */
static void cells_of(ectx *x, int model, int chan, int64_t lead, wx_score_sums **out) {
    wx_eval_result *r = x->r;
    if (x->rg.n > 0) {
        wx_tmap_slot *p = wx_tmap_find(&x->rcells, model, chan, lead, 1);
        if (p->val < 0) {
            r->rcells = realloc(r->rcells, sizeof(wx_eval_cell) * (size_t)(r->nrcells + x->rg.n));
            WX_ASSERT(r->rcells);
            for (int k = 0; k < x->rg.n; k++) {
                r->rcells[r->nrcells + k] =
                    (wx_eval_cell){.model = model, .chan = chan, .lead_s = lead, .region = k + 1};
                r->rcells[r->nrcells + k].sums.rmse_per_init = r->convention == WX_EVAL_FOURCASTNET;
            }
            p->val = r->nrcells;
            r->nrcells += x->rg.n;
        }
        for (int k = 0; k < x->rg.n; k++) out[1 + k] = &r->rcells[p->val + k].sums;
    }
    out[0] = cell(r, &x->cells, model, chan, lead);
}

/* Scores one initial time of a field (wx_eval_regions_add's kinds and arguments), globally and
 * in every region. */
static void add(ectx *x, int model, int chan, int64_t lead, wx_eval_add_kind kind, int M,
                const float *a, const float *b, const float *c, const float *d) {
    const wx_grid *g = &x->eg.grid;
    wx_score_sums *sums[1 + WX_EVAL_NREGIONS];
    cells_of(x, model, chan, lead, sums);
    wx_eval_regions_add(&x->rg, x->masks, sums, x->w, g->nlat, g->nlon, kind, M, a, b, c, d);
}

/* SEEPS of one initial time of the precipitation channel, globally and in every region. */
static void add_seeps(ectx *x, int model, int chan, int64_t lead, const float *f, const float *o,
                      const wx_seeps_clim *sc) {
    wx_score_sums *sums[1 + WX_EVAL_NREGIONS];
    cells_of(x, model, chan, lead, sums);
    wx_eval_regions_add_seeps(&x->rg, x->masks, sums, x->w, x->eg.grid.nlat, x->eg.grid.nlon, f,
                              o, sc);
}

/* The baseline rows of one model: persistence, climatology (index, or -1 until first scored). */
typedef struct {
    char name[2][64];
    int row[2];
} base_rows;

static int base_row(wx_eval_result *r, base_rows *b, int k) {
    if (b->row[k] < 0) b->row[k] = model_index(r, b->name[k]);
    return b->row[k];
}

/* True the first time (initial time, channel, lead) is scored for baseline row `row`. */
static int first_time(ectx *x, wx_time init, int chan, int row, int64_t lead) {
    wx_tmap_slot *d = wx_tmap_find(&x->done, init, (int64_t)chan + ((int64_t)row << 32), lead, 1);
    if (d->val >= 0) return 0;
    d->val = 1;
    return 1;
}

/* Whether the climatology holds the hour of day of t; warns once when it does not. */
static int clim_has_hour(ectx *x, wx_time t) {
    const wx_clim_header *h = wx_climatology_header(x->clim);
    int hour = wx_time_hour_of_day(t);
    for (uint32_t k = 0; k < h->nhours; k++)
        if (h->hours[k] == hour) return 1;
    if (!x->warned_hour)
        wx_log_warn("eval: the climatology holds %u hours of day (from %u UTC), not %d UTC: no ACC "
                    "and no climatology baseline at such valid times (ingest with "
                    "climatology_hour_step: 1 for every hour)", h->nhours, h->hours[0], hour);
    x->warned_hour = 1;
    return 0;
}

/* One forecast file from initial time `init`: every matched field against the truth at its valid
 * time, the wind vectors of u/v pairs, and (bl != NULL) the baselines on this initial time. */
static wx_status eval_file(ectx *x, wx_source *src, const char *path, int model, wx_time init,
                           base_rows *bl) {
    wx_eval_result *r = x->r;
    const wx_archive_meta *m = wx_archive_meta_of(x->ar);
    int64_t P = x->eg.P, R = P * m->nchan; /* on the scoring grid */
    wx_status st = WX_OK;
    int nf = wx_source_count(src), nj = 0;
    job *jobs = wx_malloc(sizeof(job) * (size_t)(nf ? nf : 1));
    float *fc = wx_malloc(sizeof(float) * (size_t)P), *ens = NULL, *truth = wx_malloc(sizeof(float) * (size_t)R);
    float *pers = NULL, *cl = x->clim ? wx_malloc(sizeof(float) * (size_t)R) : NULL;
    float *fcs = x->npairs ? wx_malloc(sizeof(float) * (size_t)R) : NULL; /* this valid time's fields */
    char *have = wx_calloc((size_t)m->nchan + 1, 1);
    int seeps = 0; /* this file's precipitation is scored with SEEPS */
    char skipped[512] = ""; /* forecast variables no truth channel matches (reported once) */
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(src, i);
        if (f->has_init && f->init != init) continue; /* another forecast of a WB2-layout file */
        int c = wx_eval_match_channel(m, f);
        if (c < 0 && f->has_time && !strstr(skipped, f->name) && strlen(skipped) + strlen(f->name) + 3 < sizeof skipped)
            snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "%s%s",
                     skipped[0] ? ", " : "", f->name);
        if (c < 0 || !f->has_time) continue;
        if (!wx_grid_same(&f->grid, &m->grid, 1e-6) &&
            !(x->eg.crop && wx_grid_same(&f->grid, &x->eg.grid, 1e-6))) {
            char a[160], b[160];
            wx_grid_describe(&f->grid, a, sizeof a);
            wx_grid_describe(&m->grid, b, sizeof b);
            /* a usage error, as forecast's --init on another grid than the model's */
            st = wx_error_set(WX_ERR_USAGE, "%s: %s is on grid %s, the truth archive on %s: "
                              "regrid the forecast to the truth's grid, or ingest the truth on "
                              "the forecast's (recipe grid: {resolution: R})", path, f->name, a, b);
            goto done;
        }
        jobs[nj++] = (job){i, c, f->member, f->valid};
        if (c == x->sp.chan && !seeps) seeps = wx_eval_seeps_field_ok(&x->sp, c, f->name, path) ? 1 : -1;
    }
    if (nj == 0) {
        st = wx_error_set(WX_ERR_RUN, "%s: no field matches a channel of the truth archive "
                                      "(names, level kinds and levels differ)", path);
        goto done;
    }
    if (skipped[0] && !x->warned_vars[model]) {
        x->warned_vars[model] = 1;
        wx_log_warn("%s: no channel of the truth archive for %s: not scored (reported once for "
                    "model '%s')", path, skipped, r->models[model]);
    }
    qsort(jobs, (size_t)nj, sizeof(job), job_cmp);
    for (int q = 1; q < nj; q++) /* one field per channel, member and valid time, or which? */
        if (jobs[q].valid == jobs[q - 1].valid && jobs[q].chan == jobs[q - 1].chan &&
            jobs[q].member == jobs[q - 1].member) {
            char t[32], i0[32];
            wx_time_format(jobs[q].valid, t), wx_time_format(init, i0);
            st = wx_error_set(WX_ERR_RUN, "%s: two fields of %s at %s in the forecast from %s "
                              "(fields %d and %d): expected one per variable, level, member and "
                              "time", path, m->chan[jobs[q].chan].name, t, i0,
                              jobs[q - 1].field + 1, jobs[q].field + 1);
            goto done;
        }
    /* One model's rows pool its files: an ensemble of another size (the fair spread-skill factor
     * (M+1)/M is per row) or a deterministic file among ensembles would be mixed into them. */
    int nmem = 0;
    for (int q = 0; q < nj && jobs[q].valid == jobs[0].valid; q++)
        nmem += jobs[q].member >= 0 && jobs[q].chan == jobs[0].chan;
    if (x->members[model] < 0) {
        x->members[model] = nmem, x->members_file[model] = path;
    } else if (x->members[model] != nmem) {
        char a[32], b[32];
        snprintf(a, sizeof a, nmem ? "%d members" : "no members (deterministic)", nmem);
        snprintf(b, sizeof b, x->members[model] ? "%d" : "none (deterministic)", x->members[model]);
        st = wx_error_set(WX_ERR_USAGE, "--forecast: model '%s': %s has %s, %s %s: one model's "
                          "files must all be deterministic or all ensembles of one size (name "
                          "them as separate models, NAME=FILE,...)", r->models[model], path, a,
                          x->members_file[model], b);
        goto done;
    }
    int64_t pi = (init - m->start) % m->step == 0 ? (init - m->start) / m->step : -1;
    if (bl && pi >= 0 && pi < m->count) {
        pers = wx_malloc(sizeof(float) * (size_t)R);
        if ((st = wx_eval_grid_truth(&x->eg, x->ar, pi, pers))) goto done;
    }
    int nskip = 0, ntimes = 0; /* valid times without a truth record, of all */
    wx_time skip0 = 0, skip1 = 0;
    for (int k = 0, kend; k < nj; k = kend) { /* one valid time: jobs k..kend-1 */
        ntimes++;
        wx_time valid = jobs[k].valid;
        for (kend = k + 1; kend < nj && jobs[kend].valid == valid;) kend++;
        int64_t lead = valid - init;
        if (lead < 0) {
            st = wx_error_set(WX_ERR_RUN, "%s: valid time before the initial time", path);
            goto done;
        }
        int64_t ti = (valid - m->start) / m->step;
        if ((valid - m->start) % m->step || ti < 0 || ti >= m->count) { /* no truth */
            if (!nskip++) skip0 = valid;
            skip1 = valid;
            continue;
        }
        if ((st = wx_eval_grid_truth(&x->eg, x->ar, ti, truth))) goto done;
        /* a valid hour the climatology does not hold (hourly forecasts, 6-hourly climatology):
         * no ACC and no climatology baseline at that hour */
        const float *clv = cl && clim_has_hour(x, valid) ? cl : NULL;
        if (clv && (st = wx_eval_grid_clim(&x->eg, x->clim, valid, cl))) goto done;
        const float *acc_c = x->clim_mean ? x->clim_mean : clv; /* ACC's climatology */
        wx_seeps_clim sc_v, *sc = NULL; /* SEEPS needs the climatology at the valid time */
        if (clv && seeps > 0 && (st = wx_eval_seeps_at(&x->sp, x->clim, &x->eg, valid, &sc_v))) goto done;
        if (clv && seeps > 0) sc = &sc_v;
        memset(have, 0, (size_t)m->nchan);
        for (int q = k, next; q < kend; q = next) {
            const job *j = &jobs[q];
            /* An ensemble file (realization/number axis): jobs q..next-1 are the members of one
             * channel. */
            next = q + 1;
            while (j->member >= 0 && next < kend && jobs[next].chan == j->chan) next++;
            const float *o = truth + j->chan * P, *c = acc_c ? acc_c + j->chan * P : NULL;
            if (j->member < 0) {
                if ((st = wx_eval_grid_field(&x->eg, src, j->field, fc))) goto done;
            } else { /* deterministic scores of the ensemble mean (WB2), CRPS and spread/skill */
                int M = next - q;
                ens = realloc(ens, sizeof(float) * (size_t)(P * M));
                WX_ASSERT(ens);
                for (int e = 0; e < M; e++)
                    if ((st = wx_eval_grid_field(&x->eg, src, jobs[q + e].field, ens + e * P))) goto done;
                for (int64_t p = 0; p < P; p++) {
                    double sum = 0;
                    for (int e = 0; e < M; e++) sum += ens[e * P + p];
                    fc[p] = (float)(sum / M);
                }
                add(x, model, j->chan, lead, WX_EVAL_ADD_ENSEMBLE, M, ens, o, NULL, NULL);
            }
            add(x, model, j->chan, lead, WX_EVAL_ADD_FIELD, 0, fc, o, c, NULL);
            int sp = sc && j->chan == x->sp.chan; /* (ensembles: of the mean, as WB2's) */
            if (sp) add_seeps(x, model, j->chan, lead, fc, o, sc);
            if (fcs) memcpy(fcs + j->chan * P, fc, sizeof(float) * (size_t)P), have[j->chan] = 1;
            if (!bl) continue;
            if (pers && first_time(x, init, j->chan, base_row(r, bl, 0), lead)) {
                add(x, base_row(r, bl, 0), j->chan, lead, WX_EVAL_ADD_FIELD, 0, pers + j->chan * P,
                    o, c, NULL);
                if (sp) add_seeps(x, base_row(r, bl, 0), j->chan, lead, pers + j->chan * P, o, sc);
            }
            /* ACC of the climatology against itself is 0/0: not scored */
            if (clv && first_time(x, init, j->chan, base_row(r, bl, 1), lead)) {
                add(x, base_row(r, bl, 1), j->chan, lead, WX_EVAL_ADD_FIELD, 0, cl + j->chan * P, o,
                    NULL, NULL);
                if (sp) add_seeps(x, base_row(r, bl, 1), j->chan, lead, cl + j->chan * P, o, sc);
            }
        }
        for (int pk = 0; pk < x->npairs; pk++) { /* wind vectors (ensembles: of the mean) */
            int u = x->pair[pk][0], v = x->pair[pk][1], d = m->nchan + pk;
            if (!have[u] || !have[v]) continue;
            const float *ou = truth + u * P, *ov = truth + v * P;
            add(x, model, d, lead, WX_EVAL_ADD_VECTOR, 0, fcs + u * P, fcs + v * P, ou, ov);
            if (!bl) continue;
            if (pers && first_time(x, init, d, base_row(r, bl, 0), lead))
                add(x, base_row(r, bl, 0), d, lead, WX_EVAL_ADD_VECTOR, 0, pers + u * P, pers + v * P,
                    ou, ov);
            if (clv && first_time(x, init, d, base_row(r, bl, 1), lead))
                add(x, base_row(r, bl, 1), d, lead, WX_EVAL_ADD_VECTOR, 0, cl + u * P, cl + v * P,
                    ou, ov);
        }
    }
    if (nskip && !x->warned_times[model]) {
        x->warned_times[model] = 1;
        char a[32], b[32], c0[32], c1[32], ev[32];
        wx_time_format(skip0, a), wx_time_format(skip1, b);
        wx_time_format(m->start, c0), wx_time_format(m->start + (m->count - 1) * m->step, c1);
        wx_time_format_duration(m->step, ev);
        wx_log_warn("%s: %d of its %d valid times (%s .. %s) have no record in the truth archive "
                    "(%s .. %s every %s): not scored (reported once for model '%s')", path,
                    nskip, ntimes, a, b, c0, c1, ev, r->models[model]);
    }
done:
    free(jobs), free(fc), free(ens), free(truth), free(pers), free(cl), free(fcs), free(have);
    return st;
}

static int cell_cmp(const void *a, const void *b) {
    const wx_eval_cell *x = a, *y = b;
    if (x->region != y->region) return x->region - y->region;
    if (x->model != y->model) return x->model - y->model;
    if (x->chan != y->chan) return x->chan - y->chan;
    return x->lead_s < y->lead_s ? -1 : x->lead_s > y->lead_s;
}

static int cmp_time(const void *a, const void *b) {
    wx_time x = *(const wx_time *)a, y = *(const wx_time *)b;
    return x < y ? -1 : x > y;
}

/* The v partner of truth channel c when c is the u of a pair (u/v at one level, 10u/10v,
 * 100u/100v), else -1. */
static int v_partner(const wx_archive_meta *m, int c) {
    const wx_archive_channel *u = &m->chan[c];
    size_t n = strlen(u->param);
    if (n == 0 || u->param[n - 1] != 'u' || strspn(u->param, "0123456789") != n - 1) return -1;
    for (int k = 0; k < m->nchan; k++) {
        const wx_archive_channel *v = &m->chan[k];
        if (v->kind == u->kind && fabs(v->level - u->level) < 1e-6 && strlen(v->param) == n &&
            !strncmp(v->param, u->param, n - 1) && v->param[n - 1] == 'v')
            return k;
    }
    return -1;
}

/* Channel names and units: the truth's, then one wind vector per u/v pair. */
static void make_channels(const wx_archive_meta *m, wx_eval_result *r, ectx *x) {
    x->pair = wx_calloc((size_t)m->nchan + 1, sizeof(*x->pair));
    for (int c = 0; c < m->nchan; c++) {
        int v = v_partner(m, c);
        if (v >= 0) x->pair[x->npairs][0] = c, x->pair[x->npairs++][1] = v;
    }
    r->nchan_truth = m->nchan;
    r->nchan = m->nchan + x->npairs;
    r->chan_names = wx_calloc((size_t)r->nchan, sizeof(*r->chan_names));
    r->chan_units = wx_calloc((size_t)r->nchan, sizeof(*r->chan_units));
    for (int c = 0; c < m->nchan; c++) {
        snprintf(r->chan_names[c], 64, "%s", m->chan[c].name);
        snprintf(r->chan_units[c], 32, "%s", m->chan[c].units);
    }
    for (int k = 0; k < x->npairs; k++) {
        const wx_archive_channel *u = &m->chan[x->pair[k][0]];
        if (u->kind == WX_LEVEL_PRESSURE) snprintf(r->chan_names[m->nchan + k], 64, "wv%g", u->level);
        else snprintf(r->chan_names[m->nchan + k], 64, "wv%.*s", (int)strlen(u->param) - 1, u->param);
        if (!strcmp(r->chan_names[m->nchan + k], "wv")) snprintf(r->chan_names[m->nchan + k], 64, "wv10");
        snprintf(r->chan_units[m->nchan + k], 32, "%s", u->units);
    }
}

/* Another archive's climatology is read slab by slab in the truth's channel order and on its
 * points: its channels (name, parameter, level) and grid must be the truth's, in the same order,
 * or every anomaly and the climatology baseline would silently pair the wrong fields. */
static wx_status check_clim_archive(const char *cdir, const wx_archive_meta *m, const char *truth) {
    wx_archive *ca;
    wx_archive_opts ao = {.threads = 1};
    WX_TRY(wx_archive_open(cdir, &ao, &ca));
    const wx_archive_meta *cm = wx_archive_meta_of(ca);
    wx_status st = WX_OK;
    if (!wx_grid_same(&cm->grid, &m->grid, 1e-6)) {
        char a[160], b[160];
        wx_grid_describe(&cm->grid, a, sizeof a), wx_grid_describe(&m->grid, b, sizeof b);
        st = wx_error_set(WX_ERR_USAGE, "--climatology %s: its grid (%s) is not the truth's "
                          "(%s, %s)", cdir, a, truth, b);
    }
    for (int c = 0; c < m->nchan && c < cm->nchan && st == WX_OK; c++) {
        const wx_archive_channel *p = &cm->chan[c], *q = &m->chan[c];
        if (strcmp(p->name, q->name) || strcmp(p->param, q->param) || p->kind != q->kind ||
            p->level != q->level)
            st = wx_error_set(WX_ERR_USAGE, "--climatology %s: channel %d is %s (%s, level %g), "
                              "the truth's (%s) is %s (%s, level %g): expected the truth's "
                              "channels in its order", cdir, c, p->name, p->param, p->level, truth,
                              q->name, q->param, q->level);
    }
    wx_archive_close(ca);
    return st;
}

wx_status wx_eval_run(const wx_eval_opts *o, wx_eval_result *r) {
    memset(r, 0, sizeof *r);
    WX_TRY(wx_eval_check_opts(o));
    wx_archive *ar;
    wx_archive_opts ao = {.threads = 2, .check_crc = 1};
    WX_TRY(wx_archive_open(o->truth, &ao, &ar));
    const wx_archive_meta *m = wx_archive_meta_of(ar);
    ectx x = {.ar = ar, .r = r, .sp = {.chan = -1}};
    wx_status st = WX_OK;
    int nm = 0, *set = NULL, *off = NULL, ni = 0, *ifile = NULL, short_file = -1;
    wx_time *inits = NULL, *sorted = NULL;
    wx_source *src = NULL;
    base_rows *bl = NULL;
    float *cmean = NULL, *lsm = NULL, *masks = NULL;
    double *w = NULL;
    const char *cdir = o->no_climatology ? "" : o->climatology ? o->climatology
                                          : (m->climatology[0] ? o->truth : "");
    if (o->baseline && !strcmp(o->baseline, WX_EVAL_CLIMATOLOGY) && o->baselines && !cdir[0]) {
        st = wx_error_set(WX_ERR_USAGE, "--baseline climatology: %s has no climatology (pass "
                                        "--climatology ARCHIVE)", o->truth);
        goto out;
    }
    if (cdir[0] && (st = wx_climatology_open(cdir, &x.clim))) goto out;
    if (x.clim) {
        const wx_clim_header *h = wx_climatology_header(x.clim);
        if ((int)h->nchan != m->nchan || (int)h->nlat != m->grid.nlat || (int)h->nlon != m->grid.nlon) {
            st = wx_error_set(WX_ERR_RUN, "%s: climatology has %u channels on %ux%u, the truth "
                              "archive %d on %dx%d", cdir, h->nchan, h->nlat, h->nlon, m->nchan,
                              m->grid.nlat, m->grid.nlon);
            goto out;
        }
        if (o->climatology && (st = check_clim_archive(o->climatology, m, o->truth))) goto out;
    }
    /* The regions' masks (a land region without a land-sea mask is a usage error), before any
     * scoring. */
    if ((st = wx_eval_regions_parse(o->regions, &x.rg))) goto out;
    for (int k = 0; k < x.rg.n && !lsm; k++)
        if (wx_eval_region_is_land(x.rg.id[k]) && (st = wx_eval_regions_read_lsm(ar, &lsm))) goto out;
    if ((st = wx_eval_grid_open(m, o->resolution, &x.eg))) goto out;
    /* Every forecast's initial time before any scoring: one model may not hold an initial time
     * twice (it would be counted twice), and the baselines follow the models' sets of initial
     * times. A forecast is (file, initial time): wxcast's files hold one, WeatherBench2-layout
     * files any number. */
    for (int f = 0; f < o->nfiles && st == WX_OK; f++) {
        wx_time *t = NULL;
        int n = 0;
        int shorter = 0;
        st = wx_eval_file_scan(o->files[f], m, &t, &n, &shorter);
        if (shorter && short_file < 0) short_file = f;
        if (st == WX_OK) {
            inits = wx_realloc(inits, sizeof(wx_time) * (size_t)(ni + n));
            ifile = wx_realloc(ifile, sizeof(int) * (size_t)(ni + n));
            for (int k = 0; k < n; k++) inits[ni + k] = t[k], ifile[ni + k] = f;
            ni += n;
        }
        free(t);
    }
    for (int q = 0; q < ni && st == WX_OK; q++)
        for (int g = 0; g < q && st == WX_OK; g++)
            if (inits[q] == inits[g] && !strcmp(o->models[ifile[q]], o->models[ifile[g]])) {
                char t[40];
                wx_time_format(inits[q], t);
                st = wx_error_set(WX_ERR_USAGE, "--forecast: %s and %s are both from initial time %s "
                                  "for model '%s' (each initial time must be scored once)",
                                  o->files[ifile[g]], o->files[ifile[q]], t, o->models[ifile[q]]);
            }
    if (st) goto out;
    /* FourCastNet's forecasts lack the truth's last row (the south pole): then every model is
     * scored on the rows they all have, so a GraphCast and a FourCastNet compare on one grid */
    if (short_file >= 0) {
        if ((st = wx_eval_grid_crop(m, m->grid.nlat - 1, &x.eg))) goto out;
        wx_log_info("eval: %s is on the truth's grid without its last row (FourCastNet's layout): "
                    "every forecast is scored on the first %d of the truth's %d rows",
                    o->files[short_file], m->grid.nlat - 1, m->grid.nlat);
    }
    if (lsm) wx_eval_grid_map(&x.eg, lsm, 1, lsm); /* in place: P <= Pa when regridding */
    if ((st = wx_eval_seeps_open(&x.sp, x.clim, m, &x.eg, cdir))) goto out;
    r->has_seeps = x.sp.chan >= 0, r->seeps_chan = x.sp.chan;
    r->seeps_dry = x.sp.dry, r->seeps_period_s = x.sp.period_s;
    if ((st = wx_eval_regions_masks(&x.rg, &x.eg.grid, lsm, o->truth, &masks))) goto out;
    x.masks = masks;
    if (x.rg.n > 0) {
        r->nregions = 1 + x.rg.n;
        r->region_names = wx_calloc((size_t)r->nregions, sizeof(*r->region_names));
        for (int k = 0; k < r->nregions; k++)
            snprintf(r->region_names[k], 32, "%s", wx_eval_region_name(k ? x.rg.id[k - 1] : 0));
    }
    r->convention = o->convention;
    make_channels(m, r, &x);
    r->has_climatology = x.clim != NULL;
    for (int f = 0; f < o->nfiles; f++) model_index(r, o->models[f]); /* models first */
    nm = r->nmodels;
    /* Each model's sorted initial times; set[i] = the first model with the same list. */
    set = wx_malloc(sizeof(int) * (size_t)nm);
    sorted = wx_malloc(sizeof(wx_time) * (size_t)ni);
    off = wx_calloc((size_t)nm + 1, sizeof(int));
    for (int i = 0, n = 0; i < nm; i++) {
        off[i] = n;
        for (int q = 0; q < ni; q++)
            if (!strcmp(o->models[ifile[q]], r->models[i])) sorted[n++] = inits[q];
        off[i + 1] = n;
        qsort(sorted + off[i], (size_t)(n - off[i]), sizeof(wx_time), cmp_time);
    }
    int same_all = 1;
    for (int i = 0; i < nm; i++) {
        set[i] = i;
        for (int j = 0; j < i && set[i] == i; j++)
            if (off[i + 1] - off[i] == off[j + 1] - off[j] &&
                !memcmp(sorted + off[i], sorted + off[j], sizeof(wx_time) * (size_t)(off[i + 1] - off[i])))
                set[i] = set[j];
        same_all &= set[i] == 0;
    }
    r->baselines_per_model = o->baselines && !same_all;
    bl = wx_calloc((size_t)nm, sizeof(base_rows));
    for (int i = 0; i < nm; i++) {
        const char *names[2] = {WX_EVAL_PERSISTENCE, WX_EVAL_CLIMATOLOGY};
        for (int k = 0; k < 2; k++) {
            if (r->baselines_per_model) snprintf(bl[i].name[k], 64, "%s@%s", names[k], r->models[i]);
            else snprintf(bl[i].name[k], 64, "%s", names[k]);
            bl[i].row[k] = -1;
        }
    }
    const wx_grid *eg = &x.eg.grid;
    r->resolution = o->resolution > 0 ? o->resolution : 0;
    w = wx_malloc(sizeof(double) * (size_t)eg->nlat);
    if (o->convention == WX_EVAL_FOURCASTNET) wx_metrics_fourcastnet_weights(eg->nlat, w);
    else wx_grid_area_weights(eg, w);
    x.w = w;
    if (x.clim && o->convention == WX_EVAL_FOURCASTNET) {
        cmean = wx_malloc(sizeof(float) * (size_t)(wx_archive_points(m) * m->nchan));
        if ((st = wx_eval_clim_time_mean(x.clim, cmean))) goto out;
        wx_eval_grid_map(&x.eg, cmean, m->nchan, cmean); /* in place: P <= Pa */
        x.clim_mean = cmean;
    }
    x.members = wx_malloc(sizeof(int) * (size_t)nm);
    x.members_file = wx_calloc((size_t)nm, sizeof(char *));
    x.warned_vars = wx_calloc((size_t)nm, 1), x.warned_times = wx_calloc((size_t)nm, 1);
    for (int i = 0; i < nm; i++) x.members[i] = -1;
    wx_progress prog; /* a year of daily 10-day forecasts is hundreds of them */
    wx_progress_start(&prog, "eval", ni, "forecasts");
    for (int q = 0; q < ni && st == WX_OK; q++) {
        const int f = ifile[q], mo = model_index(r, o->models[f]);
        if (q == 0 || ifile[q - 1] != f) { /* a file's forecasts are consecutive: opened once */
            wx_source_close(src);
            src = NULL;
            if ((st = wx_source_open(o->files[f], &src))) break;
        }
        /* shared rows: one bookkeeping for all models; per-model rows: the model's own */
        st = eval_file(&x, src, o->files[f], mo, inits[q], o->baselines ? &bl[r->baselines_per_model ? mo : 0] : NULL);
        if (!r->baselines_per_model && o->baselines)
            for (int i = 1; i < nm; i++) bl[i].row[0] = bl[0].row[0], bl[i].row[1] = bl[0].row[1];
        wx_progress_update(&prog, q + 1, "%s", o->models[f]);
    }
    wx_progress_finish(&prog);
    qsort(sorted, (size_t)ni, sizeof(wx_time), cmp_time);
    for (int q = 0; q < ni; q++) r->ninit += q == 0 || sorted[q] != sorted[q - 1];
    /* Each row's set of initial times: a baseline row has its model's (shared rows: every
     * model's, all equal). */
    r->init_set = wx_malloc(sizeof(int) * (size_t)r->nmodels);
    r->model_ninit = wx_malloc(sizeof(int64_t) * (size_t)r->nmodels);
    for (int i = 0; i < r->nmodels; i++) r->init_set[i] = -1, r->model_ninit[i] = 0;
    for (int i = 0; i < nm; i++) {
        r->init_set[i] = set[i], r->model_ninit[i] = off[i + 1] - off[i];
        for (int k = 0; k < 2; k++)
            if (bl[i].row[k] >= 0) r->init_set[bl[i].row[k]] = set[i], r->model_ninit[bl[i].row[k]] = off[i + 1] - off[i];
    }
    if (st == WX_OK) qsort(r->cells, (size_t)r->ncells, sizeof(wx_eval_cell), cell_cmp);
    if (st == WX_OK && r->nrcells) qsort(r->rcells, (size_t)r->nrcells, sizeof(wx_eval_cell), cell_cmp);
    if (st == WX_OK) wx_eval_warn_non_finite(r);
out:
    free(x.cells.s), free(x.done.s), free(x.rcells.s), free(x.pair), free(x.members), free(x.members_file);
    free(x.warned_vars), free(x.warned_times);
    wx_source_close(src);
    free(inits), free(ifile), free(sorted), free(set), free(off), free(bl), free(cmean), free(w), free(lsm), free(masks);
    if (x.clim) wx_climatology_close(x.clim);
    wx_eval_seeps_close(&x.sp);
    wx_eval_grid_close(&x.eg);
    wx_archive_close(ar);
    if (st != WX_OK) wx_eval_result_free(r);
    return st;
}

void wx_eval_result_free(wx_eval_result *r) {
    free(r->models), free(r->chan_names), free(r->chan_units), free(r->cells);
    free(r->init_set), free(r->model_ninit), free(r->region_names), free(r->rcells);
    memset(r, 0, sizeof *r);
}
