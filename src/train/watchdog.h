/* The collective watchdog: ends a data-parallel job whose ranks wait too long in a collective.
 *
 * A rank that dies is noticed by the launcher, but one that hangs without dying (a stuck file
 * system read, a wedged GPU, a stopped process, a lost node) leaves every other rank blocked in its
 * next collective for ever, burning the allocation. PyTorch's process groups time out after 10
 * minutes for the same reason. Each blocking collective of the trainer is a scope:
 * wx_watchdog_enter("the gradient all-reduce") ... wx_watchdog_leave(), nested scopes counting as
 * the outermost one. A thread checks the open scope a few times a second; when one has been open
 * longer than the timeout it prints one error line naming the rank, the collective and the
 * trainer's phase (wx_watchdog_phase: "training step 6") and ends the process with exit 1, which
 * makes mpirun (or srun --kill-on-bad-exit) end the others. It calls no MPI: the ranks run
 * MPI_THREAD_FUNNELED and a blocked MPI library may hold locks.
 *
 * Off until wx_watchdog_start; the scope calls then cost a mutex each. */
#ifndef WX_TRAIN_WATCHDOG_H
#define WX_TRAIN_WATCHDOG_H

/* Default --collective-timeout, seconds (PyTorch's NCCL process-group default). */
#define WX_WATCHDOG_DEFAULT_S 600.0

/* Starts the thread for rank `rank` with this timeout (> 0); a second call changes the timeout.
 * `flag` names the user's knob in the message ("--collective-timeout"). Returns 0, or -1 if the
 * thread cannot be created (the job then runs unwatched, with a warning). */
int wx_watchdog_start(double timeout_s, int rank, const char *flag);
/* Stops and joins the thread (no-op when not started). */
void wx_watchdog_stop(void);
/* The trainer's current phase, printf-style, shown in the message ("training step 6"). */
void wx_watchdog_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Opens / closes a blocking-collective scope; `what` is a static string. enter returns 0 so it
 * can initialise a scope variable (WX_WATCHDOG_SCOPE). */
int wx_watchdog_enter(const char *what);
void wx_watchdog_leave(void);
static inline void wx_watchdog_scope_end(int *unused) {
    (void)unused;
    wx_watchdog_leave();
}
/* A scope that closes when the enclosing block is left, whichever return is taken. */
#define WX_WATCHDOG_SCOPE(what) \
    __attribute__((cleanup(wx_watchdog_scope_end), unused)) int wx_watchdog_scope_ = wx_watchdog_enter(what)

#endif
