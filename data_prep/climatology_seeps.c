/* SEEPS climatology: dry fraction and wet threshold per day of year × hour (climatology_seeps.h
 * has the definition). Per point and hour the values of the 2H-1 days with nonzero weight are kept
 * sorted while the window slides over the year (drop the day leaving, merge the day entering), so
 * each day's weighted quantile is one scan of the window rather than a sort. */
#include "climatology_seeps.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/wx_log.h"
#include "core/wx_progress.h"

#define ND WX_CLIM_NDOY
#define Q_WET (2.0 / 3.0) /* SEEPSThreshold: heavy_threshold = quantile(2/3) of the wet values */

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int wx_clim_seeps_channel(const wx_archive_meta *m, int window, int64_t *period_s, double *dry) {
    const wx_catalogue_entry *e = wx_catalogue_find_kind("tp", WX_LEVEL_SINGLE);
    for (int c = 0; c < m->nchan; c++) {
        const wx_archive_channel *ch = &m->chan[c];
        if (ch->kind != WX_LEVEL_SINGLE || !(!strcmp(ch->param, "tp") || (e && wx_catalogue_matches(e, ch->param))))
            continue;
        *period_s = ch->accum_s > 0 ? ch->accum_s : m->step;
        char dur[32];
        wx_time_format_duration(*period_s, dur);
        if (!wx_seeps_dry_threshold(*period_s, ch->units, dry)) {
            wx_log_info("climatology: no SEEPS fields for %s (accumulated over %s, units %s): "
                        "WeatherBench2 defines SEEPS dry thresholds for 6 h and 24 h totals in m "
                        "or mm only", ch->name, dur, ch->units);
            return -1;
        }
        if (window > ND - 1) {
            wx_log_info("climatology: no SEEPS fields for %s: a window of %d days is longer than "
                        "a year", ch->name, window);
            return -1;
        }
        return c;
    }
    return -1;
}

typedef struct {
    float x;
    int16_t doy; /* 0-based day of year */
} entry;

static int entry_cmp(const void *a, const void *b) {
    float x = ((const entry *)a)->x, y = ((const entry *)b)->x;
    return x < y ? -1 : x > y;
}

/* Circular |d1 - d2| over 366 days (d1, d2 in 0..365; no division: this is the inner loop). */
static int cdist(int d1, int d2) {
    int k = d1 - d2;
    if (k < 0) k = -k;
    return k > ND / 2 ? ND - k : k;
}

typedef struct {
    int H, nk;          /* half window; kept records */
    int16_t *rdoy;      /* [nk] 0-based day of year of each kept record, records by hour */
    uint8_t *rdup;      /* [nk] 1: a non-leap year's day 365, also counted as day 366 */
    int hstart[25];     /* records of stored hour h: [hstart[h], hstart[h+1]) */
    entry *wet, *win;   /* [2 nk] the wet values by day; the sorted window */
    int bstart[ND + 1]; /* wet values of day d: wet[bstart[d], bstart[d+1]) */
    int present[ND], ndry[ND];
} sctx;

/* Dry fractions and wet thresholds of one point and hour for every day. vals: the point's values
 * in the kept records of that hour (contiguous); out_dry, out_wet: [366] at out stride ostride. */
static void point_hour(sctx *s, const float *vals, int hour, float dry, float *out_dry,
                       float *out_wet, size_t ostride) {
    int H = s->H, nw = 0;
    int cnt[ND] = {0};
    memset(s->present, 0, sizeof s->present), memset(s->ndry, 0, sizeof s->ndry);
    const int16_t *rdoy = s->rdoy + s->hstart[hour];
    const uint8_t *rdup = s->rdup + s->hstart[hour];
    int nr = s->hstart[hour + 1] - s->hstart[hour];
    for (int i = 0; i < nr; i++) { /* count, then place by day (counting sort) */
        float x = vals[i];
        if (isnan(x)) continue;
        for (int u = 0; u <= rdup[i]; u++) {
            int d = rdoy[i] + u;
            s->present[d]++;
            if (x < dry) s->ndry[d]++;
            else cnt[d]++;
        }
    }
    s->bstart[0] = 0;
    for (int d = 0; d < ND; d++) s->bstart[d + 1] = s->bstart[d] + cnt[d];
    memset(cnt, 0, sizeof cnt);
    for (int i = 0; i < nr; i++) {
        float x = vals[i];
        if (isnan(x) || x < dry) continue;
        for (int u = 0; u <= rdup[i]; u++) {
            int d = rdoy[i] + u;
            s->wet[s->bstart[d] + cnt[d]++] = (entry){x, (int16_t)d};
        }
    }
    for (int d = 0; d < ND; d++)
        qsort(s->wet + s->bstart[d], (size_t)(s->bstart[d + 1] - s->bstart[d]), sizeof(entry), entry_cmp);
    /* The window of day 0: days -(H-1)..H-1 (weights H-|k| > 0). */
    for (int k = -(H - 1); k <= H - 1; k++) {
        int d = (k + ND) % ND;
        for (int j = s->bstart[d]; j < s->bstart[d + 1]; j++) s->win[nw++] = s->wet[j];
    }
    qsort(s->win, (size_t)nw, sizeof(entry), entry_cmp);
    for (int d = 0; d < ND; d++) {
        double np = 0, nd = 0, W = 0, W2 = 0;
        for (int k = -H; k <= H; k++) {
            int e = (d + k + ND) % ND;
            np += s->present[e], nd += s->ndry[e];
            double w = H - abs(k), c = s->bstart[e + 1] - s->bstart[e];
            W += c * w, W2 += c * w * w;
        }
        out_dry[(size_t)d * ostride] = np > 0 ? (float)(nd / np) : NAN;
        double thr = NAN;
        if (W > 0) { /* xarray's weighted quantile (climatology_seeps.h) */
            double n_eff = W * W / W2, hq = (n_eff - 1) * Q_WET + 1;
            if (hq < 1) hq = 1;
            if (hq > n_eff) hq = n_eff;
            /* the interval in unnormalised cumulative weight: no division in the loop */
            double lo = (hq - 1) / n_eff * W, hi = hq / n_eff * W, cum = 0, acc = 0;
            for (int j = 0; j < nw; j++) {
                double c0 = cum;
                cum += H - cdist(s->win[j].doy, d);
                if (cum <= lo) continue;
                acc += s->win[j].x * (fmin(cum, hi) - fmax(c0, lo));
                if (cum >= hi) break;
            }
            thr = acc * (n_eff / W);
        }
        out_wet[(size_t)d * ostride] = (float)thr;
        if (d == ND - 1) break;
        /* Slide: day d-(H-1) leaves (compacted out in place), day d+1+(H-1) enters: its few
         * sorted values merged in from the end, so the branches mostly go one way. */
        int leave = (d - (H - 1) + ND) % ND, enter = (d + H) % ND, n = 0;
        for (int a = 0; a < nw; a++)
            if (s->win[a].doy != leave) s->win[n++] = s->win[a];
        const entry *in = s->wet + s->bstart[enter];
        int j = s->bstart[enter + 1] - s->bstart[enter] - 1, i = n - 1, o = n + j;
        nw = o + 1;
        while (j >= 0) s->win[o--] = i >= 0 && s->win[i].x > in[j].x ? s->win[i--] : in[j--];
    }
}

wx_status wx_clim_seeps_build(FILE *fp, const char *path, const wx_archive_meta *m,
                              const wx_clim_header *h, int64_t t0, int64_t t1, const int hidx[24],
                              int64_t budget_bytes, wx_clim_fetch fetch, void *ctx, uint32_t *crcs) {
    size_t P = (size_t)wx_archive_points(m), nh = h->nhours, nslab = ND * nh;
    sctx s = {.H = (int)(h->window - 1) / 2};
    size_t nt = (size_t)(t1 - t0 + 1);
    s.rdoy = wx_malloc(sizeof(int16_t) * nt), s.rdup = wx_malloc(nt);
    int64_t *rt = wx_malloc(sizeof(int64_t) * nt);
    /* The kept records grouped by stored hour (counting sort), in time order within an hour. */
    int cur[24] = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t t = t0; t <= t1; t++) {
            wx_time vt = m->start + t * m->step;
            int64_t y;
            int mo, dd, hh, mi, ss;
            wx_time_split(vt, &y, &mo, &dd, &hh, &mi, &ss);
            if (hidx[hh] < 0) continue;
            if (pass == 0) {
                s.hstart[hidx[hh] + 1]++;
                continue;
            }
            int doy = wx_time_day_of_year(vt), k = cur[hidx[hh]]++;
            s.rdoy[k] = (int16_t)(doy - 1), s.rdup[k] = doy == 365 && !is_leap(y), rt[k] = t;
        }
        for (size_t k = 0; pass == 0 && k < nh; k++) s.hstart[k + 1] += s.hstart[k], cur[k] = s.hstart[k];
    }
    s.nk = s.hstart[nh];
    /* Per point of a block: its value in every kept record, and its output slabs. */
    double per = 4.0 * s.nk + 8.0 * (double)nslab + 4.0;
    size_t B = (size_t)fmax(1.0, (double)budget_bytes / per);
    if (B > P) B = P;
    float *vals = malloc(sizeof(float) * (size_t)s.nk * B), *out = malloc(sizeof(float) * 2 * nslab * B);
    float *rec = malloc(sizeof(float) * B);
    /* Points are independent: one scratch per thread (OMP_NUM_THREADS), the same result for any
     * number of threads. */
    int nth = omp_get_max_threads();
    sctx *ts = wx_malloc(sizeof(sctx) * (size_t)nth);
    for (int k = 0; k < nth; k++) {
        ts[k] = s;
        ts[k].wet = wx_malloc(sizeof(entry) * (size_t)(2 * s.nk + 1));
        ts[k].win = wx_malloc(sizeof(entry) * (size_t)(2 * s.nk + 1));
    }
    uint32_t *cd = wx_calloc(nslab, 4), *cw = wx_calloc(nslab, 4);
    /* x < dry in float32, as WB2 compares its float32 fields (is_dry = ds < dry_threshold_m) */
    float dry32 = (float)h->seeps_dry;
    wx_status st = WX_OK;
    if (!vals || !out || !rec) st = wx_error_set(WX_ERR_RUN, "%s: out of memory for a %zu-point SEEPS block", path, B);
    wx_progress p;
    wx_progress_start(&p, "climatology SEEPS", (int64_t)((P + B - 1) / B), "passes");
    for (size_t p0 = 0; st == WX_OK && p0 < P; p0 += B) {
        size_t b = P - p0 < B ? P - p0 : B;
        /* vals: [b][nk], each point's series contiguous (by hour, then time): the per-point
         * loops below read memory in order (a record-major block made them cache-miss bound) */
        for (int i = 0; i < s.nk && st == WX_OK; i++) {
            st = fetch(ctx, rt[i], (size_t)h->seeps_chan * P + p0, b, rec);
            for (size_t e = 0; st == WX_OK && e < b; e++) vals[e * (size_t)s.nk + (size_t)i] = rec[e];
        }
        if (st != WX_OK) break;
#pragma omp parallel for schedule(dynamic, 16) num_threads(nth)
        for (size_t e = 0; e < b; e++)
            for (size_t hr = 0; hr < nh; hr++) /* out: [slab][2][b], slab = doy·nhours + hour */
                point_hour(&ts[omp_get_thread_num()], vals + e * (size_t)s.nk + (size_t)s.hstart[hr],
                           (int)hr, dry32, out + hr * 2 * b + e, out + hr * 2 * b + b + e, nh * 2 * b);
        for (size_t sl = 0; st == WX_OK && sl < nslab; sl++)
            for (int part = 0; part < 2 && st == WX_OK; part++) {
                const float *v = out + (sl * 2 + (size_t)part) * b;
                off_t off = (off_t)(h->seeps_offset + ((sl * 2 + (size_t)part) * P + p0) * 4);
                if (fseeko(fp, off, SEEK_SET) || fwrite(v, 4, b, fp) != b) {
                    st = wx_error_set(WX_ERR_RUN, "%s: write failed", path);
                    break;
                }
                uint32_t *c = part ? cw : cd;
                uLong seg = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)v, (uInt)(4 * b));
                c[sl] = (uint32_t)crc32_combine(c[sl], seg, (z_off_t)(4 * b));
            }
        if (st == WX_OK) wx_progress_update(&p, (int64_t)((p0 + b + B - 1) / B), NULL);
    }
    wx_progress_finish(&p);
    for (size_t sl = 0; sl < nslab; sl++) crcs[sl] = (uint32_t)crc32_combine(cd[sl], cw[sl], (z_off_t)(4 * P));
    free(s.rdoy), free(s.rdup), free(rt), free(vals), free(out), free(rec);
    for (int k = 0; k < nth; k++) free(ts[k].wet), free(ts[k].win);
    free(ts), free(cd), free(cw);
    return st;
}
