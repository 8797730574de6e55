/* Logging to stderr: "[2026-11-29 22:40:01] message" (warnings and errors carry "warning: " /
 * "error: " after the stamp), with a "[rank N] " prefix once wx_log_set_rank() has been called
 * (the distributed layer calls it when there is more than one rank). Level: info by default, --quiet = warnings and errors only,
 * --verbose = debug. Under MPI only rank 0 prints info and debug unless verbose, so a 64-rank
 * run does not print every line 64 times; warnings and errors print on every rank.
 * These are progress and diagnostic messages; the one-line fatal error is the CLI's job. */
#ifndef WX_LOG_H
#define WX_LOG_H

typedef enum { WX_LOG_ERROR = 0, WX_LOG_WARN = 1, WX_LOG_INFO = 2, WX_LOG_DEBUG = 3 } wx_log_level;

void wx_log_set_level(wx_log_level level);
wx_log_level wx_log_get_level(void);
/* rank < 0: no prefix (the default, single process). */
void wx_log_set_rank(int rank);
int wx_log_enabled(wx_log_level level);

void wx_log(wx_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define wx_log_error(...) wx_log(WX_LOG_ERROR, __VA_ARGS__)
#define wx_log_warn(...) wx_log(WX_LOG_WARN, __VA_ARGS__)
#define wx_log_info(...) wx_log(WX_LOG_INFO, __VA_ARGS__)
#define wx_log_debug(...) wx_log(WX_LOG_DEBUG, __VA_ARGS__)

/* Formats the current local time as "2026-11-29 22:40:01" (buf of at least 20 bytes). */
void wx_log_timestamp(char *buf, unsigned len);

#endif
