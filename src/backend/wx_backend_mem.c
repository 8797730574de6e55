/* Host memory for the CPU table, the backend lookup by name and the allocation helpers shared by
 * both backends. */
#include "backend/wx_backend_mem.h"

#include <stdlib.h>
#include <string.h>

#include "wx_build_config.h"
#if WX_HAVE_CUDA
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"
#endif

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

wx_status wx_backend_by_name(const char *name, const char *what, const wx_backend **out) {
    *out = NULL;
    if (!name || !strcmp(name, "cpu")) {
        *out = wx_backend_cpu();
        return WX_OK;
    }
    if (strcmp(name, "cuda") != 0)
        return wx_error_set(WX_ERR_USAGE, "%s: device '%s': expected cpu or cuda", what, name);
#if WX_HAVE_CUDA
    int count = 0;
    WX_TRY(wx_cuda_device_count(&count));
    if (count == 0)
        return wx_error_set(WX_ERR_RUN, "%s: device 'cuda': no CUDA device (this machine has no "
                            "GPU visible to CUDA)", what);
    *out = wx_backend_cuda();
    return WX_OK;
#else
    return wx_error_set(WX_ERR_USAGE, "%s: device 'cuda': this wxcast was built without CUDA "
                        "(configure with -DWX_CUDA=ON on a machine with nvcc)", what);
#endif
}

int wx_backend_is_cuda(const wx_backend *be) {
#if WX_HAVE_CUDA
    return be && be == wx_backend_cuda();
#else
    (void)be;
    return 0;
#endif
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
