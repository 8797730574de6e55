/* Recipe → archive: match every (channel, valid time) to a source field, decode, regrid, write
 * shards in time order, accumulate statistics in double, write the manifest last. */
#include "ingest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "climatology_build.h"
#include "core/wx_progress.h"
#include "ingest_recipe.h"
#include "io/archive.h"

typedef struct {
    const wx_field_info *f;
    int src;
    int idx;
} ix_entry;

typedef struct {
    wx_recipe r;
    wx_source **src;
    ix_entry *ix;
    int nix;
    wx_grid fine;      /* grid of the sources (first field) */
    wx_grid out;       /* archive grid */
    int have_fine;
    float *fine_buf, *acc_buf;
    wx_archive_meta meta;
    /* statistics */
    double *s_n, *s_mean, *s_m2, *s_min, *s_max, *d_n, *d_mean, *d_m2;
    float *ring;       /* [lag, rec] previous records for differences */
    int lag;
    int64_t abort_after, done;
} ingest_ctx;

static int ix_cmp(const void *a, const void *b) {
    const wx_field_info *x = ((const ix_entry *)a)->f, *y = ((const ix_entry *)b)->f;
    wx_time tx = x->has_time ? x->valid : INT64_MIN, ty = y->has_time ? y->valid : INT64_MIN;
    if (tx != ty) return tx < ty ? -1 : 1;
    const ix_entry *ea = a, *eb = b;
    if (ea->src != eb->src) return ea->src - eb->src;
    return ea->idx - eb->idx;
}

/* The field for variable v valid at t with accumulation `accum` (-1: any); NULL when absent. */
static const ix_entry *find(ingest_ctx *c, const wx_recipe_var *v, wx_time t, int64_t accum,
                            wx_status *st) {
    int lo = 0, hi = c->nix;
    int stat = v->kind == WX_LEVEL_STATIC;
    if (!stat) {
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            const wx_field_info *f = c->ix[mid].f;
            if ((f->has_time ? f->valid : INT64_MIN) < t) lo = mid + 1;
            else hi = mid;
        }
    }
    const ix_entry *hit = NULL;
    for (int i = lo; i < c->nix; i++) {
        const wx_field_info *f = c->ix[i].f;
        if (!stat && (!f->has_time || f->valid != t)) break;
        if (strcmp(f->param, v->param)) continue;
        if ((v->kind == WX_LEVEL_PRESSURE) != (f->kind == WX_LEVEL_PRESSURE)) continue;
        if (v->kind == WX_LEVEL_PRESSURE && fabs(f->level - v->level) > 1e-6) continue;
        if (!(f->member == c->r.member || (f->member < 0 && c->r.member == 0))) continue;
        if (accum >= 0 && f->accum_s != accum) continue;
        if (hit && !stat) {
            char a[600], b[600];
            wx_field_describe(c->src[hit->src], hit->f, a, sizeof a);
            wx_field_describe(c->src[c->ix[i].src], f, b, sizeof b);
            *st = wx_error_set(WX_ERR_RUN, "variable '%s': two source fields for the same time: %s "
                               "and %s", v->name, a, b);
            return NULL;
        }
        hit = &c->ix[i];
        if (stat) break;
    }
    return hit;
}

static wx_status not_found(ingest_ctx *c, const wx_recipe_var *v, wx_time t) {
    char when[32], lev[32] = "";
    wx_time_format(t, when);
    if (v->kind == WX_LEVEL_PRESSURE) snprintf(lev, sizeof lev, " %g hPa", v->level);
    char hint[1024] = "";
    for (int i = 0; i < c->nix; i++) {
        const wx_field_info *f = c->ix[i].f;
        if (strcmp(f->param, v->param) || f->has_time || f->kind == WX_LEVEL_STATIC) continue;
        /* Monthly-mean files (ERA-Interim `month`) index fields by an axis that is not time. */
        char axis[96] = "";
        if (f->other_axis[0]) snprintf(axis, sizeof axis, " along dimension '%s'", f->other_axis);
        snprintf(hint, sizeof hint, "; %s holds '%s'%s without a valid time (no CF time coordinate "
                 "with units '<unit> since <date>'), so it cannot be matched to dates: give it a "
                 "time axis first (e.g. `cdo settaxis`)", wx_source_path(c->src[c->ix[i].src]),
                 f->name, axis);
        break;
    }
    return wx_error_set(WX_ERR_RUN, "no source field for variable '%s' (%s%s, member %d) valid at "
                        "%s%s", v->name, v->param, lev, c->r.member, when, hint);
}

/* Decodes one source field onto the archive grid into out[points]. */
static wx_status decode(ingest_ctx *c, const ix_entry *e, float *out) {
    const wx_grid *g = &e->f->grid;
    if (!c->have_fine) {
        c->fine = *g;
        c->have_fine = 1;
    }
    if (!wx_grid_same(g, &c->fine, 1e-6)) {
        char a[160], b[160], d[600];
        wx_grid_describe(&c->fine, a, sizeof a);
        wx_grid_describe(g, b, sizeof b);
        wx_field_describe(c->src[e->src], e->f, d, sizeof d);
        return wx_error_set(WX_ERR_RUN, "%s: grid %s differs from the other sources' %s; the recipe "
                            "must not mix grids or resolutions", d, b, a);
    }
    if (c->r.resolution <= 0) /* native grid: decode straight into the caller's buffer */
        return wx_source_read(c->src[e->src], e->idx, c->r.missing, out);
    WX_TRY(wx_source_read(c->src[e->src], e->idx, c->r.missing, c->fine_buf));
    wx_grid cg;
    WX_TRY(wx_grid_coarse_shape(g, c->r.resolution, &cg));
    wx_grid_coarsen(g, &cg, c->fine_buf, out);
    return WX_OK;
}

static wx_status make_channel(ingest_ctx *c, int v, wx_time t, float *out) {
    const wx_recipe_var *var = &c->r.vars[v];
    wx_status st = WX_OK;
    size_t np = (size_t)c->out.nlat * c->out.nlon;
    const ix_entry *e = find(c, var, t, var->accum_s > 0 ? var->accum_s : -1, &st);
    if (st != WX_OK) return st;
    if (e || var->accum_s == 0) {
        if (!e) return not_found(c, var, t);
        return decode(c, e, out);
    }
    /* Sum of the hourly accumulations ending at t, t-1h, ..., t-(n-1)h. */
    int64_t n = var->accum_s / 3600;
    for (int64_t k = 0; k < n; k++) {
        const ix_entry *h = find(c, var, t - k * 3600, 3600, &st);
        if (st != WX_OK) return st;
        if (!h) return not_found(c, var, t - k * 3600);
        WX_TRY(decode(c, h, k ? c->acc_buf : out));
        if (k)
            for (size_t p = 0; p < np; p++) out[p] += c->acc_buf[p];
    }
    return WX_OK;
}

static void stats_add(ingest_ctx *c, const float *rec, wx_time t) {
    const wx_recipe *r = &c->r;
    size_t np = (size_t)c->out.nlat * c->out.nlon, nrec = np * (size_t)r->nvars;
    int in = r->has_stats && t >= r->stats_start && t <= r->stats_end;
    int64_t k = (t - r->start) / r->step;
    for (int ch = 0; in && ch < r->nvars; ch++) {
        const float *x = rec + (size_t)ch * np;
        double mean = 0, m2 = 0, mn = INFINITY, mx = -INFINITY;
        size_t n = 0;
        for (size_t p = 0; p < np; p++)
            if (!isnan(x[p])) mean += x[p], n++, mn = fmin(mn, x[p]), mx = fmax(mx, x[p]);
        if (!n) continue;
        mean /= (double)n;
        for (size_t p = 0; p < np; p++)
            if (!isnan(x[p])) m2 += (x[p] - mean) * (x[p] - mean);
        /* Chan et al. combination of this record with the running totals. */
        double na = c->s_n[ch], nb = (double)n, d = mean - c->s_mean[ch];
        c->s_mean[ch] += d * nb / (na + nb);
        c->s_m2[ch] += m2 + d * d * na * nb / (na + nb);
        c->s_n[ch] = na + nb;
        c->s_min[ch] = fmin(c->s_min[ch], mn);
        c->s_max[ch] = fmax(c->s_max[ch], mx);
        if (c->lag > 0 && k >= c->lag && t - c->lag * r->step >= r->stats_start) {
            const float *y = c->ring + (size_t)(k % c->lag) * nrec + (size_t)ch * np;
            double dm = 0, dm2 = 0;
            size_t dn = 0;
            for (size_t p = 0; p < np; p++)
                if (!isnan(x[p]) && !isnan(y[p])) dm += (double)x[p] - y[p], dn++;
            if (dn) {
                dm /= (double)dn;
                for (size_t p = 0; p < np; p++)
                    if (!isnan(x[p]) && !isnan(y[p])) {
                        double q = (double)x[p] - y[p] - dm;
                        dm2 += q * q;
                    }
                double da = c->d_n[ch], db = (double)dn, dd = dm - c->d_mean[ch];
                c->d_mean[ch] += dd * db / (da + db);
                c->d_m2[ch] += dm2 + dd * dd * da * db / (da + db);
                c->d_n[ch] = da + db;
            }
        }
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

static wx_status clim_fetch(void *ctx, int64_t t, float *rec) {
    ingest_ctx *c = ctx;
    return read_back(c, (int)(t / c->meta.records_per_shard), t % c->meta.records_per_shard, rec);
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
    qsort(c->ix, (size_t)c->nix, sizeof *c->ix, ix_cmp);
    /* The archive grid comes from the first channel's field at the first time. */
    wx_status st = WX_OK;
    const wx_recipe_var *v0 = &r->vars[0];
    const ix_entry *e = find(c, v0, r->start, v0->accum_s > 0 ? v0->accum_s : -1, &st);
    if (!e && st == WX_OK && v0->accum_s > 0) e = find(c, v0, r->start, 3600, &st);
    if (st != WX_OK) return st;
    if (!e) return not_found(c, v0, r->start);
    wx_grid g = e->f->grid;
    c->fine_buf = wx_malloc(sizeof(float) * (size_t)g.nlat * g.nlon);
    if (r->resolution > 0) {
        WX_TRY(wx_grid_coarse_shape(&g, r->resolution, &g));
    }
    c->out = g;
    c->acc_buf = wx_malloc(sizeof(float) * (size_t)g.nlat * g.nlon);
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
        m->diff_step = 21600;
        c->lag = (int)(m->diff_step % r->step == 0 ? m->diff_step / r->step : 0);
        int n = r->nvars;
        double **arrs[] = {&c->s_n, &c->s_mean, &c->s_m2, &c->d_n, &c->d_mean, &c->d_m2, &c->s_min, &c->s_max};
        for (int a = 0; a < 8; a++) *arrs[a] = wx_calloc((size_t)n, sizeof(double));
        for (int i = 0; i < n; i++) c->s_min[i] = INFINITY, c->s_max[i] = -INFINITY;
        if (c->lag)
            c->ring = wx_calloc((size_t)c->lag * (size_t)n * (size_t)wx_archive_points(m), sizeof(float));
    }
    return WX_OK;
}

static wx_status run(ingest_ctx *c, wx_ingest_opts *o) {
    WX_TRY(setup(c));
    wx_archive_meta *m = &c->meta;
    WX_TRY(wx_mkdir_p(c->r.output));
    remove_stale(c->r.output);
    size_t np = (size_t)wx_archive_points(m), full = (size_t)c->out.nlat * c->out.nlon;
    float *rec = wx_malloc(sizeof(float) * np * (size_t)m->nchan);
    float *chan = wx_malloc(sizeof(float) * full);
    const char *ab = getenv("WX_TEST_ABORT_AFTER_RECORDS");
    c->abort_after = ab ? atoll(ab) : -1;
    wx_progress p;
    wx_progress_start(&p, "ingest", m->count, "records");
    wx_status st = WX_OK;
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
        WX_TRY(wx_shard_writer_open(c->r.output, s, m, &w));
        for (int64_t t = t0; st == WX_OK && t < t1; t++) {
            wx_time vt = m->start + t * m->step;
            for (int v = 0; st == WX_OK && v < m->nchan; v++) {
                /* drop_south_pole keeps the first nlat-1 rows: a prefix of the full field, made
                 * in `chan`; otherwise the channel is decoded in place. */
                st = make_channel(c, v, vt, np == full ? rec + (size_t)v * np : chan);
                if (st == WX_OK && np != full) memcpy(rec + (size_t)v * np, chan, sizeof(float) * np);
            }
            if (st == WX_OK) st = wx_shard_writer_put(w, rec);
            if (st == WX_OK && m->dtype == WX_DTYPE_F16)
                for (size_t k = 0; k < np * (size_t)m->nchan; k++) rec[k] = wx_f16_to_f32(wx_f32_to_f16(rec[k]));
            if (st == WX_OK && m->has_stats) stats_add(c, rec, vt);
            o->records_written++;
            if (c->abort_after >= 0 && o->records_written >= c->abort_after) _exit(3);
            wx_progress_update(&p, t + 1, NULL);
        }
        if (st == WX_OK) st = wx_shard_writer_commit(w);
        else wx_shard_writer_abort(w);
    }
    wx_progress_finish(&p);
    free(rec);
    free(chan);
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
    if (st == WX_OK && m->has_stats && c->r.climatology) {
        char path[8192];
        snprintf(m->climatology, sizeof m->climatology, "climatology.wxc");
        snprintf(path, sizeof path, "%s/%s", c->r.output, m->climatology);
        st = wx_climatology_build(path, m, m->stats_start, m->stats_end, NULL, clim_fetch, c);
    }
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
    free(c.fine_buf);
    free(c.acc_buf);
    free(c.ring);
    double *arrs[] = {c.s_n, c.s_mean, c.s_m2, c.d_n, c.d_mean, c.d_m2, c.s_min, c.s_max};
    for (int a = 0; a < 8; a++) free(arrs[a]);
    wx_archive_meta_free(&c.meta);
    wx_recipe_free(&c.r);
    return st;
}
