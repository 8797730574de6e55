/* The backend table: one function pointer per op in ops/ops.def, with the CPU signature.
 * Model code calls ops only through a table (be->linear_forward(...)), never a backend directly,
 * so one model source serves the CPU and the CUDA backends. Pointers are host or device memory
 * according to the backend. */
#ifndef WX_BACKEND_H
#define WX_BACKEND_H

#include "ops/wx_ops.h"

typedef struct wx_backend {
    const char *name; /* "cpu" or "cuda" */
#define WX_OP(op, family)                                 \
    __typeof__(wx_cpu_##op##_forward) *op##_forward;      \
    __typeof__(wx_cpu_##op##_backward) *op##_backward;
#define WX_OP_FWD(op, family) __typeof__(wx_cpu_##op##_forward) *op##_forward;
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD
} wx_backend;

/* The CPU backend (always present). */
const wx_backend *wx_backend_cpu(void);

/* Names of every op in the op list, NULL-terminated (for tests and `wxcast info`). */
extern const char *const wx_op_names[];

#endif
