/* Archive round trip: records written across several tiny shards read back bit-exactly (float32)
 * or as IEEE binary16 (values chosen exactly representable), in random batches with 1 and 3
 * workers of the persistent pool, with prefetch (and a direct read queued behind it), and with
 * O_DIRECT where the file system allows it. A flipped data byte is caught by verify and by the
 * reader (naming shard and record); a flipped header byte is caught at open; a missing manifest
 * reads as an unfinished ingest. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "io/archive.h"
#include "wx_test.h"

/* Multiples of 1/4 below 2048/4: exact in binary16 too. */
static float value(int64_t t, int c, int p) { return (float)(t * 32 + c * 8 + p % 8) * 0.25f; }

static void make_meta(wx_archive_meta *m, wx_archive_dtype dt) {
    memset(m, 0, sizeof *m);
    m->nchan = 3;
    m->chan = wx_calloc(3, sizeof *m->chan);
    const char *names[] = {"z500", "t850", "t2m"};
    for (int c = 0; c < 3; c++) {
        snprintf(m->chan[c].name, sizeof m->chan[c].name, "%s", names[c]);
        snprintf(m->chan[c].param, sizeof m->chan[c].param, "%s", c == 0 ? "z" : c == 1 ? "t" : "2t");
        m->chan[c].kind = c < 2 ? WX_LEVEL_PRESSURE : WX_LEVEL_SINGLE;
        m->chan[c].level = c == 0 ? 500 : c == 1 ? 850 : 0;
        snprintf(m->chan[c].units, sizeof m->chan[c].units, "K");
    }
    wx_grid_global(10.0, &m->grid); /* 19 x 36 */
    m->start = 1483228800;
    m->step = 21600;
    m->count = 11;
    m->dtype = dt;
    m->key = 0x1234abcdULL;
    m->records_per_shard = 4; /* 3 shards: 4 + 4 + 3 */
}

static int write_archive(const char *dir, wx_archive_meta *m) {
    int64_t vals = m->nchan * wx_archive_points(m);
    float *rec = wx_malloc(sizeof(float) * (size_t)vals);
    int ok = wx_mkdir_p(dir) == WX_OK;
    for (int s = 0; ok && s < wx_archive_shard_count(m); s++) {
        wx_shard_writer *w;
        ok = wx_shard_writer_open(dir, s, m, &w) == WX_OK;
        for (int64_t t = s * m->records_per_shard; ok && t < m->count && t < (s + 1) * m->records_per_shard; t++) {
            for (int c = 0; c < m->nchan; c++)
                for (int p = 0; p < wx_archive_points(m); p++) rec[c * wx_archive_points(m) + p] = value(t, c, p);
            ok = wx_shard_writer_put(w, rec) == WX_OK;
        }
        ok = ok && wx_shard_writer_commit(w) == WX_OK;
    }
    ok = ok && wx_archive_write_manifest(dir, m) == WX_OK;
    free(rec);
    return ok;
}

static void check_batch(wx_archive *a, const int64_t *times, int n, const float *got) {
    const wx_archive_meta *m = wx_archive_meta_of(a);
    int64_t P = wx_archive_points(m), bad = 0;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < m->nchan; c++)
            for (int p = 0; p < P; p++)
                bad += got[(i * m->nchan + c) * P + p] != value(times[i], c, p);
    WX_CHECK(bad == 0, "%lld values differ", (long long)bad);
}

static void flip_byte(const char *path, long off) {
    int fd = open(path, O_RDWR);
    unsigned char b;
    WX_CHECK(pread(fd, &b, 1, off) == 1, "read byte");
    b ^= 0x10;
    WX_CHECK(pwrite(fd, &b, 1, off) == 1, "write byte");
    close(fd);
}

int main(void) {
    char tmp[] = "/tmp/wx_archive_XXXXXX";
    WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    char dir[1024];
    for (int dt = 0; dt < 2; dt++) {
        snprintf(dir, sizeof dir, "%s/a%d", tmp, dt);
        wx_archive_meta m;
        make_meta(&m, dt ? WX_DTYPE_F16 : WX_DTYPE_F32);
        WX_CHECK(write_archive(dir, &m), "write: %s", wx_error_message());
        for (int s = 0; s < 3; s++) WX_CHECK(wx_shard_is_complete(dir, s, &m), "shard %d complete", s);
        wx_archive_meta other = m;
        other.key = 99;
        WX_CHECK(!wx_shard_is_complete(dir, 0, &other), "other key is not complete");
        int64_t times[7] = {10, 0, 5, 5, 3, 8, 1};
        float *got = wx_malloc(sizeof(float) * 7 * 3 * 19 * 36);
        for (int th = 1; th <= 3; th += 2)
            for (int od = 0; od < 2; od++) {
                wx_archive_opts o = {th, 1, od};
                wx_archive *a;
                wx_status st = wx_archive_open(dir, &o, &a);
                if (od && st != WX_OK) { /* tmpfs has no O_DIRECT */
                    WX_CHECK(strstr(wx_error_message(), "O_DIRECT") != NULL, "O_DIRECT message");
                    continue;
                }
                if (!WX_CHECK(st == WX_OK, "open: %s", wx_error_message())) continue;
                const wx_archive_meta *am = wx_archive_meta_of(a);
                WX_CHECK(am->count == 11 && am->nchan == 3 && !strcmp(am->chan[1].name, "t850") &&
                             am->chan[1].level == 850 && am->grid.nlat == 19 && am->step == 21600,
                         "manifest round trip");
                memset(got, 0, sizeof(float) * 7 * 3 * 19 * 36);
                WX_CHECK(wx_archive_read(a, times, 7, got) == WX_OK, "read: %s", wx_error_message());
                check_batch(a, times, 7, got);
                memset(got, 0, sizeof(float) * 7 * 3 * 19 * 36);
                WX_CHECK(wx_archive_prefetch(a, times + 2, 4, got) == WX_OK, "prefetch");
                WX_CHECK(wx_archive_wait(a) == WX_OK, "wait");
                check_batch(a, times + 2, 4, got);
                /* The persistent pool serves a direct read queued behind an in-flight prefetch,
                 * batch after batch. */
                float *got2 = wx_malloc(sizeof(float) * 7 * 3 * 19 * 36);
                int64_t rev[7] = {1, 8, 3, 5, 5, 0, 10};
                for (int it = 0; it < 50; it++) {
                    WX_CHECK(wx_archive_prefetch(a, times, 7, got) == WX_OK, "prefetch %d", it);
                    WX_CHECK(wx_archive_read(a, rev, 7, got2) == WX_OK, "read during prefetch");
                    WX_CHECK(wx_archive_wait(a) == WX_OK, "wait %d", it);
                    if (it == 0 || it == 49) {
                        check_batch(a, times, 7, got);
                        check_batch(a, rev, 7, got2);
                    }
                }
                WX_CHECK(wx_archive_read(a, times, 0, got2) == WX_OK, "empty batch");
                free(got2);
                int64_t badt = 11;
                WX_CHECK(wx_archive_read(a, &badt, 1, got) == WX_ERR_RUN, "index out of range");
                wx_archive_close(a);
            }
        int64_t nrec;
        WX_CHECK(wx_archive_verify(dir, &nrec) == WX_OK && nrec == 11, "verify clean");
        /* Flip one byte inside record 2 of shard 1 (time index 6). */
        char shard[1200];
        snprintf(shard, sizeof shard, "%s/shard-00001.wxr", dir);
        flip_byte(shard, 4096 + 2 * (long)wx_archive_record_stride(&m) + 100);
        WX_CHECK(wx_archive_verify(dir, &nrec) == WX_ERR_RUN && nrec == 6 &&
                     strstr(wx_error_message(), "shard-00001.wxr: record 2") &&
                     strstr(wx_error_message(), "crc32"),
                 "verify names the record: %s", wx_error_message());
        wx_archive *a;
        wx_archive_opts o = {2, 1, 0};
        WX_CHECK(wx_archive_open(dir, &o, &a) == WX_OK, "open");
        int64_t t6 = 6, t7 = 7;
        WX_CHECK(wx_archive_read(a, &t6, 1, got) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "time index 6"), "reader catches it");
        WX_CHECK(wx_archive_read(a, &t7, 1, got) == WX_OK, "neighbour still fine");
        wx_archive_close(a);
        o.check_crc = 0;
        WX_CHECK(wx_archive_open(dir, &o, &a) == WX_OK && wx_archive_read(a, &t6, 1, got) == WX_OK,
                 "crc check can be disabled");
        wx_archive_close(a);
        /* Header byte (record count) flipped: caught at open. */
        snprintf(shard, sizeof shard, "%s/shard-00002.wxr", dir);
        flip_byte(shard, 73);
        WX_CHECK(wx_archive_open(dir, &o, &a) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "shard-00002.wxr: header checksum"),
                 "header damage: %s", wx_error_message());
        WX_CHECK(!wx_shard_is_complete(dir, 2, &m), "damaged shard is not complete");
        free(got);
        wx_archive_meta_free(&m);
    }
    /* f16 conversion edge cases against IEEE binary16 bit patterns. */
    WX_CHECK(wx_f32_to_f16(1.0f) == 0x3c00 && wx_f32_to_f16(-2.0f) == 0xc000 &&
                 wx_f32_to_f16(65504.0f) == 0x7bff && wx_f32_to_f16(1e6f) == 0x7c00 &&
                 wx_f32_to_f16(5.9604645e-8f) == 0x0001 && wx_f32_to_f16(1.0009765625f) == 0x3c01,
             "f16 encode");
    WX_CHECK(wx_f16_to_f32(0x3555) == 0.333251953125f && wx_f16_to_f32(0x0001) == 5.9604645e-8f,
             "f16 decode");
    /* A pole-to-pole grid of 32 rows (spacing 180/31) reads back exactly: stored at %.17g; an
     * archive from before that (9 digits: 5.80645161) gets the exact spacing back on open. */
    {
        wx_archive_meta m;
        make_meta(&m, WX_DTYPE_F32);
        wx_grid_make(32, 8, 90, 180.0 / 31, 0, 45, &m.grid);
        m.count = 2;
        snprintf(dir, sizeof dir, "%s/g31", tmp);
        wx_archive *a;
        char mpath[1200];
        snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
        for (int old = 0; old < 2; old++) {
            if (old) { /* the 9-digit manifest of earlier versions */
                char *text = NULL, *at = NULL;
                size_t len = 0;
                WX_CHECK(wx_read_file(mpath, &text, &len) == WX_OK &&
                             (at = strstr(text, "\"dlat\":")) != NULL, "manifest has dlat");
                FILE *f = fopen(mpath, "w");
                char *end = at ? strchr(at, ',') : NULL;
                if (f && at && end) {
                    fwrite(text, 1, (size_t)(at - text), f);
                    fprintf(f, "\"dlat\":5.80645161%s", end);
                }
                if (f) fclose(f);
                free(text);
            } else {
                WX_CHECK(write_archive(dir, &m), "write 32-row archive: %s", wx_error_message());
            }
            if (WX_CHECK(wx_archive_open(dir, NULL, &a) == WX_OK, "open (%s manifest): %s",
                         old ? "9-digit" : "new", wx_error_message())) {
                const wx_grid *g = &wx_archive_meta_of(a)->grid;
                WX_CHECK(g->dlat == 180.0 / 31 && wx_grid_lat(g, 31) == -90.0,
                         "%s manifest: dlat %.17g, last row %.17g (expected 180/31, -90)",
                         old ? "9-digit" : "new", g->dlat, wx_grid_lat(g, 31));
                wx_archive_close(a);
            }
        }
        wx_archive_meta_free(&m);
    }
    snprintf(dir, sizeof dir, "%s/none", tmp);
    wx_mkdir_p(dir);
    wx_archive *a;
    WX_CHECK(wx_archive_open(dir, NULL, &a) == WX_ERR_RUN && strstr(wx_error_message(), "not finished"),
             "no manifest");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    WX_CHECK(system(cmd) == 0, "cleanup");
    return wx_test_summary();
}
