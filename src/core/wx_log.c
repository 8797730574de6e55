#include "core/wx_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static wx_log_level log_level = WX_LOG_INFO;
static int log_rank = -1;

void wx_log_set_level(wx_log_level level) { log_level = level; }
wx_log_level wx_log_get_level(void) { return log_level; }
void wx_log_set_rank(int rank) { log_rank = rank; }

int wx_log_enabled(wx_log_level level) {
    if (level > log_level) return 0;
    /* Ranks > 0 repeat rank 0's info; keep them quiet unless the user asked for everything. */
    if (level >= WX_LOG_INFO && log_rank > 0 && log_level < WX_LOG_DEBUG) return 0;
    return 1;
}

void wx_log_timestamp(char *buf, unsigned len) {
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (!strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) && len) buf[0] = 0;
}

void wx_log(wx_log_level level, const char *fmt, ...) {
    if (!wx_log_enabled(level)) return;
    char stamp[32], rank[24] = "", msg[2048];
    wx_log_timestamp(stamp, sizeof stamp);
    if (log_rank >= 0) snprintf(rank, sizeof rank, "[rank %d] ", log_rank);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    static const char *const tags[] = {"error: ", "warning: ", "", "debug: "};
    /* One fprintf per line keeps lines from different ranks/threads whole. */
    fprintf(stderr, "[%s] %s%s%s\n", stamp, rank, tags[level], msg);
}
