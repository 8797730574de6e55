/* Spectral ops, FFT half: rfft2 / irfft2 over (H,W) with orthonormal scaling, channels-last, and
 * the FFTW plan cache held in the context. The AFNO filter is in spectral_afno.c.
 *
 * One FFTW "advanced" plan per (H,W,chunk,C) transforms a chunk of a batch item's channels
 * (howmany = chunk, stride = C, dist = 1). The work is cut into (batch item, channel chunk) tasks
 * that the op's OpenMP team runs, each a single-threaded plan executed with the new-array execute
 * functions (thread-safe), with the scaling done by the same thread on its own chunk: one thread
 * pool, as for the GEMMs (ops/wx_gemm.h), instead of FFTW's own threads next to the OpenMP team.
 * The chunks depend only on C and the thread count. Plans use FFTW_ESTIMATE: FFTW_MEASURE may pick
 * a different algorithm from run to run, and results must be bitwise identical run to run for a
 * given thread count.
 *
 * Both backward passes are the other direction's forward with a per-column weight (derivation at
 * each function), so only two kernels exist: r2c_run and c2r_run. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "ops/wx_ops.h"
#include "ops/wx_real.h"

#define WXR wx_real
#define WXF WX_FN

#ifdef WX_REAL_DOUBLE
#define WX_FFT_CACHE wx_fft_cache_f64
#define WX_CTX_FFT(ctx) ((ctx)->fft_f64)
#else
#define WX_FFT_CACHE wx_fft_cache
#define WX_CTX_FFT(ctx) ((ctx)->fft)
#endif

typedef struct {
    int64_t h, w, cc, c; /* cc channels per transform at stride c */
    /* [0]: arrays aligned as fftw_malloc aligns them (SIMD allowed); [1]: FFTW_UNALIGNED. */
    WX_FFT(plan) r2c[2], c2r[2];
} fft_entry;

struct WX_FFT_CACHE {
    int n, cap;
    fft_entry *e;
};

static int fftw_threads_ready; /* one per precision: this file is compiled once per precision */

static int op_threads(const wx_ctx *ctx) {
    return ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

static WX_FFT(plan) plan_make(int64_t h, int64_t w, int64_t cc, int64_t c, int r2c, int unaligned,
                              int threads_ready) {
    int n[2] = {(int)h, (int)w}, nf[2] = {(int)h, (int)(w / 2 + 1)};
    size_t real_len = (size_t)(h * w * c), cplx_len = (size_t)(h * (w / 2 + 1) * c);
    /* FFTW_ESTIMATE does not write the arrays; they only tell the planner the alignment. */
    WXR *r = WX_FFT(malloc)(sizeof(WXR) * real_len);
    WX_FFT_COMPLEX *z = WX_FFT(malloc)(sizeof(WX_FFT_COMPLEX) * cplx_len);
    WX_FFT(plan) p = NULL;
    if (r && z) {
        /* Serial plans: the threads are the op's OpenMP team. FFTW's thread count is global
         * planner state, so it is set for every plan. */
        if (threads_ready) WX_FFT(plan_with_nthreads)(1);
        unsigned flags = FFTW_ESTIMATE | (unaligned ? FFTW_UNALIGNED : 0);
        if (r2c)
            p = WX_FFT(plan_many_dft_r2c)(2, n, (int)cc, r, n, (int)c, 1, z, nf, (int)c, 1, flags);
        else
            p = WX_FFT(plan_many_dft_c2r)(2, n, (int)cc, z, nf, (int)c, 1, r, n, (int)c, 1,
                                          flags | FFTW_DESTROY_INPUT);
    }
    WX_FFT(free)(r);
    WX_FFT(free)(z);
    return p;
}

/* The plan for (h,w,cc,c), direction and alignment, created on first use. FFTW's planner is not
 * thread-safe, so lookup and creation both happen in one process-wide critical section. */
static wx_status plan_get(wx_ctx *ctx, const char *op, int64_t h, int64_t w, int64_t cc, int64_t c,
                          int r2c, int unaligned, WX_FFT(plan) *out) {
    wx_status st = WX_OK;
    *out = NULL;
#pragma omp critical(wx_fftw_planner)
    {
        if (!fftw_threads_ready) fftw_threads_ready = WX_FFT(init_threads)() ? 1 : -1;
        struct WX_FFT_CACHE *cache = WX_CTX_FFT(ctx);
        if (!cache) cache = WX_CTX_FFT(ctx) = wx_calloc(1, sizeof *cache);
        fft_entry *e = NULL;
        for (int i = 0; i < cache->n && !e; i++)
            if (cache->e[i].h == h && cache->e[i].w == w && cache->e[i].cc == cc &&
                cache->e[i].c == c)
                e = &cache->e[i];
        if (!e) {
            if (cache->n == cache->cap) {
                cache->cap = cache->cap ? 2 * cache->cap : 4;
                fft_entry *grown = realloc(cache->e, sizeof *grown * (size_t)cache->cap);
                WX_ASSERT(grown);
                cache->e = grown;
            }
            e = &cache->e[cache->n++];
            memset(e, 0, sizeof *e);
            e->h = h, e->w = w, e->cc = cc, e->c = c;
        }
        WX_FFT(plan) *slot = r2c ? &e->r2c[unaligned] : &e->c2r[unaligned];
        if (!*slot) *slot = plan_make(h, w, cc, c, r2c, unaligned, fftw_threads_ready > 0);
        if (!*slot)
            st = wx_error_set(WX_ERR_RUN, "%s: FFTW could not plan a %s transform of %lldx%lld "
                              "over %lld of %lld channels", op, r2c ? "r2c" : "c2r",
                              (long long)h, (long long)w, (long long)cc, (long long)c);
        *out = *slot;
    }
    return st;
}

void WX_FN(wx_cpu_fft_cache_free)(wx_ctx *ctx) {
    if (!ctx || !WX_CTX_FFT(ctx)) return;
#pragma omp critical(wx_fftw_planner)
    {
        struct WX_FFT_CACHE *cache = WX_CTX_FFT(ctx);
        for (int i = 0; i < cache->n; i++)
            for (int a = 0; a < 2; a++) {
                if (cache->e[i].r2c[a]) WX_FFT(destroy_plan)(cache->e[i].r2c[a]);
                if (cache->e[i].c2r[a]) WX_FFT(destroy_plan)(cache->e[i].c2r[a]);
            }
        free(cache->e);
        free(cache);
        WX_CTX_FFT(ctx) = NULL;
    }
}

static wx_status check_sizes(const char *op, int64_t b, int64_t h, int64_t w, int64_t c) {
    if (b < 1 || h < 1 || w < 1 || c < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: sizes B=%lld H=%lld W=%lld C=%lld, expected all >= 1",
                            op, (long long)b, (long long)h, (long long)w, (long long)c);
    if (h > INT_MAX / w || h * w > INT_MAX / c)
        return wx_error_set(WX_ERR_USAGE, "%s: H·W·C = %lld·%lld·%lld exceeds FFTW's int range", op,
                            (long long)h, (long long)w, (long long)c);
    return WX_OK;
}

/* Column weight of the one-sided spectrum: kx = 0 and (W even) kx = W/2 stand for themselves,
 * every other kx in [1, Wf) also for its mirror W − kx. */
static int is_interior(int64_t kx, int64_t w) { return kx > 0 && 2 * kx != w; }

/* Channel chunks of the (batch item, chunk) tasks: as many chunks as threads (fewer when C is
 * small), edges on multiples of 8 channels where C allows, so each chunk starts 32-byte aligned
 * like the whole array and FFTW's aligned SIMD plans apply. */
static int64_t chunk_count(const wx_ctx *ctx, int64_t c) {
    int64_t t = op_threads(ctx);
    return t < c ? t : c;
}

static int64_t chunk_edge(int64_t j, int64_t nch, int64_t c) {
    if (j >= nch) return c;
    int64_t e = j * c / nch;
    return c % 8 == 0 && c / nch >= 8 ? e / 8 * 8 : e;
}

/* Plans for every task, fetched (and made when new) before the parallel region. */
static wx_status task_plans(wx_ctx *ctx, const char *op, WX_FFT(plan) *plans, WXR *const *reals,
                            WXR *const *cplxs, int64_t ntask, int64_t h, int64_t w, int64_t c,
                            int64_t nch, int r2c) {
    for (int64_t t = 0; t < ntask; t++) {
        int64_t j = t % nch, cc = chunk_edge(j + 1, nch, c) - chunk_edge(j, nch, c);
        int unaligned = WX_FFT(alignment_of)(reals[t]) != 0 || WX_FFT(alignment_of)(cplxs[t]) != 0;
        WX_TRY(plan_get(ctx, op, h, w, cc, c, r2c, unaligned, &plans[t]));
    }
    return WX_OK;
}

/* X[b] = scale·r2c(x[b]), interior columns further multiplied by `interior`. */
static wx_status r2c_run(wx_ctx *ctx, const char *op, WXR *X, const WXR *x, int64_t b, int64_t h,
                         int64_t w, int64_t c, double interior) {
    WX_TRY(check_sizes(op, b, h, w, c));
    int64_t wf = w / 2 + 1, nreal = h * w * c, ncplx = h * wf * c;
    int64_t nch = chunk_count(ctx, c), ntask = b * nch;
    const WXR s = (WXR)(1.0 / sqrt((double)h * (double)w));
    const WXR si = (WXR)(interior / sqrt((double)h * (double)w));
    WX_FFT(plan) *plans = wx_malloc(sizeof *plans * (size_t)ntask);
    WXR **ptr = wx_malloc(sizeof *ptr * 2 * (size_t)ntask);
    for (int64_t t = 0; t < ntask; t++) {
        int64_t bi = t / nch, c0 = chunk_edge(t % nch, nch, c);
        ptr[t] = (WXR *)(x + bi * nreal + c0); /* r2c preserves its input (FFTW default) */
        ptr[ntask + t] = X + (bi * ncplx + c0) * 2;
    }
    wx_status st = task_plans(ctx, op, plans, ptr, ptr + ntask, ntask, h, w, c, nch, 1);
    if (st == WX_OK) {
#pragma omp parallel for num_threads(op_threads(ctx)) schedule(static)
        for (int64_t t = 0; t < ntask; t++) {
            int64_t j = t % nch, cc = chunk_edge(j + 1, nch, c) - chunk_edge(j, nch, c);
            WXR *o = ptr[ntask + t];
            WX_FFT(execute_dft_r2c)(plans[t], ptr[t], (WX_FFT_COMPLEX *)o);
            for (int64_t row = 0; row < h * wf; row++) {
                WXR f = is_interior(row % wf, w) ? si : s;
                WXR *p2 = o + row * c * 2;
#pragma omp simd
                for (int64_t k = 0; k < 2 * cc; k++) p2[k] *= f;
            }
        }
    }
    free(plans), free(ptr);
    return st;
}

/* y[b] = c2r of the one-sided spectrum Z (B,H,Wf,C,2) with torch's irfft2 semantics, where
 * Z = scale·X and interior columns are further multiplied by `interior`.
 * torch does an inverse c2c along H and then a c2r along W, which keeps only the real part of
 * the kx = 0 and Nyquist columns after the H transform. Projecting those two columns onto
 * Hermitian symmetry in ky, Z[ky] ← (Z[ky] + conj Z[−ky]) / 2, gives exactly that real part, and
 * makes the input one FFTW's 2-D c2r handles without any assumption about its algorithm. */
static wx_status c2r_run(wx_ctx *ctx, const char *op, WXR *y, const WXR *X, int64_t b, int64_t h,
                         int64_t w, int64_t c, double interior) {
    WX_TRY(check_sizes(op, b, h, w, c));
    int64_t wf = w / 2 + 1, nreal = h * w * c, ncplx = h * wf * c;
    int64_t nch = chunk_count(ctx, c), ntask = b * nch;
    const WXR si = (WXR)(interior / sqrt((double)h * (double)w));
    const WXR half_s = (WXR)(0.5 / sqrt((double)h * (double)w));
    /* c2r destroys its input, and the caller's X is const: transform from a scratch copy, one
     * per batch item so the tasks are independent. */
    WXR *z = WX_FFT(malloc)(sizeof(WXR) * 2 * (size_t)(b * ncplx));
    if (!z) return wx_error_set(WX_ERR_RUN, "%s: out of memory for a %lld-element scratch", op,
                                (long long)(2 * b * ncplx));
    WX_FFT(plan) *plans = wx_malloc(sizeof *plans * (size_t)ntask);
    WXR **ptr = wx_malloc(sizeof *ptr * 2 * (size_t)ntask);
    for (int64_t t = 0; t < ntask; t++) {
        int64_t bi = t / nch, c0 = chunk_edge(t % nch, nch, c);
        ptr[t] = y + bi * nreal + c0;
        ptr[ntask + t] = z + (bi * ncplx + c0) * 2;
    }
    wx_status st = task_plans(ctx, op, plans, ptr, ptr + ntask, ntask, h, w, c, nch, 0);
    if (st == WX_OK) {
#pragma omp parallel for num_threads(op_threads(ctx)) schedule(static)
        for (int64_t t = 0; t < ntask; t++) {
            int64_t bi = t / nch, j = t % nch;
            int64_t c0 = chunk_edge(j, nch, c), c1 = chunk_edge(j + 1, nch, c);
            const WXR *xb = X + bi * ncplx * 2;
            WXR *zb = z + bi * ncplx * 2;
            for (int64_t row = 0; row < h * wf; row++) {
                int64_t ky = row / wf, kx = row % wf;
                const WXR *src = xb + row * c * 2;
                WXR *dst = zb + row * c * 2;
                if (is_interior(kx, w)) {
#pragma omp simd
                    for (int64_t k = 2 * c0; k < 2 * c1; k++) dst[k] = si * src[k];
                } else {
                    const WXR *mir = xb + (((h - ky) % h) * wf + kx) * c * 2;
#pragma omp simd
                    for (int64_t k = c0; k < c1; k++) {
                        dst[2 * k] = half_s * (src[2 * k] + mir[2 * k]);
                        dst[2 * k + 1] = half_s * (src[2 * k + 1] - mir[2 * k + 1]);
                    }
                }
            }
            WX_FFT(execute_dft_c2r)(plans[t], (WX_FFT_COMPLEX *)ptr[ntask + t], ptr[t]);
        }
    }
    WX_FFT(free)(z);
    free(plans), free(ptr);
    return st;
}

/* X = rfft2(x), norm="ortho": X[ky,kx] = s·Σ x[y,x'] e^{−iθ}, θ = 2π(ky·y/H + kx·x'/W),
 * s = 1/sqrt(HW). */
wx_status WXF(wx_cpu_rfft2_forward)(wx_ctx *ctx, WXR *X /* (B,H,Wf,C,2) */,
                                    const WXR *x /* (B,H,W,C) */, int64_t b, int64_t h, int64_t w,
                                    int64_t c) {
    return r2c_run(ctx, "rfft2", X, x, b, h, w, c, 1.0);
}

/* Differentiates X = rfft2(x). With Re X = s·Σ x cos θ and Im X = −s·Σ x sin θ,
 *   dx = s·Σ_{kx<Wf} (dXr cos θ − dXi sin θ) = s·Re Σ_{ky, kx<Wf} dX e^{+iθ},
 * a one-sided inverse with every column counted once. torch-semantics c2r counts interior
 * columns twice and takes Re after the H transform for the others, so dx = c2r_run of dX with the
 * interior columns halved. */
wx_status WXF(wx_cpu_rfft2_backward)(wx_ctx *ctx, WXR *dx /* (B,H,W,C) */,
                                     const WXR *dX /* (B,H,Wf,C,2) */, int64_t b, int64_t h,
                                     int64_t w, int64_t c) {
    return c2r_run(ctx, "rfft2_backward", dx, dX, b, h, w, c, 0.5);
}

/* y = irfft2(X, s=(H,W)), norm="ortho" (torch semantics, see c2r_run). */
wx_status WXF(wx_cpu_irfft2_forward)(wx_ctx *ctx, WXR *y /* (B,H,W,C) */,
                                     const WXR *X /* (B,H,Wf,C,2) */, int64_t b, int64_t h,
                                     int64_t w, int64_t c) {
    return c2r_run(ctx, "irfft2", y, X, b, h, w, c, 1.0);
}

/* Differentiates y = irfft2(X). Written out, y = s·Re Σ_{ky,kx<Wf} m_kx X[ky,kx] e^{+iθ} with
 * m = 2 on interior columns and 1 on kx = 0 and Nyquist. Its adjoint is
 *   dXr = s·m·Σ dy cos θ,  dXi = −s·m·Σ dy sin θ,  i.e. dX = m·rfft2(dy). */
wx_status WXF(wx_cpu_irfft2_backward)(wx_ctx *ctx, WXR *dX /* (B,H,Wf,C,2) */,
                                      const WXR *dy /* (B,H,W,C) */, int64_t b, int64_t h,
                                      int64_t w, int64_t c) {
    return r2c_run(ctx, "irfft2_backward", dX, dy, b, h, w, c, 2.0);
}

#ifndef WX_REAL_DOUBLE
int64_t wx_afno_filter_saved_len(int64_t b, int64_t kept_modes, int64_t c, int64_t factor) {
    /* (B,M,nb,hid,2) hidden with nb·hid = C·factor, then (B,M,nb,bs,2) output with nb·bs = C. */
    return b * kept_modes * c * 2 * (factor + 1);
}
#endif
