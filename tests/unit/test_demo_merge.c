/* `wxcast demo --model both` merges the two models' scores (wx_demo_scores_merge): built here by
 * hand with one initial time per cell, RMSE = sqrt(sum_mse/n) set directly. Checks: models
 * [fourcastnet, graphcast, persistence, climatology]; channels = the first model's then the
 * second's others; every cell sorted by model, channel, lead with the values carried over; no
 * GraphCast cell for the channel it does not predict; the baselines are the first's and their
 * largest relative difference to the second's is reported; mismatched leads are refused; the table
 * prints "-" for the missing model/channel and marks wins. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/demo.h"
#include "wx_test.h"

/* scores of `name` (+ persistence, climatology) for nch channels and 2 leads (6 h, 12 h); the
 * MSE of (model m, channel c, lead k) is base[m] + 10·c + k. */
static void make(wx_demo_scores *s, const char *name, int nch, const char *const *chan,
                 const double *base) {
    memset(s, 0, sizeof *s);
    s->nleads = 2;
    s->lead_s = malloc(2 * sizeof(int64_t));
    s->lead_s[0] = 21600, s->lead_s[1] = 43200;
    s->nchan = nch, s->nlat = 32;
    s->chan = calloc((size_t)nch, sizeof *s->chan);
    s->units = calloc((size_t)nch, sizeof *s->units);
    wx_eval_result *e = &s->res;
    e->nmodels = 3;
    e->models = calloc(3, sizeof *e->models);
    snprintf(e->models[0], 64, "%s", name);
    snprintf(e->models[1], 64, "persistence");
    snprintf(e->models[2], 64, "climatology");
    e->nchan = nch;
    e->chan_names = calloc((size_t)nch, sizeof *e->chan_names);
    e->chan_units = calloc((size_t)nch, sizeof *e->chan_units);
    for (int c = 0; c < nch; c++) {
        snprintf(s->chan[c], 64, "%s", chan[c]);
        snprintf(e->chan_names[c], 64, "%s", chan[c]);
        snprintf(s->units[c], 32, "u%d", c);
        snprintf(e->chan_units[c], 32, "u%d", c);
    }
    e->ncells = 3 * nch * 2;
    e->cells = calloc((size_t)e->ncells, sizeof *e->cells);
    for (int m = 0, i = 0; m < 3; m++)
        for (int c = 0; c < nch; c++)
            for (int k = 0; k < 2; k++, i++) {
                e->cells[i] = (wx_eval_cell){.model = m, .chan = c, .lead_s = s->lead_s[k]};
                e->cells[i].sums.n = 1;
                e->cells[i].sums.sum_mse = base[m] + 10.0 * c + k;
            }
    e->ninit = 1;
    e->has_climatology = 1;
}

static double rmse_of(const wx_demo_scores *s, const char *model, const char *chan, int64_t lead) {
    const wx_eval_cell *c = wx_eval_find(&s->res, model, chan, lead);
    return c ? sqrt(c->sums.sum_mse / (double)c->sums.n) : -1;
}

int main(void) {
    static const char *const fc[3] = {"z500", "t850", "u500"}, *const gc[2] = {"u500", "msl"};
    const double bf[3] = {100, 400, 900}, bg[3] = {50, 400, 910};
    wx_demo_scores a, b, m;
    make(&a, "fourcastnet", 3, fc, bf);
    make(&b, "graphcast", 2, gc, bg);
    double dev = -1;
    WX_CHECK(wx_demo_scores_merge(&a, &b, &m, &dev) == WX_OK, "merge: %s", wx_error_message());
    WX_CHECK(m.res.nmodels == 4 && !strcmp(m.res.models[0], "fourcastnet") &&
             !strcmp(m.res.models[1], "graphcast") && !strcmp(m.res.models[2], "persistence") &&
             !strcmp(m.res.models[3], "climatology"), "model order");
    WX_CHECK(m.nchan == 4 && !strcmp(m.chan[0], "z500") && !strcmp(m.chan[2], "u500") &&
             !strcmp(m.chan[3], "msl") && !strcmp(m.units[3], "u1"), "channels: a's then msl");
    /* cells: fcn 3x2, graphcast 2x2, persistence 3x2, climatology 3x2 */
    WX_CHECK(m.res.ncells == 6 + 4 + 6 + 6, "cells %d", m.res.ncells);
    int sorted = 1;
    for (int i = 1; i < m.res.ncells; i++) {
        const wx_eval_cell *p = &m.res.cells[i - 1], *q = &m.res.cells[i];
        if (p->model > q->model || (p->model == q->model && (p->chan > q->chan ||
                                                             (p->chan == q->chan && p->lead_s >= q->lead_s))))
            sorted = 0;
    }
    WX_CHECK(sorted, "cells sorted by model, channel, lead");
    WX_CHECK(rmse_of(&m, "graphcast", "t850", 21600) < 0, "no graphcast t850");
    WX_CHECK(fabs(rmse_of(&m, "graphcast", "msl", 43200) - sqrt(50 + 10 + 1)) < 1e-12, "graphcast msl 12 h");
    WX_CHECK(fabs(rmse_of(&m, "graphcast", "u500", 21600) - sqrt(50)) < 1e-12, "graphcast u500 6 h");
    WX_CHECK(fabs(rmse_of(&m, "fourcastnet", "u500", 43200) - sqrt(100 + 20 + 1)) < 1e-12, "fcn u500");
    WX_CHECK(fabs(rmse_of(&m, "climatology", "u500", 21600) - sqrt(900 + 20)) < 1e-12,
             "climatology: the first's");
    /* b's u500 is its channel 0: persistence 400 + k against a's 420 + k, climatology 910 + k
     * against 920 + k; the largest relative difference is persistence's at k = 0 */
    double want = (sqrt(420.0) - sqrt(400.0)) / sqrt(420.0);
    WX_CHECK(fabs(dev - want) < 1e-12, "baseline difference %g, expected %g", dev, want);
    WX_CHECK(wx_demo_model_wins(&m, "graphcast", "u500", 6) && wx_demo_model_wins(&m, "fourcastnet", "u500", 12),
             "wins: both models beat the baselines on u500");
    WX_CHECK(!wx_demo_model_wins(&m, "persistence", "u500", 6), "persistence does not beat itself");
    WX_CHECK(!wx_demo_model_wins(&m, "graphcast", "t850", 6), "no win without a score");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int hours[2] = {6, 12};
    wx_demo_print_table(f, &m, hours, 2);
    fclose(f);
    WX_CHECK(strstr(text, "t850") && strstr(text, " - ") && strstr(text, "*"), "table: - and *\n%s", text);
    free(text);
    /* other leads: refused */
    b.lead_s[1] = 64800;
    wx_demo_scores bad;
    WX_CHECK(wx_demo_scores_merge(&a, &b, &bad, &dev) == WX_ERR_USAGE, "different leads refused");
    wx_demo_scores_free(&a), wx_demo_scores_free(&b), wx_demo_scores_free(&m);
    return wx_test_summary();
}
