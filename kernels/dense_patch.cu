// Dense ops on the GPU, token half: patch embedding (one GEMM over the patch matrix, through the
// linear op), unpatchify (a permutation) and the learned positional embedding. Semantics: the CPU
// implementation in src/ops/dense.c and the contract in src/ops/dense.inc.
#include <limits.h>

#include "wx_cuda_state.h"

// ---- patch embedding -------------------------------------------------------------------------

static wx_status patch_check(const char *op, int64_t b, int64_t cin, int64_t h, int64_t wd,
                             int64_t p, int64_t d) {
    if (p <= 0 || h < 0 || wd < 0 || h % p || wd % p)
        return wx_error_set(WX_ERR_USAGE,
                            "%s: image %lldx%lld is not a whole number of %lldx%lld patches", op,
                            (long long)h, (long long)wd, (long long)p, (long long)p);
    int64_t rows = b * (h / p) * (wd / p), k = cin * p * p;
    if (b < 0 || cin < 0 || d < 0 || rows > INT_MAX || k > INT_MAX || d > INT_MAX)
        return wx_error_set(WX_ERR_USAGE, "%s: B=%lld cin=%lld D=%lld, expected sizes >= 0 and a "
                            "patch matrix within cuBLAS's int range", op, (long long)b,
                            (long long)cin, (long long)d);
    return WX_OK;
}

// Position in x(B,cin,H,W) of element (row, col) of the patch matrix P(B·Hp·Wp, cin·p·p), row =
// (b·Hp + hp)·Wp + wp, col = (ci·p + i)·p + j (a torch Conv2d weight's flattening). Every pixel is
// in exactly one patch, so P ↔ x is a permutation.
__device__ __forceinline__ int64_t patch_src(int64_t e, int64_t cin, int64_t h, int64_t wd,
                                             int64_t p) {
    int64_t k = cin * p * p, hp = h / p, wp = wd / p;
    int64_t row = e / k, col = e % k;
    int64_t pw = row % wp, ph = (row / wp) % hp, bb = row / (wp * hp);
    int64_t j = col % p, i = (col / p) % p, ci = col / (p * p);
    return ((bb * cin + ci) * h + ph * p + i) * wd + pw * p + j;
}

__global__ static void patches_from_x_kernel(float *pm, const float *x, int64_t total, int64_t cin,
                                             int64_t h, int64_t wd, int64_t p) {
    WX_CUDA_FOR(e, total) pm[e] = x[patch_src(e, cin, h, wd, p)];
}

__global__ static void patches_to_x_kernel(float *x, const float *pm, int64_t total, int64_t cin,
                                           int64_t h, int64_t wd, int64_t p) {
    WX_CUDA_FOR(e, total) x[patch_src(e, cin, h, wd, p)] = pm[e];
}

extern "C" wx_status wx_cuda_patch_embed_forward(wx_ctx *ctx, float *y, const float *x,
                                                 const float *w, const float *bias, int64_t b,
                                                 int64_t cin, int64_t h, int64_t wd, int64_t p,
                                                 int64_t d) {
    // y(B, Hp·Wp, d), x(B,cin,H,W), w(d,cin,p,p), bias(d) nullable
    WX_TRY(patch_check("patch_embed_forward", b, cin, h, wd, p, d));
    int64_t rows = b * (h / p) * (wd / p), k = cin * p * p;
    if (rows == 0 || d == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    float *pm;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_OP, sizeof(float) * (size_t)(rows * k), (void **)&pm));
    if (rows * k > 0) {
        patches_from_x_kernel<<<wx_cuda_blocks(rows * k), WX_CUDA_THREADS, 0, st->stream>>>(
            pm, x, rows * k, cin, h, wd, p);
        WX_CUDA_LAUNCHED("patches_from_x_kernel");
    }
    return wx_cuda_linear_forward(ctx, y, pm, w, bias, rows, k, d);
}

// Differentiates y = P(x)·wᵀ + bias: dw += dyᵀ·P, dbias += Σ dy, dx = scatter(dy·w).
extern "C" wx_status wx_cuda_patch_embed_backward(wx_ctx *ctx, float *dx, float *dw, float *dbias,
                                                  const float *dy, const float *x, const float *w,
                                                  int64_t b, int64_t cin, int64_t h, int64_t wd,
                                                  int64_t p, int64_t d) {
    // dx(B,cin,H,W) overwrite nullable, dw(d,cin,p,p) +=, dbias(d) += nullable, dy(B,Hp·Wp,d),
    // x(B,cin,H,W), w(d,cin,p,p)
    WX_TRY(patch_check("patch_embed_backward", b, cin, h, wd, p, d));
    int64_t rows = b * (h / p) * (wd / p), k = cin * p * p;
    if (rows == 0 || k == 0) {
        // No pixels (dx is empty) or no patch columns (dw is empty): only the bias sees dy.
        if (rows > 0 && dbias)
            return wx_cuda_linear_backward(ctx, NULL, NULL, dbias, dy, NULL, w, rows, 0, d);
        return WX_OK;
    }
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    float *pm;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_OP, sizeof(float) * (size_t)(rows * k), (void **)&pm));
    if (dw || dbias) {
        patches_from_x_kernel<<<wx_cuda_blocks(rows * k), WX_CUDA_THREADS, 0, st->stream>>>(
            pm, x, rows * k, cin, h, wd, p);
        WX_CUDA_LAUNCHED("patches_from_x_kernel");
        WX_TRY(wx_cuda_linear_backward(ctx, NULL, dw, dbias, dy, pm, w, rows, k, d));
    }
    if (dx) {
        // pm is reused: the stream runs the dw GEMM that reads it before this overwrites it.
        WX_TRY(wx_cuda_linear_backward(ctx, pm, NULL, NULL, dy, NULL, w, rows, k, d));
        patches_to_x_kernel<<<wx_cuda_blocks(rows * k), WX_CUDA_THREADS, 0, st->stream>>>(
            dx, pm, rows * k, cin, h, wd, p);
        WX_CUDA_LAUNCHED("patches_to_x_kernel");
    }
    return WX_OK;
}

// ---- unpatchify --------------------------------------------------------------------------

// Position in y(B,Hp,Wp,p·p·C) of out[b,c,p·h+i,p·w+j] (element o of out(B,C,Hp·p,Wp·p)).
__device__ __forceinline__ int64_t unpatch_src(int64_t o, int64_t c, int64_t hp, int64_t wp,
                                               int64_t p) {
    int64_t hh = hp * p, ww = wp * p, k = p * p * c;
    int64_t col = o % ww, row = (o / ww) % hh, cc = (o / (ww * hh)) % c, bb = o / (ww * hh * c);
    int64_t h = row / p, i = row % p, w = col / p, j = col % p;
    return ((bb * hp + h) * wp + w) * k + (i * p + j) * c + cc;
}

__global__ static void unpatchify_fwd_kernel(float *out, const float *y, int64_t total, int64_t c,
                                             int64_t hp, int64_t wp, int64_t p) {
    WX_CUDA_FOR(o, total) out[o] = y[unpatch_src(o, c, hp, wp, p)];
}

__global__ static void unpatchify_bwd_kernel(float *dy, const float *dout, int64_t total, int64_t c,
                                             int64_t hp, int64_t wp, int64_t p) {
    WX_CUDA_FOR(o, total) dy[unpatch_src(o, c, hp, wp, p)] = dout[o];
}

static wx_status unpatch_check(const char *op, int64_t b, int64_t c, int64_t hp, int64_t wp,
                               int64_t p) {
    if (b < 0 || c < 0 || hp < 0 || wp < 0 || p < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: B=%lld C=%lld Hp=%lld Wp=%lld p=%lld, expected sizes "
                            ">= 0 and p >= 1", op, (long long)b, (long long)c, (long long)hp,
                            (long long)wp, (long long)p);
    return WX_OK;
}

extern "C" wx_status wx_cuda_unpatchify_forward(wx_ctx *ctx, float *out, const float *y, int64_t b,
                                                int64_t c, int64_t hp, int64_t wp, int64_t p) {
    // out(B, C, Hp·p, Wp·p), y(B, Hp, Wp, p·p·C)
    WX_TRY(unpatch_check("unpatchify_forward", b, c, hp, wp, p));
    int64_t total = b * c * hp * p * wp * p;
    if (total == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    unpatchify_fwd_kernel<<<wx_cuda_blocks(total), WX_CUDA_THREADS, 0, st->stream>>>(out, y, total, c,
                                                                                    hp, wp, p);
    WX_CUDA_LAUNCHED("unpatchify_fwd_kernel");
    return WX_OK;
}

// Differentiates out = unpatchify(y): a permutation, so dy is dout permuted back.
extern "C" wx_status wx_cuda_unpatchify_backward(wx_ctx *ctx, float *dy, const float *dout,
                                                 int64_t b, int64_t c, int64_t hp, int64_t wp,
                                                 int64_t p) {
    // dy(B, Hp, Wp, p·p·C) overwrite, dout(B, C, Hp·p, Wp·p)
    WX_TRY(unpatch_check("unpatchify_backward", b, c, hp, wp, p));
    int64_t total = b * c * hp * p * wp * p;
    if (total == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    unpatchify_bwd_kernel<<<wx_cuda_blocks(total), WX_CUDA_THREADS, 0, st->stream>>>(dy, dout, total,
                                                                                    c, hp, wp, p);
    WX_CUDA_LAUNCHED("unpatchify_bwd_kernel");
    return WX_OK;
}

// ---- positional embedding ------------------------------------------------------------------

__global__ static void pos_embed_fwd_kernel(float *y, const float *x, const float *pos,
                                            int64_t total, int64_t nd) {
    WX_CUDA_FOR(i, total) y[i] = x[i] + pos[i % nd];
}

extern "C" wx_status wx_cuda_pos_embed_forward(wx_ctx *ctx, float *y, const float *x,
                                               const float *pos, int64_t b, int64_t n, int64_t d) {
    // y(B,N,D) (may alias x), x(B,N,D), pos(N,D)
    if (b < 0 || n < 0 || d < 0)
        return wx_error_set(WX_ERR_USAGE, "pos_embed_forward: B=%lld N=%lld D=%lld, expected >= 0",
                            (long long)b, (long long)n, (long long)d);
    int64_t nd = n * d;
    if (b == 0 || nd == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    pos_embed_fwd_kernel<<<wx_cuda_blocks(b * nd), WX_CUDA_THREADS, 0, st->stream>>>(y, x, pos,
                                                                                    b * nd, nd);
    WX_CUDA_LAUNCHED("pos_embed_fwd_kernel");
    return WX_OK;
}

// Differentiates y = x + pos (pos broadcast over the batch): dpos += Σ_b dy, batch in order.
extern "C" wx_status wx_cuda_pos_embed_backward(wx_ctx *ctx, float *dx, float *dpos,
                                                const float *dy, int64_t b, int64_t n, int64_t d) {
    // dx(B,N,D) overwrite nullable (may be dy), dpos(N,D) +=, dy(B,N,D)
    if (b < 0 || n < 0 || d < 0)
        return wx_error_set(WX_ERR_USAGE, "pos_embed_backward: B=%lld N=%lld D=%lld, expected >= 0",
                            (long long)b, (long long)n, (long long)d);
    int64_t nd = n * d;
    if (b == 0 || nd == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    if (dx && dx != dy)
        WX_CUDA_CHECK(cudaMemcpyAsync(dx, dy, sizeof(float) * (size_t)(b * nd),
                                      cudaMemcpyDeviceToDevice, st->stream));
    if (dpos) WX_TRY(wx_cuda_col_sum_acc(st, dpos, dy, b, nd, 0));
    return WX_OK;
}
