/* The CPU backend's memory functions (host malloc/memcpy) for the table's memory fields. */
#ifndef WX_BACKEND_MEM_H
#define WX_BACKEND_MEM_H

#include "backend/wx_backend.h"

wx_status wx_cpu_mem_alloc(wx_ctx *ctx, void **ptr, size_t bytes);
void wx_cpu_mem_free(wx_ctx *ctx, void *ptr);
wx_status wx_cpu_mem_zero(wx_ctx *ctx, void *ptr, size_t bytes);
wx_status wx_cpu_mem_copy(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
wx_status wx_cpu_mem_wait(wx_ctx *ctx);
/* The upload-slot functions of the table: memcpy and no-ops (host memory has no streams). */
wx_status wx_cpu_copy_h2d_slot(wx_ctx *ctx, int slot, void *dst, const void *src, size_t bytes);
wx_status wx_cpu_slot_nop(wx_ctx *ctx, int slot);

#endif
