/* Small helpers for unit tests that run the wxcast binary and inspect what it wrote: whole files,
 * byte equality, the one-line error contract (CONVENTIONS.md: exactly one "wxcast: error: ..."
 * line on stderr) and a number after a JSON key. Shared by test_train*.c. */
#ifndef WX_TEST_CLI_CHECK_H
#define WX_TEST_CLI_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_error.h"
#include "core/wx_fs.h"
#include "wx_test.h"

/* The whole file, or "" when it cannot be read (free() either way). */
static inline char *slurp(const char *path) {
    char *buf = NULL;
    size_t len;
    if (wx_read_file(path, &buf, &len) != WX_OK) return wx_strdup("");
    return buf;
}

/* 1 when both files exist and hold the same bytes. */
static inline int files_equal(const char *a, const char *b) {
    char *x, *y;
    size_t nx, ny;
    if (wx_read_file(a, &x, &nx) != WX_OK) return 0;
    if (wx_read_file(b, &y, &ny) != WX_OK) {
        free(x);
        return 0;
    }
    int eq = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return eq;
}

/* dir/tag.err is exactly one line "wxcast: error: ..." containing `what`. */
static inline void check_one_error_in(const char *dir, const char *tag, const char *what) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.err", dir, tag);
    char *e = slurp(path);
    int lines = 0;
    for (char *p = e; *p; p++) lines += *p == '\n';
    WX_CHECK(lines == 1 && !strncmp(e, "wxcast: error: ", 15) && strstr(e, what),
             "%s: expected one error line with '%s', got: %s", tag, what, e);
    free(e);
}

/* The number after `key` in line, NAN when absent. */
static inline double num_after(const char *line, const char *key) {
    const char *p = strstr(line, key);
    return p ? atof(p + strlen(key)) : NAN;
}

/* A metrics file's text without the fields that measure time (samples_per_s, step_s, comm_s),
 * which legitimately differ between two runs that must otherwise agree byte for byte; "" when
 * the file is missing. */
static inline char *metrics_untimed_text(const char *path) {
    static const char *const timed[] = {",\"samples_per_s\":", ",\"step_s\":", ",\"comm_s\":"};
    char *s = NULL;
    size_t len;
    if (wx_read_file(path, &s, &len) != WX_OK) return wx_strdup("");
    char *o = wx_malloc(strlen(s) + 1), *q = o;
    for (char *p = s; *p;) {
        size_t k = 0;
        for (int i = 0; i < 3 && !k; i++)
            if (!strncmp(p, timed[i], strlen(timed[i]))) k = strlen(timed[i]);
        if (k) {
            for (p += k; *p && *p != ',' && *p != '}'; p++) {}
            continue;
        }
        *q++ = *p++;
    }
    *q = 0;
    free(s);
    return o;
}

#endif
