/* Progress of long work (ingest, training epochs, rollouts) on stderr.
 *
 * On a terminal: one line redrawn in place (at most 10 times a second),
 *   ingest  45% [#########-----------]  450/1000 records  12.3 records/s  0:36 elapsed  ETA 0:45  loss 0.123
 * Otherwise (logs, CI, Slurm): a plain log line every `interval` seconds (default 10) and one at
 * the end, so a log file gets a record of the rate without thousands of carriage returns.
 * Silent under --quiet and on MPI ranks other than 0 (it follows wx_log_enabled(WX_LOG_INFO)).
 * total <= 0 means unknown: no percentage and no ETA. */
#ifndef WX_PROGRESS_H
#define WX_PROGRESS_H

#include <stdint.h>

typedef struct {
    char label[32];
    char unit[24];
    char extra[128];
    int64_t total, done;
    double start, last_draw, interval;
    int tty;     /* stderr is a terminal */
    int enabled; /* 0 when quiet */
    int drawn;   /* a terminal line is on screen */
} wx_progress;

void wx_progress_start(wx_progress *p, const char *label, int64_t total, const char *unit);
/* Seconds between plain lines when stderr is not a terminal (0: every update). */
void wx_progress_set_interval(wx_progress *p, double seconds);
/* `extra_fmt` (may be NULL) sets the free-text field, e.g. ("loss %.3f", loss). */
void wx_progress_update(wx_progress *p, int64_t done, const char *extra_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Draws the final state and ends the line. */
void wx_progress_finish(wx_progress *p);

/* "1:02:03" / "2:03": elapsed and ETA formatting (buf >= 16 bytes). */
void wx_progress_format_duration(char *buf, unsigned len, double seconds);

#endif
