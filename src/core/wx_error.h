/* Status codes and error reporting.
 *
 * Library code never exits: it returns a wx_status and leaves one message (what failed and where:
 * file, key, line, record, what was expected) in a thread-local buffer. Only the CLI prints it, as
 * the single line "wxcast: error: <message>", and exits with the status as the exit code.
 * Programmer errors (a broken invariant, not bad input) use WX_ASSERT, which is always on. */
#ifndef WX_ERROR_H
#define WX_ERROR_H

#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    WX_OK = 0,
    WX_ERR_RUN = 1,   /* run or data error: bad file, checksum, I/O, device failure */
    WX_ERR_USAGE = 2, /* usage or config error: bad option, unknown key, wrong type */
} wx_status;

/* Records a printf-style message and returns `code`, so callers write
 *   return wx_error_set(WX_ERR_RUN, "%s: record %d: crc mismatch", path, rec); */
wx_status wx_error_set(wx_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the current message with more context ("reading config.yaml: " + old message). */
wx_status wx_error_wrap(wx_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *wx_error_message(void);
void wx_error_clear(void);

/* Propagates a failing status. */
#define WX_TRY(expr)                          \
    do {                                      \
        wx_status wx_try_s_ = (expr);         \
        if (wx_try_s_ != WX_OK) return wx_try_s_; \
    } while (0)

/* Always-on assert for programmer errors (never for bad input). */
#define WX_ASSERT(cond)                                                                   \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "wxcast: internal error: %s:%d: assertion '%s' failed\n",     \
                    __FILE__, __LINE__, #cond);                                           \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* malloc/calloc/realloc that treat exhaustion as fatal (the tools cannot continue without memory). */
void *wx_malloc(size_t n);
void *wx_calloc(size_t count, size_t size);
void *wx_realloc(void *p, size_t n);
char *wx_strdup(const char *s);

#ifdef __cplusplus
}
#endif

#endif
