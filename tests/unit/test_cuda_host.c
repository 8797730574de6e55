/* The host side of the device support, checked on any machine (no GPU needed, runs in every
 * build): the backend table's memory functions on the CPU, backend lookup by name and its errors
 * (unknown device; cuda in a build without CUDA; cuda without a visible GPU), the pinned-memory
 * fallback to malloc, device allocation refusing cleanly without a GPU, and parameters through
 * wx_params_alloc_on on the host path. With a GPU the CUDA lookups must succeed instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/wx_backend.h"
#include "backend/wx_batch_stage.h"
#include "models/params.h"
#include "wx_build_config.h"
#include "wx_test.h"
#if WX_HAVE_CUDA
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"
#endif

static void test_cpu_memory(void) {
    const wx_backend *be = wx_backend_cpu();
    wx_ctx *ctx = wx_ctx_create(1);
    WX_CHECK(be->on_device == 0 && be->mem_alloc && be->copy_h2d && be->host_alloc &&
                 be->synchronize,
             "cpu table memory fields");
    float src[100], back[100];
    for (int i = 0; i < 100; i++) src[i] = (float)i * 0.5f - 7.0f;
    float *d = wx_backend_alloc(be, ctx, sizeof src, "test buffer"), *e = NULL;
    int zero = d != NULL;
    for (int i = 0; zero && i < 100; i++) zero = d[i] == 0.0f;
    WX_CHECK(zero, "mem_alloc gives zeroed memory");
    WX_CHECK(be->copy_h2d(ctx, d, src, sizeof src) == WX_OK, "h2d");
    e = wx_backend_upload_f32(be, ctx, d, 100, "copy");
    WX_CHECK(e && be->copy_d2d(ctx, e, d, sizeof src) == WX_OK &&
                 be->copy_h2d_async(ctx, 1, d, src, sizeof src) == WX_OK &&
                 be->slot_ready(ctx, 1) == WX_OK && be->slot_release(ctx, 1) == WX_OK &&
                 be->copy_wait(ctx, 1) == WX_OK &&
                 be->copy_d2h(ctx, back, e, sizeof back) == WX_OK,
             "d2d / async / d2h");
    WX_CHECK(!memcmp(src, back, sizeof src), "round trip h2d, d2d, d2h keeps every bit");
    WX_CHECK(be->mem_zero(ctx, e, sizeof src) == WX_OK && e[0] == 0.0f && e[99] == 0.0f, "mem_zero");
    void *h = NULL;
    WX_CHECK(be->host_alloc(ctx, &h, 64) == WX_OK && h && ((unsigned char *)h)[63] == 0,
             "host_alloc zeroed");
    be->host_free(ctx, h);
    be->mem_free(ctx, d);
    be->mem_free(ctx, e);
    be->mem_free(ctx, NULL);
    WX_CHECK(be->synchronize(ctx) == WX_OK, "synchronize");
    wx_ctx_destroy(ctx);
}

static void test_lookup(int gpus) {
    const wx_backend *be = NULL;
    WX_CHECK(wx_backend_by_name("cpu", "t", &be) == WX_OK && be == wx_backend_cpu(), "cpu");
    wx_status s = wx_backend_by_name("tpu", "train.yaml: line 3: key 'device'", &be);
    WX_CHECK(s == WX_ERR_USAGE && be == NULL &&
                 strstr(wx_error_message(), "train.yaml: line 3: key 'device': device 'tpu'") &&
                 strstr(wx_error_message(), "expected cpu or cuda"),
             "unknown device: %d '%s'", s, wx_error_message());
    s = wx_backend_by_name("cuda", "cfg", &be);
#if WX_HAVE_CUDA
    if (gpus == 0)
        WX_CHECK(s == WX_ERR_RUN && be == NULL && strstr(wx_error_message(), "device 'cuda'") &&
                     strstr(wx_error_message(), "no CUDA device"),
                 "cuda without a GPU: %d '%s'", s, wx_error_message());
    else
        WX_CHECK(s == WX_OK && be == wx_backend_cuda() && be->on_device == 1, "cuda with a GPU");
#else
    (void)gpus;
    WX_CHECK(s == WX_ERR_USAGE && be == NULL && strstr(wx_error_message(), "device 'cuda'") &&
                 strstr(wx_error_message(), "built without CUDA"),
             "cuda in a CPU-only build: %d '%s'", s, wx_error_message());
#endif
}

#if WX_HAVE_CUDA
/* Pinned staging falls back to malloc without a device; device memory is refused cleanly. */
static void test_cuda_without_gpu(void) {
    const wx_backend *cu = wx_backend_cuda();
    wx_ctx *ctx = wx_ctx_create(1);
    WX_CHECK(cu->on_device == 1 && !strcmp(cu->name, "cuda"), "cuda table memory fields");
    void *h = NULL;
    WX_CHECK(cu->host_alloc(ctx, &h, 4096) == WX_OK && h != NULL, "host_alloc falls back");
    WX_CHECK(!wx_cuda_host_is_pinned(h), "the fallback is plain (unpinned) memory");
    int zero = 1;
    for (int i = 0; h && i < 4096; i++) zero &= ((unsigned char *)h)[i] == 0;
    WX_CHECK(zero, "fallback host memory zeroed");
    cu->host_free(ctx, h); /* must take free(), not cudaFreeHost (LeakSanitizer would see it) */
    void *d = (void *)1;
    wx_status s = cu->mem_alloc(ctx, &d, 16);
    WX_CHECK(s == WX_ERR_RUN && d == NULL && strstr(wx_error_message(), "no CUDA device"),
             "device alloc without a GPU: %d '%s'", s, wx_error_message());
    s = cu->synchronize(ctx);
    WX_CHECK(s == WX_ERR_RUN && strstr(wx_error_message(), "no CUDA device"), "sync without a GPU");
    cu->mem_free(ctx, NULL);
    wx_params p;
    wx_params_init(&p);
    wx_params_add(&p, "w", 1, (const int64_t[]){5}, 0);
    s = wx_params_alloc_on(&p, cu, ctx);
    WX_CHECK(s == WX_ERR_RUN && p.data == NULL && p.grad == NULL, "params on cuda without a GPU");
    wx_params_free(&p);
    wx_ctx_destroy(ctx);
}
#endif

static void test_params_host_path(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    wx_params p;
    wx_params_init(&p);
    wx_params_add(&p, "a", 2, (const int64_t[]){3, 4}, 0);
    WX_CHECK(wx_params_alloc_on(&p, wx_backend_cpu(), ctx) == WX_OK && p.data && p.grad,
             "alloc on cpu");
    float *h = NULL;
    WX_CHECK(wx_params_host_begin(&p, &h) == WX_OK && h == p.data, "host view is the buffer");
    h[5] = 2.5f;
    WX_CHECK(wx_params_host_end(&p, h) == WX_OK && p.data[5] == 2.5f, "host_end keeps the write");
    const double v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    WX_CHECK(wx_params_set_f64(&p, "t", "a", 2, (const int64_t[]){3, 4}, v) == WX_OK &&
                 p.data[11] == 12.0f,
             "set_f64 on the host path");
    p.grad[3] = 1;
    wx_params_zero_grad(&p);
    WX_CHECK(p.grad[3] == 0, "zero_grad");
    wx_params_free(&p);
    wx_ctx_destroy(ctx);
}

/* CPU staging: no copies (device slots are the host slots), slots alternate. */
static void test_stage_cpu(void) {
    wx_ctx *ctx = wx_ctx_create(1);
    wx_batch_stage s;
    float *x, *t, *dx, *dt, *x0 = NULL;
    WX_CHECK(wx_batch_stage_init(&s, wx_backend_cpu(), ctx, 10, 30) == WX_OK, "stage init");
    for (int i = 0; i < 3; i++) {
        WX_CHECK(wx_batch_stage_host(&s, &x, &t) == WX_OK, "host %d", i);
        x[9] = (float)i, t[29] = (float)-i;
        if (i == 0) x0 = x;
        WX_CHECK(wx_batch_stage_upload(&s, &dx, &dt) == WX_OK && dx == x && dt == t &&
                     dx[9] == (float)i && dt[29] == (float)-i,
                 "cpu upload %d aliases the host slot", i);
        WX_CHECK((x == x0) == (i % 2 == 0), "slots alternate (%d)", i);
    }
    wx_batch_stage_free(&s);
    wx_batch_stage_free(&s); /* freed state: a no-op */
    wx_ctx_destroy(ctx);
}

int main(void) {
    int gpus = 0;
#if WX_HAVE_CUDA
    WX_CHECK(wx_cuda_device_count(&gpus) == WX_OK, "device count: %s", wx_error_message());
#endif
    test_cpu_memory();
    test_lookup(gpus);
    test_params_host_path();
    test_stage_cpu();
#if WX_HAVE_CUDA
    if (gpus == 0) test_cuda_without_gpu();
#endif
    return wx_test_summary();
}
