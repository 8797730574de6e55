/* Check macros shared by every CUDA unit (the .cu files here, C++ compiled by nvcc). Each one
 * turns a failing CUDA runtime, cuBLAS or cuFFT call into a wx_status return with a message naming
 * the call and the library's reason, so no failure passes silently. WX_CUDA_LAUNCHED() follows
 * every kernel launch: launches do not return a status, the runtime only records a launch error. */
#ifndef WX_CUDA_CHECK_H
#define WX_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include "core/wx_error.h"

#define WX_CUDA_CHECK(call)                                                                 \
    do {                                                                                    \
        cudaError_t wx_e_ = (call);                                                         \
        if (wx_e_ != cudaSuccess)                                                           \
            return wx_error_set(WX_ERR_RUN, "CUDA: %s failed: %s", #call,                   \
                                cudaGetErrorString(wx_e_));                                 \
    } while (0)

/* After a <<<...>>> launch: a bad configuration (too many threads, too much shared memory) or a
 * sticky error from an earlier kernel shows up here. `what` names the kernel. */
#define WX_CUDA_LAUNCHED(what)                                                              \
    do {                                                                                    \
        cudaError_t wx_e_ = cudaGetLastError();                                             \
        if (wx_e_ != cudaSuccess)                                                           \
            return wx_error_set(WX_ERR_RUN, "CUDA: launch of %s failed: %s", what,          \
                                cudaGetErrorString(wx_e_));                                 \
    } while (0)

#define WX_CUBLAS_CHECK(call)                                                               \
    do {                                                                                    \
        cublasStatus_t wx_b_ = (call);                                                      \
        if (wx_b_ != CUBLAS_STATUS_SUCCESS)                                                 \
            return wx_error_set(WX_ERR_RUN, "cuBLAS: %s failed: %s", #call,                 \
                                cublasGetStatusString(wx_b_));                              \
    } while (0)

/* cuFFT has no status-to-string function of its own. */
static inline const char *wx_cufft_status_string(cufftResult r) {
    switch (r) {
    case CUFFT_SUCCESS: return "success";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "allocation failed";
    case CUFFT_INVALID_TYPE: return "invalid type";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_UNALIGNED_DATA: return "unaligned data";
    case CUFFT_INVALID_DEVICE: return "invalid device";
    case CUFFT_NO_WORKSPACE: return "no workspace";
    case CUFFT_NOT_IMPLEMENTED: return "not implemented";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    default: return "unknown cuFFT status";
    }
}

#define WX_CUFFT_CHECK(call)                                                                \
    do {                                                                                    \
        cufftResult wx_f_ = (call);                                                         \
        if (wx_f_ != CUFFT_SUCCESS)                                                         \
            return wx_error_set(WX_ERR_RUN, "cuFFT: %s failed: %s (%d)", #call,             \
                                wx_cufft_status_string(wx_f_), (int)wx_f_);                 \
    } while (0)

#endif
