#include "core/wx_progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_log.h"
#include "core/wx_timer.h"

void wx_progress_format_duration(char *buf, unsigned len, double seconds) {
    if (!(seconds >= 0) || seconds > 1e8) {
        snprintf(buf, len, "?");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

void wx_progress_start(wx_progress *p, const char *label, int64_t total, const char *unit) {
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label);
    snprintf(p->unit, sizeof p->unit, "%s", unit ? unit : "items");
    p->total = total;
    p->start = wx_time_now();
    p->last_draw = p->start;
    p->interval = 10.0;
    p->tty = isatty(STDERR_FILENO);
    p->enabled = wx_log_enabled(WX_LOG_INFO);
}

void wx_progress_set_interval(wx_progress *p, double seconds) { p->interval = seconds; }

/* The shared part: "450/1000 records (45.0%), 12.3 records/s" pieces. */
static void describe(const wx_progress *p, double now, char *counts, size_t nc, char *rate,
                     size_t nr, char *elapsed, char *eta) {
    double t = now - p->start;
    double r = t > 0 ? (double)p->done / t : 0;
    if (p->total > 0)
        snprintf(counts, nc, "%lld/%lld %s", (long long)p->done, (long long)p->total, p->unit);
    else
        snprintf(counts, nc, "%lld %s", (long long)p->done, p->unit);
    snprintf(rate, nr, r >= 100 ? "%.0f %s/s" : r >= 1 ? "%.1f %s/s" : "%.3g %s/s", r, p->unit);
    wx_progress_format_duration(elapsed, 16, t);
    if (p->total > 0 && r > 0 && p->done <= p->total)
        wx_progress_format_duration(eta, 16, (double)(p->total - p->done) / r);
    else
        snprintf(eta, 16, "?");
}

static void draw(wx_progress *p, double now, int final) {
    char counts[96], rate[64], elapsed[16], eta[16];
    describe(p, now, counts, sizeof counts, rate, sizeof rate, elapsed, eta);
    double frac = p->total > 0 ? fmin(1.0, (double)p->done / (double)p->total) : 0;
    if (p->tty) {
        char bar[21] = "";
        if (p->total > 0) {
            int fill = (int)(frac * 20);
            for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '-';
            bar[20] = 0;
        }
        /* \r + erase-to-end keeps one line; a shorter redraw leaves no stale tail. */
        if (p->total > 0)
            fprintf(stderr, "\r%s %3.0f%% [%s] %s  %s  %s elapsed  ETA %s%s%s\033[K", p->label,
                    100 * frac, bar, counts, rate, elapsed, final ? "0:00" : eta,
                    p->extra[0] ? "  " : "", p->extra);
        else
            fprintf(stderr, "\r%s %s  %s  %s elapsed%s%s\033[K", p->label, counts, rate, elapsed,
                    p->extra[0] ? "  " : "", p->extra);
        if (final) fputc('\n', stderr);
        fflush(stderr);
        p->drawn = !final;
    } else {
        char pct[24] = "";
        if (p->total > 0) snprintf(pct, sizeof pct, " (%.1f%%)", 100 * frac);
        wx_log_info("%s: %s%s, %s, elapsed %s%s%s%s%s", p->label, counts, pct, rate, elapsed,
                    final || p->total <= 0 ? "" : ", ETA ", final || p->total <= 0 ? "" : eta,
                    p->extra[0] ? ", " : "", p->extra);
    }
    p->last_draw = now;
}

void wx_progress_update(wx_progress *p, int64_t done, const char *extra_fmt, ...) {
    p->done = done;
    if (extra_fmt) {
        va_list ap;
        va_start(ap, extra_fmt);
        vsnprintf(p->extra, sizeof p->extra, extra_fmt, ap);
        va_end(ap);
    }
    if (!p->enabled) return;
    double now = wx_time_now();
    double every = p->tty ? 0.1 : p->interval;
    if (now - p->last_draw >= every) draw(p, now, 0);
}

void wx_progress_finish(wx_progress *p) {
    if (!p->enabled) return;
    draw(p, wx_time_now(), 1);
}
