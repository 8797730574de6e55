/* Core utilities: Philox RNG against the Random123 known-answer vectors and distribution
 * moments, permutations, checkpointable RNG state, atomic files, and JSON escaping. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"
#include "core/wx_log.h"
#include "core/wx_metrics.h"
#include "core/wx_progress.h"
#include "core/wx_rng.h"
#include "wx_test.h"

/* Random123 tests/kat_vectors, the three "philox4x32 10" lines: ctr[4] key[2] -> out[4]. */
static const uint32_t kat[3][10] = {
    {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
     0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
     0x94fdcceb, 0x5001e420, 0x24126ea1},
};

static void test_philox_kat(void) {
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        wx_philox4x32_10(kat[v], kat[v] + 4, out);
        WX_CHECK(!memcmp(out, kat[v] + 6, sizeof out), "philox KAT %d: %08x %08x %08x %08x", v,
                 out[0], out[1], out[2], out[3]);
        /* The same block through the stream API: counter = ctr[0..1], stream = ctr[2..3]. */
        wx_rng r;
        wx_rng_init(&r, (uint64_t)kat[v][5] << 32 | kat[v][4], (uint64_t)kat[v][3] << 32 | kat[v][2]);
        r.counter = (uint64_t)kat[v][1] << 32 | kat[v][0];
        int ok = 1;
        for (int i = 0; i < 4; i++) ok &= wx_rng_u32(&r) == kat[v][6 + i];
        WX_CHECK(ok, "stream API reproduces KAT %d", v);
    }
}

static void test_rng_determinism(void) {
    wx_rng a, b, c;
    wx_rng_init(&a, 1234, 1);
    wx_rng_init(&b, 1234, 1);
    wx_rng_init(&c, 1234, 2);
    int same = 1, diff = 0;
    for (int i = 0; i < 1000; i++) {
        uint32_t x = wx_rng_u32(&a), y = wx_rng_u32(&b), z = wx_rng_u32(&c);
        same &= x == y;
        diff += x != z;
    }
    WX_CHECK(same, "same seed and stream give the same sequence");
    WX_CHECK(diff > 990, "another stream differs (%d/1000 words differ)", diff);

    /* Checkpoint: pack mid-block, continue, and compare with a restored copy. */
    wx_rng_init(&a, 99, 7);
    for (int i = 0; i < 6; i++) wx_rng_u32(&a);
    uint8_t rec[WX_RNG_PACKED_BYTES];
    wx_rng_pack(&a, rec);
    WX_CHECK(wx_rng_unpack(&b, rec) == 0, "unpack");
    same = 1;
    for (int i = 0; i < 100; i++) same &= wx_rng_u32(&a) == wx_rng_u32(&b);
    WX_CHECK(same, "restored state continues the same sequence");
    rec[24] = 9;
    WX_CHECK(wx_rng_unpack(&b, rec) == -1, "bad index rejected");
}

static void test_distributions(void) {
    enum { N = 200000 };
    wx_rng r;
    wx_rng_init(&r, 42, 0);
    double s = 0, s2 = 0, umin = 1, umax = 0, us = 0;
    for (int i = 0; i < N; i++) {
        double u = wx_rng_uniform(&r);
        umin = fmin(umin, u);
        umax = fmax(umax, u);
        us += u;
    }
    WX_CHECK(umin >= 0 && umax < 1 && fabs(us / N - 0.5) < 0.004, "uniform [%g, %g] mean %g", umin,
             umax, us / N);
    for (int i = 0; i < N; i++) {
        double z = wx_rng_normal(&r);
        s += z;
        s2 += z * z;
    }
    double mean = s / N, sd = sqrt(s2 / N - mean * mean);
    /* 5 standard errors: 5/sqrt(N) = 0.011 for the mean, 5/sqrt(2N) = 0.008 for the std. */
    WX_CHECK(fabs(mean) < 0.011 && fabs(sd - 1) < 0.008, "normal mean %g std %g", mean, sd);

    /* Truncated at ±2 std: the variance of N(0,1) cut to [-2, 2] is 1 - 4φ(2)/(2Φ(2)-1). */
    double phi2 = exp(-2.0) / sqrt(2 * M_PI), mass = erf(2 / sqrt(2.0));
    double want_sd = 0.5 * sqrt(1 - 4 * phi2 / mass); /* std 0.5 scales it */
    double lo = 1e9, hi = -1e9;
    s = s2 = 0;
    for (int i = 0; i < N; i++) {
        double z = wx_rng_trunc_normal(&r, 3.0, 0.5, -2, 2);
        lo = fmin(lo, z);
        hi = fmax(hi, z);
        s += z;
        s2 += z * z;
    }
    mean = s / N;
    sd = sqrt(s2 / N - mean * mean);
    WX_CHECK(lo >= 2.0 && hi <= 4.0 && hi > 3.99 && lo < 2.01, "trunc normal range [%g, %g]", lo, hi);
    WX_CHECK(fabs(mean - 3.0) < 0.006 && fabs(sd - want_sd) < 0.004,
             "trunc normal mean %g std %g (want 3, %g)", mean, sd, want_sd);
}

static void test_permutation(void) {
    enum { N = 1000 };
    int64_t p[N], q[N];
    int seen[N] = {0};
    wx_rng r;
    wx_rng_init(&r, 5, 1);
    wx_rng_permutation(&r, p, N);
    int ok = 1, fixed = 0;
    for (int i = 0; i < N; i++) {
        ok &= p[i] >= 0 && p[i] < N && !seen[p[i]];
        if (p[i] >= 0 && p[i] < N) seen[p[i]] = 1;
        fixed += p[i] == i;
    }
    WX_CHECK(ok, "permutation holds every index once");
    WX_CHECK(fixed < 10, "permutation is shuffled (%d fixed points; expect ~1)", fixed);
    wx_rng_init(&r, 5, 1);
    wx_rng_permutation(&r, q, N);
    WX_CHECK(!memcmp(p, q, sizeof p), "same seed, same permutation");
    /* Uniformity on 3 elements: each of the 6 orders about 1/6 of 60000 draws. */
    int count[6] = {0};
    wx_rng_init(&r, 11, 0);
    for (int t = 0; t < 60000; t++) {
        int64_t s[3];
        wx_rng_permutation(&r, s, 3);
        count[s[0] * 2 + (s[1] > s[2])]++;
    }
    int uni = 1;
    for (int k = 0; k < 6; k++) uni &= abs(count[k] - 10000) < 500; /* ~5.5 sigma */
    WX_CHECK(uni, "3-permutations uniform: %d %d %d %d %d %d", count[0], count[1], count[2],
             count[3], count[4], count[5]);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void test_atomic_files(void) {
    char root[] = "/tmp/wx_test_core_XXXXXX";
    WX_CHECK(mkdtemp(root) != NULL, "mkdtemp");
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/a/b/c", root);
    WX_CHECK(wx_mkdir_p(dir) == WX_OK, "mkdir_p: %s", wx_error_message());
    WX_CHECK(wx_mkdir_p(dir) == WX_OK, "mkdir_p on an existing folder");
    snprintf(path, sizeof path, "%s/out.txt", dir);

    wx_atomic_file f;
    WX_CHECK(wx_atomic_open(&f, path) == WX_OK, "atomic open: %s", wx_error_message());
    fputs("hello\n", f.fp);
    WX_CHECK(access(path, F_OK) != 0, "final name absent before commit");
    WX_CHECK(access(f.tmp, F_OK) == 0 && strstr(f.tmp, "/.out.txt.tmp.") != NULL,
             "temporary %s in the same folder", f.tmp);
    WX_CHECK(wx_atomic_commit(&f) == WX_OK, "commit: %s", wx_error_message());
    char *buf = NULL;
    size_t len = 0;
    int64_t size = 0;
    WX_CHECK(wx_read_file(path, &buf, &len) == WX_OK && len == 6 && !strcmp(buf, "hello\n"),
             "committed content");
    WX_CHECK(wx_file_size(path, &size) == WX_OK && size == 6, "file size %lld", (long long)size);
    free(buf);
    WX_CHECK(count_entries(dir) == 1, "only the final file remains after commit");

    /* Abort leaves the old content and no temporary. */
    WX_CHECK(wx_atomic_open(&f, path) == WX_OK, "atomic open 2");
    fputs("partial", f.fp);
    wx_atomic_abort(&f);
    WX_CHECK(wx_read_file(path, &buf, &len) == WX_OK && !strcmp(buf, "hello\n"),
             "abort keeps the previous file");
    free(buf);
    WX_CHECK(count_entries(dir) == 1, "abort leaves no temporary");
    char path2[320];
    snprintf(path2, sizeof path2, "%s/new.bin", dir);
    WX_CHECK(wx_atomic_open(&f, path2) == WX_OK, "atomic open 3");
    wx_atomic_abort(&f);
    WX_CHECK(access(path2, F_OK) != 0 && count_entries(dir) == 1, "aborted new file absent");

    /* A missing folder is made (mkdir -p); under a file the open fails naming the path. */
    char missing[320], under[320];
    snprintf(missing, sizeof missing, "%s/nope/deeper/x.txt", root);
    WX_CHECK(wx_read_file(missing, &buf, &len) == WX_ERR_RUN, "read of a missing file fails");
    WX_CHECK(wx_atomic_open(&f, missing) == WX_OK && wx_atomic_commit(&f) == WX_OK &&
                 access(missing, F_OK) == 0,
             "open in a missing folder makes it: %s", wx_error_message());
    unlink(missing);
    *strrchr(missing, '/') = 0;
    rmdir(missing);
    *strrchr(missing, '/') = 0;
    rmdir(missing);
    snprintf(under, sizeof under, "%s/x.txt", path);
    WX_CHECK(wx_atomic_open(&f, under) == WX_ERR_RUN && strstr(wx_error_message(), under),
             "open under a file fails naming the path: %s", wx_error_message());

    unlink(path);
    for (int i = 0; i < 3; i++) {
        rmdir(dir);
        *strrchr(dir, '/') = 0;
    }
    rmdir(root);
}

static void test_json(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    wx_json j;
    wx_json_init(&j, mem);
    wx_json_object_begin(&j);
    wx_json_kv_string(&j, "q\"b\\s", "line\n\ttab\x01\x1f\r\b\f/\xc3\xa9");
    wx_json_kv_number(&j, "nan", NAN);
    wx_json_kv_number(&j, "inf", -INFINITY);
    wx_json_kv_number(&j, "third", 1.0 / 3.0);
    wx_json_kv_int(&j, "big", 9007199254740993LL);
    wx_json_key(&j, "list");
    wx_json_array_begin(&j);
    wx_json_bool(&j, 1);
    wx_json_null(&j);
    wx_json_array_begin(&j);
    wx_json_array_end(&j);
    wx_json_object_begin(&j);
    wx_json_object_end(&j);
    wx_json_string(&j, NULL);
    wx_json_array_end(&j);
    wx_json_object_end(&j);
    fclose(mem);
    /* Escapes per RFC 8259 section 7; UTF-8 passes through. */
    const char *want = "{\"q\\\"b\\\\s\":\"line\\n\\ttab\\u0001\\u001f\\r\\b\\f/\xc3\xa9\","
                       "\"nan\":null,\"inf\":null,\"third\":0.333333333,\"big\":9007199254740993,"
                       "\"list\":[true,null,[],{},null]}";
    WX_CHECK(!strcmp(buf, want), "json:\n got %s\nwant %s", buf, want);
    free(buf);
}

static void test_metrics_and_progress(void) {
    char path[] = "/tmp/wx_test_metrics_XXXXXX";
    int fd = mkstemp(path);
    WX_CHECK(fd >= 0, "mkstemp");
    close(fd);
    wx_metrics *m = NULL;
    WX_CHECK(wx_metrics_open(&m, path) == WX_OK, "metrics open");
    WX_CHECK(wx_metrics_log(m, WX_M_INT("step", 1), WX_M_NUM("loss", 0.5), WX_M_STR("phase", "train"))
                 == WX_OK, "metrics write");
    char *buf = NULL;
    size_t len = 0;
    /* Flushed per line: readable before close. */
    WX_CHECK(wx_read_file(path, &buf, &len) == WX_OK &&
                 !strcmp(buf, "{\"step\":1,\"loss\":0.5,\"phase\":\"train\"}\n"),
             "first metrics line visible before close: %s", buf ? buf : "");
    free(buf);
    WX_CHECK(wx_metrics_log(m, WX_M_INT("step", 2), WX_M_NUM("loss", NAN), WX_M_BOOL("ok", 0)) == WX_OK,
             "metrics write 2");
    WX_CHECK(wx_metrics_close(m) == WX_OK, "metrics close");
    WX_CHECK(wx_read_file(path, &buf, &len) == WX_OK &&
                 !strcmp(buf, "{\"step\":1,\"loss\":0.5,\"phase\":\"train\"}\n"
                              "{\"step\":2,\"loss\":null,\"ok\":false}\n"),
             "metrics file: %s", buf ? buf : "");
    free(buf);

    /* Progress and log lines, stderr sent to the file (not a terminal: plain lines). */
    fflush(stderr);
    int saved = dup(2);
    WX_CHECK(freopen(path, "w", stderr) != NULL, "redirect stderr");
    wx_log_set_level(WX_LOG_INFO);
    wx_progress p;
    wx_progress_start(&p, "ingest", 200, "records");
    wx_progress_set_interval(&p, 0);
    wx_progress_update(&p, 50, "loss %.3f", 0.123);
    wx_progress_set_interval(&p, 1e9);
    wx_progress_update(&p, 100, NULL); /* inside the interval: no line */
    wx_progress_finish(&p);
    wx_log_debug("hidden at info level");
    wx_log_set_rank(1);
    wx_log_info("hidden on rank 1");
    wx_log_warn("careful %d", 7);
    wx_log_set_rank(-1);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    WX_CHECK(wx_read_file(path, &buf, &len) == WX_OK, "read log");
    int lines = 0;
    for (char *c = buf; *c; c++) lines += *c == '\n';
    WX_CHECK(lines == 3, "3 lines (update, finish, warning), got %d:\n%s", lines, buf);
    WX_CHECK(strstr(buf, "ingest: 50/200 records (25.0%), ") && strstr(buf, ", loss 0.123\n"),
             "progress line: %s", buf);
    WX_CHECK(strstr(buf, "ingest: 100/200 records (50.0%), ") != NULL, "final line: %s", buf);
    WX_CHECK(strstr(buf, "] [rank 1] warning: careful 7\n") != NULL, "rank prefix: %s", buf);
    WX_CHECK(buf[0] == '[' && buf[5] == '-' && buf[11] == ' ' && buf[20] == ']', "timestamp: %.24s",
             buf);
    free(buf);
    unlink(path);
    char d[16];
    wx_progress_format_duration(d, sizeof d, 3723);
    WX_CHECK(!strcmp(d, "1:02:03"), "duration %s", d);
    wx_progress_format_duration(d, sizeof d, 59.6);
    WX_CHECK(!strcmp(d, "1:00"), "duration %s", d);
}

int main(void) {
    test_philox_kat();
    test_rng_determinism();
    test_distributions();
    test_permutation();
    test_atomic_files();
    test_json();
    test_metrics_and_progress();
    return wx_test_summary();
}
