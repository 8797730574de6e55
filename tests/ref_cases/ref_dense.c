/* Reference cases for the dense ops (src/ops/dense.c) against tests/ref/ref_dense.py fixtures
 * (PyTorch float64 autograd). Each case runs the float32 ops (tolerance 1e-5 of the tensor's max
 * abs) and the float64 _f64 ops (1e-12), the latter also checking the accumulation rule. */
#include <stdio.h>
#include <stdlib.h>

#include "ops/wx_ops.h"
#include "ref_cases.h"
#include "wx_fixture.h"
#include "wx_test.h"

#define REF_IMPL "ref_dense_impl.h"
#define REF_FAMILY ref_dense
#include "ref_precisions.h"

/* One case per op: load dense_<op>.wxfx and run both precisions. */
#define REF_DENSE_CASE(op, body)                                                 \
    static void ref_dense_run_##op(void) {                                       \
        wx_fixture *f = wx_fixture_load("dense_" #op);                           \
        if (!WX_CHECK(f != NULL, "fixture dense_" #op " missing")) return;       \
        wx_ctx *ctx = wx_ctx_create(0);                                          \
        body;                                                                    \
        wx_ctx_destroy(ctx);                                                     \
        wx_fixture_free(f);                                                      \
    }                                                                            \
    static const wx_ref_case ref_dense_case_##op = {#op, ref_dense_run_##op};

REF_DENSE_CASE(linear, (ref_dense_f32_linear(ctx, f), ref_dense_f64_linear(ctx, f)))
REF_DENSE_CASE(layernorm, (ref_dense_f32_layernorm(ctx, f), ref_dense_f64_layernorm(ctx, f)))
REF_DENSE_CASE(gelu, (ref_dense_f32_activation(ctx, f, "gelu", 0),
                      ref_dense_f64_activation(ctx, f, "gelu", 0)))
REF_DENSE_CASE(silu, (ref_dense_f32_activation(ctx, f, "silu", 1),
                      ref_dense_f64_activation(ctx, f, "silu", 1)))
REF_DENSE_CASE(relu, (ref_dense_f32_activation(ctx, f, "relu", 2),
                      ref_dense_f64_activation(ctx, f, "relu", 2)))
REF_DENSE_CASE(softshrink, (ref_dense_f32_activation(ctx, f, "softshrink", 3),
                            ref_dense_f64_activation(ctx, f, "softshrink", 3)))
REF_DENSE_CASE(add, (ref_dense_f32_add(ctx, f), ref_dense_f64_add(ctx, f)))
REF_DENSE_CASE(concat, (ref_dense_f32_concat(ctx, f), ref_dense_f64_concat(ctx, f)))
REF_DENSE_CASE(patch_embed, (ref_dense_f32_patch_embed(ctx, f), ref_dense_f64_patch_embed(ctx, f)))
REF_DENSE_CASE(unpatchify, (ref_dense_f32_unpatchify(ctx, f), ref_dense_f64_unpatchify(ctx, f)))
REF_DENSE_CASE(pos_embed, (ref_dense_f32_pos_embed(ctx, f), ref_dense_f64_pos_embed(ctx, f)))

const wx_ref_case *const wx_ref_cases_dense[] = {
    &ref_dense_case_linear, &ref_dense_case_layernorm,   &ref_dense_case_gelu,
    &ref_dense_case_silu,   &ref_dense_case_relu,        &ref_dense_case_softshrink,
    &ref_dense_case_add,    &ref_dense_case_concat,      &ref_dense_case_patch_embed,
    &ref_dense_case_unpatchify, &ref_dense_case_pos_embed, NULL};
