/* A reference case: the op it covers (as named in ops/ops.def) and a function that loads the
 * op's fixture and records checks with WX_CHECK*. Each family file defines a NULL-terminated table
 * wx_ref_cases_<family>. */
#ifndef WX_REF_CASES_H
#define WX_REF_CASES_H

typedef struct {
    const char *op;
    void (*run)(void);
} wx_ref_case;

extern const wx_ref_case *const wx_ref_cases_dense[];
extern const wx_ref_case *const wx_ref_cases_dense_fused[];
extern const wx_ref_case *const wx_ref_cases_conv[];
extern const wx_ref_case *const wx_ref_cases_spectral[];
extern const wx_ref_case *const wx_ref_cases_graph[];
extern const wx_ref_case *const wx_ref_cases_loss[];
extern const wx_ref_case *const wx_ref_cases_optim[];

#endif
