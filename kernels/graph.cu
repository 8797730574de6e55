// Graph ops on the GPU for GraphCast message passing (contract src/ops/graph.inc; reference
// src/ops/graph.c). Deterministic without atomics: every output element is owned by one thread,
// which sums its edges in CSR order; that is the CPU's order too, so the float sums match it.
//
// Index arrays are device memory. With index checks on (the default) each op first validates them
// on the device (a flag, read back: one synchronisation); on failure the arrays are copied back
// so the message names the first bad entry, as the CPU's does.
//
// gather_rows backward needs, per node, the edges that read it: the inverse CSR of idx. It is
// built on the host by wx_graph_csr_build (a stable counting sort, so edges stay in increasing
// order) and cached in the CUDA state; idx is read back on every call and the CSR rebuilt only
// when its content (or N) changes. Model code builds these graphs once, so after the first step
// the cost is one read-back of idx.
#include <stdlib.h>
#include <string.h>

#include "wx_cuda_state.h"
extern "C" { // a C header without C++ guards; its own includes are already in
#include "ops/graph_csr.h"
}

// ---- validation -------------------------------------------------------------------------------

// flag = 1 if any idx[i] is outside [0, n) (n < 0: no upper bound). Racing writes all store 1.
__global__ static void check_index_kernel(int *flag, const int32_t *idx, int64_t e, int64_t n) {
    WX_CUDA_FOR(i, e) if (idx[i] < 0 || (n >= 0 && idx[i] >= n)) *flag = 1;
}

// flag = 1 unless row_ptr(n+1) runs from 0 to e without decreasing.
__global__ static void check_row_ptr_kernel(int *flag, const int32_t *row_ptr, int64_t n, int64_t e) {
    WX_CUDA_FOR(r, n + 1) {
        if ((r == 0 && row_ptr[0] != 0) || (r == n && row_ptr[n] != e) ||
            (r < n && row_ptr[r + 1] < row_ptr[r]))
            *flag = 1;
    }
}

static int32_t *to_host(const int32_t *dev, int64_t count, cudaStream_t s, cudaError_t *err) {
    int32_t *h = (int32_t *)wx_malloc(sizeof(int32_t) * (size_t)(count > 0 ? count : 1));
    *err = cudaMemcpyAsync(h, dev, sizeof(int32_t) * (size_t)count, cudaMemcpyDeviceToHost, s);
    if (*err == cudaSuccess) *err = cudaStreamSynchronize(s);
    return h;
}

// The CPU's message for the first index outside [0, n) (n < 0: no upper bound).
static wx_status index_error(wx_cuda_state *st, const char *op, const int32_t *idx_dev, int64_t e,
                             int64_t n) {
    cudaError_t err;
    int32_t *idx = to_host(idx_dev, e, st->stream, &err);
    wx_status s = WX_OK;
    if (err != cudaSuccess)
        s = wx_error_set(WX_ERR_RUN, "%s: invalid index found; reading it back failed: %s", op,
                         cudaGetErrorString(err));
    for (int64_t i = 0; i < e && s == WX_OK; i++)
        if (idx[i] < 0 || (n >= 0 && idx[i] >= n))
            s = wx_error_set(WX_ERR_RUN, "%s: index[%lld] = %d, expected 0 <= index < %lld", op,
                             (long long)i, (int)idx[i], (long long)n);
    free(idx);
    if (s == WX_OK) s = wx_error_set(WX_ERR_RUN, "%s: the device flagged an index out of range", op);
    return s;
}

static wx_status check_index(wx_cuda_state *st, const char *op, const int32_t *idx, int64_t e,
                             int64_t n) {
    if (!st->check_indices || e == 0) return WX_OK;
    WX_TRY(wx_cuda_flag_clear(st));
    check_index_kernel<<<wx_cuda_blocks(e), WX_CUDA_THREADS, 0, st->stream>>>(st->flag, idx, e, n);
    WX_CUDA_LAUNCHED("check_index_kernel");
    int bad;
    WX_TRY(wx_cuda_flag_take(st, &bad));
    return bad ? index_error(st, op, idx, e, n) : WX_OK;
}

static wx_status check_csr(wx_cuda_state *st, const char *op, const int32_t *row_ptr,
                           const int32_t *perm, int64_t n, int64_t e) {
    if (!st->check_indices) return WX_OK;
    WX_TRY(wx_cuda_flag_clear(st));
    check_row_ptr_kernel<<<wx_cuda_blocks(n + 1), WX_CUDA_THREADS, 0, st->stream>>>(st->flag,
                                                                                   row_ptr, n, e);
    WX_CUDA_LAUNCHED("check_row_ptr_kernel");
    int bad;
    WX_TRY(wx_cuda_flag_take(st, &bad));
    if (bad) {
        cudaError_t err;
        int32_t *rp = to_host(row_ptr, n + 1, st->stream, &err);
        wx_status s = WX_OK;
        if (err != cudaSuccess)
            s = wx_error_set(WX_ERR_RUN, "%s: invalid row_ptr found; reading it back failed: %s",
                             op, cudaGetErrorString(err));
        else if (rp[0] != 0 || rp[n] != e)
            s = wx_error_set(WX_ERR_RUN, "%s: row_ptr[0] = %d and row_ptr[%lld] = %d, expected 0 "
                             "and %lld", op, (int)rp[0], (long long)n, (int)rp[n], (long long)e);
        for (int64_t r = 0; r < n && s == WX_OK; r++)
            if (rp[r + 1] < rp[r])
                s = wx_error_set(WX_ERR_RUN, "%s: row_ptr decreases at node %lld (%d > %d)", op,
                                 (long long)r, (int)rp[r], (int)rp[r + 1]);
        free(rp);
        if (s == WX_OK) s = wx_error_set(WX_ERR_RUN, "%s: the device flagged row_ptr as invalid", op);
        return s;
    }
    return check_index(st, op, perm, e, e);
}

static wx_status sizes_check(const char *op, int64_t n, int64_t e, int64_t d) {
    if (e < 0 || n < 0 || d < 0 || e > INT32_MAX || n > INT32_MAX - 1)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes n=%lld e=%lld d=%lld, expected >= 0 (and n, e "
                            "within int32)", op, (long long)n, (long long)e, (long long)d);
    return WX_OK;
}

// ---- kernels ------------------------------------------------------------------------------------

// y(E,D)[i] = x(N,D)[idx[i]]; thread per element, consecutive threads along D (coalesced).
__global__ static void gather_kernel(float *y, const float *x, const int32_t *idx, int64_t e,
                                     int64_t d) {
    WX_CUDA_FOR(t, e * d) {
        int64_t i = t / d, c = t % d;
        int32_t src = idx[i];
        y[t] = src >= 0 ? x[(int64_t)src * d + c] : __int_as_float(0x7fc00000); // NaN if unchecked
    }
}

// y(N,D)[r] = Σ_{j in row r} x(E,D)[perm[j]], j increasing: one thread per (r, c) element.
__global__ static void csr_sum_kernel(float *y, const float *x, const int32_t *row_ptr,
                                      const int32_t *perm, int64_t n, int64_t d) {
    WX_CUDA_FOR(t, n * d) {
        int64_t r = t / d, c = t % d;
        float s = 0.0f;
        for (int32_t j = row_ptr[r]; j < row_ptr[r + 1]; j++) s += x[(int64_t)perm[j] * d + c];
        y[t] = s;
    }
}

// dx(E,D)[perm[j]] = dy(N,D)[r] for j in row r: each edge row written by exactly one thread.
__global__ static void csr_spread_kernel(float *dx, const float *dy, const int32_t *row_ptr,
                                         const int32_t *perm, int64_t n, int64_t d) {
    WX_CUDA_FOR(t, n * d) {
        int64_t r = t / d, c = t % d;
        float v = dy[t];
        for (int32_t j = row_ptr[r]; j < row_ptr[r + 1]; j++) dx[(int64_t)perm[j] * d + c] = v;
    }
}

// ---- ops ----------------------------------------------------------------------------------------

extern "C" wx_status wx_cuda_gather_rows_forward(wx_ctx *ctx, float *y, const float *x,
                                                 const int32_t *idx, int64_t e, int64_t d) {
    // y(E,D), x(N,D), idx(E) in [0, N) (N unknown here: only idx >= 0 is checked, as on the CPU)
    WX_TRY(sizes_check("gather_rows", 0, e, d));
    if (e == 0 || d == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_TRY(check_index(st, "gather_rows", idx, e, -1));
    gather_kernel<<<wx_cuda_blocks(e * d), WX_CUDA_THREADS, 0, st->stream>>>(y, x, idx, e, d);
    WX_CUDA_LAUNCHED("gather_kernel");
    return WX_OK;
}

// The inverse CSR of idx (nodes n, edges e) on the device, rebuilt when idx or n changed.
static wx_status gather_csr_get(wx_cuda_state *st, const int32_t *idx_dev, int64_t e, int64_t n) {
    cudaError_t err;
    int32_t *idx = to_host(idx_dev, e, st->stream, &err);
    if (err != cudaSuccess) {
        free(idx);
        return wx_error_set(WX_ERR_RUN, "gather_rows backward: reading idx back failed: %s",
                            cudaGetErrorString(err));
    }
    if (st->gperm && st->gidx_host && st->gidx_e == e && st->gidx_n == n &&
        (e == 0 || memcmp(idx, st->gidx_host, sizeof(int32_t) * (size_t)e) == 0)) {
        free(idx);
        return WX_OK;
    }
    int32_t *row_ptr = (int32_t *)wx_malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t *perm = (int32_t *)wx_malloc(sizeof(int32_t) * (size_t)(e > 0 ? e : 1));
    // Validates every index against [0, n) with the CPU's message.
    wx_status s = wx_graph_csr_build(idx, e, n, row_ptr, perm);
    if (s != WX_OK) {
        free(idx), free(row_ptr), free(perm);
        return wx_error_wrap(s, "gather_rows backward: ");
    }
    // Drop the old cache first (cudaFree waits for kernels still reading it).
    free(st->gidx_host);
    st->gidx_host = NULL;
    cudaError_t err2 = cudaSuccess;
    if (st->grow_ptr) err = cudaFree(st->grow_ptr);
    if (st->gperm) err2 = cudaFree(st->gperm);
    if (err == cudaSuccess) err = err2;
    st->grow_ptr = st->gperm = NULL;
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&st->grow_ptr, sizeof(int32_t) * (size_t)(n + 1));
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&st->gperm, sizeof(int32_t) * (size_t)(e > 0 ? e : 1));
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(st->grow_ptr, row_ptr, sizeof(int32_t) * (size_t)(n + 1),
                              cudaMemcpyHostToDevice, st->stream);
    if (err == cudaSuccess && e > 0)
        err = cudaMemcpyAsync(st->gperm, perm, sizeof(int32_t) * (size_t)e, cudaMemcpyHostToDevice,
                              st->stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(st->stream); // before the host copies go
    free(row_ptr), free(perm);
    if (err != cudaSuccess) {
        free(idx);
        if (st->grow_ptr) (void)cudaFree(st->grow_ptr);
        if (st->gperm) (void)cudaFree(st->gperm);
        st->grow_ptr = st->gperm = NULL;
        return wx_error_set(WX_ERR_RUN, "gather_rows backward: uploading the inverse CSR failed: %s",
                            cudaGetErrorString(err));
    }
    st->gidx_host = idx;
    st->gidx_e = e;
    st->gidx_n = n;
    return WX_OK;
}

// Differentiates y[e] = x[idx[e]]: dx(N,D) = Σ_{e: idx[e]=n} dy(E,D)[e], overwritten, summed in
// increasing e (the inverse CSR lists each node's edges in that order).
extern "C" wx_status wx_cuda_gather_rows_backward(wx_ctx *ctx, float *dx, const float *dy,
                                                  const int32_t *idx, int64_t e, int64_t n,
                                                  int64_t d) {
    WX_TRY(sizes_check("gather_rows backward", n, e, d));
    if (e == 0 && (n == 0 || d == 0)) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_TRY(gather_csr_get(st, idx, e, n)); // also rejects indices outside [0, n), as the CPU
    if (n == 0 || d == 0) return WX_OK;
    csr_sum_kernel<<<wx_cuda_blocks(n * d), WX_CUDA_THREADS, 0, st->stream>>>(dx, dy, st->grow_ptr,
                                                                             st->gperm, n, d);
    WX_CUDA_LAUNCHED("csr_sum_kernel (gather backward)");
    return WX_OK;
}

// x(E,D); row_ptr(N+1), perm(E) from wx_graph_csr_build; y(N,D) overwritten.
extern "C" wx_status wx_cuda_segment_sum_forward(wx_ctx *ctx, float *y, const float *x,
                                                 const int32_t *row_ptr, const int32_t *perm,
                                                 int64_t n, int64_t e, int64_t d) {
    WX_TRY(sizes_check("segment_sum", n, e, d));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_TRY(check_csr(st, "segment_sum", row_ptr, perm, n, e));
    if (n == 0 || d == 0) return WX_OK;
    csr_sum_kernel<<<wx_cuda_blocks(n * d), WX_CUDA_THREADS, 0, st->stream>>>(y, x, row_ptr, perm,
                                                                             n, d);
    WX_CUDA_LAUNCHED("csr_sum_kernel (segment sum)");
    return WX_OK;
}

// Differentiates y[r] = Σ_j x[perm[j]] (j in row r): dx(E,D)[perm[j]] = dy(N,D)[r], overwritten.
extern "C" wx_status wx_cuda_segment_sum_backward(wx_ctx *ctx, float *dx, const float *dy,
                                                  const int32_t *row_ptr, const int32_t *perm,
                                                  int64_t n, int64_t e, int64_t d) {
    WX_TRY(sizes_check("segment_sum backward", n, e, d));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    WX_TRY(check_csr(st, "segment_sum backward", row_ptr, perm, n, e));
    if (n == 0 || d == 0) return WX_OK;
    csr_spread_kernel<<<wx_cuda_blocks(n * d), WX_CUDA_THREADS, 0, st->stream>>>(dx, dy, row_ptr,
                                                                                perm, n, d);
    WX_CUDA_LAUNCHED("csr_spread_kernel");
    return WX_OK;
}
