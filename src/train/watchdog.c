#include "train/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/wx_log.h"

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;  /* signalled by stop */
    pthread_t thread;
    int running, stopping;
    double timeout_s;
    int rank;
    const char *flag;
    int depth;            /* open scopes */
    const char *what;     /* the outermost open scope */
    struct timespec since; /* when it opened (CLOCK_MONOTONIC) */
    char phase[96];
} w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0.0, 0, "", 0, "", {0, 0},
       "start-up"};

static double elapsed_s(const struct timespec *a, const struct timespec *b) {
    return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

/* Called with w.mu held: the process ends here. */
static void fire(double waited) {
    /* One line in the project's error form, written with one write(2) so it is not interleaved with
     * the main thread's output (stdio is not used: the main thread may hold its lock). */
    char line[512];
    int n = snprintf(line, sizeof line,
                     "wxcast: error: rank %d: waited %.*f s in %s (%s) without the other ranks "
                     "arriving (%s %g): a rank is hung, stopped or unreachable; ending the job "
                     "(resume from the last checkpoint)\n",
                     w.rank, waited < 10 ? 1 : 0, waited, w.what, w.phase, w.flag, w.timeout_s);
    if (n > 0) {
        ssize_t r = write(STDERR_FILENO, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
        (void)r;
    }
    _exit(1);
}

static void *watch(void *arg) {
    (void)arg;
    pthread_mutex_lock(&w.mu);
    while (!w.stopping) {
        /* Check 8 times per timeout, at most every 0.5 s: fires within 1/8 of the timeout. */
        double tick = w.timeout_s / 8 < 0.5 ? w.timeout_s / 8 : 0.5;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until); /* pthread_cond_timedwait's clock */
        long long ns = until.tv_nsec + (long long)(tick * 1e9);
        until.tv_sec += (time_t)(ns / 1000000000LL);
        until.tv_nsec = (long)(ns % 1000000000LL);
        int rc = pthread_cond_timedwait(&w.wake, &w.mu, &until);
        if (rc != 0 && rc != ETIMEDOUT) break;
        if (w.stopping || w.depth == 0) continue;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = elapsed_s(&w.since, &now);
        if (waited > w.timeout_s) fire(waited);
    }
    pthread_mutex_unlock(&w.mu);
    return NULL;
}

int wx_watchdog_start(double timeout_s, int rank, const char *flag) {
    pthread_mutex_lock(&w.mu);
    w.timeout_s = timeout_s, w.rank = rank, w.flag = flag;
    int ok = w.running;
    if (!ok) {
        w.stopping = 0;
        ok = pthread_create(&w.thread, NULL, watch, NULL) == 0;
        w.running = ok;
    }
    pthread_mutex_unlock(&w.mu);
    if (!ok) wx_log_warn("cannot start the collective watchdog thread: a hung rank will not be detected");
    return ok ? 0 : -1;
}

void wx_watchdog_stop(void) {
    pthread_mutex_lock(&w.mu);
    int running = w.running;
    w.stopping = 1;
    pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.mu);
    if (running) pthread_join(w.thread, NULL);
    w.running = 0;
}

void wx_watchdog_phase(const char *fmt, ...) {
    char buf[sizeof w.phase];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&w.mu);
    memcpy(w.phase, buf, sizeof buf);
    pthread_mutex_unlock(&w.mu);
}

int wx_watchdog_enter(const char *what) {
    pthread_mutex_lock(&w.mu);
    if (w.depth++ == 0) {
        w.what = what;
        clock_gettime(CLOCK_MONOTONIC, &w.since);
    }
    pthread_mutex_unlock(&w.mu);
    return 0;
}

void wx_watchdog_leave(void) {
    pthread_mutex_lock(&w.mu);
    if (w.depth > 0) w.depth--;
    pthread_mutex_unlock(&w.mu);
}
