// Spectral ops on the GPU, FFT half: rfft2 / irfft2 over (H,W), channels-last, orthonormal, with
// the CPU's (torch's) irfft2 semantics. The AFNO filter is in spectral_afno.cu. Contract:
// src/ops/spectral.inc; reference: src/ops/spectral.c.
//
// One cuFFT plan per (H, W, C, direction), made on first use and cached in the CUDA state: a 2-D
// transform batched over the C channels with the channels-last strides (stride C, distance 1),
// executed once per batch item. cuFFT is unnormalised, so the orthonormal scaling is a kernel of
// ours, fused with the per-column weights the backward passes need (derivations in spectral.c).
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "wx_cuda_state.h"

static wx_status check_sizes(const char *op, int64_t b, int64_t h, int64_t w, int64_t c) {
    if (b < 1 || h < 1 || w < 1 || c < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes B=%lld H=%lld W=%lld C=%lld, expected all >= 1",
                            op, (long long)b, (long long)h, (long long)w, (long long)c);
    if (h > INT_MAX / w || h * w > INT_MAX / c)
        return wx_error_set(WX_ERR_USAGE, "%s: H·W·C = %lld·%lld·%lld exceeds cuFFT's int range", op,
                            (long long)h, (long long)w, (long long)c);
    return WX_OK;
}

// cuFFT reads and writes complex values as float2, which must be 8-byte aligned.
static wx_status check_complex_aligned(const char *op, const float *z) {
    if ((uintptr_t)z % 8 != 0)
        return wx_error_set(WX_ERR_USAGE, "%s: complex array at %p is not 8-byte aligned", op,
                            (const void *)z);
    return WX_OK;
}

static wx_status plan_get(wx_cuda_state *st, const char *op, int64_t h, int64_t w, int64_t c,
                          int r2c, cufftHandle *out) {
    for (int i = 0; i < st->nplans; i++) {
        const wx_cuda_fft_plan *p = &st->plans[i];
        if (p->h == h && p->w == w && p->c == c && p->r2c == r2c) {
            *out = p->plan;
            return WX_OK;
        }
    }
    if (st->nplans == st->cap_plans) {
        int cap = st->cap_plans ? 2 * st->cap_plans : 4;
        wx_cuda_fft_plan *grown =
            (wx_cuda_fft_plan *)realloc(st->plans, sizeof *grown * (size_t)cap);
        WX_ASSERT(grown);
        st->plans = grown;
        st->cap_plans = cap;
    }
    // Real (H, W) and complex (H, Wf) grids, each element C apart, channel j starting at j.
    int n[2] = {(int)h, (int)w}, rembed[2] = {(int)h, (int)w}, cembed[2] = {(int)h, (int)(w / 2 + 1)};
    cufftHandle plan;
    WX_CUFFT_CHECK(cufftCreate(&plan));
    size_t work = 0;
    cufftResult r =
        r2c ? cufftMakePlanMany(plan, 2, n, rembed, (int)c, 1, cembed, (int)c, 1, CUFFT_R2C, (int)c,
                                &work)
            : cufftMakePlanMany(plan, 2, n, cembed, (int)c, 1, rembed, (int)c, 1, CUFFT_C2R, (int)c,
                                &work);
    if (r == CUFFT_SUCCESS) r = cufftSetStream(plan, st->stream);
    if (r != CUFFT_SUCCESS) {
        (void)cufftDestroy(plan);
        return wx_error_set(WX_ERR_RUN, "%s: cuFFT could not plan a %s transform of %lldx%lld over "
                            "%lld channels: %s (%d)", op, r2c ? "r2c" : "c2r", (long long)h,
                            (long long)w, (long long)c, wx_cufft_status_string(r), (int)r);
    }
    wx_cuda_fft_plan *e = &st->plans[st->nplans++];
    e->h = h, e->w = w, e->c = c, e->r2c = r2c, e->plan = plan;
    *out = plan;
    return WX_OK;
}

// kx = 0 and (W even) kx = W/2 stand for themselves; every other kx < Wf also for W − kx.
__device__ __forceinline__ bool is_interior(int64_t kx, int64_t w) { return kx > 0 && 2 * kx != w; }

// X(total complex values, layout (…, Wf, C, 2)) *= s, interior columns × si instead.
__global__ static void r2c_scale_kernel(float *X, int64_t total, int64_t wf, int64_t c, int64_t w,
                                        float s, float si) {
    WX_CUDA_FOR(e, total) {
        int64_t kx = (e / (2 * c)) % wf;
        X[e] *= is_interior(kx, w) ? si : s;
    }
}

// z = one sample's spectrum prepared for a C2R that gives torch's irfft2: interior columns
// scaled by si; the kx = 0 and Nyquist columns projected onto Hermitian symmetry in ky,
// Z[ky] ← (Z[ky] + conj Z[−ky]) / 2, and scaled by s (half_s = s / 2). See c2r_run in spectral.c.
__global__ static void c2r_prepare_kernel(float *z, const float *xb, int64_t h, int64_t w,
                                          int64_t wf, int64_t c, float si, float half_s) {
    WX_CUDA_FOR(e, h * wf * c * 2) {
        int64_t row = e / (2 * c), jj = e % (2 * c);
        int64_t ky = row / wf, kx = row % wf;
        if (is_interior(kx, w)) {
            z[e] = si * xb[e];
        } else {
            float mir = xb[(((h - ky) % h) * wf + kx) * c * 2 + jj];
            z[e] = (jj % 2 == 0) ? half_s * (xb[e] + mir) : half_s * (xb[e] - mir);
        }
    }
}

// X[b] = scale·r2c(x[b]), interior columns further × `interior`.
static wx_status r2c_run(wx_ctx *ctx, const char *op, float *X, const float *x, int64_t b,
                         int64_t h, int64_t w, int64_t c, double interior) {
    WX_TRY(check_sizes(op, b, h, w, c));
    WX_TRY(check_complex_aligned(op, X));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t wf = w / 2 + 1, nreal = h * w * c, ncplx = h * wf * c;
    cufftHandle plan;
    WX_TRY(plan_get(st, op, h, w, c, 1, &plan));
    // cuFFT does not promise to leave the input of a multi-dimensional transform untouched and x
    // is const: transform from a scratch copy of each sample.
    float *xs;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_OP, sizeof(float) * (size_t)nreal, (void **)&xs));
    for (int64_t bi = 0; bi < b; bi++) {
        WX_CUDA_CHECK(cudaMemcpyAsync(xs, x + bi * nreal, sizeof(float) * (size_t)nreal,
                                      cudaMemcpyDeviceToDevice, st->stream));
        WX_CUFFT_CHECK(cufftExecR2C(plan, (cufftReal *)xs, (cufftComplex *)(X + bi * ncplx * 2)));
    }
    const float s = (float)(1.0 / sqrt((double)h * (double)w));
    const float si = (float)(interior / sqrt((double)h * (double)w));
    int64_t total = b * ncplx * 2;
    r2c_scale_kernel<<<wx_cuda_blocks(total), WX_CUDA_THREADS, 0, st->stream>>>(X, total, wf, c, w,
                                                                               s, si);
    WX_CUDA_LAUNCHED("r2c_scale_kernel");
    return WX_OK;
}

// y[b] = C2R of the prepared spectrum (torch irfft2 semantics), interior columns × `interior`.
static wx_status c2r_run(wx_ctx *ctx, const char *op, float *y, const float *X, int64_t b,
                         int64_t h, int64_t w, int64_t c, double interior) {
    WX_TRY(check_sizes(op, b, h, w, c));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    int64_t wf = w / 2 + 1, nreal = h * w * c, ncplx = h * wf * c;
    cufftHandle plan;
    WX_TRY(plan_get(st, op, h, w, c, 0, &plan));
    // C2R overwrites its input: it runs on the prepared scratch copy, never on X.
    float *z;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_OP, sizeof(float) * 2 * (size_t)ncplx, (void **)&z));
    const float si = (float)(interior / sqrt((double)h * (double)w));
    const float half_s = (float)(0.5 / sqrt((double)h * (double)w));
    for (int64_t bi = 0; bi < b; bi++) {
        c2r_prepare_kernel<<<wx_cuda_blocks(ncplx * 2), WX_CUDA_THREADS, 0, st->stream>>>(
            z, X + bi * ncplx * 2, h, w, wf, c, si, half_s);
        WX_CUDA_LAUNCHED("c2r_prepare_kernel");
        WX_CUFFT_CHECK(cufftExecC2R(plan, (cufftComplex *)z, (cufftReal *)(y + bi * nreal)));
    }
    return WX_OK;
}

// X(B,H,Wf,C,2) = rfft2(x(B,H,W,C)), norm="ortho".
extern "C" wx_status wx_cuda_rfft2_forward(wx_ctx *ctx, float *X, const float *x, int64_t b,
                                           int64_t h, int64_t w, int64_t c) {
    return r2c_run(ctx, "rfft2", X, x, b, h, w, c, 1.0);
}

// Differentiates X = rfft2(x): dx(B,H,W,C) = C2R of dX(B,H,Wf,C,2) with interior columns halved
// (derivation at wx_cpu_rfft2_backward).
extern "C" wx_status wx_cuda_rfft2_backward(wx_ctx *ctx, float *dx, const float *dX, int64_t b,
                                            int64_t h, int64_t w, int64_t c) {
    return c2r_run(ctx, "rfft2_backward", dx, dX, b, h, w, c, 0.5);
}

// y(B,H,W,C) = irfft2(X(B,H,Wf,C,2), s=(H,W)), norm="ortho", torch semantics.
extern "C" wx_status wx_cuda_irfft2_forward(wx_ctx *ctx, float *y, const float *X, int64_t b,
                                            int64_t h, int64_t w, int64_t c) {
    return c2r_run(ctx, "irfft2", y, X, b, h, w, c, 1.0);
}

// Differentiates y = irfft2(X): dX(B,H,Wf,C,2) = m·rfft2(dy(B,H,W,C)), m = 2 on interior columns
// (derivation at wx_cpu_irfft2_backward).
extern "C" wx_status wx_cuda_irfft2_backward(wx_ctx *ctx, float *dX, const float *dy, int64_t b,
                                             int64_t h, int64_t w, int64_t c) {
    return r2c_run(ctx, "irfft2_backward", dX, dy, b, h, w, c, 2.0);
}
