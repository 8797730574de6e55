// Spectral ops on the GPU, AFNO half: the block-diagonal complex two-layer MLP on the kept Fourier
// modes (contract in src/ops/spectral.inc; reference src/ops/spectral_afno.c, same algorithm).
//
// The kept modes of all batch items are gathered into rows (B·M, C) of complex values; each
// complex layer is then one strided-batched complex GEMM over the nb blocks
// (cublasCgemmStridedBatched, batch = nb, fp32), on the interleaved (re, im) layout that the
// spectrum and the saved buffers already have. Bias, ReLU and softshrink are element-wise kernels;
// bias gradients are fixed-order column sums (no atomics).
//
// The mask is device memory; listing the kept modes needs it on the host, so it is read back and
// compared with the last mask seen; the device list (and the mode → row table used to write Y in
// one pass) is rebuilt only when the content changes.
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "wx_cuda_state.h"

static wx_status afno_check(const char *op, int64_t b, int64_t h, int64_t wf, int64_t c,
                            int64_t nb, int64_t factor, double lambda) {
    if (b < 1 || h < 1 || wf < 1 || c < 1 || nb < 1 || factor < 1 || c % nb != 0 || lambda < 0)
        return wx_error_set(WX_ERR_USAGE, "%s: B=%lld H=%lld Wf=%lld C=%lld blocks=%lld "
                            "factor=%lld lambda=%g; expected sizes >= 1, C divisible by the "
                            "block count, lambda >= 0", op, (long long)b, (long long)h,
                            (long long)wf, (long long)c, (long long)nb, (long long)factor, lambda);
    if (b * h * wf > INT_MAX || c * factor > INT_MAX / 2 || nb > INT_MAX)
        return wx_error_set(WX_ERR_USAGE, "%s: B·H·Wf = %lld rows or C·factor = %lld exceed "
                            "cuBLAS's int range", op, (long long)(b * h * wf),
                            (long long)(c * factor));
    return WX_OK;
}

// st->modes[0..M) = kept modes ky·Wf + kx in row-major order; st->modes[M + mode] = the mode's row
// within a batch item, or −1 when dropped. Sets *m = M.
static wx_status modes_get(wx_cuda_state *st, const uint8_t *mask, int64_t hwf, int64_t *m) {
    uint8_t *host = (uint8_t *)wx_malloc((size_t)hwf);
    cudaError_t e = cudaMemcpyAsync(host, mask, (size_t)hwf, cudaMemcpyDeviceToHost, st->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    if (e != cudaSuccess) {
        free(host);
        return wx_error_set(WX_ERR_RUN, "afno_filter: reading the (H,Wf) mask back failed: %s",
                            cudaGetErrorString(e));
    }
    if (st->modes && st->mask_len == hwf && memcmp(host, st->mask_host, (size_t)hwf) == 0) {
        free(host);
        *m = st->nmodes;
        return WX_OK;
    }
    int64_t count = 0;
    for (int64_t i = 0; i < hwf; i++) count += host[i] != 0;
    // One allocation: the list (count entries), then the mode → row table (hwf entries).
    int64_t *list = (int64_t *)wx_malloc(sizeof(int64_t) * (size_t)(count + hwf));
    int64_t *slot = list + count, k = 0;
    for (int64_t i = 0; i < hwf; i++) {
        slot[i] = host[i] ? k : -1;
        if (host[i]) list[k++] = i;
    }
    // Drop the old cache first, so a failure below leaves no stale list behind.
    free(st->mask_host);
    st->mask_host = NULL;
    st->mask_len = 0;
    if (st->modes) {
        e = cudaFree(st->modes); // waits for kernels still reading it
        st->modes = NULL;
    }
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&st->modes, sizeof(int64_t) * (size_t)(count + hwf));
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(st->modes, list, sizeof(int64_t) * (size_t)(count + hwf),
                            cudaMemcpyHostToDevice, st->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream); // before `list` is freed
    free(list);
    if (e != cudaSuccess) {
        free(host);
        if (st->modes) (void)cudaFree(st->modes);
        st->modes = NULL;
        return wx_error_set(WX_ERR_RUN, "afno_filter: uploading the kept-mode list failed: %s",
                            cudaGetErrorString(e));
    }
    st->mask_host = host;
    st->mask_len = hwf;
    st->nmodes = count;
    *m = count;
    return WX_OK;
}

// ---- kernels --------------------------------------------------------------------------------

// g(rows, c2) row r ← spec(B, hwf, c2) at batch item r / m, mode modes[r % m]  (c2 = 2·C)
__global__ static void modes_gather_kernel(float *g, const float *spec, const int64_t *modes,
                                           int64_t rows, int64_t m, int64_t hwf, int64_t c2) {
    WX_CUDA_FOR(e, rows * c2) {
        int64_t r = e / c2, jj = e % c2;
        g[e] = spec[((r / m) * hwf + modes[r % m]) * c2 + jj];
    }
}

// d_o(rows, c2) = dY gathered at the kept modes, zero where |opre| ≤ λ (softshrink backward).
__global__ static void shrink_grad_gather_kernel(float *d_o, const float *dY, const float *opre,
                                                 const int64_t *modes, int64_t rows, int64_t m,
                                                 int64_t hwf, int64_t c2, float lam) {
    WX_CUDA_FOR(e, rows * c2) {
        int64_t r = e / c2, jj = e % c2;
        float v = dY[((r / m) * hwf + modes[r % m]) * c2 + jj];
        d_o[e] = fabsf(opre[e]) > lam ? v : 0.0f;
    }
}

// spec(B, hwf, c2) ← g's row for kept modes (optionally softshrunk), 0 on dropped modes; every
// element written exactly once.
__global__ static void modes_scatter_kernel(float *spec, const float *g, const int64_t *slot,
                                            int64_t b, int64_t m, int64_t hwf, int64_t c2,
                                            int shrink, float lam) {
    WX_CUDA_FOR(e, b * hwf * c2) {
        int64_t r = e / c2, jj = e % c2, k = slot[r % hwf];
        if (k < 0) {
            spec[e] = 0.0f;
        } else {
            float o = g[((r / hwf) * m + k) * c2 + jj];
            spec[e] = !shrink ? o : (o > lam ? o - lam : (o < -lam ? o + lam : 0.0f));
        }
    }
}

// z(n, 2) interleaved complex ← split w(2, n).
__global__ static void interleave_kernel(float *z, const float *w, int64_t n) {
    WX_CUDA_FOR(i, n) {
        z[2 * i] = w[i];
        z[2 * i + 1] = w[n + i];
    }
}

// dw(2, n) += split of z(n, 2).
__global__ static void add_split_kernel(float *dw, const float *z, int64_t n) {
    WX_CUDA_FOR(i, n) {
        dw[i] += z[2 * i];
        dw[n + i] += z[2 * i + 1];
    }
}

// out(rows, n, 2) = bias as complex (re bias[j], im bias[n + j]).
__global__ static void bias_fill_kernel(float *out, const float *bias, int64_t rows, int64_t n) {
    WX_CUDA_FOR(e, rows * n) {
        int64_t j = e % n;
        out[2 * e] = bias[j];
        out[2 * e + 1] = bias[n + j];
    }
}

__global__ static void relu_copy_kernel(float *act, const float *pre, int64_t n) {
    WX_CUDA_FOR(i, n) act[i] = pre[i] > 0 ? pre[i] : 0.0f;
}

// d ← d·[pre > 0] (ReLU backward, in place).
__global__ static void relu_mask_kernel(float *d, const float *pre, int64_t n) {
    WX_CUDA_FOR(i, n) if (!(pre[i] > 0)) d[i] = 0.0f;
}

// ---- complex GEMM ---------------------------------------------------------------------------

// Row-major C_k(m,n) = op(A_k)·op(B_k) (+ C_k) for k < batch, A_k = a + k·sa etc. (complex
// elements, interleaved floats). Column-major cuBLAS computes C_kᵀ = op(B_k)ᵀ·op(A_k)ᵀ, so the
// operands swap and keep their flags (the identity holds for conjugate transposes too).
static wx_status cgemm_rm(wx_cuda_state *st, cublasOperation_t ta, cublasOperation_t tb,
                          int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                          long long sa, const float *b, int64_t ldb, long long sb, int accumulate,
                          float *c, int64_t ldc, long long sc, int64_t batch) {
    const cuComplex one = make_cuComplex(1.0f, 0.0f);
    const cuComplex beta = make_cuComplex(accumulate ? 1.0f : 0.0f, 0.0f);
    WX_CUBLAS_CHECK(cublasCgemmStridedBatched(
        st->blas, tb, ta, (int)n, (int)m, (int)k, &one, (const cuComplex *)b, (int)ldb, sb,
        (const cuComplex *)a, (int)lda, sa, &beta, (cuComplex *)c, (int)ldc, sc, (int)batch));
    return WX_OK;
}

// Carves consecutive float regions from one scratch buffer, each 256-byte aligned.
static float *carve(float **cursor, int64_t floats) {
    float *p = *cursor;
    *cursor += (floats + 63) / 64 * 64;
    return p;
}

#define N_ CUBLAS_OP_N
#define C_ CUBLAS_OP_C

extern "C" wx_status wx_cuda_afno_filter_forward(
    wx_ctx *ctx, float *Y /* (B,H,Wf,C,2) */, float *saved /* spectral.inc */,
    const float *X /* (B,H,Wf,C,2) */, const float *w1 /* (2,nb,bs,hid) */,
    const float *b1 /* (2,nb,hid) */, const float *w2 /* (2,nb,hid,bs) */,
    const float *b2 /* (2,nb,bs) */, const uint8_t *mask /* (H,Wf) */, int64_t b, int64_t h,
    int64_t wf, int64_t c, int64_t nb, int64_t factor, double lambda) {
    WX_TRY(afno_check("afno_filter", b, h, wf, c, nb, factor, lambda));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t bs = c / nb, hid = bs * factor, ch = nb * hid, hwf = h * wf, m;
    WX_TRY(modes_get(st, mask, hwf, &m));
    int64_t rows = b * m, wn = nb * bs * hid;
    if (rows == 0) {
        WX_CUDA_CHECK(cudaMemsetAsync(Y, 0, sizeof(float) * 2 * (size_t)(b * hwf * c), st->stream));
        return WX_OK;
    }
    const int64_t *modes = st->modes, *slot = st->modes + m;
    float *hpre = saved, *opre = saved + rows * ch * 2, *base;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_OP,
                           sizeof(float) * (size_t)(2 * rows * c + 2 * rows * ch + 4 * wn + 4 * 64),
                           (void **)&base));
    float *xg = carve(&base, 2 * rows * c), *act = carve(&base, 2 * rows * ch);
    float *w1c = carve(&base, 2 * wn), *w2c = carve(&base, 2 * wn);
    unsigned tpb = WX_CUDA_THREADS;
    cudaStream_t s = st->stream;

    modes_gather_kernel<<<wx_cuda_blocks(rows * 2 * c), tpb, 0, s>>>(xg, X, modes, rows, m, hwf,
                                                                     2 * c);
    WX_CUDA_LAUNCHED("modes_gather_kernel");
    interleave_kernel<<<wx_cuda_blocks(wn), tpb, 0, s>>>(w1c, w1, wn);
    WX_CUDA_LAUNCHED("interleave_kernel (w1)");
    interleave_kernel<<<wx_cuda_blocks(wn), tpb, 0, s>>>(w2c, w2, wn);
    WX_CUDA_LAUNCHED("interleave_kernel (w2)");

    // Layer 1: hpre = X·W1 + b1 per block; act = ReLU of re and im separately.
    bias_fill_kernel<<<wx_cuda_blocks(rows * ch), tpb, 0, s>>>(hpre, b1, rows, ch);
    WX_CUDA_LAUNCHED("bias_fill_kernel (b1)");
    WX_TRY(cgemm_rm(st, N_, N_, rows, hid, bs, xg, c, bs, w1c, hid, bs * hid, 1, hpre, ch, hid, nb));
    relu_copy_kernel<<<wx_cuda_blocks(rows * ch * 2), tpb, 0, s>>>(act, hpre, rows * ch * 2);
    WX_CUDA_LAUNCHED("relu_copy_kernel");

    // Layer 2: opre = A·W2 + b2 per block.
    bias_fill_kernel<<<wx_cuda_blocks(rows * c), tpb, 0, s>>>(opre, b2, rows, c);
    WX_CUDA_LAUNCHED("bias_fill_kernel (b2)");
    WX_TRY(cgemm_rm(st, N_, N_, rows, bs, hid, act, ch, hid, w2c, bs, hid * bs, 1, opre, c, bs, nb));

    // Y = softshrink(opre) on kept modes, 0 elsewhere.
    modes_scatter_kernel<<<wx_cuda_blocks(b * hwf * 2 * c), tpb, 0, s>>>(Y, opre, slot, b, m, hwf,
                                                                         2 * c, 1, (float)lambda);
    WX_CUDA_LAUNCHED("modes_scatter_kernel (Y)");
    return WX_OK;
}

// Differentiates, per kept mode and block (W = w[0] + i·w[1]):
//   hpre = X·W1 + b1;  A = ReLU(hpre.re) + i·ReLU(hpre.im);  opre = A·W2 + b2;
//   Y = softshrink(opre.re) + i·softshrink(opre.im).
// For P = U·V with a real loss: dU = dP·Vᴴ, dV = Uᴴ·dP.
extern "C" wx_status wx_cuda_afno_filter_backward(
    wx_ctx *ctx, float *dX /* (B,H,Wf,C,2), nullable */, float *dw1 /* (2,nb,bs,hid) */,
    float *db1 /* (2,nb,hid) */, float *dw2 /* (2,nb,hid,bs) */, float *db2 /* (2,nb,bs) */,
    const float *dY /* (B,H,Wf,C,2) */, const float *saved, const float *X /* (B,H,Wf,C,2) */,
    const float *w1 /* (2,nb,bs,hid) */, const float *w2 /* (2,nb,hid,bs) */,
    const uint8_t *mask /* (H,Wf) */, int64_t b, int64_t h, int64_t wf, int64_t c, int64_t nb,
    int64_t factor, double lambda) {
    WX_TRY(afno_check("afno_filter_backward", b, h, wf, c, nb, factor, lambda));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t bs = c / nb, hid = bs * factor, ch = nb * hid, hwf = h * wf, m;
    WX_TRY(modes_get(st, mask, hwf, &m));
    int64_t rows = b * m, wn = nb * bs * hid;
    if (rows == 0) {
        if (dX)
            WX_CUDA_CHECK(
                cudaMemsetAsync(dX, 0, sizeof(float) * 2 * (size_t)(b * hwf * c), st->stream));
        return WX_OK;
    }
    const int64_t *modes = st->modes, *slot = st->modes + m;
    const float *hpre = saved, *opre = saved + rows * ch * 2;
    float *base;
    WX_TRY(wx_cuda_scratch(
        st, WX_SCRATCH_OP,
        sizeof(float) * (size_t)(4 * rows * c + 4 * rows * ch + 6 * wn + 7 * 64), (void **)&base));
    float *d_o = carve(&base, 2 * rows * c), *xg = carve(&base, 2 * rows * c);
    float *act = carve(&base, 2 * rows * ch), *d_h = carve(&base, 2 * rows * ch);
    float *w1c = carve(&base, 2 * wn), *w2c = carve(&base, 2 * wn), *dwc = carve(&base, 2 * wn);
    unsigned tpb = WX_CUDA_THREADS;
    cudaStream_t s = st->stream;
    float lam = (float)lambda;

    interleave_kernel<<<wx_cuda_blocks(wn), tpb, 0, s>>>(w1c, w1, wn);
    WX_CUDA_LAUNCHED("interleave_kernel (w1)");
    interleave_kernel<<<wx_cuda_blocks(wn), tpb, 0, s>>>(w2c, w2, wn);
    WX_CUDA_LAUNCHED("interleave_kernel (w2)");
    // d opre = dY ⊙ [|opre| > λ]; A = ReLU(hpre).
    shrink_grad_gather_kernel<<<wx_cuda_blocks(rows * 2 * c), tpb, 0, s>>>(d_o, dY, opre, modes,
                                                                           rows, m, hwf, 2 * c, lam);
    WX_CUDA_LAUNCHED("shrink_grad_gather_kernel");
    relu_copy_kernel<<<wx_cuda_blocks(rows * ch * 2), tpb, 0, s>>>(act, hpre, rows * ch * 2);
    WX_CUDA_LAUNCHED("relu_copy_kernel");

    // Layer 2: db2 += Σ d opre; dW2 = Aᴴ·d opre; dA = d opre·W2ᴴ.
    WX_TRY(wx_cuda_col_sum_acc(st, db2, d_o, rows, 2 * c, c));
    WX_TRY(cgemm_rm(st, C_, N_, hid, bs, rows, act, ch, hid, d_o, c, bs, 0, dwc, bs, hid * bs, nb));
    WX_TRY(cgemm_rm(st, N_, C_, rows, hid, bs, d_o, c, bs, w2c, bs, hid * bs, 0, d_h, ch, hid, nb));
    add_split_kernel<<<wx_cuda_blocks(wn), tpb, 0, s>>>(dw2, dwc, wn);
    WX_CUDA_LAUNCHED("add_split_kernel (dw2)");

    // ReLU: d hpre = dA ⊙ [hpre > 0].
    relu_mask_kernel<<<wx_cuda_blocks(rows * ch * 2), tpb, 0, s>>>(d_h, hpre, rows * ch * 2);
    WX_CUDA_LAUNCHED("relu_mask_kernel");

    // Layer 1: db1 += Σ d hpre; dW1 = Xᴴ·d hpre; dX = d hpre·W1ᴴ on kept modes.
    WX_TRY(wx_cuda_col_sum_acc(st, db1, d_h, rows, 2 * ch, ch));
    modes_gather_kernel<<<wx_cuda_blocks(rows * 2 * c), tpb, 0, s>>>(xg, X, modes, rows, m, hwf,
                                                                     2 * c);
    WX_CUDA_LAUNCHED("modes_gather_kernel");
    // dwc is reused: the stream has run add_split for dw2 before this GEMM overwrites it.
    WX_TRY(cgemm_rm(st, C_, N_, bs, hid, rows, xg, c, bs, d_h, ch, hid, 0, dwc, hid, bs * hid, nb));
    add_split_kernel<<<wx_cuda_blocks(wn), tpb, 0, s>>>(dw1, dwc, wn);
    WX_CUDA_LAUNCHED("add_split_kernel (dw1)");
    if (dX) {
        // d_o is reused for dXg: every reader of d opre is queued before this GEMM.
        WX_TRY(cgemm_rm(st, N_, C_, rows, bs, hid, d_h, ch, hid, w1c, hid, bs * hid, 0, d_o, c, bs,
                        nb));
        modes_scatter_kernel<<<wx_cuda_blocks(b * hwf * 2 * c), tpb, 0, s>>>(dX, d_o, slot, b, m, hwf,
                                                                             2 * c, 0, 0.0f);
        WX_CUDA_LAUNCHED("modes_scatter_kernel (dX)");
    }
    return WX_OK;
}
