/* The table through which the program reaches this module (src/backend/wx_cuda_api.h): the one
 * symbol the loader looks up in libwxcast_cuda.so. */
#include "backend/wx_cuda_api.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"
#include "wx_cuda_nccl.h"

/* The table carries an int: the enum's values are the API's. */
static wx_status set_precision(wx_ctx *ctx, int precision) {
    return wx_cuda_set_precision(ctx, (wx_cuda_precision)precision);
}

extern "C" __attribute__((visibility("default"))) const wx_cuda_api wx_cuda_module_api = {
    WX_CUDA_API_ABI,
    wx_backend_cuda,
    wx_cuda_device_count,
    wx_cuda_device_report,
    wx_cuda_versions,
    wx_cuda_ctx_attach,
    wx_cuda_state_free,
    set_precision,
    wx_cuda_nccl_unique_id,
    wx_nccl_sync_create,
    wx_nccl_sync_destroy,
    wx_nccl_sync_buckets,
    wx_nccl_sync_ready,
    wx_nccl_sync_finish,
    wx_nccl_sync_started_early,
    wx_nccl_sync_reduce_scatter,
    wx_nccl_sync_allgather,
};
