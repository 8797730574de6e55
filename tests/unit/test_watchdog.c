/* The collective watchdog (src/train/watchdog.c), in child processes because it ends the process
 * it fires in: scopes shorter than the timeout never fire however many there are; an open scope
 * fires after the timeout, exit 1, one error line naming rank, collective, phase and option; a
 * nested inner scope that closes leaves the outer one counting; a scope that closes just before
 * the deadline resets it; wx_watchdog_stop ends the watch (a long scope after it does not fire). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "train/watchdog.h"
#include "wx_test.h"

static void nap(double s) {
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* Runs body in a child with stderr to a pipe; returns its exit status (-signal if killed) and up
 * to cap-1 bytes of its stderr in err. */
static int in_child(void (*body)(void), char *err, size_t cap) {
    int fd[2];
    if (pipe(fd) != 0) return -1000;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        body();
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd[0], err + n, cap - 1 - n)) > 0) n += (size_t)r;
    err[n] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

static void short_scopes(void) { /* 40 scopes of 0.05 s over 2 s, timeout 0.4 s: never fires */
    wx_watchdog_start(0.4, 3, "--collective-timeout");
    for (int i = 0; i < 40; i++) {
        wx_watchdog_enter("the gradient all-reduce");
        nap(0.05);
        wx_watchdog_leave();
    }
    wx_watchdog_stop();
}

static void nested_open(void) { /* outer open, inner closed: fires on the outer one */
    wx_watchdog_start(0.3, 1, "--collective-timeout");
    wx_watchdog_phase("training step %d", 6);
    wx_watchdog_enter("the gradient all-reduce");
    wx_watchdog_enter("an all-reduce");
    wx_watchdog_leave();
    nap(5);
}

static void scoped_return(void) { /* WX_WATCHDOG_SCOPE closes at the end of its block */
    wx_watchdog_start(0.3, 0, "--collective-timeout");
    for (int i = 0; i < 10; i++) {
        WX_WATCHDOG_SCOPE("a barrier");
        nap(0.1);
    }
    nap(1.0); /* no scope open: no fire */
}

static void stopped(void) { /* after stop a long scope does not fire */
    wx_watchdog_start(0.2, 0, "--collective-timeout");
    wx_watchdog_stop();
    wx_watchdog_enter("a broadcast");
    nap(1.0);
}

int main(void) {
    char err[1024];
    int rc = in_child(short_scopes, err, sizeof err);
    WX_CHECK(rc == 0 && !*err, "short scopes never fire (exit %d, stderr '%s')", rc, err);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = in_child(nested_open, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("nested_open: exit %d after %.2f s: %s", rc, secs, err);
    WX_CHECK(rc == 1, "an open scope past the timeout ends the process with exit 1 (%d)", rc);
    WX_CHECK(secs > 0.3 && secs < 3, "it fires after the timeout, well before the 5 s wait (%.2f s)", secs);
    WX_CHECK(!strncmp(err, "wxcast: error: rank 1: waited 0.", 32) &&
                 strstr(err, " s in the gradient all-reduce (training step 6) without the other "
                             "ranks arriving (--collective-timeout 0.3)") &&
                 strchr(err, '\n') == err + strlen(err) - 1,
             "one line naming rank, outer collective, phase and option: '%s'", err);

    rc = in_child(scoped_return, err, sizeof err);
    WX_CHECK(rc == 0 && !*err, "block scopes close at the end of the block (exit %d, '%s')", rc, err);

    rc = in_child(stopped, err, sizeof err);
    WX_CHECK(rc == 0 && !*err, "a stopped watchdog does not fire (exit %d, '%s')", rc, err);
    return wx_test_summary();
}
