/* SEEPS in `wxcast eval` (metrics.h has the score, data_prep/climatology_seeps.h the climatology):
 * scored for the precipitation channel whenever the climatology in use holds SEEPS fields
 * (climatology.wxc version 2 built from tp accumulated over 6 h or 24 h), for every model and the
 * persistence and climatology baselines (whose tp is the climatological mean, as WB2's
 * climatology forecast), at valid times whose hour the climatology holds. The wet threshold is
 * taken at the valid time for forecast and truth alike; p1 is the dry fraction averaged over
 * every stored day and hour. With --resolution the SEEPS fields are regridded like the mean
 * climatology (eval_grid.h), an approximation: WB2 computes its 1.5° climatology from 1.5° data.
 * A forecast file whose precipitation variable names another period ("total_precipitation_24hr"
 * against a 6 h climatology) is not scored with SEEPS (one warning per file); a name without a
 * period is taken to have the truth's (wxcast's own files name it tp). */
#ifndef WX_EVAL_SEEPS_H
#define WX_EVAL_SEEPS_H

#include "infer/eval_grid.h"
#include "infer/metrics.h"
#include "io/climatology.h"

typedef struct {
    int chan;           /* truth channel scored with SEEPS; -1: none */
    double dry;         /* dry threshold in the channel's units */
    int64_t period_s;   /* accumulation period of the climatology's channel */
    float *p1, *wet;    /* [P] on the scoring grid; wet: at valid time `at` */
    float *dry_frac, *sa; /* [Pa] scratch */
    wx_time at;
    int loaded;
} wx_eval_seeps;

/* Sets s up from an open climatology (clim may be NULL: no SEEPS). When the truth has a tp
 * channel and the climatology no SEEPS fields, warns once saying why (version 1, or a period WB2
 * has no threshold for). cdir names the climatology's archive in messages. */
wx_status wx_eval_seeps_open(wx_eval_seeps *s, wx_climatology *clim, const wx_archive_meta *m,
                             const wx_eval_grid *eg, const char *cdir);
/* Whether field `name` (matched to channel chan) of forecast file `path` is scored with SEEPS:
 * chan is the SEEPS channel and the name gives no other accumulation period (else one warning
 * naming the file, the periods and the variable). */
int wx_eval_seeps_field_ok(const wx_eval_seeps *s, int chan, const char *name, const char *path);
/* The SEEPS climatology at valid time v on the scoring grid (read once per valid time). */
wx_status wx_eval_seeps_at(wx_eval_seeps *s, wx_climatology *clim, const wx_eval_grid *eg,
                           wx_time v, wx_seeps_clim *out);
void wx_eval_seeps_close(wx_eval_seeps *s);

#endif
