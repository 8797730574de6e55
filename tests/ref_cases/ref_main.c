/* Reference tests: every op in ops/ops.def against fixtures from the independent PyTorch
 * implementation (tests/ref/ scripts, float64 autograd). Each family file (ref_<family>.c) exports a
 * table of cases; this main runs them all and fails for any op in the op list without a case. */
#include <string.h>

#include "backend/wx_backend.h"
#include "ref_cases.h"
#include "wx_test.h"

static const wx_ref_case *const *all_tables[] = {wx_ref_cases_dense, wx_ref_cases_dense_fused, wx_ref_cases_conv,
                                                 wx_ref_cases_spectral,
                                                 wx_ref_cases_graph, wx_ref_cases_loss,
                                                 wx_ref_cases_optim};

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    for (size_t t = 0; t < sizeof all_tables / sizeof *all_tables; t++)
        for (const wx_ref_case *const *c = all_tables[t]; *c; c++) {
            if (only && strcmp(only, (*c)->op)) continue;
            printf("ref %s\n", (*c)->op);
            (*c)->run();
        }
    /* Coverage: an op in the op list with no reference case is a failure. */
    for (const char *const *op = wx_op_names; *op; op++) {
        int found = 0;
        for (size_t t = 0; t < sizeof all_tables / sizeof *all_tables; t++)
            for (const wx_ref_case *const *c = all_tables[t]; *c; c++)
                if (!strcmp((*c)->op, *op)) found = 1;
        WX_CHECK(found, "op '%s' in ops/ops.def has no reference test", *op);
    }
    return wx_test_summary();
}
