/* Recipe → archive: match every (channel, valid time) to a source field, decode, regrid, write
 * shards in time order, accumulate statistics in double, write the manifest last.
 *
 * This file plans the archive from the recipe and its sources (grid, channels, shards, key) and
 * runs the shard loop; ingest_fields.c finds and decodes each field, ingest_batch.c makes records
 * a batch at a time on worker threads, ingest_stats.c keeps the statistics and builds the
 * climatology (shared state: ingest_priv.h). */
#include "ingest.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <omp.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "core/wx_progress.h"
#include "ingest_recipe.h"
#include "io/archive.h"
#include "meteo/wx_regrid.h"

#include "ingest_priv.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* keep_manifest: the folder's finished archive is this one (same key), re-checked in place: an
 * interrupted re-check leaves it readable. */
static void remove_stale(const char *dir, int keep_manifest) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, ".shard-", 7) && strstr(e->d_name, ".tmp.")) {
            /* a killed ingest's, at once (a resume right after the kill rewrites that shard,
             * unlike wx_atomic_remove_dead's hour for folders shared between nodes: one archive
             * folder is one machine's ingest); a live one's is left to it */
            if (!wx_fs_pid_gone(strtol(strstr(e->d_name, ".tmp.") + 5, NULL, 10))) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (!keep_manifest) unlink(path);
}

static wx_status setup(ingest_ctx *c) {
    wx_recipe *r = &c->r;
    c->src = wx_calloc((size_t)r->nsources + 1, sizeof *c->src);
    uint64_t key = fnv(1469598103934665603ULL, r->text, strlen(r->text)), legacy = key;
    for (int s = 0; s < r->nsources; s++) {
        WX_TRY(wx_source_open(r->sources[s], &c->src[s]));
        wx_source_check_inputs(c->src[s]);
        struct stat sb;
        /* size and modification time: a source rewritten in place (a corrected ERA5T -> ERA5
         * download has the same grid, packing and size) must not resume onto the old shards */
        uint64_t *chain[2] = {&key, &legacy};
        for (int k = 0; k < 2 && stat(r->sources[s], &sb) == 0; k++) {
            *chain[k] = fnv(*chain[k], &sb.st_size, sizeof sb.st_size);
            *chain[k] = fnv(*chain[k], &sb.st_mtim.tv_sec, sizeof sb.st_mtim.tv_sec);
            *chain[k] = fnv(*chain[k], &sb.st_mtim.tv_nsec, sizeof sb.st_mtim.tv_nsec);
        }
        /* the file, not its spelling: the same recipe run from another folder, or named by an
         * absolute path, is the same archive (archives of older wxcasts hashed the spelling) */
        char real[PATH_MAX];
        const char *id = realpath(r->sources[s], real) ? real : r->sources[s];
        key = fnv(key, id, strlen(id));
        legacy = fnv(legacy, r->sources[s], strlen(r->sources[s]));
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
    if (!e && st == WX_OK && v0->accum_s > 0) e = wx_ingest_find(c, v0, r->start, -1, &st);
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
        /* An accumulation taken as the sources store it: its period is theirs (CDS hourly tp in
         * a 6-hourly archive is 1 h sums, not the step's), recorded so forecasts and dumps say so */
        if (ch->accum_s == 0 && r->vars[i].entry && r->vars[i].entry->accumulated) {
            wx_status fs = WX_OK;
            const ix_entry *fe = wx_ingest_find(c, &r->vars[i], r->start, -1, &fs);
            if (fs != WX_OK) return fs;
            if (fe && fe->f->accum_s > 0) {
                ch->accum_s = fe->f->accum_s;
                if (ch->accum_s != r->step) {
                    char a[32], b[32];
                    wx_time_format_duration(ch->accum_s, a), wx_time_format_duration(r->step, b);
                    wx_log_warn("%s: variable '%s': the sources hold %s sums, stored as they are "
                                "in a %s archive (`accumulate: %s` sums them over the step)",
                                r->path, ch->name, a, b, b);
                }
            }
        }
    }
    m->grid = c->out;
    if (r->drop_south_pole) {
        if (fabs(wx_grid_lat(&c->out, c->out.nlat - 1) + 90) > 1e-6)
            return wx_error_set(WX_ERR_USAGE, "%s: drop_south_pole: the grid's last row is at %g, "
                                "not -90 (a regional or Gaussian grid has no pole row to drop)",
                                r->path, wx_grid_lat(&c->out, c->out.nlat - 1));
        m->grid.nlat--;
    }
    m->start = r->start;
    m->step = r->step;
    m->count = (r->end - r->start) / r->step + 1;
    m->dtype = r->f16 ? WX_DTYPE_F16 : WX_DTYPE_F32;
    m->records_per_shard = wx_archive_records_for_size(m, r->shard_mb * 1048576.0);
    key = fnv(key, &m->records_per_shard, sizeof m->records_per_shard);
    m->key = key;
    c->legacy_key = fnv(legacy, &m->records_per_shard, sizeof m->records_per_shard);
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

/* A shard file name of this format with an index past the archive m's last shard. */
static int stray_shard(const char *fname, void *ctx) {
    const wx_archive_meta *m = ctx;
    int idx = -1, end = 0;
    if (sscanf(fname, "shard-%d.wxr%n", &idx, &end) != 1 || fname[end] || idx < wx_archive_shard_count(m))
        return 0;
    char name[64];
    wx_archive_shard_name(idx, name, sizeof name);
    return !strcmp(name, fname); /* only names this format writes */
}

/* After the manifest: files an earlier ingest into this folder left that this archive does not
 * have (shards past its last one, a climatology.wxc it does not name), so the folder holds one
 * archive and no stale part of another. */
static void remove_leftovers(const char *dir, const wx_archive_meta *m) {
    char path[8300];
    int n = wx_fs_unlink_matching(dir, stray_shard, (void *)m);
    if (n) wx_log_info("ingest: removed %d shards past the last, left by an earlier ingest in %s", n, dir);
    snprintf(path, sizeof path, "%s/climatology.wxc", dir);
    if (strcmp(m->climatology, "climatology.wxc") && unlink(path) == 0)
        wx_log_info("ingest: removed %s, left by an earlier ingest (this archive has none)", path);
}

/* A finished archive in the output folder of another recipe or other sources: its shards would
 * be overwritten from the first record on, so a failed or interrupted run would leave neither
 * archive. Replaced only on --overwrite; the same archive (same key) is resumed/re-checked. */
static wx_status keep_other_archive(const char *dir, wx_archive_meta *m, uint64_t legacy_key,
                                    int overwrite, int *same) {
    *same = 0;
    if (!wx_fs_is_archive_dir(dir)) return WX_OK;
    wx_archive_meta old;
    memset(&old, 0, sizeof old);
    wx_status st = wx_archive_read_manifest(dir, &old);
    uint64_t key = old.key;
    wx_archive_meta_free(&old);
    char why[512] = "";
    if (st != WX_OK) { /* a hand-edited or newer manifest: still an archive someone may want */
        snprintf(why, sizeof why, " (its manifest does not read: %s)", wx_error_message());
        wx_error_clear();
    }
    if (st == WX_OK && key == legacy_key && key != m->key) m->key = key; /* an older wxcast's:
                                                                           * its shards keep */
    *same = st == WX_OK && key == m->key;
    if (*same) return WX_OK;
    if (overwrite) {
        wx_log_warn("ingest: %s: replacing the archive there (another recipe or other sources; "
                    "--overwrite)", dir);
        return WX_OK;
    }
    return wx_error_set(WX_ERR_USAGE, "ingest: %s holds a finished archive of another recipe or "
                        "other sources%s, which this ingest would overwrite: use another output "
                        "folder, or --overwrite to replace it", dir, why);
}

static wx_status run(ingest_ctx *c, wx_ingest_opts *o) {
    WX_TRY(setup(c));
    wx_archive_meta *m = &c->meta;
    WX_TRY(wx_ingest_check_fields(c)); /* before an --overwrite removes the archive there */
    int same;
    WX_TRY(keep_other_archive(c->r.output, m, c->legacy_key, o->overwrite, &same));
    WX_TRY(wx_mkdir_p(c->r.output));
    remove_stale(c->r.output, same);
    size_t np = (size_t)wx_archive_points(m);
    float *rec = wx_malloc(sizeof(float) * np * (size_t)m->nchan);
    ingest_batch b;
    wx_ingest_batch_init(&b, m);
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
                if (m->has_stats) st = wx_ingest_record_read(c, s, t - t0, rec);
                if (st == WX_OK && m->has_stats) wx_ingest_stats_add(c, rec, m->start + t * m->step);
            }
            wx_progress_update(&p, t1, NULL);
            continue;
        }
        wx_shard_writer *w;
        if (!c->pool) c->pool = wx_ingest_pool_start(c->nthreads);
        st = wx_shard_writer_open(c->r.output, s, m, &w);
        if (st != WX_OK) break;
        for (int64_t t = t0, nb; st == WX_OK && t < t1; t += nb) {
            nb = t1 - t < b.cap ? t1 - t : b.cap;
            /* The ingest's first batch: just enough records to give every thread at least one
             * field to decode (not two batches' worth), so that the disk, the slower side from
             * then on, starts a decode earlier. */
            if (!o->records_written && nb > first_cap) nb = first_cap;
            int64_t nw = nb;
            st = wx_ingest_batch_make(c, &b, t, nb);
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
    wx_ingest_pool_stop(c->pool);
    c->pool = NULL;
    free(rec);
    wx_ingest_batch_free(&b);
    if (st == WX_OK && m->has_stats) wx_ingest_stats_finish(c);
    if (st == WX_OK && m->has_stats && c->r.climatology) st = wx_ingest_climatology_make(c, m);
    if (st == WX_OK) st = wx_archive_write_manifest(c->r.output, m);
    if (st == WX_OK) remove_leftovers(c->r.output, m);
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
