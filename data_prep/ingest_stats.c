/* ingest's statistics and climatology (ingest_priv.h): per-channel moments of the values and of
 * their differences over the statistics lag, merged in (record, channel) order so that they do not
 * depend on the thread count; the records of shards found complete read back for them on a resumed
 * ingest; the final mean/std/min/max/diff_std; the climatology built from the written shards. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "climatology_build.h"
#include "core/wx_log.h"
#include "ingest.h"
#include "ingest_priv.h"

/* Two passes over the points instead of four, the sums each kept in their own running order (so
 * the results are those of one sum per pass, bit for bit), and min/max as compares: `minsd`'s
 * choice, which is what glibc's fmin/fmax return for non-NaN operands, without a call per point
 * (the statistics took ~0.7 of 1.2 CPU-s of a 48-field ingest). */
void wx_ingest_stats_compute(const float *x, const float *y, size_t np, chan_stats *s) {
    double mean = 0, m2 = 0, mn = INFINITY, mx = -INFINITY, dm = 0, dm2 = 0;
    size_t n = 0, dn = 0;
    for (size_t p = 0; p < np; p++) {
        float v = x[p];
        if (isnan(v)) continue;
        mean += v, n++;
        mn = mn < v ? mn : v;
        mx = mx > v ? mx : v;
        if (y && !isnan(y[p])) dm += (double)v - y[p], dn++;
    }
    memset(s, 0, sizeof *s);
    if (!n) return;
    mean /= (double)n;
    if (dn) dm /= (double)dn;
    for (size_t p = 0; p < np; p++) {
        float v = x[p];
        if (isnan(v)) continue;
        m2 += (v - mean) * (v - mean);
        if (dn && !isnan(y[p])) {
            double q = (double)v - y[p] - dm;
            dm2 += q * q;
        }
    }
    s->n = (double)n, s->mean = mean, s->m2 = m2, s->mn = mn, s->mx = mx;
    if (!dn) return;
    s->dn = (double)dn, s->dm = dm, s->dm2 = dm2;
}

/* Chan et al. combination of one record's channel with the running totals. */
void wx_ingest_stats_merge(ingest_ctx *c, int ch, const chan_stats *s) {
    if (s->n == 0) return;
    double na = c->s_n[ch], nb = s->n, d = s->mean - c->s_mean[ch];
    c->s_mean[ch] += d * nb / (na + nb);
    c->s_m2[ch] += s->m2 + d * d * na * nb / (na + nb);
    c->s_n[ch] = na + nb;
    c->s_min[ch] = fmin(c->s_min[ch], s->mn);
    c->s_max[ch] = fmax(c->s_max[ch], s->mx);
    if (s->dn == 0) return;
    double da = c->d_n[ch], db = s->dn, dd = s->dm - c->d_mean[ch];
    c->d_mean[ch] += dd * db / (da + db);
    c->d_m2[ch] += s->dm2 + dd * dd * da * db / (da + db);
    c->d_n[ch] = da + db;
}

/* Whether record k (valid at t) enters the statistics, and its difference over the lag too. */
int wx_ingest_stats_in(const ingest_ctx *c, wx_time t) {
    return c->r.has_stats && t >= c->r.stats_start && t <= c->r.stats_end;
}
int wx_ingest_stats_diff(const ingest_ctx *c, int64_t k, wx_time t) {
    return c->lag > 0 && k >= c->lag && t - c->lag * c->r.step >= c->r.stats_start;
}

/* Record by record (resumed shards): ring slot k % lag holds record k - lag until replaced. */
void wx_ingest_stats_add(ingest_ctx *c, const float *rec, wx_time t) {
    const wx_recipe *r = &c->r;
    /* Stored points: drop_south_pole records are one row shorter than the decoded grid. */
    size_t np = (size_t)wx_archive_points(&c->meta), nrec = np * (size_t)r->nvars;
    int64_t k = (t - r->start) / r->step;
    for (int ch = 0; wx_ingest_stats_in(c, t) && ch < r->nvars; ch++) {
        const float *y = wx_ingest_stats_diff(c, k, t) ? c->ring + (size_t)(k % c->lag) * nrec + (size_t)ch * np : NULL;
        chan_stats cs;
        wx_ingest_stats_compute(rec + (size_t)ch * np, y, np, &cs);
        wx_ingest_stats_merge(c, ch, &cs);
    }
    if (c->lag > 0) memcpy(c->ring + (size_t)(k % c->lag) * nrec, rec, sizeof(float) * nrec);
}

/* Reads record r of an existing complete shard (for statistics on a resumed ingest). */
wx_status wx_ingest_record_read(ingest_ctx *c, int shard, int64_t r, float *rec) {
    char name[64], path[8192];
    wx_archive_shard_name(shard, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", c->r.output, name);
    int64_t stride = wx_archive_record_stride(&c->meta), bytes = wx_archive_record_bytes(&c->meta);
    int64_t n_here = c->meta.count - shard * c->meta.records_per_shard;
    if (n_here > c->meta.records_per_shard) n_here = c->meta.records_per_shard;
    int64_t tables = WX_SHARD_HEADER_BYTES + 12 * n_here;
    int64_t data = (tables + WX_ARCHIVE_ALIGN - 1) / WX_ARCHIVE_ALIGN * WX_ARCHIVE_ALIGN;
    FILE *f = fopen(path, "rb");
    if (!f) return wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", path, strerror(errno));
    unsigned char *buf = wx_malloc((size_t)bytes);
    int ok = !fseeko(f, data + r * stride, SEEK_SET) && fread(buf, 1, (size_t)bytes, f) == (size_t)bytes;
    fclose(f);
    if (ok) {
        size_t nval = (size_t)c->meta.nchan * (size_t)wx_archive_points(&c->meta);
        if (c->meta.dtype == WX_DTYPE_F16)
            for (size_t k = 0; k < nval; k++) rec[k] = wx_f16_to_f32(((uint16_t *)buf)[k]);
        else
            memcpy(rec, buf, nval * 4);
    }
    free(buf);
    return ok ? WX_OK : wx_error_set(WX_ERR_RUN, "%s: record %lld unreadable", path, (long long)r);
}

/* wx_clim_fetch: elements [q0, q0 + n) of record t, one pread from the shard (kept open between
 * calls: the build reads every record once per pass). */
static wx_status clim_fetch(void *ctx, int64_t t, size_t q0, size_t n, float *out) {
    ingest_ctx *c = ctx;
    int shard = (int)(t / c->meta.records_per_shard);
    int64_t r = t % c->meta.records_per_shard;
    char name[64], path[8192];
    wx_archive_shard_name(shard, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", c->r.output, name);
    if (c->clim_fd < 0 || c->clim_shard != shard) {
        if (c->clim_fd >= 0) close(c->clim_fd);
        c->clim_fd = open(path, O_RDONLY);
        c->clim_shard = shard;
        if (c->clim_fd < 0) return wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", path, strerror(errno));
    }
    int64_t n_here = c->meta.count - shard * c->meta.records_per_shard;
    if (n_here > c->meta.records_per_shard) n_here = c->meta.records_per_shard;
    int64_t tables = WX_SHARD_HEADER_BYTES + 12 * n_here;
    int64_t data = (tables + WX_ARCHIVE_ALIGN - 1) / WX_ARCHIVE_ALIGN * WX_ARCHIVE_ALIGN;
    size_t es = c->meta.dtype == WX_DTYPE_F16 ? 2 : 4, bytes = n * es;
    void *buf = es == 4 ? (void *)out : wx_malloc(bytes);
    ssize_t got = pread(c->clim_fd, buf, bytes, (off_t)(data + r * wx_archive_record_stride(&c->meta) +
                                                      (int64_t)(q0 * es)));
    if (es == 2 && got == (ssize_t)bytes)
        for (size_t k = 0; k < n; k++) out[k] = wx_f16_to_f32(((uint16_t *)buf)[k]);
    if (es == 2) free(buf);
    return got == (ssize_t)bytes ? WX_OK : wx_error_set(WX_ERR_RUN, "%s: record %lld unreadable", path,
                                                        (long long)r);
}

/* Builds the archive's climatology unless the recipe leaves `climatology:` unset and it would
 * be out of proportion (over 4x the archive's data and over 1 GiB: a statistics window much
 * shorter than a year at a fine grid, where most days of the year would be empty anyway). */
wx_status wx_ingest_climatology_make(ingest_ctx *c, wx_archive_meta *m) {
    uint8_t hours[24];
    int nh = wx_climatology_hours(m, m->stats_start, m->stats_end, c->r.clim_hour_step, hours);
    double elems = (double)m->nchan * (double)wx_archive_points(m);
    double clim_gb = 366.0 * nh * elems * 4 / 1e9;
    double data_gb = (double)m->count * elems * (m->dtype == WX_DTYPE_F16 ? 2 : 4) / 1e9;
    char list[24 * 4] = "";
    for (int k = 0, n = 0; k < nh; k++) n += snprintf(list + n, sizeof list - (size_t)n, "%s%d", k ? "," : "", hours[k]);
    if (!c->r.climatology_explicit && clim_gb > 4 * data_gb && clim_gb > 1.073741824) {
        wx_log_warn("ingest: climatology skipped: 366 days x %d hours (%s UTC) x %lld channels x %lldx%lld "
                    "points would be %.1f GB against %.2f GB of records; set `climatology: true` in the "
                    "recipe to build it anyway (ACC needs one)", nh, list, (long long)m->nchan,
                    (long long)m->grid.nlat, (long long)m->grid.nlon, clim_gb, data_gb);
        return WX_OK;
    }
    wx_log_info("ingest: climatology: 366 days x %d hours (%s UTC) of the statistics window, %.2f GB",
                nh, list, clim_gb);
    char path[8192];
    snprintf(m->climatology, sizeof m->climatology, "climatology.wxc");
    snprintf(path, sizeof path, "%s/%s", c->r.output, m->climatology);
    wx_clim_opts co = {61, (int64_t)1 << 30, c->r.clim_hour_step};
    c->clim_fd = -1;
    wx_status st = wx_climatology_build(path, m, m->stats_start, m->stats_end, &co, clim_fetch, c);
    if (c->clim_fd >= 0) close(c->clim_fd);
    c->clim_fd = -1;
    if (st != WX_OK) m->climatology[0] = 0;
    return st;
}

/* The manifest's statistics from the running totals; NaN where a channel had no value (all NaN). */
void wx_ingest_stats_finish(ingest_ctx *c) {
    wx_archive_meta *m = &c->meta;
    int n = m->nchan;
    m->mean = wx_calloc((size_t)n, 8), m->std = wx_calloc((size_t)n, 8);
    m->min = wx_calloc((size_t)n, 8), m->max = wx_calloc((size_t)n, 8);
    m->diff_std = wx_calloc((size_t)n, 8);
    for (int i = 0; i < n; i++) {
        m->mean[i] = c->s_n[i] > 0 ? c->s_mean[i] : NAN;
        m->std[i] = c->s_n[i] > 0 ? sqrt(c->s_m2[i] / c->s_n[i]) : NAN;
        m->min[i] = c->s_n[i] > 0 ? c->s_min[i] : NAN;
        m->max[i] = c->s_n[i] > 0 ? c->s_max[i] : NAN;
        m->diff_std[i] = c->d_n[i] > 0 ? sqrt(c->d_m2[i] / c->d_n[i]) : NAN;
        if (c->s_n[i] > 0 && m->min[i] == m->max[i] && m->chan[i].kind != WX_LEVEL_STATIC)
            wx_log_warn("ingest: channel %s is %g everywhere and at every time of the statistics "
                        "window: a constant source field (a NetCDF scale_factor of 0?); FourCastNet "
                        "normalises it by 1, GraphCast refuses it", m->chan[i].name, m->min[i]);
    }
}

/* verify's re-check (ingest.h): an ingest context holding only what the statistics use. */
struct wx_stats_check {
    ingest_ctx c;
    const wx_archive_meta *m;
};

wx_stats_check *wx_stats_check_begin(const wx_archive_meta *m) {
    if (!m->has_stats || m->diff_step <= 0 || m->step <= 0) return NULL;
    wx_stats_check *s = wx_calloc(1, sizeof *s);
    ingest_ctx *c = &s->c;
    s->m = m;
    c->r.has_stats = 1, c->r.stats_start = m->stats_start, c->r.stats_end = m->stats_end;
    c->r.start = m->start, c->r.step = m->step, c->r.nvars = m->nchan;
    c->meta = *m; /* the grid and channel count; the statistics arrays are replaced by finish */
    c->meta.mean = c->meta.std = c->meta.min = c->meta.max = c->meta.diff_std = NULL;
    c->lag = m->diff_step % m->step == 0 ? (int)(m->diff_step / m->step) : 0;
    int n = m->nchan;
    double **arrs[] = {&c->s_n, &c->s_mean, &c->s_m2, &c->d_n, &c->d_mean, &c->d_m2, &c->s_min, &c->s_max};
    for (int a = 0; a < 8; a++) *arrs[a] = wx_calloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) c->s_min[i] = INFINITY, c->s_max[i] = -INFINITY;
    if (c->lag) c->ring = wx_calloc((size_t)c->lag * (size_t)n * (size_t)wx_archive_points(m), sizeof(float));
    return s;
}

void wx_stats_check_record(wx_stats_check *s, int64_t index, const float *rec) {
    if (s) wx_ingest_stats_add(&s->c, rec, s->m->start + index * s->m->step);
}

/* Equal to the manifest's 9 significant digits (core/wx_json.c writes "%.9g": a relative 5e-9),
 * or both not finite (JSON null stands for NaN or an infinity: a channel with no value). */
static int same_stat(double a, double b) {
    if (!isfinite(a) || !isfinite(b)) return !isfinite(a) && !isfinite(b);
    return fabs(a - b) <= 1e-8 * fmax(fabs(a), fabs(b));
}

void wx_stats_check_free(wx_stats_check *s) {
    if (!s) return;
    ingest_ctx *c = &s->c;
    double **arrs[] = {&c->s_n, &c->s_mean, &c->s_m2, &c->d_n, &c->d_mean, &c->d_m2, &c->s_min, &c->s_max};
    for (int a = 0; a < 8; a++) free(*arrs[a]);
    free(c->ring);
    free(c->meta.mean), free(c->meta.std), free(c->meta.min), free(c->meta.max), free(c->meta.diff_std);
    free(s);
}

wx_status wx_stats_check_finish(wx_stats_check *s, const char *dir) {
    if (!s) return WX_OK;
    ingest_ctx *c = &s->c;
    wx_ingest_stats_finish(c);
    const wx_archive_meta *m = s->m;
    const char *names[] = {"mean", "std", "min", "max", "diff_std"};
    const double *have[] = {m->mean, m->std, m->min, m->max, m->diff_std};
    const double *want[] = {c->meta.mean, c->meta.std, c->meta.min, c->meta.max, c->meta.diff_std};
    wx_status st = WX_OK;
    /* no decoder yields an infinity: one in the records is a float16 overflow of an archive
     * written before ingest refused them, or damage */
    for (int ch = 0; ch < m->nchan && st == WX_OK; ch++)
        if (isinf(c->meta.min[ch]) || isinf(c->meta.max[ch]))
            st = wx_error_set(WX_ERR_RUN, "%s: channel %s holds infinite values (min %g, max %g)%s; "
                              "rerun `wxcast ingest`%s", dir, m->chan[ch].name, c->meta.min[ch],
                              c->meta.max[ch], m->dtype == WX_DTYPE_F16 ? ", beyond float16's range" : "",
                              m->dtype == WX_DTYPE_F16 ? " with `dtype: float32`" : "");
    for (int ch = 0; ch < m->nchan && st == WX_OK; ch++)
        for (int k = 0; k < 5 && st == WX_OK; k++)
            if (!same_stat(have[k][ch], want[k][ch]))
                st = wx_error_set(WX_ERR_RUN, "%s/manifest.json: statistics.%s of channel %s is %.9g, "
                                  "the records give %.9g: the statistics were edited or damaged "
                                  "(training would normalise with them); rerun `wxcast ingest`",
                                  dir, names[k], m->chan[ch].name, have[k][ch], want[k][ch]);
    wx_stats_check_free(s);
    return st;
}
