#include "infer/forecast_init.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wx_source.h"
#include "train/train_model.h"

wx_status wx_forecast_channel_from_name(const char *name, int64_t step_s, wx_archive_channel *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    const wx_catalogue_entry *e = wx_catalogue_find_kind(name, WX_LEVEL_SINGLE);
    if (!e) e = wx_catalogue_find_kind(name, WX_LEVEL_STATIC);
    if (e) {
        out->kind = e->level_kind;
    } else {
        e = wx_catalogue_split_level(name, &out->level);
        if (!e)
            return wx_error_set(WX_ERR_USAGE, "model channel '%s': not a catalogue field name nor "
                                "a pressure-level parameter with its level (\"z500\")", name);
        out->kind = WX_LEVEL_PRESSURE;
    }
    snprintf(out->param, sizeof out->param, "%s", e->short_name);
    snprintf(out->units, sizeof out->units, "%s", e->cf_units[0] ? e->cf_units : e->units);
    out->accum_s = e->accumulated ? step_s : 0;
    return WX_OK;
}

/* The files of --init FILE[,FILE...] (CDS delivers single-level and pressure-level fields in
 * separate files, `forecast --grib` writes two) seen as one list of fields: field g is field
 * g - base[k] of file k. */
typedef struct {
    int n;
    wx_source **src;
    int *base; /* [n + 1] */
} src_set;

static void set_close(src_set *ss) {
    for (int k = 0; k < ss->n; k++) wx_source_close(ss->src[k]);
    free(ss->src), free(ss->base);
    memset(ss, 0, sizeof *ss);
}

static wx_status set_open(const char *list, src_set *ss) {
    memset(ss, 0, sizeof *ss);
    char *buf = wx_strdup(list);
    wx_status st = WX_OK;
    int cap = 1;
    for (const char *c = list; *c; c++) cap += *c == ',';
    ss->src = wx_calloc((size_t)cap, sizeof *ss->src);
    ss->base = wx_calloc((size_t)cap + 1, sizeof *ss->base);
    /* every item a file, each once: "a.nc," or "a.nc,a.nc" is a typo, not a request */
    char **names = wx_calloc((size_t)cap, sizeof *names);
    char *t = buf;
    for (int k = 0; k < cap && st == WX_OK; k++) {
        char *comma = strchr(t, ',');
        if (comma) *comma = 0;
        names[k] = t;
        if (!*t)
            st = wx_error_set(WX_ERR_USAGE, "--init '%s': item %d of the comma-separated list is empty",
                              list, k + 1);
        for (int j = 0; j < k && st == WX_OK; j++)
            if (!strcmp(names[j], t))
                st = wx_error_set(WX_ERR_USAGE, "--init '%s': %s is listed twice", list, t);
        if (st == WX_OK) st = wx_source_open(t, &ss->src[ss->n]);
        if (st == WX_OK) wx_source_check_inputs(ss->src[ss->n]);
        if (st == WX_OK) ss->base[ss->n + 1] = ss->base[ss->n] + wx_source_count(ss->src[ss->n]), ss->n++;
        if (comma) t = comma + 1;
    }
    free(names);
    free(buf);
    if (st == WX_OK && ss->n == 0) st = wx_error_set(WX_ERR_USAGE, "--init '%s': no file", list);
    if (st != WX_OK) set_close(ss);
    return st;
}

static int set_file(const src_set *ss, int g) {
    int k = 0;
    while (g >= ss->base[k + 1]) k++;
    return k;
}

static const wx_field_info *info_at(const src_set *ss, int g) {
    int k = set_file(ss, g);
    return wx_source_info(ss->src[k], g - ss->base[k]);
}

/* Field f is a state of channel ch. Of a forecast file with a lead axis (WeatherBench2's layout)
 * only lead 0, each forecast's initial state, is: a later lead is a forecast, not an analysis. */
static int matches(const wx_field_info *f, const wx_archive_channel *ch) {
    if (f->has_init && f->valid != f->init) return 0;
    /* an accumulation over another period is another quantity (CDS hourly tp is not the 6 h tp
     * the model was trained on); ch->accum_s 0: a checkpoint from before the period was stored */
    if (ch->accum_s > 0 && f->accum_s > 0 && f->accum_s != ch->accum_s) return 0;
    if (f->kind != ch->kind || fabs(f->level - ch->level) > 1e-6) return 0;
    return !strcmp(f->param, ch->param) || (f->entry && wx_catalogue_matches(f->entry, ch->param));
}

wx_status wx_forecast_init_from_file(const char *path, const wx_rollout *r, int has_time,
                                     wx_time *time, wx_archive_meta *meta, float **rec) {
    memset(meta, 0, sizeof *meta);
    *rec = NULL;
    int n = r->nout;
    meta->chan = wx_calloc((size_t)(r->nout + r->nin), sizeof *meta->chan);
    int *need = wx_calloc((size_t)(r->nout + r->nin), sizeof(int));
    wx_status st = WX_OK;
    for (int o = 0; st == WX_OK && o < r->nout; o++) {
        st = wx_forecast_channel_from_name(r->out[o].name, r->step_s, &meta->chan[o]);
        if (meta->chan[o].accum_s) meta->chan[o].accum_s = r->out[o].accum_s; /* as trained */
    }
    for (int i = 0; st == WX_OK && i < r->nin; i++) {
        int o = 0;
        while (o < r->nout && strcmp(r->out[o].name, r->in[i].name)) o++;
        if (o < r->nout) {
            /* a state channel the model never reads (GraphCast's target-only tp) may be absent:
             * NaN at lead 0, the model's own prediction from the first step on */
            need[o] = !wx_rollout_input_unread(r, i);
            continue;
        }
        need[n] = 1;
        st = wx_forecast_channel_from_name(r->in[i].name, r->step_s, &meta->chan[n]);
        if (meta->chan[n].accum_s) meta->chan[n].accum_s = r->in[i].accum_s;
        n++;
    }
    meta->nchan = n;
    src_set ss = {0};
    if (st == WX_OK) st = set_open(path, &ss);
    int nf = ss.n ? ss.base[ss.n] : 0;
    int *field = wx_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int leads = 0, lead0 = 0; /* fields of forecasts (a lead axis), and of their lead 0 */
    for (int i = 0; st == WX_OK && i < nf; i++) {
        const wx_field_info *f = info_at(&ss, i);
        leads += f->has_init, lead0 += f->has_init && f->valid == f->init;
    }
    if (st == WX_OK && leads && !lead0)
        st = wx_error_set(WX_ERR_RUN, "%s: forecasts on a lead-time axis without lead 0, so no "
                          "initial state: start from an analysis, or take a forecast's lead as "
                          "one (xarray: ds.isel(prediction_timedelta=K))", path);
    if (st == WX_OK && !has_time) { /* the earliest time of any channel's field */
        int any = 0;
        for (int i = 0; i < nf; i++) {
            const wx_field_info *f = info_at(&ss, i);
            for (int c = 0; c < n && f->has_time; c++)
                if (matches(f, &meta->chan[c]) && (!any || f->valid < *time)) *time = f->valid, any = 1;
        }
        if (!any) st = wx_error_set(WX_ERR_USAGE, "%s: no field of the model's channels with a "
                                    "valid time", path);
    }
    for (int c = 0; st == WX_OK && c < n; c++) {
        field[c] = -1;
        for (int i = 0; i < nf && field[c] < 0; i++) {
            const wx_field_info *f = info_at(&ss, i);
            /* an ensemble file starts from its first member */
            if (matches(f, &meta->chan[c]) && (!f->has_time || f->valid == *time) && f->member <= 0)
                field[c] = i;
        }
        /* A second such field (a file with an extra axis, e.g. WeatherBench2's
         * prediction_timedelta, whose slices the reader gives one valid time) would make the
         * start ambiguous: refuse rather than take the first. */
        for (int i = field[c] + 1; field[c] >= 0 && i < nf && st == WX_OK; i++) {
            const wx_field_info *f = info_at(&ss, i);
            if (matches(f, &meta->chan[c]) && (!f->has_time || f->valid == *time) && f->member <= 0) {
                char t[32];
                wx_time_format(*time, t);
                st = wx_error_set(WX_ERR_RUN, "%s: two fields of model channel %s at %s (an extra "
                                  "dimension besides time, level and member, such as a lead-time "
                                  "axis?): expected one analysis field per time", path,
                                  meta->chan[c].name, t);
            }
        }
        if (field[c] < 0 && need[c]) {
            char t[32];
            wx_time_format(*time, t);
            /* what the file does hold of that channel, so a wrong --time is plain */
            int nt = 0;
            wx_time t0 = 0, t1 = 0;
            for (int i = 0; i < nf; i++) { /* one field per time: members after the first skipped */
                const wx_field_info *f = info_at(&ss, i);
                if (!matches(f, &meta->chan[c]) || !f->has_time || f->member > 0) continue;
                if (!nt || f->valid < t0) t0 = f->valid;
                if (!nt || f->valid > t1) t1 = f->valid;
                nt++;
            }
            const char *who = ss.n > 1 ? "the files hold" : "the file holds";
            char a[32], b[32], held[400];
            wx_time_format(t0, a), wx_time_format(t1, b);
            if (nt == 1) snprintf(held, sizeof held, " (%s it at 1 time, %s)", who, a);
            else if (nt) snprintf(held, sizeof held, " (%s it at %d times, %s .. %s)", who, nt, a, b);
            else snprintf(held, sizeof held, " (%s it at no time)", who);
            for (int i = 0; !nt && i < nf; i++) { /* there, but summed over another period */
                const wx_field_info *f = info_at(&ss, i);
                wx_archive_channel any = meta->chan[c];
                any.accum_s = 0;
                if (!matches(f, &any) || f->accum_s <= 0) continue;
                char p1[32], p2[32];
                wx_time_format_duration(f->accum_s, p1), wx_time_format_duration(meta->chan[c].accum_s, p2);
                snprintf(held, sizeof held, " (%s it as %s sums; the model's %s is %s sums: sum "
                         "the file's to %s first, as ingest's accumulate: %s does)", who, p1,
                         meta->chan[c].name, p2, p2, p2);
                break;
            }
            st = wx_error_set(WX_ERR_USAGE, "%s: no field for model channel %s at %s%s", path,
                              meta->chan[c].name, t, held);
        }
    }
    for (int c = 0; st == WX_OK && c < n; c++) {
        if (field[c] < 0) continue;
        const wx_grid *g = &info_at(&ss, field[c])->grid;
        if (!meta->grid.nlat) {
            meta->grid = *g;
        } else if (!wx_grid_same(g, &meta->grid, 1e-6)) {
            st = wx_error_set(WX_ERR_USAGE, "%s: channel %s is on another grid than %s", path,
                              meta->chan[c].name, meta->chan[0].name);
        }
    }
    size_t P = (size_t)meta->grid.nlat * (size_t)meta->grid.nlon;
    if (st == WX_OK) *rec = wx_malloc(sizeof(float) * P * (size_t)n);
    for (int c = 0; st == WX_OK && c < n; c++) {
        float *dst = *rec + (size_t)c * P;
        if (field[c] < 0) {
            for (size_t p = 0; p < P; p++) dst[p] = NAN;
            continue;
        }
        int k = set_file(&ss, field[c]);
        st = wx_source_read(ss.src[k], field[c] - ss.base[k], WX_MISSING_ERROR, dst);
    }
    meta->start = *time;
    meta->step = r->step_s;
    meta->count = 1;
    free(field), free(need);
    set_close(&ss);
    if (st != WX_OK) {
        free(*rec);
        *rec = NULL;
        wx_archive_meta_free(meta);
    }
    return st;
}
