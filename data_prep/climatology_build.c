/* Day-of-year × hour-of-day climatology, WeatherBench2-style: for day d and hour h,
 *   clim(d, h) = Σ_k w_k S(d+k, h) / Σ_k w_k N(d+k, h),   k = -H..H, d+k circular over 366 days,
 * where S and N are the sum and count of the non-NaN values of the records at day-of-year d+k and
 * hour h over all years of the window, w_k = H - |k| (WeatherBench2's linearly decaying weights
 * for a window of 2H+1 days, whose end weights are 0), and a non-leap year's day 365 also counts as
 * its day 366 (WeatherBench2 fills day 366 from day 365). The triangle is two box sums of H days
 * (one forward, one backward), so smoothing costs O(366) per point whatever the window. */
#include "climatology_build.h"
#include "climatology_seeps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/wx_fs.h"
#include "core/wx_progress.h"
#include "io/climatology.h"

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* x[d*stride + e], d in 0..365, e in 0..b-1, replaced by Σ_k (H-|k|) x[d+k] (circular).
 * tmp: [366 * b] */
static void triangle(double *x, size_t stride, size_t b, int H, double *tmp) {
    const int D = WX_CLIM_NDOY;
    /* tmp[d] = Σ_{j=0}^{H-1} x[d+j] (forward box) */
    for (size_t e = 0; e < b; e++) tmp[e] = 0;
    for (int j = 0; j < H; j++)
        for (size_t e = 0; e < b; e++) tmp[e] += x[(size_t)(j % D) * stride + e];
    for (int d = 1; d < D; d++)
        for (size_t e = 0; e < b; e++)
            tmp[(size_t)d * b + e] = tmp[(size_t)(d - 1) * b + e] - x[(size_t)(d - 1) * stride + e] +
                                     x[(size_t)((d - 1 + H) % D) * stride + e];
    /* x[d] = Σ_{j=0}^{H-1} tmp[d-j] (backward box): weight of x[d+k] is the count of (i, j) with
     * i - j = k, i.e. H - |k|. */
    for (size_t e = 0; e < b; e++) x[e] = 0;
    for (int j = 0; j < H; j++)
        for (size_t e = 0; e < b; e++) x[e] += tmp[(size_t)((D - j) % D) * b + e];
    for (int d = 1; d < D; d++)
        for (size_t e = 0; e < b; e++)
            x[(size_t)d * stride + e] = x[(size_t)(d - 1) * stride + e] +
                                        tmp[(size_t)d * b + e] - tmp[(size_t)((d - H + D) % D) * b + e];
}

typedef struct {
    const wx_archive_meta *m;
    int64_t t0, t1; /* records in the window */
    int nh, hidx[24];
    size_t E;       /* elements per record */
    double *S, *N, *tmp;
    float *rec, *val; /* [B]: the block of one record; one output slab's block */
    uint32_t *crcs;
} build_ctx;

/* Accumulates elements [q0, q0+b) of every kept window record into S and N ([366][nh][b]). */
static wx_status accumulate(build_ctx *c, size_t q0, size_t b, wx_clim_fetch fetch, void *ctx) {
    size_t nh = (size_t)c->nh;
    memset(c->S, 0, sizeof(double) * WX_CLIM_NDOY * nh * b);
    memset(c->N, 0, sizeof(double) * WX_CLIM_NDOY * nh * b);
    for (int64_t t = c->t0; t <= c->t1; t++) {
        wx_time vt = c->m->start + t * c->m->step;
        int64_t y;
        int mo, dd, hh, mi, ss;
        wx_time_split(vt, &y, &mo, &dd, &hh, &mi, &ss);
        if (c->hidx[hh] < 0) continue; /* an hour the climatology does not keep */
        WX_TRY(fetch(ctx, t, q0, b, c->rec));
        int doy = wx_time_day_of_year(vt);
        size_t h = (size_t)c->hidx[hh];
        for (int dup = 0; dup < 1 + (doy == 365 && !is_leap(y)); dup++) {
            size_t base = ((size_t)(doy - 1 + dup) * nh + h) * b;
            for (size_t e = 0; e < b; e++) {
                float x = c->rec[e];
                if (isnan(x)) continue;
                c->S[base + e] += x;
                c->N[base + e] += 1;
            }
        }
    }
    return WX_OK;
}

static wx_status emit(build_ctx *c, wx_atomic_file *f, uint64_t data_offset, size_t q0, size_t b,
                      int H) {
    size_t nh = (size_t)c->nh;
    for (size_t h = 0; h < nh; h++) {
        triangle(c->S + h * b, nh * b, b, H, c->tmp);
        triangle(c->N + h * b, nh * b, b, H, c->tmp);
    }
    for (size_t s = 0; s < WX_CLIM_NDOY * nh; s++) {
        for (size_t e = 0; e < b; e++)
            c->val[e] = c->N[s * b + e] > 0 ? (float)(c->S[s * b + e] / c->N[s * b + e]) : NAN;
        off_t off = (off_t)(data_offset + (s * c->E + q0) * 4);
        if (fseeko(f->fp, off, SEEK_SET) || fwrite(c->val, 4, b, f->fp) != b)
            return wx_error_set(WX_ERR_RUN, "%s: write failed", f->path);
        uLong seg = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)c->val, (uInt)(4 * b));
        c->crcs[s] = (uint32_t)crc32_combine(c->crcs[s], seg, (z_off_t)(4 * b));
    }
    return WX_OK;
}

/* Records t0..t1 of `m` in [start, end] (t0 > t1: none). */
static void window_records(const wx_archive_meta *m, wx_time start, wx_time end, int64_t *t0,
                           int64_t *t1) {
    *t0 = start <= m->start ? 0 : (start - m->start + m->step - 1) / m->step;
    *t1 = end < m->start ? -1 : (end - m->start) / m->step;
    if (*t1 >= m->count) *t1 = m->count - 1;
}

int wx_climatology_hours(const wx_archive_meta *m, wx_time start, wx_time end, int hour_step,
                         uint8_t hours[24]) {
    int64_t t0, t1;
    window_records(m, start, end, &t0, &t1);
    if (t0 > t1) return 0;
    int present[24] = {0}, h0 = wx_time_hour_of_day(m->start + t0 * m->step), n = 0;
    for (int64_t t = t0; t <= t1; t++) present[wx_time_hour_of_day(m->start + t * m->step)] = 1;
    for (int h = 0; h < 24; h++)
        if (present[h] && (hour_step <= 0 || ((h - h0 + 24) % 24) % hour_step == 0)) hours[n++] = (uint8_t)h;
    return n;
}

wx_status wx_climatology_build(const char *path, const wx_archive_meta *m, wx_time start,
                               wx_time end, const wx_clim_opts *opts, wx_clim_fetch fetch,
                               void *ctx) {
    return wx_climatology_build_version(path, m, start, end, opts, 0, fetch, ctx);
}

wx_status wx_climatology_build_version(const char *path, const wx_archive_meta *m, wx_time start,
                                       wx_time end, const wx_clim_opts *opts, int version,
                                       wx_clim_fetch fetch, void *ctx) {
    wx_clim_opts o = opts ? *opts : (wx_clim_opts){61, (int64_t)1 << 30, 0};
    if (o.window < 3 || o.window % 2 == 0)
        return wx_error_set(WX_ERR_USAGE, "climatology window %d: expected an odd number of days "
                            ">= 3", o.window);
    int H = (o.window - 1) / 2;
    build_ctx c = {.m = m};
    window_records(m, start, end, &c.t0, &c.t1);
    if (c.t0 > c.t1) {
        char a[32], b[32];
        wx_time_format(start, a);
        wx_time_format(end, b);
        return wx_error_set(WX_ERR_RUN, "%s: no record in the statistics window %s .. %s", path, a, b);
    }
    if (version != 0 && version != 1 && version != WX_CLIM_VERSION)
        return wx_error_set(WX_ERR_USAGE, "climatology version %d: expected 1 or %d", version,
                            WX_CLIM_VERSION);
    wx_clim_header h = {.version = version == 1 ? 1 : WX_CLIM_VERSION, .nchan = (uint32_t)m->nchan,
                        .nlat = (uint32_t)m->grid.nlat, .nlon = (uint32_t)m->grid.nlon,
                        .ndoy = WX_CLIM_NDOY, .window = (uint32_t)o.window, .stats_start = start,
                        .stats_end = end, .seeps_chan = -1};
    if (h.version >= 2)
        h.seeps_chan = wx_clim_seeps_channel(m, o.window, &h.seeps_period_s, &h.seeps_dry);
    c.nh = wx_climatology_hours(m, start, end, o.hour_step, h.hours);
    for (int k = 0; k < 24; k++) c.hidx[k] = -1;
    for (int k = 0; k < c.nh; k++) c.hidx[h.hours[k]] = k;
    h.nhours = (uint32_t)c.nh;
    int nslabs = WX_CLIM_NDOY * c.nh, ntab = nslabs * (h.seeps_chan >= 0 ? 2 : 1);
    uint64_t tables = (uint64_t)wx_clim_header_bytes(&h) + 4 * (uint64_t)ntab;
    h.data_offset = (tables + WX_ARCHIVE_ALIGN - 1) / WX_ARCHIVE_ALIGN * WX_ARCHIVE_ALIGN;
    c.E = (size_t)m->nchan * (size_t)wx_archive_points(m);
    if (h.seeps_chan >= 0) {
        uint64_t end_mean = h.data_offset + (uint64_t)nslabs * c.E * 4;
        h.seeps_offset = (end_mean + WX_ARCHIVE_ALIGN - 1) / WX_ARCHIVE_ALIGN * WX_ARCHIVE_ALIGN;
    }
    /* Bytes per element of a block: S and N for every slab, plus the smoothing scratch. */
    double per = (double)WX_CLIM_NDOY * (c.nh * 16.0 + 8.0) + 4.0;
    size_t B = (size_t)fmax(1.0, (double)o.budget_bytes / per);
    if (B > c.E) B = c.E;
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    c.S = malloc(sizeof(double) * WX_CLIM_NDOY * (size_t)c.nh * B);
    c.N = malloc(sizeof(double) * WX_CLIM_NDOY * (size_t)c.nh * B);
    c.tmp = malloc(sizeof(double) * WX_CLIM_NDOY * B);
    c.val = malloc(sizeof(float) * B);
    c.rec = malloc(sizeof(float) * B);
    c.crcs = wx_calloc((size_t)ntab, 4);
    wx_status st = WX_OK;
    if (!c.S || !c.N || !c.tmp || !c.val || !c.rec)
        st = wx_error_set(WX_ERR_RUN, "%s: out of memory for a %zu-element block", path, B);
    wx_progress p;
    wx_progress_start(&p, "climatology", (int64_t)((c.E + B - 1) / B), "passes");
    for (size_t q0 = 0; st == WX_OK && q0 < c.E; q0 += B) {
        size_t b = c.E - q0 < B ? c.E - q0 : B;
        st = accumulate(&c, q0, b, fetch, ctx);
        if (st == WX_OK) st = emit(&c, &f, h.data_offset, q0, b, H);
        if (st == WX_OK) wx_progress_update(&p, (int64_t)((q0 + b + B - 1) / B), NULL);
    }
    wx_progress_finish(&p);
    free(c.S), free(c.N), free(c.tmp); /* the SEEPS passes get the whole budget */
    c.S = c.N = c.tmp = NULL;
    if (st == WX_OK && h.seeps_chan >= 0)
        st = wx_clim_seeps_build(f.fp, f.path, m, &h, c.t0, c.t1, c.hidx, o.budget_bytes, fetch,
                                 ctx, c.crcs + nslabs);
    if (st == WX_OK) {
        unsigned char hdr[WX_CLIM_HEADER_BYTES];
        size_t hb = (size_t)wx_clim_header_bytes(&h);
        wx_clim_header_pack(&h, hdr);
        h.header_crc = wx_clim_header_crc(hdr, c.crcs, ntab);
        wx_clim_header_pack(&h, hdr);
        unsigned char *pad = wx_calloc((size_t)(h.data_offset - tables) + 1, 1);
        if (fseeko(f.fp, 0, SEEK_SET) || fwrite(hdr, 1, hb, f.fp) != hb ||
            fwrite(c.crcs, 4, (size_t)ntab, f.fp) != (size_t)ntab ||
            fwrite(pad, 1, (size_t)(h.data_offset - tables), f.fp) != h.data_offset - tables)
            st = wx_error_set(WX_ERR_RUN, "%s: writing the header failed", path);
        free(pad);
    }
    if (st == WX_OK) st = wx_atomic_commit(&f);
    else wx_atomic_abort(&f);
    free(c.S);
    free(c.N);
    free(c.tmp);
    free(c.val);
    free(c.rec);
    free(c.crcs);
    return st;
}
