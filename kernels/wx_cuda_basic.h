/* The minimal CUDA backend unit: device discovery, device memory, and one element-wise op with its
 * launcher. Everything returns a wx_status with a message naming the CUDA call that failed, so a
 * machine without a GPU reports "no CUDA device" cleanly instead of crashing. The op kernels per
 * family (kernels/<family>.cu) come with the CUDA backend issue and follow the same pattern. */
#ifndef WX_CUDA_BASIC_H
#define WX_CUDA_BASIC_H

#include <stddef.h>
#include <stdint.h>

#include "core/wx_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices visible; 0 (and WX_OK) when there is none or no driver. */
wx_status wx_cuda_device_count(int *count);
/* One line per device (name, compute capability, memory), or "no CUDA device (<reason>)".
 * Returns the number of devices. */
int wx_cuda_device_report(char *buf, size_t len);
/* CUDA runtime version as built (e.g. 13000) and the driver's (0 when there is no driver). */
void wx_cuda_versions(int *runtime, int *driver);

/* Selects device `ordinal`; fails with "no CUDA device" when none is visible. */
wx_status wx_cuda_init(int ordinal);
wx_status wx_cuda_malloc(void **ptr, size_t bytes);
void wx_cuda_free(void *ptr);
wx_status wx_cuda_copy_to_device(void *dst, const void *src, size_t bytes);
wx_status wx_cuda_copy_to_host(void *dst, const void *src, size_t bytes);
wx_status wx_cuda_synchronize(void);

/* y(n) = a(n) + b(n) on the device, launched on the default stream; checks the launch and returns
 * its status. (The backend table's add is wx_cuda_add_forward, kernels/wx_cuda_backend.h.) */
wx_status wx_cuda_basic_add(float *y, const float *a, const float *b, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
