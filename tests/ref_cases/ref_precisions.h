/* Instantiates a ref_<family>_impl.h twice (no include guard on purpose): the float32 ops within
 * 1e-5 of each tensor's max abs, one backward call into zeroed parameter grads; the float64 _f64
 * ops within 1e-12, two backward calls into grads prefilled with 0.25 (the accumulation rule).
 * Before including, define REF_IMPL (the impl header, a string) and REF_FAMILY (the prefix of the
 * generated functions: REF_FAMILY_f32_<name>, REF_FAMILY_f64_<name>); optionally REF_ATOL_F32 and
 * REF_ATOL_F64 (absolute floors, default 1e-7 and 1e-14). */
#ifndef REF_ATOL_F32
#define REF_ATOL_F32 1e-7
#endif
#ifndef REF_ATOL_F64
#define REF_ATOL_F64 1e-14
#endif
#define REF_CAT_(a, b) a##b
#define REF_CAT(a, b) REF_CAT_(a, b)

#define REF_R float
#define REF_OP(name) name
#define REF_T(name) REF_CAT(REF_CAT(REF_FAMILY, _f32_), name)
#define REF_PREC "f32"
#define REF_REPS 1
#define REF_PREFILL 0.0
#define REF_RTOL 1e-5
#define REF_ATOL REF_ATOL_F32
#define REF_CLOSE WX_CHECK_CLOSE_F32
#include REF_IMPL
#undef REF_R
#undef REF_OP
#undef REF_T
#undef REF_PREC
#undef REF_REPS
#undef REF_PREFILL
#undef REF_RTOL
#undef REF_ATOL
#undef REF_CLOSE

#define REF_R double
#define REF_OP(name) name##_f64
#define REF_T(name) REF_CAT(REF_CAT(REF_FAMILY, _f64_), name)
#define REF_PREC "f64"
#define REF_REPS 2
#define REF_PREFILL 0.25
#define REF_RTOL 1e-12
#define REF_ATOL REF_ATOL_F64
#define REF_CLOSE WX_CHECK_CLOSE_F64
#include REF_IMPL
#undef REF_R
#undef REF_OP
#undef REF_T
#undef REF_PREC
#undef REF_REPS
#undef REF_PREFILL
#undef REF_RTOL
#undef REF_ATOL
#undef REF_CLOSE
