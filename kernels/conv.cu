// The 3×3 convolution of the precipitation head on the GPU: 1-pixel padding circular in longitude
// (W) and zero in latitude (H), as NVlabs PeriodicPad2d(1) + Conv2d(padding=0). Semantics: the CPU
// implementation in src/ops/conv.c and the contract in src/ops/conv.inc.
//
// Direct kernels (the head has one channel in and out, so there is no GEMM worth making): one
// thread per output element forward, one thread per input element for dx (a gather over the taps
// that read it, so no atomics), and for dwt/dbias per-chunk partial sums in double reduced in
// chunk order by wx_cuda_col_sum_finish: deterministic, no atomics.
#include <limits.h>

#include "wx_cuda_state.h"

// Elements of B·H·W reduced by one block into one partial sum; grown for huge grids so the chunk
// count stays within the grid's y limit. Depends only on the shape: a fixed summation order.
#define CONV_CHUNK 4096

static wx_status conv_check(const char *op, int64_t b, int64_t cin, int64_t h, int64_t wd,
                            int64_t cout) {
    if (b < 0 || h < 0 || wd < 0 || cin < 1 || cout < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: B=%lld cin=%lld H=%lld W=%lld cout=%lld: expected "
                            "B, H, W >= 0 and cin, cout >= 1", op, (long long)b, (long long)cin,
                            (long long)h, (long long)wd, (long long)cout);
    if (cin * cout * 9 > INT_MAX)
        return wx_error_set(WX_ERR_USAGE, "%s: cin·cout·9 = %lld weights: too many for one grid "
                            "row", op, (long long)(cin * cout * 9));
    return WX_OK;
}

__device__ __forceinline__ int64_t wrap_w(int64_t q, int64_t wd) {
    return q < 0 ? q + wd : (q >= wd ? q - wd : q); // q ∈ [−1, W]: one wrap at most
}

// y[b,o,r,q] = bias[o] + Σ_{c,i,j} wt[o,c,i,j]·x[b,c,r+i−1,(q+j−1) mod W]
__global__ static void conv3x3_fwd_kernel(float *y, const float *x, const float *wt,
                                          const float *bias, int64_t total, int64_t cin,
                                          int64_t h, int64_t wd, int64_t cout) {
    WX_CUDA_FOR(e, total) {
        int64_t q = e % wd, r = (e / wd) % h, o = (e / (wd * h)) % cout, bb = e / (wd * h * cout);
        float s = bias ? bias[o] : 0.0f;
        for (int64_t c = 0; c < cin; c++) {
            const float *xs = x + (bb * cin + c) * h * wd;
            const float *w9 = wt + (o * cin + c) * 9;
            for (int i = 0; i < 3; i++) {
                int64_t src = r + i - 1;
                if (src < 0 || src >= h) continue;
                for (int j = 0; j < 3; j++) s += w9[i * 3 + j] * xs[src * wd + wrap_w(q + j - 1, wd)];
            }
        }
        y[e] = s;
    }
}

// dx[b,c,s,p] = Σ_{o,i,j} wt[o,c,i,j]·dy[b,o,s−i+1,(p−j+1) mod W] over valid rows (the adjoint
// of the forward's index map, gathered).
__global__ static void conv3x3_dx_kernel(float *dx, const float *dy, const float *wt,
                                         int64_t total, int64_t cin, int64_t h, int64_t wd,
                                         int64_t cout) {
    WX_CUDA_FOR(e, total) {
        int64_t p = e % wd, s = (e / wd) % h, c = (e / (wd * h)) % cin, bb = e / (wd * h * cin);
        float acc = 0.0f;
        for (int64_t o = 0; o < cout; o++) {
            const float *dys = dy + (bb * cout + o) * h * wd;
            const float *w9 = wt + (o * cin + c) * 9;
            for (int i = 0; i < 3; i++) {
                int64_t r = s - i + 1;
                if (r < 0 || r >= h) continue;
                for (int j = 0; j < 3; j++) acc += w9[i * 3 + j] * dys[r * wd + wrap_w(p - j + 1, wd)];
            }
        }
        dx[e] = acc;
    }
}

// Block (k, chunk): partial sum over the chunk's (b, r, q) positions of the gradient term of
// parameter k. k < nw: weight k = (o, c, i, j), term dy[b,o,r,q]·x[b,c,r+i−1,(q+j−1) mod W];
// nw ≤ k < nw + cout: bias o = k − nw, term dy[b,o,r,q]. part_w (nchunks, nw), part_b
// (nchunks, cout); either may be NULL (that grad not wanted: those blocks return at once).
__global__ static void conv3x3_param_partials_kernel(double *part_w, double *part_b,
                                                     const float *dy, const float *x, int64_t n,
                                                     int64_t chunk, int64_t cin, int64_t h,
                                                     int64_t wd, int64_t cout) {
    __shared__ double sh[WX_CUDA_THREADS];
    const int64_t nw = cout * cin * 9, k = blockIdx.x, ch = blockIdx.y;
    const int is_w = k < nw;
    if ((is_w && !part_w) || (!is_w && !part_b)) return; // whole block: no barrier skipped
    int64_t o, c = 0, i = 0, j = 0;
    if (is_w) o = k / (cin * 9), c = (k / 9) % cin, i = (k % 9) / 3, j = k % 3;
    else o = k - nw;
    const int64_t hw = h * wd, lo = ch * chunk, hi = lo + chunk < n ? lo + chunk : n;
    double s = 0;
    for (int64_t e = lo + threadIdx.x; e < hi; e += blockDim.x) {
        int64_t q = e % wd, r = (e / wd) % h, bb = e / hw;
        float g = dy[(bb * cout + o) * hw + r * wd + q];
        if (!is_w) {
            s += g;
            continue;
        }
        int64_t src = r + i - 1;
        if (src < 0 || src >= h) continue;
        s += (double)g * x[(bb * cin + c) * hw + src * wd + wrap_w(q + j - 1, wd)];
    }
    s = wx_block_sum(s, sh);
    if (threadIdx.x == 0) {
        if (is_w) part_w[ch * nw + k] = s;
        else part_b[ch * cout + o] = s;
    }
}

extern "C" wx_status wx_cuda_conv3x3_forward(wx_ctx *ctx, float *y, const float *x,
                                             const float *wt, const float *bias, int64_t b,
                                             int64_t cin, int64_t h, int64_t wd, int64_t cout) {
    // y(B,cout,H,W), x(B,cin,H,W), wt(cout,cin,3,3), bias(cout) nullable
    WX_TRY(conv_check("conv3x3_forward", b, cin, h, wd, cout));
    int64_t total = b * cout * h * wd;
    if (total == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    conv3x3_fwd_kernel<<<wx_cuda_blocks(total), WX_CUDA_THREADS, 0, st->stream>>>(
        y, x, wt, bias, total, cin, h, wd, cout);
    WX_CUDA_LAUNCHED("conv3x3_fwd_kernel");
    return WX_OK;
}

// Differentiates y = bias + Σ wt·x(periodic/zero padded): dbias += Σ dy, dwt += Σ dy·x(shifted),
// dx = the adjoint gather of wt·dy.
extern "C" wx_status wx_cuda_conv3x3_backward(wx_ctx *ctx, float *dx, float *dwt, float *dbias,
                                              const float *dy, const float *x, const float *wt,
                                              int64_t b, int64_t cin, int64_t h, int64_t wd,
                                              int64_t cout) {
    // dx(B,cin,H,W) overwrite nullable, dwt(cout,cin,3,3) += nullable, dbias(cout) += nullable,
    // dy(B,cout,H,W), x(B,cin,H,W), wt(cout,cin,3,3)
    WX_TRY(conv_check("conv3x3_backward", b, cin, h, wd, cout));
    const int64_t n = b * h * wd;
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    if (dx) {
        int64_t total = b * cin * h * wd;
        conv3x3_dx_kernel<<<wx_cuda_blocks(total), WX_CUDA_THREADS, 0, st->stream>>>(
            dx, dy, wt, total, cin, h, wd, cout);
        WX_CUDA_LAUNCHED("conv3x3_dx_kernel");
    }
    if (!dwt && !dbias) return WX_OK;
    const int64_t nw = cout * cin * 9;
    int64_t chunk = CONV_CHUNK;
    if ((n + chunk - 1) / chunk > 65535) chunk = (n + 65534) / 65535;
    const int64_t nchunks = (n + chunk - 1) / chunk;
    double *part;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * (size_t)(nchunks * (nw + cout)),
                           (void **)&part));
    double *part_w = dwt ? part : NULL, *part_b = dbias ? part + nchunks * nw : NULL;
    dim3 grid((unsigned)(nw + cout), (unsigned)nchunks);
    conv3x3_param_partials_kernel<<<grid, WX_CUDA_THREADS, 0, st->stream>>>(
        part_w, part_b, dy, x, n, chunk, cin, h, wd, cout);
    WX_CUDA_LAUNCHED("conv3x3_param_partials_kernel");
    if (dwt) WX_TRY(wx_cuda_col_sum_finish(st, dwt, part_w, nchunks, nw, 0));
    if (dbias) WX_TRY(wx_cuda_col_sum_finish(st, dbias, part_b, nchunks, cout, 0));
    return WX_OK;
}
