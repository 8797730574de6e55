/* Internal to the CUDA units (C++ only): the per-context CUDA state and the helpers the op families
 * share: launch sizes, scratch buffers, the deterministic block sum and column sums, and the
 * read-back of a validation flag. */
#ifndef WX_CUDA_STATE_H
#define WX_CUDA_STATE_H

#include <stdint.h>

#include "wx_cuda_backend.h"
#include "wx_cuda_check.h"

/* Threads per block for element-wise kernels and for the block reductions (a power of two: the
 * tree in wx_block_sum halves it). */
#define WX_CUDA_THREADS 256

/* Scratch slots, one per role, so that a helper never reuses memory its caller still holds:
 * an op carves its temporaries from OP, the GEMM helper converts to bf16 in BF16, reductions keep
 * their partial sums in REDUCE; the FFTs keep their channel-planar spectra in FFT and give cuFFT
 * one work area, FFT_WORK, shared by every plan. */
enum {
    WX_SCRATCH_OP = 0,
    WX_SCRATCH_BF16 = 1,
    WX_SCRATCH_REDUCE = 2,
    WX_SCRATCH_FFT = 3,
    WX_SCRATCH_FFT_WORK = 4,
    WX_SCRATCH_COUNT = 5
};

/* A cuFFT plan of `batch` contiguous (H, W) transforms (batch = B·C) in one direction. */
typedef struct {
    int64_t h, w, batch;
    int r2c;
    size_t work; /* bytes of work area it needs (FFT_WORK scratch; no auto-allocation) */
    cufftHandle plan;
} wx_cuda_fft_plan;

struct wx_cuda_state {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    wx_cuda_precision precision;
    int check_indices;
    void *scratch[WX_SCRATCH_COUNT];
    size_t scratch_bytes[WX_SCRATCH_COUNT];
    int *flag; /* one device int for validation kernels */
    /* cuFFT plans, made once per (H, W, B·C, direction) and reused */
    wx_cuda_fft_plan *plans;
    int nplans, cap_plans;
    /* AFNO kept modes: host copy of the last mask and the device list of kept indices */
    uint8_t *mask_host;
    int64_t mask_len, nmodes;
    int64_t *modes;
    /* gather_rows backward: host copy of the last idx and its inverse CSR on the device */
    int32_t *gidx_host;
    int64_t gidx_e, gidx_n;
    int32_t *grow_ptr, *gperm;
    /* async host → device copies (copy_h2d_async): their own stream and, per upload slot, an
     * event for "the slot's last readers are done" (slot_release, on the compute stream; the
     * copies wait on it when slot_freed) and one for "the slot's copies are done" (on the copy
     * stream; slot_ready makes the compute stream wait on it, copy_wait the host) */
    cudaStream_t copy_stream;
    cudaEvent_t slot_free[WX_COPY_SLOTS], slot_done[WX_COPY_SLOTS];
    int slot_freed[WX_COPY_SLOTS];  /* slot_free holds a release made after the last slot_ready */
    int slot_copied[WX_COPY_SLOTS]; /* slot_done has been recorded */
};
typedef struct wx_cuda_state wx_cuda_state;

/* ctx->cuda, created on the current device if the context has none yet. */
wx_status wx_cuda_state_get(wx_ctx *ctx, wx_cuda_state **st);
/* A device buffer of at least `bytes` in slot `slot`, valid until the next request of that slot.
 * Growing frees the old buffer (cudaFree waits for the kernels that use it). */
wx_status wx_cuda_scratch(wx_cuda_state *st, int slot, size_t bytes, void **ptr);
/* Copies the validation flag back (synchronising the stream) and resets it to 0. */
wx_status wx_cuda_flag_take(wx_cuda_state *st, int *value);
/* Zeroes the validation flag (queued on the stream). */
wx_status wx_cuda_flag_clear(wx_cuda_state *st);

/* acc[j] += Σ_r m(rows, cols)[r, j] in double, rows taken in fixed chunks and the chunk partials
 * added in chunk order: deterministic, no atomics. With split_n > 0 the columns are interleaved
 * complex (cols = 2·split_n) and the sum of column j goes to acc[(j & 1)·split_n + j / 2] (the
 * split (2, n) layout of the AFNO biases). */
wx_status wx_cuda_col_sum_acc(wx_cuda_state *st, float *acc, const float *m, int64_t rows,
                              int64_t cols, int64_t split_n);
/* The second stage alone, for reductions whose terms are not a stored matrix (LayerNorm's
 * dgamma): acc[dst(j)] += Σ_k part(nchunks, cols)[k, j], k in increasing order. */
wx_status wx_cuda_col_sum_finish(wx_cuda_state *st, float *acc, const double *part,
                                 int64_t nchunks, int64_t cols, int64_t split_n);
/* total = Σ part(n) (device) in a fixed tree order, then, on the device, *out = (float)(total /
 * divisor) when out is non-NULL and *acc += total when acc is non-NULL. One block; no atomics. */
wx_status wx_cuda_sum_parts(wx_cuda_state *st, const double *part, int64_t n, float *out,
                            double divisor, double *acc);
/* Rows per partial sum in the column sums: fixed, so the summation order depends only on the
 * shape. */
#define WX_COL_CHUNK 256

/* Blocks for a grid-stride loop over n items: enough to fill the GPU, never beyond the grid
 * limit. n > 0. */
static inline unsigned wx_cuda_blocks(int64_t n) {
    int64_t b = (n + WX_CUDA_THREADS - 1) / WX_CUDA_THREADS;
    const int64_t cap = 65535LL * 16;
    return (unsigned)(b < 1 ? 1 : (b > cap ? cap : b));
}

/* Grid-stride index loop: the only loop shape the element-wise kernels use, so every kernel is
 * bounds-checked by construction. */
#define WX_CUDA_FOR(i, n)                                                                  \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);              \
         i += (int64_t)gridDim.x * blockDim.x)

/* Sum of v over the block (blockDim.x == WX_CUDA_THREADS), in a fixed tree order: the same inputs
 * give the same bits on every run. Every thread of the block must call it; all get the sum. */
static __device__ __forceinline__ double wx_block_sum(double v, double *sh /* [WX_CUDA_THREADS] */) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = WX_CUDA_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads(); /* sh may be reused right after */
    return r;
}

#endif
