// Fused dense ops on the GPU: residual add + LayerNorm (one kernel per direction plus the
// parameter-gradient partials) and linear + bias + GELU (cuBLAS GEMM, then one element-wise
// kernel; backward: one GELU' kernel feeding the linear backward). Semantics are those of
// src/ops/dense_fused.inc; shapes repeated at each function. cuBLASLt's GELU epilogues use the
// tanh approximation, not the exact erf form the op list defines, so the GELU stays our kernel.
// Parameter-gradient sums: fixed chunks in double, added in order (no atomics, same bits each run).
#include "wx_cuda_state.h"

#define WX_SQRT1_2 0.70710678118654752440
#define WX_INV_SQRT_2PI 0.39894228040143267794

__device__ __forceinline__ float fused_phi_cdf(float v) {
    return 0.5f * (1.0f + erff(v * (float)WX_SQRT1_2));
}
__device__ __forceinline__ float fused_phi_pdf(float v) {
    return expf(-0.5f * v * v) * (float)WX_INV_SQRT_2PI;
}

static unsigned fused_row_blocks(int64_t n) { return (unsigned)(n < (1 << 20) ? n : (1 << 20)); }

static wx_status fused_ln_check(const char *op, int64_t n, int64_t c) {
    if (c <= 0 || n < 0)
        return wx_error_set(WX_ERR_USAGE, "%s: N = %lld, C = %lld, expected N >= 0 and C > 0", op,
                            (long long)n, (long long)c);
    return WX_OK;
}

// ---- layernorm_residual --------------------------------------------------------------------

// One block per row: s = a + r written first (each thread reads back only its own columns, so s
// may alias a or r), then the two-pass mean / variance in double as layernorm_fwd_kernel.
__global__ static void ln_res_fwd_kernel(float *s, float *y, float *z, float *mean, float *rstd,
                                         const float *a, const float *r, const float *gamma,
                                         const float *beta, int64_t n, int64_t c, double eps) {
    __shared__ double sh[WX_CUDA_THREADS];
    for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
        float *sr = s + row * c;
        const float *ar = a + row * c, *rr = r ? r + row * c : NULL;
        double sum = 0;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
            float v = rr ? ar[j] + rr[j] : ar[j];
            sr[j] = v;
            sum += v;
        }
        double mu = wx_block_sum(sum, sh) / (double)c;
        double var = 0;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) var += (sr[j] - mu) * (sr[j] - mu);
        double rs = 1.0 / sqrt(wx_block_sum(var, sh) / (double)c + eps);
        float *yr = y + row * c, *zr = z ? z + row * c : NULL;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
            float v = (float)((sr[j] - mu) * rs * gamma[j] + beta[j]);
            yr[j] = v;
            if (zr) zr[j] = sr[j] + v;
        }
        if (threadIdx.x == 0) {
            mean[row] = (float)mu;
            rstd[row] = (float)rs;
        }
    }
}

// ds = dres + dz + rstd·(g − mean(g) − ŝ·mean(g·ŝ)), g = (dy + dz)·gamma; one block per row. Each
// thread writes only the columns it has read, so ds may alias dy, dz or dres.
__global__ static void ln_res_bwd_kernel(float *ds, const float *dy, const float *dz,
                                         const float *dres, const float *s, const float *mean,
                                         const float *rstd, const float *gamma, int64_t n,
                                         int64_t c) {
    __shared__ double sh[WX_CUDA_THREADS];
    for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
        const int64_t o = row * c;
        double mu = mean[row], rs = rstd[row], sg = 0, sgx = 0;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
            float d = dz ? dy[o + j] + dz[o + j] : dy[o + j];
            double g = (double)d * gamma[j];
            sg += g;
            sgx += g * (s[o + j] - mu) * rs;
        }
        sg = wx_block_sum(sg, sh) / (double)c;
        sgx = wx_block_sum(sgx, sh) / (double)c;
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
            float d = dz ? dy[o + j] + dz[o + j] : dy[o + j];
            double g = (double)d * gamma[j];
            float lnb = (float)(rs * (g - sg - (s[o + j] - mu) * rs * sgx));
            float skip = dres ? (dz ? dres[o + j] + dz[o + j] : dres[o + j]) : (dz ? dz[o + j] : 0.0f);
            ds[o + j] = skip + lnb;
        }
    }
}

// Partials of dgamma = Σ_r (dy + dz)·ŝ and dbeta = Σ_r (dy + dz) over fixed row chunks.
__global__ static void ln_res_param_kernel(double *pg, double *pb, const float *dy, const float *dz,
                                           const float *s, const float *mean, const float *rstd,
                                           int64_t n, int64_t c, int64_t nchunks) {
    WX_CUDA_FOR(i, nchunks * c) {
        int64_t k = i / c, j = i % c;
        int64_t r0 = k * WX_COL_CHUNK, r1 = r0 + WX_COL_CHUNK < n ? r0 + WX_COL_CHUNK : n;
        double sg = 0, sb = 0;
        for (int64_t r = r0; r < r1; r++) {
            double d = dz ? dy[r * c + j] + dz[r * c + j] : dy[r * c + j];
            sg += d * ((s[r * c + j] - (double)mean[r]) * (double)rstd[r]);
            sb += d;
        }
        pg[i] = sg;
        pb[i] = sb;
    }
}

extern "C" wx_status wx_cuda_layernorm_residual_forward(wx_ctx *ctx, float *s, float *y, float *z,
                                                        float *mean, float *rstd, const float *a,
                                                        const float *r, const float *gamma,
                                                        const float *beta, int64_t n, int64_t c,
                                                        double eps) {
    // s(N,C) (may alias a, r), y(N,C), z(N,C) nullable, mean(N), rstd(N) saved, a(N,C),
    // r(N,C) nullable, gamma(C), beta(C)
    WX_TRY(fused_ln_check("layernorm_residual_forward", n, c));
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    ln_res_fwd_kernel<<<fused_row_blocks(n), WX_CUDA_THREADS, 0, st->stream>>>(
        s, y, z, mean, rstd, a, r, gamma, beta, n, c, eps);
    WX_CUDA_LAUNCHED("ln_res_fwd_kernel");
    return WX_OK;
}

// Differentiates s = a + r, y = LN(s), z = s + y: ∂L/∂s = dres + dz + LN_bwd(dy + dz).
extern "C" wx_status wx_cuda_layernorm_residual_backward(wx_ctx *ctx, float *ds, float *dgamma,
                                                         float *dbeta, const float *dy,
                                                         const float *dz, const float *dres,
                                                         const float *s, const float *mean,
                                                         const float *rstd, const float *gamma,
                                                         int64_t n, int64_t c) {
    // ds(N,C) overwrite (may alias dy, dz, dres), dgamma(C) +=, dbeta(C) += (nullable),
    // dy(N,C), dz(N,C) nullable, dres(N,C) nullable, s(N,C), mean(N), rstd(N), gamma(C)
    WX_TRY(fused_ln_check("layernorm_residual_backward", n, c));
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    // The parameter partials read dy and dz, which ds may alias: they run first.
    if (dgamma || dbeta) {
        int64_t nchunks = (n + WX_COL_CHUNK - 1) / WX_COL_CHUNK;
        double *pg;
        WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * 2 * (size_t)(nchunks * c),
                               (void **)&pg));
        double *pb = pg + nchunks * c;
        ln_res_param_kernel<<<wx_cuda_blocks(nchunks * c), WX_CUDA_THREADS, 0, st->stream>>>(
            pg, pb, dy, dz, s, mean, rstd, n, c, nchunks);
        WX_CUDA_LAUNCHED("ln_res_param_kernel");
        if (dgamma) WX_TRY(wx_cuda_col_sum_finish(st, dgamma, pg, nchunks, c, 0));
        if (dbeta) WX_TRY(wx_cuda_col_sum_finish(st, dbeta, pb, nchunks, c, 0));
    }
    ln_res_bwd_kernel<<<fused_row_blocks(n), WX_CUDA_THREADS, 0, st->stream>>>(
        ds, dy, dz, dres, s, mean, rstd, gamma, n, c);
    WX_CUDA_LAUNCHED("ln_res_bwd_kernel");
    return WX_OK;
}

// ---- linear_gelu ---------------------------------------------------------------------------

__device__ __forceinline__ float gelu_of(float v) { return v * fused_phi_cdf(v); }

// h(rows, cols) += b(cols) when b is given, then g = GELU(h): the bias of the GEMM and the
// activation in one pass over h. One block per row (no per-element division); 16-byte accesses
// when vec (cols % 4 == 0 and h, g, b 16-byte aligned).
__global__ static void bias_gelu_fwd_kernel(float *h, float *g, const float *b, int64_t rows,
                                            int64_t cols, int vec) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        float *hr = h + r * cols, *gr = g + r * cols;
        if (vec) {
            float4 *h4 = (float4 *)hr, *g4 = (float4 *)gr;
            const float4 *b4 = (const float4 *)b;
            for (int64_t j = threadIdx.x; j < cols / 4; j += blockDim.x) {
                float4 v = h4[j];
                if (b) {
                    float4 a = b4[j];
                    v.x += a.x, v.y += a.y, v.z += a.z, v.w += a.w;
                    h4[j] = v;
                }
                g4[j] = make_float4(gelu_of(v.x), gelu_of(v.y), gelu_of(v.z), gelu_of(v.w));
            }
        } else {
            for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
                float v = hr[j];
                if (b) hr[j] = v = v + b[j];
                gr[j] = gelu_of(v);
            }
        }
    }
}

// dh = dg·GELU'(h), and g = GELU(h) when g is not NULL (Φ(h) shared). dh may alias dg.
__device__ __forceinline__ void gelu_bwd_one(float *dh, float *g, float dg, float v) {
    float cdf = fused_phi_cdf(v);
    if (g) *g = v * cdf;
    *dh = dg * (cdf + v * fused_phi_pdf(v));
}
__global__ static void fused_gelu_bwd_kernel(float *dh, float *g, const float *dg, const float *h,
                                             int64_t n) {
    WX_CUDA_FOR(i, n) gelu_bwd_one(dh + i, g ? g + i : NULL, dg[i], h[i]);
}
// The same four at a time (every pointer 16-byte aligned; n4 = n / 4, the tail to the above).
__global__ static void fused_gelu_bwd_x4_kernel(float4 *dh, float4 *g, const float4 *dg,
                                                const float4 *h, int64_t n4) {
    WX_CUDA_FOR(i, n4) {
        float4 v = h[i], d = dg[i], o, gg;
        gelu_bwd_one(&o.x, &gg.x, d.x, v.x), gelu_bwd_one(&o.y, &gg.y, d.y, v.y);
        gelu_bwd_one(&o.z, &gg.z, d.z, v.z), gelu_bwd_one(&o.w, &gg.w, d.w, v.w);
        dh[i] = o;
        if (g) g[i] = gg;
    }
}

static bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

extern "C" wx_status wx_cuda_linear_gelu_forward(wx_ctx *ctx, float *h, float *g, const float *x,
                                                 const float *w, const float *b, int64_t n,
                                                 int64_t in, int64_t out) {
    // h(N,out), g(N,out), x(N,in), w(out,in), b(out) nullable
    // The GEMM alone (beta = 0); its bias goes into the GELU pass below.
    WX_TRY(wx_cuda_linear_forward(ctx, h, x, w, NULL, n, in, out)); // checks the dimensions
    if (n == 0 || out == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int vec = out % 4 == 0 && aligned16(h) && aligned16(g) && (!b || aligned16(b));
    bias_gelu_fwd_kernel<<<fused_row_blocks(n), WX_CUDA_THREADS, 0, st->stream>>>(
        h, g, b, n, out, vec);
    WX_CUDA_LAUNCHED("bias_gelu_fwd_kernel");
    return WX_OK;
}

// Differentiates h = x·wᵀ + b, g = GELU(h).
extern "C" wx_status wx_cuda_linear_gelu_backward(wx_ctx *ctx, float *dx, float *dw, float *db,
                                                  float *dh, float *g, const float *dg,
                                                  const float *h,
                                                  const float *x, const float *w, int64_t n,
                                                  int64_t in, int64_t out) {
    // dx(N,in) overwrite nullable, dw(out,in) +=, db(out) += nullable, dh(N,out) overwrite (may
    // alias dg), g(N,out) overwrite nullable, dg(N,out), h(N,out), x(N,in), w(out,in)
    if (n < 0 || in < 0 || out < 0)
        return wx_error_set(WX_ERR_USAGE, "linear_gelu_backward: dimensions (%lld, %lld, %lld), "
                            "expected >= 0", (long long)n, (long long)in, (long long)out);
    if (n > 0 && out > 0) {
        wx_cuda_state *st;
        WX_TRY(wx_cuda_state_get(ctx, &st));
        const int64_t len = n * out;
        int64_t n4 = aligned16(dh) && aligned16(dg) && aligned16(h) && (!g || aligned16(g))
                         ? len / 4 : 0;
        if (n4 > 0) {
            fused_gelu_bwd_x4_kernel<<<wx_cuda_blocks(n4), WX_CUDA_THREADS, 0, st->stream>>>(
                (float4 *)dh, (float4 *)g, (const float4 *)dg, (const float4 *)h, n4);
            WX_CUDA_LAUNCHED("fused_gelu_bwd_x4_kernel");
        }
        if (len > 4 * n4) {
            fused_gelu_bwd_kernel<<<wx_cuda_blocks(len - 4 * n4), WX_CUDA_THREADS, 0, st->stream>>>(
                dh + 4 * n4, g ? g + 4 * n4 : NULL, dg + 4 * n4, h + 4 * n4, len - 4 * n4);
            WX_CUDA_LAUNCHED("fused_gelu_bwd_kernel");
        }
    }
    return wx_cuda_linear_backward(ctx, dx, dw, db, dh, x, w, n, in, out);
}
