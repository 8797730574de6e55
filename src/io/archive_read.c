#define _GNU_SOURCE /* O_DIRECT */
/* Archive reader: batched random reads served by a persistent pool of pread workers (started at
 * open, joined at close), crc32 per record, optional O_DIRECT, background prefetch through the
 * same pool; and whole-archive verification. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/archive.h"
#include "io/archive_priv.h"

typedef struct {
    int fd;
    wx_shard_header h;
    uint64_t *offsets;
    uint32_t *crcs;
    char name[64];
} shard_state;

struct wx_archive {
    char *dir;
    wx_archive_meta meta;
    wx_archive_opts opts;
    int nshards;
    shard_state *shards;
    /* Worker pool: started at open, joined at close; batches queue FIFO (mu guards all). */
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    pthread_t *th;
    int nth, ready, failed, stop, pool_inited;
    struct batch_job *head, *tail;
    /* prefetch: one batch in flight at a time */
    int pf_active;
    int64_t *pf_times;
    struct batch_job *pf_job;
};

static wx_status pool_start(wx_archive *a);
static void pool_stop(wx_archive *a);

static wx_status load_shard(const char *dir, const wx_archive_meta *m, int s, int o_direct,
                            shard_state *out) {
    char path[4096];
    wx_archive_shard_name(s, out->name, sizeof out->name);
    snprintf(path, sizeof path, "%s/%s", dir, out->name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", path, strerror(errno));
    unsigned char hdr[WX_SHARD_HEADER_BYTES];
    wx_status st = WX_OK;
    if (pread(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr || memcmp(hdr, WX_SHARD_MAGIC, 8)) {
        close(fd);
        return wx_error_set(WX_ERR_RUN, "%s: not a wxcast shard (bad magic or short file)", path);
    }
    wx_shard_header_unpack(hdr, &out->h);
    /* The header's own checksum first: a damaged header is damage, not a shard of another
     * manifest (its record count bounds the tables read). */
    uint64_t n = out->h.record_count;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return wx_error_set(WX_ERR_RUN, "%s: cannot stat: %s", path, strerror(errno));
    }
    if (n > ((uint64_t)sb.st_size - WX_SHARD_HEADER_BYTES) / 12) {
        close(fd);
        return wx_error_set(WX_ERR_RUN, "%s: header damaged (record count %llu does not fit a "
                            "file of %lld bytes); rerun `wxcast ingest` to rewrite it", path,
                            (unsigned long long)n, (long long)sb.st_size);
    }
    out->offsets = wx_calloc(n + 1, 8);
    out->crcs = wx_calloc(n + 1, 4);
    if (pread(fd, out->offsets, 8 * n, WX_SHARD_HEADER_BYTES) != (ssize_t)(8 * n) ||
        pread(fd, out->crcs, 4 * n, WX_SHARD_HEADER_BYTES + 8 * n) != (ssize_t)(4 * n))
        st = wx_error_set(WX_ERR_RUN, "%s: tables truncated", path);
    else if (wx_shard_header_crc(hdr, out->offsets, out->crcs, n) != out->h.header_crc)
        st = wx_error_set(WX_ERR_RUN, "%s: header checksum mismatch (header or tables damaged)", path);
    wx_shard_header exp;
    wx_shard_expected(m, s, &exp);
    /* name the first field that differs: the shard was written for another manifest */
    static const char *const field[] = {"record count", "record bytes", "first record",
                                        "key (recipe and sources)", "record stride",
                                        "data offset"};
    const uint64_t got[] = {out->h.record_count, out->h.record_bytes, out->h.first_record,
                            out->h.key, out->h.record_stride, out->h.data_offset};
    const uint64_t want_h[] = {exp.record_count, exp.record_bytes, exp.first_record, exp.key,
                               exp.record_stride, exp.data_offset};
    for (int k = 0; k < 6 && st == WX_OK; k++)
        if (got[k] != want_h[k])
            st = wx_error_set(WX_ERR_RUN, "%s: header does not match manifest.json: %s %llu in "
                              "the shard, %llu from the manifest (%d channels, %dx%d grid); was "
                              "manifest.json edited or replaced?", path, field[k],
                              (unsigned long long)got[k], (unsigned long long)want_h[k], m->nchan,
                              m->grid.nlat, m->grid.nlon);
    /* archive-format.md: the file is exactly data_offset + N·record_stride; anything else was cut
     * short or written to after ingest */
    uint64_t want = out->h.data_offset + n * out->h.record_stride;
    if (st == WX_OK && (uint64_t)sb.st_size != want)
        st = wx_error_set(WX_ERR_RUN, "%s: file is %lld bytes, expected %llu (%llu records of %llu "
                          "after %llu header bytes): truncated or appended to; rerun `wxcast "
                          "ingest` to rewrite it", path, (long long)sb.st_size,
                          (unsigned long long)want, (unsigned long long)n,
                          (unsigned long long)out->h.record_stride,
                          (unsigned long long)out->h.data_offset);
    for (uint64_t i = 0; st == WX_OK && i < n; i++)
        if (out->offsets[i] % WX_ARCHIVE_ALIGN || out->offsets[i] < out->h.data_offset)
            st = wx_error_set(WX_ERR_RUN, "%s: record %llu offset %llu is not aligned", path,
                              (unsigned long long)i, (unsigned long long)out->offsets[i]);
    if (st == WX_OK && o_direct) {
        close(fd);
        fd = open(path, O_RDONLY | O_DIRECT);
        if (fd < 0)
            st = wx_error_set(WX_ERR_RUN, "%s: O_DIRECT open failed (%s); the file system may not "
                              "support it: read without O_DIRECT", path, strerror(errno));
    }
    out->fd = fd;
    return st;
}

wx_status wx_archive_open(const char *dir, const wx_archive_opts *opts, wx_archive **out) {
    *out = NULL;
    wx_archive *a = wx_calloc(1, sizeof *a);
    a->dir = wx_strdup(dir);
    a->opts = opts ? *opts : (wx_archive_opts){4, 1, 0};
    if (a->opts.threads < 1) a->opts.threads = 1;
    if (a->opts.threads > 64) a->opts.threads = 64;
    wx_status st = wx_archive_read_manifest(dir, &a->meta);
    if (st == WX_OK) {
        a->nshards = wx_archive_shard_count(&a->meta);
        a->shards = wx_calloc((size_t)a->nshards, sizeof *a->shards);
        for (int s = 0; s < a->nshards; s++) a->shards[s].fd = -1;
        for (int s = 0; s < a->nshards && st == WX_OK; s++)
            st = load_shard(dir, &a->meta, s, a->opts.o_direct, &a->shards[s]);
    }
    if (st == WX_OK) st = pool_start(a);
    if (st != WX_OK) {
        wx_archive_close(a);
        return st;
    }
    *out = a;
    return WX_OK;
}

void wx_archive_close(wx_archive *a) {
    if (!a) return;
    if (a->pf_active) wx_archive_wait(a);
    pool_stop(a);
    free(a->pf_job);
    free(a->pf_times);
    for (int s = 0; s < a->nshards; s++) {
        if (a->shards[s].fd >= 0) close(a->shards[s].fd);
        free(a->shards[s].offsets);
        free(a->shards[s].crcs);
    }
    free(a->shards);
    wx_archive_meta_free(&a->meta);
    free(a->dir);
    free(a);
}

const wx_archive_meta *wx_archive_meta_of(const wx_archive *a) { return &a->meta; }

/* One record into `out` (float32), through the aligned bounce buffer `buf` [stride]. */
static wx_status read_record(wx_archive *a, int64_t t, unsigned char *buf, float *out, char *err,
                             size_t errlen) {
    const wx_archive_meta *m = &a->meta;
    if (t < 0 || t >= m->count) {
        snprintf(err, errlen, "%s: time index %lld outside 0..%lld", a->dir, (long long)t,
                 (long long)m->count - 1);
        return WX_ERR_RUN;
    }
    shard_state *s = &a->shards[t / m->records_per_shard];
    uint64_t r = (uint64_t)(t % m->records_per_shard);
    size_t stride = (size_t)s->h.record_stride, got = 0;
    while (got < stride) {
        ssize_t k = pread(s->fd, buf + got, stride - got, (off_t)(s->offsets[r] + got));
        if (k <= 0) {
            snprintf(err, errlen, "%s/%s: record %llu: read failed (%s)", a->dir, s->name,
                     (unsigned long long)r, k == 0 ? "file truncated" : strerror(errno));
            return WX_ERR_RUN;
        }
        got += (size_t)k;
    }
    if (a->opts.check_crc &&
        wx_archive_crc32(0, buf, (size_t)s->h.record_bytes) != s->crcs[r]) {
        snprintf(err, errlen, "%s/%s: record %llu (time index %lld): crc32 mismatch, the data is "
                 "damaged", a->dir, s->name, (unsigned long long)r, (long long)t);
        return WX_ERR_RUN;
    }
    size_t nval = (size_t)(wx_archive_record_bytes(m) / (m->dtype == WX_DTYPE_F16 ? 2 : 4));
    if (m->dtype == WX_DTYPE_F16) {
        const uint16_t *h = (const uint16_t *)buf;
        for (size_t k = 0; k < nval; k++) out[k] = wx_f16_to_f32(h[k]);
    } else {
        memcpy(out, buf, nval * 4);
    }
    return WX_OK;
}

/* A batch handed to the worker pool. Items are claimed one at a time under the pool mutex; the
 * submitter sleeps on done_cv until every item of its own batch has been read. */
typedef struct batch_job {
    const int64_t *times;
    int n;
    float *out;
    int next;       /* next item to claim */
    int done;       /* items finished */
    int first_bad;  /* lowest failing item, n when none */
    char msg[1024];
    struct batch_job *link; /* FIFO of submitted batches */
} batch_job;

static void *worker(void *arg) {
    wx_archive *a = arg;
    const wx_archive_meta *m = &a->meta;
    size_t vals = (size_t)m->nchan * (size_t)wx_archive_points(m);
    unsigned char *buf = NULL;
    char err[1024];
    pthread_mutex_lock(&a->mu);
    /* The buffer is allocated inside the lock so open() can tell the pool is usable. */
    if (posix_memalign((void **)&buf, WX_ARCHIVE_ALIGN, (size_t)wx_archive_record_stride(m)))
        buf = NULL;
    a->ready += buf != NULL;
    a->failed += buf == NULL;
    pthread_cond_broadcast(&a->done_cv);
    while (buf) {
        while (!a->stop && !a->head) pthread_cond_wait(&a->work_cv, &a->mu);
        if (!a->head) break; /* stop requested and nothing queued */
        batch_job *j = a->head;
        int i = j->next++;
        if (j->next >= j->n) { /* last item claimed: the next batch may start */
            a->head = j->link;
            if (!a->head) a->tail = NULL;
        }
        pthread_mutex_unlock(&a->mu);
        wx_status st = read_record(a, j->times[i], buf, j->out + (size_t)i * vals, err, sizeof err);
        pthread_mutex_lock(&a->mu);
        /* Report the first failing item of the batch, whichever worker saw it first. */
        if (st != WX_OK && i < j->first_bad) {
            j->first_bad = i;
            snprintf(j->msg, sizeof j->msg, "%s", err);
        }
        if (++j->done == j->n) pthread_cond_broadcast(&a->done_cv);
    }
    pthread_mutex_unlock(&a->mu);
    free(buf);
    return NULL;
}

static wx_status pool_start(wx_archive *a) {
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work_cv, NULL);
    pthread_cond_init(&a->done_cv, NULL);
    a->pool_inited = 1;
    a->th = wx_calloc((size_t)a->opts.threads, sizeof *a->th);
    for (int k = 0; k < a->opts.threads; k++) {
        if (pthread_create(&a->th[k], NULL, worker, a) != 0) break;
        a->nth++;
    }
    pthread_mutex_lock(&a->mu);
    while (a->ready + a->failed < a->nth) pthread_cond_wait(&a->done_cv, &a->mu);
    int ready = a->ready;
    pthread_mutex_unlock(&a->mu);
    if (ready == 0)
        return wx_error_set(WX_ERR_RUN, "%s: cannot start any reader thread or allocate its "
                            "%lld-byte buffer", a->dir, (long long)wx_archive_record_stride(&a->meta));
    return WX_OK;
}

static void pool_stop(wx_archive *a) {
    if (!a->pool_inited) return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->work_cv);
    pthread_mutex_unlock(&a->mu);
    for (int k = 0; k < a->nth; k++) pthread_join(a->th[k], NULL);
    free(a->th);
    pthread_cond_destroy(&a->work_cv);
    pthread_cond_destroy(&a->done_cv);
    pthread_mutex_destroy(&a->mu);
    a->pool_inited = 0;
}

static void submit(wx_archive *a, batch_job *j) {
    j->next = j->done = 0;
    j->first_bad = j->n;
    j->msg[0] = 0;
    j->link = NULL;
    if (j->n == 0) return;
    pthread_mutex_lock(&a->mu);
    if (a->tail) a->tail->link = j;
    else a->head = j;
    a->tail = j;
    pthread_cond_broadcast(&a->work_cv);
    pthread_mutex_unlock(&a->mu);
}

static wx_status finish(wx_archive *a, batch_job *j) {
    pthread_mutex_lock(&a->mu);
    while (j->done < j->n) pthread_cond_wait(&a->done_cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    if (j->first_bad < j->n) return wx_error_set(WX_ERR_RUN, "%s", j->msg);
    return WX_OK;
}

wx_status wx_archive_read(wx_archive *a, const int64_t *times, int n, float *out) {
    batch_job j = {.times = times, .n = n, .out = out};
    submit(a, &j);
    return finish(a, &j);
}

wx_status wx_archive_prefetch(wx_archive *a, const int64_t *times, int n, float *out) {
    if (a->pf_active) WX_TRY(wx_archive_wait(a));
    batch_job *j = a->pf_job ? a->pf_job : (a->pf_job = wx_calloc(1, sizeof *a->pf_job));
    free(a->pf_times);
    a->pf_times = wx_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    memcpy(a->pf_times, times, sizeof(int64_t) * (size_t)n);
    j->times = a->pf_times;
    j->n = n;
    j->out = out;
    submit(a, j);
    a->pf_active = 1;
    return WX_OK;
}

wx_status wx_archive_wait(wx_archive *a) {
    if (!a->pf_active) return WX_OK;
    a->pf_active = 0;
    wx_status st = finish(a, a->pf_job);
    free(a->pf_times);
    a->pf_times = NULL;
    return st;
}

wx_status wx_archive_verify(const char *dir, int64_t *records_checked) {
    return wx_archive_verify_each(dir, records_checked, NULL, NULL);
}

wx_status wx_archive_verify_each(const char *dir, int64_t *records_checked,
                                 void (*each)(void *ctx, int64_t index, const float *rec), void *ctx) {
    *records_checked = 0;
    wx_archive_opts o = {1, 1, 0};
    wx_archive *a;
    WX_TRY(wx_archive_open(dir, &o, &a));
    const wx_archive_meta *m = &a->meta;
    size_t vals = (size_t)m->nchan * (size_t)wx_archive_points(m);
    float *rec = wx_malloc(sizeof(float) * vals);
    unsigned char *buf = NULL;
    wx_status st = WX_OK;
    if (posix_memalign((void **)&buf, WX_ARCHIVE_ALIGN, (size_t)wx_archive_record_stride(m)))
        st = wx_error_set(WX_ERR_RUN, "out of memory");
    char err[1024];
    for (int64_t t = 0; st == WX_OK && t < m->count; t++) {
        if (read_record(a, t, buf, rec, err, sizeof err) != WX_OK) st = wx_error_set(WX_ERR_RUN, "%s", err);
        else (*records_checked)++;
        if (st == WX_OK && each) each(ctx, t, rec);
    }
    free(buf);
    free(rec);
    wx_archive_close(a);
    return st;
}
