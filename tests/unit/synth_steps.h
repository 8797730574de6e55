/* Advances a synthetic-world model by a span of model time (test helper shared by the
 * test_synth_* programs). Returns 0 when a step fails (the state stopped being finite). */
#ifndef WX_TEST_SYNTH_STEPS_H
#define WX_TEST_SYNTH_STEPS_H

#include <math.h>

#include "synth/sw_model.h"

static inline int synth_run_seconds(wx_sw_model *m, double seconds) {
    int64_t n = llround(seconds / m->par.dt);
    for (int64_t i = 0; i < n; i++)
        if (wx_sw_model_step(m) != WX_OK) return 0;
    return 1;
}

#endif
