/* eval's tables: scores.csv and scores.json (formats in eval.h), and the lookups of one score. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"
#include "core/wx_log.h"
#include "infer/eval.h"
#include "io/climatology.h"

static void csv_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, ",%.9g", v);
    else fputc(',', f);
}

/* One row; region: the last column's value, NULL without the column (global only). */
static void csv_row(FILE *fp, const wx_eval_result *r, const wx_eval_cell *c, const char *region) {
    wx_scores s;
    wx_score_finish(&c->sums, &s);
    fprintf(fp, "%s,%s,%s,%g,%lld", r->models[c->model], r->chan_names[c->chan],
            r->chan_units[c->chan], c->lead_s / 3600.0, (long long)s.n);
    csv_num(fp, s.rmse), csv_num(fp, s.bias), csv_num(fp, s.mae), csv_num(fp, s.acc);
    fprintf(fp, ",%lld", (long long)s.n_ens);
    csv_num(fp, s.crps), csv_num(fp, s.spread), csv_num(fp, s.spread_skill);
    csv_num(fp, s.spread_skill_fair);
    if (r->has_seeps) csv_num(fp, s.seeps);
    if (region) fprintf(fp, ",%s", region);
    fputc('\n', fp);
}

wx_status wx_eval_write_csv(const wx_eval_result *r, const char *path) {
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    /* The region column only with regions besides global: the global-only table stays as it was,
     * and a reader of the columns by position finds them where they were. */
    int regions = r->nregions > 1;
    fprintf(f.fp, "model,variable,units,lead_hours,n,rmse,bias,mae,acc,n_ens,crps,spread,"
                  "spread_skill,spread_skill_fair%s%s\n", r->has_seeps ? ",seeps" : "",
            regions ? ",region" : "");
    for (int i = 0; i < r->ncells; i++) csv_row(f.fp, r, &r->cells[i], regions ? "global" : NULL);
    for (int i = 0; regions && i < r->nrcells; i++)
        csv_row(f.fp, r, &r->rcells[i], r->region_names[r->rcells[i].region]);
    return wx_atomic_commit(&f);
}

/* One score object; region: its "region" key first, NULL for none (the global "scores"). */
static void json_score(wx_json *j, const wx_eval_result *r, const wx_eval_cell *c, const char *region) {
    wx_scores s;
    wx_score_finish(&c->sums, &s);
    wx_json_object_begin(j);
    if (region) wx_json_kv_string(j, "region", region);
    wx_json_kv_string(j, "model", r->models[c->model]);
    wx_json_kv_string(j, "variable", r->chan_names[c->chan]);
    wx_json_kv_string(j, "units", r->chan_units[c->chan]);
    wx_json_kv_number(j, "lead_hours", c->lead_s / 3600.0);
    wx_json_kv_int(j, "n", s.n);
    wx_json_kv_number(j, "rmse", s.rmse);
    wx_json_kv_number(j, "bias", s.bias);
    wx_json_kv_number(j, "mae", s.mae);
    wx_json_kv_number(j, "acc", s.acc);
    if (s.n_ens > 0) {
        wx_json_kv_int(j, "n_ens", s.n_ens);
        wx_json_kv_number(j, "crps", s.crps);
        wx_json_kv_number(j, "spread", s.spread);
        wx_json_kv_number(j, "spread_skill", s.spread_skill);
        wx_json_kv_number(j, "spread_skill_fair", s.spread_skill_fair);
    }
    if (s.n_seeps > 0) wx_json_kv_number(j, "seeps", s.seeps);
    wx_json_object_end(j);
}

wx_status wx_eval_write_json(const wx_eval_result *r, const char *path) {
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    wx_json j;
    wx_json_init(&j, f.fp);
    wx_json_object_begin(&j);
    wx_json_kv_int(&j, "initial_times", r->ninit);
    wx_json_kv_bool(&j, "climatology", r->has_climatology);
    wx_json_kv_string(&j, "convention", r->convention == WX_EVAL_FOURCASTNET ? "fourcastnet" : "wb2");
    wx_json_kv_number(&j, "resolution", r->resolution > 0 ? r->resolution : NAN); /* null: native */
    wx_json_key(&j, "seeps"); /* null: not scored (no SEEPS climatology) */
    if (r->has_seeps) {
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "variable", r->chan_names[r->seeps_chan]);
        wx_json_kv_number(&j, "accumulation_hours", r->seeps_period_s / 3600.0);
        wx_json_kv_number(&j, "dry_threshold", r->seeps_dry);
        wx_json_kv_string(&j, "units", r->chan_units[r->seeps_chan]);
        wx_json_kv_number(&j, "min_p1", WX_SEEPS_MIN_P1);
        wx_json_kv_number(&j, "max_p1", WX_SEEPS_MAX_P1);
        wx_json_object_end(&j);
    } else {
        wx_json_null(&j);
    }
    /* "per_model": rows persistence@MODEL / climatology@MODEL on each model's initial times */
    int any_base = 0;
    for (int i = 0; i < r->nmodels; i++)
        any_base |= !strncmp(r->models[i], WX_EVAL_PERSISTENCE, strlen(WX_EVAL_PERSISTENCE)) ||
                    !strncmp(r->models[i], WX_EVAL_CLIMATOLOGY, strlen(WX_EVAL_CLIMATOLOGY));
    wx_json_kv_string(&j, "baselines", !any_base ? "none" : r->baselines_per_model ? "per_model" : "shared");
    wx_json_key(&j, "models");
    wx_json_array_begin(&j);
    for (int i = 0; i < r->nmodels; i++) wx_json_string(&j, r->models[i]);
    wx_json_array_end(&j);
    wx_json_key(&j, "scores");
    wx_json_array_begin(&j);
    for (int i = 0; i < r->ncells; i++) json_score(&j, r, &r->cells[i], NULL);
    wx_json_array_end(&j);
    /* Other regions apart: readers of "scores" keep getting the global rows only. */
    if (r->nregions > 1) {
        wx_json_key(&j, "regions");
        wx_json_array_begin(&j);
        for (int k = 0; k < r->nregions; k++) wx_json_string(&j, r->region_names[k]);
        wx_json_array_end(&j);
        wx_json_key(&j, "region_scores");
        wx_json_array_begin(&j);
        for (int i = 0; i < r->nrcells; i++)
            json_score(&j, r, &r->rcells[i], r->region_names[r->rcells[i].region]);
        wx_json_array_end(&j);
    }
    wx_json_object_end(&j);
    fputc('\n', f.fp);
    return wx_atomic_commit(&f);
}

const wx_eval_cell *wx_eval_find_region(const wx_eval_result *r, const char *region,
                                        const char *model, const char *chan, int64_t lead_s) {
    if (!strcmp(region, "global")) return wx_eval_find(r, model, chan, lead_s);
    for (int i = 0; i < r->nrcells; i++) {
        const wx_eval_cell *c = &r->rcells[i];
        if (c->lead_s == lead_s && !strcmp(r->region_names[c->region], region) &&
            !strcmp(r->models[c->model], model) && !strcmp(r->chan_names[c->chan], chan))
            return c;
    }
    return NULL;
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

/* One warning per model and variable whose forecasts were NaN or infinite where the truth was
 * finite (metrics.h: those scores are NaN). Cells are sorted by model, channel, lead. */
void wx_eval_warn_non_finite(const wx_eval_result *r) {
    for (int i = 0; i < r->ncells;) {
        int k = i, leads = 0, bad_leads = 0;
        int64_t bad = 0, first = -1;
        for (; k < r->ncells && r->cells[k].model == r->cells[i].model && r->cells[k].chan == r->cells[i].chan; k++) {
            leads++;
            if (r->cells[k].sums.n_bad == 0) continue;
            bad += r->cells[k].sums.n_bad, bad_leads++;
            if (first < 0) first = r->cells[k].lead_s;
        }
        if (bad)
            wx_log_warn("eval: %s: %s: %lld forecast values are NaN or infinite where the truth is "
                        "finite, at %d of %d leads (the first +%lld h): those scores are NaN",
                        r->models[r->cells[i].model], r->chan_names[r->cells[i].chan], (long long)bad,
                        bad_leads, leads, (long long)(first / 3600));
        i = k;
    }
}
