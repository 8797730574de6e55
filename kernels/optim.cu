// Optimizer ops on the GPU over flat buffers (contract src/ops/optim.inc; reference
// src/ops/optim.c): the fused AdamW step, the gradient sum of squares (two-stage, double, fixed
// order: no atomics) and scaling. sumsq is a double in device memory.
#include <math.h>

#include "wx_cuda_state.h"

// Fixed chunk length of the sum-of-squares partials (the CPU's WX_OPTIM_CHUNK).
#define WX_OPTIM_CHUNK 16384

// One AdamW step per element in float, the CPU's operations in the CPU's order (src/ops/optim.c:
// decay as p − p·(lr·wd), bias correction folded into step_scaled and eps_scaled; torch.optim.AdamW
// semantics). __fdiv_rn / __fsqrt_rn / __fmul_rn / __fadd_rn keep nvcc from contracting into FMAs.
__global__ static void adamw_kernel(float *param, float *m, float *v, const float *grad, int64_t n,
                                    float lr_wd, float beta1, float one_m_beta1, float beta2,
                                    float one_m_beta2, float step_scaled, float eps_scaled) {
    WX_CUDA_FOR(i, n) {
        float g = grad[i], p = param[i];
        float mi = __fadd_rn(__fmul_rn(beta1, m[i]), __fmul_rn(one_m_beta1, g));
        float vi = __fadd_rn(__fmul_rn(beta2, v[i]), __fmul_rn(one_m_beta2, __fmul_rn(g, g)));
        m[i] = mi;
        v[i] = vi;
        p = __fsub_rn(p, __fmul_rn(p, lr_wd));
        float den = __fadd_rn(__fsqrt_rn(vi), eps_scaled);
        param[i] = __fsub_rn(p, __fdiv_rn(__fmul_rn(step_scaled, mi), den));
    }
}

// param, m, v (n) updated in place; grad (n) read. Step t >= 1 counted by the caller.
extern "C" wx_status wx_cuda_adamw_forward(wx_ctx *ctx, float *param, float *m, float *v,
                                           const float *grad, int64_t n, double lr, double beta1,
                                           double beta2, double eps, double weight_decay,
                                           int64_t step) {
    if (n < 0) return wx_error_set(WX_ERR_USAGE, "adamw: n = %lld, expected >= 0", (long long)n);
    if (step < 1)
        return wx_error_set(WX_ERR_USAGE, "adamw: step = %lld, expected >= 1 (counted from 1)",
                            (long long)step);
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || !(eps >= 0))
        return wx_error_set(WX_ERR_USAGE, "adamw: betas (%g, %g) and eps %g, expected betas in "
                            "[0, 1) and eps >= 0", beta1, beta2, eps);
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    double step_size = lr / (1.0 - pow(beta1, (double)step));
    double bc2_sqrt = sqrt(1.0 - pow(beta2, (double)step));
    adamw_kernel<<<wx_cuda_blocks(n), WX_CUDA_THREADS, 0, st->stream>>>(
        param, m, v, grad, n, (float)(lr * weight_decay), (float)beta1, (float)(1.0 - beta1),
        (float)beta2, (float)(1.0 - beta2), (float)(step_size * bc2_sqrt), (float)(eps * bc2_sqrt));
    WX_CUDA_LAUNCHED("adamw_kernel");
    return WX_OK;
}

// part[k] = Σ g² over chunk k; one block per chunk (grid-stride, uniform across the block).
__global__ static void sumsq_part_kernel(double *part, const float *g, int64_t n, int64_t chunks) {
    __shared__ double sh[WX_CUDA_THREADS];
    for (int64_t k = blockIdx.x; k < chunks; k += gridDim.x) {
        int64_t i0 = k * WX_OPTIM_CHUNK, i1 = i0 + WX_OPTIM_CHUNK < n ? i0 + WX_OPTIM_CHUNK : n;
        double s = 0;
        for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) s += (double)g[i] * (double)g[i];
        s = wx_block_sum(s, sh);
        if (threadIdx.x == 0) part[k] = s;
    }
}

// g (n); sumsq (one double, device) += Σ g².
extern "C" wx_status wx_cuda_grad_norm_forward(wx_ctx *ctx, double *sumsq, const float *g,
                                               int64_t n) {
    if (n < 0) return wx_error_set(WX_ERR_USAGE, "grad_norm: n = %lld, expected >= 0", (long long)n);
    int64_t chunks = (n + WX_OPTIM_CHUNK - 1) / WX_OPTIM_CHUNK;
    if (chunks == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    double *part;
    WX_TRY(wx_cuda_scratch(st, WX_SCRATCH_REDUCE, sizeof(double) * (size_t)chunks, (void **)&part));
    unsigned blocks = (unsigned)(chunks < (1 << 20) ? chunks : (1 << 20));
    sumsq_part_kernel<<<blocks, WX_CUDA_THREADS, 0, st->stream>>>(part, g, n, chunks);
    WX_CUDA_LAUNCHED("sumsq_part_kernel");
    return wx_cuda_sum_parts(st, part, chunks, NULL, 1.0, sumsq);
}

__global__ static void scale_kernel(float *x, int64_t n, double s) {
    WX_CUDA_FOR(i, n) x[i] = (float)(s * (double)x[i]);
}

// x (n) ← s·x.
extern "C" wx_status wx_cuda_scale_forward(wx_ctx *ctx, float *x, int64_t n, double s) {
    if (n < 0) return wx_error_set(WX_ERR_USAGE, "scale: n = %lld, expected >= 0", (long long)n);
    if (n == 0) return WX_OK;
    wx_cuda_state *st;
    WX_TRY(wx_cuda_state_get(ctx, &st));
    scale_kernel<<<wx_cuda_blocks(n), WX_CUDA_THREADS, 0, st->stream>>>(x, n, s);
    WX_CUDA_LAUNCHED("scale_kernel");
    return WX_OK;
}
