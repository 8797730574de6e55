/* src/train/distributed.h. Run by ctest as a plain process it checks the size-1 behaviour (every
 * call a no-op that succeeds, the data untouched), then, in an MPI build, runs itself under
 * `mpirun -np 3` (uneven shards) where every rank checks, against values computed here:
 *  - allreduce f32/f64 sum and average, broadcast, allgather;
 *  - the bucketed gradient all-reduce with buckets started from the top as a backward would
 *    (wx_grad_sync_ready with falling offsets, progress in between): the rank mean everywhere,
 *    and for values whose sums round, the mean within 1e-6 and the same bits on every rank;
 *  - ZeRO-1: reduce-scatter of a 1001-element buffer leaves each rank the mean of its shard, the
 *    all-gather restores every shard everywhere, gather/scatter round trip through rank 0;
 *  - status agreement: an error on rank 1 only comes back on every rank, as rank 1's own message
 *    there and as "rank 1 failed" (remote) elsewhere.
 * Values are small integers and halves/thirds of them, so sums are exact in float (except in the
 * rounding check, which compares with a float64 mean). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "train/distributed.h"
#include "wx_build_config.h"
#include "wx_test.h"

/* Rank r's gradient element i: a deterministic integer pattern. */
static float grad_val(int r, int64_t i) { return (float)((i * 7 + r * 13) % 29) - 14.0f; }

/* Rank r's rounded value i (sums of these round in float). */
static float rounded_val(int r, int64_t i) { return sinf(0.37f * (float)i + (float)r) * 1.3e-3f; }

/* After an all-reduce of rounded_val over n ranks: g is the mean within 1e-6 of its largest
 * magnitude (single elements may cancel) and holds the same bits on every rank. */
static void check_rounded_mean(const float *g, int64_t len, int n, int ok, const char *what) {
    double err = 0, big = 0;
    uint32_t h = 2166136261u, hs[3];
    for (int64_t i = 0; i < len; i++) {
        double want = 0;
        for (int q = 0; q < n; q++) want += (double)rounded_val(q, i) / n;
        err = fabs(g[i] - want) > err ? fabs(g[i] - want) : err;
        big = fabs(want) > big ? fabs(want) : big;
        uint32_t u;
        memcpy(&u, &g[i], sizeof u);
        h = (h ^ u) * 16777619u;
    }
    err /= big;
    WX_CHECK(ok && err < 1e-6, "%s, rounded values: the mean within %.2g of its largest magnitude (<= 1e-6)",
             what, err);
    WX_CHECK(wx_dist_allgather_u32(h, hs) == WX_OK && hs[0] == hs[1] && hs[1] == hs[2],
             "%s, rounded values: the same bits on every rank (FNV hashes %08x %08x %08x)", what, hs[0],
             hs[1], hs[2]);
}

static void check_size1(void) {
    WX_CHECK(wx_dist_size() == 1 && wx_dist_rank() == 0 && !wx_dist_active(), "one process: rank 0 of 1");
    float x[5] = {1, 2, 3, 4, 5};
    double d[2] = {1.5, -2};
    WX_CHECK(wx_dist_allreduce_f32(x, 5, WX_DIST_AVG) == WX_OK && x[4] == 5, "size 1: avg is the identity");
    WX_CHECK(wx_dist_allreduce_f64(d, 2, WX_DIST_SUM) == WX_OK && d[0] == 1.5, "size 1: sum is the identity");
    WX_CHECK(wx_dist_bcast(x, sizeof x, 0) == WX_OK && wx_dist_barrier() == WX_OK, "size 1: bcast, barrier");
    wx_grad_sync *s;
    WX_CHECK(wx_grad_sync_create(x, 5, 8, &s) == WX_OK, "size 1: grad sync");
    WX_CHECK(wx_grad_sync_ready(s, 2) == WX_OK && wx_grad_sync_finish(s) == WX_OK && x[0] == 1 && x[4] == 5,
             "size 1: grad sync leaves the gradient");
    wx_grad_sync_destroy(s);
    WX_CHECK(wx_dist_reduce_scatter_avg(x, 5) == WX_OK && wx_dist_allgather_shards(x, 5) == WX_OK && x[2] == 3,
             "size 1: ZeRO collectives leave the buffer");
    WX_CHECK(wx_dist_agree(WX_OK) == WX_OK && !wx_dist_failure_is_agreed(), "size 1: agree OK");
    wx_status st = wx_dist_agree(wx_error_set(WX_ERR_USAGE, "local"));
    WX_CHECK(st == WX_ERR_USAGE && wx_dist_failure_is_agreed() && !wx_dist_failure_is_remote() &&
                 !strcmp(wx_error_message(), "local"), "size 1: a failure is agreed and keeps its message");
    int64_t off[3], cnt[3];
    wx_dist_split(10, 3, off, cnt);
    WX_CHECK(cnt[0] == 4 && cnt[1] == 3 && cnt[2] == 3 && off[1] == 4 && off[2] == 7, "split 10 over 3: 4,3,3");
}

static void check_ranks(void) {
    int r = wx_dist_rank(), n = wx_dist_size();
    WX_CHECK(n == 3 && wx_dist_active(), "3 ranks (%d)", n);
    /* allreduce */
    float x[4];
    double d[2] = {r, 0.5 * r};
    for (int i = 0; i < 4; i++) x[i] = (float)(r + i);
    WX_CHECK(wx_dist_allreduce_f32(x, 4, WX_DIST_SUM) == WX_OK && x[0] == 3 && x[3] == 12, "f32 sum");
    WX_CHECK(wx_dist_allreduce_f64(d, 2, WX_DIST_AVG) == WX_OK && d[0] == 1 && d[1] == 0.5, "f64 avg");
    /* bcast, allgather */
    char msg[16] = "";
    if (r == 2) snprintf(msg, sizeof msg, "from two");
    WX_CHECK(wx_dist_bcast(msg, sizeof msg, 2) == WX_OK && !strcmp(msg, "from two"), "bcast from rank 2");
    uint32_t all[3];
    WX_CHECK(wx_dist_allgather_u32(100u + (uint32_t)r, all) == WX_OK && all[0] == 100 && all[2] == 102,
             "allgather in rank order");
    /* bucketed gradient sync, buckets started top-down as a backward would */
    enum { LEN = 1000 };
    float *g = malloc(sizeof(float) * LEN);
    for (int64_t i = 0; i < LEN; i++) g[i] = grad_val(r, i);
    wx_grad_sync *s;
    WX_CHECK(wx_grad_sync_create(g, LEN, 256 * sizeof(float), &s) == WX_OK && wx_grad_sync_buckets(s) == 4,
             "1000 floats in buckets of 256 floats: 4 buckets");
    int ok = 1;
    for (int64_t lo = 900; lo >= 0; lo -= 150) {
        ok &= wx_grad_sync_ready(s, lo) == WX_OK;
        ok &= wx_grad_sync_progress(s) == WX_OK;
    }
    ok &= wx_grad_sync_finish(s) == WX_OK;
    int bad = 0;
    for (int64_t i = 0; i < LEN; i++) {
        float want = (grad_val(0, i) + grad_val(1, i) + grad_val(2, i)) * (1.0f / 3.0f);
        bad += g[i] != want;
    }
    WX_CHECK(ok && bad == 0, "bucketed all-reduce: the rank mean on every element (%d wrong)", bad);
    wx_grad_sync_destroy(s);
    /* Values whose sums round, in 7 uneven buckets: the ring sums each chunk on one rank and
     * copies it, so every rank must hold the same bits (and the mean to float rounding). */
    for (int64_t i = 0; i < LEN; i++) g[i] = rounded_val(r, i);
    ok = wx_grad_sync_create(g, LEN, 143 * sizeof(float), &s) == WX_OK && wx_grad_sync_buckets(s) == 7;
    ok &= wx_grad_sync_ready(s, 600) == WX_OK && wx_grad_sync_finish(s) == WX_OK;
    wx_grad_sync_destroy(s);
    check_rounded_mean(g, LEN, n, ok, "ring");
    /* Node shared memory (grad NULL: the sync allocates the gradient in a window shared by the 3
     * ranks of this one-node job): the exact mean of the integer pattern, then rounded values
     * whose bits must agree on every rank, twice in a row with the same buffer. */
    WX_CHECK(wx_grad_sync_create(NULL, LEN, 143 * sizeof(float), &s) == WX_OK &&
                 !strcmp(wx_grad_sync_method(s), WX_GRAD_SYNC_SHM), "grad NULL on one node: %s",
             wx_grad_sync_method(s));
    float *sg = wx_grad_sync_buffer(s);
    bad = sg[0] != 0 || sg[LEN - 1] != 0; /* handed out zeroed */
    for (int64_t i = 0; i < LEN; i++) sg[i] = grad_val(r, i);
    ok = wx_grad_sync_ready(s, 500) == WX_OK && wx_grad_sync_progress(s) == WX_OK && wx_grad_sync_finish(s) == WX_OK;
    for (int64_t i = 0; i < LEN; i++)
        bad += sg[i] != (grad_val(0, i) + grad_val(1, i) + grad_val(2, i)) * (1.0f / 3.0f);
    WX_CHECK(ok && bad == 0, "shared memory: the rank mean on every element (%d wrong)", bad);
    for (int64_t i = 0; i < LEN; i++) sg[i] = rounded_val(r, i);
    ok = wx_grad_sync_finish(s) == WX_OK;
    check_rounded_mean(sg, LEN, n, ok, "shared memory");
    wx_grad_sync_destroy(s);
    /* The ring on request, with its own buffer */
    setenv("WXCAST_ALLREDUCE", "ring", 1);
    ok = wx_grad_sync_create(NULL, LEN, 143 * sizeof(float), &s) == WX_OK &&
         !strcmp(wx_grad_sync_method(s), WX_GRAD_SYNC_RING) && wx_grad_sync_buckets(s) == 7;
    sg = ok ? wx_grad_sync_buffer(s) : NULL;
    for (int64_t i = 0; sg && i < LEN; i++) sg[i] = grad_val(r, i);
    ok = ok && wx_grad_sync_finish(s) == WX_OK;
    bad = 0;
    for (int64_t i = 0; sg && i < LEN; i++)
        bad += sg[i] != (grad_val(0, i) + grad_val(1, i) + grad_val(2, i)) * (1.0f / 3.0f);
    WX_CHECK(ok && bad == 0, "WXCAST_ALLREDUCE=ring: the ring, 7 buckets, the rank mean (%d wrong)", bad);
    wx_grad_sync_destroy(s);
    setenv("WXCAST_ALLREDUCE", "tree", 1);
    s = NULL;
    wx_status bst = wx_grad_sync_create(NULL, LEN, 4096, &s);
    WX_CHECK(bst == WX_ERR_USAGE && strstr(wx_error_message(), "WXCAST_ALLREDUCE=tree") && !s,
             "WXCAST_ALLREDUCE=tree: usage error naming it (%s)", wx_error_message());
    unsetenv("WXCAST_ALLREDUCE");
    /* ZeRO-1 collectives on an uneven length */
    enum { ZL = 1001 };
    float *z = malloc(sizeof(float) * ZL);
    for (int64_t i = 0; i < ZL; i++) z[i] = grad_val(r, i);
    int64_t off[3], cnt[3];
    wx_dist_split(ZL, n, off, cnt);
    WX_CHECK(wx_dist_reduce_scatter_avg(z, ZL) == WX_OK, "reduce-scatter");
    bad = 0;
    for (int64_t i = off[r]; i < off[r] + cnt[r]; i++)
        bad += z[i] != (grad_val(0, i) + grad_val(1, i) + grad_val(2, i)) * (1.0f / 3.0f);
    WX_CHECK(bad == 0, "reduce-scatter: rank %d's shard [%lld, +%lld) is the mean (%d wrong)", r,
             (long long)off[r], (long long)cnt[r], bad);
    /* every rank now writes its rank number into its shard; the all-gather spreads them */
    for (int64_t i = off[r]; i < off[r] + cnt[r]; i++) z[i] = (float)(r * 10000 + i);
    WX_CHECK(wx_dist_allgather_shards(z, ZL) == WX_OK, "all-gather");
    bad = 0;
    for (int q = 0; q < n; q++)
        for (int64_t i = off[q]; i < off[q] + cnt[q]; i++) bad += z[i] != (float)(q * 10000 + i);
    WX_CHECK(bad == 0, "all-gather: every shard from its owner (%d wrong)", bad);
    float *full = r == 0 ? malloc(sizeof(float) * ZL) : NULL, *back = malloc(sizeof(float) * ZL);
    WX_CHECK(wx_dist_gather_shards(z + off[r], full, ZL, 0) == WX_OK, "gather shards");
    if (r == 0) WX_CHECK(!memcmp(full, z, sizeof(float) * ZL), "gather: rank 0 holds the whole buffer");
    WX_CHECK(wx_dist_scatter_shards(full, back, ZL, 0) == WX_OK && !memcmp(back, z + off[r], sizeof(float) * (size_t)cnt[r]),
             "scatter: each rank gets its shard back");
    free(full), free(back), free(z), free(g);
    /* agreement */
    WX_CHECK(wx_dist_agree(WX_OK) == WX_OK && !wx_dist_failure_is_agreed(), "all OK agree");
    wx_status st = wx_dist_agree(r == 1 ? wx_error_set(WX_ERR_USAGE, "bad key on rank one") : WX_OK);
    WX_CHECK(st == WX_ERR_USAGE && wx_dist_failure_is_agreed(), "rank 1's usage error reaches rank %d", r);
    if (r == 1)
        WX_CHECK(!wx_dist_failure_is_remote() && !strcmp(wx_error_message(), "bad key on rank one"),
                 "rank 1 keeps its message");
    else
        WX_CHECK(wx_dist_failure_is_remote() && strstr(wx_error_message(), "rank 1 failed"),
                 "rank %d: remote failure, '%s'", r, wx_error_message());
}

int main(int argc, char **argv) {
    if (getenv("OMPI_COMM_WORLD_SIZE")) { /* we are a rank of the mpirun below */
        if (!WX_CHECK(wx_dist_init(&argc, &argv) == WX_OK, "init: %s", wx_error_message()))
            return wx_test_summary();
        check_ranks();
        int rc = wx_test_summary();
        wx_dist_finalize();
        return rc;
    }
    check_size1();
    if (!WX_HAVE_MPI) {
        printf("built without MPI: the multi-rank part is skipped\n");
        return wx_test_summary();
    }
    char self[2048] = "", cmd[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!WX_CHECK(n > 0, "own path")) return wx_test_summary();
    self[n] = 0;
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 timeout -s KILL 60 mpirun --allow-run-as-root "
             "--oversubscribe --bind-to none -np 3 '%s'", self);
    int rc = system(cmd);
    WX_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "3 ranks: every rank passed (status %d)", rc);
    return wx_test_summary();
}
