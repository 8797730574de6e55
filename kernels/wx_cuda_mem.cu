// Device memory for the CUDA backend table: tensors, copies, pinned staging, async uploads.
#include <stdlib.h>
#include <string.h>

#include "wx_cuda_basic.h"
#include "wx_cuda_state.h"

extern "C" wx_status wx_cuda_mem_alloc(wx_ctx *ctx, void **ptr, size_t bytes) {
    *ptr = NULL;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));  // selects the context's device; "no CUDA device" if none
    WX_CUDA_CHECK(cudaMalloc(ptr, bytes ? bytes : 1));
    cudaError_t e = cudaMemsetAsync(*ptr, 0, bytes ? bytes : 1, st->stream);
    if (e != cudaSuccess) {
        (void)cudaFree(*ptr);
        *ptr = NULL;
        return wx_error_set(WX_ERR_RUN, "CUDA: cudaMemsetAsync of a new %zu-byte buffer failed: %s",
                            bytes, cudaGetErrorString(e));
    }
    return WX_OK;
}

extern "C" void wx_cuda_mem_free(wx_ctx *ctx, void *ptr) {
    (void)ctx;
    // cudaFree waits for the device first, so no queued kernel still uses the buffer. A failure
    // here (a sticky earlier fault) has been or will be reported by a checked call.
    if (ptr) (void)cudaFree(ptr);
}

extern "C" wx_status wx_cuda_mem_zero(wx_ctx *ctx, void *ptr, size_t bytes) {
    if (!bytes) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, st->stream));
    return WX_OK;
}

extern "C" wx_status wx_cuda_mem_h2d(wx_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (!bytes) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st->stream));
    // Blocking contract: the caller may reuse src as soon as this returns.
    WX_CUDA_CHECK(cudaStreamSynchronize(st->stream));
    return WX_OK;
}

extern "C" wx_status wx_cuda_mem_d2h(wx_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (!bytes) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st->stream));
    WX_CUDA_CHECK(cudaStreamSynchronize(st->stream));
    return WX_OK;
}

extern "C" wx_status wx_cuda_mem_d2d(wx_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st->stream));
    return WX_OK;
}

static wx_status copy_stream_get(wx_cuda_state *st) {
    if (st->copy_stream) return WX_OK;
    WX_CUDA_CHECK(cudaStreamCreateWithFlags(&st->copy_stream, cudaStreamNonBlocking));
    for (int k = 0; k < WX_COPY_SLOTS; k++) {
        WX_CUDA_CHECK(cudaEventCreateWithFlags(&st->slot_free[k], cudaEventDisableTiming));
        WX_CUDA_CHECK(cudaEventCreateWithFlags(&st->slot_done[k], cudaEventDisableTiming));
    }
    return WX_OK;
}

static wx_status slot_check(int slot, const char *what) {
    if (slot < 0 || slot >= WX_COPY_SLOTS)
        return wx_error_set(WX_ERR_USAGE, "CUDA: %s: upload slot %d (expected 0..%d)", what, slot,
                            WX_COPY_SLOTS - 1);
    return WX_OK;
}

extern "C" wx_status wx_cuda_mem_h2d_async(wx_ctx *ctx, int slot, void *dst, const void *src,
                                           size_t bytes) {
    WX_TRY(slot_check(slot, "copy_h2d_async"));
    if (!bytes) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_TRY(copy_stream_get(st));
    // The copy must not overwrite dst while queued ops still read it. With a release since the
    // slot was last handed to the compute stream, those readers end at slot_free (the step before
    // the one in flight): the copy overlaps everything queued after. Without one, nothing is known
    // about dst's readers (nor about the zeroing memset of a new buffer): wait for all queued work.
    if (!st->slot_freed[slot]) {
        WX_CUDA_CHECK(cudaEventRecord(st->slot_free[slot], st->stream));
        st->slot_freed[slot] = 1;
    }
    WX_CUDA_CHECK(cudaStreamWaitEvent(st->copy_stream, st->slot_free[slot], 0));
    WX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st->copy_stream));
    WX_CUDA_CHECK(cudaEventRecord(st->slot_done[slot], st->copy_stream));
    st->slot_copied[slot] = 1;
    return WX_OK;
}

extern "C" wx_status wx_cuda_mem_slot_ready(wx_ctx *ctx, int slot) {
    WX_TRY(slot_check(slot, "slot_ready"));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    if (st->slot_copied[slot]) WX_CUDA_CHECK(cudaStreamWaitEvent(st->stream, st->slot_done[slot], 0));
    st->slot_freed[slot] = 0; // the compute stream reads the slot from here on
    return WX_OK;
}

extern "C" wx_status wx_cuda_mem_slot_release(wx_ctx *ctx, int slot) {
    WX_TRY(slot_check(slot, "slot_release"));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_TRY(copy_stream_get(st));
    WX_CUDA_CHECK(cudaEventRecord(st->slot_free[slot], st->stream));
    st->slot_freed[slot] = 1;
    return WX_OK;
}

extern "C" wx_status wx_cuda_mem_copy_wait(wx_ctx *ctx, int slot) {
    WX_TRY(slot_check(slot, "copy_wait"));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    if (st->slot_copied[slot]) WX_CUDA_CHECK(cudaEventSynchronize(st->slot_done[slot]));
    return WX_OK;
}

extern "C" int wx_cuda_host_is_pinned(const void *ptr) {
    if (!ptr) return 0;
    cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, ptr);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // no driver / no device: nothing can be pinned
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

extern "C" wx_status wx_cuda_host_alloc(wx_ctx *ctx, void **ptr, size_t bytes) {
    (void)ctx;
    *ptr = NULL;
    size_t n = bytes ? bytes : 1;
    int count = 0;
    if (wx_cuda_device_count(&count) == WX_OK && count > 0 &&
        cudaMallocHost(ptr, n) == cudaSuccess) {
        memset(*ptr, 0, n);
        return WX_OK;
    }
    (void)cudaGetLastError();
    // Pinning is an optimisation: pageable memory works with every copy, only slower and (for
    // copy_h2d_async) not overlapped.
    *ptr = calloc(1, n);
    if (!*ptr) return wx_error_set(WX_ERR_RUN, "cannot allocate %zu bytes of host memory", bytes);
    return WX_OK;
}

extern "C" void wx_cuda_host_free(wx_ctx *ctx, void *ptr) {
    (void)ctx;
    if (!ptr) return;
    if (wx_cuda_host_is_pinned(ptr)) (void)cudaFreeHost(ptr);
    else free(ptr);
}

extern "C" wx_status wx_cuda_mem_synchronize(wx_ctx *ctx) {
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    if (st->copy_stream) WX_CUDA_CHECK(cudaStreamSynchronize(st->copy_stream));
    WX_CUDA_CHECK(cudaStreamSynchronize(st->stream));
    return WX_OK;
}
