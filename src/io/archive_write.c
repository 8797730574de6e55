/* Shard writer (io/archive.h, docs/archive-format.md).
 *
 * put / put_raw write through the temporary's stdio stream as before. put_async hands a batch to
 * the writer's own thread, which writes it with pwrite at its record offsets, through a second
 * descriptor opened with O_DIRECT when the filesystem accepts it: the bytes go from the caller's
 * aligned buffer to the disk without the kernel copying them into the page cache (a quarter of
 * ingest's CPU time when written buffered), while the caller prepares the next batch. One write
 * is in flight at a time, so the caller needs only two buffers. A second thread fdatasyncs what
 * has been written so far, while the writer goes on with the next batch, so the disk's cache
 * flush overlaps both the caller's next batch and the next write instead of piling up into the
 * commit's fsync (flushing after each write on the writer thread kept the disk's transfer and its
 * flush in series: 12 writes of 16.6 MB took 0.50-0.54 s that way against 0.41-0.48 s with the
 * flush beside them, docs/benchmarks.md). Durability is unchanged: commit waits for both threads,
 * then fflush + fsync of the temporary (which covers both descriptors: fsync is per inode) +
 * rename + fsync of the folder. */
#define _GNU_SOURCE /* O_DIRECT, sync_file_range */
#include "io/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "io/archive_priv.h"

struct wx_shard_writer {
    wx_atomic_file f;
    wx_shard_header h;
    uint64_t put;
    uint64_t *offsets;
    uint32_t *crcs;
    unsigned char *buf; /* [stride] */
    const wx_archive_meta *m;
    /* put_async: the threads, the one queued job and the first error met. */
    int thread_on, dfd, stream_stale;
    pthread_t thread, flusher;
    int flusher_on;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const unsigned char *job; /* NULL: nothing queued */
    size_t job_bytes;
    uint64_t job_first, job_n;
    int busy, quit, err;
    int err_flush;  /* err came from a flush (fdatasync), not from a write */
    int abandon;    /* with quit: the file is going away, flush nothing more */
    uint64_t err_first, err_n;
    uint64_t written, flushed; /* records [0, written) are written, [0, flushed) flushed too */
    char note[160];      /* why writes are buffered, "" while O_DIRECT works (thread side) */
    char note_seen[160]; /* the caller's copy, taken under mu */
};

static wx_status drain(wx_shard_writer *w);

wx_status wx_shard_writer_open(const char *dir, int shard, const wx_archive_meta *m,
                               wx_shard_writer **out) {
    char name[64], path[4096];
    wx_archive_shard_name(shard, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    wx_shard_writer *w = wx_calloc(1, sizeof *w);
    w->m = m;
    w->dfd = -1;
    wx_shard_expected(m, shard, &w->h);
    wx_status st = wx_atomic_open(&w->f, path);
    if (st != WX_OK) {
        free(w);
        return st;
    }
    w->offsets = wx_calloc(w->h.record_count + 1, 8);
    w->crcs = wx_calloc(w->h.record_count + 1, 4);
    w->buf = wx_calloc((size_t)w->h.record_stride, 1);
    /* Placeholder header and tables (rewritten at commit), zero padding up to data_offset. */
    unsigned char *zero = wx_calloc((size_t)w->h.data_offset, 1);
    if (fwrite(zero, 1, (size_t)w->h.data_offset, w->f.fp) != w->h.data_offset)
        st = wx_error_set(WX_ERR_RUN, "%s: write failed: %s", path, strerror(errno));
    free(zero);
    if (st != WX_OK) {
        wx_shard_writer_abort(w);
        return st;
    }
    *out = w;
    return WX_OK;
}

/* put/put_raw append at the stream position; after put_async wrote around the stream, put it at
 * the next record first. */
static int stream_at_next(wx_shard_writer *w) {
    if (!w->stream_stale) return 1;
    w->stream_stale = 0;
    return fseeko(w->f.fp, (off_t)(w->h.data_offset + w->put * w->h.record_stride), SEEK_SET) == 0;
}

wx_status wx_shard_writer_put(wx_shard_writer *w, const float *record) {
    WX_ASSERT(w->put < w->h.record_count);
    WX_TRY(drain(w));
    size_t nval = (size_t)(w->h.record_bytes / (w->h.dtype == WX_DTYPE_F16 ? 2 : 4));
    size_t bytes = (size_t)w->h.record_bytes, pad = (size_t)(w->h.record_stride - w->h.record_bytes);
    /* float32 records go out as they are (no copy), followed by zero padding from buf, which
     * stays zeroed on this path; float16 ones are converted into buf, padding included. */
    const unsigned char *data = (const unsigned char *)record;
    if (w->h.dtype == WX_DTYPE_F16) {
        uint16_t *d = (uint16_t *)w->buf;
        for (size_t k = 0; k < nval; k++) d[k] = wx_f32_to_f16(record[k]);
        data = w->buf;
        bytes += pad;
        pad = 0;
    }
    w->offsets[w->put] = w->h.data_offset + w->put * w->h.record_stride;
    w->crcs[w->put] = wx_archive_crc32(0, data, (size_t)w->h.record_bytes);
    if (!stream_at_next(w) || fwrite(data, 1, bytes, w->f.fp) != bytes ||
        (pad && fwrite(w->buf + w->h.record_bytes, 1, pad, w->f.fp) != pad))
        return wx_error_set(WX_ERR_RUN, "%s: write of record %llu failed: %s", w->f.path,
                            (unsigned long long)w->put, strerror(errno));
    w->put++;
    return WX_OK;
}

static void record_tables(wx_shard_writer *w, int64_t n, const uint32_t *crcs) {
    for (int64_t k = 0; k < n; k++) {
        w->offsets[w->put + (uint64_t)k] = w->h.data_offset + (w->put + (uint64_t)k) * w->h.record_stride;
        w->crcs[w->put + (uint64_t)k] = crcs[k];
    }
}

wx_status wx_shard_writer_put_raw(wx_shard_writer *w, const void *records, int64_t n,
                                  const uint32_t *crcs) {
    WX_ASSERT(n >= 0 && w->put + (uint64_t)n <= w->h.record_count);
    WX_TRY(drain(w));
    record_tables(w, n, crcs);
    size_t bytes = (size_t)n * (size_t)w->h.record_stride;
    if (n && (!stream_at_next(w) || fwrite(records, 1, bytes, w->f.fp) != bytes))
        return wx_error_set(WX_ERR_RUN, "%s: write of records %llu..%llu failed: %s", w->f.path,
                            (unsigned long long)w->put, (unsigned long long)(w->put + (uint64_t)n - 1),
                            strerror(errno));
    /* Start writing these pages back now, so the fsync at commit finds little left to do and
     * the disk works while the next batch is decoded. Only a hint: errors surface at fsync. */
    if (n && fflush(w->f.fp) == 0)
        sync_file_range(fileno(w->f.fp), (off64_t)(w->h.data_offset + w->put * w->h.record_stride),
                        (off64_t)bytes, SYNC_FILE_RANGE_WRITE);
    w->put += (uint64_t)n;
    return WX_OK;
}

/* Writes bytes at off through the O_DIRECT descriptor while the buffer, offset and length allow
 * it and the filesystem accepts it, else through the buffered one. 0 or an errno. */
static int write_at(wx_shard_writer *w, const unsigned char *p, size_t bytes, off_t off) {
    int bfd = fileno(w->f.fp);
    while (bytes) {
        int direct = w->dfd >= 0 && (uintptr_t)p % WX_ARCHIVE_ALIGN == 0 &&
                     bytes % WX_ARCHIVE_ALIGN == 0 && off % WX_ARCHIVE_ALIGN == 0;
        ssize_t k = pwrite(direct ? w->dfd : bfd, p, bytes, off);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && direct && errno == EINVAL) {
            /* Opened, but refused at write time (some filesystems do): buffered from now on. */
            snprintf(w->note, sizeof w->note, "O_DIRECT write refused (%s)", strerror(errno));
            close(w->dfd);
            w->dfd = -1;
            continue;
        }
        if (k <= 0) return k < 0 ? errno : EIO;
        if (!direct)
            sync_file_range(bfd, (off64_t)off, (off64_t)k, SYNC_FILE_RANGE_WRITE);
        p += k, bytes -= (size_t)k, off += k;
    }
    return 0;
}

static void *writer_main(void *arg) {
    wx_shard_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->job && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->job) break;
        const unsigned char *p = w->job;
        size_t bytes = w->job_bytes;
        uint64_t first = w->job_first, n = w->job_n;
        int failed = w->err;
        pthread_mutex_unlock(&w->mu);
        /* After a failure the shard is abandoned: later batches are not written. */
        int e = failed ? 0 : write_at(w, p, bytes, (off_t)(w->h.data_offset + first * w->h.record_stride));
        pthread_mutex_lock(&w->mu);
        if (e && !w->err) w->err = e, w->err_first = first, w->err_n = n;
        if (!e && !failed) w->written = first + n; /* batches are queued in record order */
        w->job = NULL;
        w->busy = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Makes the written records durable while the writer writes the next ones. An O_DIRECT write
 * ends in the disk's volatile cache (write-back on virtual disks): left to the commit's fsync,
 * that flush is a serial tail of ~0.3 s per 200 MB here. The buffered descriptor is the one
 * synced (fsync is per inode; the writer may close the O_DIRECT one). A failure counts against
 * the records this flush covered: fsync would report it only once. Quits once told to and
 * nothing written is left unflushed; at once after an error, or when the file is abandoned
 * (abort, or a commit that already failed), whose data nobody will read. */
static void *flusher_main(void *arg) {
    wx_shard_writer *w = arg;
    int fd = fileno(w->f.fp);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->flushed >= w->written && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (w->flushed >= w->written || w->err || w->abandon) break;
        uint64_t from = w->flushed, to = w->written;
        pthread_mutex_unlock(&w->mu);
        int se = fdatasync(fd) ? errno : 0;
        pthread_mutex_lock(&w->mu);
        if (se && se != EINVAL && se != EROFS && !w->err)
            w->err = se, w->err_flush = 1, w->err_first = from, w->err_n = to - from;
        w->flushed = to;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static wx_status err_status(const wx_shard_writer *w, int e, uint64_t a, uint64_t n) {
    if (!e) return WX_OK;
    /* A flush covers whatever reached the file: when writes fell back to buffered that may
     * include pages of the write in progress, hence "or later". */
    if (w->err_flush)
        return wx_error_set(WX_ERR_RUN, "%s: flushing records %llu..%llu (or later) to disk "
                            "failed: %s", w->f.path, (unsigned long long)a,
                            (unsigned long long)(a + n - 1), strerror(e));
    return wx_error_set(WX_ERR_RUN, "%s: write of records %llu..%llu failed: %s", w->f.path,
                        (unsigned long long)a, (unsigned long long)(a + n - 1), strerror(e));
}

/* Waits for the queued write; its error (or an earlier one, or a flush's) as a status. */
static wx_status drain(wx_shard_writer *w) {
    if (!w->thread_on) return WX_OK;
    pthread_mutex_lock(&w->mu);
    while (w->busy) pthread_cond_wait(&w->cv, &w->mu);
    int e = w->err;
    uint64_t a = w->err_first, n = w->err_n;
    memcpy(w->note_seen, w->note, sizeof w->note);
    pthread_mutex_unlock(&w->mu);
    return err_status(w, e, a, n);
}

static wx_status start_thread(wx_shard_writer *w) {
    /* The placeholder is still in the stream's buffer: out before pwrite touches the file. */
    if (fflush(w->f.fp) != 0)
        return wx_error_set(WX_ERR_RUN, "%s: write failed: %s", w->f.path, strerror(errno));
    /* WX_ARCHIVE_BUFFERED=1 keeps writes in the page cache (a filesystem where O_DIRECT is
     * accepted but slow; tests of the buffered path). */
    const char *env = getenv("WX_ARCHIVE_BUFFERED");
    if (env && env[0] && strcmp(env, "0")) {
        snprintf(w->note, sizeof w->note, "O_DIRECT not used (WX_ARCHIVE_BUFFERED=%s)", env);
    } else {
        w->dfd = open(w->f.tmp, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (w->dfd < 0)
            snprintf(w->note, sizeof w->note, "the filesystem refuses O_DIRECT (%s)", strerror(errno));
    }
    memcpy(w->note_seen, w->note, sizeof w->note);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w)) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        if (w->dfd >= 0) close(w->dfd);
        w->dfd = -1;
        return wx_error_set(WX_ERR_RUN, "%s: cannot start the writer thread", w->f.path);
    }
    w->thread_on = 1;
    /* Without the flusher the commit's fsync does all the flushing: slower, same bytes. */
    w->flusher_on = pthread_create(&w->flusher, NULL, flusher_main, w) == 0;
    return WX_OK;
}

/* Stops both threads; abandon: the file is going away, so the flusher stops without flushing. */
static void stop_thread(wx_shard_writer *w, int abandon) {
    if (!w->thread_on) return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    w->abandon = abandon;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    if (w->flusher_on) pthread_join(w->flusher, NULL);
    w->flusher_on = 0;
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    w->thread_on = 0;
    if (w->dfd >= 0) close(w->dfd);
    w->dfd = -1;
}

wx_status wx_shard_writer_put_async(wx_shard_writer *w, const void *records, int64_t n,
                                    const uint32_t *crcs) {
    WX_ASSERT(n >= 0 && w->put + (uint64_t)n <= w->h.record_count);
    if (!w->thread_on) WX_TRY(start_thread(w));
    WX_TRY(drain(w));
    /* Records put through the stream before must reach the file before this batch's. */
    if (fflush(w->f.fp) != 0)
        return wx_error_set(WX_ERR_RUN, "%s: write failed: %s", w->f.path, strerror(errno));
    record_tables(w, n, crcs);
    if (n) {
        pthread_mutex_lock(&w->mu);
        w->job = records;
        w->job_bytes = (size_t)n * (size_t)w->h.record_stride;
        w->job_first = w->put, w->job_n = (uint64_t)n;
        w->busy = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    w->put += (uint64_t)n;
    w->stream_stale = 1;
    return WX_OK;
}

wx_status wx_shard_writer_wait(wx_shard_writer *w) { return drain(w); }

const char *wx_shard_writer_buffered_note(const wx_shard_writer *w) { return w->note_seen; }

static void writer_free(wx_shard_writer *w) {
    free(w->offsets);
    free(w->crcs);
    free(w->buf);
    free(w);
}

wx_status wx_shard_writer_commit(wx_shard_writer *w) {
    WX_ASSERT(w->put == w->h.record_count);
    wx_status st = drain(w);
    stop_thread(w, st != WX_OK); /* the flusher's last flush included: its error counts too */
    if (st == WX_OK) st = err_status(w, w->err, w->err_first, w->err_n);
    if (st != WX_OK) {
        wx_atomic_abort(&w->f);
        writer_free(w);
        return st;
    }
    unsigned char hdr[WX_SHARD_HEADER_BYTES];
    wx_shard_header_pack(&w->h, hdr);
    w->h.header_crc = wx_shard_header_crc(hdr, w->offsets, w->crcs, w->h.record_count);
    wx_shard_header_pack(&w->h, hdr);
    if (fseeko(w->f.fp, 0, SEEK_SET) || fwrite(hdr, 1, sizeof hdr, w->f.fp) != sizeof hdr ||
        fwrite(w->offsets, 8, w->h.record_count, w->f.fp) != w->h.record_count ||
        fwrite(w->crcs, 4, w->h.record_count, w->f.fp) != w->h.record_count) {
        st = wx_error_set(WX_ERR_RUN, "%s: writing the shard tables failed: %s", w->f.path,
                          strerror(errno));
        wx_atomic_abort(&w->f);
    } else {
        st = wx_atomic_commit(&w->f);
    }
    writer_free(w);
    return st;
}

void wx_shard_writer_abort(wx_shard_writer *w) {
    if (!w) return;
    if (w->thread_on) {
        pthread_mutex_lock(&w->mu);
        while (w->busy) pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
    stop_thread(w, 1);
    wx_atomic_abort(&w->f);
    writer_free(w);
}

int wx_shard_is_complete(const char *dir, int shard, const wx_archive_meta *m) {
    char name[64], path[4096];
    wx_archive_shard_name(shard, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    wx_shard_header exp, got;
    wx_shard_expected(m, shard, &exp);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char hdr[WX_SHARD_HEADER_BYTES];
    int ok = fread(hdr, 1, sizeof hdr, f) == sizeof hdr && !memcmp(hdr, WX_SHARD_MAGIC, 8);
    if (ok) {
        wx_shard_header_unpack(hdr, &got);
        ok = got.version == exp.version && got.dtype == exp.dtype &&
             got.record_count == exp.record_count && got.record_bytes == exp.record_bytes &&
             got.first_record == exp.first_record && got.key == exp.key &&
             got.data_offset == exp.data_offset;
    }
    if (ok) {
        uint64_t *off = wx_calloc(got.record_count + 1, 8);
        uint32_t *crc = wx_calloc(got.record_count + 1, 4);
        ok = fread(off, 8, got.record_count, f) == got.record_count &&
             fread(crc, 4, got.record_count, f) == got.record_count &&
             wx_shard_header_crc(hdr, off, crc, got.record_count) == got.header_crc;
        free(off);
        free(crc);
        int64_t size = 0;
        ok = ok && !fseeko(f, 0, SEEK_END) &&
             (size = ftello(f)) == (int64_t)(got.data_offset + got.record_count * got.record_stride);
    }
    fclose(f);
    return ok;
}
