/* Optimizer ops on flat buffers (AdamW step, gradient sum of squares, scaling) and, in the float
 * build only, global-norm gradient clipping and the warmup + cosine learning-rate schedule.
 *
 * The AdamW update is computed per element in the buffer's precision, as torch.optim.AdamW does
 * (float32 stays within 1e-6 of torch's float64 trajectory: tests/ref_cases/ref_optim.c). */
#include <math.h>

#include <omp.h>
#ifndef WX_REAL_DOUBLE
#include <immintrin.h>
#endif

#include "ops/wx_ops.h"
#include "ops/wx_real.h"

#define WXR wx_real
#define WXF WX_FN

/* Fixed chunk length for sum-of-squares partials: the result does not depend on thread count. */
#define WX_OPTIM_CHUNK 16384

static int optim_threads(const wx_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

/* The AdamW element loop over a range, in the buffer's precision as torch.optim.AdamW computes
 * it for a tensor of that dtype: step_size·m/(sqrt(v)/bc2 + eps) with the bias correction bc2
 * multiplied through (step_scaled = step_size·bc2, eps_scaled = eps·bc2: one division per element
 * instead of two; equal in exact arithmetic). The decoupled decay is p − p·(lr·wd) rather than
 * p·(1 − lr·wd): 1 − lr·wd rounded to float loses up to a few % of lr·wd (1e-6 here is near
 * float's spacing at 1), p·(lr·wd) keeps it to float rounding. Float arithmetic halves the bytes
 * per vector lane and avoids double sqrt/division, which made the double version ~4% of a
 * FourCastNet training step (docs/benchmarks.md); the reference test holds float32 to 1e-6 of
 * the float64 torch trajectory either way (max 1.5e-7 of the largest |p| over its 10 steps, vs
 * 1.9e-7 computed in double). */
#define OPTIM_CHUNK (1 << 14)
/* The step's scalars, rounded once to the working precision. */
typedef struct {
    WXR lr_wd, beta1, one_m_beta1, beta2, one_m_beta2, step_scaled, eps_scaled;
} optim_adamw_consts;

static inline void adamw_one(WXR *param, WXR *m, WXR *v, const WXR *grad, int64_t i,
                             const optim_adamw_consts *c) {
    WXR g = grad[i], p = param[i];
    WXR mi = c->beta1 * m[i] + c->one_m_beta1 * g;
    WXR vi = c->beta2 * v[i] + c->one_m_beta2 * (g * g);
    m[i] = mi;
    v[i] = vi;
    p = p - p * c->lr_wd;
    param[i] = p - c->step_scaled * mi / (WX_SQRT(vi) + c->eps_scaled);
}

static void adamw_range(WXR *param, WXR *m, WXR *v, const WXR *grad, int64_t n,
                        const optim_adamw_consts *c) {
    for (int64_t i = 0; i < n; i++) adamw_one(param, m, v, grad, i, c);
}
#ifndef WX_REAL_DOUBLE
/* adamw_one on 8 lanes with AVX2 (picked at run time): the same IEEE operations in the same order
 * and no FMA, so the same bits as the scalar loop. Written with intrinsics because GCC vectorises
 * a loop calling sqrtf only under -fno-math-errno for the whole file (the function attribute is
 * not enough), and the scalar sqrt/division chain was most of the op's time. */
__attribute__((target("avx2"))) static void adamw_range_avx2(float *param, float *m, float *v,
                                                             const float *grad, int64_t n,
                                                             const optim_adamw_consts *c) {
    const __m256 b1 = _mm256_set1_ps(c->beta1), ob1 = _mm256_set1_ps(c->one_m_beta1);
    const __m256 b2 = _mm256_set1_ps(c->beta2), ob2 = _mm256_set1_ps(c->one_m_beta2);
    const __m256 lw = _mm256_set1_ps(c->lr_wd), st = _mm256_set1_ps(c->step_scaled);
    const __m256 ep = _mm256_set1_ps(c->eps_scaled);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(grad + i), p = _mm256_loadu_ps(param + i);
        __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(ob1, g));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                  _mm256_mul_ps(ob2, _mm256_mul_ps(g, g)));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        p = _mm256_sub_ps(p, _mm256_mul_ps(p, lw));
        __m256 den = _mm256_add_ps(_mm256_sqrt_ps(vi), ep);
        _mm256_storeu_ps(param + i, _mm256_sub_ps(p, _mm256_div_ps(_mm256_mul_ps(st, mi), den)));
    }
    for (; i < n; i++) adamw_one(param, m, v, grad, i, c);
}
#endif

/* param, m, v, grad (n). */
wx_status WXF(wx_cpu_adamw_forward)(wx_ctx *ctx, WXR *param, WXR *m, WXR *v, const WXR *grad,
                                    int64_t n, double lr, double beta1, double beta2, double eps,
                                    double weight_decay, int64_t step) {
    if (n < 0) return wx_error_set(WX_ERR_USAGE, "adamw: n = %lld, expected >= 0", (long long)n);
    if (step < 1)
        return wx_error_set(WX_ERR_USAGE, "adamw: step = %lld, expected >= 1 (counted from 1)",
                            (long long)step);
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || !(eps >= 0))
        return wx_error_set(WX_ERR_USAGE, "adamw: betas (%g, %g) and eps %g, expected betas in "
                            "[0, 1) and eps >= 0", beta1, beta2, eps);
    double step_size = lr / (1.0 - pow(beta1, (double)step));
    double bc2_sqrt = sqrt(1.0 - pow(beta2, (double)step));
    optim_adamw_consts c = {(WXR)(lr * weight_decay), (WXR)beta1, (WXR)(1.0 - beta1), (WXR)beta2,
                            (WXR)(1.0 - beta2), (WXR)(step_size * bc2_sqrt), (WXR)(eps * bc2_sqrt)};
    int nt = optim_threads(ctx);
    int64_t nchunk = (n + OPTIM_CHUNK - 1) / OPTIM_CHUNK;
#ifndef WX_REAL_DOUBLE
    int avx2 = __builtin_cpu_supports("avx2");
#endif
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t k = 0; k < nchunk; k++) {
        int64_t i0 = k * OPTIM_CHUNK, len = n - i0 < OPTIM_CHUNK ? n - i0 : OPTIM_CHUNK;
        WXR *pc = param + i0, *mc = m + i0, *vc = v + i0;
        const WXR *gc = grad + i0;
#ifndef WX_REAL_DOUBLE
        if (avx2) {
            adamw_range_avx2(pc, mc, vc, gc, len, &c);
            continue;
        }
#endif
        adamw_range(pc, mc, vc, gc, len, &c);
    }
    return WX_OK;
}

/* g (n); *sumsq += Σ g², partials over fixed chunks added in index order. */
wx_status WXF(wx_cpu_grad_norm_forward)(wx_ctx *ctx, double *sumsq, const WXR *g, int64_t n) {
    if (n < 0) return wx_error_set(WX_ERR_USAGE, "grad_norm: n = %lld, expected >= 0", (long long)n);
    int64_t chunks = (n + WX_OPTIM_CHUNK - 1) / WX_OPTIM_CHUNK;
    if (chunks == 0) return WX_OK;
    double *part = wx_malloc(sizeof(double) * chunks);
    int nt = optim_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t k = 0; k < chunks; k++) {
        int64_t i0 = k * WX_OPTIM_CHUNK, i1 = i0 + WX_OPTIM_CHUNK < n ? i0 + WX_OPTIM_CHUNK : n;
        double s = 0;
        for (int64_t i = i0; i < i1; i++) s += (double)g[i] * (double)g[i];
        part[k] = s;
    }
    double total = 0;
    for (int64_t k = 0; k < chunks; k++) total += part[k];
    free(part);
    *sumsq += total;
    return WX_OK;
}

/* x (n) ← s·x. */
wx_status WXF(wx_cpu_scale_forward)(wx_ctx *ctx, WXR *x, int64_t n, double s) {
    if (n < 0) return wx_error_set(WX_ERR_USAGE, "scale: n = %lld, expected >= 0", (long long)n);
    int nt = optim_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t i = 0; i < n; i++) x[i] = (WXR)(s * (double)x[i]);
    return WX_OK;
}

#ifndef WX_REAL_DOUBLE
/* grads[count], each of lens[i] elements. As torch.nn.utils.clip_grad_norm_ with
 * error_if_nonfinite=False, except that a NaN norm leaves the gradients untouched (torch would
 * multiply them by NaN); the caller sees the NaN in the return value either way. */
double wx_clip_grad_norm(wx_ctx *ctx, float *const *grads, const int64_t *lens, int count,
                         double max_norm) {
    double sumsq = 0;
    for (int i = 0; i < count; i++) {
        WX_ASSERT(lens[i] >= 0);
        wx_status st = wx_cpu_grad_norm_forward(ctx, &sumsq, grads[i], lens[i]);
        WX_ASSERT(st == WX_OK);
    }
    double norm = sqrt(sumsq);
    double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0)
        for (int i = 0; i < count; i++) {
            wx_status st = wx_cpu_scale_forward(ctx, grads[i], lens[i], coef);
            WX_ASSERT(st == WX_OK);
        }
    return norm;
}

/* lr(step) = lr_max·(step+1)/warmup for step < warmup;
 *          = lr_min + ½(lr_max − lr_min)(1 + cos(π·(step − warmup)/(total − warmup))) for
 *            warmup ≤ step < total;  = lr_min from step `total` on. Negative steps count as 0. */
double wx_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total, double lr_max,
                           double lr_min) {
    if (step < 0) step = 0;
    if (step < warmup) return lr_max * (double)(step + 1) / (double)warmup;
    if (step >= total) return lr_min;
    double frac = (double)(step - warmup) / (double)(total - warmup);
    return lr_min + 0.5 * (lr_max - lr_min) * (1.0 + cos(M_PI * frac));
}
#endif
