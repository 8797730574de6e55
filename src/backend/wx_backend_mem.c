/* Host memory for the CPU table, the backend lookup by name and the allocation helpers shared by
 * both backends. */
#include "backend/wx_backend_mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_cuda_api.h"
#include "wx_build_config.h"

wx_status wx_cpu_mem_alloc(wx_ctx *ctx, void **ptr, size_t bytes) {
    (void)ctx;
    *ptr = calloc(1, bytes ? bytes : 1);
    if (!*ptr) return wx_error_set(WX_ERR_RUN, "cannot allocate %zu bytes of host memory", bytes);
    return WX_OK;
}

void wx_cpu_mem_free(wx_ctx *ctx, void *ptr) {
    (void)ctx;
    free(ptr);
}

wx_status wx_cpu_mem_zero(wx_ctx *ctx, void *ptr, size_t bytes) {
    (void)ctx;
    if (bytes) memset(ptr, 0, bytes);
    return WX_OK;
}

wx_status wx_cpu_mem_copy(wx_ctx *ctx, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    /* memmove: a d2d copy onto itself (or overlapping) is well defined, as cudaMemcpy's is not
     * promised to be; callers never rely on overlap. */
    if (bytes && dst != src) memmove(dst, src, bytes);
    return WX_OK;
}

wx_status wx_cpu_mem_wait(wx_ctx *ctx) {
    (void)ctx;
    return WX_OK;
}

wx_status wx_cpu_copy_h2d_slot(wx_ctx *ctx, int slot, void *dst, const void *src, size_t bytes) {
    (void)slot;
    return wx_cpu_mem_copy(ctx, dst, src, bytes);
}

wx_status wx_cpu_slot_nop(wx_ctx *ctx, int slot) {
    (void)ctx, (void)slot;
    return WX_OK;
}

wx_status wx_backend_by_name(const char *name, const char *what, const wx_backend **out) {
    *out = NULL;
    if (!name || !strcmp(name, "cpu")) {
        *out = wx_backend_cpu();
        return WX_OK;
    }
    if (strcmp(name, "cuda") != 0)
        return wx_error_set(WX_ERR_USAGE, "%s: device '%s': expected cpu or cuda", what, name);
    const wx_cuda_api *cuda = wx_cuda();
    if (!cuda) { /* a build without CUDA is a usage error, a module that does not load a failure */
        char why[1200];
        snprintf(why, sizeof why, "%s", wx_error_message());
        return wx_error_set(WX_HAVE_CUDA ? WX_ERR_RUN : WX_ERR_USAGE, "%s: device 'cuda': %s", what, why);
    }
    int count = 0;
    WX_TRY(cuda->device_count(&count));
    if (count == 0)
        return wx_error_set(WX_ERR_RUN, "%s: device 'cuda': no CUDA device (this machine has no "
                            "GPU visible to CUDA)", what);
    *out = cuda->backend();
    return WX_OK;
}

int wx_backend_is_cuda(const wx_backend *be) {
    /* Only the module's table is called "cuda" (tests may hold it without asking wx_cuda). */
    return WX_HAVE_CUDA && be && be->on_device && be->name && !strcmp(be->name, "cuda");
}

void *wx_backend_alloc(const wx_backend *be, wx_ctx *ctx, size_t bytes, const char *what) {
    void *p = NULL;
    if (be->mem_alloc(ctx, &p, bytes) != WX_OK) {
        wx_error_wrap(WX_ERR_RUN, "%s (%.1f MiB on %s): ", what, (double)bytes / 1048576.0,
                      be->name);
        return NULL;
    }
    return p;
}

float *wx_backend_upload_f32(const wx_backend *be, wx_ctx *ctx, const float *host, int64_t n,
                             const char *what) {
    size_t bytes = sizeof(float) * (size_t)(n > 0 ? n : 0);
    float *d = wx_backend_alloc(be, ctx, bytes, what);
    if (d && bytes && be->copy_h2d(ctx, d, host, bytes) != WX_OK) {
        be->mem_free(ctx, d);
        wx_error_wrap(WX_ERR_RUN, "%s: ", what);
        return NULL;
    }
    return d;
}
