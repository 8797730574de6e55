/* What an interrupted or failed run leaves behind: open temporaries (unlinked by the SIGINT/SIGTERM
 * handler) and the folders the run created itself (removed when still empty). The handler only
 * reads fixed-size tables and calls async-signal-safe functions (unlink, rmdir, open, getdents64,
 * unlinkat, close, sigaction, raise): no malloc, no stdio, no locks. */
#define _GNU_SOURCE
#include "core/wx_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SLOTS 128
#define DIRS 64

/* A slot is readable by the handler once kind != 0: the path is written before kind is set and
 * kind cleared before the path is reused. */
static char slot_path[SLOTS][PATH_MAX];
static volatile sig_atomic_t slot_kind[SLOTS]; /* 0 free, 1 file, 2 folder tree */
static char dir_path[DIRS][PATH_MAX];
static volatile sig_atomic_t dir_count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Slots are taken round-robin from the one after the last taken: a slot just freed is reused
 * only after all the others, so a handler still reading its path (it was live when the signal
 * came) does not see it rewritten by the next file's registration. */
static int slot_next;

int wx_fs_tmp_register(const char *path, int tree) {
    if (strlen(path) >= PATH_MAX) return -1;
    pthread_mutex_lock(&lock);
    int k = -1;
    for (int n = 0; n < SLOTS && k < 0; n++) {
        int i = (slot_next + n) % SLOTS;
        if (!slot_kind[i]) k = i;
    }
    if (k >= 0) slot_next = (k + 1) % SLOTS;
    if (k >= 0) {
        strcpy(slot_path[k], path);
        __atomic_store_n(&slot_kind[k], tree ? 2 : 1, __ATOMIC_RELEASE); /* after the path */
    }
    pthread_mutex_unlock(&lock);
    return k; /* a full table only loses the clean-up on a signal, never data */
}

void wx_fs_tmp_unregister(int slot) {
    if (slot < 0 || slot >= SLOTS) return;
    pthread_mutex_lock(&lock);
    __atomic_store_n(&slot_kind[slot], 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
}

void wx_fs_created_dir_note(const char *path) {
    if (strlen(path) >= PATH_MAX) return;
    pthread_mutex_lock(&lock);
    if (dir_count < DIRS) {
        strcpy(dir_path[dir_count], path);
        __atomic_store_n(&dir_count, dir_count + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
}

/* Newest first, so a parent comes after its children; rmdir refuses a folder that holds
 * anything, so nothing but empty folders of this run goes. */
static void remove_created_dirs(void) {
    for (int i = __atomic_load_n(&dir_count, __ATOMIC_ACQUIRE) - 1; i >= 0; i--) rmdir(dir_path[i]);
}

void wx_fs_created_dirs_remove(void) {
    pthread_mutex_lock(&lock);
    remove_created_dirs();
    __atomic_store_n(&dir_count, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
}

struct linux_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* rm -r of `name` under dirfd with raw system calls only (opendir/nftw may allocate). */
static void remove_tree_at(int dirfd, const char *name, int depth) {
    if (unlinkat(dirfd, name, 0) == 0 || depth > 8) return;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            off += d->d_reclen;
            if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) continue;
            if (d->d_type == DT_DIR) remove_tree_at(fd, d->d_name, depth + 1);
            else unlinkat(fd, d->d_name, 0);
        }
    }
    close(fd);
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void on_signal(int sig) {
    int saved = errno;
    for (int i = 0; i < SLOTS; i++) {
        int kind = __atomic_load_n(&slot_kind[i], __ATOMIC_ACQUIRE);
        if (kind == 1) unlink(slot_path[i]);
        else if (kind == 2) remove_tree_at(AT_FDCWD, slot_path[i], 0);
    }
    remove_created_dirs();
    /* one line saying why the run ended (a batch log showed nothing); write(2) is signal-safe */
    static const char m_int[] = "wxcast: interrupted (SIGINT); unfinished outputs removed\n",
                      m_term[] = "wxcast: terminated (SIGTERM); unfinished outputs removed\n",
                      m_hup[] = "wxcast: hung up (SIGHUP); unfinished outputs removed\n";
    const char *m = sig == SIGINT ? m_int : sig == SIGTERM ? m_term : m_hup;
    size_t len = sig == SIGINT ? sizeof m_int - 1 : sig == SIGTERM ? sizeof m_term - 1 : sizeof m_hup - 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN; /* stderr a closed pipe: SIGPIPE would end the run as 141 instead */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
    ssize_t ignored = write(2, m, len);
    (void)ignored;
    /* the default action now, so the exit status says which signal ended the run (130, 143) */
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    errno = saved;
    raise(sig); /* delivered when the handler returns and the signal is unblocked */
}

void wx_fs_cleanup_install(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* a signal the parent set to be ignored (nohup, `cmd &` in a script) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigfillset(&sa.sa_mask); /* one handler at a time */
        sigaction(sigs[i], &sa, NULL);
    }
}
