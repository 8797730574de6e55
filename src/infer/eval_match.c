/* Which archive channel a forecast field is, and a forecast file's initial time (eval_match.h). */
#include "infer/eval_match.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer/forecast_init.h"
#include "io/forecast_file.h"

/* The archive channel of a field, or -1. Ensemble files keep one variable per pressure channel
 * ("z500": CDO reads at most 4 dimensions, so there is no room for a level axis beside
 * realization); such a name, unknown to the catalogue as a single-level field, is read as its
 * pressure parameter and level, the way model channel names are parsed. */
int wx_eval_match_channel(const wx_archive_meta *m, const wx_field_info *f) {
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

static int cmp_time(const void *a, const void *b) {
    wx_time x = *(const wx_time *)a, y = *(const wx_time *)b;
    return x < y ? -1 : x > y;
}

/* Initial times of a forecast file (its forecast_reference_time, or the initial times of its
 * fields with a lead: WeatherBench2's layout) and whether it is on the truth's grid without its
 * last row, from one scan of the file. A file with neither initial time (an analysis, an archive
 * dump, a month of ERA5) is refused rather than scored from its first time, where it would
 * "forecast" the truth itself with RMSE 0 and ACC 1. */
wx_status wx_eval_file_scan(const char *path, const wx_archive_meta *m, wx_time **inits, int *n,
                            int *short_by_one) {
    *inits = NULL, *n = 0, *short_by_one = 0;
    WX_TRY(wx_forecast_file_check_not_spread(path)); /* an ensemble's spread is no forecast */
    int found = 0;
    wx_time t0 = 0;
    WX_TRY(wx_forecast_file_ref_time(path, &t0, &found));
    wx_source *src;
    WX_TRY(wx_source_open(path, &src));
    int nf = wx_source_count(src), k = 0;
    wx_grid top = m->grid;
    top.nlat = m->grid.nlat - 1;
    for (int i = 0; i < nf; i++) /* the first field of a truth channel tells the grid */
        if (wx_eval_match_channel(m, wx_source_info(src, i)) >= 0) {
            *short_by_one = m->grid.nlat > 2 && wx_grid_same(&wx_source_info(src, i)->grid, &top, 1e-6);
            break;
        }
    wx_time *t = wx_malloc(sizeof(wx_time) * (size_t)(nf + 1));
    if (found) t[k++] = t0;
    else
        for (int i = 0; i < nf; i++)
            if (wx_source_info(src, i)->has_init) t[k++] = wx_source_info(src, i)->init;
    wx_source_close(src);
    qsort(t, (size_t)k, sizeof(wx_time), cmp_time);
    int u = 0;
    for (int i = 0; i < k; i++)
        if (u == 0 || t[i] != t[u - 1]) t[u++] = t[i];
    if (u > 0) {
        *inits = t, *n = u;
        return WX_OK;
    }
    free(t);
    return wx_error_set(WX_ERR_USAGE, "--forecast: %s is not a forecast file: it has no "
                        "forecast_reference_time (the initial time `wxcast forecast` writes) and no "
                        "lead-time axis (WeatherBench2's prediction_timedelta); an analysis or "
                        "`wxcast dump` file would be scored against itself", path);
}
