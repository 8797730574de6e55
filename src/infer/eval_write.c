/* eval's tables: scores.csv and scores.json (formats in eval.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"
#include "infer/eval.h"

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
    wx_json_kv_string(&j, "convention", r->convention == WX_EVAL_FOURCASTNET ? "fourcastnet" : "wb2");
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
