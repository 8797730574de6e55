/* The CUDA backend as a loadable module. The CUDA sources in kernels/ are built into
 * libwxcast_cuda.so, which links the CUDA runtime, cuBLAS, cuFFT and NCCL; the program does
 * not. A command that never
 * touches a GPU (ingest, inspect, verify, CPU training and forecasts) so never maps those
 * libraries (about 225 MB of resident memory and 0.15–0.2 s of start-up CPU time per process,
 * docs/benchmarks.md). The first wx_cuda() call loads the module: a program linked with it (the
 * CUDA tests and benchmarks) already has it; otherwise it is looked up as $WXCAST_CUDA_MODULE,
 * then next to the executable, then in ../lib from it. The module's references into the rest of
 * wxcast resolve against the executable, which exports its symbols for that (CMakeLists.txt). */
#ifndef WX_CUDA_API_H
#define WX_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#include "backend/wx_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

struct wx_cuda_state;
struct wx_nccl_sync;

/* Bumped whenever the table changes: a module from another build is refused. */
#define WX_CUDA_API_ABI 2
/* The module's file name and the symbol holding its table. */
#define WX_CUDA_MODULE_FILE "libwxcast_cuda.so"
#define WX_CUDA_MODULE_SYMBOL "wx_cuda_module_api"

/* The entry points the program calls outside the backend table (declared with their types in
 * kernels/wx_cuda_backend.h, wx_cuda_basic.h and wx_cuda_nccl.h). */
typedef struct wx_cuda_api {
    int abi; /* WX_CUDA_API_ABI of the module's build */
    const wx_backend *(*backend)(void);
    wx_status (*device_count)(int *count);
    int (*device_report)(char *buf, size_t len);
    void (*versions)(int *runtime, int *driver);
    wx_status (*ctx_attach)(wx_ctx *ctx, int ordinal);
    void (*state_free)(struct wx_cuda_state *st);
    wx_status (*set_precision)(wx_ctx *ctx, int precision); /* wx_cuda_precision */
    wx_status (*nccl_unique_id)(unsigned char *id);
    wx_status (*nccl_sync_create)(wx_ctx *ctx, float *grad, int64_t len, int64_t bucket_bytes,
                                  int rank, int nranks, const unsigned char *id,
                                  struct wx_nccl_sync **out);
    void (*nccl_sync_destroy)(struct wx_nccl_sync *s);
    int (*nccl_sync_buckets)(const struct wx_nccl_sync *s);
    wx_status (*nccl_sync_ready)(struct wx_nccl_sync *s, int64_t lo);
    wx_status (*nccl_sync_finish)(struct wx_nccl_sync *s);
    double (*nccl_sync_started_early)(const struct wx_nccl_sync *s);
    wx_status (*nccl_sync_reduce_scatter)(struct wx_nccl_sync *s); /* ZeRO-1 on the device */
    wx_status (*nccl_sync_allgather)(struct wx_nccl_sync *s, float *data);
} wx_cuda_api;

/* The module's table, loaded on the first call (thread-safe). NULL with the error set (WX_ERR_USAGE
 * in a build without CUDA, WX_ERR_RUN naming the file and the loader's message when it cannot be
 * loaded). */
const wx_cuda_api *wx_cuda(void);

#ifdef __cplusplus
}
#endif

#endif
