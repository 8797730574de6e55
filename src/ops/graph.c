/* Graph ops for GraphCast message passing: row gather (senders/receivers → edges) and segment sum
 * (edges → receivers), plus the receiver CSR builder (ops/graph_csr.h).
 *
 * Determinism without atomics: every output element is a sum taken in one fixed order that does
 * not depend on the thread count. The gather backward splits the feature columns between threads
 * and each thread walks all edges in increasing e; the segment sum gives each receiver to one
 * thread, which sums its edges in CSR order. */
#include <string.h>

#include <omp.h>

#include "ops/graph_csr.h"
#include "ops/wx_ops.h"
#include "ops/wx_real.h"

#define WXR wx_real
#define WXF WX_FN

static int graph_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

/* Indices must lie in [0, n); n < 0 means "upper bound unknown" (the forward gather). */
static wx_status check_index(const char *op, const int32_t *idx, int64_t e, int64_t n) {
    for (int64_t i = 0; i < e; i++)
        if (idx[i] < 0 || (n >= 0 && idx[i] >= n))
            return wx_error_set(WX_ERR_RUN, "%s: index[%lld] = %d, expected 0 <= index < %lld", op,
                                (long long)i, (int)idx[i], (long long)n);
    return WX_OK;
}

/* row_ptr must run from 0 to e without decreasing, and perm must hold edge ids in [0, e). */
static wx_status check_csr(const char *op, const int32_t *row_ptr, const int32_t *perm, int64_t n,
                           int64_t e) {
    if (row_ptr[0] != 0 || row_ptr[n] != e)
        return wx_error_set(WX_ERR_RUN, "%s: row_ptr[0] = %d and row_ptr[%lld] = %d, expected 0 and %lld",
                            op, (int)row_ptr[0], (long long)n, (int)row_ptr[n], (long long)e);
    for (int64_t r = 0; r < n; r++)
        if (row_ptr[r + 1] < row_ptr[r])
            return wx_error_set(WX_ERR_RUN, "%s: row_ptr decreases at node %lld (%d > %d)", op,
                                (long long)r, (int)row_ptr[r], (int)row_ptr[r + 1]);
    return check_index(op, perm, e, e);
}

/* x (N,D); idx (E) in [0, N); y (E,D). */
wx_status WXF(wx_cpu_gather_rows_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const int32_t *idx,
                                          int64_t e, int64_t d) {
    if (e < 0 || d < 0) return wx_error_set(WX_ERR_USAGE, "gather_rows: negative size e=%lld d=%lld",
                                            (long long)e, (long long)d);
    WX_TRY(check_index("gather_rows", idx, e, -1));
    int nt = graph_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t i = 0; i < e; i++) memcpy(y + i * d, x + (int64_t)idx[i] * d, sizeof(WXR) * d);
    return WX_OK;
}

/* Differentiates y[e] = x[idx[e]]: dx (N,D) = Σ_{e: idx[e]=n} dy (E,D)[e], overwritten, summed in
 * increasing e. Each thread owns a block of columns, so no two threads touch one element. */
wx_status WXF(wx_cpu_gather_rows_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy, const int32_t *idx,
                                           int64_t e, int64_t n, int64_t d) {
    if (e < 0 || n < 0 || d < 0)
        return wx_error_set(WX_ERR_USAGE, "gather_rows backward: negative size e=%lld n=%lld d=%lld",
                            (long long)e, (long long)n, (long long)d);
    WX_TRY(check_index("gather_rows backward", idx, e, n));
    int nt = graph_threads(ctx);
    /* At least 16 columns per block so a block fills a cache line or more. */
    int64_t width = (d + nt - 1) / (nt > 0 ? nt : 1);
    if (width < 16) width = 16;
    int64_t blocks = d > 0 ? (d + width - 1) / width : 0;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t blk = 0; blk < blocks; blk++) {
        int64_t c0 = blk * width, c1 = c0 + width < d ? c0 + width : d;
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = c0; c < c1; c++) dx[r * d + c] = 0;
        for (int64_t i = 0; i < e; i++) {
            WXR *dst = dx + (int64_t)idx[i] * d;
            const WXR *src = dy + i * d;
#pragma omp simd
            for (int64_t c = c0; c < c1; c++) dst[c] += src[c];
        }
    }
    return WX_OK;
}

/* x (E,D); row_ptr (N+1), perm (E) from wx_graph_csr_build; y (N,D), overwritten. */
wx_status WXF(wx_cpu_segment_sum_forward)(wx_ctx *ctx, WXR *y, const WXR *x, const int32_t *row_ptr,
                                          const int32_t *perm, int64_t n, int64_t e, int64_t d) {
    if (e < 0 || n < 0 || d < 0)
        return wx_error_set(WX_ERR_USAGE, "segment_sum: negative size n=%lld e=%lld d=%lld",
                            (long long)n, (long long)e, (long long)d);
    WX_TRY(check_csr("segment_sum", row_ptr, perm, n, e));
    int nt = graph_threads(ctx);
#pragma omp parallel for schedule(dynamic, 64) num_threads(nt)
    for (int64_t r = 0; r < n; r++) {
        WXR *dst = y + r * d;
        for (int64_t c = 0; c < d; c++) dst[c] = 0;
        for (int32_t j = row_ptr[r]; j < row_ptr[r + 1]; j++) {
            const WXR *src = x + (int64_t)perm[j] * d;
            /* y and x are separate buffers (shapes (N,D) and (E,D)): lanes are independent */
#pragma omp simd
            for (int64_t c = 0; c < d; c++) dst[c] += src[c];
        }
    }
    return WX_OK;
}

/* Differentiates y[r] = Σ_j x[perm[j]] (j in row r): dx (E,D)[perm[j]] = dy (N,D)[r], overwritten.
 * perm is a permutation, so every edge row is written exactly once. */
wx_status WXF(wx_cpu_segment_sum_backward)(wx_ctx *ctx, WXR *dx, const WXR *dy,
                                           const int32_t *row_ptr, const int32_t *perm, int64_t n,
                                           int64_t e, int64_t d) {
    if (e < 0 || n < 0 || d < 0)
        return wx_error_set(WX_ERR_USAGE, "segment_sum backward: negative size n=%lld e=%lld d=%lld",
                            (long long)n, (long long)e, (long long)d);
    WX_TRY(check_csr("segment_sum backward", row_ptr, perm, n, e));
    int nt = graph_threads(ctx);
#pragma omp parallel for schedule(dynamic, 64) num_threads(nt)
    for (int64_t r = 0; r < n; r++)
        for (int32_t j = row_ptr[r]; j < row_ptr[r + 1]; j++)
            memcpy(dx + (int64_t)perm[j] * d, dy + r * d, sizeof(WXR) * d);
    return WX_OK;
}

#ifndef WX_REAL_DOUBLE
wx_status wx_graph_csr_build(const int32_t *receivers, int64_t e, int64_t n, int32_t *row_ptr,
                             int32_t *perm) {
    if (e < 0 || n < 0 || e > INT32_MAX || n > INT32_MAX - 1)
        return wx_error_set(WX_ERR_RUN, "graph CSR: %lld edges and %lld nodes, expected 0..%d each",
                            (long long)e, (long long)n, INT32_MAX - 1);
    WX_TRY(check_index("graph CSR: receivers", receivers, e, n));
    /* Counting sort: count per receiver, exclusive prefix sum, then place edges in increasing e
     * (which is what makes it stable). */
    memset(row_ptr, 0, sizeof(int32_t) * (n + 1));
    for (int64_t i = 0; i < e; i++) row_ptr[receivers[i] + 1]++;
    for (int64_t r = 0; r < n; r++) row_ptr[r + 1] += row_ptr[r];
    int32_t *next = wx_malloc(sizeof(int32_t) * (n > 0 ? n : 1));
    memcpy(next, row_ptr, sizeof(int32_t) * n);
    for (int64_t i = 0; i < e; i++) perm[next[receivers[i]]++] = (int32_t)i;
    free(next);
    return WX_OK;
}
#endif
