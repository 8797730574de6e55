#include "ops/wx_ctx.h"

#include <omp.h>

#include "core/wx_error.h"
#include "ops/wx_ops.h"
#include "backend/wx_cuda_api.h"

wx_ctx *wx_ctx_create(int threads) {
    wx_ctx *ctx = wx_calloc(1, sizeof *ctx);
    ctx->threads = threads > 0 ? threads : omp_get_max_threads();
    return ctx;
}

void wx_ctx_destroy(wx_ctx *ctx) {
    if (!ctx) return;
    wx_cpu_fft_cache_free(ctx);
    wx_cpu_fft_cache_free_f64(ctx);
    if (ctx->cuda) wx_cuda()->state_free(ctx->cuda); /* only the module makes one */
    free(ctx);
}
