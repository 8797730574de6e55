/* SEEPS in `wxcast eval` (eval_seeps.h). */
#include "infer/eval_seeps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_log.h"

/* The truth's precipitation channel (tp, single level), or -1. */
static int tp_channel(const wx_archive_meta *m) {
    const wx_catalogue_entry *e = wx_catalogue_find_kind("tp", WX_LEVEL_SINGLE);
    for (int c = 0; c < m->nchan; c++)
        if (m->chan[c].kind == WX_LEVEL_SINGLE &&
            (!strcmp(m->chan[c].param, "tp") || (e && wx_catalogue_matches(e, m->chan[c].param))))
            return c;
    return -1;
}

wx_status wx_eval_seeps_open(wx_eval_seeps *s, wx_climatology *clim, const wx_archive_meta *m,
                             const wx_eval_grid *eg, const char *cdir) {
    memset(s, 0, sizeof *s);
    s->chan = -1;
    if (!clim) return WX_OK;
    const wx_clim_header *h = wx_climatology_header(clim);
    int tp = tp_channel(m);
    if (!wx_climatology_has_seeps(clim)) {
        if (tp < 0) return WX_OK;
        if (h->version < 2)
            wx_log_warn("eval: %s: the climatology is version %u, without SEEPS fields: %s is "
                        "scored without SEEPS (rebuild the climatology with this wxcast: ingest "
                        "again)", cdir, h->version, m->chan[tp].name);
        else
            wx_log_warn("eval: %s: the climatology has no SEEPS fields (%s is not a 6 h or 24 h "
                        "total in m or mm, the periods WeatherBench2 defines SEEPS for): %s is "
                        "scored without SEEPS", cdir, m->chan[tp].name, m->chan[tp].name);
        return WX_OK;
    }
    s->chan = h->seeps_chan, s->dry = h->seeps_dry, s->period_s = h->seeps_period_s;
    size_t Pa = (size_t)eg->Pa, P = (size_t)eg->P;
    s->p1 = wx_malloc(sizeof(float) * P), s->wet = wx_malloc(sizeof(float) * P);
    s->dry_frac = wx_malloc(sizeof(float) * Pa);
    s->sa = wx_malloc(sizeof(float) * Pa);
    WX_TRY(wx_climatology_seeps_p1(clim, s->sa));
    wx_eval_grid_map(eg, s->sa, 1, s->p1);
    return WX_OK;
}

int wx_eval_seeps_field_ok(const wx_eval_seeps *s, int chan, const char *name, const char *path) {
    if (s->chan < 0 || chan != s->chan) return 0;
    char base[64];
    long period = wx_catalogue_strip_period(name, base, sizeof base);
    if (period == 0 || period == s->period_s) return 1;
    char a[32], b[32];
    wx_time_format_duration(period, a);
    wx_time_format_duration(s->period_s, b);
    wx_log_warn("eval: %s: %s is accumulated over %s, the climatology's SEEPS fields over %s: "
                "no SEEPS for this file", path, name, a, b);
    return 0;
}

wx_status wx_eval_seeps_at(wx_eval_seeps *s, wx_climatology *clim, const wx_eval_grid *eg,
                           wx_time v, wx_seeps_clim *out) {
    if (!s->loaded || s->at != v) {
        s->loaded = 0;
        WX_TRY(wx_climatology_seeps_get(clim, wx_time_day_of_year(v), wx_time_hour_of_day(v),
                                        s->dry_frac, s->sa));
        wx_eval_grid_map(eg, s->sa, 1, s->wet);
        s->at = v, s->loaded = 1;
    }
    *out = (wx_seeps_clim){s->wet, s->p1, s->dry};
    return WX_OK;
}

void wx_eval_seeps_close(wx_eval_seeps *s) {
    free(s->p1), free(s->wet), free(s->dry_frac), free(s->sa);
    memset(s, 0, sizeof *s);
    s->chan = -1;
}
