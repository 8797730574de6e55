/* The CUDA backend: the backend table with every op of ops/ops.def on the GPU, and the per-context
 * CUDA state (stream, cuBLAS handle, cuFFT plan cache, scratch) that the ops share.
 *
 * Memory: every tensor pointer passed to a CUDA op is device memory, including the scalar outputs
 * (the loss value of mse_latw/rel_l2, the double sumsq of grad_norm) and the index arrays and the
 * AFNO mask. The only host arrays are concat's pointer and size arrays (xs/dxs: host arrays of
 * device pointers; cs: host sizes) and scalar arguments passed by value (dloss, lr, ...).
 *
 * Ordering: ops are queued on the state's stream and return before the GPU has finished;
 * wx_cuda_ctx_synchronize() waits. A kernel fault surfaces at the next checked call. The stream is
 * a blocking stream, so plain cudaMemcpy on the default stream is ordered with it.
 *
 * Host synchronisations on the default path (kept simple and correct before fast):
 *   - index validation of gather_rows / segment_sum (one int read back; off with
 *     wx_cuda_set_index_checks(ctx, 0));
 *   - afno_filter reads the (H,Wf) mask back to list the kept modes (cached: the device list is
 *     rebuilt only when the mask's content changes);
 *   - gather_rows backward reads idx back to build (once, cached by content) the inverse CSR that
 *     makes its sum deterministic without atomics;
 *   - rel_l2 reads the B per-sample sums back (to reject zero targets, as the CPU does).
 *
 * Precision: WX_CUDA_FP32 (default) runs every GEMM in fp32 (cublasSgemm, no TF32). WX_CUDA_BF16
 * rounds the inputs of the dense GEMMs (linear, patch_embed) to bf16 and accumulates in fp32
 * (cublasGemmEx, CUBLAS_COMPUTE_32F); outputs, master weights and optimizer state stay fp32. The
 * AFNO complex GEMMs and everything else stay fp32 in both modes. */
#ifndef WX_CUDA_BACKEND_H
#define WX_CUDA_BACKEND_H

#include "backend/wx_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { WX_CUDA_FP32 = 0, WX_CUDA_BF16 = 1 } wx_cuda_precision;

struct wx_cuda_state;

/* The CUDA table; same function pointer types as the CPU table. */
const wx_backend *wx_backend_cuda(void);

/* Creates ctx->cuda on device `ordinal` (selects it, makes the stream and the cuBLAS handle).
 * Ops call it lazily on the current device when ctx->cuda is NULL. Fails with "no CUDA device"
 * when none is visible. */
wx_status wx_cuda_ctx_attach(wx_ctx *ctx, int ordinal);
/* Frees everything the state holds (plans, caches, scratch, handle, stream); NULL is a no-op.
 * Called by wx_ctx_destroy. */
void wx_cuda_state_free(struct wx_cuda_state *st);

wx_status wx_cuda_set_precision(wx_ctx *ctx, wx_cuda_precision precision);
/* Device-side validation of index arrays before graph ops (default on). */
wx_status wx_cuda_set_index_checks(wx_ctx *ctx, int on);
/* Waits for every op queued on ctx's stream and reports an asynchronous fault. */
wx_status wx_cuda_ctx_synchronize(wx_ctx *ctx);

/* The memory fields of the table (kernels/wx_cuda_mem.cu): cudaMalloc'd tensors zeroed on the
 * state's stream; blocking copies with cudaMemcpy (the state's stream is a blocking stream, so
 * they are ordered after every queued op); async h2d on a copy stream whose completion the
 * compute stream waits on, per upload slot (events); pinned host staging (cudaMallocHost, falling back to malloc
 * when pinning fails, e.g. without a device: host_free tells them apart). */
wx_status wx_cuda_mem_alloc(wx_ctx *ctx, void **ptr, size_t bytes);
void wx_cuda_mem_free(wx_ctx *ctx, void *ptr);
wx_status wx_cuda_mem_zero(wx_ctx *ctx, void *ptr, size_t bytes);
wx_status wx_cuda_mem_h2d(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
wx_status wx_cuda_mem_d2h(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
wx_status wx_cuda_mem_d2d(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
wx_status wx_cuda_mem_h2d_async(wx_ctx *ctx, int slot, void *dst, const void *src, size_t bytes);
wx_status wx_cuda_mem_slot_ready(wx_ctx *ctx, int slot);
wx_status wx_cuda_mem_slot_release(wx_ctx *ctx, int slot);
wx_status wx_cuda_mem_copy_wait(wx_ctx *ctx, int slot);
wx_status wx_cuda_host_alloc(wx_ctx *ctx, void **ptr, size_t bytes);
void wx_cuda_host_free(wx_ctx *ctx, void *ptr);
wx_status wx_cuda_mem_synchronize(wx_ctx *ctx);
/* 1 when ptr came from cudaMallocHost (pinned), 0 for any other pointer (plain malloc). */
int wx_cuda_host_is_pinned(const void *ptr);

/* Benchmark helpers (kernels/wx_cuda_bench.cu): the measured rate of n³ GEMMs in TFLOP/s (bf16
 * inputs + fp32 accumulation when bf16, else fp32), and the device's free/total memory. */
wx_status wx_cuda_gemm_rate(wx_ctx *ctx, int n, int bf16, int reps, double *tflops);
wx_status wx_cuda_mem_info(wx_ctx *ctx, size_t *free_bytes, size_t *total_bytes);

/* The ops, declared with the CPU types so any signature drift is a compile error. */
#define WX_OP(op, family)                                      \
    extern __typeof__(wx_cpu_##op##_forward) wx_cuda_##op##_forward; \
    extern __typeof__(wx_cpu_##op##_backward) wx_cuda_##op##_backward;
#define WX_OP_FWD(op, family) extern __typeof__(wx_cpu_##op##_forward) wx_cuda_##op##_forward;
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD

#ifdef __cplusplus
}
#endif

#endif
