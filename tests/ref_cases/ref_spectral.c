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

#define REF_IMPL "ref_spectral_impl.h"
#define REF_FAMILY ref_spectral
#define REF_ATOL_F32 0.0
#define REF_ATOL_F64 0.0
#include "ref_precisions.h"

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
