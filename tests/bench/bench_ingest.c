/* Helpers of tests/bench/bench_ingest.sh (one JSON line each):
 *   bench_ingest decode FILE.grib        eccodes' bare decode rate: codes_handle_new_from_file +
 *                                        codes_get_double_array + conversion to float32, per message
 *   bench_ingest random ARCHIVE B T E    archive random batches (B records, T workers, O_DIRECT),
 *                                        E epochs of a fixed-seed permutation of all records
 *   bench_ingest seq SHARD               sequential O_DIRECT read of one shard file in 8 MiB reads */
#define _GNU_SOURCE
#include <eccodes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/archive.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int decode(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    double t0 = now(), c0 = (double)clock() / CLOCKS_PER_SEC, bytes = 0;
    int err = 0, msgs = 0;
    codes_handle *h;
    double *d = NULL;
    float *o = NULL;
    size_t cap = 0;
    while ((h = codes_handle_new_from_file(NULL, f, PRODUCT_GRIB, &err)) != NULL) {
        size_t n = 0;
        if (codes_get_size(h, "values", &n)) return 1;
        if (n > cap) {
            cap = n;
            d = realloc(d, n * sizeof *d);
            o = realloc(o, n * sizeof *o);
        }
        if (codes_get_double_array(h, "values", d, &n)) return 1;
        for (size_t k = 0; k < n; k++) o[k] = (float)d[k];
        bytes += 4.0 * (double)n;
        msgs++;
        codes_handle_delete(h);
    }
    double s = now() - t0, cpu = (double)clock() / CLOCKS_PER_SEC - c0;
    printf("{\"what\":\"eccodes_decode\",\"messages\":%d,\"mb\":%.1f,\"s\":%.3f,\"mb_s\":%.1f,"
           "\"cpu_s\":%.3f,\"check\":%g}\n", msgs, bytes / 1e6, s, bytes / 1e6 / s, cpu,
           o ? (double)o[0] : 0.0);
    free(d);
    free(o);
    fclose(f);
    return err != 0;
}

static int random_read(const char *dir, int batch, int threads, int epochs) {
    wx_archive_opts o = {threads, 1, 1};
    wx_archive *a;
    if (wx_archive_open(dir, &o, &a) != WX_OK) {
        fprintf(stderr, "%s\n", wx_error_message());
        return 1;
    }
    const wx_archive_meta *m = wx_archive_meta_of(a);
    size_t rec = (size_t)wx_archive_record_bytes(m);
    float *out = malloc(rec * (size_t)batch);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)m->count);
    unsigned s = 12345;
    double t0 = now(), bytes = 0;
    for (int e = 0; e < epochs; e++) {
        for (int64_t i = 0; i < m->count; i++) perm[i] = i;
        for (int64_t i = m->count - 1; i > 0; i--) {
            s = s * 1103515245u + 12345u;
            int64_t j = (s >> 8) % (uint64_t)(i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        for (int64_t i = 0; i < m->count; i += batch) {
            int n = (int)(m->count - i < batch ? m->count - i : batch);
            if (wx_archive_read(a, perm + i, n, out) != WX_OK) {
                fprintf(stderr, "%s\n", wx_error_message());
                return 1;
            }
            bytes += (double)rec * n;
        }
    }
    double sec = now() - t0;
    printf("{\"what\":\"archive_random\",\"batch\":%d,\"threads\":%d,\"mb\":%.1f,\"s\":%.3f,\"mb_s\":%.1f}\n",
           batch, threads, bytes / 1e6, sec, bytes / 1e6 / sec);
    free(out);
    free(perm);
    wx_archive_close(a);
    return 0;
}

static int seq_read(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0) return 1;
    size_t chunk = 8u << 20;
    void *buf;
    if (posix_memalign(&buf, 4096, chunk)) return 1;
    double t0 = now(), bytes = 0;
    ssize_t k;
    while ((k = read(fd, buf, chunk)) > 0) bytes += (double)k;
    double s = now() - t0;
    printf("{\"what\":\"shard_sequential\",\"mb\":%.1f,\"s\":%.3f,\"mb_s\":%.1f}\n", bytes / 1e6, s,
           bytes / 1e6 / s);
    free(buf);
    close(fd);
    return k < 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "decode")) return decode(argv[2]);
    if (argc >= 6 && !strcmp(argv[1], "random"))
        return random_read(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (argc >= 3 && !strcmp(argv[1], "seq")) return seq_read(argv[2]);
    fprintf(stderr, "usage: bench_ingest decode FILE | random ARCHIVE BATCH THREADS EPOCHS | seq SHARD\n");
    return 2;
}
