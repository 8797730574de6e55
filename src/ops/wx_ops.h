/* All CPU ops, in float32 (wx_cpu_<op>_forward/_backward) and float64 (same names + "_f64").
 * The op list is ops/ops.def; conventions are in CONVENTIONS.md. Model code does not call these
 * directly: it goes through the backend table (backend/wx_backend.h). */
#ifndef WX_OPS_H
#define WX_OPS_H

#include <stdint.h>

#include "core/wx_error.h"
#include "ops/wx_ctx.h"

#define WXR float
#define WXF(name) name
#include "ops/dense.inc"
#include "ops/dense_fused.inc"
#include "ops/conv.inc"
#include "ops/spectral.inc"
#include "ops/graph.inc"
#include "ops/loss.inc"
#include "ops/optim.inc"
#undef WXR
#undef WXF

#define WXR double
#define WXF(name) name##_f64
#include "ops/dense.inc"
#include "ops/dense_fused.inc"
#include "ops/conv.inc"
#include "ops/spectral.inc"
#include "ops/graph.inc"
#include "ops/loss.inc"
#include "ops/optim.inc"
#undef WXR
#undef WXF

/* Length in elements of the AFNO filter's saved buffer (see spectral.inc). */
int64_t wx_afno_filter_saved_len(int64_t b, int64_t kept_modes, int64_t c, int64_t factor);

/* Frees the FFTW plans held by ctx (one per precision); called by wx_ctx_destroy. */
void wx_cpu_fft_cache_free(wx_ctx *ctx);
void wx_cpu_fft_cache_free_f64(wx_ctx *ctx);

/* Global-norm gradient clipping over a set of buffers (torch.nn.utils.clip_grad_norm_): computes
 * the total L2 norm in double; if it exceeds max_norm, scales every buffer by
 * max_norm / (norm + 1e-6). Returns the norm before clipping. */
double wx_clip_grad_norm(wx_ctx *ctx, float *const *grads, const int64_t *lens, int count,
                         double max_norm);

/* Learning rate at 0-based step: linear warmup from lr_max/warmup to lr_max over `warmup` steps,
 * then cosine decay to lr_min at step `total` (constant lr_min after). */
double wx_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total, double lr_max,
                           double lr_min);

#endif
