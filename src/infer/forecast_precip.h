/* wxcast forecast --precip: a trained precipitation model (wxcast train --stage precip) turns every
 * predicted state of the rollout into tp (the 6-h accumulation ending at the step's valid time,
 * physical units, >= 0), through the rollout's per-step hook. The forecast writes it as one more
 * channel after the model's own. */
#ifndef WX_FORECAST_PRECIP_H
#define WX_FORECAST_PRECIP_H

#include <stdint.h>

#include "infer/rollout.h"
#include "io/archive.h"

typedef struct {
    struct wx_precip_diag *diag; /* NULL: no precipitation model */
    float *tp;                   /* (max_batch, H, W) the last step's tp */
    int64_t hw;
} wx_forecast_precip;

/* Loads the precip checkpoint for the rollout's state channels and installs the hook on r. */
wx_status wx_forecast_precip_open(wx_forecast_precip *p, const char *ckpt, wx_rollout *r);
void wx_forecast_precip_close(wx_forecast_precip *p);

/* The channel written for tp (the archive's own description when m has it, else tp in m). */
wx_archive_channel wx_forecast_precip_channel(const wx_forecast_precip *p, const wx_archive_meta *m,
                                              int64_t step_s);

/* out (b, nout, hw) → (b, nout + 1, hw) in place, tp last in each member: the last step's tp, or
 * at lead 0 (rec: the initial record (nchan, P) of archive m) the archive's tp channel when it has
 * one, NaN otherwise. No-op without a model. */
void wx_forecast_precip_append(const wx_forecast_precip *p, float *out, int64_t b, int nout,
                               const float *rec, const wx_archive_meta *m);

#endif
