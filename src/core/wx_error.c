#include "core/wx_error.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char wx_error_buf[2048];

wx_status wx_error_set(wx_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wx_error_buf, sizeof wx_error_buf, fmt, ap);
    va_end(ap);
    return code;
}

wx_status wx_error_wrap(wx_status code, const char *fmt, ...) {
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Shift the old message right and put the prefix in front, truncating at the buffer's end. */
    size_t np = strlen(prefix), no = strlen(wx_error_buf), cap = sizeof wx_error_buf - 1;
    if (np > cap) np = cap;
    if (np + no > cap) no = cap - np;
    memmove(wx_error_buf + np, wx_error_buf, no);
    memcpy(wx_error_buf, prefix, np);
    wx_error_buf[np + no] = 0;
    return code;
}

const char *wx_error_message(void) { return wx_error_buf[0] ? wx_error_buf : "unknown error"; }

void wx_error_clear(void) { wx_error_buf[0] = 0; }

static void wx_out_of_memory(size_t n) {
    fprintf(stderr, "wxcast: error: out of memory allocating %zu bytes\n", n);
    exit(WX_ERR_RUN);
}

void *wx_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) wx_out_of_memory(n);
    return p;
}

void *wx_calloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) wx_out_of_memory(count * size);
    return p;
}

void *wx_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) wx_out_of_memory(n);
    return q;
}

char *wx_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = wx_malloc(n);
    memcpy(p, s, n);
    return p;
}
