#include "backend/wx_backend.h"

static const wx_backend wx_cpu_table = {
    .name = "cpu",
#define WX_OP(op, family) .op##_forward = wx_cpu_##op##_forward, .op##_backward = wx_cpu_##op##_backward,
#define WX_OP_FWD(op, family) .op##_forward = wx_cpu_##op##_forward,
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD
};

const wx_backend *wx_backend_cpu(void) { return &wx_cpu_table; }

const char *const wx_op_names[] = {
#define WX_OP(op, family) #op,
#include "ops/ops.def"
#undef WX_OP
    NULL,
};
