/* GEMMs on one thread pool (ops/gemm_par.c): a row-major GEMM is cut into one slab of C per
 * OpenMP thread and each slab is a single-threaded BLAS call inside the op's own OpenMP team, so
 * OpenBLAS's pthread workers never run next to the OpenMP team (the two pools fought for the cores:
 * sched_yield and scheduler time was a quarter of a FourCastNet step, docs/benchmarks.md).
 * The cut depends only on the shape and the thread count, so results are identical run to run for
 * a given thread count. Internal to src/ops (compiled twice through WX_FN). */
#ifndef WX_GEMM_H
#define WX_GEMM_H

#include <cblas.h>
#include <stdint.h>

#include "ops/wx_ctx.h"

/* OpenBLAS to one thread until wx_blas_serial_end(ctx, saved): BLAS calls made in between, from
 * inside OpenMP regions, run on the calling thread. Returns the previous count. */
int wx_blas_serial_begin(void);
void wx_blas_serial_end(int saved);

/* OpenBLAS to one thread for good, as every GEMM here runs inside our OpenMP team; stop_pool:
 * also stop the worker threads OpenBLAS started from its constructor (each spins in sched_yield
 * for ~0.1 s before it sleeps). Only for OpenBLAS's pthread build: in its OpenMP build the count
 * is libgomp's (setting it would make the whole process single-threaded) and there is no pool. */
void wx_blas_one_thread(int stop_pool);

/* The op's thread count (ctx->threads, else all cores). */
int wx_gemm_threads(const wx_ctx *ctx);

/* c(m,n) = alpha·op(a)·op(b) + beta·c, row-major, split over wx_gemm_threads(ctx) threads. */
void wx_gemm_par(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                 int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                 float beta, float *c, int64_t ldc);
void wx_gemm_par_f64(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                     int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                     const double *b, int64_t ldb, double beta, double *c, int64_t ldc);

/* c(m,n) = op(a)·op(b) + bias (bias(n) added to every row), split the same way; each thread
 * writes the bias into its own slab of c and runs its GEMM with beta = 1 (one pass, one region). */
void wx_gemm_par_bias(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                      int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, const float *bias, float *c, int64_t ldc);
void wx_gemm_par_bias_f64(const wx_ctx *ctx, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                          int64_t n, int64_t k, const double *a, int64_t lda, const double *b,
                          int64_t ldb, const double *bias, double *c, int64_t ldc);

#endif
