/* The op context: passed first to every op. Holds what ops share and must not rebuild per call:
 * the thread count and the FFTW plan caches (plans are made once per shape, at model init or on
 * first use, and reused; FFTW planning is not thread-safe so it happens under the context). */
#ifndef WX_CTX_H
#define WX_CTX_H

#include <stdint.h>

typedef struct wx_fft_cache wx_fft_cache;       /* float32 plans, owned by ops/spectral.c */
typedef struct wx_fft_cache_f64 wx_fft_cache_f64; /* float64 plans (gradient checks) */

typedef struct wx_ctx {
    int threads;                /* OpenMP / FFTW / OpenBLAS threads */
    wx_fft_cache *fft;          /* created lazily by the spectral ops */
    wx_fft_cache_f64 *fft_f64;
    struct wx_cuda_state *cuda; /* CUDA backend state (kernels/wx_cuda_backend.h); NULL until used */
} wx_ctx;

/* The most threads a command (--threads) or config (`threads:`) may ask for: far above the cores of
 * any machine we run on, far below where libgomp stops creating them (40000 threads: "Thread
 * creation failed"; 99999: a crash in GOMP_parallel). */
#define WX_CTX_THREADS_MAX 1024
/* threads <= 0 means "all cores" (omp_get_max_threads). */
wx_ctx *wx_ctx_create(int threads);
void wx_ctx_destroy(wx_ctx *ctx);

#endif
