/* Shard writer's put_async (the writer thread, O_DIRECT where allowed): shards written with it
 * (batches from two alternating aligned buffers; an unaligned buffer, which takes the buffered
 * path; mixed with put; on ext4 /tmp and on tmpfs /dev/shm, which accepts O_DIRECT since Linux
 * 6.6; forced buffered with WX_ARCHIVE_BUFFERED, which must say why) are byte-identical to the
 * shards put() writes record by record, and verify. A failing write (file size limit) is
 * reported with its records and leaves neither shard nor temporary; so is a failing flush
 * (fdatasync, replaced in this program so that it can be made to fail). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include "core/wx_fs.h"
#include "io/archive.h"
#include "wx_test.h"

/* The writer's flusher thread makes the written records durable with fdatasync; this program's
 * definition takes the place of libc's for the statically linked archive writer, passing through
 * unless a test sets fail_flush. */
static volatile int fail_flush;
int fdatasync(int fd) {
    if (fail_flush) {
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fdatasync, fd);
}

static float value(int64_t t, int c, int p) { return (float)(t * 1000 + c * 100 + p % 97) * 0.5f; }

static void make_meta(wx_archive_meta *m) {
    memset(m, 0, sizeof *m);
    m->nchan = 2;
    m->chan = wx_calloc(2, sizeof *m->chan);
    snprintf(m->chan[0].name, sizeof m->chan[0].name, "t2m");
    snprintf(m->chan[1].name, sizeof m->chan[1].name, "msl");
    wx_grid_global(2.0, &m->grid); /* 91 x 180: a record of 131040 bytes, stride 131072 */
    m->start = 1483228800;
    m->step = 3600;
    m->count = 13;
    m->dtype = WX_DTYPE_F32;
    m->key = 42;
    m->records_per_shard = 7; /* 2 shards: 7 + 6 */
}

static void fill(const wx_archive_meta *m, int64_t t, float *rec) {
    int64_t P = wx_archive_points(m);
    for (int c = 0; c < m->nchan; c++)
        for (int64_t p = 0; p < P; p++) rec[c * P + p] = value(t, c, (int)p);
}

/* mode 0: put only; 1: put_async in batches of 3 from two aligned buffers; 2: the same from an
 * unaligned buffer; 3: put, put_async, put alternating. note: the last buffered note seen. */
static int write_shards(const char *dir, const wx_archive_meta *m, int mode, char *note) {
    int64_t stride = wx_archive_record_stride(m), bytes = wx_archive_record_bytes(m);
    unsigned char *set[2], *raw = NULL;
    for (int k = 0; k < 2; k++) {
        WX_CHECK(posix_memalign((void **)&set[k], 4096, (size_t)(3 * stride) + 4096) == 0, "alloc");
        memset(set[k], 0, (size_t)(3 * stride) + 4096);
    }
    if (mode == 2) raw = set[1] + 8; /* not 4096-aligned */
    float *rec = wx_malloc((size_t)bytes);
    int ok = wx_mkdir_p(dir) == WX_OK, cur = 0;
    note[0] = 0;
    for (int s = 0; ok && s < wx_archive_shard_count(m); s++) {
        wx_shard_writer *w;
        ok = wx_shard_writer_open(dir, s, m, &w) == WX_OK;
        int64_t t0 = s * m->records_per_shard, t1 = t0 + m->records_per_shard;
        if (t1 > m->count) t1 = m->count;
        for (int64_t t = t0; ok && t < t1;) {
            if (mode == 0 || (mode == 3 && t % 2 == 0)) {
                fill(m, t, rec);
                ok = wx_shard_writer_put(w, rec) == WX_OK;
                t++;
                continue;
            }
            int64_t n = t1 - t < 3 ? t1 - t : 3;
            if (mode == 3) n = 1;
            unsigned char *b = mode == 2 ? raw : set[cur];
            uint32_t crc[3];
            for (int64_t i = 0; i < n; i++) {
                fill(m, t + i, (float *)(b + i * stride));
                crc[i] = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b + i * stride, (uInt)bytes);
            }
            ok = wx_shard_writer_put_async(w, b, n, crc) == WX_OK;
            if (mode == 2) ok = ok && wx_shard_writer_wait(w) == WX_OK; /* one buffer only */
            snprintf(note, 160, "%s", wx_shard_writer_buffered_note(w));
            cur ^= 1;
            t += n;
        }
        if (ok) ok = wx_shard_writer_commit(w) == WX_OK;
        else wx_shard_writer_abort(w);
    }
    free(rec);
    free(set[0]);
    free(set[1]);
    return ok;
}

static int same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = NULL, *y = NULL;
    int ok = wx_read_file(a, &x, &nb) == WX_OK && (na = nb, wx_read_file(b, &y, &nb) == WX_OK) &&
             na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return ok;
}

int main(void) {
    signal(SIGXFSZ, SIG_IGN); /* the size-limit case below wants EFBIG, not the signal */
    wx_archive_meta m;
    make_meta(&m);
    char tmp[] = "/tmp/wx_async_XXXXXX", shm[] = "/dev/shm/wx_async_XXXXXX";
    WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp /tmp");
    int have_shm = mkdtemp(shm) != NULL;
    char ref[1200], dir[1200], note[160], a[1400], b[1400];
    snprintf(ref, sizeof ref, "%s/ref", tmp);
    WX_CHECK(write_shards(ref, &m, 0, note), "reference shards written with put");
    const char *names[] = {"", "async", "unaligned", "mixed"};
    for (int fs = 0; fs < 1 + have_shm; fs++)
        for (int mode = 1; mode <= 3; mode++) {
            snprintf(dir, sizeof dir, "%s/%s", fs ? shm : tmp, names[mode]);
            WX_CHECK(write_shards(dir, &m, mode, note), "%s %s: shards written", fs ? "tmpfs" : "ext4",
                     names[mode]);
            for (int s = 0; s < wx_archive_shard_count(&m); s++) {
                char name[64];
                wx_archive_shard_name(s, name, sizeof name);
                snprintf(a, sizeof a, "%s/%s", ref, name);
                snprintf(b, sizeof b, "%s/%s", dir, name);
                WX_CHECK(same_file(a, b), "%s %s: %s identical to put()'s", fs ? "tmpfs" : "ext4",
                         names[mode], name);
            }
            WX_CHECK(wx_archive_write_manifest(dir, &m) == WX_OK, "manifest");
            int64_t n = 0;
            WX_CHECK(wx_archive_verify(dir, &n) == WX_OK && n == m.count, "%s %s: verify (%lld records)",
                     fs ? "tmpfs" : "ext4", names[mode], (long long)n);
            if (mode == 1) printf("%s: put_async %s\n", fs ? "tmpfs" : "ext4", note[0] ? note : "O_DIRECT");
        }
    /* Forced buffered (also what a filesystem refusing O_DIRECT gets): same bytes, and says why. */
    setenv("WX_ARCHIVE_BUFFERED", "1", 1);
    snprintf(dir, sizeof dir, "%s/buffered", tmp);
    WX_CHECK(write_shards(dir, &m, 1, note), "buffered: shards written");
    WX_CHECK(strstr(note, "O_DIRECT not used") != NULL, "buffered: says why ('%s')", note);
    snprintf(a, sizeof a, "%s/shard-00001.wxr", ref);
    snprintf(b, sizeof b, "%s/shard-00001.wxr", dir);
    WX_CHECK(same_file(a, b), "buffered: shard-00001.wxr identical to put()'s");
    unsetenv("WX_ARCHIVE_BUFFERED");
    /* A write beyond the file size limit fails: reported with the record range at the next call
     * or at commit, and no shard file appears. */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)(wx_archive_record_stride(&m) * 3);
    WX_CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    snprintf(dir, sizeof dir, "%s/toolarge", tmp);
    WX_CHECK(!write_shards(dir, &m, 1, note), "a failed write is reported");
    const char *msg = wx_error_message();
    WX_CHECK(strstr(msg, "write of records") && strstr(msg, "shard-00000.wxr"), "message: %s", msg);
    setrlimit(RLIMIT_FSIZE, &old);
    snprintf(a, sizeof a, "%s/shard-00000.wxr", dir);
    struct stat sb;
    WX_CHECK(stat(a, &sb) != 0, "no shard left after the failed write");
    int left = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) left += e->d_name[0] != '.' || strstr(e->d_name, ".tmp.");
    if (d) closedir(d);
    WX_CHECK(left == 0, "no temporary left either (%d files)", left);
    /* A failing flush: reported as a flush with its records, no shard and no temporary left. */
    fail_flush = 1;
    snprintf(dir, sizeof dir, "%s/flushfail", tmp);
    WX_CHECK(!write_shards(dir, &m, 1, note), "a failed flush is reported");
    msg = wx_error_message();
    WX_CHECK(strstr(msg, "flushing records") && strstr(msg, "to disk failed") &&
                 strstr(msg, "shard-00000.wxr") && strstr(msg, strerror(EIO)),
             "flush message: %s", msg);
    fail_flush = 0;
    snprintf(a, sizeof a, "%s/shard-00000.wxr", dir);
    WX_CHECK(stat(a, &sb) != 0, "no shard left after the failed flush");
    left = 0;
    d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) left += e->d_name[0] != '.' || strstr(e->d_name, ".tmp.");
    if (d) closedir(d);
    WX_CHECK(left == 0, "no temporary left after the failed flush (%d files)", left);
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", tmp, have_shm ? shm : "/nonexistent");
    WX_CHECK(system(cmd) == 0, "cleanup");
    wx_archive_meta_free(&m);
    return wx_test_summary();
}
