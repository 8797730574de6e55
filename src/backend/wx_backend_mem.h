/* The CPU backend's memory functions (host malloc/memcpy) for the table's memory fields. */
#ifndef WX_BACKEND_MEM_H
#define WX_BACKEND_MEM_H

#include "backend/wx_backend.h"

wx_status wx_cpu_mem_alloc(wx_ctx *ctx, void **ptr, size_t bytes);
void wx_cpu_mem_free(wx_ctx *ctx, void *ptr);
wx_status wx_cpu_mem_zero(wx_ctx *ctx, void *ptr, size_t bytes);
wx_status wx_cpu_mem_copy(wx_ctx *ctx, void *dst, const void *src, size_t bytes);
wx_status wx_cpu_mem_wait(wx_ctx *ctx);

#endif
