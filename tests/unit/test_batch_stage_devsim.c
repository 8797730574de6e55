/* The double-buffered batch upload (src/backend/wx_batch_stage.h) on the device simulator, whose
 * async uploads follow the CUDA backend's per-slot event ordering (wx_devsim.h):
 *  - the trainer's pattern (fill a host slot, upload, queue a step that reads the batch, queue
 *    a tail that does not — AdamW), 6 batches: every step sees its own batch's bits (not the
 *    batch two uploads before, which had the same device slot); all 12 copies go through
 *    copy_h2d_async; the 8 copies after the first batch pair do not wait for the step queued
 *    before them (they wait only for the release of their slot, two batches back) — an upload
 *    that waits for all queued work, or a synchronous one, fails this; 5 releases, 8 readies
 *    (one per upload, one per slot at init);
 *    no violation, no device memory left;
 *  - the simulator catches misuse (each one fails the call or raises the violation count):
 *    an op reading an upload's target before slot_ready (the compute stream did not wait), an
 *    upload into a buffer read after the slot's release (the copy could overwrite it mid-read),
 *    and a host buffer rewritten before copy_wait;
 *  - ZeRO-1's shard layout of the NCCL path (train/zero1_shard.h) is wx_dist_split's for lengths
 *    0..300 and 1..9 ranks (the shards tile [0, n) in rank order, sizes differ by at most 1). */
#include <stdlib.h>
#include <string.h>

#include "backend/wx_batch_stage.h"
#include "train/distributed.h"
#include "train/zero1_shard.h"
#include "wx_devsim.h"
#include "wx_test.h"

enum { NX = 1000, NT = 3000, BATCHES = 6 };

static void test_pattern(void) {
    const wx_backend *be = wx_devsim_backend();
    wx_ctx *ctx = wx_ctx_create(1);
    wx_devsim_upload_stats u0, u1;
    wx_devsim_uploads(&u0);
    float *y = wx_backend_alloc(be, ctx, sizeof(float) * NX, "y");
    float *back = malloc(sizeof(float) * NT);
    wx_batch_stage s;
    int ok = WX_CHECK(y && wx_batch_stage_init(&s, be, ctx, NX, NT) == WX_OK, "init: %s",
                      wx_error_message());
    for (int i = 0; ok && i < BATCHES; i++) {
        float *x, *t, *dx, *dt;
        ok = WX_CHECK(wx_batch_stage_host(&s, &x, &t) == WX_OK, "host %d", i);
        for (int j = 0; ok && j < NX; j++) x[j] = (float)(i * 10000 + j);
        for (int j = 0; ok && j < NT; j++) t[j] = (float)(-(i * 10000) - j);
        ok = ok && WX_CHECK(wx_batch_stage_upload(&s, &dx, &dt) == WX_OK, "upload %d: %s", i,
                            wx_error_message());
        /* the step: reads both (y = x + t[:NX] = 0 only with this batch's x and t) */
        ok = ok && WX_CHECK(be->add_forward(ctx, y, dx, dt, NX) == WX_OK, "step %d", i);
        ok = ok && WX_CHECK(be->copy_d2h(ctx, back, y, sizeof(float) * NX) == WX_OK, "read y");
        int zero = 1;
        for (int j = 0; ok && j < NX; j++) zero &= back[j] == 0.0f;
        WX_CHECK(zero, "step %d saw its own batch in x and t", i);
        ok = ok && WX_CHECK(be->copy_d2h(ctx, back, dt, sizeof(float) * NT) == WX_OK, "read t");
        WX_CHECK(ok && back[NT - 1] == (float)(-(i * 10000) - (NT - 1)), "batch %d's targets", i);
        /* the tail (AdamW): queued compute work that does not read the batch */
        ok = ok && WX_CHECK(be->scale_forward(ctx, y, NX, 0.5) == WX_OK, "tail %d", i);
    }
    wx_batch_stage_free(&s);
    be->mem_free(ctx, y);
    free(back);
    wx_devsim_uploads(&u1);
    WX_CHECK(u1.copies - u0.copies == 2 * BATCHES, "every batch uploaded asynchronously: %ld copies",
             u1.copies - u0.copies);
    WX_CHECK(u1.overlapped - u0.overlapped == 2 * (BATCHES - 2),
             "copies overlapping the step queued before them: %ld (expected %d)",
             u1.overlapped - u0.overlapped, 2 * (BATCHES - 2));
    WX_CHECK(u1.readies - u0.readies == BATCHES + 2 && u1.releases - u0.releases == BATCHES - 1,
             "%ld slot_ready, %ld slot_release", u1.readies - u0.readies, u1.releases - u0.releases);
    WX_CHECK(wx_devsim_check() == 0, "no violation: %s", wx_devsim_first_violation());
    size_t bytes = 0;
    WX_CHECK(wx_devsim_live(&bytes) == 0, "no device memory left (%zu bytes)", bytes);
    wx_ctx_destroy(ctx);
}

/* Misuse the simulator must catch (after the clean pattern: violations are counted per process). */
static void test_misuse(void) {
    const wx_backend *be = wx_devsim_backend();
    wx_ctx *ctx = wx_ctx_create(1);
    float h[64], hy[64];
    for (int i = 0; i < 64; i++) h[i] = (float)i, hy[i] = 0.0f;
    float *d = wx_backend_alloc(be, ctx, sizeof h, "d"), *y = wx_backend_alloc(be, ctx, sizeof h, "y");
    /* new buffers, zeroed on the compute stream after the stage's releases: hand both slots to
     * compute, so the next uploads wait for everything queued (as wx_batch_stage_init does) */
    (void)be->slot_ready(ctx, 0);
    (void)be->slot_ready(ctx, 1);
    long v0 = wx_devsim_violations();

    /* no slot_ready: the op reads the copy's target although the compute stream never waited */
    WX_CHECK(be->copy_h2d_async(ctx, 0, d, h, sizeof h) == WX_OK, "upload");
    (void)be->add_forward(ctx, y, d, d, 64);
    WX_CHECK(wx_devsim_violations() == v0 + 1 && strstr(wx_devsim_first_violation(), "before slot_ready"),
             "op before slot_ready caught: %s", wx_devsim_first_violation());
    (void)be->copy_wait(ctx, 0);

    /* released, then read again, then uploaded into: the copy waits only for the release */
    long v1 = wx_devsim_violations();
    (void)be->slot_ready(ctx, 1);
    (void)be->slot_release(ctx, 1);
    (void)be->add_forward(ctx, y, d, d, 64);
    WX_CHECK(be->copy_h2d_async(ctx, 1, d, h, sizeof h) != WX_OK && wx_devsim_violations() == v1 + 1,
             "upload over a buffer read after the slot's release caught");

    /* host buffer rewritten between the upload and copy_wait */
    long v2 = wx_devsim_violations();
    (void)be->slot_ready(ctx, 0); /* slot 0 handed to compute: the next upload waits for all */
    (void)be->copy_h2d_async(ctx, 0, y, hy, sizeof hy);
    (void)be->slot_ready(ctx, 0);
    hy[3] = 42.0f;
    WX_CHECK(be->copy_wait(ctx, 0) != WX_OK && wx_devsim_violations() == v2 + 1,
             "host buffer rewritten before copy_wait caught");
    WX_CHECK(be->copy_wait(ctx, 2) != WX_OK, "slot out of range refused");
    be->mem_free(ctx, d);
    be->mem_free(ctx, y);
    wx_ctx_destroy(ctx);
}

static void test_shards(void) {
    int bad = 0, tiles = 1;
    for (int64_t n = 0; n <= 300; n++)
        for (int size = 1; size <= 9; size++) {
            int64_t off[9], cnt[9], next = 0;
            wx_dist_split(n, size, off, cnt);
            for (int r = 0; r < size; r++) {
                int64_t o, c;
                wx_zero1_shard(n, size, r, &o, &c);
                bad += o != off[r] || c != cnt[r];
                tiles &= o == next && (c == n / size || c == n / size + 1);
                next = o + c;
            }
            tiles &= next == n;
        }
    WX_CHECK(bad == 0, "zero1_shard = wx_dist_split (%d mismatches)", bad);
    WX_CHECK(tiles, "the shards tile [0, n) in rank order");
}

int main(void) {
    test_shards();
    test_pattern();
    test_misuse();
    return wx_test_summary();
}
