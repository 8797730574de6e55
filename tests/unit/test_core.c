/* Core utilities: Philox RNG against the Random123 known-answer vectors and distribution
 * moments, permutations, checkpointable RNG state, atomic files, and JSON escaping. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_fs.h"
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

    char missing[320];
    snprintf(missing, sizeof missing, "%s/nope/x.txt", root);
    WX_CHECK(wx_atomic_open(&f, missing) == WX_ERR_RUN && strstr(wx_error_message(), missing),
             "open in a missing folder fails naming the path: %s", wx_error_message());
    WX_CHECK(wx_read_file(missing, &buf, &len) == WX_ERR_RUN, "read of a missing file fails");

    unlink(path);
    for (int i = 0; i < 3; i++) {
        rmdir(dir);
        *strrchr(dir, '/') = 0;
    }
    rmdir(root);
}

int main(void) {
    test_philox_kat();
    test_rng_determinism();
    test_distributions();
    test_permutation();
    test_atomic_files();
    return wx_test_summary();
}
