#include "backend/wx_backend.h"
#include "backend/wx_backend_mem.h"

static const wx_backend wx_cpu_table = {
    .name = "cpu",
#define WX_OP(op, family) .op##_forward = wx_cpu_##op##_forward, .op##_backward = wx_cpu_##op##_backward,
#define WX_OP_FWD(op, family) .op##_forward = wx_cpu_##op##_forward,
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD
    .on_device = 0, .mem_alloc = wx_cpu_mem_alloc, .mem_free = wx_cpu_mem_free,
    .mem_zero = wx_cpu_mem_zero, .copy_h2d = wx_cpu_mem_copy, .copy_d2h = wx_cpu_mem_copy,
    .copy_d2d = wx_cpu_mem_copy, .copy_h2d_async = wx_cpu_copy_h2d_slot,
    .slot_ready = wx_cpu_slot_nop, .slot_release = wx_cpu_slot_nop, .copy_wait = wx_cpu_slot_nop,
    .host_alloc = wx_cpu_mem_alloc, .host_free = wx_cpu_mem_free, .synchronize = wx_cpu_mem_wait,
};

const wx_backend *wx_backend_cpu(void) { return &wx_cpu_table; }

const char *const wx_op_names[] = {
#define WX_OP(op, family) #op,
#include "ops/ops.def"
#undef WX_OP
    NULL,
};
