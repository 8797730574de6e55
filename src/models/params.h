/* A model's parameters as one flat buffer plus a named tensor table.
 *
 * Every parameter tensor lives at an offset in one float32 buffer `data`, and its gradient at the
 * same offset in `grad`, so the optimizer, gradient clipping, checkpoints and the all-reduce each
 * work on one contiguous array. The table (name, shape, offset) is what checkpoints and safetensors
 * export/import walk; names are the published PyTorch state_dict names (NVlabs for FourCastNet).
 *
 * Offsets are rounded up to WX_PARAMS_ALIGN elements (64-byte rows for SIMD/GEMM); the padding is
 * zero in data and grad and stays zero under AdamW (zero grad, decay of zero), so whole-buffer
 * operations are exact. The table can be built without allocating (wx_params_total counts
 * elements), which is how the paper configuration's size is checked without 300 MB.
 *
 * Building: wx_params_add() per tensor, then wx_params_alloc(). */
#ifndef WX_PARAMS_H
#define WX_PARAMS_H

#include <stdint.h>

#include "core/wx_error.h"

#define WX_PARAMS_ALIGN 16
#define WX_PARAM_NAME_MAX 64
#define WX_PARAM_MAX_DIMS 4

/* Flags for the trainer (the table only carries them). */
enum {
    WX_PARAM_NO_DECAY = 1u, /* biases, norms, positional embedding: no weight decay */
    WX_PARAM_UNUSED = 2u,   /* built but never used in forward (NVlabs `norm`): grad stays 0 */
};

typedef struct {
    char name[WX_PARAM_NAME_MAX];
    int ndim;
    int64_t dims[WX_PARAM_MAX_DIMS];
    int64_t size;   /* product of dims */
    int64_t offset; /* in elements, into data and grad */
    unsigned flags;
} wx_param_info;

/* Told by a model's backward, during the last backward pass of a training step, that grad[lo, len)
 * will not change any more: the data-parallel trainer starts all-reducing those buckets while the
 * backward goes on towards offset 0 (models lay out their parameters in forward order). */
typedef wx_status (*wx_params_grad_ready_fn)(void *arg, int64_t lo);

typedef struct {
    int count, cap;
    wx_param_info *t;
    int64_t len;  /* buffer length in elements, padding included */
    float *data;  /* (len), NULL until wx_params_alloc */
    float *grad;  /* (len) */
    wx_params_grad_ready_fn grad_ready; /* NULL unless a trainer listens */
    void *grad_ready_arg;
    /* Where data and grad live: NULL = host (malloc); else the backend whose mem_alloc made
     * them (wx_params_alloc_on), e.g. device memory for CUDA. */
    const struct wx_backend *be;
    struct wx_ctx *be_ctx;
    int grad_borrowed; /* grad belongs to someone else (wx_params_borrow_grad): not freed here */
} wx_params;

void wx_params_init(wx_params *p);
void wx_params_free(wx_params *p);

/* Appends a tensor; returns its index. ndim 1..4, name unique and shorter than
 * WX_PARAM_NAME_MAX (programmer errors otherwise). Must precede wx_params_alloc. */
int wx_params_add(wx_params *p, const char *name, int ndim, const int64_t *dims, unsigned flags);

/* Allocates data and grad (zeroed). */
wx_status wx_params_alloc(wx_params *p);
/* The same in the memory of backend `be` (host for the CPU table, device for CUDA); free,
 * zero_grad and set_f64 then go through be. be NULL = wx_params_alloc. */
wx_status wx_params_alloc_on(wx_params *p, const struct wx_backend *be, struct wx_ctx *ctx);
/* Moves the (host) gradient into buf (len floats, owned by the caller and outliving p's use of
 * it): copies it, frees the old buffer, and grad is buf from now on. The data-parallel trainer
 * uses it to put the gradient where the other ranks can read it (node shared memory). Models
 * must reach gradients through p->grad (wx_params_grad), never through a pointer kept aside. */
void wx_params_borrow_grad(wx_params *p, float *buf);
/* Host-side writing of data on any backend: host_begin returns a host buffer holding data (the
 * buffer itself when data is host memory), host_end copies it back and frees it. */
wx_status wx_params_host_begin(wx_params *p, float **host);
wx_status wx_params_host_end(wx_params *p, float *host);

/* WX_ERR_RUN naming `what` (a file) and the first tensor holding a NaN or an infinity: imported
 * weights must be finite (the model would forecast NaN). Host data only. */
wx_status wx_params_check_finite(const wx_params *p, const char *what);

/* Number of parameters (sum of tensor sizes, padding excluded). */
int64_t wx_params_total(const wx_params *p);

/* Index of the tensor called `name`, accepting a leading "module." (DDP checkpoints); -1 if none. */
int wx_params_find(const wx_params *p, const char *name);

static inline float *wx_params_tensor(const wx_params *p, int i) { return p->data + p->t[i].offset; }
static inline float *wx_params_grad(const wx_params *p, int i) { return p->grad + p->t[i].offset; }
/* grad[lo, len) is final for this step (see wx_params_grad_ready_fn); a no-op without a listener. */
static inline wx_status wx_params_grads_final_from(const wx_params *p, int64_t lo) {
    return p->grad_ready ? p->grad_ready(p->grad_ready_arg, lo) : WX_OK;
}

void wx_params_zero_grad(wx_params *p);

/* Copies `src` (float64, `ndim` dims) into the tensor `name` after checking the name exists and
 * the shape matches; errors name the tensor and both shapes. `what` names the source in messages
 * (a file). Accepts "module." prefixes like wx_params_find. */
wx_status wx_params_set_f64(wx_params *p, const char *what, const char *name, int ndim,
                            const int64_t *dims, const double *src);

/* "(2, 8, 96, 96)" into buf. */
void wx_params_shape_str(const wx_param_info *t, char *buf, size_t n);

#endif
