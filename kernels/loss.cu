// Losses on the GPU (contract src/ops/loss.inc; reference src/ops/loss.c): latitude-weighted MSE
// and relative L2. Reductions are two-stage in double with a fixed order (block trees over fixed
// slices, then one block over the partials): no atomics, same bits every run. The loss value is a
// float in device memory.
#include <math.h>
#include <stdlib.h>

#include "wx_cuda_state.h"

// Fixed slice length of the relative-L2 partial sums (the CPU's WX_LOSS_CHUNK).
#define WX_LOSS_CHUNK 8192

static wx_status check_mse_sizes(const char *op, const float *wlat, int64_t b, int64_t c,
                                 int64_t h, int64_t w) {
    if (b <= 0 || c <= 0 || h <= 0 || w <= 0)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes B=%lld C=%lld H=%lld W=%lld, expected all > 0",
                            op, (long long)b, (long long)c, (long long)h, (long long)w);
    if (!wlat) return wx_error_set(WX_ERR_USAGE, "%s: latitude weights (H) missing", op);
    return WX_OK;
}

// part[row] = wlat[h]·wch[c]·Σ_w (pred − target)² for each (b, c, h) row; one block per row.
__global__ static void mse_rows_kernel(double *part, const float *pred, const float *target,
                                       const float *wlat, const float *wch, int64_t rows,
                                       int64_t c, int64_t h, int64_t w) {
    __shared__ double sh[WX_CUDA_THREADS];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) { // uniform across the block
        const float *p = pred + row * w, *t = target + row * w;
        double s = 0;
        for (int64_t i = threadIdx.x; i < w; i += blockDim.x) {
            double diff = (double)p[i] - (double)t[i];
            s += diff * diff;
        }
        s = wx_block_sum(s, sh);
        if (threadIdx.x == 0) {
            int64_t hh = row % h, cc = (row / h) % c;
            part[row] = s * (double)wlat[hh] * (wch ? (double)wch[cc] : 1.0);
        }
    }
}

static unsigned row_blocks(int64_t n) { return (unsigned)(n < (1 << 20) ? n : (1 << 20)); }

// loss(1) = Σ wlat[h]·wch[c]·(pred − target)² / (B·C·H·W); pred, target (B,C,H,W); wlat (H);
// wch (C) nullable.
extern "C" wx_status wx_cuda_mse_latw_forward(wx_ctx *ctx, float *loss, const float *pred,
                                              const float *target, const float *wlat,
                                              const float *wch, int64_t b, int64_t c, int64_t h,
                                              int64_t w) {
    WX_TRY(check_mse_sizes("mse_latw", wlat, b, c, h, w));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t rows = b * c * h;
    double *part;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * (size_t)rows, (void **)&part));
    mse_rows_kernel<<<row_blocks(rows), WX_CUDA_THREADS, 0, st->stream>>>(part, pred, target, wlat,
                                                                         wch, rows, c, h, w);
    WX_CUDA_LAUNCHED("mse_rows_kernel");
    return wx_cuda_sum_parts(st, part, rows, loss, (double)rows * (double)w, NULL);
}

// dpred = k·wlat[h]·wch[c]·(pred − target), k = 2·dloss / (B·C·H·W).
__global__ static void mse_grad_kernel(float *dpred, const float *pred, const float *target,
                                       const float *wlat, const float *wch, int64_t total,
                                       int64_t c, int64_t h, int64_t w, double k) {
    WX_CUDA_FOR(i, total) {
        int64_t row = i / w, hh = row % h, cc = (row / h) % c;
        double f = k * (double)wlat[hh] * (wch ? (double)wch[cc] : 1.0);
        dpred[i] = (float)(f * ((double)pred[i] - (double)target[i]));
    }
}

// Differentiates loss = Σ wlat[h]·wch[c]·(pred − target)² / (B·C·H·W); dpred (B,C,H,W) overwrite.
extern "C" wx_status wx_cuda_mse_latw_backward(wx_ctx *ctx, float *dpred, double dloss,
                                               const float *pred, const float *target,
                                               const float *wlat, const float *wch, int64_t b,
                                               int64_t c, int64_t h, int64_t w) {
    WX_TRY(check_mse_sizes("mse_latw backward", wlat, b, c, h, w));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t rows = b * c * h;
    double k = 2.0 * dloss / ((double)rows * (double)w);
    mse_grad_kernel<<<wx_cuda_blocks(rows * w), WX_CUDA_THREADS, 0, st->stream>>>(
        dpred, pred, target, wlat, wch, rows * w, c, h, w, k);
    WX_CUDA_LAUNCHED("mse_grad_kernel");
    return WX_OK;
}

// part(B·chunks, 2): ‖pred − target‖² and ‖target‖² over each fixed slice of each sample.
__global__ static void rel_l2_part_kernel(double *part, const float *pred, const float *target,
                                          int64_t b, int64_t n, int64_t chunks) {
    __shared__ double sh[WX_CUDA_THREADS];
    for (int64_t bc = blockIdx.x; bc < b * chunks; bc += gridDim.x) { // uniform across the block
        int64_t s = bc / chunks, i0 = (bc % chunks) * WX_LOSS_CHUNK;
        int64_t i1 = i0 + WX_LOSS_CHUNK < n ? i0 + WX_LOSS_CHUNK : n;
        const float *p = pred + s * n, *t = target + s * n;
        double sd = 0, stt = 0;
        for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
            double diff = (double)p[i] - (double)t[i];
            sd += diff * diff;
            stt += (double)t[i] * (double)t[i];
        }
        sd = wx_block_sum(sd, sh);
        stt = wx_block_sum(stt, sh);
        if (threadIdx.x == 0) {
            part[2 * bc] = sd;
            part[2 * bc + 1] = stt;
        }
    }
}

// sums[s] = Σ_k part[s, k, 0], sums[B + s] = Σ_k part[s, k, 1], k increasing.
__global__ static void rel_l2_sample_kernel(double *sums, const double *part, int64_t b,
                                            int64_t chunks) {
    WX_CUDA_FOR(s, b) {
        double d = 0, t = 0;
        for (int64_t k = 0; k < chunks; k++) {
            d += part[2 * (s * chunks + k)];
            t += part[2 * (s * chunks + k) + 1];
        }
        sums[s] = d;
        sums[b + s] = t;
    }
}

// Per-sample ‖d_b‖² then ‖t_b‖² (2·B doubles) on the host; rejects a zero target as the CPU.
static wx_status rel_l2_sums(wx_cuda_state *st, const char *op, const float *pred,
                             const float *target, int64_t b, int64_t n, double *host_sums) {
    if (b <= 0 || n <= 0)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes B=%lld n=%lld, expected both > 0", op,
                            (long long)b, (long long)n);
    int64_t chunks = (n + WX_LOSS_CHUNK - 1) / WX_LOSS_CHUNK;
    double *part;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * (size_t)(2 * b * chunks + 2 * b),
                           (void **)&part));
    double *sums = part + 2 * b * chunks;
    rel_l2_part_kernel<<<row_blocks(b * chunks), WX_CUDA_THREADS, 0, st->stream>>>(
        part, pred, target, b, n, chunks);
    WX_CUDA_LAUNCHED("rel_l2_part_kernel");
    rel_l2_sample_kernel<<<wx_cuda_blocks(b), WX_CUDA_THREADS, 0, st->stream>>>(sums, part, b,
                                                                               chunks);
    WX_CUDA_LAUNCHED("rel_l2_sample_kernel");
    WX_CUDA_CHECK(cudaMemcpyAsync(host_sums, sums, sizeof(double) * 2 * (size_t)b,
                                  cudaMemcpyDeviceToHost, st->stream));
    WX_CUDA_CHECK(cudaStreamSynchronize(st->stream));
    for (int64_t s = 0; s < b; s++)
        if (!(host_sums[b + s] > 0))
            return wx_error_set(WX_ERR_RUN, "%s: target sample %lld has norm %g, expected > 0", op,
                                (long long)s, sqrt(host_sums[b + s]));
    return WX_OK;
}

// loss(1) = mean_b ‖pred_b − target_b‖ / ‖target_b‖; pred, target (B,n).
extern "C" wx_status wx_cuda_rel_l2_forward(wx_ctx *ctx, float *loss, const float *pred,
                                            const float *target, int64_t b, int64_t n) {
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    double *sums = (double *)wx_malloc(sizeof(double) * 2 * (size_t)(b > 0 ? b : 1));
    wx_status s = rel_l2_sums(st, "rel_l2", pred, target, b, n, sums);
    if (s == WX_OK) {
        double total = 0;
        for (int64_t i = 0; i < b; i++) total += sqrt(sums[i]) / sqrt(sums[b + i]);
        float value = (float)(total / (double)b);
        cudaError_t e = cudaMemcpyAsync(loss, &value, sizeof value, cudaMemcpyHostToDevice, st->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream); // `value` is on this stack
        if (e != cudaSuccess)
            s = wx_error_set(WX_ERR_RUN, "rel_l2: writing the loss to the device failed: %s",
                             cudaGetErrorString(e));
    }
    free(sums);
    return s;
}

// dpred[i] = f[i / n]·(pred[i] − target[i]).
__global__ static void rel_l2_grad_kernel(float *dpred, const float *pred, const float *target,
                                          const double *f, int64_t total, int64_t n) {
    WX_CUDA_FOR(i, total) dpred[i] = (float)(f[i / n] * ((double)pred[i] - (double)target[i]));
}

// Differentiates loss = (1/B) Σ_b ‖d_b‖/‖t_b‖: dpred(B,n)[b] = dloss·d_b / (B·‖d_b‖·‖t_b‖),
// overwritten; zero where d_b = 0 (torch's subgradient there).
extern "C" wx_status wx_cuda_rel_l2_backward(wx_ctx *ctx, float *dpred, double dloss,
                                             const float *pred, const float *target, int64_t b,
                                             int64_t n) {
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    double *sums = (double *)wx_malloc(sizeof(double) * 2 * (size_t)(b > 0 ? b : 1));
    wx_status s = rel_l2_sums(st, "rel_l2 backward", pred, target, b, n, sums);
    double *f = NULL;
    if (s == WX_OK) {
        for (int64_t i = 0; i < b; i++) {
            double dn = sqrt(sums[i]);
            sums[i] = dn > 0 ? dloss / ((double)b * dn * sqrt(sums[b + i])) : 0.0;
        }
        // The partial sums are consumed: the factors reuse the reduction scratch.
        s = wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * (size_t)b, (void **)&f);
    }
    if (s == WX_OK) {
        cudaError_t e = cudaMemcpyAsync(f, sums, sizeof(double) * (size_t)b, cudaMemcpyHostToDevice,
                                        st->stream);
        if (e == cudaSuccess) {
            rel_l2_grad_kernel<<<wx_cuda_blocks(b * n), WX_CUDA_THREADS, 0, st->stream>>>(
                dpred, pred, target, f, b * n, n);
            e = cudaGetLastError();
        }
        if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream); // before `sums` is freed
        if (e != cudaSuccess)
            s = wx_error_set(WX_ERR_RUN, "rel_l2 backward: CUDA failed: %s", cudaGetErrorString(e));
    }
    free(sums);
    return s;
}
