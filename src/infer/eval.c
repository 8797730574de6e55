#include "infer/eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"
#include "infer/forecast_init.h"
#include "io/archive.h"
#include "io/climatology.h"
#include "io/forecast_file.h"
#include "io/wx_source.h"
#include "meteo/wx_grid.h"

/* Open-addressing map from an integer triple to an int (cells and "already scored" sets). */
typedef struct {
    int64_t a, b, c;
    int val, used;
} slot;
typedef struct {
    slot *s;
    size_t cap, n;
} tmap;

static size_t th(int64_t a, int64_t b, int64_t c) {
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ULL ^ (uint64_t)b * 0xC2B2AE3D27D4EB4FULL ^
                 (uint64_t)c * 0x165667B19E3779F9ULL;
    return (size_t)(h ^ (h >> 29));
}

static slot *tmap_find(tmap *m, int64_t a, int64_t b, int64_t c, int add) {
    if (add && (m->n + 1) * 2 > m->cap) {
        tmap old = *m;
        m->cap = old.cap ? old.cap * 2 : 256;
        m->s = wx_calloc(m->cap, sizeof(slot));
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.s[i].used) *tmap_find(m, old.s[i].a, old.s[i].b, old.s[i].c, 1) = old.s[i];
        free(old.s);
    }
    if (!m->cap) return NULL;
    for (size_t i = th(a, b, c) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        slot *p = &m->s[i];
        if (p->used && p->a == a && p->b == b && p->c == c) return p;
        if (!p->used) {
            if (!add) return NULL;
            *p = (slot){a, b, c, -1, 1};
            m->n++;
            return p;
        }
    }
}

static int model_index(wx_eval_result *r, const char *name) {
    for (int i = 0; i < r->nmodels; i++)
        if (!strcmp(r->models[i], name)) return i;
    r->models = realloc(r->models, sizeof(*r->models) * (size_t)(r->nmodels + 1));
    WX_ASSERT(r->models);
    snprintf(r->models[r->nmodels], 64, "%s", name);
    return r->nmodels++;
}

static wx_score_sums *cell(wx_eval_result *r, tmap *cells, int model, int chan, int64_t lead) {
    slot *p = tmap_find(cells, model, chan, lead, 1);
    if (p->val < 0) {
        r->cells = realloc(r->cells, sizeof(wx_eval_cell) * (size_t)(r->ncells + 1));
        WX_ASSERT(r->cells);
        r->cells[r->ncells] = (wx_eval_cell){.model = model, .chan = chan, .lead_s = lead};
        p->val = r->ncells++;
    }
    return &r->cells[p->val].sums;
}

/* The archive channel of a field, or -1. Ensemble files keep one variable per pressure channel
 * ("z500": CDO reads at most 4 dimensions, so there is no room for a level axis beside
 * realization); such a name, unknown to the catalogue as a single-level field, is read as its
 * pressure parameter and level, the way model channel names are parsed. */
static int match_channel(const wx_archive_meta *m, const wx_field_info *f) {
    const char *param = f->param;
    const wx_catalogue_entry *entry = f->entry;
    wx_level_kind kind = f->kind;
    double level = f->level;
    wx_archive_channel pc;
    if (kind == WX_LEVEL_SINGLE && !entry && wx_forecast_channel_from_name(f->name, 0, &pc) == WX_OK &&
        pc.kind == WX_LEVEL_PRESSURE) {
        param = pc.param, kind = pc.kind, level = pc.level;
        entry = wx_catalogue_find_kind(pc.param, WX_LEVEL_PRESSURE);
    }
    for (int c = 0; c < m->nchan; c++) {
        const wx_archive_channel *ch = &m->chan[c];
        if (ch->kind != kind || fabs(ch->level - level) > 1e-6) continue;
        if (!strcmp(ch->param, param) || (entry && wx_catalogue_matches(entry, ch->param))) return c;
    }
    return -1;
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

/* One forecast file: every matched field against the truth at its valid time. */
static wx_status eval_file(const char *path, int model, wx_archive *ar, wx_climatology *clim,
                           int baselines, wx_eval_result *r, tmap *cells, tmap *done,
                           tmap *inits) {
    const wx_archive_meta *m = wx_archive_meta_of(ar);
    int64_t P = wx_archive_points(m), R = P * m->nchan;
    wx_source *src;
    WX_TRY(wx_source_open(path, &src));
    wx_status st = WX_OK;
    int nf = wx_source_count(src), nj = 0, found = 0;
    job *jobs = wx_malloc(sizeof(job) * (size_t)(nf ? nf : 1));
    float *fc = wx_malloc(sizeof(float) * (size_t)P), *ens = NULL, *truth = wx_malloc(sizeof(float) * (size_t)R);
    float *pers = NULL, *cl = clim ? wx_malloc(sizeof(float) * (size_t)R) : NULL;
    double *w = wx_malloc(sizeof(double) * (size_t)m->grid.nlat);
    wx_grid_area_weights(&m->grid, w);
    wx_time init = 0;
    if ((st = wx_forecast_file_ref_time(path, &init, &found))) goto done;
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(src, i);
        int c = match_channel(m, f);
        if (c < 0 || !f->has_time) continue;
        if (!wx_grid_same(&f->grid, &m->grid, 1e-6)) {
            char a[160], b[160];
            wx_grid_describe(&f->grid, a, sizeof a);
            wx_grid_describe(&m->grid, b, sizeof b);
            st = wx_error_set(WX_ERR_RUN, "%s: %s is on grid %s, the truth archive on %s (regrid "
                                          "first)", path, f->name, a, b);
            goto done;
        }
        if (!found && (nj == 0 || f->valid < init)) init = f->valid;
        jobs[nj++] = (job){i, c, f->member, f->valid};
    }
    if (nj == 0) {
        st = wx_error_set(WX_ERR_RUN, "%s: no field matches a channel of the truth archive "
                                      "(names, level kinds and levels differ)", path);
        goto done;
    }
    qsort(jobs, (size_t)nj, sizeof(job), job_cmp);
    int64_t pi = (init - m->start) % m->step == 0 ? (init - m->start) / m->step : -1;
    if (baselines && pi >= 0 && pi < m->count) {
        pers = wx_malloc(sizeof(float) * (size_t)R);
        if ((st = wx_archive_read(ar, &pi, 1, pers))) goto done;
    }
    tmap_find(inits, init, 0, 0, 1);
    wx_time loaded = INT64_MIN;
    for (int k = 0, next; k < nj; k = next) {
        const job *j = &jobs[k];
        /* An ensemble file (realization/number axis): jobs k..next-1 are the members of one
         * (valid time, channel). */
        next = k + 1;
        while (j->member >= 0 && next < nj && jobs[next].valid == j->valid && jobs[next].chan == j->chan) next++;
        int64_t lead = j->valid - init;
        if (lead < 0) {
            st = wx_error_set(WX_ERR_RUN, "%s: valid time before the initial time", path);
            goto done;
        }
        int64_t ti = (j->valid - m->start) / m->step;
        if ((j->valid - m->start) % m->step || ti < 0 || ti >= m->count) continue; /* no truth */
        if (j->valid != loaded) {
            if ((st = wx_archive_read(ar, &ti, 1, truth))) goto done;
            if (cl && (st = wx_climatology_get_time(clim, j->valid, cl))) goto done;
            loaded = j->valid;
        }
        const float *o = truth + j->chan * P, *c = cl ? cl + j->chan * P : NULL;
        wx_score_sums *sums = cell(r, cells, model, j->chan, lead);
        if (j->member < 0) {
            if ((st = wx_source_read(src, j->field, WX_MISSING_NAN, fc))) goto done;
        } else { /* deterministic scores of the ensemble mean (WB2), CRPS and spread/skill */
            int M = next - k;
            if (!ens) ens = wx_malloc(sizeof(float) * (size_t)(P * M));
            else ens = realloc(ens, sizeof(float) * (size_t)(P * M));
            WX_ASSERT(ens);
            for (int e = 0; e < M; e++)
                if ((st = wx_source_read(src, jobs[k + e].field, WX_MISSING_NAN, ens + e * P))) goto done;
            for (int64_t p = 0; p < P; p++) {
                double sum = 0;
                for (int e = 0; e < M; e++) sum += ens[e * P + p];
                fc[p] = (float)(sum / M);
            }
            wx_score_add_ensemble(sums, w, m->grid.nlat, m->grid.nlon, M, ens, o);
        }
        wx_score_add(sums, w, m->grid.nlat, m->grid.nlon, fc, o, c);
        slot *d = baselines ? tmap_find(done, init, j->chan, lead, 1) : NULL;
        if (d && d->val < 0) { /* first time this (init, channel, lead) is seen */
            d->val = 1;
            if (pers)
                wx_score_add(cell(r, cells, model_index(r, WX_EVAL_PERSISTENCE), j->chan, lead), w,
                             m->grid.nlat, m->grid.nlon, pers + j->chan * P, o, c);
            if (cl) /* ACC of the climatology against itself is 0/0: not scored */
                wx_score_add(cell(r, cells, model_index(r, WX_EVAL_CLIMATOLOGY), j->chan, lead), w,
                             m->grid.nlat, m->grid.nlon, c, o, NULL);
        }
    }
done:
    free(jobs), free(fc), free(ens), free(truth), free(pers), free(cl), free(w);
    wx_source_close(src);
    return st;
}

static int cell_cmp(const void *a, const void *b) {
    const wx_eval_cell *x = a, *y = b;
    if (x->model != y->model) return x->model - y->model;
    if (x->chan != y->chan) return x->chan - y->chan;
    return x->lead_s < y->lead_s ? -1 : x->lead_s > y->lead_s;
}

wx_status wx_eval_run(const wx_eval_opts *o, wx_eval_result *r) {
    memset(r, 0, sizeof *r);
    wx_archive *ar;
    wx_archive_opts ao = {.threads = 2, .check_crc = 1};
    WX_TRY(wx_archive_open(o->truth, &ao, &ar));
    const wx_archive_meta *m = wx_archive_meta_of(ar);
    wx_climatology *clim = NULL;
    wx_status st = WX_OK;
    const char *cdir = o->climatology ? o->climatology : (m->climatology[0] ? o->truth : "");
    if (cdir[0] && (st = wx_climatology_open(cdir, &clim))) {
        wx_archive_close(ar);
        return st;
    }
    if (clim) {
        const wx_clim_header *h = wx_climatology_header(clim);
        if ((int)h->nchan != m->nchan || (int)h->nlat != m->grid.nlat || (int)h->nlon != m->grid.nlon) {
            st = wx_error_set(WX_ERR_RUN, "%s: climatology has %u channels on %ux%u, the truth "
                              "archive %d on %dx%d", cdir, h->nchan, h->nlat, h->nlon, m->nchan,
                              m->grid.nlat, m->grid.nlon);
            goto out;
        }
    }
    r->nchan = m->nchan;
    r->chan_names = wx_calloc((size_t)m->nchan, sizeof(*r->chan_names));
    r->chan_units = wx_calloc((size_t)m->nchan, sizeof(*r->chan_units));
    for (int c = 0; c < m->nchan; c++) {
        snprintf(r->chan_names[c], 64, "%s", m->chan[c].name);
        snprintf(r->chan_units[c], 32, "%s", m->chan[c].units);
    }
    r->has_climatology = clim != NULL;
    tmap cells = {0}, done = {0}, inits = {0};
    for (int f = 0; f < o->nfiles && st == WX_OK; f++)
        model_index(r, o->models[f]); /* models first, baselines after them */
    for (int f = 0; f < o->nfiles && st == WX_OK; f++)
        st = eval_file(o->files[f], model_index(r, o->models[f]), ar, clim, o->baselines, r, &cells,
                       &done, &inits);
    r->ninit = (int64_t)inits.n;
    free(cells.s), free(done.s), free(inits.s);
    if (st == WX_OK) qsort(r->cells, (size_t)r->ncells, sizeof(wx_eval_cell), cell_cmp);
out:
    if (clim) wx_climatology_close(clim);
    wx_archive_close(ar);
    if (st != WX_OK) wx_eval_result_free(r);
    return st;
}

void wx_eval_result_free(wx_eval_result *r) {
    free(r->models), free(r->chan_names), free(r->chan_units), free(r->cells);
    memset(r, 0, sizeof *r);
}

const wx_eval_cell *wx_eval_find(const wx_eval_result *r, const char *model, const char *chan,
                                 int64_t lead_s) {
    for (int i = 0; i < r->ncells; i++) {
        const wx_eval_cell *c = &r->cells[i];
        if (c->lead_s == lead_s && !strcmp(r->models[c->model], model) &&
            !strcmp(r->chan_names[c->chan], chan))
            return c;
    }
    return NULL;
}

static void csv_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, ",%.9g", v);
    else fputc(',', f);
}

wx_status wx_eval_write_csv(const wx_eval_result *r, const char *path) {
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    fprintf(f.fp, "model,variable,units,lead_hours,n,rmse,bias,mae,acc,n_ens,crps,spread,"
                  "spread_skill,spread_skill_fair\n");
    for (int i = 0; i < r->ncells; i++) {
        const wx_eval_cell *c = &r->cells[i];
        wx_scores s;
        wx_score_finish(&c->sums, &s);
        fprintf(f.fp, "%s,%s,%s,%g,%lld", r->models[c->model], r->chan_names[c->chan],
                r->chan_units[c->chan], c->lead_s / 3600.0, (long long)s.n);
        csv_num(f.fp, s.rmse), csv_num(f.fp, s.bias), csv_num(f.fp, s.mae), csv_num(f.fp, s.acc);
        fprintf(f.fp, ",%lld", (long long)s.n_ens);
        csv_num(f.fp, s.crps), csv_num(f.fp, s.spread), csv_num(f.fp, s.spread_skill);
        csv_num(f.fp, s.spread_skill_fair);
        fputc('\n', f.fp);
    }
    return wx_atomic_commit(&f);
}

wx_status wx_eval_write_json(const wx_eval_result *r, const char *path) {
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    wx_json j;
    wx_json_init(&j, f.fp);
    wx_json_object_begin(&j);
    wx_json_kv_int(&j, "initial_times", r->ninit);
    wx_json_kv_bool(&j, "climatology", r->has_climatology);
    wx_json_key(&j, "models");
    wx_json_array_begin(&j);
    for (int i = 0; i < r->nmodels; i++) wx_json_string(&j, r->models[i]);
    wx_json_array_end(&j);
    wx_json_key(&j, "scores");
    wx_json_array_begin(&j);
    for (int i = 0; i < r->ncells; i++) {
        const wx_eval_cell *c = &r->cells[i];
        wx_scores s;
        wx_score_finish(&c->sums, &s);
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "model", r->models[c->model]);
        wx_json_kv_string(&j, "variable", r->chan_names[c->chan]);
        wx_json_kv_string(&j, "units", r->chan_units[c->chan]);
        wx_json_kv_number(&j, "lead_hours", c->lead_s / 3600.0);
        wx_json_kv_int(&j, "n", s.n);
        wx_json_kv_number(&j, "rmse", s.rmse);
        wx_json_kv_number(&j, "bias", s.bias);
        wx_json_kv_number(&j, "mae", s.mae);
        wx_json_kv_number(&j, "acc", s.acc);
        if (s.n_ens > 0) {
            wx_json_kv_int(&j, "n_ens", s.n_ens);
            wx_json_kv_number(&j, "crps", s.crps);
            wx_json_kv_number(&j, "spread", s.spread);
            wx_json_kv_number(&j, "spread_skill", s.spread_skill);
            wx_json_kv_number(&j, "spread_skill_fair", s.spread_skill_fair);
        }
        wx_json_object_end(&j);
    }
    wx_json_array_end(&j);
    wx_json_object_end(&j);
    fputc('\n', f.fp);
    return wx_atomic_commit(&f);
}
