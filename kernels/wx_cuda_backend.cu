// The CUDA backend table and the per-context CUDA state shared by the op families: stream, cuBLAS
// handle, scratch slots, validation flag, cached plans and index lists, and the deterministic
// column sum used by every bias / parameter gradient reduction.
#include <stdlib.h>
#include <string.h>

#include "wx_cuda_basic.h"
#include "wx_cuda_state.h"

// ---- the table ---------------------------------------------------------------------------------

// Positional initialisation in ops.def order, the order of the struct's fields (C++ before C++20
// has no designated initialisers); the field types check every op's signature.
static const wx_backend wx_cuda_table = {
    "cuda",
#define WX_OP(op, family) wx_cuda_##op##_forward, wx_cuda_##op##_backward,
#define WX_OP_FWD(op, family) wx_cuda_##op##_forward,
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD
    // memory (wx_cuda_mem.cu), in the struct's order
    1, wx_cuda_mem_alloc, wx_cuda_mem_free, wx_cuda_mem_zero, wx_cuda_mem_h2d, wx_cuda_mem_d2h,
    wx_cuda_mem_d2d, wx_cuda_mem_h2d_async, wx_cuda_mem_slot_ready, wx_cuda_mem_slot_release,
    wx_cuda_mem_copy_wait, wx_cuda_host_alloc,
    wx_cuda_host_free, wx_cuda_mem_synchronize,
};

extern "C" const wx_backend *wx_backend_cuda(void) { return &wx_cuda_table; }

// ---- state -------------------------------------------------------------------------------------

extern "C" void wx_cuda_state_free(struct wx_cuda_state *st) {
    if (!st) return;
    // Teardown cannot report failures; each call is still made on a valid handle only.
    for (int i = 0; i < st->nplans; i++) (void)cufftDestroy(st->plans[i].plan);
    free(st->plans);
    if (st->blas) (void)cublasDestroy(st->blas);
    for (int s = 0; s < WX_SCRATCH_COUNT; s++)
        if (st->scratch[s]) (void)cudaFree(st->scratch[s]);
    if (st->flag) (void)cudaFree(st->flag);
    if (st->modes) (void)cudaFree(st->modes);
    if (st->grow_ptr) (void)cudaFree(st->grow_ptr);
    if (st->gperm) (void)cudaFree(st->gperm);
    for (int k = 0; k < WX_COPY_SLOTS; k++) {
        if (st->slot_free[k]) (void)cudaEventDestroy(st->slot_free[k]);
        if (st->slot_done[k]) (void)cudaEventDestroy(st->slot_done[k]);
    }
    if (st->copy_stream) (void)cudaStreamDestroy(st->copy_stream);
    if (st->stream) (void)cudaStreamDestroy(st->stream);
    free(st->mask_host);
    free(st->gidx_host);
    free(st);
}

// Fills a zeroed state; on failure the caller frees whatever was made.
static wx_status state_make(wx_cuda_state *st, int ordinal) {
    WX_TRY(wx_cuda_init(ordinal));
    st->device = ordinal;
    st->precision = WX_CUDA_FP32;
    st->check_indices = 1;
    // A blocking stream: ordered with the legacy default stream, so plain cudaMemcpy by callers
    // needs no extra synchronisation.
    WX_CUDA_CHECK(cudaStreamCreate(&st->stream));
    WX_CUBLAS_CHECK(cublasCreate(&st->blas));
    WX_CUBLAS_CHECK(cublasSetStream(st->blas, st->stream));
    WX_CUBLAS_CHECK(cublasSetPointerMode(st->blas, CUBLAS_POINTER_MODE_HOST));
    // Plain fp32 (no TF32 tensor-op rounding): fp32 results must match the CPU to ~1e-5.
    WX_CUBLAS_CHECK(cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH));
    // cuBLAS is deterministic unless atomics are allowed; keep them off explicitly.
    WX_CUBLAS_CHECK(cublasSetAtomicsMode(st->blas, CUBLAS_ATOMICS_NOT_ALLOWED));
    WX_CUDA_CHECK(cudaMalloc((void **)&st->flag, sizeof(int)));
    WX_CUDA_CHECK(cudaMemsetAsync(st->flag, 0, sizeof(int), st->stream));
    return WX_OK;
}

extern "C" wx_status wx_cuda_ctx_attach(wx_ctx *ctx, int ordinal) {
    if (!ctx) return wx_error_set(WX_ERR_USAGE, "CUDA: no op context to attach to");
    if (ctx->cuda) {
        if (ctx->cuda->device == ordinal) return WX_OK;
        return wx_error_set(WX_ERR_USAGE, "CUDA: context already uses device %d, not %d",
                            ctx->cuda->device, ordinal);
    }
    wx_cuda_state *st = (wx_cuda_state *)wx_calloc(1, sizeof *st);
    wx_status s = state_make(st, ordinal);
    if (s != WX_OK) {
        wx_cuda_state_free(st);
        return s;
    }
    ctx->cuda = st;
    return WX_OK;
}

wx_status wx_cuda_state_get(wx_ctx *ctx, wx_cuda_state **st) {
    *st = NULL;
    if (!ctx) return wx_error_set(WX_ERR_USAGE, "CUDA op called without an op context");
    if (!ctx->cuda) {
        int dev = 0, count = 0;
        WX_TRY(wx_cuda_device_count(&count));
        if (count == 0)
            return wx_error_set(WX_ERR_RUN, "no CUDA device: this machine has no GPU visible to CUDA");
        WX_CUDA_CHECK(cudaGetDevice(&dev));
        WX_TRY(wx_cuda_ctx_attach(ctx, dev));
    }
    *st = ctx->cuda;
    return WX_OK;
}

extern "C" wx_status wx_cuda_set_precision(wx_ctx *ctx, wx_cuda_precision precision) {
    if (precision != WX_CUDA_FP32 && precision != WX_CUDA_BF16)
        return wx_error_set(WX_ERR_USAGE, "CUDA: precision %d, expected fp32 (0) or bf16 (1)",
                            (int)precision);
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    st->precision = precision;
    return WX_OK;
}

extern "C" wx_status wx_cuda_set_index_checks(wx_ctx *ctx, int on) {
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    st->check_indices = on != 0;
    return WX_OK;
}

extern "C" wx_status wx_cuda_ctx_synchronize(wx_ctx *ctx) {
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_CUDA_CHECK(cudaStreamSynchronize(st->stream));
    return WX_OK;
}

wx_status wx_cuda_scratch(wx_cuda_state *st, int slot, size_t bytes, void **ptr) {
    WX_ASSERT(slot >= 0 && slot < WX_SCRATCH_COUNT);
    *ptr = NULL;
    if (bytes == 0) bytes = 1;
    if (bytes > st->scratch_bytes[slot]) {
        if (st->scratch[slot]) {
            // cudaFree waits for the device, so no queued kernel still reads the old buffer.
            WX_CUDA_CHECK(cudaFree(st->scratch[slot]));
            st->scratch[slot] = NULL;
            st->scratch_bytes[slot] = 0;
        }
        // Round up to 1 MiB steps so small growth does not reallocate every call.
        size_t want = (bytes + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
        WX_CUDA_CHECK(cudaMalloc(&st->scratch[slot], want));
        st->scratch_bytes[slot] = want;
    }
    *ptr = st->scratch[slot];
    return WX_OK;
}

wx_status wx_cuda_flag_clear(wx_cuda_state *st) {
    WX_CUDA_CHECK(cudaMemsetAsync(st->flag, 0, sizeof(int), st->stream));
    return WX_OK;
}

wx_status wx_cuda_flag_take(wx_cuda_state *st, int *value) {
    *value = 0;
    WX_CUDA_CHECK(cudaMemcpyAsync(value, st->flag, sizeof(int), cudaMemcpyDeviceToHost, st->stream));
    WX_CUDA_CHECK(cudaStreamSynchronize(st->stream));
    if (*value) WX_TRY(wx_cuda_flag_clear(st));
    return WX_OK;
}

// ---- deterministic column sums ----------------------------------------------------------------

// part(nchunks, cols)[k, j] = Σ_{r in chunk k} m[r, j], rows in increasing order.
__global__ static void col_sum_partial_kernel(double *part, const float *m, int64_t rows,
                                              int64_t cols, int64_t nchunks) {
    WX_CUDA_FOR(i, nchunks * cols) {
        int64_t k = i / cols, j = i % cols;
        int64_t r0 = k * WX_COL_CHUNK, r1 = r0 + WX_COL_CHUNK < rows ? r0 + WX_COL_CHUNK : rows;
        double s = 0;
        for (int64_t r = r0; r < r1; r++) s += (double)m[r * cols + j];
        part[i] = s;
    }
}

// acc[dst(j)] += Σ_k part[k, j], chunks in increasing order.
__global__ static void col_sum_finish_kernel(float *acc, const double *part, int64_t nchunks,
                                             int64_t cols, int64_t split_n) {
    WX_CUDA_FOR(j, cols) {
        double s = 0;
        for (int64_t k = 0; k < nchunks; k++) s += part[k * cols + j];
        int64_t dst = split_n > 0 ? (j & 1) * split_n + j / 2 : j;
        acc[dst] += (float)s;
    }
}

wx_status wx_cuda_col_sum_acc(wx_cuda_state *st, float *acc, const float *m, int64_t rows,
                              int64_t cols, int64_t split_n) {
    if (rows <= 0 || cols <= 0) return WX_OK;
    WX_ASSERT(split_n <= 0 || cols == 2 * split_n);
    int64_t nchunks = (rows + WX_COL_CHUNK - 1) / WX_COL_CHUNK;
    double *part;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * (size_t)(nchunks * cols),
                           (void **)&part));
    col_sum_partial_kernel<<<wx_cuda_blocks(nchunks * cols), WX_CUDA_THREADS, 0, st->stream>>>(
        part, m, rows, cols, nchunks);
    WX_CUDA_LAUNCHED("col_sum_partial_kernel");
    return wx_cuda_col_sum_finish(st, acc, part, nchunks, cols, split_n);
}

wx_status wx_cuda_col_sum_finish(wx_cuda_state *st, float *acc, const double *part,
                                 int64_t nchunks, int64_t cols, int64_t split_n) {
    if (nchunks <= 0 || cols <= 0) return WX_OK;
    col_sum_finish_kernel<<<wx_cuda_blocks(cols), WX_CUDA_THREADS, 0, st->stream>>>(
        acc, part, nchunks, cols, split_n);
    WX_CUDA_LAUNCHED("col_sum_finish_kernel");
    return WX_OK;
}

// ---- deterministic total of partial sums ---------------------------------------------------------

// One block: thread t sums part[t], part[t + T], ... in order, then a fixed tree adds the threads.
__global__ static void sum_parts_kernel(const double *part, int64_t n, float *out, double divisor,
                                        double *acc) {
    __shared__ double sh[WX_CUDA_THREADS];
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += part[i];
    double total = wx_block_sum(s, sh);
    if (threadIdx.x == 0) {
        if (out) *out = (float)(total / divisor);
        if (acc) *acc += total;
    }
}

wx_status wx_cuda_sum_parts(wx_cuda_state *st, const double *part, int64_t n, float *out,
                            double divisor, double *acc) {
    sum_parts_kernel<<<1, WX_CUDA_THREADS, 0, st->stream>>>(part, n, out, divisor, acc);
    WX_CUDA_LAUNCHED("sum_parts_kernel");
    return WX_OK;
}
