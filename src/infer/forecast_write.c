#include "infer/forecast_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meteo/wx_catalogue.h"

struct wx_forecast_attrs {
    char name[64], units[32], standard_name[96], long_name[192];
};

static void attrs_of(const wx_archive_channel *ch, struct wx_forecast_attrs *a) {
    const wx_catalogue_entry *e = wx_catalogue_find_kind(ch->param, ch->kind);
    snprintf(a->name, sizeof a->name, "%s", ch->name);
    snprintf(a->units, sizeof a->units, "%s", e && e->cf_units[0] ? e->cf_units : ch->units);
    snprintf(a->standard_name, sizeof a->standard_name, "%s", e ? e->standard_name : "");
    const char *ln = e ? e->long_name : ch->name;
    if (ch->kind == WX_LEVEL_PRESSURE)
        snprintf(a->long_name, sizeof a->long_name, "%s at %g hPa", ln, ch->level);
    else
        snprintf(a->long_name, sizeof a->long_name, "%s", ln);
}

wx_status wx_forecast_writer_open(wx_forecast_writer *f, const char *path, const wx_grid *g,
                                  int nvars, const wx_archive_channel *chans, wx_time ref_time,
                                  const char *source) {
    memset(f, 0, sizeof *f);
    f->nvars = nvars;
    f->points = (int64_t)g->nlat * g->nlon;
    f->ref_time = ref_time;
    f->attrs = wx_calloc((size_t)nvars, sizeof *f->attrs);
    f->vars = wx_calloc((size_t)nvars, sizeof *f->vars);
    for (int v = 0; v < nvars; v++) {
        attrs_of(&chans[v], &f->attrs[v]);
        const struct wx_forecast_attrs *a = &f->attrs[v];
        f->vars[v] = (wx_nc_var){a->name, a->units, a->standard_name, a->long_name, 0};
    }
    char title[160], init[32];
    wx_time_format(ref_time, init);
    snprintf(title, sizeof title, "wxcast forecast from %s UTC", init);
    wx_nc_layout L = {*g, 0, NULL, nvars, f->vars, 1, ref_time, title,
                      source ? source : "wxcast forecast", 1};
    wx_status st = wx_nc_writer_open_time(&f->w, path, &L, "time");
    if (st != WX_OK) {
        free(f->attrs), free(f->vars);
        f->attrs = NULL, f->vars = NULL;
    }
    return st;
}

wx_status wx_forecast_writer_put(wx_forecast_writer *f, wx_time valid, const float *fields) {
    for (int v = 0; v < f->nvars; v++)
        WX_TRY(wx_nc_writer_put(&f->w, f->ntimes, valid, v, 0, fields + (size_t)v * (size_t)f->points));
    f->ntimes++;
    return WX_OK;
}

static void release(wx_forecast_writer *f) {
    free(f->attrs), free(f->vars);
    f->attrs = NULL, f->vars = NULL;
}

wx_status wx_forecast_writer_close(wx_forecast_writer *f) {
    wx_status st = wx_nc_writer_close(&f->w);
    release(f);
    return st;
}

void wx_forecast_writer_abort(wx_forecast_writer *f) {
    wx_nc_writer_abort(&f->w);
    release(f);
}
