/* ingest's record batches (ingest_priv.h).
 *
 * Records are made in batches: every (record, channel) of a batch is one task for a few threads
 * (decode into the batch buffer, float16 rounding, crc32 of the channel's bytes), then per-task
 * statistics, then one write of the whole batch. Results do not depend on the thread count: each
 * task's arithmetic is its own, record crc32s are the channel crcs joined with crc32_combine, and
 * statistics are merged in (record, channel) order on one thread. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <omp.h>
#include <zlib.h>

#include "ingest_priv.h"

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

void wx_ingest_batch_init(ingest_batch *b, const wx_archive_meta *m) {
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

void wx_ingest_batch_free(ingest_batch *b) {
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
        for (size_t q = 0; q < np && st == WX_OK; q++) {
            float x = dst[q];
            h[q] = wx_f32_to_f16(x);
            dst[q] = wx_f16_to_f32(h[q]); /* statistics see the stored values */
            /* binary16 ends at 65504: msl or sp in Pa, z above ~500 hPa would be stored as inf */
            if (isinf(dst[q]) && !isinf(x)) {
                char when[40];
                wx_time_format(m->start + (j->t0 + r) * m->step, when);
                st = wx_error_set(WX_ERR_USAGE, "%s: channel %s at %s: value %g (%s) is beyond "
                                  "float16's range (65504) and would be stored as infinity: ingest "
                                  "it with `dtype: float32`", c->r.output, m->chan[v].name, when,
                                  (double)x, m->chan[v].units);
            }
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
    if (!wx_ingest_stats_in(c, t)) return;
    const float *y = NULL;
    if (wx_ingest_stats_diff(c, ti, t))
        y = ti - c->lag >= j->t0 ? b->val + (size_t)(r - c->lag) * (size_t)(b->stride32 / 4) + (size_t)v * np
                                 : c->ring + (size_t)(ti % c->lag) * nrec + (size_t)v * np;
    wx_ingest_stats_compute(b->val + (size_t)r * (size_t)(b->stride32 / 4) + (size_t)v * np, y, np, &b->cs[k]);
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
batch_pool *wx_ingest_pool_start(int nthreads) {
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

void wx_ingest_pool_stop(batch_pool *p) {
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
wx_status wx_ingest_batch_make(ingest_ctx *c, ingest_batch *b, int64_t t0, int64_t nb) {
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
        if (wx_ingest_stats_in(c, m->start + (t0 + k / nch) * m->step)) wx_ingest_stats_merge(c, (int)(k % nch), &b->cs[k]);
    /* The ring keeps the last `lag` records for the next batch's differences. */
    for (int64_t r = nb > c->lag ? nb - c->lag : 0; c->lag > 0 && r < nb; r++)
        memcpy(c->ring + (size_t)((t0 + r) % c->lag) * nrec,
               b->val + (size_t)r * (size_t)(b->stride32 / 4), sizeof(float) * nrec);
    return WX_OK;
}
