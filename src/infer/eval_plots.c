/* eval's figures: RMSE/ACC against lead time with every model on one plot, and scorecards of
 * relative RMSE against a baseline (io/png_plot.h, io/png_scorecard.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "infer/eval.h"
#include "io/png_plot.h"
#include "io/png_scorecard.h"

/* A baseline row: "persistence", "climatology", or one of them "@MODEL". which: the name. */
static int baseline_row(const char *row, const char *which) {
    size_t n = strlen(which);
    return !strncmp(row, which, n) && (row[n] == 0 || row[n] == '@');
}

wx_status wx_eval_write_plots(const wx_eval_result *r, const char *dir) {
    wx_plot_series *ser = wx_calloc((size_t)r->nmodels, sizeof *ser);
    double *x = wx_malloc(sizeof(double) * (size_t)(r->ncells + 1));
    double *y = wx_malloc(sizeof(double) * (size_t)(r->ncells + 1));
    wx_status st = WX_OK;
    for (int metric = 0; metric < 2 && st == WX_OK; metric++) {
        if (metric == 1 && !r->has_climatology) break;
        for (int ch = 0; ch < r->nchan && st == WX_OK; ch++) {
            int ns = 0, used = 0;
            for (int mo = 0; mo < r->nmodels; mo++) {
                int n0 = used;
                for (int i = 0; i < r->ncells; i++) {
                    const wx_eval_cell *c = &r->cells[i];
                    if (c->model != mo || c->chan != ch) continue;
                    wx_scores s;
                    wx_score_finish(&c->sums, &s);
                    x[used] = c->lead_s / 3600.0;
                    y[used++] = metric ? s.acc : s.rmse;
                }
                int finite = 0; /* wind vectors have no ACC: no empty ACC plot for them */
                for (int k = n0; k < used; k++) finite += isfinite(y[k]) != 0;
                if (!finite || (metric && baseline_row(r->models[mo], WX_EVAL_CLIMATOLOGY))) {
                    used = n0;
                    continue;
                }
                int base = baseline_row(r->models[mo], WX_EVAL_PERSISTENCE) ||
                           baseline_row(r->models[mo], WX_EVAL_CLIMATOLOGY);
                ser[ns++] = (wx_plot_series){r->models[mo], used - n0, x + n0, y + n0, base};
            }
            if (!ns) continue;
            char path[4096], title[160], ylab[96];
            snprintf(path, sizeof path, "%s/%s_%s.png", dir, metric ? "acc" : "rmse", r->chan_names[ch]);
            snprintf(title, sizeof title, "%s %s", r->chan_names[ch], metric ? "ACC" : "RMSE");
            snprintf(ylab, sizeof ylab, "%s", metric ? "ACC" : r->chan_units[ch]);
            wx_plot_opts po = {title, "lead time (hours)", ylab, 0, 0};
            st = wx_plot_lines_png(path, &po, ns, ser);
        }
    }
    free(ser), free(x), free(y);
    return st;
}

static int is_baseline(const char *name) {
    return !strcmp(name, WX_EVAL_PERSISTENCE) || !strcmp(name, WX_EVAL_CLIMATOLOGY);
}

int wx_eval_model_index(const wx_eval_result *r, const char *name) {
    for (int i = 0; i < r->nmodels; i++)
        if (!strcmp(r->models[i], name)) return i;
    size_t n = strlen(name);
    if (r->baselines_per_model && is_baseline(name))
        for (int i = 0; i < r->nmodels; i++)
            if (!strncmp(r->models[i], name, n) && r->models[i][n] == '@') return i;
    return -1;
}

/* The model a row belongs to: its own name, or MODEL of a per-model baseline row "B@MODEL". */
static const char *owner(const wx_eval_result *r, int row) {
    const char *at = strchr(r->models[row], '@');
    return at ? at + 1 : r->models[row];
}

static const wx_eval_cell *find_cell(const wx_eval_result *r, int model, int chan, int64_t lead_s) {
    for (int i = 0; i < r->ncells; i++) {
        const wx_eval_cell *c = &r->cells[i];
        if (c->model == model && c->chan == chan && c->lead_s == lead_s) return c;
    }
    return NULL;
}

double wx_eval_relative_rmse(const wx_eval_result *r, int model, int base, int chan, int64_t lead_s) {
    const wx_eval_cell *a = find_cell(r, model, chan, lead_s), *b = find_cell(r, base, chan, lead_s);
    if (!a || !b) return NAN;
    wx_scores sa, sb;
    wx_score_finish(&a->sums, &sa);
    wx_score_finish(&b->sums, &sb);
    if (!(sb.rmse > 0) || !isfinite(sa.rmse)) return NAN;
    return 100.0 * (sa.rmse - sb.rmse) / sb.rmse;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One card: rows = channels the model has, columns = its leads with at least one value. */
static wx_status write_card(const wx_eval_result *r, int mo, int base, const char *base_name,
                            const char *dir, int *written) {
    int64_t *leads = malloc(sizeof(int64_t) * (size_t)(r->ncells + 1));
    int *rows = malloc(sizeof(int) * (size_t)(r->nchan + 1)), nl = 0, nr = 0;
    for (int i = 0; i < r->ncells; i++)
        if (r->cells[i].model == mo) leads[nl++] = r->cells[i].lead_s;
    qsort(leads, (size_t)nl, sizeof(int64_t), cmp_i64);
    int u = 0;
    for (int i = 0; i < nl; i++)
        if (i == 0 || leads[i] != leads[u - 1]) leads[u++] = leads[i];
    nl = u;
    double *v = malloc(sizeof(double) * (size_t)(nl * r->nchan + 1));
    for (int ch = 0; ch < r->nchan; ch++) {
        int any = 0;
        for (int k = 0; k < nl; k++) any |= find_cell(r, mo, ch, leads[k]) != NULL;
        if (any) rows[nr++] = ch;
    }
    int nc = 0; /* keep the lead columns with a value (persistence has RMSE 0 at lead 0) */
    for (int k = 0; k < nl; k++) {
        int any = 0;
        for (int i = 0; i < nr; i++) {
            v[i * nl + nc] = wx_eval_relative_rmse(r, mo, base, rows[i], leads[k]);
            any |= isfinite(v[i * nl + nc]);
        }
        if (any) leads[nc++] = leads[k];
    }
    wx_status st = WX_OK;
    if (nr > 0 && nc > 0) {
        /* compact the [nr, nl] buffer to [nr, nc] */
        for (int i = 0; i < nr; i++) memmove(v + i * nc, v + i * nl, sizeof(double) * (size_t)nc);
        const char **rl = malloc(sizeof(char *) * (size_t)nr), **cl = malloc(sizeof(char *) * (size_t)nc);
        char(*cbuf)[24] = malloc(sizeof(*cbuf) * (size_t)nc);
        for (int i = 0; i < nr; i++) rl[i] = r->chan_names[rows[i]];
        for (int k = 0; k < nc; k++) snprintf(cbuf[k], 24, "%gh", leads[k] / 3600.0), cl[k] = cbuf[k];
        char path[4096], title[200], legend[200];
        /* Per-model baseline rows: the card is named after the baseline; the title says on
         * whose initial times. Models scored on different initial times: the title says so. */
        int differ = r->init_set && r->init_set[mo] != r->init_set[base];
        snprintf(path, sizeof path, "%s/scorecard_%s_vs_%s.png", dir, r->models[mo], base_name);
        if (differ)
            snprintf(title, sizeof title, "RMSE of %s relative to %s (on different initial times, "
                     "%lld and %lld)", r->models[mo], base_name, (long long)r->model_ninit[mo],
                     (long long)r->model_ninit[base]);
        else if (strcmp(base_name, r->models[base]))
            snprintf(title, sizeof title, "RMSE of %s relative to %s on the %lld initial time%s of %s",
                     r->models[mo], base_name, (long long)r->model_ninit[base],
                     r->model_ninit[base] == 1 ? "" : "s", owner(r, base));
        else snprintf(title, sizeof title, "RMSE of %s relative to %s", r->models[mo], base_name);
        snprintf(legend, sizeof legend, "100 * (RMSE - RMSE %s) / RMSE %s;  blue: better than %s",
                 base_name, base_name, base_name);
        wx_scorecard sc = {title, legend, nr, nc, rl, cl, v, 100};
        st = wx_scorecard_png(path, &sc);
        if (st == WX_OK) (*written)++;
        free(rl), free(cl), free(cbuf);
    }
    free(leads), free(rows), free(v);
    return st;
}

static int eval_product(const char *f, void *unused) {
    (void)unused;
    size_t len = strlen(f);
    int png = len > 4 && !strcmp(f + len - 4, ".png");
    return !strcmp(f, "scores.csv") || !strcmp(f, "scores.json") ||
           (png && (!strncmp(f, "rmse_", 5) || !strncmp(f, "acc_", 4) ||
                    (!strncmp(f, "scorecard_", 10) && strstr(f, "_vs_"))));
}

int wx_eval_remove_old_products(const char *dir) {
    return wx_fs_unlink_matching(dir, eval_product, NULL);
}

wx_status wx_eval_write_scorecards(const wx_eval_result *r, const char *baseline, const char *dir,
                                   int *written) {
    *written = 0;
    int base = wx_eval_model_index(r, baseline), per_model = r->baselines_per_model && is_baseline(baseline);
    if (base < 0) {
        char names[512] = "";
        for (int i = 0; i < r->nmodels; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", r->models[i]);
        return wx_error_set(WX_ERR_USAGE, "--baseline %s: not among the scored models (%s)", baseline, names);
    }
    wx_status st = WX_OK;
    for (int mo = 0; mo < r->nmodels && st == WX_OK; mo++) {
        int b = base;
        if (per_model) { /* the baseline on this row's model's initial times */
            char want[160];
            snprintf(want, sizeof want, "%s@%s", baseline, owner(r, mo));
            b = -1;
            for (int i = 0; i < r->nmodels; i++)
                if (!strcmp(r->models[i], want)) b = i;
        } else if (r->baselines_per_model && strchr(r->models[mo], '@') &&
                   strcmp(owner(r, mo), baseline)) {
            continue; /* another model's baseline row against this model: unrelated times */
        }
        if (b >= 0 && b != mo) st = write_card(r, mo, b, baseline, dir, written);
    }
    return st;
}
