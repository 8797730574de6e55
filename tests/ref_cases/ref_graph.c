#include "ref_cases.h"
#include <stddef.h>

const wx_ref_case *const wx_ref_cases_graph[] = {NULL};
