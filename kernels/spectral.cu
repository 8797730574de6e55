// Spectral ops on the GPU, FFT half: rfft2 / irfft2 over (H,W), channels-last, orthonormal, with
// the CPU's (torch's) irfft2 semantics. The AFNO filter is in spectral_afno.cu. Contract:
// src/ops/spectral.inc; reference: src/ops/spectral.c.
//
// cuFFT is fastest on contiguous signals batched over everything at once, and the model's tensors
// are channels-last (B, H, W, C): a transform batched over C with stride C, called once per batch
// item, ran at a third of the speed (measured on an H200, docs/benchmarks.md). So each op moves the
// data to channel-planar (B·C, H, W) with a tiled transpose, runs one cuFFT call over all B·C
// planes, and transposes back. The transposes that touch the spectrum also do the work that needs
// a pass over it anyway: the orthonormal scaling with the per-column weights of the backward
// passes, and the Hermitian projection of torch's irfft2 (derivations in spectral.c). One plan per
// (H, W, B·C, direction), made on first use and cached; every plan shares one work area.
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "wx_cuda_state.h"

// The transposes index one sample's plane in int (H·W·C ≤ INT_MAX) and take the batch as
// gridDim.z (≤ 65535); checked before any device work.
static wx_status check_sizes(const char *op, int64_t b, int64_t h, int64_t w, int64_t c) {
    if (b < 1 || h < 1 || w < 1 || c < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes B=%lld H=%lld W=%lld C=%lld, expected all >= 1",
                            op, (long long)b, (long long)h, (long long)w, (long long)c);
    if (h > INT_MAX / w || h * w > INT_MAX / c)
        return wx_error_set(WX_ERR_USAGE, "%s: H·W·C = %lld·%lld·%lld exceeds %d per sample", op,
                            (long long)h, (long long)w, (long long)c, INT_MAX);
    if (b > 65535)
        return wx_error_set(WX_ERR_USAGE, "%s: batch %lld exceeds 65535 samples per call", op,
                            (long long)b);
    return WX_OK;
}

// cuFFT reads and writes complex values as float2, which must be 8-byte aligned.
static wx_status check_complex_aligned(const char *op, const float *z) {
    if ((uintptr_t)z % 8 != 0)
        return wx_error_set(WX_ERR_USAGE, "%s: complex array at %p is not 8-byte aligned", op,
                            (const void *)z);
    return WX_OK;
}

// *out = a copy of the plan's entry (st->plans grows by realloc: no pointer into it is kept).
static wx_status plan_get(wx_cuda_state *st, const char *op, int64_t h, int64_t w, int64_t batch,
                          int r2c, wx_cuda_fft_plan *out) {
    for (int i = 0; i < st->nplans; i++) {
        const wx_cuda_fft_plan *p = &st->plans[i];
        if (p->h == h && p->w == w && p->batch == batch && p->r2c == r2c) {
            *out = *p;
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
    // `batch` contiguous planes: real (H, W), complex (H, W/2+1) (cuFFT's default layout).
    long long n[2] = {(long long)h, (long long)w};
    cufftHandle plan;
    WX_CUFFT_CHECK(cufftCreate(&plan));
    size_t work = 0;
    // The work area comes from FFT_WORK scratch at each run: plans for several batch sizes do not
    // each hold their own (it is as large as the data).
    cufftResult r = cufftSetAutoAllocation(plan, 0);
    if (r == CUFFT_SUCCESS)
        r = cufftMakePlanMany64(plan, 2, n, NULL, 1, 0, NULL, 1, 0, r2c ? CUFFT_R2C : CUFFT_C2R,
                                (long long)batch, &work);
    if (r == CUFFT_SUCCESS) r = cufftSetStream(plan, st->stream);
    if (r != CUFFT_SUCCESS) {
        (void)cufftDestroy(plan);
        return wx_error_set(WX_ERR_RUN, "%s: cuFFT could not plan a %s transform of %lldx%lld over "
                            "%lld planes: %s (%d)", op, r2c ? "r2c" : "c2r", (long long)h,
                            (long long)w, (long long)batch, wx_cufft_status_string(r), (int)r);
    }
    wx_cuda_fft_plan *e = &st->plans[st->nplans++];
    e->h = h, e->w = w, e->batch = batch, e->r2c = r2c, e->work = work, e->plan = plan;
    *out = *e;
    return WX_OK;
}

// Points the plan at the shared work area, grown to what it needs.
static wx_status plan_work(wx_cuda_state *st, const wx_cuda_fft_plan *p) {
    void *work;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_FFT_WORK, p->work, &work));
    WX_CUFFT_CHECK(cufftSetWorkArea(p->plan, work));
    return WX_OK;
}

// kx = 0 and (W even) kx = W/2 stand for themselves; every other kx < Wf also for W − kx.
__device__ __forceinline__ bool is_interior(int64_t kx, int64_t w) { return kx > 0 && 2 * kx != w; }

// ---- tiled transposes ------------------------------------------------------------------------

#define TILE 32
#define TILE_ROWS 8 // threads per block: TILE × TILE_ROWS

// out(nb, K, R) from in(nb, R, K): out[b][k][r] = ld(in + b·R·K, r, k), through a shared tile so
// that both the reads (along k) and the writes (along r) are coalesced. Grid: x over K tiles,
// y over R tiles (grid-stride beyond the y limit), z over nb.
template <typename T, typename Load>
__global__ static void transpose_kernel(T *out, const T *in, int64_t R, int64_t K, Load ld) {
    __shared__ T tile[TILE][TILE + 1];
    const int64_t plane = R * K;
    const T *ib = in + (int64_t)blockIdx.z * plane;
    T *ob = out + (int64_t)blockIdx.z * plane;
    const int64_t k0 = (int64_t)blockIdx.x * TILE;
    for (int64_t r0 = (int64_t)blockIdx.y * TILE; r0 < R; r0 += (int64_t)gridDim.y * TILE) {
        for (int i = threadIdx.y; i < TILE; i += TILE_ROWS) {
            int64_t r = r0 + i, k = k0 + threadIdx.x;
            if (r < R && k < K) tile[i][threadIdx.x] = ld(ib, r, k);
        }
        __syncthreads();
        for (int i = threadIdx.y; i < TILE; i += TILE_ROWS) {
            int64_t k = k0 + i, r = r0 + threadIdx.x;
            if (k < K && r < R) ob[k * R + r] = tile[threadIdx.x][i];
        }
        __syncthreads(); // the tile is refilled for the next r0
    }
}

// A plain copy of in[r][k].
template <typename T> struct load_plain {
    __device__ T operator()(const T *in, int64_t r, int64_t k) const { return in[r * K + k]; }
    int64_t K;
};

// r2c's output: in = planar spectrum (C, H·Wf) of one sample, r = channel, k = ky·Wf + kx; scaled
// by s, interior columns by si.
struct load_r2c_scaled {
    __device__ float2 operator()(const float2 *in, int64_t r, int64_t k) const {
        float2 v = in[r * hwf + k];
        float f = is_interior((int)k % (int)wf, w) ? si : s; // k < H·Wf ≤ INT_MAX
        return make_float2(f * v.x, f * v.y);
    }
    int64_t hwf, wf, w;
    float s, si;
};

// c2r's input: in = channels-last spectrum (H·Wf, C) of one sample, r = ky·Wf + kx, k = channel.
// Interior columns × si; the kx = 0 and Nyquist columns projected onto Hermitian symmetry in ky,
// Z[ky] ← (Z[ky] + conj Z[−ky]) / 2, and × s (half_s = s / 2). See c2r_run in spectral.c.
struct load_c2r_prepared {
    __device__ float2 operator()(const float2 *in, int64_t r, int64_t k) const {
        float2 v = in[r * c + k];
        int ky = (int)r / (int)wf, kx = (int)r - ky * (int)wf; // r < H·Wf ≤ INT_MAX
        if (is_interior(kx, w)) return make_float2(si * v.x, si * v.y);
        float2 m = in[(((h - ky) % h) * wf + kx) * c + k];
        return make_float2(half_s * (v.x + m.x), half_s * (v.y - m.y));
    }
    int64_t h, wf, w, c;
    float si, half_s;
};

template <typename T, typename Load>
static wx_status transpose(wx_cuda_state *st, const char *op, T *out, const T *in, int64_t nb,
                           int64_t R, int64_t K, Load ld) {
    (void)op; // nb ≤ 65535: check_sizes
    int64_t ty = (R + TILE - 1) / TILE;
    dim3 grid((unsigned)((K + TILE - 1) / TILE), (unsigned)(ty < 65535 ? ty : 65535),
              (unsigned)nb);
    transpose_kernel<<<grid, dim3(TILE, TILE_ROWS), 0, st->stream>>>(out, in, R, K, ld);
    WX_CUDA_LAUNCHED("transpose_kernel");
    return WX_OK;
}

// X(B,H,Wf,C,2) = scale·rfft2(x(B,H,W,C)), interior columns further × `interior`.
static wx_status r2c_run(wx_ctx *ctx, const char *op, float *X, const float *x, int64_t b,
                         int64_t h, int64_t w, int64_t c, double interior) {
    WX_TRY(check_sizes(op, b, h, w, c));
    WX_TRY(check_complex_aligned(op, X));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    const int64_t wf = w / 2 + 1, hw = h * w, hwf = h * wf;
    wx_cuda_fft_plan plan;
    WX_TRY(plan_get(st, op, h, w, b * c, 1, &plan));
    float *xp;   // (B, C, H, W) real planes; also keeps the const x untouched by cuFFT
    float2 *zp;  // (B, C, H, Wf) spectra
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_OP, sizeof(float) * (size_t)(b * c * hw), (void **)&xp));
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_FFT, sizeof(float2) * (size_t)(b * c * hwf),
                           (void **)&zp));
    WX_TRY(transpose(st, op, xp, x, b, hw, c, load_plain<float>{c}));
    WX_TRY(plan_work(st, &plan));
    WX_CUFFT_CHECK(cufftExecR2C(plan.plan, (cufftReal *)xp, (cufftComplex *)zp));
    const float s = (float)(1.0 / sqrt((double)h * (double)w));
    const float si = (float)(interior / sqrt((double)h * (double)w));
    return transpose(st, op, (float2 *)X, zp, b, c, hwf, load_r2c_scaled{hwf, wf, w, s, si});
}

// y(B,H,W,C) = C2R of the prepared spectrum (torch irfft2 semantics), interior columns × `interior`.
static wx_status c2r_run(wx_ctx *ctx, const char *op, float *y, const float *X, int64_t b,
                         int64_t h, int64_t w, int64_t c, double interior) {
    WX_TRY(check_sizes(op, b, h, w, c));
    WX_TRY(check_complex_aligned(op, X));
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    const int64_t wf = w / 2 + 1, hw = h * w, hwf = h * wf;
    wx_cuda_fft_plan plan;
    WX_TRY(plan_get(st, op, h, w, b * c, 0, &plan));
    float2 *zp; // (B, C, H, Wf) prepared spectra (C2R overwrites them: never X itself)
    float *yp;  // (B, C, H, W) real planes
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_FFT, sizeof(float2) * (size_t)(b * c * hwf),
                           (void **)&zp));
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_OP, sizeof(float) * (size_t)(b * c * hw), (void **)&yp));
    const float si = (float)(interior / sqrt((double)h * (double)w));
    const float half_s = (float)(0.5 / sqrt((double)h * (double)w));
    WX_TRY(transpose(st, op, zp, (const float2 *)X, b, hwf, c,
                     load_c2r_prepared{h, wf, w, c, si, half_s}));
    WX_TRY(plan_work(st, &plan));
    WX_CUFFT_CHECK(cufftExecC2R(plan.plan, (cufftComplex *)zp, (cufftReal *)yp));
    return transpose(st, op, y, yp, b, c, hw, load_plain<float>{hw});
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
