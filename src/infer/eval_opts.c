/* eval's option checks (every one before any file is read, so a usage error leaves nothing
 * behind and costs nothing) and the FourCastNet convention's time-mean climatology. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "infer/eval.h"
#include "infer/eval_regions.h"
#include "io/climatology.h"

wx_status wx_eval_convention_parse(const char *s, int *out) {
    if (!s || !strcmp(s, "wb2")) *out = WX_EVAL_WB2;
    else if (!strcmp(s, "fourcastnet")) *out = WX_EVAL_FOURCASTNET;
    else
        return wx_error_set(WX_ERR_USAGE, "--convention %s: expected wb2 (WeatherBench2: cell-area "
                                          "weights) or fourcastnet (NVlabs: cos-latitude weights, "
                                          "ACC against the time-mean climatology)", s);
    return WX_OK;
}

static int is_baseline_name(const char *s) {
    return !strcmp(s, WX_EVAL_PERSISTENCE) || !strcmp(s, WX_EVAL_CLIMATOLOGY);
}

wx_status wx_eval_check_opts(const wx_eval_opts *o) {
    if (o->nfiles <= 0 || !o->files || !o->models)
        return wx_error_set(WX_ERR_USAGE, "--forecast: no files given");
    if (!o->truth || !o->truth[0]) return wx_error_set(WX_ERR_USAGE, "--truth: no archive given");
    if (o->convention != WX_EVAL_WB2 && o->convention != WX_EVAL_FOURCASTNET)
        return wx_error_set(WX_ERR_USAGE, "convention %d: expected wb2 or fourcastnet", o->convention);
    wx_eval_regions rg;
    WX_TRY(wx_eval_regions_parse(o->regions, &rg));
    for (int f = 0; f < o->nfiles; f++) {
        const char *name = o->models[f];
        if (!o->files[f] || !o->files[f][0] || !name || !name[0])
            return wx_error_set(WX_ERR_USAGE, "--forecast: entry %d has no file or no model name", f + 1);
        if (is_baseline_name(name) || strchr(name, '@') || strchr(name, '/') || strlen(name) >= 48)
            return wx_error_set(WX_ERR_USAGE, "--forecast: model name '%s': expected a name other "
                                "than persistence/climatology, without '@' or '/', under 48 "
                                "characters", name);
        /* The same file twice (also under another path) would count its initial time twice. */
        struct stat a, b;
        int sa = stat(o->files[f], &a) == 0;
        for (int g = 0; g < f; g++) {
            int same = !strcmp(o->files[f], o->files[g]);
            if (!same && sa && stat(o->files[g], &b) == 0) same = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
            if (same && !strcmp(o->files[f], o->files[g]))
                return wx_error_set(WX_ERR_USAGE, "--forecast: %s is listed twice; each initial "
                                    "time must be scored once", o->files[f]);
            if (same)
                return wx_error_set(WX_ERR_USAGE, "--forecast: %s is listed twice (also as %s); "
                                    "each initial time must be scored once", o->files[f],
                                    o->files[g]);
        }
    }
    int no_clim = o->no_climatology || (o->climatology && !o->climatology[0]);
    if (o->no_climatology && o->climatology && o->climatology[0])
        return wx_error_set(WX_ERR_USAGE, "--climatology %s and --no-climatology contradict each "
                                          "other", o->climatology);
    if (o->baseline) {
        int known = !strcmp(o->baseline, WX_EVAL_PERSISTENCE) || !strcmp(o->baseline, WX_EVAL_CLIMATOLOGY);
        for (int f = 0; f < o->nfiles && !known; f++) known = !strcmp(o->baseline, o->models[f]);
        if (!known) {
            char names[512] = "";
            for (int f = 0; f < o->nfiles; f++) {
                int seen = 0;
                for (int g = 0; g < f; g++) seen |= !strcmp(o->models[f], o->models[g]);
                if (!seen)
                    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                             names[0] ? ", " : "", o->models[f]);
            }
            return wx_error_set(WX_ERR_USAGE, "--baseline %s: not among the scored models (%s%s)",
                                o->baseline, names, o->baselines ? ", persistence, climatology" : "");
        }
        if (is_baseline_name(o->baseline) && !o->baselines)
            return wx_error_set(WX_ERR_USAGE, "--baseline %s with --no-baselines: the baselines are "
                                              "not scored", o->baseline);
        if (!strcmp(o->baseline, WX_EVAL_CLIMATOLOGY) && no_clim)
            return wx_error_set(WX_ERR_USAGE, "--baseline climatology without a climatology "
                                              "(--no-climatology)");
    }
    return WX_OK;
}

/* The mean of every stored (day of year, hour) field, day 366 weighted 1/4 (one year in four has
 * it); per point over the fields where it is finite. out: [nchan, nlat, nlon] */
wx_status wx_eval_clim_time_mean(wx_climatology *clim, float *out) {
    const wx_clim_header *h = wx_climatology_header(clim);
    size_t n = (size_t)h->nchan * h->nlat * h->nlon;
    double *sum = wx_calloc(n, sizeof(double)), *wsum = wx_calloc(n, sizeof(double));
    float *buf = wx_malloc(sizeof(float) * n);
    wx_status st = WX_OK;
    for (int d = 1; d <= WX_CLIM_NDOY && st == WX_OK; d++)
        for (uint32_t k = 0; k < h->nhours && st == WX_OK; k++) {
            if ((st = wx_climatology_get(clim, d, h->hours[k], buf))) break;
            double wt = d == WX_CLIM_NDOY ? 0.25 : 1.0;
            for (size_t p = 0; p < n; p++)
                if (isfinite(buf[p])) sum[p] += wt * buf[p], wsum[p] += wt;
        }
    for (size_t p = 0; st == WX_OK && p < n; p++) out[p] = wsum[p] > 0 ? (float)(sum[p] / wsum[p]) : NAN;
    free(sum), free(wsum), free(buf);
    return st;
}
