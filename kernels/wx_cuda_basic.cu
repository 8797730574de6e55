// Minimal CUDA backend unit: device query, memory, and the residual-add kernel with its launcher.
#include "wx_cuda_basic.h"

#include <cuda_runtime.h>
#include <stdio.h>

// Every CUDA runtime call is checked (WX_CUDA_CHECK); the message names the call and CUDA's reason.
#include "wx_cuda_check.h"

extern "C" wx_status wx_cuda_device_count(int *count) {
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    // No driver or no device is not an error for discovery: the answer is zero devices.
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        cudaGetLastError();
        *count = 0;
        return WX_OK;
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        *count = 0;
        return wx_error_set(WX_ERR_RUN, "CUDA: cudaGetDeviceCount failed: %s", cudaGetErrorString(e));
    }
    return WX_OK;
}

extern "C" void wx_cuda_versions(int *runtime, int *driver) {
    *runtime = CUDART_VERSION;
    *driver = 0;
    if (cudaDriverGetVersion(driver) != cudaSuccess) *driver = 0;
}

extern "C" int wx_cuda_device_report(char *buf, size_t len) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        cudaGetLastError();
        snprintf(buf, len, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
        return 0;
    }
    size_t used = 0;
    buf[0] = 0;
    for (int d = 0; d < count && used < len; d++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
        used += snprintf(buf + used, len - used, "%sdevice %d: %s, sm_%d%d, %.1f GiB", d ? "; " : "",
                         d, p.name, p.major, p.minor, p.totalGlobalMem / (1024.0 * 1024 * 1024));
    }
    return count;
}

extern "C" wx_status wx_cuda_init(int ordinal) {
    int count = 0;
    WX_TRY(wx_cuda_device_count(&count));
    if (count == 0) return wx_error_set(WX_ERR_RUN, "no CUDA device: this machine has no GPU visible to CUDA");
    if (ordinal < 0 || ordinal >= count)
        return wx_error_set(WX_ERR_USAGE, "CUDA device %d requested but only %d visible", ordinal, count);
    WX_CUDA_CHECK(cudaSetDevice(ordinal));
    return WX_OK;
}

extern "C" wx_status wx_cuda_malloc(void **ptr, size_t bytes) {
    *ptr = NULL;
    WX_CUDA_CHECK(cudaMalloc(ptr, bytes ? bytes : 1));
    return WX_OK;
}

extern "C" void wx_cuda_free(void *ptr) {
    if (ptr) cudaFree(ptr);
}

extern "C" wx_status wx_cuda_copy_to_device(void *dst, const void *src, size_t bytes) {
    WX_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    return WX_OK;
}

extern "C" wx_status wx_cuda_copy_to_host(void *dst, const void *src, size_t bytes) {
    WX_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return WX_OK;
}

extern "C" wx_status wx_cuda_synchronize(void) {
    WX_CUDA_CHECK(cudaDeviceSynchronize());
    return WX_OK;
}

// Grid-stride loop so any n works with a bounded grid.
__global__ static void wx_add_kernel(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = a[i] + b[i];
}

extern "C" wx_status wx_cuda_basic_add(float *y, const float *a, const float *b, int64_t n) {
    if (n <= 0) return WX_OK;
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 65535 * 8) blocks = 65535 * 8;
    wx_add_kernel<<<(unsigned)blocks, threads>>>(y, a, b, n);
    WX_CUDA_LAUNCHED("wx_add_kernel");
    return WX_OK;
}
