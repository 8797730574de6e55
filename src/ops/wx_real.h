/* Precision switch for op implementations.
 *
 * Every file in src/ops/ is compiled twice (see CMakeLists.txt): in float32, the product, and with
 * WX_REAL_DOUBLE in float64, used by the finite-difference gradient checks. Source is written once
 * in terms of wx_real and WX_FN(name); the float64 build appends "_f64" to every exported name. */
#ifndef WX_REAL_H
#define WX_REAL_H

#include <cblas.h>
#include <fftw3.h>

#ifdef WX_REAL_DOUBLE
typedef double wx_real;
#define WX_FN(name) name##_f64
#define WX_GEMM cblas_dgemm
#define WX_GEMV cblas_dgemv
#define WX_SQRT sqrt
#define WX_EXP exp
#define WX_ERF erf
#define WX_FABS fabs
#define WX_FFT(name) fftw_##name      /* fftw_plan, fftw_execute_dft_r2c, ... */
#define WX_FFT_COMPLEX fftw_complex
#else
typedef float wx_real;
#define WX_FN(name) name
#define WX_GEMM cblas_sgemm
#define WX_GEMV cblas_sgemv
#define WX_SQRT sqrtf
#define WX_EXP expf
#define WX_ERF erff
#define WX_FABS fabsf
#define WX_FFT(name) fftwf_##name
#define WX_FFT_COMPLEX fftwf_complex
#endif

#endif
