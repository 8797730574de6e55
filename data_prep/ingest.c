/* Recipe → archive: match every (channel, valid time) to a source field, decode, regrid, write
 * shards in time order, accumulate statistics in double, write the manifest last.
 *
 * Records are made in batches: every (record, channel) of a batch is one task for a few threads
 * (decode into the batch buffer, float16 rounding, crc32 of the channel's bytes), then per-task
 * statistics, then one write of the whole batch. Results do not depend on the thread count: each
 * task's arithmetic is its own, record crc32s are the channel crcs joined with crc32_combine, and
 * statistics are merged in (record, channel) order on one thread. */
#include "ingest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <omp.h>
#include <pthread.h>
#include <zlib.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "climatology_build.h"
#include "core/wx_progress.h"
#include "ingest_recipe.h"
#include "io/archive.h"
#include "meteo/wx_regrid.h"

#include "ingest_priv.h"

/* One channel of one record: its moments, and those of its difference from the record `lag`
 * steps earlier (y, NULL when outside the window). */
typedef struct {
    double n, mean, m2, mn, mx, dn, dm, dm2;
} chan_stats;

/* Two passes over the points instead of four, the sums each kept in their own running order (so
 * the results are those of one sum per pass, bit for bit), and min/max as compares: `minsd`'s
 * choice, which is what glibc's fmin/fmax return for non-NaN operands, without a call per point
 * (the statistics took ~0.7 of 1.2 CPU-s of a 48-field ingest). */
static void chan_stats_compute(const float *x, const float *y, size_t np, chan_stats *s) {
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
static void chan_stats_merge(ingest_ctx *c, int ch, const chan_stats *s) {
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

/* Whether record k (valid at t) enters the statistics, and its 6-hour difference too. */
static int stats_in(const ingest_ctx *c, wx_time t) {
    return c->r.has_stats && t >= c->r.stats_start && t <= c->r.stats_end;
}
static int stats_diff(const ingest_ctx *c, int64_t k, wx_time t) {
    return c->lag > 0 && k >= c->lag && t - c->lag * c->r.step >= c->r.stats_start;
}

/* Record by record (resumed shards): ring slot k % lag holds record k - lag until replaced. */
static void stats_add(ingest_ctx *c, const float *rec, wx_time t) {
    const wx_recipe *r = &c->r;
    /* Stored points: drop_south_pole records are one row shorter than the decoded grid. */
    size_t np = (size_t)wx_archive_points(&c->meta), nrec = np * (size_t)r->nvars;
    int64_t k = (t - r->start) / r->step;
    for (int ch = 0; stats_in(c, t) && ch < r->nvars; ch++) {
        const float *y = stats_diff(c, k, t) ? c->ring + (size_t)(k % c->lag) * nrec + (size_t)ch * np : NULL;
        chan_stats cs;
        chan_stats_compute(rec + (size_t)ch * np, y, np, &cs);
        chan_stats_merge(c, ch, &cs);
    }
    if (c->lag > 0) memcpy(c->ring + (size_t)(k % c->lag) * nrec, rec, sizeof(float) * nrec);
}

/* Reads record r of an existing complete shard (for statistics on a resumed ingest). */
static wx_status read_back(ingest_ctx *c, int shard, int64_t r, float *rec) {
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
static wx_status climatology_make(ingest_ctx *c, wx_archive_meta *m) {
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

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static void remove_stale(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, ".shard-", 7) && strstr(e->d_name, ".tmp.")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    unlink(path);
}

static wx_status setup(ingest_ctx *c) {
    wx_recipe *r = &c->r;
    c->src = wx_calloc((size_t)r->nsources + 1, sizeof *c->src);
    uint64_t key = fnv(1469598103934665603ULL, r->text, strlen(r->text));
    for (int s = 0; s < r->nsources; s++) {
        WX_TRY(wx_source_open(r->sources[s], &c->src[s]));
        struct stat sb;
        if (stat(r->sources[s], &sb) == 0) key = fnv(key, &sb.st_size, sizeof sb.st_size);
        key = fnv(key, r->sources[s], strlen(r->sources[s]));
        c->nix += wx_source_count(c->src[s]);
    }
    c->ix = wx_calloc((size_t)c->nix + 1, sizeof *c->ix);
    int k = 0;
    for (int s = 0; s < r->nsources; s++)
        for (int i = 0; i < wx_source_count(c->src[s]); i++)
            c->ix[k++] = (ix_entry){wx_source_info(c->src[s], i), s, i};
    qsort(c->ix, (size_t)c->nix, sizeof *c->ix, wx_ingest_ix_cmp);
    /* The archive grid comes from the first channel's field at the first time. */
    wx_status st = WX_OK;
    const wx_recipe_var *v0 = &r->vars[0];
    const ix_entry *e = wx_ingest_find(c, v0, r->start, v0->accum_s > 0 ? v0->accum_s : -1, &st);
    if (!e && st == WX_OK && v0->accum_s > 0) e = wx_ingest_find(c, v0, r->start, 3600, &st);
    if (st != WX_OK) return st;
    if (!e) return wx_ingest_not_found(c, v0, r->start);
    wx_grid g = e->f->grid;
    c->fine = g; /* every other source field must be on this grid */
    if (r->resolution > 0) {
        if (wx_grid_coarse_shape(&g, r->resolution, &g) != WX_OK)
            return wx_error_wrap(WX_ERR_USAGE, "%s: ", r->path);
        WX_TRY(wx_regrid_create(&c->fine, &g, &c->coarsen));
    }
    c->out = g;
    c->nthreads = omp_get_max_threads();
    c->fine_buf = wx_calloc((size_t)c->nthreads, sizeof(float *));
    c->acc_buf = wx_calloc((size_t)c->nthreads, sizeof(float *));
    c->chan_buf = wx_calloc((size_t)c->nthreads, sizeof(float *));
    for (int th = 0; th < c->nthreads; th++) {
        c->fine_buf[th] = wx_malloc(sizeof(float) * (size_t)c->fine.nlat * c->fine.nlon);
        c->acc_buf[th] = wx_malloc(sizeof(float) * (size_t)g.nlat * g.nlon);
        c->chan_buf[th] = wx_malloc(sizeof(float) * (size_t)g.nlat * g.nlon);
    }
    wx_archive_meta *m = &c->meta;
    m->nchan = r->nvars;
    m->chan = wx_calloc((size_t)r->nvars, sizeof *m->chan);
    for (int i = 0; i < r->nvars; i++) {
        wx_archive_channel *ch = &m->chan[i];
        snprintf(ch->name, sizeof ch->name, "%s", r->vars[i].name);
        snprintf(ch->param, sizeof ch->param, "%s", r->vars[i].param);
        ch->kind = r->vars[i].kind;
        ch->level = r->vars[i].level;
        snprintf(ch->units, sizeof ch->units, "%s", r->vars[i].entry ? r->vars[i].entry->units : "");
        ch->accum_s = r->vars[i].accum_s;
    }
    m->grid = c->out;
    if (r->drop_south_pole) {
        if (fabs(wx_grid_lat(&c->out, c->out.nlat - 1) + 90) > 1e-6)
            return wx_error_set(WX_ERR_USAGE, "drop_south_pole: the grid's last row is at %g, not -90",
                                wx_grid_lat(&c->out, c->out.nlat - 1));
        m->grid.nlat--;
    }
    m->start = r->start;
    m->step = r->step;
    m->count = (r->end - r->start) / r->step + 1;
    m->dtype = r->f16 ? WX_DTYPE_F16 : WX_DTYPE_F32;
    m->records_per_shard = wx_archive_records_for_size(m, r->shard_mb * 1048576.0);
    key = fnv(key, &m->records_per_shard, sizeof m->records_per_shard);
    m->key = key;
    if (r->has_stats) {
        m->has_stats = 1;
        m->stats_start = r->stats_start;
        m->stats_end = r->stats_end;
        /* 6 h (the models' step) when it is a whole number of records, else one record: a
         * 12-hourly archive gets 12 h differences, not none */
        m->diff_step = 21600 % r->step == 0 ? 21600 : r->step;
        if (m->diff_step != 21600)
            wx_log_info("statistics: differences over %lld h (the archive step; 6 h is not a "
                        "multiple of it)", (long long)(m->diff_step / 3600));
        c->lag = (int)(m->diff_step / r->step);
        int n = r->nvars;
        double **arrs[] = {&c->s_n, &c->s_mean, &c->s_m2, &c->d_n, &c->d_mean, &c->d_m2, &c->s_min, &c->s_max};
        for (int a = 0; a < 8; a++) *arrs[a] = wx_calloc((size_t)n, sizeof(double));
        for (int i = 0; i < n; i++) c->s_min[i] = INFINITY, c->s_max[i] = -INFINITY;
        if (c->lag)
            c->ring = wx_calloc((size_t)c->lag * (size_t)n * (size_t)wx_archive_points(m), sizeof(float));
    }
    return WX_OK;
}

/* Buffers of one batch of records. val: [nb, stride32 / 4] floats, each record's channels
 * [nchan, points] then zero padding (the float32 on-disk layout); disk: the float16 layout (NULL
 * for float32); crc: [nb * nchan] per channel, then per record; st/err: per task. val and disk
 * point into one of two buffer sets: the writer thread writes the other set's batch meanwhile. */
typedef struct {
    int64_t cap, stride32, stride16;
    float *val, *val_set[2];
    uint16_t *disk, *disk_set[2];
    int set;
    uint32_t *crc_ch, *crc;
    chan_stats *cs;
    wx_status *st;
    char **err;
} ingest_batch;

/* A batch buffer: 2 MB-aligned and, where transparent huge pages are on (`madvise` mode
 * included), backed by 2 MB pages. An O_DIRECT write goes to the disk from the buffer's own
 * pages: from 4 KB pages a 16 MB write becomes many requests of at most 254 segments, and this
 * machine's virtio disk took them at ~300 MB/s against ~1 GB/s from 2 MB pages (same bytes, one
 * write in flight; docs/benchmarks.md). Fewer page faults too. Only the padding after each record
 * is zeroed: every task overwrites its channel's values. */
static void *batch_alloc(size_t bytes, int64_t nrec, int64_t stride, int64_t used) {
    void *p = NULL;
    size_t huge = (size_t)2 << 20, len = bytes ? (bytes + huge - 1) / huge * huge : huge;
    WX_ASSERT(posix_memalign(&p, huge, len) == 0);
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* a hint: without it the buffer works, on 4 KB pages */
#endif
    for (int64_t r = 0; r < nrec && stride > used; r++)
        memset((char *)p + r * stride + used, 0, (size_t)(stride - used));
    return p;
}

static void batch_init(ingest_batch *b, const wx_archive_meta *m) {
    memset(b, 0, sizeof *b);
    int64_t rb = (int64_t)m->nchan * wx_archive_points(m) * 4;
    b->stride32 = (rb + WX_ARCHIVE_ALIGN - 1) / WX_ARCHIVE_ALIGN * WX_ARCHIVE_ALIGN;
    b->stride16 = wx_archive_record_stride(m);
    /* ~16 MB per batch (big writes; a buffer that stays small enough to be reused warm), but at
     * least two tasks per thread. */
    b->cap = (16LL << 20) / b->stride32;
    int64_t per_threads = (2 * omp_get_max_threads() + m->nchan - 1) / m->nchan;
    if (b->cap < per_threads) b->cap = per_threads;
    if (b->cap < 1) b->cap = 1;
    if (b->cap > m->records_per_shard) b->cap = m->records_per_shard;
    size_t tasks = (size_t)b->cap * (size_t)m->nchan;
    for (int k = 0; k < 2; k++) {
        b->val_set[k] = batch_alloc((size_t)(b->cap * b->stride32), b->cap, b->stride32, rb);
        if (m->dtype == WX_DTYPE_F16)
            b->disk_set[k] = batch_alloc((size_t)(b->cap * b->stride16), b->cap, b->stride16, rb / 2);
    }
    b->val = b->val_set[0], b->disk = b->disk_set[0];
    b->crc_ch = wx_calloc(tasks, sizeof *b->crc_ch);
    b->crc = wx_calloc((size_t)b->cap, sizeof *b->crc);
    b->cs = wx_calloc(tasks, sizeof *b->cs);
    b->st = wx_calloc(tasks, sizeof *b->st);
    b->err = wx_calloc(tasks, sizeof *b->err);
}

static void batch_free(ingest_batch *b) {
    for (int k = 0; k < 2; k++) free(b->val_set[k]), free(b->disk_set[k]);
    free(b->crc_ch);
    free(b->crc);
    free(b->cs);
    free(b->st);
    free(b->err);
}

/* One batch's tasks, shared by the workers; `next` hands out task numbers. */
typedef struct {
    ingest_ctx *c;
    ingest_batch *b;
    int64_t t0, ntask;
    int phase; /* 0: make the channels, 1: statistics */
    pthread_mutex_t mu;
    int64_t next;
} batch_job;

/* Task k = (record k / nchan, channel k % nchan): values, float16, crc32 of the channel bytes. */
static void task_make(batch_job *j, int64_t k, int th) {
    ingest_ctx *c = j->c;
    ingest_batch *b = j->b;
    const wx_archive_meta *m = &c->meta;
    int nch = m->nchan, f16 = m->dtype == WX_DTYPE_F16;
    size_t np = (size_t)wx_archive_points(m), full = (size_t)c->out.nlat * c->out.nlon;
    int64_t r = k / nch;
    int v = (int)(k % nch);
    float *dst = b->val + (size_t)r * (size_t)(b->stride32 / 4) + (size_t)v * np;
    /* drop_south_pole keeps the first nlat-1 rows: a prefix of the full field. */
    float *tmp = np == full ? dst : c->chan_buf[th];
    wx_status st = wx_ingest_make_channel(c, v, m->start + (j->t0 + r) * m->step, tmp, th);
    if (st == WX_OK && tmp != dst) memcpy(dst, tmp, sizeof(float) * np);
    const unsigned char *bytes = (const unsigned char *)dst;
    if (st == WX_OK && f16) {
        uint16_t *h = b->disk + (size_t)r * (size_t)(b->stride16 / 2) + (size_t)v * np;
        for (size_t q = 0; q < np; q++) {
            h[q] = wx_f32_to_f16(dst[q]);
            dst[q] = wx_f16_to_f32(h[q]); /* statistics see the stored values */
        }
        bytes = (const unsigned char *)h;
    }
    if (st == WX_OK)
        b->crc_ch[k] = wx_archive_crc32(0, bytes, np * (f16 ? 2 : 4));
    b->st[k] = st;
    b->err[k] = st == WX_OK ? NULL : wx_strdup(wx_error_message());
}

/* Task k's statistics; the record `lag` steps earlier is in this batch or in the ring. */
static void task_stats(batch_job *j, int64_t k) {
    ingest_ctx *c = j->c;
    ingest_batch *b = j->b;
    const wx_archive_meta *m = &c->meta;
    int nch = m->nchan;
    size_t np = (size_t)wx_archive_points(m), nrec = np * (size_t)nch;
    int64_t r = k / nch, ti = j->t0 + r;
    int v = (int)(k % nch);
    wx_time t = m->start + ti * m->step;
    if (!stats_in(c, t)) return;
    const float *y = NULL;
    if (stats_diff(c, ti, t))
        y = ti - c->lag >= j->t0 ? b->val + (size_t)(r - c->lag) * (size_t)(b->stride32 / 4) + (size_t)v * np
                                 : c->ring + (size_t)(ti % c->lag) * nrec + (size_t)v * np;
    chan_stats_compute(b->val + (size_t)r * (size_t)(b->stride32 / 4) + (size_t)v * np, y, np, &b->cs[k]);
}

/* Takes tasks of j until none is left, with thread th's scratch. */
static void batch_work(batch_job *j, int th) {
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int64_t k = j->next++;
        pthread_mutex_unlock(&j->mu);
        if (k >= j->ntask) break;
        if (j->phase == 0) task_make(j, k, th);
        else task_stats(j, k);
    }
}

/* The worker threads, started once per ingest and kept: plain threads that block when idle, not
 * an OpenMP team (idle OpenMP workers spin, which on a shared machine takes CPU from the ones
 * still decoding), and not new threads per batch (each new thread faulted in a fresh eccodes
 * decode buffer, ~7% of ingest's CPU). */
struct batch_pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    batch_job *job;   /* the phase being run */
    uint64_t gen;     /* bumped per phase */
    int running, quit, nworkers;
    pthread_t *tid;
    struct batch_arg {
        batch_pool *p;
        int th;
    } *arg;
};

static void *pool_main(void *v) {
    struct batch_arg *a = v;
    batch_pool *p = a->p;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen && !p->quit) pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        batch_job *j = p->job;
        pthread_mutex_unlock(&p->mu);
        batch_work(j, a->th);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Threads 1..nthreads-1 (thread 0 is the caller). One that cannot start leaves its tasks to the
 * others (results do not change). */
static batch_pool *pool_start(int nthreads) {
    batch_pool *p = wx_calloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    p->tid = wx_calloc((size_t)nthreads, sizeof *p->tid);
    p->arg = wx_calloc((size_t)nthreads, sizeof *p->arg);
    for (int i = 1; i < nthreads; i++) {
        p->arg[p->nworkers] = (struct batch_arg){p, i};
        if (pthread_create(&p->tid[p->nworkers], NULL, pool_main, &p->arg[p->nworkers]) == 0)
            p->nworkers++;
    }
    return p;
}

static void pool_stop(batch_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++) pthread_join(p->tid[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->tid);
    free(p->arg);
    free(p);
}

/* Runs every task of the phase on the pool and this thread. */
static void batch_run(batch_job *j, int phase) {
    batch_pool *p = j->c->pool;
    j->phase = phase;
    j->next = 0;
    pthread_mutex_lock(&p->mu);
    p->job = j;
    p->gen++;
    p->running = p->nworkers;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    batch_work(j, 0);
    pthread_mutex_lock(&p->mu);
    while (p->running > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* Makes records t0..t0+nb-1 into b: values, crc32s, statistics (merged into c). */
static wx_status batch_make(ingest_ctx *c, ingest_batch *b, int64_t t0, int64_t nb) {
    const wx_archive_meta *m = &c->meta;
    int nch = m->nchan;
    size_t np = (size_t)wx_archive_points(m), nrec = np * (size_t)nch;
    size_t chan_bytes = np * (m->dtype == WX_DTYPE_F16 ? 2 : 4);
    batch_job j = {c, b, t0, nb * nch, 0, PTHREAD_MUTEX_INITIALIZER, 0};
    batch_run(&j, 0);
    wx_status st = WX_OK;
    for (int64_t k = 0; k < j.ntask; k++) {
        if (b->st[k] != WX_OK && st == WX_OK) st = wx_error_set(b->st[k], "%s", b->err[k]);
        free(b->err[k]);
    }
    if (st != WX_OK) return st;
    for (int64_t r = 0; r < nb; r++) {
        uLong crc = b->crc_ch[r * nch];
        for (int v = 1; v < nch; v++) crc = crc32_combine(crc, b->crc_ch[r * nch + v], (z_off_t)chan_bytes);
        b->crc[r] = (uint32_t)crc;
    }
    if (!m->has_stats) return WX_OK;
    batch_run(&j, 1);
    for (int64_t k = 0; k < j.ntask; k++)
        if (stats_in(c, m->start + (t0 + k / nch) * m->step)) chan_stats_merge(c, (int)(k % nch), &b->cs[k]);
    /* The ring keeps the last `lag` records for the next batch's differences. */
    for (int64_t r = nb > c->lag ? nb - c->lag : 0; c->lag > 0 && r < nb; r++)
        memcpy(c->ring + (size_t)((t0 + r) % c->lag) * nrec,
               b->val + (size_t)r * (size_t)(b->stride32 / 4), sizeof(float) * nrec);
    return WX_OK;
}

static wx_status run(ingest_ctx *c, wx_ingest_opts *o) {
    WX_TRY(setup(c));
    wx_archive_meta *m = &c->meta;
    WX_TRY(wx_mkdir_p(c->r.output));
    remove_stale(c->r.output);
    size_t np = (size_t)wx_archive_points(m);
    float *rec = wx_malloc(sizeof(float) * np * (size_t)m->nchan);
    ingest_batch b;
    batch_init(&b, m);
    int64_t first_cap = (c->nthreads + m->nchan - 1) / m->nchan;
    if (first_cap < 1) first_cap = 1;
    const char *ab = getenv("WX_TEST_ABORT_AFTER_RECORDS");
    c->abort_after = ab ? atoll(ab) : -1;
    wx_progress p;
    wx_progress_start(&p, "ingest", m->count, "records");
    wx_status st = WX_OK;
    int noted = 0;
    for (int s = 0; st == WX_OK && s < wx_archive_shard_count(m); s++) {
        int64_t t0 = s * m->records_per_shard, t1 = t0 + m->records_per_shard;
        if (t1 > m->count) t1 = m->count;
        if (wx_shard_is_complete(c->r.output, s, m)) {
            o->shards_skipped++;
            for (int64_t t = t0; st == WX_OK && t < t1; t++) {
                if (m->has_stats) st = read_back(c, s, t - t0, rec);
                if (st == WX_OK && m->has_stats) stats_add(c, rec, m->start + t * m->step);
            }
            wx_progress_update(&p, t1, NULL);
            continue;
        }
        wx_shard_writer *w;
        if (!c->pool) c->pool = pool_start(c->nthreads);
        st = wx_shard_writer_open(c->r.output, s, m, &w);
        if (st != WX_OK) break;
        for (int64_t t = t0, nb; st == WX_OK && t < t1; t += nb) {
            nb = t1 - t < b.cap ? t1 - t : b.cap;
            /* The ingest's first batch: just enough records to give every thread at least one
             * field to decode (not two batches' worth), so that the disk, the slower side from
             * then on, starts a decode earlier. */
            if (!o->records_written && nb > first_cap) nb = first_cap;
            int64_t nw = nb;
            st = batch_make(c, &b, t, nb);
            /* Test hook: stop as if killed once that many records are written. */
            if (c->abort_after >= 0 && o->records_written + nw > c->abort_after)
                nw = c->abort_after - o->records_written;
            /* Queued to the writer thread (O_DIRECT where possible); the next batch is made in
             * the other buffer set while this one is written. */
            if (st == WX_OK) st = wx_shard_writer_put_async(w, b.disk ? (void *)b.disk : (void *)b.val, nw, b.crc);
            if (st == WX_OK && !noted && wx_shard_writer_buffered_note(w)[0]) {
                wx_log(WX_LOG_DEBUG, "ingest: writing %s through the page cache: %s", c->r.output,
                       wx_shard_writer_buffered_note(w));
                noted = 1;
            }
            b.set ^= 1;
            b.val = b.val_set[b.set], b.disk = b.disk_set[b.set];
            if (st == WX_OK) o->records_written += nw;
            if (c->abort_after >= 0 && o->records_written >= c->abort_after) {
                wx_shard_writer_wait(w); /* the records counted are in the file, as if killed now */
                _exit(3);
            }
            if (st == WX_OK) wx_progress_update(&p, t + nb, NULL);
        }
        if (st == WX_OK) st = wx_shard_writer_commit(w);
        else wx_shard_writer_abort(w);
    }
    wx_progress_finish(&p);
    pool_stop(c->pool);
    c->pool = NULL;
    free(rec);
    batch_free(&b);
    if (st == WX_OK && m->has_stats) {
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
        }
    }
    if (st == WX_OK && m->has_stats && c->r.climatology) st = climatology_make(c, m);
    if (st == WX_OK) st = wx_archive_write_manifest(c->r.output, m);
    o->records_total = m->count;
    snprintf(o->archive_dir, sizeof o->archive_dir, "%s", c->r.output);
    return st;
}

wx_status wx_ingest_run(const char *recipe_path, wx_ingest_opts *o) {
    ingest_ctx c;
    memset(&c, 0, sizeof c);
    o->records_written = o->records_total = 0;
    o->shards_skipped = 0;
    wx_status st = wx_recipe_load(recipe_path, o->output, &c.r);
    if (st == WX_OK) st = run(&c, o);
    for (int s = 0; s < c.r.nsources && c.src; s++) wx_source_close(c.src[s]);
    free(c.src);
    free(c.ix);
    wx_regrid_free(c.coarsen);
    for (int th = 0; th < c.nthreads; th++) {
        free(c.fine_buf[th]);
        free(c.acc_buf[th]);
        free(c.chan_buf[th]);
    }
    free(c.fine_buf);
    free(c.acc_buf);
    free(c.chan_buf);
    free(c.ring);
    double *arrs[] = {c.s_n, c.s_mean, c.s_m2, c.d_n, c.d_mean, c.d_m2, c.s_min, c.s_max};
    for (int a = 0; a < 8; a++) free(arrs[a]);
    wx_archive_meta_free(&c.meta);
    wx_recipe_free(&c.r);
    return st;
}
