/* The NCCL gradient all-reduce (kernels/wx_cuda_nccl.h, train/distributed_nccl.h) on one rank
 * (no MPI job: wx_dist_size() = 1): the averaged gradient of one rank is the gradient itself,
 * bit for bit; buckets follow the requested size; ready(lo) starts exactly the buckets wholly in
 * [lo, len) (counted by started_early); a second round behaves the same. Without a GPU: the
 * communicator refuses with "no CUDA device" and the test exits 77. ZeRO-1's device collectives
 * on one rank: reduce_scatter (ncclReduce + the 1/N scaling) and allgather (ncclBroadcast) leave
 * the gradient and the parameters bit for bit, twice; the compute stream is ordered after them
 * (a blocking read sees the result). Multi-rank sums need a job with one GPU per rank (not
 * covered here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "backend/wx_backend.h"
#include "train/distributed_nccl.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"

static void test_one_rank(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    const wx_backend *cu = wx_backend_cuda();
    const int64_t len = 10000;
    float *h = malloc(sizeof(float) * len), *back = malloc(sizeof(float) * len);
    for (int64_t i = 0; i < len; i++) h[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    float *g = wx_backend_upload_f32(cu, ctx, h, len, "grad");
    wx_nccl_sync *s = NULL;
    /* 4000-byte buckets: 1000 floats, 10 buckets */
    if (WX_CHECK(g && wx_grad_sync_nccl_create(ctx, g, len, 4000, &s) == WX_OK, "create: %s",
                 wx_error_message())) {
        WX_CHECK(wx_nccl_sync_buckets(s) == 10, "10 buckets, got %d", wx_nccl_sync_buckets(s));
        for (int round = 0; round < 2; round++) {
            /* backward reached offset 6500: buckets 7, 8, 9 ([7000, 10000)) are final */
            WX_CHECK(wx_nccl_sync_ready(s, 6500) == WX_OK, "ready: %s", wx_error_message());
            WX_CHECK(wx_nccl_sync_ready(s, 2000) == WX_OK, "ready 2000: %s", wx_error_message());
            WX_CHECK(wx_nccl_sync_finish(s) == WX_OK, "finish: %s", wx_error_message());
            WX_CHECK(cu->copy_d2h(ctx, back, g, sizeof(float) * len) == WX_OK, "read back");
            WX_CHECK(!memcmp(back, h, sizeof(float) * len), "one rank: mean = own gradient");
        }
        /* first round: 8 buckets ([2000, 10000)) before finish; second the same */
        WX_CHECK(wx_nccl_sync_started_early(s) == 8.0, "started early %.2f, expected 8",
                 wx_nccl_sync_started_early(s));
        float *d = wx_backend_upload_f32(cu, ctx, back, len, "params");
        for (int round = 0; d && round < 2; round++) {
            WX_CHECK(wx_nccl_sync_reduce_scatter(s) == WX_OK, "reduce_scatter: %s",
                     wx_error_message());
            WX_CHECK(wx_nccl_sync_allgather(s, d) == WX_OK, "allgather: %s", wx_error_message());
            memset(back, 0, sizeof(float) * len);
            WX_CHECK(cu->copy_d2h(ctx, back, g, sizeof(float) * len) == WX_OK &&
                         !memcmp(back, h, sizeof(float) * len),
                     "ZeRO-1 reduce-scatter on one rank: the shard mean is the gradient");
            memset(back, 0, sizeof(float) * len);
            WX_CHECK(cu->copy_d2h(ctx, back, d, sizeof(float) * len) == WX_OK &&
                         !memcmp(back, h, sizeof(float) * len),
                     "ZeRO-1 all-gather on one rank: the parameters unchanged");
        }
        cu->mem_free(ctx, d);
    }
    wx_nccl_sync_destroy(s);
    cu->mem_free(ctx, g);
    free(h), free(back);
    wx_ctx_destroy(ctx);
}

static void test_no_device(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    unsigned char id[WX_NCCL_ID_BYTES] = {0};
    wx_nccl_sync *s = (wx_nccl_sync *)1;
    wx_status st = wx_nccl_sync_create(ctx, (float *)16, 100, 0, 0, 1, id, &s);
    WX_CHECK(st == WX_ERR_RUN && s == NULL && strstr(wx_error_message(), "no CUDA device"),
             "no GPU: %d '%s'", st, wx_error_message());
    st = wx_nccl_sync_create(ctx, (float *)16, 100, 0, 2, 2, id, &s);
    WX_CHECK(st == WX_ERR_USAGE && s == NULL && strstr(wx_error_message(), "rank 2 of 2"),
             "bad rank: %d '%s'", st, wx_error_message());
    wx_ctx_destroy(ctx);
}

int main(void) {
    int count = 0;
    WX_CHECK(wx_cuda_device_count(&count) == WX_OK, "device count: %s", wx_error_message());
    if (count == 0) {
        test_no_device();
        wx_test_summary();
        printf("no CUDA device visible: NCCL checks skipped (compiled, not run)\n");
        return wx_test_failed ? 1 : 77;
    }
    test_one_rank();
    return wx_test_summary();
}
#else
int main(void) {
    printf("built without CUDA: skipped\n");
    return 77;
}
#endif
