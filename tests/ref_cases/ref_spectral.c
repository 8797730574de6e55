/* Reference cases for the spectral ops (src/ops/spectral.c, spectral_afno.c) against
 * tests/ref/ref_spectral.py fixtures (torch.fft norm="ortho" and an NVlabs-style AFNO2D filter,
 * float64 autograd). float32 ops: tolerance 1e-5 of the tensor's max abs; float64 _f64 ops: 1e-12,
 * with two backward calls checking the accumulation rule. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/wx_ops.h"
#include "ref_cases.h"
#include "wx_fixture.h"
#include "wx_test.h"

#define REF_CAT_(a, b) a##b
#define REF_CAT(a, b) REF_CAT_(a, b)
#define REF_RUN(call) WX_CHECK((call) == WX_OK, "%s: %s", #call, wx_error_message())
#define REF_GARBAGE 777.0

#define REF_R float
#define REF_OP(name) name
#define REF_T(name) REF_CAT(ref_spectral_f32_, name)
#define REF_PREC "f32"
#define REF_REPS 1
#define REF_PREFILL 0.0
#define REF_RTOL 1e-5
#define REF_ATOL 0.0
#define REF_CLOSE WX_CHECK_CLOSE_F32
#include "ref_spectral_impl.h"
#undef REF_R
#undef REF_OP
#undef REF_T
#undef REF_PREC
#undef REF_REPS
#undef REF_PREFILL
#undef REF_RTOL
#undef REF_ATOL
#undef REF_CLOSE

#define ref_mask_load ref_mask_load_f64 /* the impl defines this helper once per inclusion */
#define REF_R double
#define REF_OP(name) name##_f64
#define REF_T(name) REF_CAT(ref_spectral_f64_, name)
#define REF_PREC "f64"
#define REF_REPS 2
#define REF_PREFILL 0.25
#define REF_RTOL 1e-12
#define REF_ATOL 0.0
#define REF_CLOSE WX_CHECK_CLOSE_F64
#include "ref_spectral_impl.h"

/* One case per fixture, running both precisions. */
#define REF_SPECTRAL_CASE(id, op, fixture, fn)                                      \
    static void ref_spectral_run_##id(void) {                                       \
        wx_fixture *f = wx_fixture_load(fixture);                                   \
        if (!WX_CHECK(f != NULL, "fixture " fixture " missing")) return;            \
        wx_ctx *ctx = wx_ctx_create(0);                                             \
        ref_spectral_f32_##fn(ctx, f);                                              \
        ref_spectral_f64_##fn(ctx, f);                                              \
        wx_ctx_destroy(ctx);                                                        \
        wx_fixture_free(f);                                                         \
    }                                                                               \
    static const wx_ref_case ref_spectral_case_##id = {op, ref_spectral_run_##id};

REF_SPECTRAL_CASE(rfft2_even, "rfft2", "spectral_rfft2_even", rfft2)
REF_SPECTRAL_CASE(rfft2_odd, "rfft2", "spectral_rfft2_odd", rfft2)
REF_SPECTRAL_CASE(irfft2_even, "irfft2", "spectral_irfft2_even", irfft2)
REF_SPECTRAL_CASE(irfft2_odd, "irfft2", "spectral_irfft2_odd", irfft2)
REF_SPECTRAL_CASE(afno_full, "afno_filter", "spectral_afno_full", afno)
REF_SPECTRAL_CASE(afno_half, "afno_filter", "spectral_afno_half", afno)
REF_SPECTRAL_CASE(afno2d, "afno_filter", "spectral_afno2d", afno2d)

const wx_ref_case *const wx_ref_cases_spectral[] = {
    &ref_spectral_case_rfft2_even, &ref_spectral_case_rfft2_odd,  &ref_spectral_case_irfft2_even,
    &ref_spectral_case_irfft2_odd, &ref_spectral_case_afno_full, &ref_spectral_case_afno_half,
    &ref_spectral_case_afno2d,     NULL};
