/* MPI benchmark helper for tests/bench/bench_mpi.sh.
 *   bench_mpi archive DIR      writes the toy training archive of tests/unit/train_toy.h
 *   bench_mpi allreduce [MB]   under mpirun: times the gradient all-reduce (wx_grad_sync, the
 *                              trainer's path, mean: the ring of point-to-point messages in 25 MB
 *                              buckets or WX_BENCH_BUCKET_MB, then node shared memory), then one
 *                              blocking MPI_Allreduce (sum, plus the 1/N pass), for message sizes
 *                              4 KiB .. MB MiB; rank 0 prints one JSON line per size with the
 *                              median time, the mean CPU time of rank 0's process per call (MPI
 *                              waits spin, so waiting counts), and the algorithm and bus
 *                              bandwidths (bus = 2(N−1)/N · bytes / time, the bytes each rank
 *                              must move). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/train_toy.h"
#include "core/wx_timer.h"
#include "train/distributed.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* mode 0: wx_grad_sync over the caller's buffer with WXCAST_ALLREDUCE=ring (the ring of
 * messages); 1: wx_grad_sync allocating the gradient (node shared memory on one node); 2: one
 * blocking MPI_Allreduce plus the 1/N pass. */
static int allreduce(double max_mb, int mode) {
    static const char *const names[] = {"ring", "shared_memory", "MPI_Allreduce"};
    int n = wx_dist_size();
    int64_t maxn = (int64_t)(max_mb * 1048576.0 / sizeof(float));
    float *mine = wx_malloc(sizeof(float) * (size_t)maxn);
    if (mode == 0) setenv("WXCAST_ALLREDUCE", "ring", 1);
    for (int64_t len = 1024; len <= maxn; len *= 4) {
        wx_grad_sync *s;
        const char *bk = getenv("WX_BENCH_BUCKET_MB");
        int64_t bucket = bk ? (int64_t)(atof(bk) * 1048576.0) : WX_DIST_BUCKET_BYTES_DEFAULT;
        if (wx_grad_sync_create(mode == 1 ? NULL : mine, len, bucket, &s) != WX_OK) return 1;
        float *g = wx_grad_sync_buffer(s);
        for (int64_t i = 0; i < len; i++) g[i] = (float)(i % 97) * 0.01f;
        int reps = len < (1 << 20) ? 50 : 10;
        double t[50], cpu = 0;
        for (int r = 0; r < reps + 2; r++) {
            if (wx_dist_barrier() != WX_OK) return 1;
            double t0 = wx_time_now(), c0 = cpu_now();
            if ((mode == 2 ? wx_dist_allreduce_f32(g, len, WX_DIST_AVG) : wx_grad_sync_finish(s)) != WX_OK)
                return 1;
            if (r >= 2) t[r - 2] = wx_time_now() - t0, cpu += cpu_now() - c0; /* two warm-up rounds */
        }
        qsort(t, (size_t)reps, sizeof(double), cmp_double);
        double med = t[reps / 2], bytes = (double)len * sizeof(float);
        if (wx_dist_rank() == 0)
            printf("{\"call\":\"%s\",\"ranks\":%d,\"bytes\":%.0f,\"buckets\":%d,\"median_s\":%.6g,\"cpu_s\":%.6g,\"algbw_GBs\":%.4g,"
                   "\"busbw_GBs\":%.4g}\n", names[mode], n, bytes, wx_grad_sync_buckets(s), med, cpu / reps, bytes / med / 1e9,
                   2.0 * (n - 1) / n * bytes / med / 1e9);
        wx_grad_sync_destroy(s);
    }
    unsetenv("WXCAST_ALLREDUCE");
    free(mine);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "archive")) {
        if (toy_archive_write(argv[2], 64) != 0) {
            fprintf(stderr, "bench_mpi: %s\n", wx_error_message());
            return 1;
        }
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "allreduce")) {
        if (wx_dist_init(&argc, &argv) != WX_OK) {
            fprintf(stderr, "bench_mpi: %s\n", wx_error_message());
            return 1;
        }
        double mb = argc >= 3 ? atof(argv[2]) : 64;
        int rc = 0;
        for (int mode = 0; mode < 3 && rc == 0; mode++) rc = allreduce(mb, mode);
        if (rc) fprintf(stderr, "bench_mpi: %s\n", wx_error_message());
        wx_dist_finalize();
        return rc;
    }
    fprintf(stderr, "usage: bench_mpi archive DIR | bench_mpi allreduce [MAX_MB]\n");
    return 2;
}
