/* The backend table: one function pointer per op in ops/ops.def, with the CPU signature.
 * Model code calls ops only through a table (be->linear_forward(...)), never a backend directly,
 * so one model source serves the CPU and the CUDA backends. Pointers are host or device memory
 * according to the backend. */
#ifndef WX_BACKEND_H
#define WX_BACKEND_H

#include <stddef.h>

#include "ops/wx_ops.h"

/* Upload slots of copy_h2d_async (double buffering: one batch in use, the next one uploading). */
#define WX_COPY_SLOTS 2

typedef struct wx_backend {
    const char *name; /* "cpu" or "cuda" */
#define WX_OP(op, family)                                 \
    __typeof__(wx_cpu_##op##_forward) *op##_forward;      \
    __typeof__(wx_cpu_##op##_backward) *op##_backward;
#define WX_OP_FWD(op, family) __typeof__(wx_cpu_##op##_forward) *op##_forward;
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD
    /* ---- memory: where this backend's tensors live (after the ops: the CUDA table is
     * initialised positionally). A model allocates its parameters, activations and scratch with
     * mem_alloc, and moves data in and out only with the copies, so the same model source works
     * on host (CPU: malloc/memcpy) and device memory (CUDA: cudaMalloc/cudaMemcpy). ---- */
    int on_device; /* 0: tensors are host memory (CPU); 1: device memory (CUDA) */
    /* *ptr = `bytes` of tensor memory, zeroed (at least 1 byte is allocated for 0). */
    wx_status (*mem_alloc)(wx_ctx *ctx, void **ptr, size_t bytes);
    void (*mem_free)(wx_ctx *ctx, void *ptr); /* NULL is a no-op */
    wx_status (*mem_zero)(wx_ctx *ctx, void *ptr, size_t bytes);
    /* Blocking copies between host memory and this backend's memory, ordered after every op
     * queued before them (d2h returns with the data on the host). */
    wx_status (*copy_h2d)(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
    wx_status (*copy_d2h)(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
    wx_status (*copy_d2d)(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
    /* Double-buffered uploads (wx_batch_stage.h). `slot` (0 .. WX_COPY_SLOTS - 1) names one set of
     * backend buffers and the host buffers they are filled from; each slot has its own ordering:
     *  - copy_h2d_async: a host → backend copy that may return before it is done (CUDA: on a copy
     *    stream, from pinned memory). It waits only for the compute work up to the slot's last
     *    slot_release — the ops that read the slot's buffers — not for everything queued, so it
     *    overlaps the step in flight; with no release since the slot's last slot_ready it waits
     *    for everything queued. The host buffer must stay untouched until copy_wait(slot).
     *  - slot_ready: ops queued after it wait for the slot's copies (CUDA: the compute stream
     *    waits on the copies' event). An op must not touch a copy's target before this.
     *  - slot_release: the ops queued so far are the last readers of the slot's buffers.
     *  - copy_wait: the host waits until the slot's copies have read their host buffers.
     * CPU: a plain memcpy and no-ops. */
    wx_status (*copy_h2d_async)(wx_ctx *ctx, int slot, void *dst, const void *src, size_t bytes);
    wx_status (*slot_ready)(wx_ctx *ctx, int slot);
    wx_status (*slot_release)(wx_ctx *ctx, int slot);
    wx_status (*copy_wait)(wx_ctx *ctx, int slot);
    /* Host memory for staging (pinned on CUDA, so copies are DMA and can be async; falls back to
     * plain malloc when pinning fails). host_free tells the two apart. Zeroed. */
    wx_status (*host_alloc)(wx_ctx *ctx, void **ptr, size_t bytes);
    void (*host_free)(wx_ctx *ctx, void *ptr);
    /* Waits for every queued op; reports an asynchronous fault. */
    wx_status (*synchronize)(wx_ctx *ctx);
} wx_backend;

/* The CPU backend (always present). */
const wx_backend *wx_backend_cpu(void);

/* The backend called `name` ("cpu", "cuda"): WX_ERR_USAGE naming it when this build has no such
 * backend (the CUDA one exists only in builds with WX_HAVE_CUDA); for "cuda" also checks that a
 * GPU is visible (WX_ERR_RUN "no CUDA device ..." otherwise). `what` names the setting in
 * messages (e.g. "train.yaml: line 4: key 'device'"). */
wx_status wx_backend_by_name(const char *name, const char *what, const wx_backend **out);

/* Whether `be` is the CUDA backend (always 0 in builds without CUDA): what only CUDA has (GPU
 * selection per rank, bf16 GEMMs, NCCL) is keyed on it, not on on_device, which the test-only
 * device simulator also sets. */
int wx_backend_is_cuda(const wx_backend *be);

/* Allocation helpers: NULL on failure with the error set (message names `what` and the size). */
void *wx_backend_alloc(const wx_backend *be, wx_ctx *ctx, size_t bytes, const char *what);
/* Copies n floats of host memory into a new backend buffer (NULL with the error set). */
float *wx_backend_upload_f32(const wx_backend *be, wx_ctx *ctx, const float *host, int64_t n,
                             const char *what);

/* Names of every op in the op list, NULL-terminated (for tests and `wxcast info`). */
extern const char *const wx_op_names[];

#endif
